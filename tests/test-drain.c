/* tests/test-drain.c - when the drain lets a ring with a bell sleep, driven
 * in process (store-harness.c: the real drain, the real store) with
 * timestamps the test chooses, so that each case happens every run.
 *
 * The rule (daemon/ingest/pace.h: pace_bell_quiet_ts()) is unit-tested in
 * test-pace.c; bench-scale and test-daemon.c show it end to end with real
 * writers, whose timing a run cannot choose. Here: a ring sleeps after the
 * visit that drains an old burst, a sleeping ring is not visited, its bell
 * wakes it; a bell rung for an event not yet published keeps it awake; a
 * writer whose clock was never shown to agree with ours is not put to
 * sleep by its timestamps, only by the quiet time. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "store-harness.h"
#include "bell.h"
#include "clock.h"
#include "ctl.h"
#include "ingest/bells.h"
#include "ingest/client.h"
#include "ingest/drain.h"
#include "ingest/pace.h"
#include "ingest/registry.h"

#define TICK_ID 1 /* the harness's "Tick" (store-harness.c EVENT_ID) */
#define MS      1000000ull

static struct harness h;
static struct ringlog_bell_page *page;
static uint64_t emitted;

/* The harness's writer gets a bell page with the ring in slot 0 (as a
 * BELL frame and the RING frame's slot would), sweeps put off for a
 * minute, and the drain's timer, so that a pass is the timer's (awake
 * rings only), not drain_all()'s. */
static void setup(void)
{
	h_start(&h, NULL);
	page = mmap(NULL, RINGLOG_BELL_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		    -1, 0);
	cr_assert(page != MAP_FAILED);
	h.c->bell = page;
	bell_ring_added(h.r, 1);
	cr_assert_eq(h.r->bell_slot, 1, "the ring took no bell slot");
	h.d->bell_sweep_test_ms = 60000;
	cr_assert_eq(uv_timer_init(h.loop, &h.d->drain_timer), 0);
	emitted = 0;
}

static void teardown(void)
{
	uv_timer_stop(&h.d->drain_timer);
	uv_close((uv_handle_t *)&h.d->drain_timer, NULL);
	bell_client_free(h.c); /* unmaps the page */
	h_cleanup(&h);
}

TestSuite(drain, .init = setup, .fini = teardown, .timeout = 60);

static uint64_t now_ns(void)
{
	return d_now(CLOCK_MONOTONIC); /* the harness ring's clock */
}

/* n events stamped ts (published: the consumer sees them at once) */
static void emit_at(uint64_t ts, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		uint64_t payload[2] = { ts, emitted };

		cr_assert_eq(ringlog_prod_write(&h.p, RINGLOG_REC_EVENT, TICK_ID, payload,
						sizeof(payload)),
			     0, "the ring took no event");
		emitted++;
	}
}

/* what libringlog stores in the ring's slot on the first event after a
 * silence (ringlog.h: ringlog__bell()) */
static void ring_bell(uint64_t ts)
{
	__atomic_store_n(&page->slot[0], (uint32_t)ts, __ATOMIC_RELAXED);
}

/* One pass as the drain timer runs it (d->drain_visit_all false); returns
 * the rings it visited. */
static uint64_t timer_pass(void)
{
	uint64_t before = h.d->drain_visits;

	drain_start(h.d); /* the timer at 0 */
	uv_run(h.loop, UV_RUN_NOWAIT);
	return h.d->drain_visits - before;
}

/* off the awake list, on the sleep queue (bells.c) */
static bool asleep(void)
{
	bool queued = h.r->sl_pprev != NULL;

	cr_assert_eq(h.r->aw_pprev == NULL, queued, "a ring on both lists or on neither");
	return queued;
}

/* The writer's clock shown in step with ours, as a visit shows it: an
 * event stamped now, drained within a gap (a preemption in between only
 * means another try). */
static void agree(void)
{
	for (int i = 0; i < 100 && !h.r->clock_agrees; i++) {
		uint64_t t = now_ns();

		emit_at(t, 1);
		ring_bell(t);
		timer_pass();
	}
	cr_assert(h.r->clock_agrees, "no visit showed the ring's clock in step with ours");
}

