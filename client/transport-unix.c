/* client/transport-unix.c - the library's link to ringlogd on Linux: a Unix
 * stream socket (RINGLOG_SOCKET, default RINGLOG_SOCKET_DEFAULT), with
 * shared-memory descriptors riding as SCM_RIGHTS (proto/ctl.h), and an
 * eventfd the library's thread polls beside it.
 */
#define _GNU_SOURCE
#include "transport.h"
#include "ctl.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

struct transport {
	int fd;
};

static int wake_fd = -1;

/* An unconnected socket held for the next attempt. While the daemon is
 * away, the rings of threads that ended wait in the process, a descriptor
 * each, and may fill its table (RLIMIT_NOFILE): without a socket made
 * before that, the library could never connect again, and those rings,
 * which a connection would free, would stay for good. A Unix socket whose
 * connect() failed may try again, so an attempt that finds no daemon
 * keeps it; a connection makes the next one. */
static int spare_sock = -1;

/* The socket connecting or connected (the transport's), -1: none. A
 * fork() while the library's thread is inside connect() (up to the send
 * timeout when the daemon's backlog is full), or between a connection and
 * its session, gave the child that socket, which nothing of the child
 * knew: a descriptor leaked, and the parent's link held open by it.
 *
 * Both sockets change hands only under lib.lock, which fork() takes
 * (lib.c: before_fork()), so the child sees each one either ours or
 * closed, never a number closed and perhaps reused, and closes them
 * (tr_wake_reset_after_fork()). connect() itself runs unlocked. */
static int held_sock = -1;

static int new_socket(void)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct timeval tv = { .tv_sec = 2 };

	/* Frames are small and the socket is blocking with this timeout: a
	 * short write means the daemon is not reading; the link is dropped. */
	if (fd >= 0)
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	return fd;
}

/* A new spare if there is none: under lib.lock (see held_sock). */
static void spare_make(void)
{
	pthread_mutex_lock(&lib.lock);
	if (spare_sock < 0)
		spare_sock = new_socket();
	pthread_mutex_unlock(&lib.lock);
}

static const char *socket_path(void)
{
	const char *s = getenv("RINGLOG_SOCKET");

	return s && *s ? s : RINGLOG_SOCKET_DEFAULT;
}

struct transport *tr_connect(int *err)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	const char *path = socket_path();
	struct transport *t;
	int fd;

	if (strlen(path) >= sizeof(a.sun_path)) {
		*err = -ENAMETOOLONG;
		return NULL;
	}
	strcpy(a.sun_path, path);
	pthread_mutex_lock(&lib.lock);
	if (spare_sock < 0)
		spare_sock = new_socket();
	fd = held_sock = spare_sock;
	spare_sock = -1;
	if (fd < 0)
		*err = -errno;
	pthread_mutex_unlock(&lib.lock);
	if (fd < 0)
		return NULL;
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		int e = errno;

		*err = -e;
		pthread_mutex_lock(&lib.lock);
		held_sock = -1;
		/* No daemon, or not allowed, or its backlog full: the socket
		 * stays unconnected, for the next attempt. Anything else (it
		 * was closed under us) makes a new one next time. */
		if (e == ENOENT || e == ECONNREFUSED || e == EACCES || e == EPERM || e == EAGAIN ||
		    e == ETIMEDOUT)
			spare_sock = fd;
		else
			close(fd);
		pthread_mutex_unlock(&lib.lock);
		return NULL;
	}
	if (!(t = malloc(sizeof(*t)))) {
		*err = -ENOMEM;
		pthread_mutex_lock(&lib.lock);
		held_sock = -1;
		close(fd);
		pthread_mutex_unlock(&lib.lock);
		return NULL;
	}
	t->fd = fd;
	spare_make(); /* for the next connection (may fail: later) */
	return t;
}

void tr_refusal(char *buf, size_t len)
{
	ringlog_ctl_refusal(socket_path(), buf, len);
}

/* Not with lib.lock held (it takes it: see held_sock). */
void tr_close(struct transport *t)
{
	if (!t)
		return;
	pthread_mutex_lock(&lib.lock);
	if (held_sock == t->fd)
		held_sock = -1;
	close(t->fd);
	pthread_mutex_unlock(&lib.lock);
	free(t);
}

/* One frame, all of it: a short write (the send timeout, or a full socket
 * under MSG_DONTWAIT) leaves the stream mid-frame, so it is ended before
 * another frame can follow the cut one; the library's thread reconnects
 * and sends everything again. */
static int send_whole(struct transport *t, uint16_t type, const void *payload, uint32_t len,
		      lib_obj_t obj, int flags)
{
	long n;

	do
		n = ringlog_ctl_send(t->fd, type, payload, len, obj, flags);
	while (n == -EINTR);
	if (n < 0)
		return (int)n;
	if ((size_t)n != sizeof(struct ringlog_ctl_frame) + len) {
		shutdown(t->fd, SHUT_RDWR);
		return -EPIPE;
	}
	return 0;
}

