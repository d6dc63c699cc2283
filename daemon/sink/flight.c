/* daemon/sink/flight.c - the flight recorder (flight.h).
 *
 * The buffer is one allocation of flight.size bytes, cut into slots of one
 * chunk each. Records go into the open slot as a segment chunk body
 * (proto/segment.h): WRITER, META and STREAM records for every writer and
 * stream the chunk holds, then PACK records of ring records with their
 * ring positions, packed as the store packs them (proto/pack.h: a 48-byte
 * event in 36 bytes, so the same memory holds a third more of the past,
 * and less is copied and checksummed). So each chunk decodes alone, and a snapshot is the
 * slots of its window copied behind a segment header, with no re-encoding:
 * the cost of that is the descriptions repeated once per chunk, a few
 * hundred bytes per writer per MiB. A full slot is sealed (header, CRC),
 * and the next one, the oldest, is overwritten: its events are counted,
 * with their time, so that a snapshot starting after them says how many
 * it misses. A slot a snapshot is writing is pinned; reaching it, records
 * are dropped and counted instead of overwriting it.
 *
 * Here: the buffer, what the sink is given, the status, the life.
 * Triggers and taking snapshots: flight-trigger.c; the file: snapshot.c.
 * Everything runs on the loop thread but the file's write (on a libuv
 * worker).
 */
#define _GNU_SOURCE
#include "daemon.h"
#include "log.h"
#include "clock.h"
#include "count.h"
#include "ingest/client.h"
#include "ingest/registry.h"
#include "sink/flight.h"
#include "sink/flight-int.h"
#include "sink/snapshot.h"
#include "store/file.h"
#include "pack.h"

#include <errno.h>
#ifdef _WIN32
#include "compat-win.h" /* fnmatch */
#else
#include <fnmatch.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>


static struct ringlog_chunk_hdr *slot_hdr(struct flight *f, unsigned i)
{
	return (struct ringlog_chunk_hdr *)(void *)(f->mem + (size_t)i * f->chunk);
}

static uint8_t *slot_body(struct flight *f, unsigned i)
{
	return f->mem + (size_t)i * f->chunk + RINGLOG_CHUNK_HDR_SIZE;
}

static size_t body_cap(const struct flight *f)
{
	return f->chunk - RINGLOG_CHUNK_HDR_SIZE;
}

static void open_reset(struct flight *f)
{
	f->len = 0;
	f->events = 0;
	f->lost = 0;
	f->ts_min[0] = f->ts_min[1] = UINT64_MAX;
	f->ts_max[0] = f->ts_max[1] = 0;
	f->span_off = SIZE_MAX;
	f->gen++;
}

/* End the open PACK: zero filler up to 8 bytes (pack.h), and its length,
 * written once here rather than grown with every record. */
static void fl_pack_end(struct flight *f)
{
	size_t pad = ringlog_align_up8(f->len) - f->len;
	uint8_t *b = slot_body(f, f->open);

	if (f->span_off == SIZE_MAX)
		return;
	memset(b + f->len, 0, pad);
	f->len += (uint32_t)pad;
	((struct ringlog_seg_rec *)(void *)(b + f->span_off))->len = (uint32_t)(f->len - f->span_off);
	f->span_off = SIZE_MAX;
}

/* Seal the open slot (when it holds anything): the chunk header as a
 * segment's, padding zeroed, so that it is written out as it is. */
