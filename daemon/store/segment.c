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
#include "store/store.h"
#include "log.h"
#include "clock.h"
#include "count.h"
#include "ingest/registry.h"
#include "store/io-ops.h"
#include "store/file.h"
#include "decode.h"
#include "pack.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define NCHUNKS 8
/* Each retention class keeps a chunk open: some must stay for writing. */
_Static_assert(NCHUNKS >= STORE_LANES + 3, "chunk buffers for every lane and the writes");
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

static int open_segment(struct store *st)
{
	struct segfile *s = calloc(1, sizeof(*s));
	char path[RINGLOG_CONFIG_PATH_MAX + 32];
	int err;

	if (!s)
		return -ENOMEM;
	clock_refresh(st->clock); /* the calibration this segment records */
	if (ret_make_room(st, RINGLOG_SEG_HEADER_SIZE) == ROOM_FULL) {
		err = -ENOSPC;
		goto fail;
	}
	s->limit = store_seg_limit(st);
	snprintf(path, sizeof(path), "%s/%016llx.rlseg", st->dir,
		 (unsigned long long)st->next_seq);
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
	s->seq = st->next_seq++;
	s->hdr->magic = RINGLOG_SEG_MAGIC;
	s->hdr->version = RINGLOG_SEG_VERSION;
	s->hdr->header_size = RINGLOG_SEG_HEADER_SIZE;
	s->hdr->state = RINGLOG_SEG_ONLINE;
	s->hdr->incompat_flags = RINGLOG_SEG_PACKED;
	s->hdr->seq = s->seq;
	s->hdr->created_real_ns = d_now(CLOCK_REALTIME);
	memcpy(s->hdr->boot_id, st->boot_id, 16);
	memcpy(s->hdr->host, st->host, sizeof(s->hdr->host));
	s->hdr->tsc_ref = st->clock->seg.tsc_ref;
	s->hdr->mono_ref = st->clock->seg.mono_ref;
	s->hdr->real_ref = st->clock->seg.real_ref;
	s->hdr->tsc_hz = st->clock->seg.tsc_hz;
	/* Whose stream it is (FORMAT.md "Retention classes"): strncpy pads
	 * with NULs, as the field wants (the default class: all zero). */
	s->lane = st->active;
	snprintf(s->cls, sizeof(s->cls), "%s", st->lanes[st->active].name);
	strncpy(s->hdr->class_name, s->cls, sizeof(s->hdr->class_name));
	if ((err = write_header(s)) < 0) {
		file_close(s->fd);
		file_remove(path);
		goto fail;
	}
	s->off = RINGLOG_SEG_HEADER_SIZE;
	s->bytes = RINGLOG_SEG_HEADER_SIZE;
	s->current = true;
	s->created_mono_ns = d_now(CLOCK_MONOTONIC);
	ret_add(st, s);
	st->cur = s;
	store_new_gen(st); /* everything must be described again in this file */
	return 0;
fail:
	snprintf(st->disk_error, sizeof(st->disk_error), "cannot create segment %s: %s",
		 s->path ? s->path : st->dir, strerror(-err));
	free(s->path);
	file_aligned_free(s->hdr);
	free(s);
	return err;
}

/* Every lane's segment must describe everything again (its metadata
 * records are gone: a lost chunk, a deleted directory). */
static void regen_all(struct store *st)
{
	store_new_gen(st);
	for (unsigned k = 0; k < STORE_LANES; k++)
		st->lanes[k].gen = ++st->gen_next;
}

/* Close lane k's segment being written (the active one's is st->cur). */
static void close_lane(struct store *st, unsigned k)
{
	struct segfile *s = st->lanes[k].cur;

	if (k == st->active) {
		store_close_current(st);
		return;
	}
	if (!s)
		return;
	st->lanes[k].cur = NULL;
	s->current = false;
	if (s->inflight == 0)
		seg_finalize(st, s);
}

void store_close_lane(struct store *st, unsigned k)
{
	close_lane(st, k);
}

/* Fill lane k's chunk and segment from now on: each lane keeps its own
 * open chunk, so a rare class costs no chunk per record (a ring's records
 * then lie in chunks of several lanes, written in any order: ring space
 * goes back by each ring's own order, release_ready()). */
static void lane_use(struct store *st, unsigned k)
{
	store_events_end(st);
	st->lanes[st->active].cur = st->cur;
	st->lanes[st->active].gen = st->seg_gen;
	st->lanes[st->active].open = st->open;
	st->active = k;
	st->cur = st->lanes[k].cur;
	st->open = st->lanes[k].open;
	st->seg_gen = st->lanes[k].gen;
	st->lanes[k].cur = NULL;
	st->lanes[k].open = NULL;
}

void store_lane_use(struct store *st, unsigned k)
{
	lane_use(st, k);
}

/* The lane of event id of c: looked up once per event id and class
 * configuration, then one byte per record. */
static unsigned route(struct store *st, struct client *c, uint16_t id,
		      const struct ringlog_event_desc *e)
{
	struct store_writer *w = &c->store;
	unsigned k;

	if (w->route_gen != st->route_gen) {
		if (w->route)
			memset(w->route, 0, w->nroute);
		w->route_gen = st->route_gen;
	}
	if (id < w->nroute && w->route[id])
		return w->route[id] - 1u;
	k = ret_classify(st, e->provider < c->meta.nprov ? c->meta.providers[e->provider] : NULL,
			 e->level);
	if (id >= w->nroute) {
		uint32_t n = id + 64u;
		uint8_t *m = realloc(w->route, n);

		if (!m)
			return k; /* not cached: asked again next time */
		memset(m + w->nroute, 0, n - w->nroute);
		w->route = m;
		w->nroute = n;
	}
	w->route[id] = (uint8_t)(k + 1);
	return k;
}

void store_close_current(struct store *st)
{
	struct segfile *s = st->cur;

	if (!s)
		return;
	st->cur = NULL;
	s->current = false;
	if (s->inflight == 0)
		seg_finalize(st, s);
}

void store_stop(struct store *st)
{
	if (!st)
		return;
	store_sync_stop(st);
	store_close_current(st);
}

/* ------------------------------------------------------------------------
 * Chunks
 */

