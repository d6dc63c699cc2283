/* compat/compat-win.h - the few POSIX calls the portable code uses that
 * mingw-w64's C runtime lacks, for the Windows build only (compat-win.c);
 * empty elsewhere, so that portable files include it unconditionally.
 * Everything platform-specific beyond these lives with the code that needs
 * it (daemon/win/, client/os-win.c, client/transport-win.c), as libuv keeps
 * src/win/ apart. */
#ifndef RINGLOG_COMPAT_WIN_H
#define RINGLOG_COMPAT_WIN_H

#ifdef _WIN32
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Files are binary, and Windows handles are not inherited by default. */
#ifndef O_CLOEXEC
#define O_CLOEXEC O_BINARY
#endif

/* pread(2): a positioned read that leaves the file offset alone
 * (ReadFile with an OVERLAPPED offset on the fd's handle). */
ssize_t ringlog_pread(int fd, void *buf, size_t n, int64_t off);
#define pread(fd, b, n, off) ringlog_pread((fd), (b), (n), (int64_t)(off))

/* A Win32 error code (GetLastError()) as -errno; -EIO when it has no
 * better name (error-win.c). */
int win_errno(unsigned long e);

/* strndup(3) */
char *ringlog_strndup(const char *s, size_t n);
#define strndup ringlog_strndup

/* glibc's strerrorname_np(3), with Linux's values (see compat-win.c). */
const char *ringlog_errno_name(int e);
#define strerrorname_np ringlog_errno_name

/* strptime(3) for the numeric conversions only; timegm(3). */
struct tm;
char *ringlog_strptime(const char *s, const char *fmt, struct tm *tm);
#define strptime ringlog_strptime
#define timegm _mkgmtime

/* fnmatch(3) with flags 0: '*', '?', '[...]' (with '!' or '^' and ranges)
 * and backslash escapes. Returns 0 on a match, FNM_NOMATCH otherwise. */
#define FNM_NOMATCH 1
int fnmatch(const char *pattern, const char *string, int flags);

/* statvfs(3), the fields `ringlog status` reads (GetDiskFreeSpaceEx). */
struct statvfs {
	unsigned long f_frsize;
	uint64_t f_blocks, f_bavail;
};
int statvfs(const char *path, struct statvfs *v);

/* scandir(3) without a filter, and alphasort(3). */
struct dirent;
int scandir(const char *dir, struct dirent ***names, int (*filter)(const struct dirent *),
	    int (*cmp)(const struct dirent **, const struct dirent **));
int alphasort(const struct dirent **a, const struct dirent **b);
#endif

#endif /* RINGLOG_COMPAT_WIN_H */