static void seal(struct flight *f)
{
	struct fl_slot *s = &f->slots[f->open];
	struct ringlog_chunk_hdr *h = slot_hdr(f, f->open);
	uint64_t lo = UINT64_MAX, hi = 0;
	size_t total;

	fl_pack_end(f);
	if (!f->len)
		return;
	for (unsigned k = 0; k < 2; k++) {
		uint32_t clk = k ? RINGLOG_RING_CLOCK_TSC : 0;

		if (f->ts_min[k] > f->ts_max[k])
			continue;
		if (clock_real_ns(&f->d->clock, clk, f->ts_min[k]) < lo)
			lo = clock_real_ns(&f->d->clock, clk, f->ts_min[k]);
		if (clock_real_ns(&f->d->clock, clk, f->ts_max[k]) > hi)
			hi = clock_real_ns(&f->d->clock, clk, f->ts_max[k]);
	}
	if (lo == UINT64_MAX)
		lo = hi = d_now(CLOCK_REALTIME); /* losses only */
	total = ringlog_align_up(RINGLOG_CHUNK_HDR_SIZE + f->len, RINGLOG_SEG_ALIGN);
	memset(h, 0, sizeof(*h));
	h->magic = RINGLOG_CHUNK_MAGIC;
	h->body_len = f->len;
	h->events = f->events;
	h->lost = f->lost;
	/* Every chunk describes every writer it holds: seq % 4 == 3 tells
	 * readers so (proto/segment.h); the numbers still only grow. */
	h->seq = f->seal_no * 4 + 3;
	h->first_real_ns = lo;
	h->last_real_ns = hi;
	h->crc = ringlog_chunk_crc(h, slot_body(f, f->open));
	memset(slot_body(f, f->open) + f->len, 0, total - RINGLOG_CHUNK_HDR_SIZE - f->len);
	*s = (struct fl_slot){ .no = ++f->seal_no, .events = f->events, .len = (uint32_t)total,
			       .first_real = lo, .last_real = hi };
}

static void bucket_put(struct fl_buckets *b, uint64_t t, uint64_t events)
{
	uint64_t no = t / b->w;
	unsigned i = (unsigned)(no % FL_BUCKETS);

	if (b->no[i] > no && b->n[i])
		return; /* FL_BUCKETS buckets older than what it holds: past pre */
	if (b->no[i] != no)
		b->no[i] = no, b->n[i] = 0;
	b->n[i] += events;
}

/* events overwritten, the newest at t, into the buckets; their width
 * follows pre (a reload may change it: what they hold is moved). */
static void older_add(struct flight *f, uint64_t t, uint64_t events)
{
	struct fl_buckets *b = &f->older;
	uint64_t w = f->d->cfg.flight.pre_ns / FL_BUCKETS;

	if (w < 1000000)
		w = 1000000;
	if (b->w != w) {
		struct fl_buckets old = *b;

		memset(b, 0, sizeof(*b));
		b->w = w;
		for (unsigned i = 0; old.w && i < FL_BUCKETS; i++)
			if (old.n[i])
				bucket_put(b, old.no[i] * old.w + old.w - 1, old.n[i]);
	}
	bucket_put(b, t, events);
}

uint64_t fl_older_since(const struct flight *f, uint64_t from)
{
	const struct fl_buckets *b = &f->older;
	uint64_t n = 0;

	for (unsigned i = 0; b->w && i < FL_BUCKETS; i++)
		if (b->n[i] && (b->no[i] + 1) * b->w > from)
			n += b->n[i]; /* it ends after from: in the window, or
			               * straddling its start */
	return n;
}

/* Seal and move to the next slot, overwriting the oldest: false when a
 * snapshot still writes it (the caller drops and counts). */
bool fl_advance(struct flight *f)
{
	unsigned next = (f->open + 1) % f->nslots;
	struct fl_slot *s = &f->slots[next];

	if (s->pinned)
		return false;
	seal(f);
	if (f->len && s->no) {
		struct fl_over *o = &f->over[f->over_next];

		/* The list is full: its oldest entry goes to the buckets, so
		 * that nothing within pre is forgotten however long pre is. */
		if (o->events)
			older_add(f, o->last_real, o->events);
		*o = (struct fl_over){ .last_real = s->last_real, .events = s->events };
		f->over_next = (f->over_next + 1) % f->nslots;
		f->overwritten += s->events;
	}
	if (!f->len)
		return true; /* nothing to seal: keep filling this one */
	s->no = 0;
	f->open = next;
	open_reset(f);
	return true;
}

