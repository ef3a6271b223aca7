# livedb build. Plain GNU make: the tree is small enough that one Makefile
# with pattern rules and automatic header dependencies is easier to read and
# to debug than a generated CMake build (see docs/ARCHITECTURE.md).
#
#   make               library (static + shared), tools, tests, benchmarks
#   make test          build and run every test; last line "N passed, N failed"
#   make test-sanitize the same under AddressSanitizer + UBSan (build/san/)
#   make demo          build and run the demo
#   make bench-quick   run every benchmark with --quick

CC      ?= cc
O       ?= build
OPT     ?= -O2
CFLAGS  ?= $(OPT) -g
WARN    := -std=c11 -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter
CPPFLAGS_ALL := -Iinclude -Isrc -D_GNU_SOURCE $(CPPFLAGS)
CFLAGS_ALL   := $(WARN) $(CFLAGS) -fPIC -MMD -MP
LDLIBS_ALL   := -lm $(LDLIBS)

LIB_SRCS   := $(shell find src -name '*.c' | sort)
LIB_OBJS   := $(LIB_SRCS:%.c=$(O)/obj/%.o)
TEST_SRCS  := $(shell find tests -mindepth 2 -name 'test_*.c' | sort)
TEST_BINS  := $(foreach s,$(TEST_SRCS),$(O)/tests/$(basename $(notdir $(s))))
BENCH_SRCS := $(shell find bench -name '*.c' ! -name 'bench_util.c' | sort)
BENCH_BINS := $(foreach s,$(BENCH_SRCS),$(O)/bench/$(basename $(notdir $(s))))
TOOL_BINS  := $(O)/demo

STATIC_LIB := $(O)/liblivedb.a
SHARED_LIB := $(O)/liblivedb.so

.PHONY: all lib tests benches tools test test-sanitize demo bench-quick clean
all: lib tools tests benches
lib: $(STATIC_LIB) $(SHARED_LIB)
tests: $(TEST_BINS)
benches: $(BENCH_BINS)
tools: $(TOOL_BINS)

$(O)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "CC $<"
	@$(CC) $(CPPFLAGS_ALL) $(CFLAGS_ALL) -c $< -o $@

$(O)/obj/tests/%.o: CPPFLAGS_ALL += -Itests
$(O)/obj/bench/%.o: CPPFLAGS_ALL += -Ibench
$(O)/obj/tools/%.o: CPPFLAGS_ALL += -Itools

$(STATIC_LIB): $(LIB_OBJS)
	@mkdir -p $(dir $@)
	@rm -f $@ && ar rcs $@ $^

$(SHARED_LIB): $(LIB_OBJS)
	@$(CC) -shared $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS_ALL)

# Each test binary: its own source + the harness + the static library.
define test_rule
$(O)/tests/$(basename $(notdir $(1))): $(O)/obj/$(basename $(1)).o $(O)/obj/tests/test.o $(STATIC_LIB)
	@mkdir -p $$(dir $$@)
	$$(CC) $$(CFLAGS) $$(LDFLAGS) -o $$@ $$^ -lsqlite3 $$(LDLIBS_ALL)
endef
$(foreach s,$(TEST_SRCS),$(eval $(call test_rule,$(s))))

define bench_rule
$(O)/bench/$(basename $(notdir $(1))): $(O)/obj/$(basename $(1)).o $(O)/obj/bench/bench_util.o $(STATIC_LIB)
	@mkdir -p $$(dir $$@)
	$$(CC) $$(CFLAGS) $$(LDFLAGS) -o $$@ $$^ -lsqlite3 $$(LDLIBS_ALL)
endef
$(foreach s,$(BENCH_SRCS),$(eval $(call bench_rule,$(s))))

$(O)/demo: $(O)/obj/tools/demo.o $(STATIC_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS_ALL)

test: tests
	@sh tests/run.sh $(O)/tests

test-sanitize:
	@$(MAKE) --no-print-directory O=build/san OPT=-O1 \
	  CFLAGS="-O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer" \
	  LDFLAGS="-fsanitize=address,undefined" tests
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  sh tests/run.sh build/san/tests

demo: $(O)/demo
	@$(O)/demo

bench-quick: benches
	@for b in $(BENCH_BINS); do echo "## $$b"; $$b --quick || exit 1; done

clean:
	rm -rf build

-include $(shell find $(O)/obj -name '*.d' 2>/dev/null)
