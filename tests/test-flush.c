/* tests/test-flush.c - what ringlog_flush(), ringlog_close() and the exit
 * promise while the daemon is killed and comes back: a flushed event is in
 * a segment; a program that exits while the daemon is down waits for the
 * next one (bounded) instead of losing its events; what could not be
 * handed over is reported, never silently dropped. Real daemon, real
 * program (tests/flusher.c) driven line by line. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
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

/* ------------------------------------------------------------------------
 * The service manager's fd store, played by the test: it receives
 * FDSTORE=1 / FDSTOREREMOVE=1 on a $NOTIFY_SOCKET of its own, as systemd
 * does, and hands what it holds to the next daemon through LISTEN_FDS and
 * LISTEN_FDNAMES.
 */

struct fdstore {
	int sock;
	char path[300];
	int n;
	char name[256][256];
	int fd[256];
};

static void fdstore_open(struct fdstore *s, const struct live *e)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };

	memset(s, 0, sizeof(*s));
	snprintf(s->path, sizeof(s->path), "%s/notify", e->dir);
	cr_assert_lt(strlen(s->path), sizeof(a.sun_path));
	memcpy(a.sun_path, s->path, strlen(s->path) + 1);
	s->sock = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	cr_assert(s->sock >= 0);
	cr_assert_eq(bind(s->sock, (struct sockaddr *)&a, sizeof(a)), 0);
	setenv("NOTIFY_SOCKET", s->path, 1);
	setenv("FDSTORE", "256", 1);
}

/* Take every message waiting, as systemd would. */
static void fdstore_poll(struct fdstore *s)
{
	for (;;) {
		char buf[4096], name[256] = "";
		union {
			char c[CMSG_SPACE(sizeof(int) * 8)];
			struct cmsghdr align;
		} u;
		struct iovec iov = { buf, sizeof(buf) - 1 };
		struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.c,
				    .msg_controllen = sizeof(u.c) };
		ssize_t n = recvmsg(s->sock, &m, MSG_CMSG_CLOEXEC);
		int fd = -1;
		const char *p;

		if (n < 0)
			return;
		buf[n] = 0;
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
			if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
				memcpy(&fd, CMSG_DATA(c), sizeof(int));
		if ((p = strstr(buf, "FDNAME=")))
			sscanf(p + 7, "%255[^\n]", name);
		if (strstr(buf, "FDSTORE=1") && fd >= 0 && s->n < 256) {
			snprintf(s->name[s->n], sizeof(s->name[0]), "%s", name);
			s->fd[s->n++] = fd;
		} else if (strstr(buf, "FDSTOREREMOVE=1")) {
			for (int i = 0; i < s->n;)
				if (!strcmp(s->name[i], name)) {
					close(s->fd[i]);
					s->fd[i] = s->fd[--s->n];
					memcpy(s->name[i], s->name[s->n], sizeof(s->name[0]));
				} else {
					i++;
				}
		} else if (fd >= 0) {
			close(fd);
		}
	}
}

