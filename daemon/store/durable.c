/* daemon/store/durable.c - a segment's end (its CLOSED header, its sync, its
 * descriptor closed), and when written data is made durable.
 *
 * A chunk write reaches the file when it completes, so a crash of the
 * daemon loses nothing written; a crash of the system or a power loss
 * takes what is still in the disk's own cache (or in the page cache, where
 * the filesystem refuses O_DIRECT), and only a sync (fdatasync,
 * FlushFileBuffers) covers that. A sync
 * costs the device, not us: on a virtual disk one takes ~40 ms and every
 * write queued behind it waits as long. With a sync at each rotation (every
 * 150 ms at 10 M events/s) 10 % of the chunk writes took 32 ms or more and
 * 16 MiB rings overflowed (issue 23), while the segment being written was
 * never synced until it rotated (an hour, at a trickle).
 *
 * So syncs go in rounds, at most one per sync_interval: a round syncs every
 * rotated segment whose CLOSED header landed since the last round, and the
 * segment being written of each lane when a write completed in it since.
 * A power loss costs at most sync_interval, a tick and a round of what
 * was written, whatever the rate.
 *
 * A rotated segment waiting for its round counts as a write in flight
 * (s->inflight, st->finalizing), so that store_idle() waits for it; but
 * one that retention or `ringlog vacuum` deletes goes without its sync
 * (store_sync_drop(): a deleted file needs none), and retention waiting
 * for a seal still in flight asks for the round at once
 * (store_sync_soon()). At most SYNC_QUEUE_MAX rotated segments wait (each
 * holds its descriptor open): one more starts the round. Syncs run
 * through the backend, off the loop thread; stopping (the loop may not
 * run again) or with a backend that cannot take them, in place.
 */
#define _GNU_SOURCE
#include "store/store.h"
#include "log.h"
#include "clock.h"
#include "store/io-ops.h"
#include "store/file.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SYNC_QUEUE_MAX 64

static void seal_failed(const struct segfile *s, int err)
{
	d_log(LOG_ERR, "segment %s: could not seal its header: %s (its chunks stay readable)",
	      s->path, strerror(-err));
}

/* Logged, counted and kept for status: what a power loss may now take. */
static void sync_failed(struct store *st, const struct segfile *s, int err, const char *what)
{
	st->sync_failures++;
	snprintf(st->sync_error, sizeof(st->sync_error), "sync of %s failed: %s (%s)", s->path,
		 strerror(-err), what);
	d_log(LOG_ERR, "segment %s: sync failed: %s (%s)", s->path, strerror(-err), what);
}

static void finalized(struct segfile *s)
{
	file_close(s->fd);
	s->fd = -1;
	file_aligned_free(s->hdr);
	s->hdr = NULL;
	s->closed = true;
	if (s->orphan) {
		free(s->path);
		free(s);
	}
}

/* Retention may have waited for a write in flight (ROOM_WAIT): room again. */
static void room_again(struct store *st)
{
	if (st->written && !st->stopping)
		st->written(st->ctx, st->open == NULL);
}

/* s synced through the backend, or in place when it cannot (done gets
 * 0 or -errno either way). */
static void sync_seg(struct store *st, struct segfile *s, io_done_fn done)
{
	if (st->stopping || !st->io->ops->sync || st->io->ops->sync(st->io, s->fd, done, s) < 0)
		done(s, file_sync(s->fd));
}

/* A rotated segment's seal is over (synced, or deleted unsynced). */
static void seal_done(struct store *st, struct segfile *s)
{
	s->inflight--;
	st->finalizing--;
	finalized(s);
}

/* s leaves the queue of rotated segments waiting for the round. */
static void unqueue(struct store *st, struct segfile *s)
{
	for (struct segfile **pp = &st->sync_queue; *pp; pp = &(*pp)->sync_next)
		if (*pp == s) {
			*pp = s->sync_next;
			break;
		}
	s->sync_next = NULL;
	s->sync_waiting = false;
	st->sync_queued--;
}

static void on_seal_synced(void *arg, long res)
{
	struct segfile *s = arg;
	struct store *st = s->st;

	if (res < 0)
		sync_failed(st, s, (int)res, "its chunks are in the file; a power loss may take "
			    "what the disk had not stored yet");
	seal_done(st, s);
	room_again(st);
}

