/*
 * slt_child.h - shared by the tests that run sqllogictest scripts on
 * livedb (test_slt_corpus.c, test_slt_select5.c): the runner runs in a
 * child process, so that a crash is reported as a crash and the parent
 * still judges the counts; and SANITIZED, set under AddressSanitizer,
 * where those tests run less.
 */
#ifndef LDB_TESTS_SLT_CHILD_H
#define LDB_TESTS_SLT_CHILD_H

#include "slt.h"

#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

/* Runs fn(ctx) in a child process and puts the counts it returns in
 * *out. Returns 0; the signal that ended the child; or -1 when the child
 * could not run or ended without its counts. */
static int slt_run_in_child(slt_counts (*fn)(void *ctx), void *ctx, slt_counts *out)
{
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        close(fds[0]);
        slt_counts c = fn(ctx);
        fflush(stdout);
        _exit(write(fds[1], &c, sizeof c) == sizeof c ? 0 : 1);
    }
    close(fds[1]);
    ssize_t got = read(fds[0], out, sizeof *out);
    close(fds[0]);
    int status;
    if (waitpid(pid, &status, 0) != pid)
        return -1;
    if (WIFSIGNALED(status))
        return WTERMSIG(status);
    return got == sizeof *out && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

#endif
