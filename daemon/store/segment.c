/* daemon/store/segment.c - build checksummed chunks and write them into rotating
 * segment files (format: proto/segment.h).
 *
 * Events are packed from rings into the open chunk, framed as PACK records
 * per stream (proto/pack.h), preceded by whatever metadata the segment does
 * not have yet.
 * A chunk is sealed when full, when it has waited half the flush interval,
 * or on demand (tail backlog, shutdown), then written by the I/O backend.
 * A small pool of chunk buffers bounds memory; when every buffer is in
 * flight, draining pauses and the rings absorb the burst.
 */
#define _GNU_SOURCE
#include "daemon.h"
#include "log.h"
#include "clock.h"
#include "ingest/registry.h"
#include "store/io-ops.h"
#include "store/file.h"
#include "pack.h"
#include "sink/sink.h"
#include "store/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define NCHUNKS 8
/* Writers are described where they first appear in a segment and again
 * every DESCRIBE_EVERY chunks: a damaged chunk then takes its descriptions
 * from at most the chunks up to the next repeat, not from the rest of the
 * segment (readers skip identical repeats), for a few hundred bytes per
 * writer per repeat. */
#define DESCRIBE_EVERY 4
/* The most filler run_commit() adds to keep a PACK 8-aligned: kept out of
 * a run's room, so that packers count only their records. */
#define RUN_FILLER 7

static int write_header(struct segfile *s)
{
	s->hdr->hdr_crc = ringlog_seg_hdr_crc(s->hdr);
	return file_pwrite(s->fd, s->hdr, RINGLOG_SEG_HEADER_SIZE, 0);
}

static int open_segment(struct daemon *d)
{
	struct segfile *s = calloc(1, sizeof(*s));
	char path[RINGLOG_CONFIG_PATH_MAX + 32];
	int err;

	if (!s)
		return -ENOMEM;
	if (ret_make_room(d, RINGLOG_SEG_HEADER_SIZE) == ROOM_FULL) {
		err = -ENOSPC;
		goto fail;
	}
	s->limit = store_seg_limit(d);
	snprintf(path, sizeof(path), "%s/%016llx.rlseg", d->cfg.storage_dir,
		 (unsigned long long)d->st.next_seq);
	s->path = strdup(path);
	s->hdr = file_aligned(RINGLOG_SEG_HEADER_SIZE);
	if (!s->path || !s->hdr) {
		err = -ENOMEM;
		goto fail;
	}
	if ((s->fd = file_create(path, &s->direct)) < 0) {
		err = s->fd;
		goto fail;
	}
	clock_refresh(d);
	s->seq = d->st.next_seq++;
	s->hdr->magic = RINGLOG_SEG_MAGIC;
	s->hdr->version = RINGLOG_SEG_VERSION;
	s->hdr->header_size = RINGLOG_SEG_HEADER_SIZE;
	s->hdr->state = RINGLOG_SEG_ONLINE;
	s->hdr->incompat_flags = RINGLOG_SEG_PACKED;
	s->hdr->seq = s->seq;
	s->hdr->created_real_ns = d_now(CLOCK_REALTIME);
	memcpy(s->hdr->boot_id, d->boot_id, 16);
	memcpy(s->hdr->host, d->host, sizeof(s->hdr->host));
	s->hdr->tsc_ref = d->clock.tsc_ref;
	s->hdr->mono_ref = d->clock.mono_ref;
	s->hdr->real_ref = d->clock.real_ref;
	s->hdr->tsc_hz = d->clock.tsc_hz;
	if ((err = write_header(s)) < 0) {
		file_close(s->fd);
		file_remove(path);
		goto fail;
	}
	s->off = RINGLOG_SEG_HEADER_SIZE;
	s->bytes = RINGLOG_SEG_HEADER_SIZE;
	s->current = true;
	s->created_mono_ns = d_now(CLOCK_MONOTONIC);
	ret_add(d, s);
	d->st.cur = s;
	d->st.seg_gen++; /* everything must be described again in this file */
	return 0;
fail:
	snprintf(d->st.disk_error, sizeof(d->st.disk_error), "cannot create segment %s: %s",
		 s->path ? s->path : d->cfg.storage_dir, strerror(-err));
	free(s->path);
	file_aligned_free(s->hdr);
	free(s);
	return err;
}

