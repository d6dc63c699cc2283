/* client/overload.c - what an event does when there is too much: its rate
 * limit and its opt-in wait for room, both set per event by the daemon
 * (POLICY frames), and what they cost (ringlog_get_overload_stats()).
 *
 * None of this is on the fast path: an event with a policy has a non-zero
 * ringlog_event.policy, which sends it to ringlog__begin() (emit.c), and a
 * full ring gets there anyway. Level-aware shedding needs nothing here: it
 * is the ring's (proto/ringbuf.c).
 *
 * The rate limit is a token bucket kept as one 64-bit word per event, the
 * "theoretical arrival time" of the generic cell rate algorithm: an event
 * is admitted when that time is at most (burst - 1) intervals ahead of now,
 * and moves it one interval on, by compare-and-swap. No lock and no system
 * call (the monotonic clock is read through the vDSO); shared by every
 * thread that emits the event, as a call site's limit should be.
 */
#define _GNU_SOURCE
#include "lib.h"
#include "ctl.h"
#include "transport.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Per event id, in pages allocated at registration and never freed while
 * the process runs: emitting threads read them without the lock. */
#define POL_PAGE_BITS 8u
#define POL_PAGE (1u << POL_PAGE_BITS)

struct lib_policy {
	struct ringlog_event *e;  /* the registered event of this id */
	uint64_t interval_ns;     /* one token per interval; 0: no limit */
	uint64_t tolerance_ns;    /* (burst - 1) intervals */
	uint64_t tat;             /* theoretical arrival time, CLOCK_MONOTONIC */
	uint64_t suppressed;      /* over the limit, since start (atomic) */
	uint64_t reported;        /* as last sent to the daemon (lib.lock) */
	uint32_t wait_us;
};

static struct lib_policy *pages[65536u / POL_PAGE];

/* The wait RINGLOG_EVENT_WAIT asked for, for this thread's next events. */
static __thread uint32_t wait_next_us;

static struct lib_policy *slot(uint16_t id)
{
	struct lib_policy *pg = __atomic_load_n(&pages[id >> POL_PAGE_BITS], __ATOMIC_ACQUIRE);

	return pg ? &pg[id & (POL_PAGE - 1)] : NULL;
}

void lib_policy_event_locked(struct ringlog_event *e)
{
	unsigned i = e->id >> POL_PAGE_BITS;
	struct lib_policy *pg = pages[i];

	if (!pg) {
		pg = calloc(POL_PAGE, sizeof(*pg));
		if (!pg)
			return; /* the event then just has no policy */
		/* Pairs with the acquire in slot(). */
		__atomic_store_n(&pages[i], pg, __ATOMIC_RELEASE);
	}
	pg[e->id & (POL_PAGE - 1)].e = e;
}

static void apply_one(const struct ringlog_ctl_policy *m)
{
	struct lib_policy *s = slot(m->event);
	uint64_t interval = 0, tol = 0;
	uint16_t bits = 0;

	if (!s || !s->e)
		return; /* an id this process never registered: ignore */
	if (m->rate && m->period_ms) {
		interval = (uint64_t)m->period_ms * 1000000u / m->rate;
		if (!interval)
			interval = 1;
		tol = (uint64_t)(m->burst ? m->burst - 1 : 0) * interval;
		bits |= LIB_POL_RATE;
	}
	s->wait_us = m->wait_us < RINGLOG_WAIT_MAX_US ? m->wait_us : RINGLOG_WAIT_MAX_US;
	if (s->wait_us)
		bits |= LIB_POL_WAIT;
	__atomic_store_n(&s->tolerance_ns, tol, __ATOMIC_RELAXED);
	__atomic_store_n(&s->interval_ns, interval, __ATOMIC_RELAXED);
	__atomic_store_n(&s->e->policy, bits, __ATOMIC_RELEASE);
}

