/* daemon/ingest/drain.c - move validated records from every ring into the
 * store (store_event()), which packs them and publishes them to the sinks.
 *
 * Runs on a timer whose interval follows the flow (on_drain_timer): 1 ms
 * while data flows densely, longer while it trickles or stops, and at once
 * when a producer passes its high-water mark. The rings absorb what
 * arrives in between, so a ring is sized by rate x worst drain delay. Each record is validated by the consumer
 * (proto/ringbuf.c) and here against the writer's metadata: an event id
 * that the metadata does not define, or a payload shorter than its fixed
 * fields, detaches the ring as corrupt.
 */
#define _GNU_SOURCE
#include "daemon.h"
#include "log.h"
#include "count.h"
#include "ingest/bells.h"
#include "ingest/drain.h"
#include "ingest/pace.h"
#include "ingest/registry.h"
#include "ingest/transport.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct drain_ctx {
	struct daemon *d;
	struct store *st;
	struct ring *r;
	const char *why;
	/* A pass sees long runs of one event type: what the last record's
	 * type and id resolved to is kept, so that the next of the same kind
	 * skips the metadata lookups (a chain of dependent loads per record),
	 * and its counts are added up here and given to the client and the
	 * provider when the kind changes or the pass ends (count_flush()). */
	uint32_t key;                    /* type << 16 | id; 0: none */
	uint32_t need;                   /* the payload's least length */
	const struct ringlog_event_desc *e;
	struct provider *p;
	bool memory;                     /* e is memory-only (memory_only()):
	                                  * enablement changes between passes */
	uint64_t stored;                 /* records of e not yet counted */
	uint64_t last_ts;                /* the newest event's timestamp */
};

/* An event's timestamp: the first word of its payload (proto/event.h),
 * which the checks before have found there. */
static uint64_t event_ts(const uint8_t *payload)
{
	uint64_t ts;

	memcpy(&ts, payload, sizeof(ts));
	return ts;
}

/* Enabled only by a memory-only sink (flight_level): handed to the sinks,
 * never written, not counted as stored. */
static bool memory_only(const struct provider *p, const struct ringlog_event_desc *e)
{
	uint64_t want = e->keyword ? e->keyword : ~0ull;

	return !(p->disk_kw[e->level & 7] & want) && (p->kw[e->level & 7] & want);
}

static void count_flush(struct drain_ctx *x)
{
	if (!x->stored)
		return;
	x->r->c->stored += x->stored;
	if (x->p)
		x->p->stored += x->stored;
	x->stored = 0;
}

