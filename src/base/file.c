/*
 * file.c - POSIX files for durable storage, with a failure hook (file.h).
 *
 * The hook counts only calls that change the disk: reads cannot leave a
 * database half written, so failing them proves nothing about recovery.
 */
#include "base/file.h"

#include "livedb.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static _Thread_local uint64_t fail_countdown; /* 0: hook disabled */
static _Thread_local int fail_persistent;
static _Thread_local int fail_tripped;
static _Thread_local int fail_errno;
static _Thread_local uint64_t failed_total;
static _Thread_local uint64_t call_total;

void file_fail_at(uint64_t n, int persistent, int err)
{
    fail_countdown = n;
    fail_persistent = persistent;
    fail_tripped = 0;
    fail_errno = err ? err : EIO;
    failed_total = 0;
}

uint64_t file_call_count(void) { return call_total; }
uint64_t file_failed_count(void) { return failed_total; }

/* Counts a changing call; returns the errno it must fail with, or 0. */
static int injected(void)
{
    call_total++;
    if (fail_tripped && fail_persistent) {
        failed_total++;
        return fail_errno;
    }
    if (fail_countdown == 0 || --fail_countdown != 0)
        return 0;
    fail_tripped = 1;
    failed_total++;
    return fail_errno;
}

static int fail(int err)
{
    errno = err;
    return err;
}

static int last_error(void) { return errno ? errno : EIO; }

int file_code(int err)
{
    switch (err) {
    case 0: return LDB_OK;
    case ENOSPC: case EDQUOT: case EFBIG: return LDB_FULL;
    case EACCES: case EPERM: case EROFS: case ENOENT: case ENOTDIR: case EISDIR:
    case ENAMETOOLONG: case ELOOP:
        return LDB_CANTOPEN;
    case EWOULDBLOCK: return LDB_BUSY;
    case ENOMEM: return LDB_NOMEM;
    default: return LDB_IOERR;
    }
}

int file_open(struct file *f, const char *path, bool create)
{
    f->fd = -1;
    int err = create ? injected() : 0;
    if (err)
        return fail(err);
    int fd;
    do
        fd = open(path, O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), 0644);
    while (fd < 0 && errno == EINTR);
    if (fd < 0)
        return last_error();
    struct stat st;
    if (fstat(fd, &st) == 0 && !S_ISREG(st.st_mode)) {
        close(fd);
        return fail(EISDIR);
    }
    f->fd = fd;
    return 0;
}

void file_close(struct file *f)
{
    if (f->fd >= 0)
        close(f->fd);
    f->fd = -1;
}

int file_lock(struct file *f)
{
    while (flock(f->fd, LOCK_EX | LOCK_NB) != 0)
        if (errno != EINTR)
            return errno == EWOULDBLOCK ? fail(EWOULDBLOCK) : last_error();
    return 0;
}

bool file_is_at(struct file *f, const char *path)
{
    struct stat mine, named;
    return fstat(f->fd, &mine) == 0 && stat(path, &named) == 0 && mine.st_dev == named.st_dev &&
           mine.st_ino == named.st_ino;
}

int file_size(struct file *f, uint64_t *out)
{
    struct stat st;
    if (fstat(f->fd, &st) != 0)
        return last_error();
    *out = (uint64_t)st.st_size;
    return 0;
}

int file_read_at(struct file *f, void *buf, size_t n, uint64_t off, size_t *got)
{
    size_t done = 0;
    while (done < n) {
        ssize_t k = pread(f->fd, (char *)buf + done, n - done, (off_t)(off + done));
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            *got = done;
            return k < 0 ? last_error() : fail(EIO);
        }
        done += (size_t)k;
    }
    *got = done;
    return 0;
}

int file_map(struct file *f, size_t n, const void **out)
{
    void *p = mmap(NULL, n, PROT_READ, MAP_PRIVATE, f->fd, 0);
    if (p == MAP_FAILED)
        return last_error();
    *out = p;
    return 0;
}

void file_unmap(const void *p, size_t n)
{
    munmap((void *)p, n);
}

static int write_all(int fd, const char *p, size_t n, uint64_t off)
{
    while (n) {
        ssize_t k = pwrite(fd, p, n, (off_t)off);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return last_error();
        if (k == 0)
            return fail(ENOSPC);
        p += k;
        n -= (size_t)k;
        off += (uint64_t)k;
    }
    return 0;
}

int file_write_at(struct file *f, const void *buf, size_t n, uint64_t off)
{
    int err = injected();
    if (err) {
        if (n > 1) /* torn: the leading half reached the file */
            write_all(f->fd, buf, n / 2, off);
        return fail(err);
    }
    return write_all(f->fd, buf, n, off);
}

int file_sync(struct file *f)
{
    int err = injected();
    if (err)
        return fail(err);
    while (fdatasync(f->fd) != 0)
        if (errno != EINTR)
            return last_error();
    return 0;
}

int file_truncate(struct file *f, uint64_t size)
{
    int err = injected();
    if (err)
        return fail(err);
    while (ftruncate(f->fd, (off_t)size) != 0)
        if (errno != EINTR)
            return last_error();
    return 0;
}

int file_rename(const char *from, const char *to)
{
    int err = injected();
    if (err)
        return fail(err);
    return rename(from, to) == 0 ? 0 : last_error();
}

int file_sync_dir(const char *path)
{
    int err = injected();
    if (err)
        return fail(err);
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    int fd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return last_error();
    int rc = 0;
    while (fsync(fd) != 0)
        if (errno != EINTR) {
            rc = last_error();
            break;
        }
    close(fd);
    return rc;
}

int file_remove(const char *path)
{
    int err = injected();
    if (err)
        return fail(err);
    return unlink(path) == 0 || errno == ENOENT ? 0 : last_error();
}

bool file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* A link whose target does not exist yet resolves to that target, so a
 * database made through it is made at the target. hops: links followed. */
static char *resolve_at(const char *path, int hops)
{
    char *real = realpath(path, NULL);
    if (real || errno != ENOENT || hops == 16)
        return real;
    char target[PATH_MAX], joined[2 * PATH_MAX];
    ssize_t n = readlink(path, target, sizeof target - 1);
    if (n < 0) /* not a link: the file to make, when a link named it */
        return hops ? strdup(path) : NULL;
    target[n] = '\0';
    const char *slash = strrchr(path, '/');
    if (target[0] == '/' || !slash)
        return resolve_at(target, hops + 1);
    snprintf(joined, sizeof joined, "%.*s/%s", (int)(slash - path), path, target);
    return resolve_at(joined, hops + 1);
}

char *file_resolve(const char *path) { return resolve_at(path, 0); }
