/* client/connect-unix.c - the library's only thread: find the daemon, hand
 * it the metadata region and every ring, apply its enablement, reconnect
 * after a restart, and release rings the daemon has finished with.
 *
 * Nothing here is on an emitting thread's path: emitters only write to the
 * eventfd when they create a ring or register metadata.
 */
#define _GNU_SOURCE
#include "lib.h"
#include "ctl.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static const char *socket_path(void)
{
	const char *s = getenv("RINGLOG_SOCKET");

	return s && *s ? s : RINGLOG_SOCKET_DEFAULT;
}

static int send_frame(int fd, uint16_t type, const void *payload, uint32_t len, int pass_fd)
{
	long n;

	do
		n = ringlog_ctl_send(fd, type, payload, len, pass_fd, 0);
	while (n == -EINTR);
	if (n < 0)
		return (int)n;
	/* Frames are small and the socket is blocking (with a send timeout):
	 * a short write means the daemon is not reading; drop the link. */
	return (size_t)n == sizeof(struct ringlog_ctl_frame) + len ? 0 : -EPIPE;
}

static int try_connect(void)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	const char *path = socket_path();
	struct timeval tv = { .tv_sec = 2 };
	int fd;

	if (strlen(path) >= sizeof(a.sun_path))
		return -ENAMETOOLONG;
	strcpy(a.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

static int send_hello(int fd)
{
	struct ringlog_ctl_hello h = {
		.version = RINGLOG_CTL_VERSION,
		.clock = lib.tsc ? RINGLOG_RING_CLOCK_TSC : 0,
		.tsc = lib_clock(),
		.mono_ns = lib_now_ns(CLOCK_MONOTONIC),
		.real_ns = lib_now_ns(CLOCK_REALTIME),
	};

	return send_frame(fd, RINGLOG_CTL_HELLO, &h, sizeof(h), lib.meta_fd);
}

/* Send what the daemon does not have yet: metadata news, new rings, a sync
 * request. Called with lib.lock held; sendmsg() on a local socket with a
 * send timeout is bounded, and emitters never take this lock on their fast
 * path. */
static int send_pending_locked(int fd)
{
	int err;

	if (lib.meta_dirty) {
		if ((err = send_frame(fd, RINGLOG_CTL_META, NULL, 0, -1)) < 0)
			return err;
		lib.meta_dirty = false;
	}
	for (struct lib_ring *r = lib.rings; r; r = r->next) {
		struct ringlog_ctl_ring m = { .handle = r->handle, .tid = r->tid };

		if (r->sent || r->refused)
			continue;
		if ((err = send_frame(fd, RINGLOG_CTL_RING, &m, sizeof(m), r->fd)) < 0)
			return err;
		r->sent = true;
	}
	if (lib.sync_want > lib.sync_acked) {
		uint64_t t = lib.sync_want;

		if ((err = send_frame(fd, RINGLOG_CTL_SYNC, &t, sizeof(t), -1)) < 0)
			return err;
	}
	return 0;
}

static void apply_enable(const struct ringlog_ctl_enable *e)
{
	for (struct ringlog_provider *p = lib.providers; p; p = p->next) {
		if (p->id != e->provider)
			continue;
		for (int l = 0; l < 8; l++) {
			uint64_t kw = l >= 1 && l <= 5 ? e->kw[l] : 0;

			__atomic_store_n(&p->kw[l], kw, __ATOMIC_RELAXED);
		}
	}
}

static void handle_frame_locked(uint16_t type, const uint8_t *p, uint32_t len)
{
	switch (type) {
	case RINGLOG_CTL_WELCOME: {
		struct ringlog_ctl_welcome w;

		if (len < sizeof(w))
			return;
		memcpy(&w, p, sizeof(w));
		if (!lib.ring_size_from_env && w.ring_size >= RINGLOG_RING_MIN_DATA &&
		    w.ring_size <= RINGLOG_RING_MAX_DATA)
			lib.ring_size = w.ring_size;
		break;
	}
	case RINGLOG_CTL_ENABLE:
		for (uint32_t off = 0; off + sizeof(struct ringlog_ctl_enable) <= len;
		     off += sizeof(struct ringlog_ctl_enable)) {
			struct ringlog_ctl_enable e;

			memcpy(&e, p + off, sizeof(e));
			apply_enable(&e);
		}
		break;
	case RINGLOG_CTL_REFUSE: {
		struct ringlog_ctl_refuse r;

		if (len < sizeof(r))
			return;
		memcpy(&r, p, sizeof(r));
		if (!r.handle)
			lib.refused_all = true;
		for (struct lib_ring *x = lib.rings; x; x = x->next)
			if (x->handle == r.handle)
				x->refused = true;
		lib_diag("ringlogd refused %s: %.*s", r.handle ? "a ring" : "this process",
			 (int)(len - sizeof(r)), (const char *)p + sizeof(r));
		break;
	}
	case RINGLOG_CTL_SYNC: {
		uint64_t t;

		if (len < sizeof(t))
			return;
		memcpy(&t, p, sizeof(t));
		if (t > lib.sync_acked && t <= lib.sync_want) {
			lib.sync_acked = t;
			pthread_cond_broadcast(&lib.cond);
		}
		break;
	}
	default:
		break; /* newer daemons may send more: ignore */
	}
}

struct rxbuf {
	uint8_t buf[64 << 10];
	size_t len;
};

/* The daemon's eventfd came with WELCOME. The first one takes a number for
 * good; a later daemon's replaces the file behind that number atomically
 * (dup3), so a thread writing to it concurrently never hits a closed or
 * reused descriptor. */
static void take_daemon_wake_fd(int fd)
{
	int cur = __atomic_load_n(&lib.daemon_wake_fd, __ATOMIC_ACQUIRE);

	if (cur < 0) {
		__atomic_store_n(&lib.daemon_wake_fd, fd, __ATOMIC_RELEASE);
		return;
	}
	if (dup3(fd, cur, O_CLOEXEC) < 0)
		lib_diag("cannot take ringlogd's wakeup eventfd: %s", strerror(errno));
	close(fd);
}

/* Read what the daemon sent; returns 0, or -errno / -EPIPE on EOF. */
static int receive(int fd, struct rxbuf *rx)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * 4)];
		struct cmsghdr align;
	} u;
	struct iovec iov = { rx->buf + rx->len, sizeof(rx->buf) - rx->len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			      .msg_controllen = sizeof(u.buf) };
	ssize_t n = recvmsg(fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	size_t off = 0;

	if (n == 0)
		return -EPIPE;
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -errno;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t i = 0; i < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
			int rfd;

			memcpy(&rfd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (i == 0)
				take_daemon_wake_fd(rfd);
			else
				close(rfd);
		}
	}
	rx->len += (size_t)n;
	pthread_mutex_lock(&lib.lock);
	while (rx->len - off >= sizeof(struct ringlog_ctl_frame)) {
		struct ringlog_ctl_frame f;

		memcpy(&f, rx->buf + off, sizeof(f));
		if (f.len > sizeof(rx->buf) - sizeof(f)) {
			pthread_mutex_unlock(&lib.lock);
			return -EPROTO;
		}
		if (rx->len - off < sizeof(f) + f.len)
			break;
		handle_frame_locked(f.type, rx->buf + off + sizeof(f), f.len);
		off += sizeof(f) + f.len;
	}
	pthread_mutex_unlock(&lib.lock);
	memmove(rx->buf, rx->buf + off, rx->len - off);
	rx->len -= off;
	return 0;
}

