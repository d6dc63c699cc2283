/* daemon/sink/flight.c - the flight recorder (flight.h).
 *
 * The buffer is one allocation of flight.size bytes, cut into slots of one
 * chunk each. Records go into the open slot as a segment chunk body
 * (proto/segment.h): WRITER, META and STREAM records for every writer and
 * stream the chunk holds, then SPAN records of ring records verbatim with
 * their ring positions. So each chunk decodes alone, and a snapshot is the
 * slots of its window copied behind a segment header, with no re-encoding:
 * the cost of that is the descriptions repeated once per chunk, a few
 * hundred bytes per writer per MiB. A full slot is sealed (header, CRC),
 * and the next one, the oldest, is overwritten: its events are counted,
 * with their time, so that a snapshot starting after them says how many
 * it misses. A slot a snapshot is writing is pinned; reaching it, records
 * are dropped and counted instead of overwriting it.
 *
 * Everything runs on the loop thread but the file's write (snapshot.c, on
 * a libuv worker).
 */
#define _GNU_SOURCE
#include "daemon.h"
#include "log.h"
#include "clock.h"
#include "ingest/client.h"
#include "ingest/registry.h"
#include "sink/flight.h"
#include "sink/snapshot.h"
#include "store/file.h"

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

#define FL_CHUNK_MAX  (1u << 20) /* a slot; smaller for a small buffer */
#define FL_SLOTS_MIN  8u
#define FL_SCAN_MS    20         /* how often rings' trigger counts are read */
#define FL_WAITERS    16         /* `ringlog snapshot`s answered by one snapshot */
#define FL_REASON_MAX 200

struct fl_slot {
	uint64_t no;         /* sealing order from 1; 0: empty */
	uint32_t events;
	uint32_t len;        /* bytes to write: header, body, padding */
	uint64_t first_real, last_real;
	unsigned pinned;     /* a snapshot is writing it */
};

/* What the buffer overwrote: events and the newest time among them, per
 * slot overwritten, newest last (as many as there are slots). */
struct fl_over {
	uint64_t last_real;
	uint64_t events;
};

struct fl_pending {
	bool on;
	uint64_t first_real, last_real; /* first and last trigger */
	uint64_t first_mono, due_mono;
	char reasons[RINGLOG_SEG_SNAP_REASONS];
	uint32_t len, n;
	uint64_t waiters[FL_WAITERS]; /* client seq of `ringlog snapshot`s */
	unsigned nwaiters;
};

struct flight {
	struct daemon *d;
	uint8_t *mem;
	size_t size, chunk;
	unsigned nslots;
	struct fl_slot *slots;
	unsigned open;       /* slot being filled */
	uint32_t len;        /* its body bytes */
	uint32_t events;
	uint64_t lost;       /* events its LOSS records count */
	uint64_t ts_min[2], ts_max[2]; /* its raw clocks: [0] monotonic, [1] TSC */
	uint64_t gen;        /* its number: descriptions are per chunk */
	uint64_t seal_no;
	size_t span_off;     /* open SPAN in the body, or SIZE_MAX */
	uint32_t span_stream;
	uint64_t span_next;  /* ring position it continues at */
	/* described in chunk gen: by writer id (with the metadata events
	 * described + 1) and by stream id */
	uint64_t *w_gen;
	uint32_t *w_nev;
	uint32_t nw, nw2;
	uint64_t *s_gen;
	uint32_t ns;
	uint32_t *trig_seen; /* by stream id: ring trigger_count acted on,
	                      * plus 1 (0: not looked at yet) */
	uint32_t ntrig;

	struct fl_over *over;
	unsigned over_next;

	uint64_t events_in, bytes_in, memory_only; /* since start */
	uint64_t overwritten, dropped;
	uint64_t dropped_since;  /* not yet reported in a snapshot */