void lib_policy_apply_locked(const uint8_t *p, uint32_t len)
{
	for (uint32_t off = 0; off + sizeof(struct ringlog_ctl_policy) <= len;
	     off += sizeof(struct ringlog_ctl_policy)) {
		struct ringlog_ctl_policy m;

		memcpy(&m, p + off, sizeof(m));
		apply_one(&m);
	}
}

/* Suppressed counts the daemon has not heard yet, as the increase since
 * the last report (a daemon restart then counts nothing twice). Only to a
 * daemon that said it understands the frame; sent by the library's thread
 * every 100 ms and before each SYNC (ringlog_flush(), exit). */
int lib_policy_send_locked(struct transport *t)
{
	struct ringlog_ctl_suppressed batch[64];
	unsigned n = 0;
	int err;

	if (!lib.daemon_overload)
		return 0;
	for (unsigned i = 0; i < sizeof(pages) / sizeof(pages[0]); i++) {
		struct lib_policy *pg = pages[i];

		for (unsigned j = 0; pg && j < POL_PAGE; j++) {
			uint64_t total = __atomic_load_n(&pg[j].suppressed, __ATOMIC_RELAXED);

			if (total == pg[j].reported)
				continue;
			batch[n] = (struct ringlog_ctl_suppressed){
				.event = (uint16_t)(i * POL_PAGE + j), .count = total - pg[j].reported };
			pg[j].reported = total;
			if (++n == 64) {
				if ((err = tr_send(t, RINGLOG_CTL_SUPPRESSED, batch, sizeof(batch),
						   LIB_OBJ_NONE)) < 0)
					return err;
				n = 0;
			}
		}
	}
	/* Events no ring could take (emit.c), as event 0: the daemon stores
	 * the loss in another of our streams. */
	{
		uint64_t total = __atomic_load_n(&lib.no_ring, __ATOMIC_RELAXED);

		if (total != lib.no_ring_reported) {
			/* n < 64: the loop above sends a full batch at once */
			batch[n++] = (struct ringlog_ctl_suppressed){
				.event = 0, .count = total - lib.no_ring_reported };
			lib.no_ring_reported = total;
		}
	}
	if (n && (err = tr_send(t, RINGLOG_CTL_SUPPRESSED, batch, n * sizeof(batch[0]),
				LIB_OBJ_NONE)) < 0)
		return err;
	return 0;
}

