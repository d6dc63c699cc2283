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

#if defined(__x86_64__)
#include <cpuid.h>

static bool cpu_has_invariant_tsc(void)
{
	unsigned a, b, c, d;

	if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u)
		return false;
	__cpuid(0x80000007u, a, b, c, d);
	return (d >> 8) & 1;
}
#endif

uint64_t lib_now_ns(int clock_id)
{
	struct timespec ts;

	clock_gettime(clock_id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void lib_clock_init(void)
{
	const char *force = getenv("RINGLOG_CLOCK");

	lib.tsc = false;
#if defined(__x86_64__)
	lib.tsc = cpu_has_invariant_tsc();
#endif
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
