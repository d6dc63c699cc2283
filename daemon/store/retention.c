/* daemon/store/retention.c - the segment index and the global disk budget.
 *
 * All segments form one circular log: when the next chunk would not fit
 * under max_disk, or would leave less than min_free on the filesystem, the
 * oldest segments are deleted first. The segment being written counts, and
 * the check runs before every chunk write, so usage never exceeds the
 * budget by more than one chunk (in practice not at all). The index lives
 * in memory: status and tail never rescan the directory.
 */
#define _GNU_SOURCE
#include "daemon.h"
#include "log.h"
#include "store/file.h"
#include "seg-summary.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "decode.h"

void ret_add(struct daemon *d, struct segfile *s)
{
	struct segfile **pp = &d->st.segs;

	while (*pp && (*pp)->seq < s->seq)
		pp = &(*pp)->next;
	s->next = *pp;
	*pp = s;
	d->st.used_bytes += s->bytes;
}

/* One look at the filesystem gives both figures: a statvfs per chunk
 * sealed, not one for each. */
void ret_fs_room(const struct daemon *d, uint64_t *fs_free, uint64_t *floor)
{
	const struct store_budget *b = &d->st.budget;
	uint64_t avail = 0, total = 0;
	bool known = d->st.space(d->cfg.storage_dir, &avail, &total) == 0;

	*fs_free = known ? avail : UINT64_MAX;
	if (b->min_free_bytes || !b->min_free_percent)
		*floor = b->min_free_bytes;
	else
		*floor = known ? total / 100 * b->min_free_percent : 0;
}

uint64_t ret_fs_free(const struct daemon *d)
{
	uint64_t fs_free, floor;

	ret_fs_room(d, &fs_free, &floor);
	return fs_free;
}

uint64_t ret_min_free(const struct daemon *d)
{
	uint64_t fs_free, floor;

	ret_fs_room(d, &fs_free, &floor);
	return floor;
}

/* Take s out of the index (wherever it is) and delete its file. */
static void delete_seg(struct daemon *d, struct segfile *s)
{
	int err;

	if (d->st.deleting)
		d->st.deleting(d, s);
	for (struct segfile **pp = &d->st.segs; *pp; pp = &(*pp)->next)
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	d->st.used_bytes -= s->bytes;
	if ((err = file_remove(s->path)) < 0)
		d_log(LOG_ERR, "cannot delete segment %s: %s", s->path, strerror(-err));
	free(s->path);
	file_aligned_free(s->hdr);
	free(s);
}

static void delete_oldest(struct daemon *d)
{
	delete_seg(d, d->st.segs);
}

/* `ringlog vacuum` and max_retention: only sealed segments go (closed:
 * finalize() wrote their header and no write is in flight), never the
 * one being written, so the index and the files stay in step. Size first,
 * oldest first, counting the segment being written as the budget does;
 * then every sealed segment whose newest event is older than before_ns
 * (a segment without events, loss records only, has no time of its own:
 * its last_real_ns is 0, so any age limit takes it). */
unsigned ret_vacuum(struct daemon *d, uint64_t keep_bytes, uint64_t before_ns,
		    void (*each)(void *ctx, const struct segfile *s), void *ctx)
{
	unsigned n = 0;

	for (struct segfile *s = d->st.segs, *next; s && d->st.used_bytes > keep_bytes; s = next) {
		next = s->next;
		if (!s->closed || s->current || s->inflight || (d->st.keep && d->st.keep(d, s)))
			continue;
		if (each)
			each(ctx, s);
		delete_seg(d, s);
		n++;
	}
	for (struct segfile *s = before_ns ? d->st.segs : NULL, *next; s; s = next) {
		next = s->next;
		if (!s->closed || s->current || s->inflight || s->last_real_ns >= before_ns ||
		    (d->st.keep && d->st.keep(d, s)))
			continue;
		if (each)
			each(ctx, s);
		delete_seg(d, s);
		n++;
	}
	return n;
}

static bool disk_ok_with_one_chunk(const struct daemon *d, uint64_t fs_free, uint64_t min_free)
{
	/* The filesystem floor is hard: never write into the last min_free. */
	return fs_free >= d->st.budget.chunk_size && fs_free - d->st.budget.chunk_size >= min_free;
}

