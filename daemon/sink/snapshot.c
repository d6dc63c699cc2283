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
	for (unsigned i = 0; i < j->nparts; i++) {
		if ((err = file_pwrite(fd, j->parts[i].mem, j->parts[i].len, off)) < 0)
			goto fail;
		off += j->parts[i].len;
	}
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
