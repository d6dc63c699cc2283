/* daemon/ctl.c - the control socket: accept, read frames (proto/ctl.h) with
 * the descriptors that ride on them, queue replies.
 *
 * Every byte from a peer is untrusted: frame lengths are bounded, unknown
 * frames close the connection, descriptors arriving without a frame that
 * wants them are closed. A peer that does not read its replies only fills
 * its own queue; past the queue's limit the daemon drops for that peer.
 */
#define _GNU_SOURCE
#include "daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define RX_CAP (RINGLOG_CTL_MAX + sizeof(struct ringlog_ctl_frame))

int tx_append(struct txbuf *t, const void *a, size_t alen, const void *b, size_t blen)
{
	size_t need = t->len + alen + blen;

	if (t->limit && need > t->limit)
		return -ENOBUFS;
	if (need > t->cap) {
		size_t cap = t->cap ? t->cap : 4096;
		uint8_t *n;

		while (cap < need)
			cap *= 2;
		if (!(n = realloc(t->buf, cap)))
			return -ENOMEM;
		t->buf = n;
		t->cap = cap;
	}
	memcpy(t->buf + t->len, a, alen);
	if (blen)
		memcpy(t->buf + t->len + alen, b, blen);
	t->len = need;
	return 0;
}

static void client_io(uv_poll_t *h, int status, int events);

static void update_poll(struct client *c)
{
	int ev = c->gone ? 0 : UV_READABLE;

	if (c->tx.len)
		ev |= UV_WRITABLE;
	if (c->poll_open && !uv_is_closing((uv_handle_t *)&c->poll)) {
		if (ev)
			uv_poll_start(&c->poll, ev, client_io);
		else
			uv_poll_stop(&c->poll);
	}
}

static void flush_tx(struct client *c)
{
	while (c->tx.len && c->fd >= 0) {
		ssize_t n = send(c->fd, c->tx.buf, c->tx.len, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				break;
			c->tx.len = 0; /* the peer is gone; EOF on read will tell */
			break;
		}
		memmove(c->tx.buf, c->tx.buf + n, c->tx.len - (size_t)n);
		c->tx.len -= (size_t)n;
	}
	update_poll(c);
}

int client_send(struct client *c, uint16_t type, const void *payload, uint32_t len)
{
	struct ringlog_ctl_frame f = { .len = len, .type = type };
	int err;

	if (c->fd < 0)
		return -EPIPE;
	if ((err = tx_append(&c->tx, &f, sizeof(f), payload, len)) < 0)
		return err;
	flush_tx(c);
	return 0;
}

int client_send_fd(struct client *c, uint16_t type, const void *payload, uint32_t len, int fd)
{
	struct ringlog_ctl_frame f = { .len = len, .type = type };
	size_t n;
	long sent;
	int err;

	if (c->fd < 0 || fd < 0 || c->tx.len)
		return client_send(c, type, payload, len);
	sent = ringlog_ctl_send(c->fd, type, payload, len, fd, MSG_DONTWAIT);
	if (sent < 0)
		return client_send(c, type, payload, len); /* EAGAIN: without the fd */
	/* What the socket did not take is queued like any reply. */
	n = (size_t)sent;
	if (n < sizeof(f))
		err = tx_append(&c->tx, (uint8_t *)&f + n, sizeof(f) - n, payload, len);
	else if (n < sizeof(f) + len)
		err = tx_append(&c->tx, (const uint8_t *)payload + (n - sizeof(f)), sizeof(f) + len - n,
				NULL, 0);
	else
		return 0;
	flush_tx(c);
	return err;
}

static void on_closed(uv_handle_t *h)
{
	struct client *c = h->data;

	c->poll_open = false;
	client_maybe_free(c);
}

/* Stop talking to the peer. A writer's rings stay until they are drained:
 * what the process committed before it exited is stored. */
void client_close(struct client *c)
{
	if (c->gone)
		return;
	c->gone = true;
	for (int i = 0; i < c->nfds; i++)
		close(c->fds[i]);
	c->nfds = 0;
	if (c->tail) {
		tail_free(c->tail);
		c->tail = NULL;
		reg_enable_recompute(c->d);
	}
	if (c->poll_open)
		uv_close((uv_handle_t *)&c->poll, on_closed);
	close(c->fd);
	c->fd = -1;
	free(c->rx);
	c->rx = NULL;
	drain_start(c->d); /* drain what it left, soon */
}

