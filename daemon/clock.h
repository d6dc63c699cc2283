/* daemon/clock.h - the daemon's clocks (clock.c): now, and the TSC
 * calibration every segment records so that readers get nanoseconds. */
#ifndef RINGLOG_DAEMON_CLOCK_H
#define RINGLOG_DAEMON_CLOCK_H

#include <stdint.h>

struct daemon;

/* clock_gettime(clock_id) in ns. */
uint64_t d_now(int clock_id);
/* A first TSC estimate over a 20 ms window (start). */
void clock_calibrate_start(struct daemon *d);
/* Measure again over the whole time since start (each new segment). */
void clock_refresh(struct daemon *d);
/* A stream's raw timestamp (TSC or monotonic, stream_clock) as wall ns. */
uint64_t clock_real_ns(const struct daemon *d, uint32_t stream_clock, uint64_t ts);

#endif /* RINGLOG_DAEMON_CLOCK_H */