static void drain_wake(void)
{
	uint64_t v;

	if (read(lib.wake_fd, &v, sizeof(v)) < 0) {
		/* EAGAIN: nothing pending */
	}
}

static void disconnect(int fd)
{
	close(fd);
	pthread_mutex_lock(&lib.lock);
	lib.sock = -1;
	lib.connected = false;
	/* The next daemon gets every ring still here and all the metadata. */
	for (struct lib_ring *r = lib.rings; r; r = r->next)
		r->sent = false;
	lib.meta_dirty = true;
	pthread_cond_broadcast(&lib.cond);
	pthread_mutex_unlock(&lib.lock);
}

static void session(int fd, struct rxbuf *rx)
{
	int err;

	rx->len = 0;
	pthread_mutex_lock(&lib.lock);
	err = send_hello(fd);
	if (!err) {
		lib.sock = fd;
		lib.connected = true;
		lib.stats.connects++;
		pthread_cond_broadcast(&lib.cond); /* ringlog_flush() waits for it */
		lib.meta_dirty = true;
	}
	pthread_mutex_unlock(&lib.lock);

	while (!err) {
		struct pollfd pf[2] = {
			{ .fd = fd, .events = POLLIN },
			{ .fd = lib.wake_fd, .events = POLLIN },
		};

		pthread_mutex_lock(&lib.lock);
		if (lib.stop) {
			pthread_mutex_unlock(&lib.lock);
			break;
		}
		err = send_pending_locked(fd);
		lib_rings_gc_locked();
		pthread_mutex_unlock(&lib.lock);
		if (err)
			break;
		if (poll(pf, 2, 100) < 0 && errno != EINTR)
			break;
		if (pf[1].revents)
			drain_wake();
		if (pf[0].revents)
			err = receive(fd, rx);
	}
	disconnect(fd);
}

