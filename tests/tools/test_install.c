/*
 * test_install.c - installs livedb as a user would (make install into a
 * temporary prefix, from the build folder this test lives in: build/ or
 * build/san/) and checks what lands there: the header, both libraries,
 * the soname links, livedb.pc and the shell; that the shared library
 * exports exactly the LDB_API functions of livedb.h and nothing else; and
 * that the demo (tools/demo.c and the example provider it links, programs
 * of the public API only) builds
 * with pkg-config against the installed copy, with -Wall -Wextra -Werror,
 * links the installed shared library, and prints what build/demo prints.
 *
 * Runs from the repository's top folder (as make test does).
 */
#include "test.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char build_dir[4096]; /* O of this test's build: .../build or .../build/san */
static char prefix[256];

/* The folder two levels above this binary (O/tests/test_install). */
static void find_build_dir(void)
{
    ssize_t n = readlink("/proc/self/exe", build_dir, sizeof build_dir - 1);
    CHECK(n > 0);
    build_dir[n] = 0;
    for (int i = 0; i < 2; i++) {
        char *slash = strrchr(build_dir, '/');
        CHECK(slash);
        *slash = 0;
    }
}

/* Runs cmd through sh with make's variables of the outer make removed (so
 * the inner make sees no inherited CFLAGS or O); out gets stdout and
 * stderr. Returns the exit status. */
static int sh(char *out, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int sh(char *out, size_t cap, const char *fmt, ...)
{
    char cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    char full[8400];
    snprintf(full, sizeof full, "env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL sh -c '%s' 2>&1", cmd);
    FILE *p = popen(full, "r");
    CHECK(p);
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = 0;
    int status = pclose(p);
    CHECK(WIFEXITED(status));
    return WEXITSTATUS(status);
}

static void check_file(const char *rel, bool link)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", prefix, rel);
    struct stat st;
    CHECKF(lstat(path, &st) == 0, "%s not installed", rel);
    CHECKF(link ? S_ISLNK(st.st_mode) : S_ISREG(st.st_mode), "%s: wrong file kind", rel);
}

static char out[1 << 20], ref[1 << 20];

static void install_and_build_demo(void)
{
    find_build_dir();
    CHECKF(access("Makefile", R_OK) == 0 && access("tools/demo.c", R_OK) == 0,
           "run from the repository's top folder");
    strcpy(prefix, "/tmp/ldb_install_XXXXXX");
    CHECK(mkdtemp(prefix));

    int rc = sh(out, sizeof out, "make -s --no-print-directory O=%s PREFIX=%s install",
                build_dir, prefix);
    CHECKF(rc == 0, "make install failed:\n%s", out);
    check_file("include/livedb.h", false);
    check_file("lib/liblivedb.a", false);
    check_file("lib/liblivedb.so.0.1.0", false);
    check_file("lib/liblivedb.so.0", true);
    check_file("lib/liblivedb.so", true);
    check_file("lib/pkgconfig/livedb.pc", false);
    check_file("bin/livedb", false);

    /* soname */
    CHECK_INT(sh(out, sizeof out, "objdump -p %s/lib/liblivedb.so.0.1.0 | grep SONAME", prefix), 0);
    CHECKF(strstr(out, "liblivedb.so.0\n"), "soname: %s", out);

    /* exports: every defined dynamic function or object is an ldb_ name,
     * and every LDB_API name of the header is among them */
    CHECK_INT(sh(out, sizeof out,
                 "nm -D --defined-only %s/lib/liblivedb.so.0.1.0 | awk \"{print \\$3}\" | sort",
                 prefix), 0);
    int exported = 0;
    for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
        CHECKF(strncmp(line, "ldb_", 4) == 0, "exported non-API symbol %s", line);
        exported++;
    }
    CHECK_INT(sh(ref, sizeof ref,
                 "grep -o \"^LDB_API[^(]*\" include/livedb.h | grep -o \"ldb_[a-z0-9_]*$\" | wc -l"),
              0);
    CHECK_INT(exported, atoi(ref));

    /* the demo against the installed copy, through pkg-config */
    const char *san = "";
#if defined(__SANITIZE_ADDRESS__)
    san = "-fsanitize=address,undefined";
#endif
    rc = sh(out, sizeof out,
            "cc -std=c11 -Wall -Wextra -Werror -D_GNU_SOURCE -Iexamples %s tools/demo.c "
            "examples/thread_provider.c -o %s/demo -pthread "
            "$(PKG_CONFIG_PATH=%s/lib/pkgconfig pkg-config --cflags --libs livedb) "
            "-Wl,-rpath,%s/lib",
            san, prefix, prefix, prefix);
    CHECKF(rc == 0, "building the demo against the installed livedb failed:\n%s", out);
    CHECK_INT(sh(out, sizeof out, "ldd %s/demo | grep liblivedb", prefix), 0);
    CHECKF(strstr(out, prefix), "demo does not load the installed library: %s", out);

    CHECK_INT(sh(out, sizeof out, "%s/demo", prefix), 0);
    CHECK_INT(sh(ref, sizeof ref, "%s/demo", build_dir), 0);
    CHECK_STR(out, ref);
    CHECK(strstr(out, "[newest]"));

    CHECK_INT(sh(out, sizeof out, "rm -rf %s", prefix), 0);
}

TEST_MAIN(T(install_and_build_demo))
