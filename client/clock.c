/* client/clock.c - the hot-path clock.
 *
 * The invariant TSC where the CPU has one (CPUID 0x80000007 EDX bit 8):
 * constant rate, synchronised across cores, ~10 ns to read here against
 * ~25 ns for clock_gettime(). The library never converts ticks: the daemon
 * calibrates the TSC against CLOCK_MONOTONIC/CLOCK_REALTIME and records the
 * calibration in every segment (proto/segment.h), and the library sends one
 * sample of its own with HELLO. Without an invariant TSC, events carry
 * CLOCK_MONOTONIC nanoseconds and the ring says so (RINGLOG_RING_CLOCK_TSC
 * clear).
 */
#define _GNU_SOURCE
#include "lib.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tsc.h"

uint64_t lib_now_ns(int clock_id)
{
	struct timespec ts;

	clock_gettime(clock_id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void lib_clock_init(void)
{
	const char *force = getenv("RINGLOG_CLOCK");

	lib.tsc = ringlog_invariant_tsc();
	/* RINGLOG_CLOCK=monotonic: for hosts whose TSC the user distrusts
	 * (some VMs), and for testing the other path. */
	if (force && !strcmp(force, "monotonic"))
		lib.tsc = false;
}

uint64_t lib_clock(void)
{
#if defined(__x86_64__)
	if (__builtin_expect(lib.tsc, 1))
		return __builtin_ia32_rdtsc();
#endif
	return lib_now_ns(CLOCK_MONOTONIC);
}
