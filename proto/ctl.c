/* proto/ctl.c - send one control frame (ctl.h), with a descriptor riding
 * on its first byte when there is one: the piece of the framing that the
 * library, the daemon and the hostile-client tests all need. */
#define _GNU_SOURCE
#include "ctl.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

long ringlog_ctl_send(int sock, uint16_t type, const void *payload, uint32_t len, int pass_fd,
		      int flags)
{
	struct ringlog_ctl_frame f = { .len = len, .type = type };
	struct iovec iov[2] = { { &f, sizeof(f) }, { (void *)payload, len } };
	struct msghdr msg = { .msg_iov = iov, .msg_iovlen = len ? 2 : 1 };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	ssize_t n;

	if (pass_fd >= 0) {
		struct cmsghdr *c;

		memset(&u, 0, sizeof(u));
		msg.msg_control = u.buf;
		msg.msg_controllen = sizeof(u.buf);
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &pass_fd, sizeof(int));
	}
	n = sendmsg(sock, &msg, flags | MSG_NOSIGNAL);
	return n < 0 ? -errno : (long)n;
}
