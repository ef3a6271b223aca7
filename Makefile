# livedb build. Plain GNU make: the tree is small enough that one Makefile
# with pattern rules and automatic header dependencies is easier to read and
# to debug than a generated CMake build (see docs/ARCHITECTURE.md).
#
#   make               library (static + shared), tools, tests, benchmarks
#   make test          build and run every test; last line "N passed, N failed"
#   make test-sanitize the same under AddressSanitizer + UBSan (build/san/)
#   make test-tsan     the tests that use threads, under ThreadSanitizer
#   make demo          build and run the demo
#   make bench-quick   run every benchmark with --quick
#   make fuzz          build the libFuzzer target build/fuzz/fuzz_sql (clang)
#   make fuzz-ci       replay tests/fuzz/corpus, then fuzz for 60 seconds
#   make install       header, libraries, livedb.pc and the shell under
#                      $(DESTDIR)$(PREFIX) (PREFIX defaults to /usr/local)
#   make test-pg       the PostgreSQL adapter's tests against a throwaway
#                      local cluster (tools/pg_cluster.sh; needs
#                      postgresql-15 and libpq-dev); `make test` runs them
#                      when PostgreSQL is installed
#   make demo-pg       the adapter's demo against such a cluster

CC      ?= cc
O       ?= build
OPT     ?= -O2
CFLAGS  ?= $(OPT) -g
WARN    := -std=c11 -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter
CPPFLAGS_ALL := -Iinclude -Isrc -D_GNU_SOURCE $(CPPFLAGS)
CFLAGS_ALL   := $(WARN) $(CFLAGS) -fPIC -MMD -MP
LDLIBS_ALL   := -lm -pthread $(LDLIBS)

LIB_SRCS   := $(shell find src -name '*.c' ! -path 'src/pg/*' | sort)
LIB_OBJS   := $(LIB_SRCS:%.c=$(O)/obj/%.o)
TEST_SRCS  := $(shell find tests -mindepth 2 -name 'test_*.c' ! -path 'tests/pg/*' | sort)
TEST_BINS  := $(foreach s,$(TEST_SRCS),$(O)/tests/$(basename $(notdir $(s))))
BENCH_SRCS := $(shell find bench -name '*.c' ! -name 'bench_util.c' ! -name 'bench_pg.c' | sort)
BENCH_BINS := $(foreach s,$(BENCH_SRCS),$(O)/bench/$(basename $(notdir $(s))))
TOOL_BINS  := $(O)/demo $(O)/slt $(O)/select5gen $(O)/livedb

# The sqllogictest runner's code minus its main() (with the generator of
# select5-style scripts), also linked into its tests; the shell is every
# tools/livedb*.c.
SLT_OBJS   := $(patsubst %,$(O)/obj/tools/slt_%.o,md5 script result run livedb sqlite known select5)
SHELL_OBJS := $(patsubst %.c,$(O)/obj/%.o,$(sort $(wildcard tools/livedb*.c)))
# Extra objects some test binaries link (TEST_EXTRA_<binary>).
TEST_EXTRA_test_slt        := $(SLT_OBJS)
TEST_EXTRA_test_slt_corpus := $(SLT_OBJS)
TEST_EXTRA_test_slt_select5 := $(SLT_OBJS)
# The example source provider (examples/), linked by the demo and a test.
EXAMPLE_OBJS := $(O)/obj/examples/thread_provider.o
TEST_EXTRA_test_source_threads := $(EXAMPLE_OBJS)
# The comparison with SQLite, and the oracles' generator.
CMP_OBJS    := $(O)/obj/tests/sqlite_cmp.o
ORACLE_OBJS := $(CMP_OBJS) $(O)/obj/tests/oracle_gen.o $(O)/obj/tests/oracle_world.o
TEST_EXTRA_test_differential := $(CMP_OBJS)
TEST_EXTRA_test_join_order   := $(CMP_OBJS)
TEST_EXTRA_test_mv_regress   := $(CMP_OBJS)
TEST_EXTRA_test_optimistic_oracle := $(CMP_OBJS)
TEST_EXTRA_test_live_sqlite  := $(ORACLE_OBJS)
TEST_EXTRA_test_mv_sqlite    := $(ORACLE_OBJS)
# The source tests' scripted provider (it serves requests from SQLite).
SOURCE_OBJS := $(CMP_OBJS) $(O)/obj/tests/source/script_provider.o
TEST_EXTRA_test_source_basic  := $(SOURCE_OBJS)
TEST_EXTRA_test_source_oracle := $(SOURCE_OBJS)