/* One segment record in the open chunk: false when it does not fit. */
static bool put(struct flight *f, uint16_t type, uint32_t id, uint16_t flags, const void *a,
		size_t alen, const void *b, size_t blen)
{
	size_t len = ringlog_align_up(sizeof(struct ringlog_seg_rec) + alen + blen, 8);
	struct ringlog_seg_rec h = { .len = (uint32_t)len, .type = type, .flags = flags, .id = id };
	uint8_t *p;

	fl_pack_end(f); /* anything after a PACK ends it */
	p = slot_body(f, f->open) + f->len;
	if (f->len + len > body_cap(f))
		return false;
	memcpy(p, &h, sizeof(h));
	memcpy(p + sizeof(h), a, alen);
	if (blen)
		memcpy(p + sizeof(h) + alen, b, blen);
	memset(p + sizeof(h) + alen + blen, 0, len - sizeof(h) - alen - blen);
	f->len += (uint32_t)len;
	return true;
}

/* The writer, its providers and events, and the stream of r, once per
 * chunk: false when the chunk is full (the caller seals and retries). */
static bool describe(struct flight *f, struct ring *r)
{
	struct client *c = r->c;

	if (ringlog_grow(&f->w_gen, &f->nw, c->id, sizeof(uint64_t)) ||
	    ringlog_grow(&f->w_nev, &f->nw2, c->id, sizeof(uint32_t)) ||
	    ringlog_grow(&f->s_gen, &f->ns, r->id, sizeof(uint64_t)))
		return false;
	if (f->w_gen[c->id] != f->gen) {
		struct ringlog_seg_writer w = { .pid = c->pid, .uid = c->uid, .gid = c->gid,
						.exe_len = c->exe ? (uint32_t)strlen(c->exe) : 0,
						.start_real_ns = c->start_real_ns };

		memcpy(w.comm, c->comm, sizeof(w.comm));
		if (!put(f, RINGLOG_SEG_REC_WRITER, c->id, 0, &w, sizeof(w), c->exe, w.exe_len))
			return false;
		for (uint32_t id = 1; id < c->meta.nprov; id++) {
			uint8_t e[RINGLOG_META_PROVIDER_ENTRY_MAX];

			if (c->meta.providers[id] &&
			    !put(f, RINGLOG_SEG_REC_META, c->id, 0, e,
				 ringlog_meta_provider_entry(e, (uint16_t)id, c->meta.providers[id]),
				 NULL, 0))
				return false;
		}
		f->w_gen[c->id] = f->gen;
		f->w_nev[c->id] = 1; /* event ids start at 1 */
	}
	for (uint32_t id = f->w_nev[c->id]; id < c->meta.nev && c->meta.events[id]; id++) {
		const struct ringlog_event_desc *e = c->meta.events[id];

		if (!put(f, RINGLOG_SEG_REC_META, c->id, 0, e->raw, e->raw_len, NULL, 0))
			return false;
		f->w_nev[c->id] = id + 1;
	}
	if (f->s_gen[r->id] != f->gen) {
		struct ringlog_seg_stream st = { .writer = c->id, .tid = r->tid, .clock = r->clock,
						 .ring_id = r->ring_id };

		if (!put(f, RINGLOG_SEG_REC_STREAM, r->id, 0, &st, sizeof(st), NULL, 0))
			return false;
		f->s_gen[r->id] = f->gen;
	}
	return true;
}

/* Make the open chunk ready for `need` more bytes of r's records after
 * its descriptions: false (counted by the caller) when it cannot be. */
static bool ready(struct flight *f, struct ring *r, size_t need)
{
	for (int tries = 0; tries < 2; tries++) {
		uint32_t len = f->len;

		if (describe(f, r) && f->len + need <= body_cap(f))
			return true;
		f->len = len; /* drop a half description: the next chunk has it */
		if (!len || !fl_advance(f)) {
			f->gen++; /* what it marked described is not in the chunk */
			return false;
		}
	}
	return false;
}