static int on_record(void *arg, uint16_t type, uint16_t aux, const uint8_t *payload,
		     uint32_t len)
{
	struct drain_ctx *x = arg;
	struct ring *r = x->r;
	struct client *c = r->c;
	const struct ringlog_event_desc *e = NULL;
	struct provider *p = NULL;
	bool memory;
	int err;

	if (((uint32_t)type << 16 | aux) == x->key) {
		/* the same kind as the last record: checked against the same
		 * description */
		if (len < x->need) {
			x->why = "event payload shorter than its fields";
			return -EBADMSG;
		}
		if (x->memory) {
			x->last_ts = event_ts(payload);
			return store_pass(x->st, r, type, aux, payload, len, x->e);
		}
		/* STORE_FULL: no room now, the record stays in the ring */
		if ((err = store_event(x->st, r, type, aux, payload, len, x->e)) != 0)
			return err;
		x->last_ts = event_ts(payload);
		x->stored++;
		return 0;
	}
	if (type == RINGLOG_REC_EVENT || type == RINGLOG_REC_EVENT_ACT) {
		uint32_t head = RINGLOG_EVENT_HDR_SIZE +
				(type == RINGLOG_REC_EVENT_ACT ? RINGLOG_ACTIVITY_SIZE : 0);

		e = ringlog_meta_event(&c->meta, aux);
		if (!e) {
			reg_meta_sync(c);
			e = ringlog_meta_event(&c->meta, aux);
		}
		if (!e) {
			x->why = "event id not defined in the metadata region";
			return -EBADMSG;
		}
		if (len < head + e->min_len) {
			x->why = "event payload shorter than its fields";
			return -EBADMSG;
		}
		p = e->provider < c->nprov ? c->prov[e->provider] : NULL;
		memory = p && memory_only(p, e);
		if (memory)
			store_pass(x->st, r, type, aux, payload, len, e); /* 0 */
		/* STORE_FULL: no room now, the record stays in the ring */
		else if ((err = store_event(x->st, r, type, aux, payload, len, e)) != 0)
			return err;
		count_flush(x);
		x->last_ts = event_ts(payload);
		x->key = (uint32_t)type << 16 | aux;
		x->need = head + e->min_len;
		x->e = e;
		x->p = p;
		x->memory = memory;
		x->stored = !memory;
		return 0;
	}
	if (type != RINGLOG_REC_LOSS) {
		x->why = "record type not defined by proto/event.h";
		return -EBADMSG;
	}
	/* A LOSS record (a validated private copy of the long form, len its
	 * own length; proto/ringbuf.h): in stream order, after the run before
	 * it. Its aux names the provider of every record in the gap (0: the
	 * program could not say); an id this writer never defined is ignored,
	 * not trusted. */
	struct ringlog_rec_loss_lvl ll; /* len bytes of it are the record */
	const struct ringlog_rec_loss_ext *l = &ll.x;

	memcpy(&ll, payload, sizeof(ll));
	if (aux && aux >= c->nprov)
		reg_meta_sync(c);
	p = aux && aux < c->nprov ? c->prov[aux] : NULL;
	struct ringlog_seg_loss sl = { .records = l->l.records, .bytes = l->l.bytes,
				       .reason = RINGLOG_LOSS_RING,
				       .provider = p ? aux : 0, .first_ts = l->first_ts };

	/* STORE_FULL: no room now, the record stays in the ring */
	if ((err = store_ring_loss(x->st, r, aux, &l->l, len, &sl)) != 0)
		return err;
	ringlog_count_add(&c->lost_ring, l->l.records);
	ringlog_count_add(&x->d->lost_ring, l->l.records);
	if (p)
		ringlog_count_add(&p->lost_ring, l->l.records);
	ovl_count_levels(x->d, r, p, ll.by_level);
	return 0;
}

/* A run of records of one kind (ringlog_cons_drain_runs()): the first
 * goes through on_record(), which resolves and checks the kind; the rest
 * share its header word, so they pass the same checks, and are packed in
 * one loop (store_event_run()), or, of a memory-only kind (never
 * written), handed to the sinks (store_pass_run()). Returns how many were
 * taken. */
static long on_run(void *arg, uint16_t type, uint16_t aux, const uint8_t *payload,
		   uint32_t len, uint32_t n)
{
	struct drain_ctx *x = arg;
	struct ringlog_consumer *k = &x->r->cons;
	size_t total = ringlog_rec_total(len);
	long took;
	int err;

	if ((err = on_record(x, type, aux, payload, len)) != 0)
		return err < 0 ? err : 0;
	if (n == 1)
		return 1;
	k->rec_end += total;
	if (x->memory) {
		store_pass_run(x->st, x->r, type, aux, payload + total, len, n - 1, x->e);
		x->last_ts = event_ts(payload + (n - 1) * total);
		return n;
	}
	took = store_event_run(x->st, x->r, type, aux, payload + total, len, n - 1, x->e);
	/* An error (only -EAGAIN today: no room) after the first was stored
	 * comes back on the next pass, at the first record not taken:
	 * returning it now would deliver the stored one again. */
	if (took < 0)
		took = 0;
	x->stored += (uint64_t)took;
	x->last_ts = event_ts(payload + (size_t)took * total);
	return 1 + took;
}

static void detach_corrupt(struct daemon *d, struct ring *r, const char *why)
{
	uint64_t pending = ringlog_cons_pending(&r->cons);

	d_log(LOG_WARNING, "client pid %u (%s): ring of thread %u is corrupt at position %llu: %s; detached",
	      r->c->pid, r->c->comm, r->tid, (unsigned long long)r->cons.bad_pos, why);
	r->c->lost_corrupt++;
	d->lost_corrupt++;
	/* The stream says where it broke; the count is unknown, the bytes are
	 * what was left. */
	store_loss(d->st, r, 1, pending, RINGLOG_LOSS_CORRUPT);
	reg_refuse(r->c, r->handle, "ring corrupt: %s", why);
	r->dead = true;
	ctl_unmap(r->mem, r->map_size);
	r->mem = NULL;
}

