/* daemon/unix/file.c - what the daemon asks of Linux besides the control
 * channel (unix/transport.c) and the write backend (io-uring.c, io-pool.c):
 * segment files (O_DIRECT where the filesystem allows), free space, the
 * boot's identity. win/file.c is the same for Windows.
 */
#define _GNU_SOURCE
#include "daemon.h"
#include "log.h"
#include "store/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

void *file_aligned(size_t n)
{
	void *p = NULL;

	if (posix_memalign(&p, RINGLOG_SEG_ALIGN, n))
		return NULL;
	memset(p, 0, n);
	return p;
}

void file_aligned_free(void *p)
{
	free(p);
}

/* Huge pages: 256 MiB written once a minute is 65,536 TLB misses a pass
 * on 4 KiB pages, each a page walk (two-dimensional under a hypervisor);
 * on 2 MiB pages, 128. Measured with bench/bench-flight.c's CPU rows: 43
 * -> 38 ns of daemon CPU per flight-only event. The mapping starts on a
 * 2 MiB boundary (what a huge page needs) and ends at n rounded to a page:
 * its last partial 2 MiB stays on small pages rather than grow the RSS
 * past n. With THP off ("never") it is an ordinary mapping. */
#define FILE_HUGE (2u << 20)

static size_t page_up(size_t n)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);

	return (n + pg - 1) / pg * pg;
}

void *file_large(size_t n)
{
	size_t len = page_up(n), got = len + FILE_HUGE;
	uint8_t *p = mmap(NULL, got, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *a;

	if (p == MAP_FAILED)
		return NULL;
	a = (uint8_t *)(((uintptr_t)p + FILE_HUGE - 1) & ~(uintptr_t)(FILE_HUGE - 1));
	/* the slack before and after goes back */
	if (a > p)
		munmap(p, (size_t)(a - p));
	if (p + got > a + len)
		munmap(a + len, (size_t)(p + got - (a + len)));
#ifdef MADV_HUGEPAGE
	(void)madvise(a, len, MADV_HUGEPAGE); /* a hint: EINVAL without THP */
#endif
	memset(a, 0, n); /* touched now: the memory held from the start */
	return a;
}

void file_large_free(void *p, size_t n)
{
	if (p)
		munmap(p, page_up(n));
}

int file_create(const char *path, bool *direct)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_DIRECT, 0640);

	*direct = fd >= 0;
	/* tmpfs and some others refuse O_DIRECT: fall back to the page cache. */
	if (fd < 0 && errno == EINVAL)
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
	return fd < 0 ? -errno : fd;
}

int file_open_existing(const char *path)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

int file_pwrite(int fd, const void *buf, size_t len, uint64_t off)
{
	ssize_t n = pwrite(fd, buf, len, (off_t)off);

	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

int file_sync(int fd)
{
	return fdatasync(fd) < 0 ? -errno : 0;
}

void file_close(int fd)
{
	close(fd);
}

int file_remove(const char *path)
{
	return unlink(path) < 0 && errno != ENOENT ? -errno : 0;
}

int file_mkdir(const char *path)
{
	if (mkdir(path, 0750) == 0)
		return 1; /* the caller may give it a group (access_mkdir_store) */
	return errno == EEXIST ? 0 : -errno;
}

int file_lock_dir(const char *dir, int *lock, long *holder)
{
	char path[RINGLOG_CONFIG_PATH_MAX + 32], buf[32];
	int fd, err;
	ssize_t n;

	*holder = 0;
	snprintf(path, sizeof(path), "%s/" RINGLOG_LOCK_NAME, dir);
	/* flock, not fcntl locks: it belongs to the open file, so no other
	 * descriptor of ours can drop it by closing, and the kernel lets it go
	 * with the process however that ends. */
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0640);
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		err = -errno;
		n = pread(fd, buf, sizeof(buf) - 1, 0);
		if (n > 0) {
			buf[n] = 0;
			*holder = strtol(buf, NULL, 10);
		}
		close(fd);
		return err == -EWOULDBLOCK ? -EBUSY : err;
	}
	/* The holder's PID, for the next daemon's message only: the lock is
	 * the flock, never this text. */
	n = snprintf(buf, sizeof(buf), "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) < 0 || pwrite(fd, buf, (size_t)n, 0) != n) {
		err = -errno;
		close(fd);
		return err;
	}
	if (*lock >= 0)
		close(*lock);
	*lock = fd;
	return 0;
}

int file_dir_id(const char *dir, uint64_t id[2])
{
	struct stat st;

	if (stat(dir, &st) < 0)
		return -errno;
	id[0] = st.st_dev;
	id[1] = st.st_ino;
	return 0;
}

int file_unlinked(int fd)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	return st.st_nlink == 0;
}

int file_space(const char *dir, uint64_t *avail, uint64_t *total)
{
	struct statvfs v;

	if (statvfs(dir, &v) < 0)
		return -errno;
	*avail = (uint64_t)v.f_bavail * v.f_frsize;
	*total = (uint64_t)v.f_blocks * v.f_frsize;
	return 0;
}

void sys_identity(uint8_t boot_id[16], char *host, size_t host_len)
{
	char buf[64];
	int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		ssize_t n = read(fd, buf, sizeof(buf) - 1);
		int k = 0;

		close(fd);
		for (ssize_t i = 0; i + 1 < n && k < 16; i++) {
			unsigned v;

			if (buf[i] == '-')
				continue;
			if (sscanf(buf + i, "%2x", &v) == 1) {
				boot_id[k++] = (uint8_t)v;
				i++;
			}
		}
	}
	gethostname(host, host_len - 1);
}
