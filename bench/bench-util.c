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
#include <signal.h>
#include <sys/wait.h>

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

/* What one cache line costs to move from one CPU to the other, one way,
 * on this machine now: context for figures that pay it for every line one
 * side writes and the other reads (bench-ring's producer, bench-emit's
 * emitters and collectors). Printed because a VM's two vCPUs sit where
 * the host puts them, and that moved the ring producer's p50 more than any
 * change to the ring: on one commit, 9.2 ns in
 * every run whose lines moved in 39-60 ns, 10.6-17.7 ns in most runs
 * whose lines took 170-210 ns. Two threads bounce a counter; median of 20
 * blocks of 10,000. 0 when the two threads cannot be pinned apart. */
static volatile uint64_t bounce __attribute__((aligned(64)));
static volatile int bounce_unpinned; /* the other thread could not be pinned */

static void *bounce_main(void *arg)
{
	uint64_t n = *(const uint64_t *)arg;

	if (bu_pin_cpu(1) < 0) {
		bounce_unpinned = 1;
		return NULL;
	}
	for (uint64_t v = 1; v < 2 * n; v += 2) {
		/* no pause in the spins: it would add to what is measured */
		while (bounce != v)
			;
		bounce = v + 1;
	}
	return NULL;
}

double bu_line_transfer_ns(double tpn)
{
	enum { BLOCKS = 20, PER = 10000 };
	uint64_t n = (uint64_t)BLOCKS * PER, blocks[BLOCKS];
	pthread_t t;
	cpu_set_t was;
	double ns = 0;

	/* the caller's own CPUs come back after: bench-emit forks its jobs
	 * and collectors from this thread */
	if (pthread_getaffinity_np(pthread_self(), sizeof(was), &was))
		return 0;
	bounce = 0;
	bounce_unpinned = 0;
	if (bu_pin_cpu(0) < 0 || pthread_create(&t, NULL, bounce_main, &n))
		goto out;
	for (uint64_t b = 0, v = 1; b < BLOCKS; b++) {
		uint64_t t0 = bu_ticks();

		for (int i = 0; i < PER; i++, v += 2) {
			bounce = v;
			while (bounce != v + 1) {
				if (bounce_unpinned) {
					pthread_join(t, NULL);
					goto out;
				}
			}
		}
		blocks[b] = bu_ticks() - t0;
	}
	pthread_join(t, NULL);
	bu_sort(blocks, BLOCKS);
	/* a round trip is two transfers */
	ns = (double)blocks[BLOCKS / 2] / tpn / PER / 2;
out:
	pthread_setaffinity_np(pthread_self(), sizeof(was), &was);
	return ns;
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

FILE *bu_popen_pid(const char *cmd, pid_t *pid)
{
	int fd[2];
	FILE *f;

	if (pipe(fd) < 0)
		return NULL;
	*pid = fork();
	if (*pid < 0) {
		close(fd[0]);
		close(fd[1]);
		return NULL;
	}
	if (*pid == 0) {
		dup2(fd[1], 1);
		close(fd[0]);
		close(fd[1]);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	close(fd[1]);
	if (!(f = fdopen(fd[0], "r"))) {
		close(fd[0]);
		kill(*pid, SIGKILL);
		waitpid(*pid, NULL, 0);
	}
	return f;
}

void bu_pclose_pid(FILE *f, pid_t pid)
{
	fclose(f);
	waitpid(pid, NULL, 0);
}