/* A ring nobody will write again (its thread finished, or its process is
 * gone) is finished here: loss the producer counted but never reported
 * in-stream is written now, so that stored + lost always adds up, and it
 * is released once the chunks holding its last records are written
 * (retire()). false: the ring goes on. */
static bool finish(struct daemon *d, struct ring *r)
{
	struct ringlog_rec_loss l;

	if (!ringlog_cons_done(&r->cons) && !(r->c->gone && ringlog_cons_pending(&r->cons) == 0))
		return false;
	l = ringlog_cons_pending_loss(&r->cons);
	/* by level when the ring kept it; a store with no room now (a slow
	 * disk, every chunk in flight) is asked again on a later pass, so
	 * that the count reaches the stream (it was dropped, uncounted) */
	if (l.records && ovl_exit_loss(d, r, &l) == STORE_FULL)
		return false;
	if (l.records) {
		ringlog_count_add(&r->c->lost_ring, l.records);
		ringlog_count_add(&d->lost_ring, l.records);
	}
	/* Seal at the end of this pass rather than hold a dead thread's ring
	 * for a flush interval; once per pass, not once per ring: a pool of
	 * 1,000 threads ending together would otherwise make 1,000 writes of
	 * a few records each, and hold up the pass that drains the others
	 * (their last events reached a tail ~150 ms late, bench-scale). */
	r->finishing = true;
	if (r->store.held)
		d->drain_seal = true;
	return true;
}

/* A ring with a bell may sleep while its writer lives; a writer gone has
 * its rings drained to the end on the timer, as before bells. */
static bool may_sleep(const struct ring *r)
{
	return bell_works(r->c, r) && !r->c->gone;
}

/* One pass over a live ring: its records into the store, then what the
 * pass found (a corrupt ring, a ring nobody writes any more) and its space
 * back (store_give_back()). Returns the bytes moved; *records: what
 * ringlog_cons_drain() returned (records delivered, or an error); *clock: for a ring
 * that may sleep, its clock before the pass read the producer's position
 * (pace_bell_quiet_ts()), else 0. */
static uint64_t pass(struct daemon *d, struct ring *r, long *records, uint64_t *clock)
{
	struct drain_ctx x = { .d = d, .st = d->st, .r = r };
	uint64_t before = r->cons.pos;
	long n;

	*clock = may_sleep(r) ? clock_stream_now(r->clock) : 0;
	n = ringlog_cons_drain_runs(&r->cons, r->cons.size, on_record, on_run, &x);
	count_flush(&x);
	if (x.last_ts) {
		r->last_ev_ts = x.last_ts;
		if (*clock && !r->clock_agrees)
			r->clock_agrees = pace_clock_agrees(clock_stream_now(r->clock), x.last_ts);
	}
	*records = n;
	store_events_end(d->st); /* before anything else writes to the chunk */
	if (n == -EBADMSG)
		detach_corrupt(d, r, x.why ? x.why : r->cons.why);
	else if (!finish(d, r))
		store_give_back(d->st, r);
	return r->cons.pos - before;
}

/* Releasing a ring unmaps it: ~15 us for one of 512 KiB, and ~50 when
 * ours was the last reference and the unmap freed its pages (a program
 * gone; a live one frees them itself once told RELEASED: registry.c). A
 * pool of 1,000 threads ending together had one pass spend ~50 ms in
 * munmap(), and the events that pass drained reached a tail that much
 * later (bench-scale's emit -> tail p99 went from 5 to 20 ms in one run in
 * three). So a pass releases at most RELEASE_PER_PASS rings, and the next
 * pass comes at once while any wait. */
#define RELEASE_PER_PASS 16

/* A ring drained for good or detached: its disk loss goes into its stream
 * before it goes (the chunk carrying the report then holds it), and it is
 * released once no chunk holds its records. */
static void retire(struct daemon *d, struct ring *r, unsigned *releases)
{
	if (r->store.lost_disk_pending && store_settle_loss(d->st, r) < 0)
		return;
	if ((r->c->gone || r->finishing) && !r->store.held) {
		if (r->mem) { /* a detached ring was unmapped already */
			if (!*releases) {
				d->drain_release_left = true;
				return;
			}
			--*releases;
		}
		/* the client frees a drained ring (a handed over one is the
		 * new ring's to give back) */
		if (!r->dead && !r->handed_over)
			store_give_back(d->st, r);
		reg_ring_release(r);
	}
}

/* From its last data to its last visit (0 when the data's time, read
 * after the pass's start, is the later). */