static bool wants_trigger(const struct flight *f, const char *provider)
{
	const struct ringlog_config_flight *cf = &f->d->cfg.flight;

	if (!cf->n_trigger_providers)
		return true;
	for (unsigned i = 0; provider && i < cf->n_trigger_providers; i++)
		if (!fnmatch(cf->trigger_providers[i], provider, 0))
			return true;
	return false;
}

/* The open PACK goes on with a record of event id at ring position pos:
 * same ring, next position, event described, and room for need bytes
 * (the record packed and, at the PACK's end, its filler). */
static bool pack_goes_on(const struct flight *f, const struct ring *r, uint64_t pos, uint16_t id,
			 size_t need)
{
	return f->span_off != SIZE_MAX && f->span_stream == r->id && f->span_next == pos &&
	       id < f->span_nev && f->len + need <= body_cap(f);
}

static void fl_record(struct sink *s, const struct sink_record *rec)
{
	struct flight *f = ((struct daemon *)s->ctx)->flight;
	struct ring *r = rec->r;
	uint64_t total = ringlog_rec_total(rec->len), pos = r->cons.rec_end - total, ts;
	size_t most = RINGLOG_PACK_MAX(rec->len) + 7; /* 7: the PACK's filler */
	bool extend = pack_goes_on(f, r, pos, rec->id, most);
	unsigned k = r->clock & RINGLOG_RING_CLOCK_TSC ? 1 : 0;

	f->events_in++;
	f->bytes_in += total;
	f->memory_only += rec->memory_only;
	if (!extend) {
		struct ringlog_seg_rec h = { .type = RINGLOG_SEG_REC_PACK,
					     .id = r->id,
					     .len = sizeof(struct ringlog_seg_rec) + sizeof(uint64_t) };
		uint8_t *p;

		fl_pack_end(f);
		if (!ready(f, r, h.len + most)) {
			f->dropped++;
			f->dropped_since++;
			return;
		}
		p = slot_body(f, f->open) + f->len;
		memcpy(p, &h, sizeof(h));
		memcpy(p + sizeof(h), &pos, sizeof(pos));
		f->span_off = f->len;
		f->span_stream = r->id;
		f->span_nev = f->w_nev[r->c->id];
		f->span_ts = 0; /* pack.h: the first event's delta is from 0 */
		f->len += h.len;
	}
	f->len += (uint32_t)ringlog_pack_rec(slot_body(f, f->open) + f->len, rec->type, rec->id,
					     rec->payload, rec->len, &f->span_ts);
	f->span_next = pos + total;
	f->events++;
	memcpy(&ts, rec->payload, sizeof(ts));
	if (ts < f->ts_min[k])
		f->ts_min[k] = ts;
	if (ts > f->ts_max[k])
		f->ts_max[k] = ts;
	if (__builtin_expect(f->trigger_level != 0, 0) && rec->e->level >= 1 &&
	    rec->e->level <= f->trigger_level) {
		const char *prov = ringlog_meta_provider(&r->c->meta, rec->e->provider);

		if (wants_trigger(f, prov)) {
			char why[FL_REASON_MAX];

			snprintf(why, sizeof(why), "event %s/%s at level %u from pid %u (%s)",
				 prov ? prov : "?", rec->e->name, rec->e->level, r->c->pid, r->c->comm);
			fl_trigger(f, why, 0);
		}
	}
}

/* n records of one kind (sink_ops.record_run): each that opens a PACK,
 * or that a trigger level may concern, through fl_record(); the rest, as
 * many as the open chunk has room for, packed in one loop (pack.h) onto
 * the PACK the one before opened or extended. */
