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

#include "decode.h"
#include "helpers.h"

TestSuite(e2e, .fini = th_check_leaks, .timeout = 300);

struct env {
	char dir[256], store[300], sock[300];
};

static void env_init(struct env *e)
{
	snprintf(e->dir, sizeof(e->dir), "/tmp/ringlog-e2e-XXXXXX");
	cr_assert(mkdtemp(e->dir));
	snprintf(e->store, sizeof(e->store), "%s/store", e->dir);
	snprintf(e->sock, sizeof(e->sock), "%s/sock", e->dir);
	setenv("RINGLOG_SOCKET", e->sock, 1);
}

static pid_t start_daemon(const struct env *e, const char *backend)
{
	pid_t pid = fork();

	cr_assert(pid >= 0);
	if (pid == 0) {
		execl(RINGLOGD_PATH, "ringlogd", "--storage", e->store, "--socket", e->sock,
		      "--io-backend", backend, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 100; i++) {
		struct stat st;

		if (stat(e->sock, &st) == 0)
			return pid;
		usleep(50000);
	}
	cr_assert_fail("ringlogd did not create %s within 5 s", e->sock);
	return -1;
}

static void stop_daemon(pid_t pid)
{
	int st;

	kill(pid, SIGTERM);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "ringlogd: status %d", st);
}

static pid_t start_emitter(int threads, long events, const char *wait)
{
	char t[16], n[32];
	pid_t pid = fork();

	snprintf(t, sizeof(t), "%d", threads);
	snprintf(n, sizeof(n), "%ld", events);
	cr_assert(pid >= 0);
	if (pid == 0) {
		/* Enough ring for the whole run: this test is about exactness,
		 * not about overflow (the ring tests cover that). */
		setenv("RINGLOG_RING_SIZE", "32M", 1);
		if (wait)
			execl(EMITTER_PATH, "test-emitter", t, n, "--wait-daemon", wait, (char *)NULL);
		else
			execl(EMITTER_PATH, "test-emitter", t, n, (char *)NULL);
		_exit(127);
	}
	return pid;
}

static void wait_ok(pid_t pid)
{
	int st;

	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "emitter: status %d", st);
}

/* Per (pid, thread): the next expected seq. */
struct seen {
	uint32_t pid[64];
	uint64_t next[64][256];
	int npid;
	uint64_t events, dups_or_gaps, lost, damaged;
};

static int on_event(void *ctx, const struct ringlog_dec_event *e)
{
	struct seen *s = ctx;
	int p;

	for (p = 0; p < s->npid && s->pid[p] != e->writer->w.pid; p++)
		;
	if (p == s->npid) {
		cr_assert(s->npid < 64);
		s->pid[s->npid++] = e->writer->w.pid;
	}
	cr_assert_eq(e->desc->nfields, 3);
	uint64_t t = e->values[0].u, seq = e->values[1].u;

	cr_assert(t < 256);
	if (seq != s->next[p][t])
		s->dups_or_gaps++;
	s->next[p][t] = seq + 1;
	cr_assert_eq(e->values[2].len, 15);
	s->events++;
	return 0;
}

static void on_loss(void *ctx, const struct ringlog_dec_loss *l)
{
	((struct seen *)ctx)->lost += l->records;
}

static void on_damage(void *ctx, const char *what)
{
	(void)what;
	((struct seen *)ctx)->damaged++;
}

static void read_store(const struct env *e, struct seen *s)
{
	struct dirent **names;
	int n = scandir(e->store, &names, NULL, alphasort);

	cr_assert(n >= 0);
	memset(s, 0, sizeof(*s));
	for (int i = 0; i < n; i++) {
		char path[600];
		struct ringlog_seg_file f;
		struct ringlog_decoder d;
		struct ringlog_seg_clock clk;
		const char *why;

		if (!strstr(names[i]->d_name, ".rlseg")) {
			free(names[i]);
			continue;
		}
		snprintf(path, sizeof(path), "%s/%s", e->store, names[i]->d_name);
		free(names[i]);
		cr_assert_eq(ringlog_seg_open(&f, path, &why), 0);
		cr_assert(f.hdr_ok && f.hdr.state == RINGLOG_SEG_CLOSED,
			  "%s was not sealed by the SIGTERM shutdown", path);
		ringlog_seg_clock_of(&f.hdr, &clk);
		ringlog_dec_init(&d, &clk);
		d.ctx = s;
		d.on_event = on_event;
		d.on_loss = on_loss;
		d.on_damage = on_damage;
		while (ringlog_seg_next(&f, false) == 1)
			ringlog_dec_records(&d, f.body, f.chunk.body_len);
		cr_assert_eq(f.damaged_bytes, 0);
		ringlog_dec_free(&d);
		ringlog_seg_close(&f);
	}
	free(names);
}

static void cleanup(struct env *e)
{
	char cmd[400];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", e->dir);
	cr_assert_eq(system(cmd), 0);
}

static void run_exact(const char *backend, int procs, int threads, long events)
{
	struct env e;
	struct seen *s = calloc(1, sizeof(*s));
	pid_t d, em[16];

	env_init(&e);
	d = start_daemon(&e, backend);
	for (int i = 0; i < procs; i++)
		em[i] = start_emitter(threads, events, NULL);
	for (int i = 0; i < procs; i++)
		wait_ok(em[i]);
	stop_daemon(d);
	read_store(&e, s);
	cr_expect_eq(s->damaged, 0);
	cr_expect_eq(s->lost, 0, "lost %llu", (unsigned long long)s->lost);
	cr_expect_eq(s->dups_or_gaps, 0, "order broken %llu times", (unsigned long long)s->dups_or_gaps);
	cr_expect_eq(s->events, (uint64_t)procs * threads * events, "stored %llu of %llu",
		     (unsigned long long)s->events, (unsigned long long)procs * threads * events);
	cr_expect_eq(s->npid, procs);
	free(s);
	cleanup(&e);
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
	struct env e;
	struct seen *s = calloc(1, sizeof(*s));
	pid_t em, d;

	env_init(&e);
	em = start_emitter(2, 20000, "20");
	usleep(500000); /* it emits into its rings with nobody listening */
	d = start_daemon(&e, "auto");
	wait_ok(em);
	stop_daemon(d);
	read_store(&e, s);
	cr_expect_eq(s->events, 40000u, "stored %llu of 40000", (unsigned long long)s->events);
	cr_expect_eq(s->dups_or_gaps, 0);
	free(s);
	cleanup(&e);
}
