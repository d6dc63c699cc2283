/* bench/bench-util.c - see bench-util.h. */
#define _GNU_SOURCE
#include "bench-util.h"

#include <stdarg.h>

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

uint64_t bu_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

double bu_ticks_per_ns(void)
{
	uint64_t n0 = bu_now_ns(), t0 = bu_ticks(), n1, t1;
	struct timespec nap = { 0, 200 * 1000 * 1000 };

	nanosleep(&nap, NULL);
	n1 = bu_now_ns();
	t1 = bu_ticks();
	return (double)(t1 - t0) / (double)(n1 - n0);
}

void bu_hiccups(double seconds, double tpn, double *per_s, double *lost_pct)
{
	uint64_t gap = (uint64_t)(5000 * tpn), n = 0, lost = 0;
	uint64_t t0 = bu_ticks(), end = t0 + (uint64_t)(seconds * 1e9 * tpn), prev = t0, t = t0;

	while (t < end) {
		t = bu_ticks();
		if (t - prev >= gap) {
			n++;
			lost += t - prev;
		}
		prev = t;
	}
	*per_s = (double)n / seconds;
	*lost_pct = 100.0 * (double)lost / (double)(t - t0);
}

int bu_pin_cpu(int cpu)
{
	cpu_set_t set;
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	if (n < 2)
		return -ENODEV;
	CPU_ZERO(&set);
	CPU_SET(cpu % n, &set);
	return -pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

void bu_sort(uint64_t *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_u64);
}

uint64_t bu_quantile(const uint64_t *sorted, size_t n, double q)
{
	size_t i = (size_t)(q * (double)(n - 1) + 0.5);
	return n ? sorted[i < n ? i : n - 1] : 0;
}

FILE *bu_table;

void bu_table_open(const char *path)
{
	bu_table = fopen(path, "w");
}

void bu_table_close(void)
{
	if (bu_table)
		fclose(bu_table);
	bu_table = NULL;
}

void bu_out(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	if (bu_table) {
		va_start(ap, fmt);
		vfprintf(bu_table, fmt, ap);
		va_end(ap);
	}
}
