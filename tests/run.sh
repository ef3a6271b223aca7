#!/bin/sh
# Runs every test binary in the given folders and sums their results.
# A binary that dies without its summary line counts as one failure.
# Prints the total as the last line: "N passed, N failed".
[ $# -gt 0 ] || set -- build/tests
timeout_s=${LDB_TEST_TIMEOUT:-900}
pass=0; fail=0
for t in $(for dir in "$@"; do ls -d "$dir"/* 2>/dev/null; done); do
    [ -x "$t" ] || continue
    out=$(timeout "$timeout_s" "$t" 2>&1); rc=$?
    printf '%s\n' "$out" | grep -v '^ok ' 
    line=$(printf '%s\n' "$out" | grep '^# .*: [0-9]* passed, [0-9]* failed$' | tail -n 1)
    if [ -z "$line" ]; then
        echo "FAIL $(basename "$t"): exited with status $rc and no summary"
        fail=$((fail + 1)); continue
    fi
    p=$(echo "$line" | sed 's/.*: \([0-9]*\) passed.*/\1/')
    f=$(echo "$line" | sed 's/.* \([0-9]*\) failed$/\1/')
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        echo "FAIL $(basename "$t"): exited with status $rc"
        f=1
    fi
    pass=$((pass + p)); fail=$((fail + f))
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
