/* bench/bench-util.h - timing helpers shared by the benchmarks. */
#ifndef RINGLOG_BENCH_UTIL_H
#define RINGLOG_BENCH_UTIL_H

#include <stddef.h>
#include <stdint.h>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
static inline uint64_t bu_ticks(void) { return __rdtsc(); }
#else
#include <time.h>
static inline uint64_t bu_ticks(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
#endif

/* Ticks per nanosecond, measured against CLOCK_MONOTONIC_RAW over ~200 ms. */
double bu_ticks_per_ns(void);
uint64_t bu_now_ns(void);
int bu_pin_cpu(int cpu);
/* What interrupts a thread that does nothing but read the clock for
 * SECONDS: a gap of 5 us or more between two reads is time it did not
 * have (the hypervisor ran something else on its vCPU, an interrupt, a
 * preemption). *per_s: such gaps per second; *lost_pct: their share of the
 * time. Steal time (/proc/stat) misses them where the hypervisor does not
 * report it, as on the machine docs/PERFORMANCE.md was measured on. */
void bu_hiccups(double seconds, double tpn, double *per_s, double *lost_pct);
/* What one cache line costs to move from CPU 0 to CPU 1, one way, now
 * (ns; 0 when the threads cannot be pinned apart). The calling thread's
 * CPUs are as before on return. */
double bu_line_transfer_ns(double tpn);
/* Sort samples in place and return the q-quantile (0..1). */
void bu_sort(uint64_t *v, size_t n);
uint64_t bu_quantile(const uint64_t *sorted, size_t n, double q);

/* The benchmarks' tables: printed, and also written to the file
 * bu_table_open() opened (none: printed only). */
#include <stdio.h>
extern FILE *bu_table;
void bu_table_open(const char *path);
void bu_table_close(void);
void bu_out(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* popen(cmd, "r") that also gives the child's pid, so that it can be
 * ended: a `ringlog tail` follows a stopped ringlogd until it is told to
 * end (SIGINT), where it used to end with the daemon, and the benchmarks
 * that waited for that hung. cmd runs under /bin/sh -c: begin it with
 * exec, and the pid is the program's. NULL on error. */
#include <sys/types.h>
FILE *bu_popen_pid(const char *cmd, pid_t *pid);
/* Close what bu_popen_pid() opened and reap the child. */
void bu_pclose_pid(FILE *f, pid_t pid);

#endif
