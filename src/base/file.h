/*
 * file.h - the operating system's files, as durable storage uses them:
 * whole reads and writes at offsets, syncs, truncation, renames, one
 * exclusive lock per database, and a test hook that fails any of those.
 *
 * Every call that can change what is on disk (open with create, write,
 * sync, truncate, rename, directory sync, remove) goes through here, so a
 * test can make the n-th such call fail (file_fail_at) and prove that the
 * caller reports an error and that the files still open consistently,
 * like mem_fail_at does for allocations.
 *
 * Errors: functions return 0 or an errno value (never -1) and also leave
 * it in errno; file_code maps it to a livedb result code. Writes retry
 * EINTR and short writes until done or a real error.
 *
 * The hook and its counters are per thread (a database is used by one
 * thread at a time).
 */
#ifndef LDB_BASE_FILE_H
#define LDB_BASE_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct file {
    int fd; /* -1: closed */
};

/* Opens path read-write (creating it, mode 0644, when create). */
int file_open(struct file *f, const char *path, bool create);
/* Closes f (a no-op when closed); also drops its lock. */
void file_close(struct file *f);
/* Takes an exclusive advisory lock (flock) without waiting: EWOULDBLOCK
 * when another open file description holds it, in this process or
 * another. */
int file_lock(struct file *f);
/* Whether path names f's file still (it was not removed or replaced
 * since f was opened): a lock taken on a removed file guards nothing. */
bool file_is_at(struct file *f, const char *path);
int file_size(struct file *f, uint64_t *out);
/* Reads exactly n bytes at off; EIO (and *got, the bytes read) when the
 * file ends first. */
int file_read_at(struct file *f, void *buf, size_t n, uint64_t off, size_t *got);
int file_write_at(struct file *f, const void *buf, size_t n, uint64_t off);
/* Maps the first n bytes of f read-only (n > 0); file_unmap undoes it.
 * The mapping stays valid after file_close. */
int file_map(struct file *f, size_t n, const void **out);
void file_unmap(const void *p, size_t n);
/* fdatasync: what was written reaches the disk. */
int file_sync(struct file *f);
int file_truncate(struct file *f, uint64_t size);
int file_rename(const char *from, const char *to);
/* Syncs the directory holding path, so that a rename or creation in it
 * survives power loss. */
int file_sync_dir(const char *path);
/* Removes path; ENOENT is success. */
int file_remove(const char *path);
/* Whether path exists (a stat that succeeds). */
bool file_exists(const char *path);
/* path with every symbolic link resolved (malloc'd: free() it), also
 * when the last link points to a file not made yet; NULL when path does
 * not resolve (it does not exist). A file opened through a link must be
 * named as its target, so that files named after it (a log, a lock, a
 * rename over it) are the target's too. */
char *file_resolve(const char *path);

/* livedb.h code for an errno value: LDB_FULL (ENOSPC, EDQUOT, EFBIG),
 * LDB_CANTOPEN (EACCES, EPERM, EROFS, ENOENT, ENOTDIR, EISDIR,
 * ENAMETOOLONG, ELOOP),
 * LDB_BUSY (EWOULDBLOCK), LDB_NOMEM (ENOMEM), else LDB_IOERR. */
int file_code(int err);

/* ---- test hook ----------------------------------------------------------- */

/*
 * Make the n-th call from now that changes the disk fail with errno err
 * (n = 1: the next one); with persistent != 0 every later one fails too.
 * A failing write of more than one byte first writes the leading half of
 * its bytes, as a torn write on a full disk would. n = 0 disables.
 */
void file_fail_at(uint64_t n, int persistent, int err);
/* Calls that changed (or tried to change) the disk, by this thread since
 * start; and those the hook failed since it was set. */
uint64_t file_call_count(void);
uint64_t file_failed_count(void);

#endif
