/* daemon/sink/snapshot.c - a flight recorder snapshot on disk (snapshot.h).
 * Called on a libuv worker thread: the loop keeps draining meanwhile, and
 * the flight buffer's chunks being written are pinned (flight.c). */
#define _GNU_SOURCE
#include "sink/snapshot.h"
#include "clock.h"
#include "store/file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#ifndef _WIN32
#include <sys/uio.h>
#endif

/* Chunks per write: 1 MiB chunks in 1 MiB writes took 0.34 s for 256 MiB
 * on the test machine's disk with O_DIRECT, 16 MiB writes 0.19 s (dd). */
#define SNAP_IOV 64

/* The rename is durable only once the directory is synced (Linux). */
static int sync_dir(const char *path)
{
#ifdef _WIN32
	(void)path;
	return 0;
#else
	char dir[RINGLOG_CONFIG_PATH_MAX + 64];
	char *slash;
	int fd, err = 0;

	snprintf(dir, sizeof(dir), "%s", path);
	if ((slash = strrchr(dir, '/')))
		*slash = '\0';
	if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return -errno;
	if (fsync(fd) < 0)
		err = -errno;
	close(fd);
	return err;
#endif
}

/* The chunks from off on, several per system call where there is one for
 * that (the disk takes big writes much faster). *off advances. */
static int write_parts(int fd, const struct snap_part *parts, unsigned n, uint64_t *off)
{
#ifdef _WIN32
	for (unsigned i = 0; i < n; i++) {
		int err = file_pwrite(fd, parts[i].mem, parts[i].len, *off);

		if (err < 0)
			return err;
		*off += parts[i].len;
	}
	return 0;
#else
	struct iovec iov[SNAP_IOV];

	for (unsigned i = 0; i < n;) {
		unsigned k = 0;
		size_t want = 0;
		ssize_t got;

		for (; k < SNAP_IOV && i + k < n; k++) {
			iov[k].iov_base = (void *)parts[i + k].mem;
			iov[k].iov_len = parts[i + k].len;
			want += parts[i + k].len;
		}
		got = pwritev(fd, iov, (int)k, (off_t)*off);
		if (got < 0)
			return -errno;
		if ((size_t)got != want) {
			/* short (a full disk, a signal): the rest one by one,
			 * so that an error says why */
			for (unsigned x = 0; x < k; x++) {
				size_t len = parts[i + x].len;
				int err;

				if ((size_t)got >= len) {
					got -= (ssize_t)len;
					*off += len;
					continue;
				}
				if (got) /* a torn chunk: cannot go on aligned */
					return -EIO;
				if ((err = file_pwrite(fd, parts[i + x].mem, len, *off)) < 0)
					return err;
				*off += len;
			}
		} else {
			*off += want;
		}
		i += k;
	}
	return 0;
#endif
}

int snap_write(struct snap_job *j)
{
	uint64_t t0 = d_now(CLOCK_MONOTONIC), off = RINGLOG_SEG_HEADER_SIZE;
	bool direct;
	int fd, err;

	j->what = "create";
	if ((fd = file_create(j->tmp, &direct)) < 0) {
		j->err = fd;
		return fd;
	}
	/* Chunks first, the header last: a file cut short has no valid
	 * header either (it never gets its final name anyway). */
	j->what = "write";
	if ((err = write_parts(fd, j->parts, j->nparts, &off)) < 0)
		goto fail;
	j->hdr->end = off;
	j->hdr->hdr_crc = ringlog_seg_hdr_crc(j->hdr);
	if ((err = file_pwrite(fd, j->hdr, RINGLOG_SEG_HEADER_SIZE, 0)) < 0)
		goto fail;
	j->what = "sync";
	if ((err = file_sync(fd)) < 0)
		goto fail;
	file_close(fd);
	j->what = "rename";
	if (rename(j->tmp, j->path) < 0) {
		err = -errno;
		file_remove(j->tmp);
		j->err = err;
		return err;
	}
	j->what = "sync the directory of";
	if ((err = sync_dir(j->path)) < 0) {
		j->err = err;
		return err;
	}
	j->bytes = off;
	j->ns = d_now(CLOCK_MONOTONIC) - t0;
	j->err = 0;
	return 0;
fail:
	file_close(fd);
	file_remove(j->tmp);
	j->err = err;
	return err;
}

int snap_scan(const char *dir, bool clean, unsigned *count, uint64_t *bytes, char *oldest,
	      size_t oldest_len)
{
	DIR *dp = opendir(dir);
	struct dirent *e;
	char first[32] = "";

	*count = 0;
	*bytes = 0;
	if (!dp)
		return errno == ENOENT ? 0 : -errno;
	while ((e = readdir(dp))) {
		char path[RINGLOG_CONFIG_PATH_MAX + 48];
		unsigned long long seq;
		struct stat st;
		size_t len = strlen(e->d_name);
		int n = 0;

		if (clean && e->d_name[0] == '.' && len == 27 && !strcmp(e->d_name + 23, ".tmp")) {
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			file_remove(path); /* a half snapshot: never renamed */
			continue;
		}
		/* <16 hex>.rlseg exactly: temporaries (.NAME.tmp) are not ours
		 * to count, nor anything else an operator put there */
		if (len != 22 || sscanf(e->d_name, "%16llx.rlseg%n", &seq, &n) != 1 ||
		    n != 22)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (stat(path, &st) < 0)
			continue;
		(*count)++;
		*bytes += (uint64_t)st.st_size;
		if (!first[0] || strcmp(e->d_name, first) < 0)
			memcpy(first, e->d_name, 23); /* 22 characters and the NUL */
	}
	closedir(dp);
	if (oldest_len)
		snprintf(oldest, oldest_len, "%s%s%s", first[0] ? dir : "", first[0] ? "/" : "", first);
	return 0;
}
