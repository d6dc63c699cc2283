/* daemon/unix/notify.c - systemd's readiness protocol: a datagram of
 * "KEY=VALUE\n" lines to the AF_UNIX socket in $NOTIFY_SOCKET (a path, or
 * an abstract name starting with '@'). No libsystemd needed. */
#define _GNU_SOURCE
#include "notify.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int sd_notify_send(const char *state)
{
	return sd_notify_fd(state, -1);
}

int sd_notify_fd(const char *state, int pass)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	size_t n;
	socklen_t alen;
	int fd, err = 0;

	if (!path || !*path)
		return 0;
	n = strlen(path);
	if (n >= sizeof(a.sun_path) || (path[0] != '/' && path[0] != '@'))
		return -EINVAL;
	memcpy(a.sun_path, path, n);
	if (path[0] == '@')
		a.sun_path[0] = 0;
	alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (pass < 0) {
		if (sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&a, alen) < 0)
			err = -errno;
	} else {
		/* FDSTORE=1: the descriptor rides along (SCM_RIGHTS). */
		union {
			char buf[CMSG_SPACE(sizeof(int))];
			struct cmsghdr align;
		} u;
		struct iovec iov = { .iov_base = (void *)state, .iov_len = strlen(state) };
		struct msghdr msg = { .msg_name = &a, .msg_namelen = alen, .msg_iov = &iov,
				      .msg_iovlen = 1, .msg_control = u.buf,
				      .msg_controllen = sizeof(u.buf) };
		struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);

		memset(u.buf, 0, sizeof(u.buf));
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &pass, sizeof(int));
		if (sendmsg(fd, &msg, MSG_NOSIGNAL) < 0)
			err = -errno;
	}
	close(fd);
	return err;
}
