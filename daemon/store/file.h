/* daemon/store/file.h - what the store asks of the system: segment files,
 * free space, the directory's lock and identity, the boot's identity.
 * Implemented once per platform: unix/file.c, win/file.c. Files are the
 * descriptors the I/O backend (io-ops.h) writes.
 *
 * Every int function returns 0 or -errno (on Windows, translated by
 * compat/error-win.c); what each error means is said where it matters. */
#ifndef RINGLOG_DAEMON_FILE_H
#define RINGLOG_DAEMON_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

void *file_aligned(size_t n);  /* zeroed, RINGLOG_SEG_ALIGN-aligned */
void file_aligned_free(void *p);
/* A large buffer written sequentially for the process's life (the flight
 * recorder's): zeroed and touched now, RINGLOG_SEG_ALIGN-aligned, backed by
 * huge pages where the system gives them (Linux: transparent huge pages
 * asked for with madvise), so that filling it costs no TLB miss per 4 KiB.
 * Freed with its size. */
void *file_large(size_t n);
void file_large_free(void *p, size_t n);
int file_create(const char *path, bool *direct); /* a new file, unbuffered if it can */
int file_open_existing(const char *path);
int file_pwrite(int fd, const void *buf, size_t len, uint64_t off);
int file_sync(int fd);
void file_close(int fd);
int file_remove(const char *path); /* gone already is fine */
int file_mkdir(const char *path);  /* 0: there already, 1: made (Linux) */
int file_space(const char *dir, uint64_t *avail, uint64_t *total);
/* Hold dir's lock (RINGLOG_LOCK_NAME in it) for the life of the process:
 * 0 (*lock is its descriptor, replacing any old one), -EBUSY (another
 * process holds it: *holder is its PID, or 0 if unknown) or -errno. */
#define RINGLOG_LOCK_NAME "ringlogd.lock"
int file_lock_dir(const char *dir, int *lock, long *holder);
/* What identifies dir now (device, inode), to notice it was replaced. */
int file_dir_id(const char *dir, uint64_t id[2]);
/* 1 if the open file fd has no name left (deleted), 0, or -errno. */
int file_unlinked(int fd);
void sys_identity(uint8_t boot_id[16], char *host, size_t host_len);

#endif /* RINGLOG_DAEMON_FILE_H */