# The PostgreSQL adapter, src/pg/ -> liblivedb-pg (links libpq), its tests
# (tests/pg/, run against a throwaway cluster in PG_DIR) and demo.
PG_CPPFLAGS := -I$(shell pg_config --includedir 2>/dev/null || echo /usr/include/postgresql)
PG_LIBS     := -lpq
PG_SRCS     := $(sort $(wildcard src/pg/*.c))
PG_OBJS     := $(PG_SRCS:%.c=$(O)/obj/%.o)
PG_LIB      := $(O)/liblivedb-pg.a
PG_TEST_SRCS := $(sort $(wildcard tests/pg/test_*.c))
PG_TEST_BINS := $(foreach s,$(PG_TEST_SRCS),$(O)/pgtests/$(basename $(notdir $(s))))
PG_TEST_OBJS := $(patsubst %.c,$(O)/obj/%.o,$(filter-out $(PG_TEST_SRCS),$(wildcard tests/pg/*.c)))
PG_DIR      := /tmp/livedb-pg$(subst /,.,$(abspath $(O)))

# The shared library is versioned from LDB_VERSION: liblivedb.so.X.Y.Z
# with soname liblivedb.so.X, and exports only the LDB_API functions of
# livedb.h (the library's objects are built with hidden visibility).
VERSION    := $(shell sed -n 's/^\#define LDB_VERSION "\(.*\)"/\1/p' include/livedb.h)
SOVERSION  := $(firstword $(subst ., ,$(VERSION)))
SONAME     := liblivedb.so.$(SOVERSION)
STATIC_LIB := $(O)/liblivedb.a
SHARED_LIB := $(O)/liblivedb.so.$(VERSION)
PREFIX     ?= /usr/local

.PHONY: all lib tests benches tools test test-sanitize test-tsan demo bench-quick clean fuzz fuzz-ci install \
        pg test-pg demo-pg bench-pg
all: lib tools tests benches
lib: $(STATIC_LIB) $(SHARED_LIB)
tests: $(TEST_BINS)
benches: $(BENCH_BINS)
tools: $(TOOL_BINS)

$(O)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "CC $<"
	@$(CC) $(CPPFLAGS_ALL) $(CFLAGS_ALL) -c $< -o $@

$(O)/obj/src/%.o: CFLAGS_ALL += -fvisibility=hidden
$(O)/obj/tests/%.o: CPPFLAGS_ALL += -Itests
$(O)/obj/bench/%.o: CPPFLAGS_ALL += -Ibench
$(O)/obj/tools/%.o: CPPFLAGS_ALL += -Itools
$(O)/obj/tests/sql/test_slt.o $(O)/obj/tests/sql/test_slt_corpus.o \
$(O)/obj/tests/sql/test_slt_select5.o: CPPFLAGS_ALL += -Itools
$(O)/obj/tools/demo.o $(O)/obj/tests/api/test_source_threads.o: CPPFLAGS_ALL += -Iexamples

# The flags live here, so a changed Makefile rebuilds the library.
$(LIB_OBJS): Makefile

$(STATIC_LIB): $(LIB_OBJS)
	@mkdir -p $(dir $@)
	@rm -f $@ && ar rcs $@ $^

$(SHARED_LIB): $(LIB_OBJS)
	@$(CC) -shared -Wl,-soname,$(SONAME) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS_ALL)
	@ln -sf $(notdir $@) $(O)/$(SONAME) && ln -sf $(SONAME) $(O)/liblivedb.so

install: lib $(O)/livedb
	install -d $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/bin
	install -m 644 include/livedb.h $(DESTDIR)$(PREFIX)/include/
	install -m 644 $(STATIC_LIB) $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(SHARED_LIB) $(DESTDIR)$(PREFIX)/lib/
	ln -sf $(notdir $(SHARED_LIB)) $(DESTDIR)$(PREFIX)/lib/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(PREFIX)/lib/liblivedb.so
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' livedb.pc.in \
	  > $(DESTDIR)$(PREFIX)/lib/pkgconfig/livedb.pc
	install -m 755 $(O)/livedb $(DESTDIR)$(PREFIX)/bin/

# Each test binary: its own source + the harness + its extra objects + the
# static library.
define test_rule
$(O)/tests/$(basename $(notdir $(1))): $(O)/obj/$(basename $(1)).o $(O)/obj/tests/test.o $$(TEST_EXTRA_$(basename $(notdir $(1)))) $(STATIC_LIB)
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

$(O)/demo: $(O)/obj/tools/demo.o $(EXAMPLE_OBJS) $(STATIC_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS_ALL)

$(O)/slt: $(O)/obj/tools/slt.o $(SLT_OBJS) $(STATIC_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ -lsqlite3 $(LDLIBS_ALL)

$(O)/select5gen: $(O)/obj/tools/select5gen.o $(SLT_OBJS) $(STATIC_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ -lsqlite3 $(LDLIBS_ALL)

# Line editing when libedit-dev is installed; a plain prompt without it.
HAVE_LIBEDIT := $(shell echo 'int main(void){return 0;}' | $(CC) -include editline/readline.h \
                  -x c - -ledit -o /dev/null >/dev/null 2>&1 && echo 1)
ifeq ($(HAVE_LIBEDIT),1)
$(O)/obj/tools/livedb.o: CPPFLAGS_ALL += -DLDB_SHELL_LIBEDIT
SHELL_LIBS := -ledit
endif

$(O)/livedb: $(SHELL_OBJS) $(STATIC_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(SHELL_LIBS) $(LDLIBS_ALL)

# The shell's test runs $(O)/livedb; the install test installs the
# library (make install) and builds the demo against it.
$(O)/tests/test_shell: | $(O)/livedb
$(O)/tests/test_install: | $(O)/livedb $(O)/demo $(SHARED_LIB)

# libFuzzer target: the library and the target built by clang with the
# fuzzer's coverage instrumentation and ASan + UBSan, in build/fuzz/.
FUZZ_CFLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
               -fno-sanitize-recover=all
$(O)/fuzz_sql: $(O)/obj/tests/fuzz/fuzz_sql.o $(STATIC_LIB)
	$(CC) $(CFLAGS) -fsanitize=fuzzer $(LDFLAGS) -o $@ $^ $(LDLIBS_ALL)

fuzz:
	@$(MAKE) --no-print-directory O=build/fuzz CC=clang \
	  CFLAGS="$(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link" build/fuzz/fuzz_sql

# Replays the saved corpus (every input must pass), then fuzzes for a
# minute from it; new inputs go to build/fuzz/new/, crashes to build/fuzz/.
FUZZ_RUN := -timeout=10 -rss_limit_mb=2048 -dict=tests/fuzz/sql.dict
fuzz-ci: fuzz
	build/fuzz/fuzz_sql $(FUZZ_RUN) -runs=0 tests/fuzz/corpus
	@mkdir -p build/fuzz/new
	build/fuzz/fuzz_sql $(FUZZ_RUN) -max_total_time=60 -print_final_stats=1 \
	  -artifact_prefix=build/fuzz/ build/fuzz/new tests/fuzz/corpus

# The PostgreSQL tests run too when PostgreSQL 15 and libpq are installed
# (LDB_REQUIRE_PG=1, which CI sets, makes their absence a failure).
HAVE_PG := $(shell test -x /usr/lib/postgresql/15/bin/initdb && test -f /usr/include/postgresql/libpq-fe.h && echo 1)
ifeq ($(HAVE_PG),1)
test: tests $(PG_TEST_BINS)
	@tools/pg_cluster.sh stop $(PG_DIR); tools/pg_cluster.sh start $(PG_DIR) >/dev/null
	@LDB_PG_DIR=$(PG_DIR) sh tests/run.sh $(O)/tests $(O)/pgtests; rc=$$?; \
	  tools/pg_cluster.sh stop $(PG_DIR); exit $$rc
else
test: tests
	@if [ "$$LDB_REQUIRE_PG" = 1 ]; then echo "FAIL test-pg: PostgreSQL 15 or libpq-dev missing"; exit 1; fi
	@echo "SKIPPED test-pg: PostgreSQL 15 or libpq-dev is not installed"
	@sh tests/run.sh $(O)/tests
endif

SAN_MAKE = $(MAKE) --no-print-directory O=build/san OPT=-O1 \
	  CFLAGS="-O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer" \
	  LDFLAGS="-fsanitize=address,undefined"
SAN_ENV = ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
test-sanitize:
	@$(SAN_ENV) $(SAN_MAKE) test

# The tests that run threads (one handle from several threads, interrupts
# from another thread, source providers on worker threads), under ThreadSanitizer in build/tsan/.
TSAN_TESTS := test_api_threads test_sql_regress test_source_laws test_source_threads test_optimistic \
              test_source_basic
test-tsan:
	@$(MAKE) --no-print-directory O=build/tsan OPT=-O1 CFLAGS="-O1 -g -fsanitize=thread" \
	  LDFLAGS="-fsanitize=thread" $(TSAN_TESTS:%=build/tsan/tests/%)
	@for t in $(TSAN_TESTS); do TSAN_OPTIONS=halt_on_error=1 build/tsan/tests/$$t || exit 1; done

demo: $(O)/demo
	@$(O)/demo

bench-quick: benches
	@for b in $(BENCH_BINS); do echo "## $$b"; $$b --quick || exit 1; done

clean:
	rm -rf build

# ---- the PostgreSQL adapter: src/pg/ -> liblivedb-pg (links libpq) ----
$(O)/obj/src/pg/%.o $(O)/obj/tests/pg/%.o $(O)/obj/tools/demo_pg.o \
$(O)/obj/bench/bench_pg.o: CPPFLAGS_ALL += $(PG_CPPFLAGS)
$(PG_OBJS): Makefile

$(PG_LIB): $(PG_OBJS)
	@mkdir -p $(dir $@)
	@rm -f $@ && ar rcs $@ $^
pg: $(PG_LIB)

define pg_test_rule
$(O)/pgtests/$(basename $(notdir $(1))): $(O)/obj/$(basename $(1)).o $(O)/obj/tests/test.o $(PG_TEST_OBJS) $(PG_LIB) $(STATIC_LIB)
	@mkdir -p $$(dir $$@)
	$$(CC) $$(CFLAGS) $$(LDFLAGS) -o $$@ $$^ $(PG_LIBS) $$(LDLIBS_ALL)
endef
$(foreach s,$(PG_TEST_SRCS),$(eval $(call pg_test_rule,$(s))))

$(O)/demo_pg: $(O)/obj/tools/demo_pg.o $(PG_LIB) $(STATIC_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(PG_LIBS) $(LDLIBS_ALL)
$(O)/bench/bench_pg: $(O)/obj/bench/bench_pg.o $(O)/obj/bench/bench_util.o $(PG_LIB) $(STATIC_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(PG_LIBS) -lsqlite3 $(LDLIBS_ALL)

# Each run starts its own cluster (PG_DIR, above) and stops it at the end;
# the tests find it through LDB_PG_DIR (tools/pg_cluster.sh's DIR).
test-pg: $(PG_TEST_BINS)
	@tools/pg_cluster.sh stop $(PG_DIR); tools/pg_cluster.sh start $(PG_DIR) >/dev/null
	@LDB_PG_DIR=$(PG_DIR) sh tests/run.sh $(O)/pgtests; rc=$$?; \
	  tools/pg_cluster.sh stop $(PG_DIR); exit $$rc
demo-pg: $(O)/demo_pg
	@tools/pg_cluster.sh stop $(PG_DIR); tools/pg_cluster.sh start $(PG_DIR) >/dev/null
	@LDB_PG_DIR=$(PG_DIR) $(O)/demo_pg; rc=$$?; tools/pg_cluster.sh stop $(PG_DIR); exit $$rc
bench-pg: $(O)/bench/bench_pg
	@tools/pg_cluster.sh stop $(PG_DIR); tools/pg_cluster.sh start $(PG_DIR) >/dev/null
	@LDB_PG_DIR=$(PG_DIR) $(O)/bench/bench_pg $(BENCH_ARGS); rc=$$?; \
	  tools/pg_cluster.sh stop $(PG_DIR); exit $$rc

-include $(shell find $(O)/obj -name '*.d' 2>/dev/null)
