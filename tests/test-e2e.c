/* tests/test-e2e.c - the real daemon and real client processes: every
 * event stored exactly once, per-thread order kept, read back from the
 * segment files with the same decoder as `ringlog read`. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"
#include "live.h"

TestSuite(e2e, .fini = th_check_leaks, .timeout = 300);

static pid_t start_emitter(int threads, long events, const char *wait)
{
	char t[16], n[32];
	const char *argv[] = { EMITTER_PATH, t, n, wait ? "--wait-daemon" : NULL, wait, NULL };
	/* Enough ring for the whole run: this test is about exactness, not
	 * about overflow (the ring tests cover that). */
	const char *env[] = { "RINGLOG_RING_SIZE=32M", NULL };

	snprintf(t, sizeof(t), "%d", threads);
	snprintf(n, sizeof(n), "%ld", events);
	return live_spawn(argv, env, "/dev/null");
}

/* What the store holds: order per thread, and the totals. */
struct seen {
	struct live_order o;
	uint64_t events, lost, damaged;
};

static void read_all(const struct live *e, struct seen *s)
{
	struct live_read r = { .ctx = &s->o, .on_event = live_order_event };

	live_read_store(e->store, &r);
	s->events = r.events;
	s->lost = r.lost;
	s->damaged = r.damaged_bytes + r.damaged_records;
	cr_expect_eq(r.closed, r.segments, "%u of %u segments were not sealed by SIGTERM",
		     r.segments - r.closed, r.segments);
}

static void run_exact(const char *backend, int procs, int threads, long events)
{
	struct live e;
	struct seen *s = calloc(1, sizeof(*s));
	pid_t d, em[16];

	live_init(&e);
	d = live_daemon(&e, "--io-backend", backend, NULL);
	for (int i = 0; i < procs; i++)
		em[i] = start_emitter(threads, events, NULL);
	for (int i = 0; i < procs; i++)
		live_wait_ok(em[i], "emitter");
	live_daemon_stop(d);
	read_all(&e, s);
	cr_expect_eq(s->damaged, 0);
	cr_expect_eq(s->lost, 0, "lost %llu", (unsigned long long)s->lost);
	cr_expect_eq(s->o.dups_or_gaps, 0, "order broken %llu times", (unsigned long long)s->o.dups_or_gaps);
	cr_expect_eq(s->events, (uint64_t)procs * threads * events, "stored %llu of %llu",
		     (unsigned long long)s->events, (unsigned long long)procs * threads * events);
	cr_expect_eq(s->o.npid, procs);
	free(s);
	live_cleanup(&e);
}

Test(e2e, four_processes_four_threads_every_event_stored_once_in_order_io_uring)
{
	run_exact("io_uring", 4, 4, 250000);
}

Test(e2e, thread_pool_backend_stores_every_event_once_in_order)
{
	run_exact("pool", 4, 4, 250000);
}

Test(e2e, events_emitted_before_the_daemon_starts_are_stored)
{
	struct live e;
	struct seen *s = calloc(1, sizeof(*s));
	pid_t em, d;

	live_init(&e);
	em = start_emitter(2, 20000, "20");
	usleep(500000); /* it emits into its rings with nobody listening */
	d = live_daemon(&e, NULL);
	live_wait_ok(em, "emitter");
	live_daemon_stop(d);
	read_all(&e, s);
	cr_expect_eq(s->events, 40000u, "stored %llu of 40000", (unsigned long long)s->events);
	cr_expect_eq(s->o.dups_or_gaps, 0);
	free(s);
	live_cleanup(&e);
}