/* Everything emitted, in the segment files. */
static void all_stored(void)
{
	h_flush(&h);
	cr_assert_eq(h_read_disk(&h).events, emitted, "events stored: %llu of %llu",
		     (unsigned long long)h_read_disk(&h).events, (unsigned long long)emitted);
}

Test(drain, a_ring_sleeps_after_the_visit_that_drains_a_burst_two_gaps_old)
{
	agree();
	/* a burst that ended 20 ms ago (2 gaps: ~2.1 ms), its bell rung */
	uint64_t t = now_ns() - 20 * MS;

	emit_at(t, 50);
	ring_bell(t);
	cr_assert_eq(timer_pass(), 1, "the rung ring was not visited");
	cr_assert_eq(ringlog_cons_pending(&h.r->cons), 0, "the burst was not drained");
	cr_assert(asleep(), "a ring emptied of a burst 20 ms old stayed awake");

	/* asleep: passes leave it alone, however many */
	for (int i = 0; i < 5; i++)
		cr_assert_eq(timer_pass(), 0, "a sleeping ring was visited");

	/* its next event rings (more than a gap after the last): visited,
	 * drained, asleep again */
	t = now_ns() - 10 * MS;
	emit_at(t, 7);
	ring_bell(t);
	cr_assert_eq(timer_pass(), 1, "a ring whose bell rang was not visited");
	cr_assert_eq(ringlog_cons_pending(&h.r->cons), 0);
	cr_assert(asleep());
	all_stored();
}

Test(drain, a_ring_whose_newest_event_is_younger_than_two_gaps_stays_awake)
{
	agree();
	/* stamped after our clock read: the writer may still be in its burst,
	 * whose next events would not ring */
	uint64_t t = now_ns() + 1000 * MS;

	emit_at(t, 10);
	ring_bell(t);
	cr_assert_eq(timer_pass(), 1);
	cr_assert_eq(ringlog_cons_pending(&h.r->cons), 0);
	cr_assert_not(asleep(), "a ring whose newest event is not two gaps old was put to sleep");
	/* and so is visited by the next pass, which finds what came meanwhile
	 * without a bell (within the gap of the last) */
	emit_at(t + 1, 5);
	cr_assert_eq(timer_pass(), 1, "an awake ring was not visited");
	cr_assert_eq(ringlog_cons_pending(&h.r->cons), 0,
		     "an event that rang no bell was left in an awake ring");
	all_stored();
}

Test(drain, a_bell_rung_for_an_event_not_yet_published_keeps_the_ring_awake)
{
	agree();
	uint64_t t = now_ns() - 30 * MS;

	emit_at(t, 20);
	ring_bell(t);
	timer_pass();
	cr_assert(asleep());

	/* A thread rings for its event, stamped t2, and is preempted before
	 * publishing it: the pass sees the bell, the visit finds nothing new.
	 * Were the ring put to sleep now, the event, whose bell is spent,
	 * would wait for a sweep (a minute here). */
	uint64_t t2 = now_ns() - 10 * MS;

	ring_bell(t2);
	cr_assert_eq(timer_pass(), 1, "the rung ring was not visited");
	cr_assert_not(asleep(), "a ring was put to sleep before the event that rang was drained");

	/* published now: the next pass finds it, and then the ring sleeps */
	emit_at(t2, 1);
	cr_assert_eq(timer_pass(), 1, "the awake ring was not visited");
	cr_assert_eq(ringlog_cons_pending(&h.r->cons), 0, "the event that rang was not drained");
	cr_assert(asleep(), "the ring stayed awake once the event that rang was drained");
	all_stored();
}