static void fl_record_run(struct sink *s, const struct sink_record *first, uint32_t n)
{
	struct flight *f = ((struct daemon *)s->ctx)->flight;
	struct ring *r = first->r;
	const struct ringlog_event_desc *e = first->e;
	uint64_t total = ringlog_rec_total(first->len), pos = r->cons.rec_end - total;
	size_t most = RINGLOG_PACK_MAX(first->len);
	unsigned k = r->clock & RINGLOG_RING_CLOCK_TSC ? 1 : 0;
	bool batch = !(f->trigger_level != 0 && e->level >= 1 && e->level <= f->trigger_level);
	struct sink_record one = *first;

	for (uint32_t done = 0; done < n;) {
		uint32_t m;

		one.payload = first->payload + (size_t)done * total;
		r->cons.rec_end = pos + (done + 1) * total;
		fl_record(s, &one);
		done++;
		/* fl_record()'s test for extending, for the m that follow */
		if (!batch || done == n || !pack_goes_on(f, r, pos + done * total, first->id, most + 7))
			continue;
		m = (uint32_t)((body_cap(f) - f->len - 7) / most);
		if (m > n - done)
			m = n - done;
		f->len += (uint32_t)ringlog_pack_run(slot_body(f, f->open) + f->len, first->type,
						     first->id, first->payload + (size_t)done * total,
						     first->len, total, m, &f->span_ts, &f->ts_min[k],
						     &f->ts_max[k]);
		f->events_in += m;
		f->bytes_in += m * total;
		f->memory_only += first->memory_only ? m : 0;
		f->events += m;
		done += m;
		f->span_next = pos + done * total;
	}
	r->cons.rec_end = pos + total;
}

/* A ring overflow, in its stream, so that a snapshot has no silent gap. */
static void fl_loss(struct sink *s, struct ring *r, const struct ringlog_seg_loss *l)
{
	struct flight *f = ((struct daemon *)s->ctx)->flight;

	fl_pack_end(f);
	if (!ready(f, r, ringlog_align_up(sizeof(struct ringlog_seg_rec) + sizeof(*l), 8)) ||
	    !put(f, RINGLOG_SEG_REC_LOSS, r->id, 0, l, sizeof(*l), NULL, 0)) {
		ringlog_count_add(&f->dropped, l->records);
		ringlog_count_add(&f->dropped_since, l->records);
		return;
	}
	ringlog_count_add(&f->lost, l->records);
}

/* The buffer keeps what disk does not: flight_level past level. */
static void fl_raise(struct sink *s, const char *provider, uint64_t kw[8])
{
	struct daemon *d = s->ctx;
	const struct ringlog_config *cfg = &d->cfg;
	const struct ringlog_config_provider *p = &cfg->default_provider;

	if (!d->flight)
		return;
	/* `ringlog enable --flight-level` first, as rules come before the
	 * configuration */
	for (const struct provider *pv = d->providers; pv; pv = pv->next)
		if (pv->flight_rule && !strcmp(pv->name, provider)) {
			for (unsigned l = pv->flight_rule_level + 1u; l <= pv->flight_rule && l <= 5; l++)
				kw[l] |= pv->flight_rule_kw;
			return;
		}
	for (unsigned i = 0; i < cfg->n_providers; i++)
		if (!fnmatch(cfg->providers[i].pattern, provider, 0)) {
			p = &cfg->providers[i];
			break;
		}
	for (unsigned l = p->level + 1u; l <= p->flight_level && l <= 5; l++)
		kw[l] |= p->keywords;
}

