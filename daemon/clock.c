/* daemon/clock.c - calibrate the TSC against CLOCK_MONOTONIC/REALTIME.
 *
 * Clients stamp events with raw TSC ticks (client/clock.c); the daemon owns
 * the conversion. A first estimate comes from a 20 ms window at start,
 * slept through rather than spun (its two ends are each a tight sample, so
 * sleeping costs no precision; spinning cost 20 ms of CPU at every start);
 * every new segment re-measures over the whole time since start, so the
 * error shrinks as the daemon runs. Each segment records the calibration
 * it was written with (proto/segment.h), continuing the one before it
 * (clock_continue()): one thread's events never go back in time where a
 * segment ends.
 */
#define _GNU_SOURCE
#include "clock.h"
#include "decode.h"
#include "tsc.h"

#include <time.h>

uint64_t d_now(int clock_id)
{
	struct timespec ts;

	clock_gettime(clock_id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#if defined(__x86_64__)
static uint64_t rdtsc(void)
{
	return __builtin_ia32_rdtsc();
}
#else
static uint64_t rdtsc(void) { return 0; }
#endif

uint64_t clock_stream_now(uint32_t stream_clock)
{
	uint64_t t;

	if (!(stream_clock & RINGLOG_RING_CLOCK_TSC))
		return d_now(CLOCK_MONOTONIC); /* the vDSO's read is ordered */
	t = rdtsc();
#if defined(__x86_64__)
	/* RDTSC is not ordered with the loads after it: the fence keeps the
	 * caller's next load (a ring's producer position) after the read. */
	__builtin_ia32_lfence();
#endif
	return t;
}

/* A (tsc, mono) pair taken as close together as we can: the tightest of a
 * few tries. */
static void sample(uint64_t *tsc, uint64_t *mono, uint64_t *real)
{
	uint64_t best = UINT64_MAX;

	for (int i = 0; i < 5; i++) {
		uint64_t t0 = rdtsc();
		uint64_t m = d_now(CLOCK_MONOTONIC);
		uint64_t r = d_now(CLOCK_REALTIME);
		uint64_t t1 = rdtsc();

		if (t1 - t0 < best) {
			best = t1 - t0;
			*tsc = t0 + (t1 - t0) / 2;
			*mono = m;
			if (real)
				*real = r;
		}
	}
}

void clock_calibrate_start(struct d_clock *k)
{
	uint64_t t1 = 0, m1 = 0, r1 = 0;

	if (!ringlog_invariant_tsc()) {
		k->seg.tsc_hz = 0;
		sample(&k->seg.tsc_ref, &k->seg.mono_ref, &k->seg.real_ref);
		return;
	}
	sample(&k->cal_tsc0, &k->cal_mono0, NULL);
	for (;;) {
		sample(&t1, &m1, &r1);
		if (m1 - k->cal_mono0 >= 20000000u)
			break;
		/* the rest of the window; a signal cuts it short, the loop
		 * sleeps again */
		struct timespec rest = { 0, (long)(20000000u - (m1 - k->cal_mono0)) };

		nanosleep(&rest, NULL);
	}
	k->seg.tsc_hz = (uint64_t)((__int128)(t1 - k->cal_tsc0) * 1000000000 /
				   (m1 - k->cal_mono0));
	k->seg.tsc_ref = t1;
	k->seg.mono_ref = m1;
	k->seg.real_ref = r1;
}

void clock_continue(const struct ringlog_seg_clock *old, struct ringlog_seg_clock *next)
{
	uint64_t at_tsc = ringlog_dec_real_ns(old, RINGLOG_RING_CLOCK_TSC, next->tsc_ref);
	uint64_t at_mono = ringlog_dec_real_ns(old, 0, next->mono_ref);
	uint64_t want = at_mono;

	if (old->real_ref == RINGLOG_SEG_CLOCK_UNKNOWN)
		return;
	if (old->tsc_hz && next->tsc_hz && at_tsc > want)
		want = at_tsc;
	if (want > next->real_ref && want - next->real_ref < CLOCK_STEP_NS)
		next->real_ref = want;
}

void clock_refresh(struct d_clock *k)
{
	struct ringlog_seg_clock next = k->seg;
	uint64_t t = 0, m = 0, r = 0;

	sample(&t, &m, &r);
	if (next.tsc_hz && m > k->cal_mono0)
		next.tsc_hz = (uint64_t)((__int128)(t - k->cal_tsc0) * 1000000000 /
					 (m - k->cal_mono0));
	next.tsc_ref = t;
	next.mono_ref = m;
	next.real_ref = r;
	clock_continue(&k->seg, &next);
	k->seg = next;
}

uint64_t clock_real_ns(const struct d_clock *k, uint32_t stream_clock, uint64_t ts)
{
	return ringlog_dec_real_ns(&k->seg, stream_clock, ts);
}