Test(drain, a_writer_whose_clock_is_not_shown_in_step_sleeps_by_the_quiet_time_only)
{
	/* No agreement shown: its events come 20 ms older than our clock,
	 * as a writer whose clock is 20 ms behind ours would stamp a burst
	 * it is still writing. */
	uint64_t t = now_ns() - 20 * MS;

	emit_at(t, 50);
	ring_bell(t);
	cr_assert_eq(timer_pass(), 1);
	cr_assert_eq(ringlog_cons_pending(&h.r->cons), 0);
	cr_assert_not(h.r->clock_agrees, "a clock 20 ms behind ours was taken to agree with it");
	cr_assert_not(asleep(), "a ring was put to sleep by timestamps of a clock not in step");

	/* the quiet time, counted on our clock, still lets it sleep */
	usleep((BELL_QUIET_MS + 4) * 1000);
	cr_assert_eq(timer_pass(), 1, "the awake ring was not visited");
	cr_assert(asleep(), "a ring quiet for %u ms stayed awake", BELL_QUIET_MS + 4);
	all_stored();
}

/* A pass as timer_pass(), and, when it visited the ring, the pass's own
 * clock (the ring's last visit). */
static uint64_t timed_pass(uint64_t *at)
{
	uint64_t n = timer_pass();

	*at = h.r->last_visit_ms;
	return n;
}

Test(drain, a_ring_whose_bell_was_missed_is_swept_once_not_visited_for_the_interval)
{
	uint64_t every = h.d->bell_sweep_test_ms = 300, slept, at = 0;

	agree();
	uint64_t t = now_ns() - 20 * MS;

	emit_at(t, 10);
	ring_bell(t);
	timer_pass();
	cr_assert(asleep());
	slept = h.r->last_visit_ms;

	/* an event whose bell rang before the ring fell asleep (pace.h: a
	 * thread preempted mid-record), published now: no bell will ring */
	emit_at(now_ns() - 10 * MS, 1);
	for (int i = 0; i < 200 && timed_pass(&at) == 0; i++)
		usleep(10000);
	cr_assert_eq(ringlog_cons_pending(&h.r->cons), 0,
		     "an event the bell missed was not swept in 2 s (interval %llu ms)",
		     (unsigned long long)every);
	cr_assert_geq(at, slept + every, "swept %llu ms after its last visit, before the interval",
		      (unsigned long long)(at - slept));
	all_stored();
}

Test(drain, a_ring_its_bell_wakes_more_often_than_the_interval_is_never_swept)
{
	uint64_t every = h.d->bell_sweep_test_ms = 300, at;

	agree();
	/* a writer's bursts every 100 ms for 1.5 s, passes every 20 ms */
	for (int burst = 0; burst < 15; burst++) {
		uint64_t t = now_ns() - 10 * MS;

		emit_at(t, 20);
		ring_bell(t);
		cr_assert_eq(timer_pass(), 1, "a rung ring was not visited");
		cr_assert(asleep());
		for (int i = 0; i < 5; i++) {
			uint64_t last = h.r->last_visit_ms;

			usleep(20000);
			if (timed_pass(&at))
				/* only a ring left alone for the interval (a test
				 * thread held up that long) */
				cr_assert_geq(at, last + every,
					      "a ring visited %llu ms before was swept (interval %llu ms)",
					      (unsigned long long)(at - last), (unsigned long long)every);
		}
	}
	all_stored();
}

/* n events stamped ts into another ring */
static void emit_into(struct h_ring *x, uint64_t ts, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		uint64_t payload[2] = { ts, emitted };

		cr_assert_eq(ringlog_prod_write(&x->p, RINGLOG_REC_EVENT, TICK_ID, payload,
						sizeof(payload)),
			     0, "the ring took no event");
		emitted++;
	}
}

static bool on_list(const struct ring *r)
{
	for (const struct ring *x = h.c->rings; x; x = x->next)
		if (x == r)
			return true;
	return false;
}