json_t *flight_status(struct daemon *d)
{
	struct flight *f = d->flight;
	uint64_t first = 0, last = 0, events = 0, bytes = 0;

	if (!f)
		return json_pack("{s:b}", "enabled", 0);
	for (unsigned i = 0; i < f->nslots; i++) {
		const struct fl_slot *s = &f->slots[i];

		if (!s->no)
			continue;
		events += s->events;
		bytes += s->len;
		if (!first || s->first_real < first)
			first = s->first_real;
		if (s->last_real > last)
			last = s->last_real;
	}
	events += f->events;
	bytes += f->len;
	return json_pack("{s:b,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:s,s:"
			 "{s:I,s:I,s:I,s:I,s:I,s:I,s:s,s:s,s:s,s:I,s:I,s:I}}",
			 "enabled", 1, "size", (json_int_t)f->size, "bytes", (json_int_t)bytes,
			 "events", (json_int_t)events, "first_ns", (json_int_t)first,
			 "last_ns", (json_int_t)last, "overwritten", (json_int_t)f->overwritten,
			 "dropped", (json_int_t)f->dropped, "received", (json_int_t)f->events_in,
			 "memory_only", (json_int_t)f->memory_only,
			 "pre_ns", (json_int_t)d->cfg.flight.pre_ns, "snapshot_dir", f->dir,
			 "snapshots",
			 "count", (json_int_t)f->snaps, "bytes", (json_int_t)f->snap_bytes,
			 "max_disk", (json_int_t)d->cfg.flight.max_disk,
			 "written", (json_int_t)f->written, "refused", (json_int_t)f->refused,
			 "coalesced", (json_int_t)f->coalesced, "last_reason", f->last_reason,
			 "last_path", f->last_path, "last_error", f->last_error,
			 "failed", (json_int_t)f->failed, "last_write_ns", (json_int_t)f->last_write_ns,
			 "pending", (json_int_t)f->pend.on);
}

/* ------------------------------------------------------------------------
 * Life
 */

void fl_free(struct flight *f)
{
	file_large_free(f->mem, (size_t)f->nslots * f->chunk);
	free(f->slots);
	free(f->over);
	free(f->taken_at);
	free(f->w_gen);
	free(f->w_nev);
	free(f->s_gen);
	free(f->trig_seen);
	free(f->pinned);
	free(f);
}

/* Freed once both timers are closed and no snapshot is being written
 * (the loop's last run waits for it: daemon_finish()). */
static void on_closed(uv_handle_t *h)
{
	struct flight *f = h->data;

	if (!--f->handles && !f->busy)
		fl_free(f);
}