static uint64_t idle_ms(const struct ring *r)
{
	return r->last_visit_ms > r->last_data_ms ? r->last_visit_ms - r->last_data_ms : 0;
}

/* pace.h says when an idle ring is looked at again: a ring with a bell
 * sleeps instead, and is looked at when it rings (or a sweep comes). */
static bool skip_idle(struct daemon *d, struct ring *r, uint64_t now, bool sweep)
{
	if (d->drain_visit_all || r->bell_rung)
		return false;
	if (may_sleep(r))
		return !r->aw_pprev && !sweep; /* asleep (bells.c) */
	return now < r->last_visit_ms + pace_idle_wait(idle_ms(r), d->ntails != 0);
}

/* now is the pass's start (the loop's clock, which never runs ahead of
 * the real one). Whether a ring may sleep is judged on real times: when
 * it had data, the clock read after the visit, rounded up; when it had
 * none, the pass's start, before the visit. A pass may take milliseconds
 * to reach a ring, and the producer's gap is counted from its last event,
 * which that visit found: a quiet time counted from the pass's start
 * could end less than the gap after it (proto/bell.h). */
static void visited(struct ring *r, uint64_t now, bool had_data, uint64_t clock)
{
	bool sleeper = may_sleep(r);
	bool quiet = false;

	r->last_visit_ms = now;
	if (had_data || r->bell_rung || !r->last_data_ms)
		r->last_data_ms = sleeper ? (uv_hrtime() + 999999) / 1000000 : now;
	r->bell_rung = false;
	/* or at once, by the ring's own timestamps (pace.h) */
	if (sleeper && clock && r->clock_agrees)
		quiet = pace_bell_quiet_ts(clock, r->last_ev_ts,
					   pace_bell_ts(clock, r->c->bell_seen[r->bell_slot - 1]));
	/* Not with records left in it (a store with no room took none):
	 * those would wait for a sweep. */
	if (sleeper && !r->dead && !r->finishing && (quiet || pace_bell_sleeps(idle_ms(r))) &&
	    ringlog_cons_pending(&r->cons) == 0)
		bell_sleep(r);
	else
		bell_wake(r);
}

/* pace.h's, or a test's (RINGLOGD_TEST_BELL_SWEEP_MS: lifecycle.c) */
static uint64_t bell_sweep(const struct daemon *d)
{
	return d->bell_sweep_test_ms ? d->bell_sweep_test_ms : pace_bell_sweep(d->ntails != 0);
}

struct pass_sum {
	uint64_t moved, records;
	unsigned fill, releases;
};

/* One ring, in a pass: retire it, skip it, or drain it. */
static void visit(struct daemon *d, struct ring *r, uint64_t now, bool sweep, struct pass_sum *s)
{
	uint64_t got, clock;
	long n;

	if (r->dead || r->finishing) {
		retire(d, r, &s->releases); /* may free r */
		return;
	}
	if (skip_idle(d, r, now, sweep))
		return;
	d->drain_visits++;
	got = pass(d, r, &n, &clock);
	if (got) {
		uint64_t f = got * 2048 / r->cons.size;

		s->moved += got;
		s->records += n > 0 ? (uint64_t)n : 0;
		if (f > s->fill)
			s->fill = f > 1u << 20 ? 1u << 20 : (unsigned)f;
	}
	visited(r, now, got != 0, clock);
}

/* A pass gathers the rings it will visit, from every writer, before it
 * visits any (struct daemon's drain_list): with 1,000 writers in bursts,
 * a pass finds one or two rings awake per writer, and most of a visit's
 * time was spent waiting for lines one after another (bench-scale,
 * rdtsc around the parts of a visit: ~4,000 cycles a visit, ~800 of
 * them on the first load of the producer's position alone, as much in
 * the first record, the rest in the ring's own state).
 *
 * Then, before the first visit, the lines each visit reads first are
 * loaded for all of them in one loop (ringlog_cons_touch()): the loads
 * do not depend on each other, so the CPU has many in flight at once
 * instead of one per visit. And while one ring is visited, the next one's
 * lines and the one after that's state are asked for (ahead()). Together
 * ~2,300-3,700 cycles a visit where it was ~3,900-6,900 (timed with
 * fenced rdtsc, which slows both), and the daemon's CPU per event 10-16 %
 * lower with 1,000 writers in runs side by side, untimed. */