Test(drain, a_pass_goes_on_to_the_rings_gathered_after_one_it_releases)
{
	struct h_ring b;

	h_add_ring(&h, &b); /* first in the writer's list */
	emit_into(&b, now_ns(), 30);
	ringlog_prod_finish(&b.p); /* its thread ended */
	/* Passes over every ring, each with new events in the other ring:
	 * one of them releases b (unmapped, freed) before it visits h.r,
	 * gathered after b in the same pass. Under AddressSanitizer a touch
	 * of b after its release fails here. */
	for (int i = 0; i < 2000 && on_list(b.r); i++) {
		emit_at(now_ns(), 5);
		drain_all(h.d);
		uv_run(h.loop, UV_RUN_NOWAIT);
		cr_assert_eq(ringlog_cons_pending(&h.r->cons), 0,
			     "a ring gathered after another was not drained in the pass");
		usleep(500);
	}
	cr_assert_not(on_list(b.r), "the finished ring was not released in 1 s");
	all_stored();
}

/* The handles in RELEASED frames queued for the harness's writer (it has
 * no connection: what client_send() queues stays in its tx buffer). */
static unsigned released_frames(uint64_t handle)
{
	const struct txbuf *t = &h.c->tx;
	unsigned found = 0;

	for (size_t off = 0; off + sizeof(struct ringlog_ctl_frame) <= t->len;) {
		struct ringlog_ctl_frame f;

		memcpy(&f, t->buf + t->head + off, sizeof(f));
		off += sizeof(f);
		cr_assert_leq(f.len, t->len - off, "a frame runs past the queue");
		for (uint32_t i = 0; f.type == RINGLOG_CTL_RELEASED && i + 8 <= f.len; i += 8) {
			uint64_t x;

			memcpy(&x, t->buf + t->head + off + i, 8);
			found += x == handle;
		}
		off += f.len;
	}
	return found;
}

/* RELEASED is what lets the program free a finished ring: one its queue
 * cannot take now (replies unread up to the limit, no memory) is kept and
 * sent at a later pass, not lost. */
Test(drain, a_release_the_writer_cannot_be_told_of_now_is_told_at_a_later_pass)
{
	const uint64_t handle = 0x5eed;
	struct h_ring b;

	h_add_ring(&h, &b);
	b.r->handle = handle;
	emit_into(&b, now_ns(), 30);
	ringlog_prod_finish(&b.p);
	h.c->tx.limit = 1; /* every frame is over it: client_send() says -ENOBUFS */
	for (int i = 0; i < 2000 && on_list(b.r); i++) {
		drain_all(h.d);
		uv_run(h.loop, UV_RUN_NOWAIT);
		usleep(500);
	}
	cr_assert_not(on_list(b.r), "the finished ring was not released in 1 s");
	cr_assert_eq(released_frames(handle), 0, "a frame went past the queue's limit");
	cr_assert_eq(h.c->nreleased, 1, "the release the writer could not be told of was "
		     "dropped (%u kept)", h.c->nreleased);
	cr_assert(h.d->released_pending, "nothing asks a later pass to try again");
	drain_all(h.d); /* still full: kept again */
	cr_assert_eq(h.c->nreleased, 1, "a second refusal dropped it");
	h.c->tx.limit = 0; /* the program read its replies */
	drain_all(h.d);
	cr_expect_eq(released_frames(handle), 1, "the later pass did not say RELEASED once");
	cr_expect_eq(h.c->nreleased, 0, "told, and still kept");
	all_stored();
}

/* n handles 1..n queued for the harness's writer, as releases leave them */
static void queue_handles(uint32_t n)
{
	free(h.c->released);
	h.c->released = malloc(n * sizeof(uint64_t));
	cr_assert(h.c->released);
	for (uint32_t i = 0; i < n; i++)
		h.c->released[i] = i + 1;
	h.c->nreleased = h.c->released_cap = n;
	h.d->released_pending = true;
}