enum store_room ret_make_room(struct daemon *d, uint64_t bytes)
{
	for (;;) {
		struct segfile *s = d->st.segs;
		uint64_t fs_free, min_free;
		bool disk_ok, fs_ok;

		ret_fs_room(d, &fs_free, &min_free);
		disk_ok = d->st.used_bytes + bytes <= d->st.budget.max_disk;
		fs_ok = fs_free >= bytes && fs_free - bytes >= min_free;

		if (disk_ok && fs_ok)
			return ROOM_OK;
		if (!s)
			return ROOM_FULL;
		if (s->current) {
			/* Only the segment being written is left. The chunk
			 * at hand was built for it, so it goes there (one chunk
			 * over), and the caller closes the segment so that it
			 * is the next to go: the circular log eats its tail. */
			if (!s->chunks || !disk_ok_with_one_chunk(d, fs_free, min_free))
				return ROOM_FULL;
			return ROOM_ROTATE;
		}
		if (s->inflight)
			return ROOM_WAIT;
		delete_oldest(d);
	}
}

/* Seal a crashed daemon's segment with the totals of the scan, so that
 * readers and the next startup see a closed segment (flagged RECOVERED)
 * instead of rescanning it every time. */
static void seal_recovered(const char *path, const struct ringlog_seg_hdr *old,
			   const struct segfile *s, uint64_t end)
{
	struct ringlog_seg_hdr h = *old;
	int fd = file_open_existing(path), err = fd < 0 ? fd : 0;

	h.state = RINGLOG_SEG_CLOSED;
	h.compat_flags |= RINGLOG_SEG_RECOVERED;
	h.first_real_ns = s->first_real_ns;
	h.last_real_ns = s->last_real_ns;
	h.events = s->events;
	h.lost = s->lost;
	h.chunks = s->chunks;
	h.end = end;
	h.hdr_crc = ringlog_seg_hdr_crc(&h);
	if (!err && !(err = file_pwrite(fd, &h, sizeof(h), 0)))
		err = file_sync(fd);
	if (err)
		d_log(LOG_ERR, "segment %s: could not seal it: %s (it stays readable)", path, strerror(-err));
	if (fd >= 0)
		file_close(fd);
}

/* A segment the index does not know yet (startup): read its header, and
 * walk the chunk headers of one that a crash left ONLINE. */
static void scan_one(struct daemon *d, const char *path, uint64_t seq)
{
	struct ringlog_seg_file f;
	struct ringlog_seg_summary sum;
	struct segfile *s;
	const char *why;
	int err = ringlog_seg_open(&f, path, &why);

	if (err < 0) {
		d_log(LOG_WARNING, "segment %s ignored: %s", path, why ? why : strerror(-err));
		return;
	}
	if (f.warning[0]) /* a forged or damaged header field, and what readers do */
		d_log(LOG_WARNING, "segment %s: %s", path, f.warning);
	s = calloc(1, sizeof(*s));
	if (!s || !(s->path = strdup(path))) {
		free(s);
		ringlog_seg_close(&f);
		return;
	}
	s->seq = seq;
	s->bytes = f.size;
	s->closed = true;
	s->fd = -1;
	ringlog_seg_summarize(&f, &sum);
	s->first_real_ns = sum.first_real_ns;
	s->last_real_ns = sum.last_real_ns;
	s->events = sum.events;
	s->lost = sum.lost;
	s->chunks = sum.chunks;
	if (!sum.from_header) {
		d_log(LOG_WARNING, "segment %s was not closed cleanly (crash?): %llu chunks readable; sealed now",
		      path, (unsigned long long)s->chunks);
		if (f.hdr_ok)
			seal_recovered(path, &f.hdr, s, sum.end);
	}
	ringlog_seg_close(&f);
	ret_add(d, s);
	if (seq >= d->st.next_seq)
		d->st.next_seq = seq + 1;
}

int ret_scan(struct daemon *d)
{
	DIR *dir = opendir(d->cfg.storage_dir);
	struct dirent *e;
	int err;

	if (!dir) {
		err = -errno;
		d_log(LOG_ERR, "cannot read storage_dir %s: %s", d->cfg.storage_dir, strerror(errno));
		return err;
	}
	while ((e = readdir(dir))) {
		char path[RINGLOG_CONFIG_PATH_MAX + 300];
		unsigned long long seq;
		int n = 0;

		if (sscanf(e->d_name, "%16llx.rlseg%n", &seq, &n) != 1 ||
		    n != (int)strlen(e->d_name) || strlen(e->d_name) != 22)
			continue;
		snprintf(path, sizeof(path), "%s/%s", d->cfg.storage_dir, e->d_name);
		scan_one(d, path, seq);
	}
	closedir(dir);
	/* A directory already over budget is trimmed before any event. */
	if (ret_make_room(d, 0) != ROOM_OK && d->st.segs)
		d_log(LOG_ERR, "storage_dir %s: still over budget after deleting old segments", d->cfg.storage_dir);
	return 0;
}