int flight_start(struct daemon *d)
{
	const struct ringlog_config_flight *cf = &d->cfg.flight;
	struct flight *f;

	sink_want(&d->sinks, &d->flight_sink, false);
	if (d->flight) {
		if (d->flight->size == cf->size)
			goto configured; /* same buffer; new windows, triggers, dir */
		if (d->flight->busy) {
			d_log(LOG_WARNING, "flight recorder: a snapshot is being written: flight.size "
			      "stays %llu bytes until the next reload", (unsigned long long)d->flight->size);
			goto configured;
		}
		flight_stop(d);
	}
	if (!cf->size)
		return 0;
	if (!(f = calloc(1, sizeof(*f))))
		return -ENOMEM;
	f->d = d;
	sys_identity(f->boot_id, f->host, sizeof(f->host)); /* a snapshot's header */
	f->size = cf->size;
	f->chunk = FL_CHUNK_MAX;
	while (f->chunk > 64u * 1024 && f->size / f->chunk < FL_SLOTS_MIN * 4)
		f->chunk /= 2;
	f->nslots = (unsigned)(f->size / f->chunk);
	/* flight.size holds the buffer's bookkeeping too (this struct, a
	 * slot's state, its overwritten count and pin, the snapshot's parts),
	 * so that the daemon's memory stays within size plus what it needs
	 * without a flight recorder: a slot less when they do not fit */
	while (f->nslots > FL_SLOTS_MIN &&
	       (size_t)f->nslots * f->chunk + sizeof(*f) +
	       (size_t)f->nslots * (sizeof(*f->slots) + sizeof(*f->over) + sizeof(*f->pinned) +
				    sizeof(struct snap_part)) + sizeof(struct snap_part) +
	       (size_t)cf->max_snapshots * sizeof(*f->taken_at) > f->size)
		f->nslots--;
	/* Allocated and touched once, here: the memory status shows is the
	 * memory the daemon holds from now on. */
	f->mem = file_large((size_t)f->nslots * f->chunk);
	f->slots = calloc(f->nslots, sizeof(*f->slots));
	f->over = calloc(f->nslots, sizeof(*f->over));
	f->taken_at = calloc(cf->max_snapshots, sizeof(*f->taken_at));
	f->ntaken = cf->max_snapshots;
	if (!f->mem || !f->slots || !f->over || !f->taken_at) {
		d_log(LOG_ERR, "flight recorder: cannot allocate %llu bytes: it is off",
		      (unsigned long long)f->size);
		fl_free(f);
		return -ENOMEM;
	}
	f->open = 0;
	open_reset(f);
	uv_timer_init(d->loop, &f->due);
	uv_timer_init(d->loop, &f->scan);
	f->due.data = f->scan.data = f;
	f->handles = 2;
	uv_timer_start(&f->scan, fl_on_scan, FL_SCAN_MS, FL_SCAN_MS);
	d->flight = f;
	d_log(LOG_NOTICE, "flight recorder: %llu bytes in %u chunks of %zu KiB, snapshots of "
	      "%llu s before and %llu s after a trigger", (unsigned long long)f->size, f->nslots,
	      f->chunk >> 10, (unsigned long long)(cf->pre_ns / 1000000000ull),
	      (unsigned long long)(cf->post_ns / 1000000000ull));
configured:
	f = d->flight;
	f->trigger_level = cf->trigger_level;
	if (cf->snapshot_dir[0])
		snprintf(f->dir, sizeof(f->dir), "%s", cf->snapshot_dir);
	else
		snprintf(f->dir, sizeof(f->dir), "%s/snapshots", d->cfg.storage_dir);
	snap_scan(f->dir, !f->busy, &f->snaps, &f->snap_bytes, NULL, 0);
	if (!f->busy)
		fl_trim_dir(f); /* a reload may have lowered flight.max_disk */
	/* when the last max_snapshots began: as many entries as that (a
	 * reload may raise it; the new ones are "never"), not the most it may
	 * be, which would be memory the daemon holds for nothing */
	if (cf->max_snapshots != f->ntaken) {
		unsigned n = cf->max_snapshots, keep = n < f->ntaken ? n : f->ntaken;
		uint64_t *t = calloc(n, sizeof(*t));

		/* the newest `keep` of them, oldest first, at the end: the
		 * new entries before them are "never", and come first */
		if (t) {
			for (unsigned k = 0; k < keep; k++)
				t[n - keep + k] = f->taken_at[(f->taken_next + f->ntaken - keep + k) %
							      f->ntaken];
			free(f->taken_at);
			f->taken_at = t;
			f->ntaken = n;
			f->taken_next = 0;
		} else {
			d_log(LOG_WARNING, "flight recorder: out of memory for flight.max_snapshots %u: "
			      "%u per period until the next reload", n, f->ntaken);
		}
	}
	sink_want(&d->sinks, &d->flight_sink, true);
	return 0;
}

void flight_stop(struct daemon *d)
{
	struct flight *f = d->flight;

	if (!f)
		return;
	sink_want(&d->sinks, &d->flight_sink, false);
	d->flight = NULL;
	f->closing = true;
	/* A snapshot being written finishes first: the loop's last run waits
	 * for its work item (daemon_finish()). */
	uv_timer_stop(&f->due);
	uv_timer_stop(&f->scan);
	uv_close((uv_handle_t *)&f->due, on_closed);
	uv_close((uv_handle_t *)&f->scan, on_closed);
}

/* The daemon stops: a snapshot pending is written now, as far as it got. */
static void fl_shutdown(struct sink *s)
{
	struct daemon *d = s->ctx;
	struct flight *f = d->flight;

	if (f && f->pend.on && !f->busy && file_mkdir(f->dir) >= 0)
		fl_take(f); /* the loop's last run writes it */
}

const struct sink_ops flight_sink_ops = {
	.name = "flight", .record = fl_record, .record_run = fl_record_run, .loss = fl_loss, .raise = fl_raise,
	.request = fl_request, .closed = fl_closed, .shutdown = fl_shutdown,
};