	struct fl_pending pend;
	uint64_t *taken_at;      /* CLOCK_MONOTONIC of the last max_snapshots */
	unsigned taken_next;
	uint64_t triggers, coalesced, refused, written, failed;
	uint64_t refused_logged; /* CLOCK_MONOTONIC of the last refusal logged */
	char last_reason[FL_REASON_MAX];
	char last_path[RINGLOG_CONFIG_PATH_MAX + 48];
	char last_error[RINGLOG_CONFIG_PATH_MAX + 160];
	uint64_t last_write_ns, last_bytes;
	char dir[RINGLOG_CONFIG_PATH_MAX + 16];
	unsigned snaps;
	uint64_t snap_bytes;

	uv_timer_t due, scan;
	uv_work_t work;
	struct snap_job job;
	struct fl_pending writing; /* the one being written */
	unsigned *pinned;
	unsigned npinned;
	uint8_t *lead;           /* the LOSS chunk opening it, or NULL */
	bool busy;
	bool closing;
	unsigned handles;        /* timers not closed yet */
};

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

/* Seal the open slot (when it holds anything): the chunk header as a
 * segment's, padding zeroed, so that it is written out as it is. */
static void seal(struct flight *f)
{
	struct fl_slot *s = &f->slots[f->open];
	struct ringlog_chunk_hdr *h = slot_hdr(f, f->open);
	uint64_t lo = UINT64_MAX, hi = 0;
	size_t total;

	if (!f->len)
		return;
	for (unsigned k = 0; k < 2; k++) {
		uint32_t clk = k ? RINGLOG_RING_CLOCK_TSC : 0;

		if (f->ts_min[k] > f->ts_max[k])
			continue;
		if (clock_real_ns(f->d, clk, f->ts_min[k]) < lo)
			lo = clock_real_ns(f->d, clk, f->ts_min[k]);
		if (clock_real_ns(f->d, clk, f->ts_max[k]) > hi)
			hi = clock_real_ns(f->d, clk, f->ts_max[k]);
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

/* Seal and move to the next slot, overwriting the oldest: false when a
 * snapshot still writes it (the caller drops and counts). */
static bool advance(struct flight *f)
{
	unsigned next = (f->open + 1) % f->nslots;
	struct fl_slot *s = &f->slots[next];

	if (s->pinned)
		return false;
	seal(f);
	if (f->len && s->no) {
		f->over[f->over_next] = (struct fl_over){ .last_real = s->last_real, .events = s->events };
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
	uint8_t *p = slot_body(f, f->open) + f->len;

	if (f->len + len > body_cap(f))
		return false;
	memcpy(p, &h, sizeof(h));
	memcpy(p + sizeof(h), a, alen);
	if (blen)
		memcpy(p + sizeof(h) + alen, b, blen);
	memset(p + sizeof(h) + alen + blen, 0, len - sizeof(h) - alen - blen);
	f->len += (uint32_t)len;
	f->span_off = SIZE_MAX; /* anything after a SPAN ends it */
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
		if (!len || !advance(f)) {
			f->gen++; /* what it marked described is not in the chunk */
			return false;
		}
	}
	return false;
}

static void trigger(struct flight *f, const char *reason, uint64_t waiter);

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

static void fl_record(struct sink *s, const struct sink_record *rec)
{
	struct flight *f = ((struct daemon *)s->ctx)->flight;
	struct ring *r = rec->r;
	uint64_t total = ringlog_rec_total(rec->len), pos = r->cons.rec_end - total, ts;
	struct ringlog_rec_hdr rh = { .len = rec->len, .type = rec->type, .aux = rec->id };
	/* the open SPAN goes on: same ring, next position, event described */
	bool extend = f->span_off != SIZE_MAX && f->span_stream == r->id && f->span_next == pos &&
		      rec->id < f->w_nev[r->c->id];
	size_t need = total + (extend ? 0 : sizeof(struct ringlog_seg_rec) + sizeof(uint64_t));
	uint8_t *p;
	unsigned k = r->clock & RINGLOG_RING_CLOCK_TSC ? 1 : 0;
	struct provider *pv = rec->e->provider < r->c->nprov ? r->c->prov[rec->e->provider] : NULL;

	f->events_in++;
	f->bytes_in += total;
	if (pv && !(pv->disk_kw[rec->e->level & 7] & (rec->e->keyword ? rec->e->keyword : ~0ull)))
		f->memory_only++;
	if (extend && f->len + total > body_cap(f))
		extend = false, need += sizeof(struct ringlog_seg_rec) + sizeof(uint64_t);
	if (!extend) {
		struct ringlog_seg_rec h = { .type = RINGLOG_SEG_REC_SPAN, .flags = RINGLOG_SPAN_POS,
					     .id = r->id,
					     .len = sizeof(struct ringlog_seg_rec) + sizeof(uint64_t) };

		if (!ready(f, r, need)) {
			f->dropped++;
			f->dropped_since++;
			return;
		}
		p = slot_body(f, f->open) + f->len;
		memcpy(p, &h, sizeof(h));
		memcpy(p + sizeof(h), &pos, sizeof(pos));
		f->span_off = f->len;
		f->span_stream = r->id;
		f->len += h.len;
	}
	/* the record as the ring held it: header, payload, padding to 8 */
	p = slot_body(f, f->open) + f->len;
	memcpy(p, &rh, sizeof(rh));
	memcpy(p + sizeof(rh), rec->payload, rec->len);
	memset(p + sizeof(rh) + rec->len, 0, total - sizeof(rh) - rec->len);
	f->len += (uint32_t)total;
	((struct ringlog_seg_rec *)(void *)(slot_body(f, f->open) + f->span_off))->len += (uint32_t)total;
	f->span_next = pos + total;
	f->events++;
	memcpy(&ts, rec->payload, sizeof(ts));
	if (ts < f->ts_min[k])
		f->ts_min[k] = ts;
	if (ts > f->ts_max[k])
		f->ts_max[k] = ts;
	if (f->d->cfg.flight.trigger_level && rec->e->level >= 1 &&
	    rec->e->level <= f->d->cfg.flight.trigger_level) {
		const char *prov = ringlog_meta_provider(&r->c->meta, rec->e->provider);

		if (wants_trigger(f, prov)) {
			char why[FL_REASON_MAX];

			snprintf(why, sizeof(why), "event %s/%s at level %u from pid %u (%s)",
				 prov ? prov : "?", rec->e->name, rec->e->level, r->c->pid, r->c->comm);
			trigger(f, why, 0);
		}
	}
}

/* A ring overflow, in its stream, so that a snapshot has no silent gap. */
static void fl_loss(struct sink *s, struct ring *r, const struct ringlog_seg_loss *l)
{
	struct flight *f = ((struct daemon *)s->ctx)->flight;

	if (!ready(f, r, ringlog_align_up(sizeof(struct ringlog_seg_rec) + sizeof(*l), 8)) ||
	    !put(f, RINGLOG_SEG_REC_LOSS, r->id, 0, l, sizeof(*l), NULL, 0)) {
		f->dropped += l->records;
		f->dropped_since += l->records;
		return;
	}
	f->lost += l->records;
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

/* ------------------------------------------------------------------------
 * Triggers
 */

static bool take_reason(struct fl_pending *p, const char *reason)
{
	size_t n = strnlen(reason, FL_REASON_MAX - 1);

	if (p->len + n + 1 > sizeof(p->reasons))
		return false; /* the first ones are kept; the count says more came */
	memcpy(p->reasons + p->len, reason, n);
	p->reasons[p->len + n] = '\0';
	p->len += (uint32_t)n + 1;
	p->n++;
	return true;
}

static void reply_error(struct flight *f, uint64_t waiter, const char *msg)
{
	for (struct client *c = f->d->clients; waiter && c; c = c->next)
		if (c->seq == waiter && !c->gone)
			tool_error(c, msg);
}

static void on_due(uv_timer_t *t);

static void trigger(struct flight *f, const char *reason, uint64_t waiter)
{
	const struct ringlog_config_flight *cf = &f->d->cfg.flight;
	uint64_t now = d_now(CLOCK_MONOTONIC), real = d_now(CLOCK_REALTIME);
	struct fl_pending *p = &f->pend;

	f->triggers++;
	snprintf(f->last_reason, sizeof(f->last_reason), "%s", reason);
	if (p->on) {
		/* Overlapping windows: one snapshot, every reason. It waits
		 * for post after the last trigger, but never beyond pre + post
		 * after the first, or a steady stream would hold it forever. */
		uint64_t due = now + cf->post_ns, cap = p->first_mono + cf->post_ns + cf->pre_ns;

		take_reason(p, reason);
		p->last_real = real;
		if (waiter && p->nwaiters < FL_WAITERS)
			p->waiters[p->nwaiters++] = waiter;
		if (due > cap)
			due = cap;
		if (due > p->due_mono)
			p->due_mono = due;
		f->coalesced++;
		uv_timer_start(&f->due, on_due, (p->due_mono - now) / 1000000, 0);
		return;
	}
	/* max_snapshots: over the last period, counting those begun */
	{
		uint64_t oldest = f->taken_at[f->taken_next];

		if (oldest && now - oldest < cf->max_snapshots_per_ns) {
			char msg[FL_REASON_MAX + 160];

			f->refused++;
			snprintf(msg, sizeof(msg), "snapshot refused: flight.max_snapshots allows %u per "
				 "%llu s and %u were taken (trigger: %s)", cf->max_snapshots,
				 (unsigned long long)(cf->max_snapshots_per_ns / 1000000000ull),
				 cf->max_snapshots, reason);
			/* a storm of error events must not become a storm of
			 * log lines: one a minute, the count in status */
			if (!f->refused_logged || now - f->refused_logged >= 60000000000ull) {
				d_log(LOG_WARNING, "flight recorder: %s (%llu refused so far)", msg,
				      (unsigned long long)f->refused);
				f->refused_logged = now;
			}
			reply_error(f, waiter, msg);
			return;
		}
		f->taken_at[f->taken_next] = now;
		f->taken_next = (f->taken_next + 1) % cf->max_snapshots;
	}
	memset(p, 0, sizeof(*p));
	p->on = true;
	p->first_real = p->last_real = real;
	p->first_mono = now;
	p->due_mono = now + cf->post_ns;
	take_reason(p, reason);
	if (waiter)
		p->waiters[p->nwaiters++] = waiter;
	d_log(LOG_NOTICE, "flight recorder: snapshot triggered (%s); written in %llu ms", reason,
	      (unsigned long long)(cf->post_ns / 1000000));
	uv_timer_start(&f->due, on_due, cf->post_ns / 1000000, 0);
}

/* A reason from shared memory: printable text only, whatever the writer
 * put there (or tore, racing with itself). */
static void ring_reason(const struct ring *r, char *out, size_t len)
{
	char raw[RINGLOG_RING_TRIGGER_REASON];
	size_t n = 0, o;

	memcpy(raw, (const void *)r->cons.hdr->trigger_reason, sizeof(raw));
	o = (size_t)snprintf(out, len, "ringlog_trigger() in pid %u (%s): ", r->c->pid, r->c->comm);
	if (o >= len)
		o = len - 1;
	for (; n < sizeof(raw) - 1 && raw[n] && o + 1 < len; n++)
		out[o++] = (unsigned char)raw[n] >= 0x20 && raw[n] != 0x7f ? raw[n] : '?';
	out[o] = '\0';
	if (!n)
		snprintf(out + o, len - o, "(no reason)");
}

/* Has ringlog_trigger() been called in r since we last looked? */
static void scan_ring(struct flight *f, struct ring *r)
{
	uint32_t n;

	if (r->dead || !r->mem || ringlog_grow(&f->trig_seen, &f->ntrig, r->id, sizeof(uint32_t)))
		return;
	/* First look: what a daemon before us acted on already (ring.h). */
	if (!f->trig_seen[r->id])
		f->trig_seen[r->id] = __atomic_load_n(&r->cons.hdr->trigger_seen, __ATOMIC_RELAXED) + 1u;
	/* Pairs with the release add in ringlog_trigger() (client/trigger.c). */
	n = __atomic_load_n(&r->cons.hdr->trigger_count, __ATOMIC_ACQUIRE);
	if (n + 1u != f->trig_seen[r->id]) {
		char why[FL_REASON_MAX];

		f->trig_seen[r->id] = n + 1u;
		__atomic_store_n(&r->cons.hdr->trigger_seen, n, __ATOMIC_RELAXED);
		ring_reason(r, why, sizeof(why));
		trigger(f, why, 0);
	}
}

static void on_scan(uv_timer_t *t)
{
	struct flight *f = t->data;

	for (struct client *c = f->d->clients; c; c = c->next)
		for (struct ring *r = c->rings; r; r = r->next)
			scan_ring(f, r);
}

/* A writer's connection closed: a trigger it set just before (a crash
 * handler) is read now, while its rings are mapped; and a writer that went
 * without running its exit handlers crashed or was killed. */
static void fl_writer_gone(struct sink *s, struct client *c)
{
	struct flight *f = ((struct daemon *)s->ctx)->flight;
	unsigned active = 0;

	/* the daemon closing its connections is not the writer going */
	if (!f || f->d->stopping)
		return;
	for (struct ring *r = c->rings; r; r = r->next) {
		struct ringlog_ring_hdr *h = r->cons.hdr;

		scan_ring(f, r);
		if (r->dead || !r->mem || !(h->compat_flags & RINGLOG_RING_MARKS_EXIT))
			continue;
		if (__atomic_load_n(&h->state, __ATOMIC_ACQUIRE) != RINGLOG_RING_FINISHED &&
		    !(__atomic_load_n(&h->exit_flags, __ATOMIC_ACQUIRE) & RINGLOG_RING_EXITING))
			active++;
	}
	if (active && !c->refused) {
		char why[FL_REASON_MAX];

		snprintf(why, sizeof(why), "writer pid %u (%s) went away with %u ring%s registered "
			 "(crashed or killed)", c->pid, c->comm, active, active == 1 ? "" : "s");
		trigger(f, why, 0);
	}
}

/* ------------------------------------------------------------------------
 * Snapshots
 */

static void trim_dir(struct flight *f)
{
	char oldest[RINGLOG_CONFIG_PATH_MAX + 48];
	unsigned n;
	uint64_t bytes;

	/* flight.max_disk: the oldest go; the newest always stays */
	while (snap_scan(f->dir, false, &n, &bytes, oldest, sizeof(oldest)) == 0 && n > 1 &&
	       bytes > f->d->cfg.flight.max_disk) {
		d_log(LOG_INFO, "flight recorder: deleted %s (snapshots over flight.max_disk)", oldest);
		if (file_remove(oldest) < 0)
			break;
	}
	snap_scan(f->dir, false, &f->snaps, &f->snap_bytes, NULL, 0);
}

static void free_flight(struct flight *f);

static void snap_work(uv_work_t *w)
{
	struct flight *f = w->data;

	snap_write(&f->job);
}

static void reply_written(struct flight *f)
{
	const struct fl_pending *p = &f->writing;
	json_t *reasons = json_array(), *j;
	char *s;

	for (uint32_t o = 0; o < p->len; o += (uint32_t)strlen(p->reasons + o) + 1)
		json_array_append_new(reasons, json_string(p->reasons + o));
	j = json_pack("{s:s,s:o,s:I,s:I,s:I}", "path", f->job.path, "reasons", reasons, "events",
		      (json_int_t)f->job.hdr->events, "bytes", (json_int_t)f->job.bytes,
		      "overwritten", (json_int_t)f->job.hdr->lost);
	s = j ? json_dumps(j, JSON_COMPACT) : NULL;
	for (unsigned i = 0; s && i < p->nwaiters; i++)
		for (struct client *c = f->d->clients; c; c = c->next)
			if (c->seq == p->waiters[i] && !c->gone)
				client_send(c, RINGLOG_CTL_SNAPSHOT, s, (uint32_t)strlen(s));
	free(s);
	json_decref(j);
}

static void snap_after(uv_work_t *w, int status)
{
	struct flight *f = w->data;
	struct snap_job *j = &f->job;

	(void)status;
	for (unsigned i = 0; i < f->npinned; i++)
		f->slots[f->pinned[i]].pinned--;
	if (j->err) {
		f->failed++;
		snprintf(f->last_error, sizeof(f->last_error), "cannot %s %s: %s", j->what, j->tmp,
			 strerror(-j->err));
		d_log(LOG_ERR, "flight recorder: snapshot not written: %s", f->last_error);
		for (unsigned i = 0; i < f->writing.nwaiters; i++) {
			char msg[sizeof(f->last_error) + 32];

			snprintf(msg, sizeof(msg), "snapshot not written: %s", f->last_error);
			reply_error(f, f->writing.waiters[i], msg);
		}
	} else {
		f->written++;
		f->last_write_ns = j->ns;
		f->last_bytes = j->bytes;
		snprintf(f->last_path, sizeof(f->last_path), "%s", j->path);
		d_log(LOG_NOTICE, "flight recorder: snapshot %s written: %llu events, %llu bytes in "
		      "%.1f ms", j->path, (unsigned long long)j->hdr->events,
		      (unsigned long long)j->bytes, (double)j->ns / 1e6);
		reply_written(f);
		trim_dir(f);
	}
	file_aligned_free(j->hdr);
	file_aligned_free(f->lead);
	free(j->parts);
	j->hdr = NULL;
	j->parts = NULL;
	f->lead = NULL;
	f->busy = false;
	if (f->closing) {
		if (!f->handles)
			free_flight(f);
		return;
	}
	if (f->pend.on && !uv_is_active((uv_handle_t *)&f->due))
		uv_timer_start(&f->due, on_due, 0, 0);
}

/* The chunk that opens a snapshot missing overwritten events: one LOSS
 * record with the count, at the time of the newest of them. */
static struct snap_part lead_loss(uint64_t events, uint64_t at_real)
{
	uint8_t *m = file_aligned(RINGLOG_SEG_ALIGN);
	struct ringlog_chunk_hdr *h = (struct ringlog_chunk_hdr *)(void *)m;
	struct ringlog_seg_rec r = { .len = sizeof(r) + sizeof(struct ringlog_seg_loss),
				     .type = RINGLOG_SEG_REC_LOSS };
	struct ringlog_seg_loss l = { .records = events, .reason = RINGLOG_LOSS_OVERWRITTEN };

	if (!m)
		return (struct snap_part){ 0 };
	memcpy(m + sizeof(*h), &r, sizeof(r));
	memcpy(m + sizeof(*h) + sizeof(r), &l, sizeof(l));
	h->magic = RINGLOG_CHUNK_MAGIC;
	h->body_len = r.len;
	h->lost = events;
	h->seq = 3;
	h->first_real_ns = h->last_real_ns = at_real;
	h->crc = ringlog_chunk_crc(h, m + sizeof(*h));
	return (struct snap_part){ m, RINGLOG_SEG_ALIGN };
}

static void take(struct flight *f)
{
	const struct ringlog_config_flight *cf = &f->d->cfg.flight;
	struct fl_pending *p = &f->pend;
	uint64_t from = p->first_real > cf->pre_ns ? p->first_real - cf->pre_ns : 0;
	uint64_t to = p->last_real + cf->post_ns, lost = 0, lost_at = 0, events = 0;
	uint64_t first = 0, last = 0;
	struct snap_job *j = &f->job;
	struct ringlog_seg_hdr *h;
	struct ringlog_seg_snap sn = { 0 };
	unsigned n = 0;

	advance(f); /* what came until now is in the snapshot */
	for (unsigned i = 0; i < f->nslots; i++)
		if (f->over[i].events && f->over[i].last_real >= from) {
			lost += f->over[i].events;
			if (f->over[i].last_real > lost_at)
				lost_at = f->over[i].last_real;
		}
	lost += f->dropped_since;
	memset(j, 0, sizeof(*j));
	j->parts = calloc(f->nslots + 1, sizeof(*j->parts));
	j->hdr = file_aligned(RINGLOG_SEG_HEADER_SIZE);
	if (!f->pinned)
		f->pinned = calloc(f->nslots, sizeof(*f->pinned));
	if (!j->parts || !j->hdr || !f->pinned) {
		free(j->parts);
		file_aligned_free(j->hdr);
		j->hdr = NULL;
		j->parts = NULL;
		f->failed++;
		snprintf(f->last_error, sizeof(f->last_error), "out of memory");
		return;
	}
	if (lost) {
		j->parts[0] = lead_loss(lost, lost_at ? lost_at : from);
		if ((f->lead = (uint8_t *)j->parts[0].mem))
			n++;
	}
	f->npinned = 0;
	/* oldest first: the slot after the open one, round */
	for (unsigned k = 1; k <= f->nslots; k++) {
		unsigned i = (f->open + k) % f->nslots;
		struct fl_slot *s = &f->slots[i];

		if (!s->no || s->last_real < from || s->first_real > to)
			continue;
		s->pinned++;
		f->pinned[f->npinned++] = i;
		j->parts[n++] = (struct snap_part){ f->mem + (size_t)i * f->chunk, s->len };
		events += s->events;
		if (!first || s->first_real < first)
			first = s->first_real;
		if (s->last_real > last)
			last = s->last_real;
	}
	j->nparts = n;
	h = j->hdr;
	h->magic = RINGLOG_SEG_MAGIC;
	h->version = RINGLOG_SEG_VERSION;
	h->header_size = RINGLOG_SEG_HEADER_SIZE;
	h->compat_flags = RINGLOG_SEG_SNAPSHOT;
	h->state = RINGLOG_SEG_CLOSED;
	/* the first trigger's wall clock: unique enough, and sorted by time */
	h->seq = p->first_real;
	h->created_real_ns = d_now(CLOCK_REALTIME);
	memcpy(h->boot_id, f->d->boot_id, 16);
	memcpy(h->host, f->d->host, sizeof(h->host));
	h->tsc_ref = f->d->clock.tsc_ref;
	h->mono_ref = f->d->clock.mono_ref;
	h->real_ref = f->d->clock.real_ref;
	h->tsc_hz = f->d->clock.tsc_hz;
	h->first_real_ns = first;
	h->last_real_ns = last;
	h->events = events;
	h->chunks = n;
	h->lost = lost;
	sn.nreasons = p->n;
	sn.trigger_real_ns = p->first_real;
	sn.from_real_ns = from;
	sn.to_real_ns = to;
	sn.overwritten = lost;
	sn.reasons_len = p->len;
	memcpy(sn.reasons, p->reasons, p->len);
	sn.crc = ringlog_seg_snap_crc(&sn);
	memcpy((uint8_t *)h + RINGLOG_SEG_SNAP_OFF, &sn, sizeof(sn));
	snprintf(j->path, sizeof(j->path), "%s/%016llx.rlseg", f->dir, (unsigned long long)h->seq);
	snprintf(j->tmp, sizeof(j->tmp), "%s/.%016llx.rlseg.tmp", f->dir, (unsigned long long)h->seq);
	f->writing = *p;
	f->dropped_since = 0;
	p->on = false;
	f->busy = true;
	f->work.data = f;
	if (uv_queue_work(f->d->loop, &f->work, snap_work, snap_after) < 0) {
		j->err = -EAGAIN;
		j->what = "queue";
		snap_after(&f->work, 0);
	}
}

static void on_due(uv_timer_t *t)
{
	struct flight *f = t->data;

	if (!f->pend.on)
		return;
	if (f->busy) { /* one at a time: the next waits for the one writing */
		uv_timer_start(t, on_due, 50, 0);
		return;
	}
	if (file_mkdir(f->dir) < 0) {
		snprintf(f->last_error, sizeof(f->last_error), "cannot create %s", f->dir);
		d_log(LOG_ERR, "flight recorder: %s: snapshot not written", f->last_error);
		f->failed++;
		for (unsigned i = 0; i < f->pend.nwaiters; i++)
			reply_error(f, f->pend.waiters[i], f->last_error);
		f->pend.on = false;
		return;
	}
	take(f);
}

int flight_request(struct client *c, const uint8_t *p, uint32_t len)
{
	struct flight *f = c->d->flight;
	json_t *j = json_loadb((const char *)p, len, 0, NULL), *r;
	char why[FL_REASON_MAX + 64];
	const char *reason = NULL;

	c->tool = true;
	if (!f) {
		json_decref(j);
		tool_error(c, "the flight recorder is off: set flight.size in ringlogd.json "
			      "(e.g. \"256M\") and reload");
		return 0;
	}
	r = json_is_object(j) ? json_object_get(j, "reason") : NULL;
	if (!json_is_object(j) || (r && (!json_is_string(r) || json_string_length(r) > FL_REASON_MAX - 40 ||
					 memchr(json_string_value(r), '\0', json_string_length(r))))) {
		json_decref(j);
		tool_error(c, "SNAPSHOT: expected {\"reason\": \"text of at most 160 bytes\"}");
		return 0;
	}
	reason = r ? json_string_value(r) : NULL;
	snprintf(why, sizeof(why), "ringlog snapshot by uid %u%s%s", c->uid, reason ? ": " : "",
		 reason ? reason : "");
	trigger(f, why, c->seq);
	json_decref(j);
	return 0;
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

static void free_flight(struct flight *f)
{
	file_aligned_free(f->mem);
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
		free_flight(f);
}

int flight_start(struct daemon *d)
{
	const struct ringlog_config_flight *cf = &d->cfg.flight;
	struct flight *f;

	d->flight_sink.want_records = false;
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
	f->size = cf->size;
	f->chunk = FL_CHUNK_MAX;
	while (f->chunk > 64u * 1024 && f->size / f->chunk < FL_SLOTS_MIN * 4)
		f->chunk /= 2;
	f->nslots = (unsigned)(f->size / f->chunk);
	/* Allocated and touched once, here: the memory status shows is the
	 * memory the daemon holds from now on. */
	f->mem = file_aligned((size_t)f->nslots * f->chunk);
	f->slots = calloc(f->nslots, sizeof(*f->slots));
	f->over = calloc(f->nslots, sizeof(*f->over));
	f->taken_at = calloc(10000, sizeof(*f->taken_at));
	if (!f->mem || !f->slots || !f->over || !f->taken_at) {
		d_log(LOG_ERR, "flight recorder: cannot allocate %llu bytes: it is off",
		      (unsigned long long)f->size);
		free_flight(f);
		return -ENOMEM;
	}
	f->open = 0;
	open_reset(f);
	uv_timer_init(d->loop, &f->due);
	uv_timer_init(d->loop, &f->scan);
	f->due.data = f->scan.data = f;
	f->handles = 2;
	uv_timer_start(&f->scan, on_scan, FL_SCAN_MS, FL_SCAN_MS);
	d->flight = f;
	d_log(LOG_NOTICE, "flight recorder: %llu bytes in %u chunks of %zu KiB, snapshots of "
	      "%llu s before and %llu s after a trigger", (unsigned long long)f->size, f->nslots,
	      f->chunk >> 10, (unsigned long long)(cf->pre_ns / 1000000000ull),
	      (unsigned long long)(cf->post_ns / 1000000000ull));
configured:
	f = d->flight;
	if (cf->snapshot_dir[0])
		snprintf(f->dir, sizeof(f->dir), "%s", cf->snapshot_dir);
	else
		snprintf(f->dir, sizeof(f->dir), "%s/snapshots", d->cfg.storage_dir);
	snap_scan(f->dir, !f->busy, &f->snaps, &f->snap_bytes, NULL, 0);
	f->taken_next %= cf->max_snapshots;
	d->flight_sink.want_records = true;
	return 0;
}

void flight_stop(struct daemon *d)
{
	struct flight *f = d->flight;

	if (!f)
		return;
	d->flight_sink.want_records = false;
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
		take(f); /* the loop's last run writes it */
}

const struct sink_ops flight_sink_ops = {
	.name = "flight", .record = fl_record, .loss = fl_loss, .raise = fl_raise,
	.writer_gone = fl_writer_gone, .shutdown = fl_shutdown,
};