void client_maybe_free(struct client *c)
{
	struct daemon *d = c->d;

	if (!c->gone || c->poll_open || c->rings)
		return;
	for (struct client **pp = &d->clients; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	d->nclients--;
	if (c->meta_map)
		munmap((void *)c->meta_map, c->meta_size);
	fwd_client_free(c);
	ringlog_meta_free(&c->meta);
	free(c->prov);
	free(c->prov_sent);
	free(c->exe);
	free(c->tx.buf);
	free(c);
#ifdef __GLIBC__
	/* Programs come and go over months: hand the pages their buffers
	 * used back to the system now rather than keep them as free heap. */
	malloc_trim(0);
#endif
}

static int take_fd(struct client *c)
{
	int fd;

	if (!c->nfds)
		return -1;
	fd = c->fds[0];
	memmove(c->fds, c->fds + 1, (size_t)(c->nfds - 1) * sizeof(int));
	c->nfds--;
	return fd;
}

/* What a frame type needs (access.c). STATUS: writers get the summary,
 * readers the per-program detail too. */
static unsigned frame_needs(uint16_t type, unsigned have)
{
	switch (type) {
	case RINGLOG_CTL_TAIL: return ACCESS_READ;
	case RINGLOG_CTL_STATUS: return have & ACCESS_WRITE ? ACCESS_WRITE : ACCESS_READ;
	default: return ACCESS_WRITE;
	}
}

/* A peer asking for what its groups do not allow gets the reason and is
 * disconnected. */
static int deny(struct client *c, unsigned need)
{
	char why[400];

	access_explain(c->d, c->uid, need, why, sizeof(why));
	d_log(LOG_WARNING, "client pid %u (%s): refused: %s", c->pid, c->comm, why);
	if (need & ACCESS_WRITE)
		reg_refuse(c, 0, "%s", why);
	else
		tool_error(c, why);
	client_close(c); /* the reply is already on its way: sent at once */
	return -EACCES;
}

static int handle_frame(struct client *c, uint16_t type, const uint8_t *p, uint32_t len)
{
	unsigned need = frame_needs(type, c->access);

	if (!(c->access & need))
		return deny(c, need);
	switch (type) {
	case RINGLOG_CTL_HELLO:
		return reg_hello(c, p, len, take_fd(c));
	case RINGLOG_CTL_RING:
		return reg_ring(c, p, len, take_fd(c));
	case RINGLOG_CTL_META:
		return c->writer ? reg_meta_sync(c) : -EPROTO;
	case RINGLOG_CTL_SYNC:
		if (len != 8)
			return -EPROTO;
		drain_all(c->d); /* what the rings held at SYNC is stored */
		return client_send(c, RINGLOG_CTL_SYNC, p, 8);
	case RINGLOG_CTL_STATUS:
		c->tool = true;
		return status_reply(c, c->access & ACCESS_READ);
	case RINGLOG_CTL_TAIL:
		c->tool = true;
		return tail_start(c, p, len);
	default:
		return -EPROTO;
	}
}

static void read_some(struct client *c)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * 8)];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = c->rx + c->rx_len, .iov_len = RX_CAP - c->rx_len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			      .msg_controllen = sizeof(u.buf) };
	ssize_t n = recvmsg(c->fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	size_t off = 0;

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		client_close(c);
		return;
	}
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);

		for (size_t i = 0; i < k; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			if (c->nfds < (int)(sizeof(c->fds) / sizeof(c->fds[0])))
				c->fds[c->nfds++] = fd;
			else
				close(fd); /* a peer flooding descriptors */
		}
	}
	if (msg.msg_flags & MSG_CTRUNC) {
		d_log(LOG_WARNING, "client pid %u sent more descriptors than a frame carries: disconnected", c->pid);
		client_close(c);
		return;
	}
	c->rx_len += (size_t)n;
	while (c->rx_len - off >= sizeof(struct ringlog_ctl_frame) && !c->gone) {
		struct ringlog_ctl_frame f;
		int err;

		memcpy(&f, c->rx + off, sizeof(f));
		if (f.len > RINGLOG_CTL_MAX) {
			d_log(LOG_WARNING, "client pid %u: frame of %u bytes exceeds the %u limit: disconnected",
			      c->pid, f.len, RINGLOG_CTL_MAX);
			client_close(c);
			return;
		}
		if (c->rx_len - off < sizeof(f) + f.len)
			break;
		err = handle_frame(c, f.type, c->rx + off + sizeof(f), f.len);
		if (c->gone)
			return; /* refused and closed */
		off += sizeof(f) + f.len;
		if (err == -EPROTO) {
			d_log(LOG_WARNING, "client pid %u (%s): invalid or unexpected frame type %u: disconnected",
			      c->pid, c->comm, f.type);
			client_close(c);
			return;
		}
	}
	if (c->gone)
		return;
	memmove(c->rx, c->rx + off, c->rx_len - off);
	c->rx_len -= off;
}