struct drain_item {
	struct ring *r;
	bool sweep; /* asleep, visited as a sweep's (sweep_due()) */
};

static void ahead(const struct ring *next, const struct ring *after)
{
	if (after)
		for (size_t off = 0; off < sizeof(*after); off += 64)
			__builtin_prefetch((const char *)after + off);
	if (next && next->mem && !next->dead)
		ringlog_cons_prefetch(&next->cons);
}

/* false: no room for it and no memory for more; the caller visits it
 * at once instead (unpipelined, not skipped). */
static bool gather(struct daemon *d, size_t *n, struct ring *r, bool sweep)
{
	if (*n == d->drain_cap) {
		size_t cap = d->drain_cap ? d->drain_cap * 2 : 256;
		struct drain_item *l = realloc(d->drain_list, cap * sizeof(*l));

		if (!l)
			return false;
		d->drain_list = l;
		d->drain_cap = cap;
	}
	d->drain_list[(*n)++] = (struct drain_item){ r, sweep };
	return true;
}

void drain_free(struct daemon *d)
{
	free(d->drain_list);
	d->drain_list = NULL;
	d->drain_cap = 0;
}

/* The sweep: the rings of c asleep for bell_sweep() ms, and only those.
 * An event the bell misses (pace.h) is found by any visit after it was
 * published, so a ring need not be swept while it is visited anyway: a
 * writer's bursts every 50 ms wake its ring more often than any sweep
 * would come. (A sweep of every sleeping ring of a writer every 100 ms
 * was ~9,000 visits a second with 1,000 such writers, none finding
 * anything: ~8 % of the daemon's CPU, bench-scale.) The queue is in the
 * order of the rings' last visits, so those due are at its head; a ring
 * visited goes to its tail or off it. */
static void sweep_due(struct daemon *d, struct client *c, uint64_t now, size_t *n,
		      struct pass_sum *s)
{
	uint64_t every = bell_sweep(d);

	/* Without reading the head, most passes: 1,000 writers in 100
	 * processes, a cache miss a writer a pass was ~2 % of the daemon's
	 * CPU (bench-scale, perf). Leaving the queue only makes its oldest
	 * younger, so the bound is refreshed here, from the head itself. */
	if (now - c->asleep_since_ms < every || !c->asleep)
		return;
	if (now - c->asleep->last_visit_ms < every) {
		c->asleep_since_ms = c->asleep->last_visit_ms;
		return;
	}
	for (struct ring *r = c->asleep, *rn; r && now - r->last_visit_ms >= every; r = rn) {
		rn = r->sl_next;
		if (!gather(d, n, r, true))
			visit(d, r, now, true, s); /* may move r to the tail */
	}
}

/* Which rings a pass visits, into d->drain_list.
 *
 * A writer with a bell page costs what its awake rings and its bells do:
 * the pass reads its page (one line for 16 rings) and visits the rings on
 * c->awake, those that rang included. A sleeping ring is visited by a
 * sweep once nothing visited it for pace_bell_sweep() ms (sweep_due()),
 * or when a pass visits all; a writer gone has every ring visited as
 * before. */
static size_t gather_pass(struct daemon *d, uint64_t now, struct pass_sum *s)
{
	size_t n = 0;

	for (struct client *c = d->clients, *cn; c; c = cn) {
		cn = c->next;
		/* its fields (client.h), while this one's bells are read */
		if (cn) {
			__builtin_prefetch(cn);
			__builtin_prefetch((const char *)cn + 64);
		}
		if (__builtin_expect(c->ovl_npending != 0, 0)) {
			ovl_retry(d, c);
			/* a writer gone was kept for its reports only */
			if (!c->rings) {
				client_maybe_free(c);
				continue;
			}
		}
		if (c->bell && !c->gone) {
			d->bells += bell_scan(c);
			if (!d->drain_visit_all) {
				for (struct ring *r = c->awake, *rn; r; r = rn) {
					rn = r->aw_next; /* visit() may free r (not c) */
					if (!gather(d, &n, r, false))
						visit(d, r, now, false, s);
				}
				sweep_due(d, c, now, &n, s);
				continue;
			}
		}
		for (struct ring *r = c->rings, *rn; r; r = rn) {
			rn = r->next;
			if (!gather(d, &n, r, false))
				visit(d, r, now, false, s);
		}
	}
	return n;
}