static void *thread_main(void *arg)
{
	struct rxbuf *rx = malloc(sizeof(*rx));
	int backoff = 20;

	(void)arg;
	while (rx) {
		int fd;

		pthread_mutex_lock(&lib.lock);
		lib_rings_gc_locked();
		if (lib.stop) {
			pthread_mutex_unlock(&lib.lock);
			break;
		}
		pthread_mutex_unlock(&lib.lock);

		fd = try_connect();
		if (fd >= 0) {
			bool refused;

			session(fd, rx);
			pthread_mutex_lock(&lib.lock);
			refused = lib.refused_all;
			lib.refused_all = false;
			pthread_mutex_unlock(&lib.lock);
			if (!refused) {
				backoff = 20;
				continue;
			}
			/* Not allowed to write (not in the writers' group): ask
			 * again now and then, not in a tight loop. */
			backoff = 5000;
		}
		pthread_mutex_lock(&lib.lock);
		lib.tried = true;
		pthread_cond_broadcast(&lib.cond);
		pthread_mutex_unlock(&lib.lock);
		/* No daemon yet: rings fill on their own; look again soon, but
		 * back off so an absent daemon costs nearly nothing. */
		struct pollfd pf = { .fd = lib.wake_fd, .events = POLLIN };

		if (poll(&pf, 1, backoff) > 0)
			drain_wake();
		if (backoff < 500)
			backoff *= 2;
	}
	free(rx);
	return NULL;
}

int lib_thread_start_locked(void)
{
	sigset_t all, old;
	int err;

	if (lib.thread_running)
		return 0;
	lib.stop = false;
	/* The thread must never run the program's signal handlers. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&lib.thread, NULL, thread_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err)
		return -err;
	lib.thread_running = true;
	return 0;
}

void lib_thread_stop(void)
{
	pthread_t t;

	pthread_mutex_lock(&lib.lock);
	if (!lib.thread_running) {
		pthread_mutex_unlock(&lib.lock);
		return;
	}
	lib.stop = true;
	t = lib.thread;
	pthread_mutex_unlock(&lib.lock);
	lib_wake();
	pthread_join(t, NULL);
	pthread_mutex_lock(&lib.lock);
	lib.thread_running = false;
	pthread_mutex_unlock(&lib.lock);
}