static void client_io(uv_poll_t *h, int status, int events)
{
	struct client *c = h->data;

	if (status < 0) {
		client_close(c);
		return;
	}
	if (events & UV_WRITABLE)
		flush_tx(c);
	if ((events & UV_READABLE) && !c->gone)
		read_some(c);
}

/* The process's start time as wall-clock ns: boot time (/proc/stat btime,
 * whole seconds) + starttime (/proc/PID/stat field 22, clock ticks). The
 * same value for the same process in every daemon instance, so that it
 * names the writer across restarts (readers key their dedup on it) and
 * tells a reused pid apart. Falls back to now. */
static uint64_t proc_start_ns(uint32_t pid)
{
	static unsigned long long btime; /* the boot time does not change */
	char path[64], buf[1024], *p;
	unsigned long long ticks = 0;
	long hz = sysconf(_SC_CLK_TCK);
	ssize_t n;
	int fd;

	if (!btime) {
		FILE *f = fopen("/proc/stat", "re");

		while (f && fgets(buf, sizeof(buf), f))
			if (sscanf(buf, "btime %llu", &btime) == 1)
				break;
		if (f)
			fclose(f);
	}
	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n <= 0 || !btime || hz <= 0)
		return d_now(CLOCK_REALTIME);
	buf[n] = 0;
	/* comm may hold spaces and parentheses: fields resume after the last
	 * ')'; starttime is the 20th field after it. */
	p = strrchr(buf, ')');
	for (int i = 0; p && i < 20; i++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p + 1, "%llu", &ticks) != 1)
		return d_now(CLOCK_REALTIME);
	return btime * 1000000000ull + ticks * (1000000000ull / (unsigned long long)hz);
}

static void read_proc(struct client *c)
{
	char path[64], buf[4096];
	ssize_t n;
	int fd;

	c->start_real_ns = proc_start_ns(c->pid);

	snprintf(path, sizeof(path), "/proc/%u/comm", c->pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, c->comm, sizeof(c->comm) - 1);
		close(fd);
		if (n > 0 && c->comm[n - 1] == '\n')
			c->comm[n - 1] = 0;
	}
	snprintf(path, sizeof(path), "/proc/%u/exe", c->pid);
	n = readlink(path, buf, sizeof(buf) - 1);
	if (n > 0) {
		buf[n] = 0;
		c->exe = strdup(buf);
	}
}

static void on_accept(uv_poll_t *h, int status, int events);

static void resume_accepting(uv_timer_t *t)
{
	struct daemon *d = t->data;

	if (!d->stopping)
		uv_poll_start(&d->listen_poll, UV_READABLE, on_accept);
}

/* Out of file descriptors: the pending connection stays in the backlog and
 * the listening socket stays readable, so polling it now would spin. Wait
 * 100 ms for clients to go away, then try again. */
static void pause_accepting(struct daemon *d)
{
	static uint64_t logged;
	uint64_t now = d_now(CLOCK_MONOTONIC);

	if (now - logged > 10000000000ull) {
		d_log(LOG_WARNING, "out of file descriptors (%s): new clients wait; raise LimitNOFILE= "
		      "or limits.clients", strerror(errno));
		logged = now;
	}
	uv_poll_stop(&d->listen_poll);
	d->accept_timer.data = d;
	uv_timer_start(&d->accept_timer, resume_accepting, 100, 0);
}

