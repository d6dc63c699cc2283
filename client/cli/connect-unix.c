/* client/cli/connect-unix.c - the command's connection to ringlogd: the
 * control socket (Unix stream socket) and framed messages on it. */
#define _GNU_SOURCE
#include "cli.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "ctl.h"

static volatile sig_atomic_t stop;
static volatile sig_atomic_t conn_fd = -1;

/* Shutting the socket's read side is async-signal-safe, and any read on it
 * then returns at once. */
static void on_interrupt(int sig)
{
	(void)sig;
	stop = 1;
	if (conn_fd >= 0)
		shutdown(conn_fd, SHUT_RD);
}

void cli_catch_interrupt(void)
{
	struct sigaction sa = { .sa_handler = on_interrupt };

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

bool cli_interrupted(void)
{
	return stop;
}

void cli_interrupt_after(uint64_t ms)
{
	struct sigaction sa = { .sa_handler = on_interrupt };
	struct itimerval t = { .it_value = { .tv_sec = (time_t)(ms / 1000),
					     .tv_usec = (suseconds_t)(ms % 1000 * 1000 + 1) } };

	/* the deadline as Ctrl-C: the blocked read returns, exit 0 */
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &t, NULL);
}

void cli_watch(int fd)
{
	conn_fd = fd;
	if (fd >= 0 && stop)
		shutdown(fd, SHUT_RD);
}

int cli_connect(const char *path, bool quiet)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(a.sun_path)) {
		fprintf(stderr, "ringlog: socket path %s is too long\n", path);
		return -ENAMETOOLONG;
	}
	strcpy(a.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		int err = errno;

		if (!quiet && (err == EACCES || err == EPERM)) {
			char why[1024];

			/* Not "is it running?": the file said no, whoever listens. */
			cli_refusal(path, why, sizeof(why));
			fprintf(stderr, "ringlog: cannot reach ringlogd at %s: %s\n", path, why);
		} else if (!quiet) {
			fprintf(stderr, "ringlog: cannot reach ringlogd at %s: %s; is the service running? "
				"(systemctl status ringlogd)\n", path, strerror(err));
		}
		close(fd);
		return -err;
	}
	return fd;
}

void cli_refusal(const char *path, char *buf, size_t len)
{
	ringlog_ctl_refusal(path, buf, len);
}

int cli_write_full(int fd, const void *b, size_t n)
{
	return send(fd, b, n, MSG_NOSIGNAL) == (ssize_t)n ? 0 : -EPIPE;
}

int cli_read_full(int fd, void *b, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = read(fd, (uint8_t *)b + got, n - got);

		/* EINTR ends the read: tail's SIGINT handler wants out. */
		if (r < 0)
			return -errno;
		if (r == 0)
			return got ? -EPIPE : 0;
		got += (size_t)r;
	}
	return 1;
}