/* The segment being written of some lane, synced (s->syncing). */
static void on_cur_synced(void *arg, long res)
{
	struct segfile *s = arg;
	struct store *st = s->st;

	s->inflight--;
	s->syncing = false;
	st->syncing--;
	if (res < 0) {
		s->writes_synced = UINT64_MAX; /* not synced: the next round tries again */
		sync_failed(st, s, (int)res, "tried again in the next round");
	}
	/* rotated meanwhile: its end waited for this */
	if (!s->current && !s->closed && s->inflight == 0)
		seg_finalize(st, s);
	room_again(st);
}

static bool cur_dirty(const struct segfile *s)
{
	return s && s->fd >= 0 && !s->closed && !s->syncing && s->writes_done != s->writes_synced;
}

static bool round_due(const struct store *st)
{
	if (st->sync_queue)
		return true;
	for (unsigned k = 0; k < st->nlanes || k == 0; k++)
		if (cur_dirty(k == st->active ? st->cur : st->lanes[k].cur))
			return true;
	return false;
}

void store_sync_round(struct store *st)
{
	struct segfile *s;

	st->sync_round_ns = d_now(CLOCK_MONOTONIC);
	st->sync_round_real_ns = d_now(CLOCK_REALTIME);
	while ((s = st->sync_queue)) {
		unqueue(st, s);
		sync_seg(st, s, on_seal_synced);
	}
	for (unsigned k = 0; k < st->nlanes || k == 0; k++) {
		s = k == st->active ? st->cur : st->lanes[k].cur;
		if (!cur_dirty(s))
			continue;
		s->st = st;
		s->syncing = true;
		s->inflight++;
		st->syncing++;
		/* covers the writes completed until now, not those in flight */
		s->writes_synced = s->writes_done;
		sync_seg(st, s, on_cur_synced);
	}
}

void store_sync_tick(struct store *st)
{
	if (d_now(CLOCK_MONOTONIC) - st->sync_round_ns >= st->budget.sync_interval_ns &&
	    round_due(st))
		store_sync_round(st);
}

void store_sync_soon(struct store *st)
{
	if (st->sync_queue)
		store_sync_round(st);
}

bool store_sync_drop(struct store *st, struct segfile *s)
{
	if (!s->sync_waiting)
		return false;
	unqueue(st, s);
	seal_done(st, s);
	return true;
}

void store_sync_stop(struct store *st)
{
	st->stopping = true;
	store_sync_soon(st); /* in place, stopping */
}

static void on_seal_written(void *arg, long res)
{
	struct segfile *s = arg;
	struct store *st = s->st;

	if (res != RINGLOG_SEG_HEADER_SIZE)
		seal_failed(s, res < 0 ? (int)res : -EIO); /* its chunks still get synced */
	if (st->stopping) {
		sync_seg(st, s, on_seal_synced);
		return;
	}
	s->sync_next = st->sync_queue;
	st->sync_queue = s;
	s->sync_waiting = true;
	/* each waits with its descriptor and header open: at most so many
	 * (a rotation every 150 ms at 10 M events/s, a long interval) */
	if (++st->sync_queued >= SYNC_QUEUE_MAX)
		store_sync_round(st);
	else
		store_sync_tick(st);
}

void seg_finalize(struct store *st, struct segfile *s)
{
	int err;

	s->hdr->state = RINGLOG_SEG_CLOSED;
	s->hdr->first_real_ns = s->first_real_ns;
	s->hdr->last_real_ns = s->last_real_ns;
	s->hdr->events = s->events;
	s->hdr->lost = s->lost;
	s->hdr->chunks = s->chunks;
	s->hdr->end = s->off;
	s->hdr->hdr_crc = ringlog_seg_hdr_crc(s->hdr);
	s->st = st;
	if (!st->stopping && st->io->ops->sync) {
		s->inflight++;
		st->finalizing++;
		if (st->io->ops->write(st->io, s->fd, s->hdr, RINGLOG_SEG_HEADER_SIZE, 0,
				       on_seal_written, s) == 0)
			return;
		s->inflight--;
		st->finalizing--;
	}
	if ((err = file_pwrite(s->fd, s->hdr, RINGLOG_SEG_HEADER_SIZE, 0)) < 0 ||
	    (err = file_sync(s->fd)) < 0)
		seal_failed(s, err);
	finalized(s);
}
