/* daemon/ingest/drain.c - move validated records from every ring into the
 * store (store_event()), which packs them and publishes them to the sinks.
 *
 * Runs on a timer: 1 ms while data flows (sooner when a producer passes
 * its high-water mark), 10 ms when the rings were empty (the rings absorb
 * what arrives in between, so a ring is sized by rate x worst drain
 * delay). Each record is validated by the consumer
 * (proto/ringbuf.c) and here against the writer's metadata: an event id
 * that the metadata does not define, or a payload shorter than its fixed
 * fields, detaches the ring as corrupt.
 */
#define _GNU_SOURCE
#include "daemon.h"
#include "log.h"
#include "ingest/drain.h"
#include "ingest/registry.h"
#include "ingest/transport.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#define DRAIN_BUSY_MS 1
#define DRAIN_IDLE_MS 10

struct drain_ctx {
	struct daemon *d;
	struct ring *r;
	const char *why;
};

static bool memory_only(const struct provider *p, const struct ringlog_event_desc *e)
{
	uint64_t want = e->keyword ? e->keyword : ~0ull;

	return !(p->disk_kw[e->level & 7] & want) && (p->kw[e->level & 7] & want);
}

static int on_record(void *arg, uint16_t type, uint16_t aux, const uint8_t *payload,
		     uint32_t len)
{
	struct drain_ctx *x = arg;
	struct ring *r = x->r;
	struct client *c = r->c;
	const struct ringlog_event_desc *e = NULL;
	struct provider *p = NULL;
	int err;

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
		/* Enabled only by a memory-only sink (flight_level): handed to
		 * the sinks, never written. */
		if (p && memory_only(p, e))
			return store_pass(x->d, r, type, aux, payload, len, e);
		/* STORE_FULL: no room now, the record stays in the ring */
		if ((err = store_event(x->d, r, type, aux, payload, len, e)) != 0)
			return err;
		c->stored++;
		if (p)
			p->stored++;
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
	struct ringlog_rec_loss_ext l;

	memcpy(&l, payload, sizeof(l));
	if (aux && aux >= c->nprov)
		reg_meta_sync(c);
	p = aux && aux < c->nprov ? c->prov[aux] : NULL;
	struct ringlog_seg_loss sl = { .records = l.l.records, .bytes = l.l.bytes,
				       .reason = RINGLOG_LOSS_RING,
				       .provider = p ? aux : 0, .first_ts = l.first_ts };

	/* STORE_FULL: no room now, the record stays in the ring */
	if ((err = store_ring_loss(x->d, r, aux, &l.l, len, &sl)) != 0)
		return err;
	c->lost_ring += l.l.records;
	x->d->lost_ring += l.l.records;
	if (p)
		p->lost_ring += l.l.records;
	return 0;
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
	store_loss(d, r, 1, pending, RINGLOG_LOSS_CORRUPT);
	reg_refuse(r->c, r->handle, "ring corrupt: %s", why);
	r->dead = true;
	ctl_unmap(r->mem, r->map_size);
	r->mem = NULL;
}

/* A ring nobody will write again: its thread finished, or its process is
 * gone. Loss the producer counted but never reported in-stream is written
 * now, so that stored + lost always adds up. */
static bool finished(struct ring *r)
{
	if (ringlog_cons_done(&r->cons))
		return true;
	return r->c->gone && ringlog_cons_pending(&r->cons) == 0;
}

static void finish(struct daemon *d, struct ring *r)
{
	struct ringlog_rec_loss l = ringlog_cons_pending_loss(&r->cons);

	if (l.records) {
		store_loss(d, r, l.records, l.bytes, RINGLOG_LOSS_EXIT);
		r->c->lost_ring += l.records;
		d->lost_ring += l.records;
	}
	/* Released once the chunks holding its last records are written:
	 * seal now rather than hold a dead thread's ring for a flush interval. */
	r->finishing = true;
	if (r->held)
		store_seal(d);
}

/* After a pass over r: with no chunk holding its records, what is left
 * unpublished is PAD only, and goes back at once. With a quarter of the ring
 * waiting for the open chunk, seal it now, so that a ring smaller than a
 * chunk never waits for the chunk to fill. */
static void give_back(struct daemon *d, struct ring *r)
{
	struct ringlog_consumer *k = &r->cons;

	if (!r->held)
		ringlog_cons_release(k, k->pos, k->seen.total_records, k->seen.total_bytes);
	else if (k->pos - k->published >= k->size / 4)
		store_seal(d);
}

uint64_t drain_all(struct daemon *d)
{
	uint64_t moved = 0;

	for (struct client *c = d->clients, *cn; c; c = cn) {
		cn = c->next;
		for (struct ring *r = c->rings, *rn; r; r = rn) {
			struct drain_ctx x = { .d = d, .r = r };
			uint64_t before = r->cons.pos;
			long n;

			rn = r->next;
			if (r->dead || r->finishing) {
				/* Its disk loss goes into its stream before it goes:
				 * the chunk carrying the report then holds it. */
				if (r->lost_disk_pending && store_settle_loss(d, r) < 0)
					continue;
				if ((c->gone || r->finishing) && !r->held) {
					/* the client frees a drained ring (a handed
					 * over one is the new ring's to give back) */
					if (!r->dead && !r->handed_over)
						give_back(d, r);
					reg_ring_release(r);
				}
				continue;
			}
			n = ringlog_cons_drain(&r->cons, r->cons.size, on_record, &x);
			store_events_end(d); /* before anything else writes to the chunk */
			moved += r->cons.pos - before;
			if (n == -EBADMSG) {
				detach_corrupt(d, r, x.why ? x.why : r->cons.why);
				continue;
			}
			if (finished(r))
				finish(d, r);
			else
				give_back(d, r);
		}
	}
	return moved;
}

/* Flag every ring as asleep or awake. A producer that sees the flag once
 * its ring is past the high-water mark signals the wake object (ctl.c). */
static void set_sleeping(struct daemon *d, bool on)
{
	if (d->sleeping == on)
		return;
	d->sleeping = on;
	for (struct client *c = d->clients; c; c = c->next)
		for (struct ring *r = c->rings; r; r = r->next)
			if (!r->dead)
				__atomic_store_n(&r->cons.hdr->consumer_flags,
						 on ? RINGLOG_CONS_SLEEPING : 0u, __ATOMIC_RELEASE);
}

/* Two paces. Busy (the last pass moved data): wait DRAIN_BUSY_MS, flagged
 * asleep, so that a ring passing its high-water mark meanwhile wakes us at
 * once; below that rate no producer ever makes a system call. Not a spin:
 * on two cores the loop would take the CPU from the kernel's write
 * workers, whose completions are what give ring space back. Idle: the
 * long interval, flagged; then drain once more, for what came before the
 * flag. */
static void on_drain_timer(uv_timer_t *t)
{
	struct daemon *d = t->data;
	uint64_t moved;

	set_sleeping(d, false);
	moved = drain_all(d);
	set_sleeping(d, true);
	if (!moved)
		moved = drain_all(d);
	uv_timer_start(t, on_drain_timer, moved ? DRAIN_BUSY_MS : DRAIN_IDLE_MS, 0);
}

void drain_woken(struct daemon *d, uint64_t n)
{
	d->wakeups += n;
	drain_start(d);
}

void drain_start(struct daemon *d)
{
	d->drain_timer.data = d;
	uv_timer_start(&d->drain_timer, on_drain_timer, 0, 0);
}