static void on_accept(uv_poll_t *h, int status, int events)
{
	struct daemon *d = h->data;

	(void)events;
	if (status < 0)
		return;
	for (;;) {
		int fd = accept4(d->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		struct ucred cr;
		socklen_t crlen = sizeof(cr);
		struct client *c;

		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE)
				pause_accepting(d);
			return;
		}
		if (d->nclients >= d->cfg.limits.clients) {
			static const char msg[] = "too many clients (limits.clients)";
			struct ringlog_ctl_refuse r = { 0 };
			struct ringlog_ctl_frame f = { .len = sizeof(r) + sizeof(msg) - 1,
						       .type = RINGLOG_CTL_REFUSE };
			uint8_t b[sizeof(f) + sizeof(r) + sizeof(msg)];

			memcpy(b, &f, sizeof(f));
			memcpy(b + sizeof(f), &r, sizeof(r));
			memcpy(b + sizeof(f) + sizeof(r), msg, sizeof(msg) - 1);
			if (send(fd, b, sizeof(f) + f.len, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
				/* best effort */
			}
			close(fd);
			continue;
		}
		c = calloc(1, sizeof(*c));
		if (!c || !(c->rx = malloc(RX_CAP)) ||
		    getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crlen) < 0) {
			if (c)
				free(c->rx);
			free(c);
			close(fd);
			continue;
		}
		c->d = d;
		c->fd = fd;
		c->meta_fd = -1;
		c->pid = (uint32_t)cr.pid;
		c->uid = cr.uid;
		c->gid = cr.gid;
		c->access = access_peer(d, fd, cr.uid, cr.gid);
		c->tx.limit = 64u << 20;
		read_proc(c);
		uv_poll_init(d->loop, &c->poll, fd);
		c->poll.data = c;
		c->poll_open = true;
		uv_poll_start(&c->poll, UV_READABLE, client_io);
		c->next = d->clients;
		d->clients = c;
		d->nclients++;
	}
}

/* Socket activation (sd_listen_fds(3), the protocol without libsystemd):
 * fd 3 when LISTEN_PID is us and LISTEN_FDS is 1. Returns the fd, -1 when
 * not activated, or -EINVAL for a passed fd that is no listening Unix
 * stream socket. */
static int activated_fd(void)
{
	const char *pid = getenv("LISTEN_PID"), *n = getenv("LISTEN_FDS");
	int type = 0, listening = 0, fd = 3;
	long count;
	socklen_t len = sizeof(type);
	struct sockaddr_un a;
	socklen_t alen = sizeof(a);

	if (!pid || !n || strtol(pid, NULL, 10) != (long)getpid())
		return -1;
	count = strtol(n, NULL, 10);
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	if (count != 1) {
		d_log(LOG_ERR, "LISTEN_FDS=%ld: expected exactly one socket (ringlogd.socket)", count);
		return -EINVAL;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0 || type != SOCK_STREAM ||
	    getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) < 0 || !listening ||
	    getsockname(fd, (struct sockaddr *)&a, &alen) < 0 || a.sun_family != AF_UNIX) {
		d_log(LOG_ERR, "the socket passed by the service manager (fd 3) is not a listening "
		      "Unix stream socket; fix ListenStream= in ringlogd.socket");
		return -EINVAL;
	}
	fcntl(fd, F_SETFD, FD_CLOEXEC);
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	return fd;
}

int ctl_listen(struct daemon *d)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	const char *path = d->cfg.socket_path;
	struct group *g;
	int fd, err;

	fd = activated_fd();
	if (fd == -EINVAL)
		return fd;
	if (fd >= 0) {
		d->socket_activated = true;
		goto listening;
	}
	if (strlen(path) >= sizeof(a.sun_path))
		return -ENAMETOOLONG;
	strcpy(a.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	/* A stale socket from a crashed daemon: nobody answers on it. */
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0) {
		close(fd);
		d_log(LOG_ERR, "another ringlogd is already listening on %s", path);
		return -EADDRINUSE;
	}
	unlink(path);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		goto fail;
	if (chmod(path, d->cfg.socket_mode) < 0)
		goto fail;
	/* The group may not exist outside a system install (a user trying
	 * ringlogd in a local directory): then the socket keeps our group. */
	if (geteuid() == 0 && (g = getgrnam(d->cfg.socket_group)) && chown(path, 0, g->gr_gid) < 0)
		goto fail;
	if (listen(fd, 128) < 0)
		goto fail;
listening:
	d->listen_fd = fd;
	uv_poll_init(d->loop, &d->listen_poll, fd);
	d->listen_poll.data = d;
	uv_poll_start(&d->listen_poll, UV_READABLE, on_accept);
	return 0;
fail:
	err = -errno;
	d_log(LOG_ERR, "cannot listen on %s: %s", path, strerror(errno));
	close(fd);
	return err;
}

void ctl_close_listen(struct daemon *d)
{
	if (d->listen_fd < 0)
		return;
	uv_poll_stop(&d->listen_poll);
	uv_close((uv_handle_t *)&d->listen_poll, NULL);
	close(d->listen_fd);
	d->listen_fd = -1;
	/* An activated socket belongs to systemd, which keeps listening on it
	 * and starts us again when a client connects. */
	if (!d->socket_activated)
		unlink(d->cfg.socket_path);
}
