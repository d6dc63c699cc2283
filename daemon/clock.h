/* daemon/clock.h - the daemon's clocks (clock.c): now, and the TSC
 * calibration every segment records so that readers get nanoseconds. */
#ifndef RINGLOG_DAEMON_CLOCK_H
#define RINGLOG_DAEMON_CLOCK_H

#include <stdint.h>

#include "segment.h"

/* The calibration in force (what segments and tails are given) and the
 * first sample it is measured from. One per daemon (struct daemon); the
 * store refreshes it at each new segment. */
struct d_clock {
	struct ringlog_seg_clock seg;
	uint64_t cal_tsc0, cal_mono0;
};

/* clock_gettime(clock_id) in ns. */
uint64_t d_now(int clock_id);
/* A first TSC estimate over a 20 ms window (start). */
void clock_calibrate_start(struct d_clock *k);
/* Measure again over the whole time since start (each new segment). */
void clock_refresh(struct d_clock *k);
/* next, a calibration just measured, continuing old: its wall time at its
 * references raised to old's there when old's is later by less than
 * CLOCK_STEP_NS, so that no stream's time goes back from one segment to
 * the next (the first estimate's rate error made a thread's events drained
 * into the next segment earlier than its last ones in the one before, by
 * up to tens of us, and `read` sorts by time: a test saw seq 15837 after
 * 15839). A clock set back by more is followed: the wall time is never
 * held more than 1 ms ahead of the clock (at 1 s, an NTP step back of
 * half a second was never followed: a review). */
#define CLOCK_STEP_NS 1000000ull
void clock_continue(const struct ringlog_seg_clock *old, struct ringlog_seg_clock *next);
/* Now in a stream's own clock (stream_clock: RINGLOG_RING_CLOCK_TSC or 0,
 * monotonic ns), as its writer reads it; 0 where this build cannot read
 * it (TSC ticks off x86-64). Loads after it are not done before it. */
uint64_t clock_stream_now(uint32_t stream_clock);
/* A stream's raw timestamp (TSC or monotonic, stream_clock) as wall ns. */
uint64_t clock_real_ns(const struct d_clock *k, uint32_t stream_clock, uint64_t ts);

#endif /* RINGLOG_DAEMON_CLOCK_H */
