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

#include "bell.h"

#define DRAIN_BUSY_MS 1       /* data flowing densely */
#define DRAIN_SPARSE_MAX_MS 8 /* data trickling, or in small bursts */
#define DRAIN_TAIL_MAX_MS 2   /* the longest wait while a tail is attached */
#define DRAIN_IDLE_MS 10      /* nothing moved in the last pass */
#define DRAIN_IDLE_MAX_MS 50  /* nothing moved for a while (drain.c may
                               * wait up to twice that, to the flush tick) */
/* A pass that moved fewer records than this in all is sparse: its fixed
 * cost (a wake-up, every writer's bell page read) is worth paying every
 * millisecond for thousands of records, not for a few bursts. */
#define DRAIN_DENSE_RECORDS 4096

/* The next wait, from what the last pass found (prev_ms: the last wait;
 * records: what it moved; fill: the most any ring had taken since its
 * last visit, in 1/1024 of its wake-up threshold):
 *   - dense flow (DRAIN_DENSE_RECORDS or more), or a ring at 1/16 of its
 *     threshold or more: DRAIN_BUSY_MS;
 *   - less: twice the last wait, up to DRAIN_SPARSE_MAX_MS. The rings
 *     have room for it (a doubled wait fills them to at most 1/8), and a
 *     pass then takes more records for its fixed cost. What counts is the
 *     pass's records in all, not per ring: 1,000 writers of a 50-event
 *     burst every 50 ms had each pass called dense (50 records a ring) and
 *     made every millisecond for ~1,000 records (bench-scale), while one
 *     writer at 45 M/s, whose passes are dense either way, is cheapest
 *     drained every millisecond;
 *   - nothing moved: DRAIN_IDLE_MS, then twice that each empty pass up to
 *     DRAIN_IDLE_MAX_MS, so that idle rings cost nearly nothing however
 *     many there are;
 * and never over DRAIN_TAIL_MAX_MS while a tail is attached. With a
 * backlog (finished rings a pass left to release: drain.c), DRAIN_BUSY_MS.
 * A burst past a ring's threshold wakes the daemon whatever the wait. */
static inline uint64_t pace_next_wait(uint64_t prev_ms, bool moved, uint64_t records,
				      unsigned fill, bool tail, bool backlog)
{
	uint64_t ms;

	if (backlog)
		ms = DRAIN_BUSY_MS;
	else if (!moved)
		ms = prev_ms < DRAIN_IDLE_MS ? DRAIN_IDLE_MS
		     : prev_ms * 2 > DRAIN_IDLE_MAX_MS ? DRAIN_IDLE_MAX_MS : prev_ms * 2;
	else if (records < DRAIN_DENSE_RECORDS && fill < 1024 / 16)
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
 * The sweep visits a sleeping ring that nothing visited for
 * pace_bell_sweep() ms (drain.c: sweep_due()): an event the bell misses
 * (reserved before the ring fell asleep and published after, by a thread
 * preempted mid-record) waits at most that, since any visit after it was
 * published finds it; 1,000 rings asleep cost 1,000 visits per sweep
 * interval, not per pass, and rings that bells wake more often than that
 * cost none.
 * With a tail, that wait is what such an event is late; without, the
 * store's flush interval (1 s by default) bounds it, as for idle rings. */
#define BELL_QUIET_MS 6
#define BELL_SWEEP_TAIL_MS 100

static inline bool pace_bell_sleeps(uint64_t idle_ms)
{
	return idle_ms >= BELL_QUIET_MS;
}

/* A ring may also sleep at once, by its own timestamps, when the visit
 * that emptied it shows its writer silent for twice the gap: with 1,000
 * writers emitting a burst every 50 ms, waiting BELL_QUIET_MS kept each
 * ring awake for 6 passes of nothing after its burst (7.7 visits a burst,
 * 150,000 a second: most of the daemon's CPU, bench-scale).
 *
 * now: the ring's clock, read before the visit read the producer's
 * position; last_ts: the newest event the ring has given us; bell_ts: the
 * event that last rang its bell (pace_bell_ts()). The writer's next event
 * rings unless it is within the gap of the one before it (proto/bell.h).
 * So the rule holds when:
 *   - the ringing event was drained (bell_ts <= last_ts): one rung before
 *     the pass read the bell page but published after the visit's read
 *     would otherwise never be looked at again;
 *   - now >= last_ts + 2 x gap: an event the visit did not see either
 *     rings, or was stamped before last_ts + gap and so was still
 *     unpublished a whole gap after it was stamped (a thread preempted
 *     mid-record); its thread's next event then rings (stamped after it
 *     was published, so a gap or more after it). Only such an event that
 *     is also its thread's last before a silence waits for a sweep, as
 *     with BELL_QUIET_MS.
 * A writer lying about its timestamps only delays its own events. */
static inline bool pace_bell_quiet_ts(uint64_t now, uint64_t last_ts, uint64_t bell_ts)
{
	return now && last_ts && bell_ts <= last_ts && now > last_ts &&
	       now - last_ts >= 2 * RINGLOG_BELL_GAP;
}

/* The rule above takes the writer's clock and ours to be one clock. Ours
 * ahead of the writer's by a gap or more (TSCs not in step across
 * sockets, a writer in a time namespace) would make every ring look
 * quiet, a steady writer's included, whose events never ring. So a ring
 * uses it only once a visit has shown the two agree to within a gap:
 * after, a clock read after the visit read the producer's position
 * (every event drained was stamped before that); newest: the newest event
 * it drained. after - newest is how far ours is ahead plus how old that
 * event was: within a gap, ours is at most a gap ahead. */
static inline bool pace_clock_agrees(uint64_t after, uint64_t newest)
{
	return newest && after >= newest && after - newest <= RINGLOG_BELL_GAP;
}

/* The full timestamp of the event that rang a bell, from the bell's value
 * (its low half) and a clock read after the pass read it: the latest time
 * before now with that low half. Exact for a bell rung within 2^32 ticks
 * (1.6 s of a 2.6 GHz TSC) of now; an older one may come out later than
 * it was, which only keeps its ring awake (pace_bell_quiet_ts()). */
static inline uint64_t pace_bell_ts(uint64_t now, uint32_t bell)
{
	return now - (uint32_t)((uint32_t)now - bell);
}

static inline uint64_t pace_bell_sweep(bool tail)
{
	return tail ? BELL_SWEEP_TAIL_MS : IDLE_VISIT_MAX_MS;
}

#endif /* RINGLOG_DAEMON_PACE_H */