static struct chunk *chunk_get(struct store *st)
{
	for (unsigned i = 0; i < st->nchunks; i++) {
		struct chunk *c = &st->chunks[i];

		if (!c->busy && !c->opened) {
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
			c->cap = store_chunk_limit(st); /* a reload or the room may have lowered it */
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
static void seal_active(struct store *st);

static struct chunk *room(struct store *st, size_t n)
{
	if (st->open && st->open->len + n <= body_cap(st->open))
		return st->open;
	if (st->open && st->open->len)
		seal_active(st);
	if (st->open && st->open->len)
		return NULL; /* could not seal: writes must complete first */
	/* Sealing may have rotated: open the next segment now, so that the
	 * generation changes before anything is written for it. No segment
	 * can be opened (the disk is full below min_free, with nothing left to
	 * delete): fill the chunk anyway, describing everything, so that the
	 * rings keep draining; its seal tries again and, failing, counts it
	 * lost to the disk. Leaving the events in the rings would make the
	 * programs drop them as ring overflow, for the wrong reason. */
	if (!st->cur && open_segment(st) < 0)
		store_new_gen(st);
	if (!st->open && (st->open = chunk_get(st))) {
		st->open->opened = true;
		if (st->cur && ++st->cur->begun % DESCRIBE_EVERY == 0)
			store_new_gen(st); /* describe every writer again from this chunk on */
	}
	if (!st->open || n > body_cap(st->open))
		return NULL;
	return st->open;
}

static int put_rec(struct store *st, uint16_t type, uint32_t id, const void *a, size_t alen,
		   const void *b, size_t blen)
{
	size_t len = ringlog_align_up8(sizeof(struct ringlog_seg_rec) + alen + blen);
	struct ringlog_seg_rec h = { .len = (uint32_t)len, .type = type, .id = id };
	struct chunk *c = room(st, len);
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

static int put_provider(struct store *st, struct client *cl, uint32_t id, const char *name)
{
	uint8_t e[RINGLOG_META_PROVIDER_ENTRY_MAX];
	uint32_t len = ringlog_meta_provider_entry(e, (uint16_t)id, name);

	return put_rec(st, RINGLOG_SEG_REC_META, cl->id, e, len, NULL, 0);
}

/* At most the bytes describe() writes for r now (records are padded to
 * 8; a provider entry is at most RINGLOG_META_PROVIDER_ENTRY_MAX). */
static size_t describe_bytes(const struct store *st, const struct ring *r)
{
	const struct client *c = r->c;
	const struct store_desc *d = &c->store.lane[st->active];
	bool again = d->seg_gen != st->seg_gen;
	uint32_t p = again || !d->seg_nprov ? 1 : d->seg_nprov, e = again || !d->seg_nev ? 1 : d->seg_nev;
	size_t n = 0, rec = sizeof(struct ringlog_seg_rec) + 7;

	if (again)
		n += rec + sizeof(struct ringlog_seg_writer) + (c->exe ? strlen(c->exe) : 0);
	for (; p < c->meta.nprov && c->meta.providers[p]; p++)
		n += rec + RINGLOG_META_PROVIDER_ENTRY_MAX;
	for (; e < c->meta.nev && c->meta.events[e]; e++)
		n += rec + c->meta.events[e]->raw_len;
	if (r->store.seg_gen[st->active] != st->seg_gen)
		n += rec + sizeof(struct ringlog_seg_stream);
	return n;
}

/* Make the segment able to decode r's events on its own: WRITER, all
 * metadata entries not yet written, STREAM. In one chunk when they fit:
 * a chunk opened between them may start a segment, and a META record
 * written there before its WRITER was reported as damage ("META record of
 * an undefined writer", CI 77). So room for all of them is made first;
 * opening a chunk may change the generation (a new segment, or the 4th
 * chunk), and then more is needed: asked again. */
static int describe(struct store *st, struct ring *r)
{
	struct client *c = r->c;
	struct store_desc *d = &c->store.lane[st->active];
	int err;

	for (int tries = 0; tries < 3; tries++) {
		uint32_t gen = st->seg_gen;
		size_t need = describe_bytes(st, r);

		if (!need)
			return 0;
		if (!room(st, need))
			break; /* larger than a chunk, or no room now: one by one */
		if (st->seg_gen == gen)
			break;
	}
	if (d->seg_gen != st->seg_gen) {
		struct ringlog_seg_writer w = {
			.pid = c->pid, .uid = c->uid, .gid = c->gid,
			.exe_len = c->exe ? (uint32_t)strlen(c->exe) : 0,
			.start_real_ns = c->start_real_ns,
		};

		memcpy(w.comm, c->comm, sizeof(w.comm));
		if ((err = put_rec(st, RINGLOG_SEG_REC_WRITER, c->id, &w, sizeof(w),
				   c->exe, w.exe_len)))
			return err;
		d->seg_gen = st->seg_gen;
		d->seg_nprov = d->seg_nev = 0;
	}
	/* Ids are dense from 1: stop at the first one not defined yet. */
	if (!d->seg_nprov)
		d->seg_nprov = 1;
	if (!d->seg_nev)
		d->seg_nev = 1;
	for (; d->seg_nprov < c->meta.nprov && c->meta.providers[d->seg_nprov]; d->seg_nprov++)
		if ((err = put_provider(st, c, d->seg_nprov, c->meta.providers[d->seg_nprov])))
			return err;
	for (; d->seg_nev < c->meta.nev && c->meta.events[d->seg_nev]; d->seg_nev++) {
		const struct ringlog_event_desc *e = c->meta.events[d->seg_nev];

		if ((err = put_rec(st, RINGLOG_SEG_REC_META, c->id, e->raw, e->raw_len, NULL, 0)))
			return err;
	}
	if (r->store.seg_gen[st->active] != st->seg_gen) {
		struct ringlog_seg_stream s = { .writer = c->id, .tid = r->tid, .clock = r->clock,
						.ring_id = r->ring_id };

		if ((err = put_rec(st, RINGLOG_SEG_REC_STREAM, r->id, &s, sizeof(s), NULL, 0)))
			return err;
		r->store.seg_gen[st->active] = st->seg_gen;
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

/* Room for one more entry in r's ring of tickets (stream.h). */
static int pend_reserve(struct ring *r)
{
	struct store_stream *ss = &r->store;
	uint64_t n = ss->ticket_next - ss->ticket_head;
	uint32_t cap = ss->pend_cap ? ss->pend_cap * 2 : 16;
	struct store_pend *p;

	if (n < ss->pend_cap)
		return 0;
	if (!(p = malloc(cap * sizeof(*p))))
		return -EAGAIN;
	for (uint64_t t = ss->ticket_head; t < ss->ticket_next; t++)
		p[t % cap] = ss->pend[t % ss->pend_cap];
	free(ss->pend);
	ss->pend = p;
	ss->pend_cap = cap;
	return 0;
}

/* The entry of c that r's next record joins: c's last one when it is r's
 * newest (no record of r went to another lane's chunk since), else a new
 * one with the next ticket (who_reserve() and pend_reserve() made room). */
static struct chunk_who *who_of(struct chunk *c, struct ring *r)
{
	struct chunk_who *w = c->nwho ? &c->who[c->nwho - 1] : NULL;
	struct store_stream *ss = &r->store;

	if (w && w->r == r && w->ticket + 1 == ss->ticket_next)
		return w;
	w = &c->who[c->nwho++];
	*w = (struct chunk_who){ .r = r, .ticket = ss->ticket_next++,
				 /* until a record joins: what is released
				  * already, releasing it is a no-op */
				 .end = r->cons.published, .seen_records = r->cons.seen.total_records,
				 .seen_bytes = r->cons.seen.total_bytes };
	ss->pend[w->ticket % ss->pend_cap].done = false;
	ss->held++;
	return w;
}

/* Note that c holds r's record ending at ring position end. */
static void who_add(struct chunk *c, struct ring *r, uint32_t events, uint64_t end,
		    uint64_t seen_records, uint64_t seen_bytes)
{
	struct chunk_who *w = who_of(c, r);

	w->events += events;
	w->end = end;
	w->seen_records = seen_records;
	w->seen_bytes = seen_bytes;
}

/* Entry w is written (or counted lost): give r's ring space back up to
 * the newest of its entries with every older one written too. */
static void pend_done(const struct chunk_who *w)
{
	struct ring *r = w->r;
	struct store_stream *ss = &r->store;
	struct store_pend *p = &ss->pend[w->ticket % ss->pend_cap];

	*p = (struct store_pend){ .end = w->end, .seen_records = w->seen_records,
				  .seen_bytes = w->seen_bytes, .done = true };
	while (ss->ticket_head < ss->ticket_next &&
	       (p = &ss->pend[ss->ticket_head % ss->pend_cap])->done) {
		if (!r->dead)
			ringlog_cons_release(&r->cons, p->end, p->seen_records, p->seen_bytes);
		ss->ticket_head++;
	}
	ss->held--;
}

/* Give ring space back in the order chunks were sealed, each chunk once it
 * is written or counted as lost, and per ring in its own order (pend_done()):
 * a daemon killed at any moment leaves every record either in a written
 * chunk or still in its ring, where the next daemon finds it. */
static void release_ready(struct store *st)
{
	for (bool more = true; more;) {
		more = false;
		for (unsigned i = 0; i < st->nchunks; i++) {
			struct chunk *c = &st->chunks[i];

			if (!c->busy || !c->done || c->seal_no != st->release_next)
				continue;
			for (uint32_t k = 0; k < c->nwho; k++)
				pend_done(&c->who[k]);
			c->nwho = 0;
			st->release_next++;
			/* The sinks see it with its ring space given back, and
			 * before the buffer is reused. */
			struct sink_chunk sc = { .bytes = c->failed ? NULL : c->mem,
						 .len = c->failed ? 0 : c->total,
						 .segment = c->seg_seq, .seal_no = c->seal_no,
						 .next_segment = st->cur ? st->cur->seq : st->next_seq,
						 .events = c->events };

			sink_publish_chunk(st->sinks, &sc);
			c->busy = false;
			c->done = false;
			more = true;
		}
	}
}

void store_give_back(struct store *st, struct ring *r)
{
	struct ringlog_consumer *k = &r->cons;

	if (r->store.held) {
		if (k->pos - k->published >= k->size / 4 ||
		    __atomic_load_n(&k->hdr->waiting, __ATOMIC_ACQUIRE))
			store_seal(st); /* a program waits for room (opt-in): now */
		return;
	}
	ringlog_cons_release(k, k->pos, k->seen.total_records, k->seen.total_bytes);
}

/* The chunk leaves the open slot for good: written or counted lost. */
static void chunk_sealed(struct store *st, struct chunk *c)
{
	c->seal_no = st->seal_next++;
	c->busy = true;
	c->opened = false;
	c->done = false;
}

static void chunk_done(struct store *st, struct chunk *c)
{
	c->done = true;
	release_ready(st);
}

/* The disk loss of r, reported in its stream. The chunk that carries the
 * report holds the ring (who list) and, should it be lost too, makes the
 * count pending again: a loss is never forgotten. */
static int put_loss_pending(struct store *st, struct ring *r)
{
	struct ringlog_seg_loss l = { .records = r->store.lost_disk_pending, .reason = RINGLOG_LOSS_DISK };
	size_t len = ringlog_align_up8(sizeof(struct ringlog_seg_rec) + sizeof(l));
	struct chunk *c;
	struct chunk_who *w;
	int err;

	/* Room first: sealing may start a new segment, which must describe
	 * the writer and the stream before the record that names them. */
	for (int tries = 0;; tries++) {
		uint32_t gen = st->seg_gen;

		if (!(c = room(st, len)) || who_reserve(c) || pend_reserve(r) || tries > 2)
			return -EAGAIN;
		if (gen == st->seg_gen)
			break;
		if ((err = describe(st, r)))
			return err;
	}
	if ((err = put_rec(st, RINGLOG_SEG_REC_LOSS, r->id, &l, sizeof(l), NULL, 0)))
		return err;
	c = st->open;
	w = who_of(c, r);
	w->loss += r->store.lost_disk_pending;
	c->lost += r->store.lost_disk_pending;
	r->store.lost_disk_pending = 0;
	return 0;
}

int store_settle_loss(struct store *st, struct ring *r)
{
	int err;

	if (!r->store.lost_disk_pending)
		return 0;
	store_events_end(st);
	if (!st->cur)
		open_segment(st); /* failing, room() fills a chunk anyway: lost at its seal */
	if (!(err = describe(st, r)))
		err = put_loss_pending(st, r);
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
static int run_ready(struct store *st, struct ring *r, uint64_t at, size_t need,
		     struct store_run *run)
{
	struct chunk *c;
	int err;

	if (!st->cur)
		open_segment(st); /* failing, room() fills a chunk anyway: lost at its seal */
	for (int tries = 0;; tries++) {
		struct ringlog_seg_rec h = { .len = sizeof(h) + sizeof(struct ringlog_seg_span),
					     .type = RINGLOG_SEG_REC_PACK, .id = r->id };
		struct ringlog_seg_span sp = { .pos = at };
		uint32_t gen = st->seg_gen;

		if ((err = describe(st, r)))
			return err;
		if (r->store.lost_disk_pending && (err = put_loss_pending(st, r)))
			return err;
		c = st->open;
		if (c && c->span_off != SIZE_MAX && c->span_stream == r->id &&
		    c->span_next == at && c->len + need + RUN_FILLER <= body_cap(c))
			break;
		if (!(c = room(st, h.len + need + RUN_FILLER)))
			return -EAGAIN;
		if (gen != st->seg_gen) {
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
	if (who_reserve(c) || pend_reserve(r))
		return -EAGAIN;
	*run = (struct store_run){ .out = body(c) + c->len,
				   .room = body_cap(c) - c->len - RUN_FILLER, .prev_ts = c->span_ts };
	return 0;
}

/* The run's bytes join the PACK, padded to 8 with filler (pack.h). */
static struct chunk *run_commit(struct store *st, const struct store_run *run)
{
	struct chunk *c = st->open;
	size_t n = ringlog_align_up8(run->packed);

	memset(run->out + run->packed, 0, n - run->packed);
	c->len += n;
	c->span_next += run->bytes;
	c->span_ts = run->prev_ts;
	((struct ringlog_seg_rec *)(void *)(body(c) + c->span_off))->len += (uint32_t)n;
	return c;
}

static void run_put(struct store *st, struct ring *r, const struct store_run *run)
{
	struct chunk *c = run_commit(st, run);
	unsigned k = r->clock & RINGLOG_RING_CLOCK_TSC ? 1 : 0;

	if (run->ts_min < c->ts_min[k])
		c->ts_min[k] = run->ts_min;
	if (run->ts_max > c->ts_max[k])
		c->ts_max[k] = run->ts_max;
	c->events += run->events;
	who_add(c, r, run->events, run->end, r->cons.seen.total_records, r->cons.seen.total_bytes);
}

void store_events_end(struct store *st)
{
	struct store_run *run = &st->run;

	if (run->r && run->bytes)
		run_put(st, run->r, run);
	run->bytes = 0;
	run->r = NULL;
}

/* The run goes on while the ring bytes do, the chunk has room and the
 * segment already holds the event's metadata (ids below seg_nev; a new
 * one is described by run_ready() before its records). */
static bool run_goes_on(const struct store_run *run, const struct ring *r, const uint8_t *rec,
			size_t need, uint16_t id)
{
	return run->r == r && run->bytes && rec == run->recs + run->bytes &&
	       need <= run->room - run->packed && id < run->nev;
}

/* Ends the run before it and opens one at rec (ring position at), whose
 * first record packs into at most need bytes: 0, or -errno from
 * run_ready() (-EAGAIN: no room now, the record stays in the ring). */
static int run_open(struct store *st, struct ring *r, uint64_t at, const uint8_t *rec,
		    size_t need)
{
	struct store_run *run = &st->run;
	uint64_t ts;
	int err;

	store_events_end(st);
	if ((err = run_ready(st, r, at, need, run)) < 0)
		return err;
	memcpy(&ts, rec + RINGLOG_REC_HDR_SIZE, sizeof(ts));
	run->r = r;
	run->recs = rec;
	run->ts_min = run->ts_max = ts;
	run->nev = r->c->store.lane[st->active].seg_nev;
	run->publish = st->sinks->wanting != 0;
	return 0;
}

int store_event(struct store *st, struct ring *r, uint16_t type, uint16_t id,
		const uint8_t *payload, uint32_t len, const struct ringlog_event_desc *e)
{
	struct store_run *run = &st->run;
	const uint8_t *rec = payload - RINGLOG_REC_HDR_SIZE;
	size_t total = ringlog_rec_total(len);
	size_t need = RINGLOG_PACK_MAX(len);
	uint64_t ts;
	int err;

	memcpy(&ts, payload, sizeof(ts));
	/* Retention classes: the record's lane, a byte per record when any
	 * is configured (issue 23: the drain's cost), nothing otherwise. */
	if (__builtin_expect(st->nlanes > 1, 0)) {
		unsigned k = route(st, r->c, id, e);

		if (k != st->active)
			lane_use(st, k);
	}
	if (!run_goes_on(run, r, rec, need, id) &&
	    (err = run_open(st, r, r->cons.rec_end - total, rec, need)) < 0)
		return err == -EAGAIN ? STORE_FULL : err;
	run->bytes += total;
	run->packed += ringlog_pack_rec(run->out + run->packed, type, id, payload, len,
					&run->prev_ts);
	run->events++;
	run->end = r->cons.rec_end;
	if (ts < run->ts_min)
		run->ts_min = ts;
	if (ts > run->ts_max)
		run->ts_max = ts;
	/* The one test per record that sinks cost when none listens. */
	if (__builtin_expect(run->publish, 0)) {
		struct sink_record sr = { .r = r, .type = type, .id = id, .payload = payload,
					  .len = len, .e = e };

		sink_publish_record(st->sinks, &sr);
	}
	return 0;
}

/* The m records of a run just packed (or, memory_only, passed), to the
 * sinks that want records: record_run where a sink has it, else record
 * for each, the consumer's rec_end just past it as while it drains (a
 * sink may read its ring position). pos: the first's ring position. */
static void publish_run(struct store *st, struct ring *r, uint16_t type, uint16_t id,
			const uint8_t *payload, uint32_t len, uint32_t m, uint64_t pos,
			const struct ringlog_event_desc *e, bool memory_only)
{
	uint64_t total = ringlog_rec_total(len), rec_end = r->cons.rec_end;
	struct sink_record first = { .r = r, .type = type, .id = id, .payload = payload,
				     .len = len, .e = e, .memory_only = memory_only };

	for (struct sink *s = st->sinks->head; s; s = s->next) {
		struct sink_record one = first;

		r->cons.rec_end = pos + total;
		if (s->want_records && s->ops->record_run) {
			s->ops->record_run(s, &first, m);
			continue;
		}
		for (uint32_t i = 0; i < m && s->want_records && s->ops->record; i++) {
			one.payload = payload + (size_t)i * total;
			r->cons.rec_end = pos + (i + 1) * total;
			s->ops->record(s, &one);
		}
	}
	r->cons.rec_end = rec_end;
}

/* store_event() for a run of n records of one kind (the consumer's
 * ringlog_cons_run_fn): the checks per chunk, not per record, and the
 * records packed in one loop (pack.h), then published. The lane is the
 * one store_event() chose for the run's first record (drain.c: on_run()
 * stores it first), so it is not routed again. */
long store_event_run(struct store *st, struct ring *r, uint16_t type, uint16_t id,
		     const uint8_t *payload, uint32_t len, uint32_t n,
		     const struct ringlog_event_desc *e)
{
	struct store_run *run = &st->run;
	size_t total = ringlog_rec_total(len), need = RINGLOG_PACK_MAX(len);
	uint64_t first = r->cons.rec_end - total; /* the first record's position */
	uint32_t done = 0;
	int err;

	while (done < n) {
		const uint8_t *rec = payload - RINGLOG_REC_HDR_SIZE + (size_t)done * total;
		uint32_t m;

		if (!run_goes_on(run, r, rec, need, id) &&
		    (err = run_open(st, r, first + (uint64_t)done * total, rec, need)) < 0)
			return done || err == -EAGAIN ? (long)done : err; /* the rest stays in the ring */
		/* run_ready() left room for one at least */
		m = (uint32_t)((run->room - run->packed) / need);
		if (m > n - done)
			m = n - done;
		run->packed += ringlog_pack_run(run->out + run->packed, type, id,
						rec + RINGLOG_REC_HDR_SIZE, len, total, m,
						&run->prev_ts, &run->ts_min, &run->ts_max);
		if (__builtin_expect(st->sinks->wanting != 0, 0))
			publish_run(st, r, type, id, rec + RINGLOG_REC_HDR_SIZE, len, m,
				    first + (uint64_t)done * total, e, false);
		run->bytes += (size_t)m * total;
		run->events += m;
		done += m;
		run->end = first + (uint64_t)done * total;
	}
	return done;
}

void store_pass_run(struct store *st, struct ring *r, uint16_t type, uint16_t id,
		    const uint8_t *payload, uint32_t len, uint32_t n,
		    const struct ringlog_event_desc *e)
{
	/* store_pass() for each: no chunk holds them, the run around them is
	 * split */
	if (st->sinks->wanting)
		publish_run(st, r, type, id, payload, len, n,
			    r->cons.rec_end - ringlog_rec_total(len), e, true);
}

int store_pass(struct store *st, struct ring *r, uint16_t type, uint16_t id,
	       const uint8_t *payload, uint32_t len, const struct ringlog_event_desc *e)
{
	struct sink_record sr = { .r = r, .type = type, .id = id, .payload = payload, .len = len,
				  .e = e, .memory_only = true };

	/* Its ring space goes back with the next release past it (a chunk's
	 * written end, or store_give_back() when no chunk holds the ring): no
	 * chunk holds it, and the run around it is split (the run's records
	 * are contiguous in the ring, and this one is not in it). */
	if (st->sinks->wanting)
		sink_publish_record(st->sinks, &sr);
	return 0;
}

int store_ring_loss(struct store *st, struct ring *r, uint16_t aux,
		    const struct ringlog_rec_loss *l, uint32_t len,
		    const struct ringlog_seg_loss *sl)
{
	size_t total = ringlog_rec_total(len);
	struct store_run run;
	int err;

	store_events_end(st); /* in stream order, after the run before it */
	err = run_ready(st, r, r->cons.rec_end - total, RINGLOG_PACK_MAX(len), &run);
	if (err < 0)
		return err == -EAGAIN ? STORE_FULL : err;
	/* In the PACK, in ring order, as the producer wrote it */
	run.bytes = total;
	run.packed = ringlog_pack_rec(run.out, RINGLOG_REC_LOSS, aux, (const uint8_t *)l,
				      len, &run.prev_ts);
	run_commit(st, &run);
	who_add(st->open, r, 0, r->cons.rec_end, l->total_records, l->total_bytes);
	ringlog_count_add(&st->open->lost, l->records);
	if (st->sinks->wanting)
		sink_publish_loss(st->sinks, r, sl);
	return 0;
}

int store_loss(struct store *st, struct ring *r, uint64_t records, uint64_t bytes,
	       uint32_t reason)
{
	struct ringlog_seg_loss l = { .records = records, .bytes = bytes, .reason = reason };

	return store_loss_rec(st, r, &l);
}

int store_loss_rec(struct store *st, struct ring *r, const struct ringlog_seg_loss *lr)
{
	struct ringlog_seg_loss l = *lr;
	uint64_t records = l.records;
	int err;

	store_events_end(st);
	if (!st->cur)
		open_segment(st); /* failing, room() fills a chunk anyway: lost at its seal */
	if ((err = describe(st, r)) || (err = put_rec(st, RINGLOG_SEG_REC_LOSS, r->id, &l, sizeof(l),
						     NULL, 0)))
		return err == -EAGAIN ? STORE_FULL : err;
	ringlog_count_add(&st->open->lost, records);
	return 0;
}

/* Everything in a chunk that will not reach the disk is counted, per
 * stream, and reported in-stream once writing works again. */
static void chunk_lost(struct store *st, struct chunk *c, const char *why)
{
	for (uint32_t i = 0; i < c->nwho; i++) {
		struct ring *r = c->who[i].r;

		r->store.lost_disk_pending += c->who[i].events + c->who[i].loss;
		r->c->store.lost_disk += c->who[i].events;
	}
	st->lost_disk += c->events;
	c->failed = true;
	if (!st->disk_blocked)
		d_log(LOG_ERR, "cannot store %u events: %s; counting what is lost until writing works again",
		      c->events, why);
	st->disk_blocked = true;
	if (why != st->disk_error) /* it may already be the reason */
		snprintf(st->disk_error, sizeof(st->disk_error), "%s", why);
	/* Its metadata records are gone too: describe everything again. */
	regen_all(st);
}

/* The open chunk cannot be written: counted lost, and done with at once
 * (its ring space goes back in sealing order). */
static void chunk_drop(struct store *st, struct chunk *c, const char *why)
{
	chunk_lost(st, c, why);
	st->open = NULL;
	chunk_sealed(st, c);
	chunk_done(st, c);
}

static void on_written(void *arg, long res)
{
	struct chunk *c = arg;
	struct store *st = c->st;
	struct segfile *s = c->seg;
	size_t total = ringlog_align_up(RINGLOG_CHUNK_HDR_SIZE + c->len, RINGLOG_SEG_ALIGN);

	s->inflight--;
	st->inflight_bytes -= st->inflight_bytes < c->total ? st->inflight_bytes : c->total;
	if (res != (long)total) {
		char why[STORE_WHY_MAX];

		snprintf(why, sizeof(why), "write to %s failed: %s", s->path,
			 res < 0 ? strerror((int)-res) : "short write");
		chunk_lost(st, c, why);
	} else {
		s->writes_done++; /* for its next sync (durable.c) */
		if (st->disk_blocked) {
			st->disk_blocked = false;
			st->disk_error[0] = 0;
			d_log(LOG_NOTICE, "writing to %s works again", s->path);
		}
	}
	chunk_done(st, c);
	if (!s->current && !s->closed && s->inflight == 0)
		seg_finalize(st, s);
	if (st->written)
		st->written(st->ctx, st->open == NULL); /* buffers are free again */
}

/* ------------------------------------------------------------------------
 * The storage directory deleted or replaced under us
 *
 * A user's `rm -rf` takes the files but not our descriptors: writes would
 * go on into nameless inodes, read by nobody. So at every seal and every
 * tick: is the segment being written still named, is storage_dir still
 * the directory we locked? Costs an fstat and a stat.
 */

static bool store_gone(struct store *st)
{
	uint64_t id[2];

	if (st->cur && file_unlinked(st->cur->fd) == 1)
		return true;
	if (file_dir_id(st->dir, id) < 0)
		return true;
	return id[0] != st->dir_id[0] || id[1] != st->dir_id[1];
}

/* Count what the deleted files held as lost, forget them, recreate the
 * directory and lock it again; the next chunk opens a new segment. */
static void store_recover(struct store *st)
{
	uint64_t events = 0, bytes = 0, id[2];
	unsigned n = 0;
	int err;

	for (unsigned k = 0; k < st->nlanes; k++)
		close_lane(st, k); /* their in-flight writes land in the void */
	for (struct segfile **pp = &st->segs, *s; (s = *pp);) {
		struct stat sb;
		bool open = s->fd >= 0 && !s->closed;

		if (open ? file_unlinked(s->fd) == 0 : stat(s->path, &sb) == 0) {
			pp = &s->next;
			continue;
		}
		*pp = s->next;
		st->used_bytes -= s->bytes;
		ringlog_count_add(&events, s->events);
		bytes += s->bytes;
		n++;
		if (s->fd >= 0 && !s->closed) {
			s->orphan = true; /* seg_finalize() frees it */
		} else {
			free(s->path);
			file_aligned_free(s->hdr);
			free(s);
		}
	}
	ringlog_count_add(&st->lost_deleted, events);
	/* Another lane's open chunk was built for its segment, now gone with
	 * the descriptions its records need (in that file's earlier chunks):
	 * written into a new segment they would be unreadable yet counted
	 * stored. They are counted lost, as what the deleted files held. */
	for (unsigned k = 0; k < st->nlanes; k++) {
		struct chunk *c = st->lanes[k].open;

		if (k == st->active || !c || !c->len)
			continue;
		st->lanes[k].open = NULL;
		chunk_lost(st, c, "storage_dir was deleted under ringlogd (the chunk's segment "
			   "went with it)");
		chunk_sealed(st, c);
		chunk_done(st, c);
	}
	regen_all(st);
	if (file_dir_id(st->dir, id) == 0 && id[0] == st->dir_id[0] && id[1] == st->dir_id[1]) {
		/* Only files went: the directory and our lock on it stand. */
		d_log(LOG_ERR, "%u segments (%llu bytes) of storage_dir %s were deleted under "
		      "ringlogd: their %llu stored events are gone and counted lost; storing on",
		      n, (unsigned long long)bytes, st->dir, (unsigned long long)events);
		return;
	}
	d_log(LOG_ERR, "storage_dir %s was deleted or replaced under ringlogd: %llu stored events "
	      "in %u segments (%llu bytes) are gone and counted lost; recreating it and storing "
	      "on", st->dir, (unsigned long long)events, n, (unsigned long long)bytes);
	if ((err = st->mkdir(st->ctx, st->dir)) < 0)
		d_log(LOG_ERR, "cannot create storage_dir %s: %s", st->dir, strerror(-err));
	else
		store_lock_dir(st);
}

void store_check(struct store *st)
{
	if (!store_gone(st))
		return;
	/* The open chunk was built for the current segment: it goes there
	 * (and is lost with it), and the seal comes back here. */
	if (st->cur && st->open && st->open->len)
		store_seal(st);
	if (store_gone(st))
		store_recover(st);
}

static void seal_active(struct store *st)
{
	struct chunk *c;
	struct ringlog_chunk_hdr *h;
	bool rotate = false;
	size_t total;
	int err;

	store_events_end(st); /* a run pending belongs in this chunk */
	c = st->open;
	if (!c || !c->len)
		return;
	if (!st->cur && store_gone(st))
		store_recover(st);
	if (!st->cur && open_segment(st) < 0) {
		chunk_drop(st, c, st->disk_error);
		return;
	}
	total = ringlog_align_up(RINGLOG_CHUNK_HDR_SIZE + c->len, RINGLOG_SEG_ALIGN);
	switch (ret_make_room(st, total)) {
	case ROOM_OK:
		break;
	case ROOM_ROTATE:
		rotate = true;
		break;
	case ROOM_WAIT:
		/* deletable space frees up when writes complete; a seal's
		 * may be waiting for its sync round */
		store_sync_soon(st);
		return;
	case ROOM_FULL: {
		char why[STORE_WHY_MAX];

		if (st->full_by_budget)
			snprintf(why, sizeof(why), "disk budget: max_disk (%llu bytes) holds only the "
				 "segment being written, nothing older to delete; raise max_disk",
				 (unsigned long long)st->budget.max_disk);
		else
			snprintf(why, sizeof(why), "disk budget: %s has less than min_free (%llu bytes) "
				 "available", st->dir, (unsigned long long)ret_min_free(st));
		chunk_drop(st, c, why);
		/* Nothing older is left to delete: close the segment being
		 * written so that it is, and the newest data has room again
		 * at the next chunk (the circular log eats its tail). */
		if (st->cur && st->segs == st->cur && st->cur->chunks)
			store_close_current(st);
		return;
	}
	}
	close_span(c);
	for (unsigned k = 0; k < 2; k++) {
		uint32_t clk = k ? RINGLOG_RING_CLOCK_TSC : 0;
		uint64_t lo, hi;

		if (c->ts_min[k] > c->ts_max[k])
			continue; /* no event of this clock */
		lo = ringlog_dec_real_ns(&st->clock->seg, clk, c->ts_min[k]);
		hi = ringlog_dec_real_ns(&st->clock->seg, clk, c->ts_max[k]);
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
	h->seq = st->cur->chunks;
	h->first_real_ns = c->events ? c->first_real_ns : 0;
	h->last_real_ns = c->last_real_ns;
	h->crc = ringlog_chunk_crc(h, body(c));
	memset(c->mem + RINGLOG_CHUNK_HDR_SIZE + c->len, 0, total - RINGLOG_CHUNK_HDR_SIZE - c->len);

	c->seg = st->cur;
	c->seg_seq = st->cur->seq;
	c->total = total;
	chunk_sealed(st, c);
	err = st->io->ops->write(st->io, st->cur->fd, c->mem, total, st->cur->off, on_written, c);
	if (err < 0) {
		chunk_lost(st, c, "the I/O backend refused the write");
		st->open = NULL;
		chunk_done(st, c);
		return;
	}
	st->cur->inflight++;
	st->inflight_bytes += total;
	st->cur->off += total;
	st->cur->bytes += total;
	st->used_bytes += total;
	st->cur->chunks++;
	if (c->events) {
		if (!st->cur->first_real_ns || c->first_real_ns < st->cur->first_real_ns)
			st->cur->first_real_ns = c->first_real_ns;
		if (c->last_real_ns > st->cur->last_real_ns)
			st->cur->last_real_ns = c->last_real_ns;
	}
	st->cur->events += c->events;
	ringlog_count_add(&st->cur->lost, c->lost);
	st->stored += c->events;
	st->stored_bytes += total;
	st->open = NULL;
	/* Rotate after the chunk, never before: it was built (metadata and
	 * all) for this segment. The next event opens the next segment. */
	if (store_gone(st))
		store_recover(st);
	else if (rotate || st->cur->off + store_chunk_limit(st) > st->cur->limit)
		store_close_current(st);
}

/* Every lane's open chunk (one lane: the one). */
void store_seal(struct store *st)
{
	unsigned was = st->active;

	seal_active(st);
	for (unsigned k = 0; st->nlanes > 1 && k < st->nlanes; k++)
		if (k != was && st->lanes[k].open && st->lanes[k].open->len) {
			lane_use(st, k);
			seal_active(st);
		}
	if (st->active != was)
		lane_use(st, was);
}

/* max_retention: seal and close the segment being written once its oldest
 * event is older than before_ns, so that it may go in turn, then delete
 * the sealed segments older than that (ret_vacuum()): nothing outlives
 * max_retention by more than a segment's span. Returns how many went. */
/* Seal and close the segment being written of every lane (retention
 * class) for which old() says so. */
static void rotate_lanes(struct store *st, bool (*old)(const struct segfile *s, uint64_t arg),
			 uint64_t arg)
{
	unsigned was = st->active;

	for (unsigned k = 0; k < st->nlanes || k == 0; k++) {
		struct segfile *cur = k == st->active ? st->cur : st->lanes[k].cur;

		if (!cur || !cur->chunks || !old(cur, arg))
			continue;
		if (k != st->active)
			lane_use(st, k);
		seal_active(st);
		if (!st->open || !st->open->len)
			store_close_current(st);
	}
	if (st->active != was)
		lane_use(st, was);
}

static bool older_events(const struct segfile *s, uint64_t before_ns)
{
	return s->first_real_ns && s->first_real_ns < before_ns;
}

static bool older_file(const struct segfile *s, uint64_t min_created_ns)
{
	return s->created_mono_ns <= min_created_ns;
}

static unsigned expire(struct store *st, uint64_t before_ns, uint64_t *bytes)
{
	uint64_t used;
	unsigned n;

	rotate_lanes(st, older_events, before_ns);
	used = st->used_bytes;
	n = ret_vacuum(st, UINT64_MAX, before_ns, NULL, NULL);
	*bytes = used - st->used_bytes;
	return n;
}

/* max_retention: segments older than keep go. */
static void expire_tick(struct store *st, uint64_t now, uint64_t keep)
{
	uint64_t real, bytes;
	unsigned n;

	st->expire_tick_ns = now;
	real = d_now(CLOCK_REALTIME);
	if (real > keep && (n = expire(st, real - keep, &bytes)))
		d_log(LOG_NOTICE, "max_retention: deleted %u segments (%llu bytes) older than %llu s", n,
		      (unsigned long long)bytes, (unsigned long long)(keep / 1000000000ull));
}

/* Periodic: seal a chunk that waited long enough, rotate by age, at most
 * once a second expire by max_retention, and the sync round when due. */
void store_tick(struct store *st)
{
	uint64_t now = d_now(CLOCK_MONOTONIC);
	uint64_t keep = st->budget.max_retention_ns;

	store_check(st);
	for (unsigned k = 0; k < st->nlanes || k == 0; k++) {
		const struct chunk *o = k == st->active ? st->open : st->lanes[k].open;

		if (o && o->len && now - o->opened_mono_ns >= st->budget.seal_after_ns) {
			store_seal(st); /* every lane's: one pass over them */
			break;
		}
	}
	if (now >= st->budget.max_age_ns)
		rotate_lanes(st, older_file, now - st->budget.max_age_ns);
	if (keep && now - st->expire_tick_ns >= 1000000000ull)
		expire_tick(st, now, keep);
	store_sync_tick(st); /* after: what retention closed is sealed in this round */
}

/* No lane has a chunk with records open. */
bool store_idle_open(const struct store *st)
{
	if (st->open && st->open->len)
		return false;
	for (unsigned k = 0; k < st->nlanes; k++)
		if (st->lanes[k].open && st->lanes[k].open->len)
			return false;
	return true;
}

bool store_writing(const struct store *st)
{
	for (unsigned i = 0; i < st->nchunks; i++)
		if (st->chunks[i].busy)
			return true;
	return st->finalizing != 0 || st->syncing != 0;
}

bool store_idle(const struct store *st)
{
	return store_idle_open(st) && !store_writing(st);
}

void store_reload(struct store *st, const struct ringlog_config *cfg)
{
	size_t old_chunk = st->budget.chunk_size;
	uint64_t old_max = st->budget.seg_max;

	/* The open chunk was sized for the old budget: it goes now, and the
	 * next one takes the new size. */
	store_seal(st);
	store_configure(st, cfg);
	switch (ret_classes(st, cfg)) {
	case 1:
		d_log(LOG_INFO, "storage: retention classes changed: %u now, each class's segment "
		      "closed; segments of a class no longer configured count as the default's",
		      st->nlanes - 1);
		break;
	case -EAGAIN:
		d_log(LOG_WARNING, "storage: the retention classes did not change: a chunk waits for "
		      "writes to complete; send SIGHUP again");
		break;
	}
	if (st->cur) {
		uint64_t lim = store_seg_limit(st);

		if (st->cur->off + store_chunk_limit(st) > lim)
			store_close_current(st); /* so that the budget may take it */
		else if (lim < st->cur->limit)
			st->cur->limit = lim;
	}
	if (ret_make_room(st, 0) == ROOM_OK || st->used_bytes <= st->budget.max_disk)
		d_log(LOG_INFO, "storage: chunks of %zu bytes (were %zu), segments up to %llu (were %llu), "
		      "max_disk %llu, %llu used", st->budget.chunk_size, old_chunk, (unsigned long long)st->budget.seg_max,
		      (unsigned long long)old_max, (unsigned long long)st->budget.max_disk,
		      (unsigned long long)st->used_bytes);
	else
		d_log(LOG_INFO, "storage: max_disk now %llu, %llu used: older segments go as writes "
		      "complete", (unsigned long long)st->budget.max_disk, (unsigned long long)st->used_bytes);
}

int store_lock_dir(struct store *st)
{
	long holder;
	int err = file_lock_dir(st->dir, &st->dir_lock, &holder);

	if (err == -EBUSY && holder > 0)
		d_log(LOG_ERR, "storage_dir %s is in use by another ringlogd (PID %ld holds %s/%s): "
		      "stop it, or give this one another --storage (and --socket)",
		      st->dir, holder, st->dir, RINGLOG_LOCK_NAME);
	else if (err == -EBUSY)
		d_log(LOG_ERR, "storage_dir %s is in use by another process (it holds %s/%s): "
		      "stop it, or give this ringlogd another --storage (and --socket)",
		      st->dir, st->dir, RINGLOG_LOCK_NAME);
	else if (err < 0)
		d_log(LOG_ERR, "cannot lock storage_dir %s (%s/%s): %s", st->dir,
		      st->dir, RINGLOG_LOCK_NAME, strerror(-err));
	if (!err && (err = file_dir_id(st->dir, st->dir_id)) < 0)
		d_log(LOG_ERR, "storage_dir %s: %s", st->dir, strerror(-err));
	return err;
}

static int mkdir_plain(void *ctx, const char *dir)
{
	int err = file_mkdir(dir);

	(void)ctx;
	return err < 0 ? err : 0;
}

/* Why the kernel refused to lock the chunk buffers. Unregistered, each
 * write pins its buffer instead: from one thread at 45 M events/s, 24-27
 * ticks of daemon CPU a second either way (4 alternating pairs, a daemon
 * of a user with an 8 MiB RLIMIT_MEMLOCK against root's), the buffers
 * being huge pages; so this is information, not a warning. */
static const char *memlock_hint(const struct store *st)
{
	static char hint[200];

	snprintf(hint, sizeof(hint), ": the %zu KiB they lock is over RLIMIT_MEMLOCK "
		 "(LimitMEMLOCK= in the unit, ulimit -l)",
		 (size_t)NCHUNKS * st->budget.chunk_alloc >> 10);
	return hint;
}

static int alloc_chunks(struct store *st)
{
	int err;

	st->chunks = calloc(NCHUNKS, sizeof(*st->chunks));
	if (!st->chunks)
		return -ENOMEM;
	st->nchunks = NCHUNKS;
	/* One block for all, on huge pages where the system allows them
	 * (file_large()): a chunk then lies in physically contiguous memory,
	 * and its O_DIRECT write is one segment and one request to the disk
	 * instead of a page each, split in two past the device's segment
	 * limit (254 on virtio-blk). */
	st->chunk_pool = file_large((size_t)NCHUNKS * st->budget.chunk_alloc);
	if (!st->chunk_pool)
		return -ENOMEM;
	for (unsigned i = 0; i < NCHUNKS; i++) {
		st->chunks[i].cap = st->budget.chunk_alloc;
		st->chunks[i].st = st;
		st->chunks[i].span_off = SIZE_MAX;
		st->chunks[i].mem = st->chunk_pool + (size_t)i * st->budget.chunk_alloc;
	}
	if (st->io->ops->register_buffers) {
		static void *bufs[NCHUNKS]; /* the backend keeps this array */

		for (unsigned i = 0; i < NCHUNKS; i++)
			bufs[i] = st->chunks[i].mem;
		if ((err = st->io->ops->register_buffers(st->io, bufs, st->budget.chunk_alloc, NCHUNKS)) < 0)
			d_log(LOG_INFO, "%s: chunk buffers not registered (%s%s): each write pins "
			      "them instead", st->io_name, strerror(-err),
			      err == -ENOMEM ? memlock_hint(st) : "");
	}
	return 0;
}

struct store *store_open(const struct store_params *p, const struct ringlog_config *cfg)
{
	struct store *st = calloc(1, sizeof(*st));
	int err;

	if (!st)
		return NULL;
	st->dir_lock = -1;
	snprintf(st->dir, sizeof(st->dir), "%s", p->dir);
	st->io = p->io;
	st->io_name = p->io_name;
	st->clock = p->clock;
	st->sinks = p->sinks ? p->sinks : &st->no_sinks;
	st->written = p->written;
	st->mkdir = p->mkdir ? p->mkdir : mkdir_plain;
	st->space = p->space ? p->space : file_space;
	st->deleting = p->deleting;
	st->keep = p->keep;
	st->ctx = p->ctx;
	st->sync_round_ns = d_now(CLOCK_MONOTONIC); /* the first round one interval on */
	sys_identity(st->boot_id, st->host, sizeof(st->host));
	if ((err = st->mkdir(st->ctx, st->dir)) < 0) {
		d_log(LOG_ERR, "cannot create storage_dir %s: %s", st->dir, strerror(-err));
		goto fail;
	}
	/* One daemon per directory, before any file in it is touched: a
	 * second one would seal the first one's live segment as crashed and
	 * then write the same segment names. */
	if ((err = store_lock_dir(st)) < 0)
		goto fail;
	store_configure(st, cfg);
	ret_classes(st, cfg);
	if ((err = alloc_chunks(st)) < 0 || (err = ret_scan(st)) < 0)
		goto fail;
	st->run_first_seq = st->next_seq;
	if ((err = open_segment(st)) < 0) {
		d_log(LOG_INFO, "%s", st->disk_error);
		goto fail;
	}
	return st;
fail:
	store_close(st);
	errno = -err;
	return NULL;
}

void store_close(struct store *st)
{
	if (!st)
		return;
	store_stop(st);
	for (struct segfile *s = st->segs, *n; s; s = n) {
		n = s->next;
		if (s->fd > 0 && !s->closed)
			seg_finalize(st, s);
		free(s->path);
		file_aligned_free(s->hdr);
		free(s);
	}
	for (unsigned i = 0; i < st->nchunks; i++)
		free(st->chunks[i].who);
	if (st->chunk_pool)
		file_large_free(st->chunk_pool, (size_t)NCHUNKS * st->budget.chunk_alloc);
	free(st->chunks);
	if (st->dir_lock >= 0)
		file_close(st->dir_lock);
	free(st);
}
