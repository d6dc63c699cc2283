/* bench/collector.h - a collector the end-to-end benchmark runs the same
 * workload through: ringlog (collector-ringlog.c) and LTTng-UST
 * (collector-lttng.c). One run = start, run the collector's job program
 * (bench/job.h), stop with everything on disk, read back what was stored.
 */
#ifndef RINGLOG_BENCH_COLLECTOR_H
#define RINGLOG_BENCH_COLLECTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct collector {
	const char *name;
	char job[4096];  /* the emitting program */
	/* Events per thread at full speed: enough that emitting lasts over a
	 * second, so that what is drained from the buffers after the emitter
	 * stops (counted as stored) is a small part of the rate. */
	uint64_t full_events, full_events_quick;
	/* Once before all runs, once after. setup returns 0, or -1 with the
	 * reason in why (the collector is then left out of the table). */
	int (*setup)(struct collector *c, char *why, size_t len);
	void (*teardown)(struct collector *c);
	/* Per run: ready to receive; everything stored and the collector
	 * idle; CPU time of the collector's own processes so far. */
	int (*start)(struct collector *c);
	void (*stop)(struct collector *c);
	uint64_t (*cpu_ns)(struct collector *c);
	/* Events of the workload read back from what the run stored, and the
	 * bytes it took on disk; then the run's files go. */
	void (*count)(struct collector *c, uint64_t *events, uint64_t *bytes);
	void *priv;
};

/* Utilities shared by the collectors (collector-util.c). */
uint64_t coll_proc_cpu_ns(int pid);
uint64_t coll_dir_bytes(const char *dir);
void coll_rm_rf(const char *dir);
int coll_run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

extern struct collector collector_ringlog, collector_lttng;
/* ringlog's run directory (socket, store), for the tail benchmark. */
const char *collector_ringlog_socket(void);
/* The running ringlogd's pid (0: none), for figures of its own */
int collector_ringlog_pid(void);
void collector_ringlog_paths(const char *ringlogd, const char *self_dir);

#endif