bool lib_rate_admit(uint16_t id, uint16_t pol)
{
	struct lib_policy *s;
	uint64_t interval, tol, now, tat, t;

	if (!(pol & LIB_POL_RATE) || !(s = slot(id)))
		return true;
	interval = __atomic_load_n(&s->interval_ns, __ATOMIC_RELAXED);
	tol = __atomic_load_n(&s->tolerance_ns, __ATOMIC_RELAXED);
	if (!interval)
		return true;
	now = lib_now_ns(CLOCK_MONOTONIC);
	tat = __atomic_load_n(&s->tat, __ATOMIC_RELAXED);
	do {
		t = tat > now ? tat : now;
		if (t - now > tol) {
			__atomic_fetch_add(&s->suppressed, 1, __ATOMIC_RELAXED);
			__atomic_fetch_add(&lib.ovl.suppressed, 1, __ATOMIC_RELAXED);
			return false;
		}
	} while (!__atomic_compare_exchange_n(&s->tat, &tat, t + interval, true,
					      __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	return true;
}

void ringlog__wait_next(uint32_t us)
{
	wait_next_us = us < RINGLOG_WAIT_MAX_US ? us : RINGLOG_WAIT_MAX_US;
}

uint64_t lib_wait_ns(uint16_t id, uint16_t pol)
{
	struct lib_policy *s;

	if (wait_next_us)
		return (uint64_t)wait_next_us * 1000u;
	if (!(pol & LIB_POL_WAIT) || !(s = slot(id)))
		return 0;
	return (uint64_t)s->wait_us * 1000u;
}

/* Spin this many tries (a daemon that is draining frees space within
 * microseconds), then sleep in steps of at most SLEEP_NS, re-checking the
 * deadline each time: a stopped or dead daemon costs the caller its
 * timeout and not a step more than SLEEP_NS past it. */
#define SPIN_TRIES 64
#define SLEEP_NS   50000u
#define REWAKE_NS  1000000u /* wake the daemon again, in case it slept through */

static void max_store(uint64_t *m, uint64_t v)
{
	uint64_t cur = __atomic_load_n(m, __ATOMIC_RELAXED);

	while (v > cur && !__atomic_compare_exchange_n(m, &cur, v, true, __ATOMIC_RELAXED,
						       __ATOMIC_RELAXED))
		;
}

/* No daemon now, and the last attempt to reach one failed: nobody will
 * make room, so waiting would only slow the program by its timeout at
 * every event. Read without the lock: a stale answer costs one wait more
 * or less. Before the first attempt (a program starting) we wait. */
static bool no_daemon(void)
{
	return !__atomic_load_n(&lib.connected, __ATOMIC_RELAXED) &&
	       __atomic_load_n(&lib.tried, __ATOMIC_RELAXED);
}

void *lib_wait_reserve(struct lib_ring *r, uint32_t len, uint16_t type, uint16_t id,
		       uint64_t wait_ns)
{
	struct ringlog_producer *p = &r->prod;
	uint64_t t0, now, woke;
	void *rec = ringlog_prod_try(p, len, type, id);

	if (rec || len > p->max_len || no_daemon()) {
		if (!rec && len <= p->max_len)
			ringlog_prod_drop(p, len);
		return rec;
	}
	/* A waiter: the consumer gives space back at once (ring.h: waiting),
	 * and is woken now rather than at its next timer. */
	__atomic_store_n(&p->hdr->waiting, 1u, __ATOMIC_RELEASE);
	lib_wake_daemon();
	t0 = woke = now = lib_now_ns(CLOCK_MONOTONIC);
	for (unsigned i = 0; !rec && now - t0 < wait_ns && !no_daemon(); i++) {
		if (i >= SPIN_TRIES) {
			uint64_t left = wait_ns - (now - t0);

			lib_sleep_ns(left < SLEEP_NS ? left : SLEEP_NS);
		}
		rec = ringlog_prod_try(p, len, type, id);
		now = lib_now_ns(CLOCK_MONOTONIC);
		if (!rec && now - woke >= REWAKE_NS) {
			lib_wake_daemon();
			woke = now;
		}
	}
	__atomic_store_n(&p->hdr->waiting, 0u, __ATOMIC_RELEASE);
	__atomic_fetch_add(&lib.ovl.waits, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&lib.ovl.wait_ns, now - t0, __ATOMIC_RELAXED);
	max_store(&lib.ovl.wait_max_ns, now - t0);
	if (!rec) {
		ringlog_prod_drop(p, len);
		__atomic_fetch_add(&lib.ovl.wait_timeouts, 1, __ATOMIC_RELAXED);
	}
	return rec;
}

void ringlog_get_overload_stats(struct ringlog_overload_stats *s, size_t size)
{
	struct ringlog_overload_stats v = {
		.suppressed = __atomic_load_n(&lib.ovl.suppressed, __ATOMIC_RELAXED),
		.waits = __atomic_load_n(&lib.ovl.waits, __ATOMIC_RELAXED),
		.wait_ns = __atomic_load_n(&lib.ovl.wait_ns, __ATOMIC_RELAXED),
		.wait_max_ns = __atomic_load_n(&lib.ovl.wait_max_ns, __ATOMIC_RELAXED),
		.wait_timeouts = __atomic_load_n(&lib.ovl.wait_timeouts, __ATOMIC_RELAXED),
	};

	if (s)
		memcpy(s, &v, size < sizeof(v) ? size : sizeof(v));
}

int ringlog_emit_wait(struct ringlog_event *e, const struct ringlog_activity *act,
		      const struct ringlog_arg *args, uint32_t timeout_us)
{
	int err;

	ringlog__wait_next(timeout_us);
	err = ringlog_emit(e, act, args);
	ringlog__wait_next(0);
	return err;
}