/* One pass over every ring. *records and *fill (the most any ring held,
 * in 1/1024 of its wake-up threshold) tell the timer how dense the flow
 * is. A visit frees at most its own ring (and, with a gone writer's last
 * ring, the writer), so the rings gathered after it stay valid. */
static uint64_t drain_pass(struct daemon *d, uint64_t *records, unsigned *fill)
{
	uint64_t now = uv_now(d->loop), touched = 0;
	struct pass_sum s = { .releases = RELEASE_PER_PASS };
	struct drain_item *l;
	size_t n;

	d->drain_release_left = false;
	d->drain_passes++;
	n = gather_pass(d, now, &s);
	l = d->drain_list;
	for (size_t i = 0; i < n; i++)
		if (l[i].r->mem && !l[i].r->dead)
			touched += ringlog_cons_touch(&l[i].r->cons);
	__asm__ volatile("" : : "r"(touched)); /* the loads are the point */
	for (size_t i = 0; i < n; i++) {
		ahead(i + 1 < n ? l[i + 1].r : NULL, i + 2 < n ? l[i + 2].r : NULL);
		visit(d, l[i].r, now, l[i].sweep, &s);
	}
	*records += s.records;
	if (s.fill > *fill)
		*fill = s.fill;
	if (d->drain_seal) {
		d->drain_seal = false;
		store_seal(d->st);
	}
	if (d->released_pending)
		reg_send_released(d);
	if (d->sinks.wanting)
		sink_publish_passed(&d->sinks);
	return s.moved;
}

uint64_t drain_all(struct daemon *d)
{
	uint64_t records = 0, moved;
	unsigned fill = 0;

	d->drain_visit_all = true;
	moved = drain_pass(d, &records, &fill);
	d->drain_visit_all = false;
	/* rings left to release go on the timer's passes, from now (it may
	 * be waiting up to DRAIN_IDLE_MAX_MS) */
	if (d->drain_release_left && !d->stopping)
		drain_start(d);
	return moved;
}

/* The next wait (pace.h). Every ring is flagged RINGLOG_CONS_SLEEPING for
 * good (registry.c), so a ring passing its high-water mark (half the
 * ring) wakes us whatever the wait; below it no producer ever makes a
 * system call. Not a spin: on two cores the loop would take the CPU from
 * the kernel's write workers, whose completions are what give ring space
 * back. */
static uint64_t next_wait(struct daemon *d, uint64_t moved, uint64_t records, unsigned fill)
{
	uint64_t ms = pace_next_wait(d->drain_wait_ms, moved != 0, records, fill, d->ntails != 0,
				     d->drain_release_left);

	d->drain_wait_ms = ms;
	/* Idle, the pass comes with the flush timer's tick (lifecycle.c:
	 * every flush_interval / 10) when that is due within half to twice
	 * the wait: both in one wake-up. With 1,000 idle rings ringlogd woke
	 * 30 times a second, 10 for the tick and 20 for passes every
	 * DRAIN_IDLE_MAX_MS; now 10 (bench-scale's idle row). Nothing waits
	 * for an idle pass: a ring past its high-water mark wakes us at once,
	 * a tail keeps the waits short, and the store seals on the tick. */
	if (!moved && !d->ntails && !d->drain_release_left && ms >= DRAIN_IDLE_MAX_MS) {
		uint64_t tick = uv_timer_get_due_in(&d->flush_timer);

		if (tick >= ms / 2 && tick <= 2 * ms)
			return tick;
	}
	return ms;
}

static void on_drain_timer(uv_timer_t *t)
{
	struct daemon *d = t->data;
	uint64_t records = 0, moved;
	unsigned fill = 0;

	/* woken by a producer past its high-water mark: which ring is not
	 * known, so every ring is looked at */
	d->drain_visit_all = d->drain_woken;
	d->drain_woken = false;
	moved = drain_pass(d, &records, &fill);
	d->drain_visit_all = false;
	uv_timer_start(t, on_drain_timer, next_wait(d, moved, records, fill), 0);
}

void drain_woken(struct daemon *d, uint64_t n)
{
	d->wakeups += n;
	d->drain_woken = true;
	drain_start(d);
}

void drain_start(struct daemon *d)
{
	d->drain_timer.data = d;
	d->drain_wait_ms = DRAIN_BUSY_MS; /* something arrived: look closely again */
	uv_timer_start(&d->drain_timer, on_drain_timer, 0, 0);
}
