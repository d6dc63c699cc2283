/* tests/helpers.c - see helpers.h. */
#define _GNU_SOURCE
#include "helpers.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <criterion/criterion.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#endif

void th_check_leaks(void)
{
#if defined(__SANITIZE_ADDRESS__)
	/* An assertion in .fini is printed but not counted by Criterion
	 * 2.4. Aborting the worker still leaves the test listed as passed,
	 * but the binary then exits non-zero, which fails ctest. */
	if (__lsan_do_recoverable_leak_check()) {
		fprintf(stderr, "memory leaked by this test (LeakSanitizer report above)\n");
		abort();
	}
#endif
}

void *th_ring_alloc(uint64_t data_size)
{
	void *mem = malloc(RINGLOG_RING_HEADER_SIZE + data_size);

	cr_assert_not_null(mem, "cannot allocate a ring of %llu bytes",
			   (unsigned long long)data_size);
	return mem;
}

int th_pin_cpu(int cpu)
{
	cpu_set_t set;
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	if (n < 2)
		return 0;
	CPU_ZERO(&set);
	CPU_SET(cpu % n, &set);
	return -pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

void th_fill(uint8_t *buf, uint32_t len, uint64_t seq)
{
	uint64_t s = seq * 0x9e3779b97f4a7c15ull + len;

	for (uint32_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(s >> ((i & 7) * 8)) ^ (uint8_t)i;
}

int th_check_fill(const uint8_t *buf, uint32_t len, uint64_t seq)
{
	uint64_t s = seq * 0x9e3779b97f4a7c15ull + len;

	for (uint32_t i = 0; i < len; i++)
		if (buf[i] != ((uint8_t)(s >> ((i & 7) * 8)) ^ (uint8_t)i))
			return -1;
	return 0;
}