/* Write the CLOSED header once the last write of a rotated segment landed. */
static void finalize(struct segfile *s)
{
	int err;

	s->hdr->state = RINGLOG_SEG_CLOSED;
	s->hdr->first_real_ns = s->first_real_ns;
	s->hdr->last_real_ns = s->last_real_ns;
	s->hdr->events = s->events;
	s->hdr->lost = s->lost;
	s->hdr->chunks = s->chunks;
	s->hdr->end = s->off;
	if ((err = write_header(s)) < 0 || (err = file_sync(s->fd)) < 0)
		d_log(LOG_ERR, "segment %s: could not seal its header: %s (its chunks stay readable)",
		      s->path, strerror(-err));
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

void store_close_current(struct daemon *d)
{
	struct segfile *s = d->st.cur;

	if (!s)
		return;
	d->st.cur = NULL;
	s->current = false;
	if (s->inflight == 0)
		finalize(s);
}

/* ------------------------------------------------------------------------
 * Chunks
 */

static struct chunk *chunk_get(struct daemon *d)
{
	for (unsigned i = 0; i < d->st.nchunks; i++) {
		struct chunk *c = &d->st.chunks[i];

		if (!c->busy) {
			c->len = 0;
			c->events = 0;
			c->lost = 0;
			c->first_real_ns = UINT64_MAX;
			c->last_real_ns = 0;
			c->ts_min[0] = c->ts_min[1] = UINT64_MAX;
			c->ts_max[0] = c->ts_max[1] = 0;
			c->nwho = 0;
			c->span_off = SIZE_MAX;
			c->opened_mono_ns = d_now(CLOCK_MONOTONIC);
			c->cap = d->st.budget.chunk_size; /* a reload may have lowered it */
			c->seg_seq = UINT64_MAX;
			c->total = 0;
			c->failed = false;
			return c;
		}
	}
	return NULL;
}

static size_t body_cap(const struct chunk *c)
{
	return c->cap - RINGLOG_CHUNK_HDR_SIZE;
}

static uint8_t *body(struct chunk *c)
{
	return c->mem + RINGLOG_CHUNK_HDR_SIZE;
}

static void close_span(struct chunk *c)
{
	c->span_off = SIZE_MAX;
}

/* Room for n more body bytes in the open chunk, sealing and opening
 * another when needed. Returns the chunk, or NULL (no buffer free, or the
 * budget waits for writes to complete): the caller leaves the event in
 * its ring for the next pass. */
static struct chunk *room(struct daemon *d, size_t n)
{
	if (d->st.open && d->st.open->len + n <= body_cap(d->st.open))
		return d->st.open;
	if (d->st.open && d->st.open->len)
		store_seal(d);
	if (d->st.open && d->st.open->len)
		return NULL; /* could not seal: writes must complete first */
	/* Sealing may have rotated: open the next segment now, so that the
	 * generation changes before anything is written for it. No segment
	 * can be opened (the disk is full below min_free, with nothing left to
	 * delete): fill the chunk anyway, describing everything, so that the
	 * rings keep draining; its seal tries again and, failing, counts it
	 * lost to the disk. Leaving the events in the rings would make the
	 * programs drop them as ring overflow, for the wrong reason. */
	if (!d->st.cur && open_segment(d) < 0)
		d->st.seg_gen++;
	if (!d->st.open && (d->st.open = chunk_get(d)) && d->st.cur &&
	    ++d->st.cur->begun % DESCRIBE_EVERY == 0)
		d->st.seg_gen++; /* describe every writer again from this chunk on */
	if (!d->st.open || n > body_cap(d->st.open))
		return NULL;
	return d->st.open;
}

static int put_rec(struct daemon *d, uint16_t type, uint32_t id, const void *a, size_t alen,
		   const void *b, size_t blen)
{
	size_t len = ringlog_align_up8(sizeof(struct ringlog_seg_rec) + alen + blen);
	struct ringlog_seg_rec h = { .len = (uint32_t)len, .type = type, .id = id };
	struct chunk *c = room(d, len);
	uint8_t *p;

	if (!c)
		return -EAGAIN;
	close_span(c);
	p = body(c) + c->len;
	memcpy(p, &h, sizeof(h));
	if (alen)
		memcpy(p + sizeof(h), a, alen);
	if (blen)
		memcpy(p + sizeof(h) + alen, b, blen);
	memset(p + sizeof(h) + alen + blen, 0, len - sizeof(h) - alen - blen);
	c->len += len;
	return 0;
}

static int put_provider(struct daemon *d, struct client *cl, uint32_t id, const char *name)
{
	uint8_t e[RINGLOG_META_PROVIDER_ENTRY_MAX];
	uint32_t len = ringlog_meta_provider_entry(e, (uint16_t)id, name);

	return put_rec(d, RINGLOG_SEG_REC_META, cl->id, e, len, NULL, 0);
}

/* Make the segment able to decode r's events on its own: WRITER, all
 * metadata entries not yet written, STREAM. */
static int describe(struct daemon *d, struct ring *r)
{
	struct client *c = r->c;
	int err;

	if (c->seg_gen != d->st.seg_gen) {
		struct ringlog_seg_writer w = {
			.pid = c->pid, .uid = c->uid, .gid = c->gid,
			.exe_len = c->exe ? (uint32_t)strlen(c->exe) : 0,
			.start_real_ns = c->start_real_ns,
		};

		memcpy(w.comm, c->comm, sizeof(w.comm));
		if ((err = put_rec(d, RINGLOG_SEG_REC_WRITER, c->id, &w, sizeof(w),
				   c->exe, w.exe_len)))
			return err;
		c->seg_gen = d->st.seg_gen;
		c->seg_nprov = c->seg_nev = 0;
	}
	/* Ids are dense from 1: stop at the first one not defined yet. */
	if (!c->seg_nprov)
		c->seg_nprov = 1;
	if (!c->seg_nev)
		c->seg_nev = 1;
	for (; c->seg_nprov < c->meta.nprov && c->meta.providers[c->seg_nprov]; c->seg_nprov++)
		if ((err = put_provider(d, c, c->seg_nprov, c->meta.providers[c->seg_nprov])))
			return err;
	for (; c->seg_nev < c->meta.nev && c->meta.events[c->seg_nev]; c->seg_nev++) {
		const struct ringlog_event_desc *e = c->meta.events[c->seg_nev];

		if ((err = put_rec(d, RINGLOG_SEG_REC_META, c->id, e->raw, e->raw_len, NULL, 0)))
			return err;
	}
	if (r->seg_gen != d->st.seg_gen) {
		struct ringlog_seg_stream s = { .writer = c->id, .tid = r->tid, .clock = r->clock,
						.ring_id = r->ring_id };

		if ((err = put_rec(d, RINGLOG_SEG_REC_STREAM, r->id, &s, sizeof(s), NULL, 0)))
			return err;
		r->seg_gen = d->st.seg_gen;
	}
	return 0;
}

/* Room for one more chunk_who entry: checked before a record is copied, so
 * that every record in a chunk is accounted for (never a crash, never an
 * unreleased ring). */
static int who_reserve(struct chunk *c)
{
	if (c->nwho < c->capwho)
		return 0;
	uint32_t n = c->capwho ? c->capwho * 2 : 64;
	void *w = realloc(c->who, n * sizeof(*c->who));

	if (!w)
		return -EAGAIN;
	c->who = w;
	c->capwho = n;
	return 0;
}

/* Note that c holds r's record ending at ring position end. */
static void who_add(struct chunk *c, struct ring *r, uint32_t events, uint64_t end,
		    uint64_t seen_records, uint64_t seen_bytes)
{
	struct chunk_who *w = c->nwho ? &c->who[c->nwho - 1] : NULL;

	if (!w || w->r != r) {
		w = &c->who[c->nwho++]; /* who_reserve() made room */
		w->r = r;
		w->events = 0;
		w->loss = 0;
		r->held++;
	}
	w->events += events;
	w->end = end;
	w->seen_records = seen_records;
	w->seen_bytes = seen_bytes;
}

/* Give ring space back in the order chunks were sealed, each chunk once it
 * is written or counted as lost: a daemon killed at any moment leaves every
 * record either in a written chunk or still in its ring, where the next
 * daemon finds it. */
static void release_ready(struct daemon *d)
{
	for (bool more = true; more;) {
		more = false;
		for (unsigned i = 0; i < d->st.nchunks; i++) {
			struct chunk *c = &d->st.chunks[i];

			if (!c->busy || !c->done || c->seal_no != d->st.release_next)
				continue;
			for (uint32_t k = 0; k < c->nwho; k++) {
				struct chunk_who *w = &c->who[k];

				if (!w->r->dead)
					ringlog_cons_release(&w->r->cons, w->end, w->seen_records,
							     w->seen_bytes);
				w->r->held--;
			}
			c->nwho = 0;
			d->st.release_next++;
			/* The sinks see it with its ring space given back, and
			 * before the buffer is reused. */
			struct sink_chunk sc = { .bytes = c->failed ? NULL : c->mem,
						 .len = c->failed ? 0 : c->total,
						 .segment = c->seg_seq, .seal_no = c->seal_no,
						 .events = c->events };

			sink_publish_chunk(d->st.sinks, &sc);
			c->busy = false;
			c->done = false;
			more = true;
		}
	}
}

/* The chunk leaves the open slot for good: written or counted lost. */
static void chunk_sealed(struct daemon *d, struct chunk *c)
{
	c->seal_no = d->st.seal_next++;
	c->busy = true;
	c->done = false;
}

static void chunk_done(struct daemon *d, struct chunk *c)
{
	c->done = true;
	release_ready(d);
}

/* The disk loss of r, reported in its stream. The chunk that carries the
 * report holds the ring (who list) and, should it be lost too, makes the
 * count pending again: a loss is never forgotten. */
static int put_loss_pending(struct daemon *d, struct ring *r)
{
	struct ringlog_seg_loss l = { .records = r->lost_disk_pending, .reason = RINGLOG_LOSS_DISK };
	size_t len = ringlog_align_up8(sizeof(struct ringlog_seg_rec) + sizeof(l));
	struct chunk *c;
	struct chunk_who *w;
	int err;

	/* Room first: sealing may start a new segment, which must describe
	 * the writer and the stream before the record that names them. */
	for (int tries = 0;; tries++) {
		uint32_t gen = d->st.seg_gen;

		if (!(c = room(d, len)) || who_reserve(c) || tries > 2)
			return -EAGAIN;
		if (gen == d->st.seg_gen)
			break;
		if ((err = describe(d, r)))
			return err;
	}
	if ((err = put_rec(d, RINGLOG_SEG_REC_LOSS, r->id, &l, sizeof(l), NULL, 0)))
		return err;
	c = d->st.open;
	w = c->nwho ? &c->who[c->nwho - 1] : NULL;
	if (!w || w->r != r) {
		/* end = what is already released: releasing it is a no-op */
		w = &c->who[c->nwho++];
		*w = (struct chunk_who){ .r = r, .end = r->cons.published,
					 .seen_records = r->cons.seen.total_records,
					 .seen_bytes = r->cons.seen.total_bytes };
		r->held++;
	}
	w->loss += r->lost_disk_pending;
	c->lost += r->lost_disk_pending;
	r->lost_disk_pending = 0;
	return 0;
}

int store_settle_loss(struct daemon *d, struct ring *r)
{
	int err;

	if (!r->lost_disk_pending)
		return 0;
	store_events_end(d);
	if (!d->st.cur)
		open_segment(d); /* failing, room() fills a chunk anyway: lost at its seal */
	if (!(err = describe(d, r)))
		err = put_loss_pending(d, r);
	return err == -EAGAIN ? STORE_FULL : err;
}

/* Runs: the drain's fast path. Consecutive event records of one ring, back
 * to back in the ring, are packed (proto/pack.h) straight into the open
 * chunk's PACK for their stream and accounted once per run, not per record.
 * run_ready() prepares the open chunk (descriptions, the PACK) for a run
 * whose first record packs into at most `need` bytes; nothing else may
 * write to the chunk until run_put() has committed the run. The packer
 * uses only the header values the consumer validated: a writer that
 * rewrites its records meanwhile changes only its own events' bytes. */
static int run_ready(struct daemon *d, struct ring *r, uint64_t at, size_t need,
		     struct store_run *run)
{
	struct chunk *c;
	int err;

	if (!d->st.cur)
		open_segment(d); /* failing, room() fills a chunk anyway: lost at its seal */
	for (int tries = 0;; tries++) {
		struct ringlog_seg_rec h = { .len = sizeof(h) + sizeof(struct ringlog_seg_span),
					     .type = RINGLOG_SEG_REC_PACK, .id = r->id };
		struct ringlog_seg_span sp = { .pos = at };
		uint32_t gen = d->st.seg_gen;

		if ((err = describe(d, r)))
			return err;
		if (r->lost_disk_pending && (err = put_loss_pending(d, r)))
			return err;
		c = d->st.open;
		if (c && c->span_off != SIZE_MAX && c->span_stream == r->id &&
		    c->span_next == at && c->len + need + RUN_FILLER <= body_cap(c))
			break;
		if (!(c = room(d, h.len + need + RUN_FILLER)))
			return -EAGAIN;
		if (gen != d->st.seg_gen) {
			if (tries > 2)
				return -EAGAIN;
			continue;
		}
		memcpy(body(c) + c->len, &h, sizeof(h));
		memcpy(body(c) + c->len + sizeof(h), &sp, sizeof(sp));
		c->span_off = c->len;
		c->span_stream = r->id;
		c->span_next = at;
		c->span_ts = 0; /* timestamps are deltas within one PACK */
		c->len += h.len;
		break;
	}
	if (who_reserve(c))
		return -EAGAIN;
	*run = (struct store_run){ .out = body(c) + c->len,
				   .room = body_cap(c) - c->len - RUN_FILLER, .prev_ts = c->span_ts };
	return 0;
}

/* The run's bytes join the PACK, padded to 8 with filler (pack.h). */
static struct chunk *run_commit(struct daemon *d, const struct store_run *run)
{
	struct chunk *c = d->st.open;
	size_t n = ringlog_align_up8(run->packed);

	memset(run->out + run->packed, 0, n - run->packed);
	c->len += n;
	c->span_next += run->bytes;
	c->span_ts = run->prev_ts;
	((struct ringlog_seg_rec *)(void *)(body(c) + c->span_off))->len += (uint32_t)n;
	return c;
}

static void run_put(struct daemon *d, struct ring *r, const struct store_run *run)
{
	struct chunk *c = run_commit(d, run);
	unsigned k = r->clock & RINGLOG_RING_CLOCK_TSC ? 1 : 0;

	if (run->ts_min < c->ts_min[k])
		c->ts_min[k] = run->ts_min;
	if (run->ts_max > c->ts_max[k])
		c->ts_max[k] = run->ts_max;
	c->events += run->events;
	who_add(c, r, run->events, run->end, r->cons.seen.total_records, r->cons.seen.total_bytes);
}

void store_events_end(struct daemon *d)
{
	struct store_run *run = &d->st.run;

	if (run->r && run->bytes)
		run_put(d, run->r, run);
	run->bytes = 0;
	run->r = NULL;
}

/* The run goes on while the ring bytes do, the chunk has room and the
 * segment already holds the event's metadata (ids below seg_nev; a new
 * one is described by run_ready() before its records). */
int store_event(struct daemon *d, struct ring *r, uint16_t type, uint16_t id,
		const uint8_t *payload, uint32_t len, const struct ringlog_event_desc *e)
{
	struct store_run *run = &d->st.run;
	const uint8_t *rec = payload - RINGLOG_REC_HDR_SIZE;
	size_t total = ringlog_rec_total(len);
	size_t need = RINGLOG_PACK_MAX(len);
	uint64_t ts;
	int err;

	memcpy(&ts, payload, sizeof(ts));
	if (run->r != r || !run->bytes || rec != run->recs + run->bytes ||
	    need > run->room - run->packed || id >= r->c->seg_nev) {
		store_events_end(d);
		err = run_ready(d, r, r->cons.rec_end - total, need, run);
		if (err < 0)
			return err == -EAGAIN ? STORE_FULL : err;
		run->r = r;
		run->recs = rec;
		run->ts_min = run->ts_max = ts;
	}
	run->bytes += total;
	run->packed += ringlog_pack_rec(run->out + run->packed, type, id, payload, len,
					&run->prev_ts);
	run->events++;
	run->end = r->cons.rec_end;
	if (ts < run->ts_min)
		run->ts_min = ts;
	if (ts > run->ts_max)
		run->ts_max = ts;
	if (d->st.sinks) {
		struct sink_record sr = { .r = r, .type = type, .id = id, .payload = payload,
					  .len = len, .e = e };

		sink_publish_record(d->st.sinks, &sr);
	}
	return 0;
}

int store_pass(struct daemon *d, struct ring *r, uint16_t type, uint16_t id,
	       const uint8_t *payload, uint32_t len, const struct ringlog_event_desc *e)
{
	struct sink_record sr = { .r = r, .type = type, .id = id, .payload = payload, .len = len,
				  .e = e };

	/* Its ring space goes back with the next release past it: no chunk
	 * holds it, and the run around it is split (its positions skip it). */
	sink_publish_record(d->st.sinks, &sr);
	return 0;
}

int store_ring_loss(struct daemon *d, struct ring *r, uint16_t aux,
		    const struct ringlog_rec_loss *l, uint32_t len,
		    const struct ringlog_seg_loss *sl)
{
	size_t total = ringlog_rec_total(len);
	struct store_run run;
	int err;

	store_events_end(d); /* in stream order, after the run before it */
	err = run_ready(d, r, r->cons.rec_end - total, RINGLOG_PACK_MAX(len), &run);
	if (err < 0)
		return err == -EAGAIN ? STORE_FULL : err;
	/* In the PACK, in ring order, as the producer wrote it */
	run.bytes = total;
	run.packed = ringlog_pack_rec(run.out, RINGLOG_REC_LOSS, aux, (const uint8_t *)l,
				      len, &run.prev_ts);
	run_commit(d, &run);
	who_add(d->st.open, r, 0, r->cons.rec_end, l->total_records, l->total_bytes);
	d->st.open->lost += l->records;
	sink_publish_loss(d->st.sinks, r, sl);
	return 0;
}

int store_loss(struct daemon *d, struct ring *r, uint64_t records, uint64_t bytes,
	       uint32_t reason)
{
	struct ringlog_seg_loss l = { .records = records, .bytes = bytes, .reason = reason };
	int err;

	store_events_end(d);
	if (!d->st.cur)
		open_segment(d); /* failing, room() fills a chunk anyway: lost at its seal */
	if ((err = describe(d, r)) || (err = put_rec(d, RINGLOG_SEG_REC_LOSS, r->id, &l, sizeof(l),
						     NULL, 0)))
		return err == -EAGAIN ? STORE_FULL : err;
	d->st.open->lost += records;
	return 0;
}

/* Everything in a chunk that will not reach the disk is counted, per
 * stream, and reported in-stream once writing works again. */
static void chunk_lost(struct daemon *d, struct chunk *c, const char *why)
{
	for (uint32_t i = 0; i < c->nwho; i++) {
		struct ring *r = c->who[i].r;

		r->lost_disk_pending += c->who[i].events + c->who[i].loss;
		r->c->lost_disk += c->who[i].events;
	}
	d->st.lost_disk += c->events;
	c->failed = true;
	if (!d->st.disk_blocked)
		d_log(LOG_ERR, "cannot store %u events: %s; counting what is lost until writing works again",
		      c->events, why);
	d->st.disk_blocked = true;
	if (why != d->st.disk_error) /* it may already be the reason */
		snprintf(d->st.disk_error, sizeof(d->st.disk_error), "%s", why);
	/* Its metadata records are gone too: describe everything again. */
	d->st.seg_gen++;
}

static void on_written(void *arg, long res)
{
	struct chunk *c = arg;
	struct daemon *d = c->d;
	struct segfile *s = c->seg;
	size_t total = ringlog_align_up(RINGLOG_CHUNK_HDR_SIZE + c->len, RINGLOG_SEG_ALIGN);

	s->inflight--;
	if (res != (long)total) {
		char why[STORE_WHY_MAX];

		snprintf(why, sizeof(why), "write to %s failed: %s", s->path,
			 res < 0 ? strerror((int)-res) : "short write");
		chunk_lost(d, c, why);
	} else if (d->st.disk_blocked) {
		d->st.disk_blocked = false;
		d->st.disk_error[0] = 0;
		d_log(LOG_NOTICE, "writing to %s works again", s->path);
	}
	chunk_done(d, c);
	if (!s->current && !s->closed && s->inflight == 0)
		finalize(s);
	if ((d->stopping || d->st.open == NULL) && d->st.room)
		d->st.room(d); /* buffers are free again: resume draining */
}

/* ------------------------------------------------------------------------
 * The storage directory deleted or replaced under us
 *
 * A user's `rm -rf` takes the files but not our descriptors: writes would
 * go on into nameless inodes, read by nobody. So at every seal and every
 * tick: is the segment being written still named, is storage_dir still
 * the directory we locked? Costs an fstat and a stat.
 */

static bool store_gone(struct daemon *d)
{
	uint64_t id[2];

	if (d->st.cur && file_unlinked(d->st.cur->fd) == 1)
		return true;
	if (file_dir_id(d->cfg.storage_dir, id) < 0)
		return true;
	return id[0] != d->st.dir_id[0] || id[1] != d->st.dir_id[1];
}

/* Count what the deleted files held as lost, forget them, recreate the
 * directory and lock it again; the next chunk opens a new segment. */
static void store_recover(struct daemon *d)
{
	uint64_t events = 0, bytes = 0, id[2];
	unsigned n = 0;
	int err;

	if (d->st.cur)
		store_close_current(d); /* its in-flight writes land in the void */
	for (struct segfile **pp = &d->st.segs, *s; (s = *pp);) {
		struct stat st;
		bool open = s->fd >= 0 && !s->closed;

		if (open ? file_unlinked(s->fd) == 0 : stat(s->path, &st) == 0) {
			pp = &s->next;
			continue;
		}
		*pp = s->next;
		d->st.used_bytes -= s->bytes;
		events += s->events;
		bytes += s->bytes;
		n++;
		if (s->fd >= 0 && !s->closed) {
			s->orphan = true; /* finalize() frees it */
		} else {
			free(s->path);
			file_aligned_free(s->hdr);
			free(s);
		}
	}
	d->st.lost_deleted += events;
	d->st.seg_gen++;
	if (file_dir_id(d->cfg.storage_dir, id) == 0 && id[0] == d->st.dir_id[0] && id[1] == d->st.dir_id[1]) {
		/* Only files went: the directory and our lock on it stand. */
		d_log(LOG_ERR, "%u segments (%llu bytes) of storage_dir %s were deleted under "
		      "ringlogd: their %llu stored events are gone and counted lost; storing on",
		      n, (unsigned long long)bytes, d->cfg.storage_dir, (unsigned long long)events);
		return;
	}
	d_log(LOG_ERR, "storage_dir %s was deleted or replaced under ringlogd: %llu stored events "
	      "in %u segments (%llu bytes) are gone and counted lost; recreating it and storing "
	      "on", d->cfg.storage_dir, (unsigned long long)events, n, (unsigned long long)bytes);
	if ((err = access_mkdir_store(d)) < 0)
		d_log(LOG_ERR, "cannot create storage_dir %s: %s", d->cfg.storage_dir, strerror(-err));
	else
		store_lock_dir(d);
}

void store_check(struct daemon *d)
{
	if (!store_gone(d))
		return;
	/* The open chunk was built for the current segment: it goes there
	 * (and is lost with it), and the seal comes back here. */
	if (d->st.cur && d->st.open && d->st.open->len)
		store_seal(d);
	if (store_gone(d))
		store_recover(d);
}

void store_seal(struct daemon *d)
{
	struct chunk *c;
	struct ringlog_chunk_hdr *h;
	bool rotate = false;
	size_t total;
	int err;

	store_events_end(d); /* a run pending belongs in this chunk */
	c = d->st.open;
	if (!c || !c->len)
		return;
	total = ringlog_align_up(RINGLOG_CHUNK_HDR_SIZE + c->len, RINGLOG_SEG_ALIGN);
	if (!d->st.cur && store_gone(d))
		store_recover(d);
	if (!d->st.cur && open_segment(d) < 0) {
		chunk_lost(d, c, d->st.disk_error);
		d->st.open = NULL;
		chunk_sealed(d, c);
		chunk_done(d, c);
		return;
	}
	switch (ret_make_room(d, total)) {
	case ROOM_OK:
		break;
	case ROOM_ROTATE:
		rotate = true;
		break;
	case ROOM_WAIT:
		return; /* deletable space frees up when writes complete */
	case ROOM_FULL: {
		char why[STORE_WHY_MAX];

		snprintf(why, sizeof(why), "disk budget: %s has less than min_free (%llu bytes) available",
			 d->cfg.storage_dir, (unsigned long long)ret_min_free(d));
		chunk_lost(d, c, why);
		d->st.open = NULL;
		chunk_sealed(d, c);
		chunk_done(d, c);
		/* Nothing older is left to delete: close the segment being
		 * written so that it is, and the newest data has room again
		 * at the next chunk (the circular log eats its tail). */
		if (d->st.cur && d->st.segs == d->st.cur && d->st.cur->chunks)
			store_close_current(d);
		return;
	}
	}
	close_span(c);
	for (unsigned k = 0; k < 2; k++) {
		uint32_t clk = k ? RINGLOG_RING_CLOCK_TSC : 0;
		uint64_t lo, hi;

		if (c->ts_min[k] > c->ts_max[k])
			continue; /* no event of this clock */
		lo = clock_real_ns(d, clk, c->ts_min[k]);
		hi = clock_real_ns(d, clk, c->ts_max[k]);
		if (lo < c->first_real_ns)
			c->first_real_ns = lo;
		if (hi > c->last_real_ns)
			c->last_real_ns = hi;
	}
	h = (struct ringlog_chunk_hdr *)(void *)c->mem;
	memset(h, 0, sizeof(*h));
	h->magic = RINGLOG_CHUNK_MAGIC;
	h->body_len = (uint32_t)c->len;
	h->events = c->events;
	h->lost = c->lost;
	h->seq = d->st.cur->chunks;
	h->first_real_ns = c->events ? c->first_real_ns : 0;
	h->last_real_ns = c->last_real_ns;
	h->crc = ringlog_chunk_crc(h, body(c));
	memset(c->mem + RINGLOG_CHUNK_HDR_SIZE + c->len, 0, total - RINGLOG_CHUNK_HDR_SIZE - c->len);

	c->seg = d->st.cur;
	c->seg_seq = d->st.cur->seq;
	c->total = total;
	chunk_sealed(d, c);
	err = d->st.io->ops->write(d->st.io, d->st.cur->fd, c->mem, total, d->st.cur->off, on_written, c);
	if (err < 0) {
		chunk_lost(d, c, "the I/O backend refused the write");
		d->st.open = NULL;
		chunk_done(d, c);
		return;
	}
	d->st.cur->inflight++;
	d->st.cur->off += total;
	d->st.cur->bytes += total;
	d->st.used_bytes += total;
	d->st.cur->chunks++;
	if (c->events) {
		if (!d->st.cur->first_real_ns || c->first_real_ns < d->st.cur->first_real_ns)
			d->st.cur->first_real_ns = c->first_real_ns;
		if (c->last_real_ns > d->st.cur->last_real_ns)
			d->st.cur->last_real_ns = c->last_real_ns;
	}
	d->st.cur->events += c->events;
	d->st.cur->lost += c->lost;
	d->st.stored += c->events;
	d->st.stored_bytes += total;
	d->st.open = NULL;
	/* Rotate after the chunk, never before: it was built (metadata and
	 * all) for this segment. The next event opens the next segment. */
	if (store_gone(d))
		store_recover(d);
	else if (rotate || d->st.cur->off + d->st.budget.chunk_size > d->st.cur->limit)
		store_close_current(d);
}

/* Periodic: seal a chunk that waited long enough, rotate by age. */
void store_tick(struct daemon *d)
{
	uint64_t now = d_now(CLOCK_MONOTONIC);

	store_check(d);
	if (d->st.open && d->st.open->len &&
	    now - d->st.open->opened_mono_ns >= d->st.budget.seal_after_ns)
		store_seal(d);
	if (d->st.cur && d->st.cur->chunks &&
	    now - d->st.cur->created_mono_ns >= d->st.budget.max_age_ns) {
		store_seal(d);
		if (!d->st.open || !d->st.open->len)
			store_close_current(d);
	}
}

unsigned store_expire(struct daemon *d, uint64_t before_ns,
		      void (*each)(void *ctx, const struct segfile *s), void *ctx)
{
	struct segfile *cur = d->st.cur;

	if (cur && cur->chunks && cur->first_real_ns && cur->first_real_ns < before_ns) {
		store_seal(d);
		if (!d->st.open || !d->st.open->len)
			store_close_current(d);
	}
	return ret_vacuum(d, UINT64_MAX, before_ns, each, ctx);
}

bool store_idle(struct daemon *d)
{
	if (d->st.open && d->st.open->len)
		return false;
	for (unsigned i = 0; i < d->st.nchunks; i++)
		if (d->st.chunks[i].busy)
			return false;
	return true;
}

/* Every size from the configuration, at start and at every reload: the
 * one place that reads the budget's settings. Chunks are no larger than
 * the buffers (chunk_alloc, fixed at start: 1 MiB at most). */
void store_configure(struct daemon *d)
{
	struct store_budget *b = &d->st.budget;
	size_t max = b->chunk_alloc ? b->chunk_alloc : 1u << 20;
	uint64_t cs;

	/* Flight recorder snapshots take their share of the one budget. */
	b->max_disk = d->cfg.max_disk - (d->cfg.flight.size ? d->cfg.flight.max_disk : 0);
	b->min_free_bytes = d->cfg.min_free_bytes;
	b->min_free_percent = d->cfg.min_free_percent;
	b->max_age_ns = d->cfg.max_segment_age_ns;
	/* Half the flush interval: a chunk sealed then is on disk within it. */
	b->seal_after_ns = d->cfg.flush_interval_ns / 2;
	cs = d->cfg.max_segment_size / 8;
	if (cs > b->max_disk / 16)
		cs = b->max_disk / 16;
	/* Chunks: large enough to amortise a write, small enough that a crash
	 * or a tight budget loses little. */
	if (cs > max)
		cs = max;
	if (cs < (64u << 10))
		cs = 64u << 10;
	b->chunk_size = ringlog_align_up(cs, RINGLOG_SEG_ALIGN);
	if (b->chunk_size > max)
		b->chunk_size = max;
	if (!b->chunk_alloc)
		b->chunk_alloc = b->chunk_size;
	/* Several segments under the budget, so the oldest can go while the
	 * newest fills: at most a quarter of max_disk each. */
	b->seg_max = d->cfg.max_segment_size;
	if (b->seg_max > b->max_disk / 4)
		b->seg_max = b->max_disk / 4;
	if (b->seg_max < 2 * b->chunk_size + RINGLOG_SEG_HEADER_SIZE)
		b->seg_max = 2 * b->chunk_size + RINGLOG_SEG_HEADER_SIZE;
}

/* How large the segment opened now may grow: seg_max, and at most a
 * quarter of the space the store may really take (max_disk, or what the
 * filesystem has above min_free, whichever is less). A min_free that
 * leaves less than max_segment_size would otherwise let one segment take
 * all the room, with nothing older to delete to make more. */
uint64_t store_seg_limit(const struct daemon *d)
{
	const struct store_budget *b = &d->st.budget;
	uint64_t fs_free, floor, room = b->max_disk;
	uint64_t lim = b->seg_max, least = 2 * b->chunk_size + RINGLOG_SEG_HEADER_SIZE;

	ret_fs_room(d, &fs_free, &floor);
	if (fs_free != UINT64_MAX && d->st.used_bytes + fs_free - floor < room && fs_free > floor)
		room = d->st.used_bytes + fs_free - floor;
	if (room / 4 < lim)
		lim = room / 4;
	return lim < least ? least : lim;
}

void store_reload(struct daemon *d)
{
	size_t old_chunk = d->st.budget.chunk_size;
	uint64_t old_max = d->st.budget.seg_max;

	/* The open chunk was sized for the old budget: it goes now, and the
	 * next one takes the new size. */
	store_seal(d);
	store_configure(d);
	if (d->st.cur) {
		uint64_t lim = store_seg_limit(d);

		if (d->st.cur->off + d->st.budget.chunk_size > lim)
			store_close_current(d); /* so that the budget may take it */
		else if (lim < d->st.cur->limit)
			d->st.cur->limit = lim;
	}
	if (ret_make_room(d, 0) == ROOM_OK || d->st.used_bytes <= d->st.budget.max_disk)
		d_log(LOG_INFO, "storage: chunks of %zu bytes (were %zu), segments up to %llu (were %llu), "
		      "max_disk %llu, %llu used", d->st.budget.chunk_size, old_chunk, (unsigned long long)d->st.budget.seg_max,
		      (unsigned long long)old_max, (unsigned long long)d->st.budget.max_disk,
		      (unsigned long long)d->st.used_bytes);
	else
		d_log(LOG_INFO, "storage: max_disk now %llu, %llu used: older segments go as writes "
		      "complete", (unsigned long long)d->st.budget.max_disk, (unsigned long long)d->st.used_bytes);
}

int store_lock_dir(struct daemon *d)
{
	long holder;
	int err = file_lock_dir(d->cfg.storage_dir, &d->st.dir_lock, &holder);

	if (err == -EBUSY && holder > 0)
		d_log(LOG_ERR, "storage_dir %s is in use by another ringlogd (PID %ld holds %s/%s): "
		      "stop it, or give this one another --storage (and --socket)",
		      d->cfg.storage_dir, holder, d->cfg.storage_dir, RINGLOG_LOCK_NAME);
	else if (err == -EBUSY)
		d_log(LOG_ERR, "storage_dir %s is in use by another process (it holds %s/%s): "
		      "stop it, or give this ringlogd another --storage (and --socket)",
		      d->cfg.storage_dir, d->cfg.storage_dir, RINGLOG_LOCK_NAME);
	else if (err < 0)
		d_log(LOG_ERR, "cannot lock storage_dir %s (%s/%s): %s", d->cfg.storage_dir,
		      d->cfg.storage_dir, RINGLOG_LOCK_NAME, strerror(-err));
	if (!err && (err = file_dir_id(d->cfg.storage_dir, d->st.dir_id)) < 0)
		d_log(LOG_ERR, "storage_dir %s: %s", d->cfg.storage_dir, strerror(-err));
	return err;
}

int store_init(struct daemon *d)
{
	int err;

	if ((err = access_mkdir_store(d)) < 0) {
		d_log(LOG_ERR, "cannot create storage_dir %s: %s", d->cfg.storage_dir, strerror(-err));
		return err;
	}
	/* One daemon per directory, before any file in it is touched: a
	 * second one would seal the first one's live segment as crashed and
	 * then write the same segment names. */
	d->st.dir_lock = -1;
	if ((err = store_lock_dir(d)) < 0)
		return err;
	if (!d->st.space)
		d->st.space = file_space;
	d->st.budget.chunk_alloc = 0;
	store_configure(d);
	d->st.chunks = calloc(NCHUNKS, sizeof(*d->st.chunks));
	if (!d->st.chunks)
		return -ENOMEM;
	d->st.nchunks = NCHUNKS;
	for (unsigned i = 0; i < NCHUNKS; i++) {
		d->st.chunks[i].cap = d->st.budget.chunk_alloc;
		d->st.chunks[i].d = d;
		d->st.chunks[i].span_off = SIZE_MAX;
		if (!(d->st.chunks[i].mem = file_aligned(d->st.budget.chunk_alloc)))
			return -ENOMEM;
	}
	if (d->st.io->ops->register_buffers) {
		static void *bufs[NCHUNKS]; /* the backend keeps this array */

		for (unsigned i = 0; i < NCHUNKS; i++)
			bufs[i] = d->st.chunks[i].mem;
		if ((err = d->st.io->ops->register_buffers(d->st.io, bufs, d->st.budget.chunk_alloc, NCHUNKS)) < 0)
			d_log(LOG_INFO, "%s: chunk buffers not registered (%s): each write pins "
			      "them again", d->st.io_name, strerror(-err));
	}
	if ((err = ret_scan(d)) < 0)
		return err;
	if ((err = open_segment(d)) < 0) {
		d_log(LOG_INFO, "%s", d->st.disk_error);
		return err;
	}
	return 0;
}

void store_fini(struct daemon *d)
{
	store_close_current(d);
	for (struct segfile *s = d->st.segs, *n; s; s = n) {
		n = s->next;
		if (s->fd > 0 && !s->closed)
			finalize(s);
		free(s->path);
		file_aligned_free(s->hdr);
		free(s);
	}
	d->st.segs = NULL;
	for (unsigned i = 0; i < d->st.nchunks; i++) {
		file_aligned_free(d->st.chunks[i].mem);
		free(d->st.chunks[i].who);
	}
	free(d->st.chunks);
	d->st.chunks = NULL;
	if (d->st.dir_lock >= 0)
		file_close(d->st.dir_lock);
	d->st.dir_lock = -1;
}