int tr_send(struct transport *t, uint16_t type, const void *payload, uint32_t len, lib_obj_t obj)
{
	return send_whole(t, type, payload, len, obj, 0);
}

/* A frame this small is one skb: a Unix stream socket queues all of it or
 * nothing (unix_stream_sendmsg() with MSG_DONTWAIT), -EAGAIN when full. */
#define TRY_SEND_MAX 256

int tr_try_send(struct transport *t, uint16_t type, const void *payload, uint32_t len,
		lib_obj_t obj)
{
	if (len > TRY_SEND_MAX)
		return -EOPNOTSUPP;
	return send_whole(t, type, payload, len, obj, MSG_DONTWAIT);
}

long tr_recv(struct transport *t, uint8_t *buf, size_t cap, lib_obj_t *obj)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * 4)];
		struct cmsghdr align;
	} u;
	struct iovec iov = { buf, cap };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			      .msg_controllen = sizeof(u.buf) };
	ssize_t n = recvmsg(t->fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

	*obj = LIB_OBJ_NONE;
	if (n == 0)
		return -EPIPE;
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -errno;
	/* The first descriptor is the one the frame wants; any more are a
	 * confused peer's, and closed. */
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t i = 0; i < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
			int rfd;

			memcpy(&rfd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (*obj < 0)
				*obj = rfd;
			else
				close(rfd);
		}
	}
	return n;
}

int tr_wait(struct transport *t, int ms)
{
	struct pollfd pf[2] = {
		{ .fd = wake_fd, .events = POLLIN },
		{ .fd = t ? t->fd : -1, .events = POLLIN },
	};
	int r = 0;

	/* A connection made with the spare when the table was full could
	 * not make the next one: try again between waits, so that the next
	 * reconnection has one too. */
	if (spare_sock < 0)
		spare_make();
	if (poll(pf, t ? 2 : 1, ms) <= 0)
		return 0;
	if (pf[0].revents)
		r |= TR_WOKEN;
	if (t && pf[1].revents)
		r |= TR_READABLE;
	return r;
}

lib_obj_t tr_frame_obj(const uint8_t *p, uint32_t len, size_t struct_len, lib_obj_t received)
{
	(void)p;
	(void)len;
	(void)struct_len;
	return received;
}

void tr_close_obj(lib_obj_t fd)
{
	if (fd >= 0)
		close(fd);
}

/* The first daemon's eventfd takes a number for good; a later daemon's
 * replaces the file behind that number atomically (dup3), so a thread
 * writing to it concurrently never hits a closed or reused descriptor. */
void tr_take_daemon_wake(lib_obj_t fd)
{
	int cur = __atomic_load_n(&lib.daemon_wake, __ATOMIC_ACQUIRE);

	if (fd < 0)
		return;
	if (cur < 0) {
		__atomic_store_n(&lib.daemon_wake, fd, __ATOMIC_RELEASE);
		return;
	}
	if (dup3(fd, cur, O_CLOEXEC) < 0)
		lib_diag("cannot take ringlogd's wakeup eventfd: %s", strerror(errno));
	close(fd);
}

bool tr_signal(lib_obj_t fd)
{
	uint64_t one = 1;

	return fd >= 0 && write(fd, &one, sizeof(one)) == sizeof(one);
}

int tr_wake_init(void)
{
	if (wake_fd < 0 && (wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0)
		return -errno;
	/* at start, before the program's own descriptors can fill the table */
	if (spare_sock < 0)
		spare_sock = new_socket();
	return 0;
}

void tr_wake_signal(void)
{
	uint64_t one = 1;

	if (wake_fd >= 0 && write(wake_fd, &one, sizeof(one)) < 0) {
		/* EAGAIN: the counter is saturated, the thread is awake anyway */
	}
}

void tr_wake_clear(void)
{
	uint64_t v;

	if (read(wake_fd, &v, sizeof(v)) < 0) {
		/* EAGAIN: nothing pending */
	}
}

/* After fork() in the child: the parent's eventfd is shared with it; the
 * child's thread needs its own. */
void tr_wake_reset_after_fork(void)
{
	if (wake_fd >= 0)
		close(wake_fd);
	wake_fd = -1;
	/* the parent's: connected by one of us, it would be both's link; and
	 * the one its thread was connecting (lib.c closed the connection's
	 * first, if it had one) */
	if (spare_sock >= 0)
		close(spare_sock);
	spare_sock = -1;
	if (held_sock >= 0)
		close(held_sock);
	held_sock = -1;
}