Test(drain, handles_a_full_queue_cannot_take_are_kept_in_order_and_bounded)
{
	const size_t frame = sizeof(struct ringlog_ctl_frame) + 4096 * sizeof(uint64_t);

	/* room for one frame of 4,096: the other 904 wait, oldest first */
	queue_handles(5000);
	h.c->tx.limit = h.c->tx.len + frame;
	reg_send_released(h.d);
	cr_assert_eq(h.c->nreleased, 904, "%u kept of the 904 not sent", h.c->nreleased);
	cr_assert_eq(h.c->released[0], 4097);
	cr_assert_eq(h.c->released[903], 5000);
	cr_assert(h.d->released_pending);
	cr_assert_eq(released_frames(1) + released_frames(4096), 2);
	cr_assert_eq(released_frames(4097), 0, "a frame past the limit");
	h.c->tx.limit = 0;
	reg_send_released(h.d);
	cr_assert_eq(h.c->nreleased, 0);
	cr_assert_not(h.d->released_pending, "the next pass is asked to send nothing");
	for (uint64_t x = 1; x <= 5000; x += 7)
		cr_assert_eq(released_frames(x), 1, "handle %llu told %u times",
			     (unsigned long long)x, released_frames(x));
	cr_assert_eq(released_frames(5000), 1);

	/* a writer that reads nothing: the list stops at the bound */
	queue_handles(REG_RELEASED_KEPT_MAX + 10);
	h.c->tx.limit = 1;
	reg_send_released(h.d);
	cr_assert_eq(h.c->nreleased, REG_RELEASED_KEPT_MAX);
	cr_assert_eq(h.c->released[0], 1, "the oldest handles were the ones let go");
	h.c->nreleased = 0;
}

Test(drain, the_sweep_takes_the_rings_due_and_leaves_those_visited_since)
{
	uint64_t every = h.d->bell_sweep_test_ms = 300, a_slept, b_slept;
	struct h_ring b;

	h_add_ring(&h, &b);
	bell_ring_added(b.r, 2);
	cr_assert_eq(b.r->bell_slot, 2);
	b.r->clock_agrees = true; /* shown for h.r by agree(); the same clock */
	agree();

	/* h.r falls asleep first, b 150 ms later */
	uint64_t t = now_ns() - 20 * MS;

	emit_at(t, 5);
	ring_bell(t);
	timer_pass();
	cr_assert(asleep());
	a_slept = h.r->last_visit_ms;
	usleep(150000);
	t = now_ns() - 20 * MS;
	emit_into(&b, t, 5);
	__atomic_store_n(&page->slot[1], (uint32_t)t, __ATOMIC_RELAXED);
	timer_pass();
	cr_assert_null(b.r->aw_pprev, "the second ring did not fall asleep");
	b_slept = b.r->last_visit_ms;

	/* one event each that no bell announces */
	emit_at(now_ns() - 10 * MS, 1);
	emit_into(&b, now_ns() - 10 * MS, 1);
	for (int i = 0; i < 200 && ringlog_cons_pending(&h.r->cons); i++) {
		uint64_t due_by;

		usleep(10000);
		uv_update_time(h.loop);
		due_by = uv_now(h.loop); /* the pass's clock is this or later */
		timer_pass();
		/* the first pass past the interval takes it, though b fell
		 * asleep after it (sweep_due()'s bound) */
		cr_assert(!ringlog_cons_pending(&h.r->cons) || due_by < a_slept + every,
			  "a pass %llu ms past the interval did not sweep the ring due",
			  (unsigned long long)(due_by - a_slept - every));
	}
	cr_assert_eq(ringlog_cons_pending(&h.r->cons), 0, "the ring due was not swept in 2 s");
	cr_assert_geq(h.r->last_visit_ms, a_slept + every, "swept before its interval");
	/* the pass that swept it came before b was due: b was left alone */
	if (h.r->last_visit_ms < b_slept + every)
		cr_assert_eq(b.r->last_visit_ms, b_slept,
			     "a ring asleep %llu ms was swept (interval %llu ms)",
			     (unsigned long long)(h.r->last_visit_ms - b_slept),
			     (unsigned long long)every);
	for (int i = 0; i < 200 && ringlog_cons_pending(&b.r->cons); i++) {
		usleep(10000);
		timer_pass();
	}
	cr_assert_eq(ringlog_cons_pending(&b.r->cons), 0, "the second ring was not swept in 2 s");
	cr_assert_geq(b.r->last_visit_ms, b_slept + every, "swept before its interval");
	all_stored();
}
