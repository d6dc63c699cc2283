/* daemon/ingest/pace.h - when the drain looks again: the wait before the
 * next pass, and which idle rings a pass skips. Pure functions of what the
 * last passes found, so that the policy is tested apart (tests/test-pace.c)
 * and its cost measured by bench/bench-scale.c; drain.c does the work.
 *
 * The two costs it weighs: a pass's visits (a ring whose header the
 * producer's core last wrote, or that nobody touched for long, costs a
 * cache and a TLB miss), and the time an event waits in its ring before a
 * tail, if one is attached, prints it. Without a tail nobody waits on an
 * event: the store takes it within a flush interval.
 */
#ifndef RINGLOG_DAEMON_PACE_H
#define RINGLOG_DAEMON_PACE_H

#include <stdbool.h>
#include <stdint.h>

#define DRAIN_BUSY_MS 1       /* data flowing densely */
#define DRAIN_SPARSE_MAX_MS 8 /* data trickling: a few records per ring */
#define DRAIN_TAIL_MAX_MS 2   /* the longest wait while a tail is attached */
#define DRAIN_IDLE_MS 10      /* nothing moved in the last pass */
#define DRAIN_IDLE_MAX_MS 50  /* nothing moved for a while */
/* A pass that found at most this many records per ring with data is
 * sparse: its cost is the visits, so the next one may wait longer. */
#define DRAIN_SPARSE_RECORDS 16

/* The next wait, from what the last pass found (prev_ms: the last wait):
 *   - dense flow: DRAIN_BUSY_MS;
 *   - a trickle (at most DRAIN_SPARSE_RECORDS records per ring with data,
 *     every ring below 1/16 of its wake-up threshold: fill is in 1/1024 of
 *     it): twice the last wait, up to DRAIN_SPARSE_MAX_MS, so that 1,000
 *     writers of 1,000 events/s each cost visits of a dozen records, not
 *     of one;
 *   - nothing moved: DRAIN_IDLE_MS, then twice that each empty pass up to
 *     DRAIN_IDLE_MAX_MS, so that idle rings cost nearly nothing however
 *     many there are;
 * and never over DRAIN_TAIL_MAX_MS while a tail is attached. With a
 * backlog (finished rings a pass left to release: drain.c), DRAIN_BUSY_MS. */
static inline uint64_t pace_next_wait(uint64_t prev_ms, bool moved, uint64_t records,
				      unsigned busy, unsigned fill, bool tail, bool backlog)
{
	uint64_t ms;

	if (backlog)
		ms = DRAIN_BUSY_MS;
	else if (!moved)
		ms = prev_ms < DRAIN_IDLE_MS ? DRAIN_IDLE_MS
		     : prev_ms * 2 > DRAIN_IDLE_MAX_MS ? DRAIN_IDLE_MAX_MS : prev_ms * 2;
	else if (records <= (uint64_t)busy * DRAIN_SPARSE_RECORDS && fill < 1024 / 16)
		ms = prev_ms * 2 > DRAIN_SPARSE_MAX_MS ? DRAIN_SPARSE_MAX_MS : prev_ms * 2;
	else
		ms = DRAIN_BUSY_MS;
	return tail && ms > DRAIN_TAIL_MAX_MS ? DRAIN_TAIL_MAX_MS : ms;
}

/* A ring that had nothing for a while is visited less often: it waits a
 * quarter of its idle time, at most IDLE_VISIT_MAX_MS, so that a timer
 * does not pay a miss for every idle ring every pass. A burst still wakes
 * us at once (the high-water mark), and a SYNC, TAIL or STATUS frame or a
 * wake-up visits every ring.
 *
 * While a tail is attached, a ring that had data within the last
 * IDLE_VISIT_RECENT_MS is visited on every pass: a writer that emits in
 * bursts (bench-scale: every 50 ms) is silent most of the time, and the
 * quarter of its silence (~12 ms) was what its events waited for the tail
 * (p99 12 ms with 1,000 such writers, 2.4 ms with one writing steadily).
 * Its header is warm, so the visits cost little. A ring silent for longer
 * waits at most IDLE_VISIT_TAIL_MS: its first event after a long silence
 * reaches the tail within that, and 1,000 rings that stay idle cost a
 * visit each every IDLE_VISIT_TAIL_MS, not every pass.
 *
 * idle_ms: from its last data to its last visit. Returns how long after
 * its last visit it is visited again (0: every pass). */
#define IDLE_VISIT_MAX_MS 500
#define IDLE_VISIT_TAIL_MS 20
#define IDLE_VISIT_RECENT_MS 1000

static inline uint64_t pace_idle_wait(uint64_t idle_ms, bool tail)
{
	uint64_t wait = idle_ms / 4;
	uint64_t cap = !tail ? IDLE_VISIT_MAX_MS : idle_ms < IDLE_VISIT_RECENT_MS ? 0
									: IDLE_VISIT_TAIL_MS;

	return wait < cap ? wait : cap;
}

/* A ring with a bell (proto/bell.h) sleeps once a pass finds it has had
 * nothing for BELL_QUIET_MS: no pass visits it until its bell rings or a
 * sweep comes. The quiet time must exceed the producer's gap (under
 * 1.1 ms) by what the loop's millisecond clock and a pass's length may
 * blur: its next event then rings. Until then it is visited on every
 * pass, a steady writer's ring included, as with the rule above.
 *
 * The sweep visits a writer's sleeping rings every pace_bell_sweep() ms:
 * an event the bell misses (reserved before the ring fell asleep and
 * published after, by a thread preempted mid-record) waits at most that,
 * and 1,000 sleeping rings cost 1,000 visits per sweep, not per pass.
 * With a tail, that wait is what such an event is late; without, the
 * store's flush interval (1 s by default) bounds it, as for idle rings. */
#define BELL_QUIET_MS 6
#define BELL_SWEEP_TAIL_MS 100

static inline bool pace_bell_sleeps(uint64_t idle_ms)
{
	return idle_ms >= BELL_QUIET_MS;
}

static inline uint64_t pace_bell_sweep(bool tail)
{
	return tail ? BELL_SWEEP_TAIL_MS : IDLE_VISIT_MAX_MS;
}

#endif /* RINGLOG_DAEMON_PACE_H */
