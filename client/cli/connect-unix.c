/* client/cli/connect-unix.c - the command's connection to ringlogd: the
 * control socket (Unix stream socket) and framed messages on it. */
#define _GNU_SOURCE
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "ctl.h"

const char *socket_path(const char *opt)
{
	const char *s = getenv("RINGLOG_SOCKET");

	if (opt)
		return opt;
	return s && *s ? s : RINGLOG_SOCKET_DEFAULT;
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

		if (!quiet)
			fprintf(stderr, "ringlog: cannot reach ringlogd at %s: %s; is the service running? "
				"(systemctl status ringlogd)\n", path, strerror(err));
		close(fd);
		return -err;
	}
	return fd;
}

int cli_send(int fd, uint16_t type, const void *p, uint32_t len)
{
	struct ringlog_ctl_frame f = { .len = len, .type = type };

	if (send(fd, &f, sizeof(f), MSG_NOSIGNAL) != sizeof(f) ||
	    (len && send(fd, p, len, MSG_NOSIGNAL) != (ssize_t)len))
		return -EPIPE;
	return 0;
}

static int read_full(int fd, void *b, size_t n)
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

long cli_recv(int fd, uint16_t *type, uint8_t **payload)
{
	struct ringlog_ctl_frame f;
	int r = read_full(fd, &f, sizeof(f));

	*payload = NULL;
	if (r <= 0)
		return r;
	if (f.len > RINGLOG_CTL_MAX)
		return -EPROTO;
	*type = f.type;
	*payload = malloc(f.len + 1);
	if (!*payload)
		return -ENOMEM;
	(*payload)[f.len] = 0;
	if (f.len && (r = read_full(fd, *payload, f.len)) <= 0) {
		free(*payload);
		*payload = NULL;
		return r ? r : -EPIPE;
	}
	return (long)f.len;
}