/* Start ringlogd with what the store holds as LISTEN_FDS 3.. */
static pid_t fdstore_daemon(struct fdstore *s, const struct live *e)
{
	pid_t pid = fork();

	cr_assert(pid >= 0);
	if (pid == 0) {
		char names[256 * 256 + 1] = "", num[32];
		int log = open(e->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
		int high[256];

		dup2(log, 1);
		dup2(log, 2);
		/* Out of the way first, then into place. */
		for (int i = 0; i < s->n; i++)
			high[i] = fcntl(s->fd[i], F_DUPFD, 1000);
		for (int i = 0; i < s->n; i++) {
			dup2(high[i], 3 + i);
			strcat(names, i ? ":" : "");
			strcat(names, s->name[i]);
		}
		snprintf(num, sizeof(num), "%d", s->n);
		setenv("LISTEN_FDS", num, 1);
		setenv("LISTEN_FDNAMES", names, 1);
		snprintf(num, sizeof(num), "%d", (int)getpid());
		setenv("LISTEN_PID", num, 1);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execl(RINGLOGD_PATH, "ringlogd", "--storage", e->store, "--socket", e->sock,
		      (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 200; i++) {
		struct stat st;

		if (stat(e->sock, &st) == 0)
			return pid;
		cr_assert_eq(waitpid(pid, NULL, WNOHANG), 0, "ringlogd exited before listening");
		sleep_ms(25);
	}
	cr_assert_fail("ringlogd did not listen");
	return -1;
}

/* Per program (pid): how many Seq events, and the highest seq + 1. */
struct per_pid {
	uint32_t pid[4];
	uint64_t n[4], next[4], dups[4];
};

static int count_seq(void *ctx, const struct ringlog_dec_event *ev)
{
	struct per_pid *c = ctx;
	uint32_t pid = ev->writer ? ev->writer->w.pid : 0;
	uint64_t seq = ev->values[0].u;
	int i = 0;

	while (i < 4 && c->pid[i] && c->pid[i] != pid)
		i++;
	if (i == 4)
		return 0;
	c->pid[i] = pid;
	c->n[i]++;
	if (seq < c->next[i])
		c->dups[i]++;
	else
		c->next[i] = seq + 1;
	return 0;
}

static uint64_t events_of(const struct per_pid *c, pid_t pid, uint64_t *dups)
{
	for (int i = 0; i < 4; i++)
		if (c->pid[i] == (uint32_t)pid) {
			*dups = c->dups[i];
			return c->n[i];
		}
	*dups = 0;
	return 0;
}

Test(flush, the_fd_store_keeps_the_rings_of_programs_that_exit_while_the_daemon_is_down)
{
	struct live e;
	struct fdstore *s = calloc(1, sizeof(*s));
	struct prog a, b;
	struct per_pid cnt = { 0 };
	struct live_read rd = { .ctx = &cnt, .on_event = count_seq };
	uint64_t dups_a, dups_b, na, nb;
	pid_t d, pa, pb;

	live_init(&e);
	fdstore_open(s, &e);
	d = live_daemon(&e, NULL);
	prog_start(&a, "0"); /* A does not wait at exit: only the store saves it */
	prog_start(&b, NULL);
	pa = a.pid;
	pb = b.pid;
	prog_do(&a, "emit", 1000);
	prog_do(&b, "emit", 1000);
	cr_assert_eq(answer_rc(prog_do(&a, "flush", 5000), NULL), 0);
	cr_assert_eq(answer_rc(prog_do(&b, "flush", 5000), NULL), 0);
	fdstore_poll(s);
	cr_log_info("fd store: %d descriptors after registration", s->n);
	cr_expect_geq(s->n, 4, "expected a metadata region and a ring per program, got %d", s->n);

	kill_daemon(d);
	fdstore_poll(s);
	/* A writes 500 more and exits with nobody to take them; B goes on. */
	prog_do(&a, "emit", 500);
	cr_expect_eq(prog_exit(&a), 0);
	prog_do(&b, "emit", 500);

	d = fdstore_daemon(s, &e);
	/* B reconnects and takes its ring back from what the store gave. */
	prog_do(&b, "emit", 100);
	cr_expect_eq(answer_rc(prog_do(&b, "flush", 10000), NULL), 0);
	cr_expect_eq(answer_rc(prog_do(&b, "close", 10000), NULL), 0);
	cr_expect_eq(prog_exit(&b), 0);
	/* Everything drained and let go: the store is empty again. */
	for (int i = 0; i < 100 && s->n; i++) {
		sleep_ms(50);
		fdstore_poll(s);
	}
	cr_expect_eq(s->n, 0, "%d descriptors left in the fd store (first: %s)", s->n, s->name[0]);
	live_daemon_stop(d);
	live_read_store(e.store, &rd);
	na = events_of(&cnt, pa, &dups_a);
	nb = events_of(&cnt, pb, &dups_b);
	cr_log_info("stored: A (exited while down) %llu of 1500, B (alive) %llu of 1600; dups %llu/%llu",
		    (unsigned long long)na, (unsigned long long)nb, (unsigned long long)dups_a,
		    (unsigned long long)dups_b);
	cr_expect_eq(na, 1500, "A: %llu of 1500 stored", (unsigned long long)na);
	cr_expect_eq(nb, 1600, "B: %llu of 1600 stored", (unsigned long long)nb);
	cr_expect_eq(dups_a + dups_b, 0);
	for (int i = 0; i < s->n; i++)
		close(s->fd[i]);
	close(s->sock);
	unsetenv("NOTIFY_SOCKET");
	unsetenv("FDSTORE");
	free(s);
	live_cleanup(&e);
}

/* A host with no daemon at all (no socket): the exit does not wait, and
 * `ringlog emit` fails at once instead of retrying for its timeout. */
Test(flush, with_no_daemon_on_the_host_exit_and_emit_do_not_wait)
{
	struct live e;
	struct prog p;
	struct timespec t0, t1;
	char cmd[700], out[1024];
	double ms;
	int rc;

	live_init(&e);
	/* No daemon ever started: e.sock does not exist. */
	prog_start(&p, "10000");
	prog_do(&p, "emit", 10);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	cr_expect_eq(prog_exit(&p), 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	cr_log_info("exit with no daemon on the host: %.0f ms (RINGLOG_EXIT_TIMEOUT 10000)", ms);
	cr_expect_lt(ms, 5000, "the exit waited %.0f ms for a daemon the host does not have", ms);

	snprintf(cmd, sizeof(cmd), "RINGLOG_EXIT_TIMEOUT=10000 " RINGLOG_CLI_PATH " emit A B x=1 2>&1");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	rc = live_run(cmd, out, sizeof(out));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	cr_log_info("ringlog emit with no daemon: exit %d after %.0f ms: %s", rc, ms, out);
	cr_expect_eq(rc, 3, "emit: exit %d", rc);
	cr_expect(strstr(out, "the event was not stored"), "emit said: %s", out);
	cr_expect_lt(ms, 5000, "emit waited %.0f ms with no socket", ms);
	live_cleanup(&e);
}
