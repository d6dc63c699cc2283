/* proto/tsc.h - whether this CPU has an invariant TSC (CPUID 0x80000007
 * EDX bit 8): the one test both sides make, the library to stamp events
 * with TSC ticks (RINGLOG_RING_CLOCK_TSC, ring.h) and the daemon to
 * calibrate them. Anywhere but x86-64: false, and CLOCK_MONOTONIC serves. */
#ifndef RINGLOG_PROTO_TSC_H
#define RINGLOG_PROTO_TSC_H

#include <stdbool.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

static inline bool ringlog_invariant_tsc(void)
{
#if defined(__x86_64__)
	unsigned a, b, c, d;

	if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u)
		return false;
	__cpuid(0x80000007u, a, b, c, d);
	return (d >> 8) & 1;
#else
	return false;
#endif
}

#endif /* RINGLOG_PROTO_TSC_H */
