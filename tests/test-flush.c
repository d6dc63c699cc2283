/* tests/test-flush.c - what ringlog_flush(), ringlog_close() and the exit
 * promise while the daemon is killed and comes back: a flushed event is in
 * a segment; a program that exits while the daemon is down waits for the
 * next one (bounded) instead of losing its events; what could not be
 * handed over is reported, never silently dropped. Real daemon, real
 * program (tests/flusher.c) driven line by line. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"
#include "live.h"

TestSuite(flush, .fini = th_check_leaks, .timeout = 300);

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

struct prog {
	pid_t pid;
	FILE *in, *out;
};

static void prog_start(struct prog *p, const char *exit_timeout)
{
	int in[2], out[2];

	cr_assert_eq(pipe(in), 0);
	cr_assert_eq(pipe(out), 0);
	p->pid = fork();
	cr_assert(p->pid >= 0);
	if (p->pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		if (exit_timeout)
			setenv("RINGLOG_EXIT_TIMEOUT", exit_timeout, 1);
		execl(FLUSHER_PATH, "test-flusher", (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	p->in = fdopen(in[1], "w");
	p->out = fdopen(out[0], "r");
	setvbuf(p->in, NULL, _IOLBF, 0);
}

/* Send "cmd arg", return its answer line (static). */
static const char *prog_do(struct prog *p, const char *cmd, long arg)
{
	static char line[256];

	fprintf(p->in, "%s %ld\n", cmd, arg);
	fflush(p->in);
	cr_assert(fgets(line, sizeof(line), p->out), "the program gave no answer");
	line[strcspn(line, "\n")] = 0;
	cr_log_info("program: %s", line);
	return line;
}

/* "flush RC unstored N ms T" */
static int answer_rc(const char *a, uint64_t *unstored)
{
	int rc = 1;
	unsigned long long n = 0;

	cr_assert_eq(sscanf(a, "%*s %d unstored %llu", &rc, &n), 2, "answer: %s", a);
	if (unstored)
		*unstored = n;
	return rc;
}

static int prog_exit(struct prog *p)
{
	int st;

	fprintf(p->in, "exit\n");
	fclose(p->in);
	fclose(p->out);
	cr_assert_eq(waitpid(p->pid, &st, 0), p->pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static uint64_t stored_events(const char *store)
{
	struct live_read rd = { 0 };

	live_read_store(store, &rd);
	return rd.events;
}

static void kill_daemon(pid_t d)
{
	kill(d, SIGKILL);
	waitpid(d, NULL, 0);
}

/* The reproduction: 1,000 flushed, the daemon SIGKILLed, 500 more,
 * flush and close with the daemon down, the daemon back 0.5 s later. */
Test(flush, a_flushed_event_is_in_a_segment_and_a_daemon_that_returns_gets_the_rest)
{
	struct live e;
	struct prog p;
	uint64_t unstored;
	pid_t d;

	live_init(&e);
	d = live_daemon(&e, NULL);
	prog_start(&p, NULL);
	prog_do(&p, "emit", 1000);
	cr_assert_eq(answer_rc(prog_do(&p, "flush", 5000), NULL), 0);
	/* Flushed means written: readable now, whatever happens next. */
	cr_expect_eq(stored_events(e.store), 1000, "flush returned 0 with %llu of 1000 in the store",
		     (unsigned long long)stored_events(e.store));
	kill_daemon(d);
	prog_do(&p, "emit", 500);
	/* The flush waits for the next daemon, which comes 0.5 s later. */
	fprintf(p.in, "flush 10000\n");
	fflush(p.in);
	sleep_ms(500);
	d = live_daemon(&e, NULL);
	{
		char line[256];

		cr_assert(fgets(line, sizeof(line), p.out));
		cr_log_info("program: %s", line);
		cr_expect_eq(answer_rc(line, &unstored), 0, "flush after the restart: %s", line);
	}
	cr_expect_eq(answer_rc(prog_do(&p, "close", 10000), NULL), 0);
	cr_expect_eq(prog_exit(&p), 0);
	cr_expect_eq(stored_events(e.store), 1500, "stored %llu of 1500",
		     (unsigned long long)stored_events(e.store));
	live_daemon_stop(d);
	cr_expect_eq(stored_events(e.store), 1500);
	live_cleanup(&e);
}

/* The program exits (no flush, no close) while the daemon is down: the
 * at-exit path waits, reconnecting, for the next daemon. */
Test(flush, a_program_exiting_while_the_daemon_is_down_waits_for_the_next_one)
{
	struct live e;
	struct prog p;
	pid_t d;

	live_init(&e);
	d = live_daemon(&e, NULL);
	prog_start(&p, "5000");
	prog_do(&p, "emit", 300);
	cr_assert_eq(answer_rc(prog_do(&p, "flush", 5000), NULL), 0);
	kill_daemon(d);
	prog_do(&p, "emit", 700);
	fprintf(p.in, "exit\n");
	fflush(p.in);
	sleep_ms(700);
	cr_expect_eq(waitpid(p.pid, NULL, WNOHANG), 0, "the program exited without waiting");
	d = live_daemon(&e, NULL);
	{
		int st;

		cr_assert_eq(waitpid(p.pid, &st, 0), p.pid);
		cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	fclose(p.in);
	fclose(p.out);
	live_daemon_stop(d);
	cr_expect_eq(stored_events(e.store), 1000, "stored %llu of 1000",
		     (unsigned long long)stored_events(e.store));
	live_cleanup(&e);
}

/* No daemon within the timeout: the call says so and counts what is left. */
Test(flush, without_a_daemon_flush_and_close_report_what_was_not_stored)
{
	struct live e;
	struct prog p;
	uint64_t unstored = 0;
	pid_t d;

	live_init(&e);
	d = live_daemon(&e, NULL);
	prog_start(&p, "0");
	prog_do(&p, "emit", 100);
	cr_assert_eq(answer_rc(prog_do(&p, "flush", 5000), &unstored), 0);
	cr_expect_eq(unstored, 0);
	kill_daemon(d);
	prog_do(&p, "emit", 250);
	cr_expect_eq(answer_rc(prog_do(&p, "flush", 300), &unstored), -ENOTCONN);
	cr_expect_eq(unstored, 250, "unstored %llu, not 250", (unsigned long long)unstored);
	cr_expect_eq(answer_rc(prog_do(&p, "close", 300), &unstored), -ENOTCONN);
	cr_expect_eq(unstored, 250);
	cr_expect_eq(prog_exit(&p), 0);
	live_cleanup(&e);
}
