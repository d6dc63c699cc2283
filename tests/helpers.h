/* tests/helpers.h - small pieces shared by the test binaries. */
#ifndef RINGLOG_TESTS_HELPERS_H
#define RINGLOG_TESTS_HELPERS_H

#include <stddef.h>
#include <stdint.h>

#include "ringbuf.h"

/* splitmix64: a tiny deterministic generator, so every failure reproduces
 * from the seed the test prints. */
static inline uint64_t th_rand(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* A ring in exactly header + data_size bytes of heap, so that AddressSanitizer
 * flags any access outside it. Aborts the test on allocation failure. */
void *th_ring_alloc(uint64_t data_size);

/* Pin the calling thread to one CPU; returns 0 or -errno (a 1-CPU machine
 * simply runs unpinned). */
int th_pin_cpu(int cpu);

/* Criterion judges a test before its worker process exits, so LeakSanitizer's
 * exit-time report never fails one. Every suite names this as its .fini:
 * under ASan it runs the leak check after each test and fails the test on a
 * leak; otherwise it does nothing. */
void th_check_leaks(void);

/* Fill buf[0..len) with bytes derived from seq; th_check_fill() verifies. */
void th_fill(uint8_t *buf, uint32_t len, uint64_t seq);
int th_check_fill(const uint8_t *buf, uint32_t len, uint64_t seq);

#endif
