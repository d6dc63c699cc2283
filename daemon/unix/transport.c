/* daemon/unix/transport.c - the control channel on Linux: a Unix stream socket
 * (or the one systemd passes), the peer's identity from SO_PEERCRED and
 * /proc, descriptors through SCM_RIGHTS (memfds sealed against shrinking,
 * checked before they are mapped), and the eventfd producers wake us with.
 * ctl.c handles the frames.
 */
#define _GNU_SOURCE
#include "daemon.h"
#include "log.h"
#include "clock.h"
#include "ingest/transport.h"
#include "access.h"
#include "ingest/drain.h"
#include "ingest/fdstore.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/sockios.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* A connection's transport state: ctl.c sees only the pointer. */
struct ctl_conn {
	int fd;
	uv_poll_t poll;
	int fds[16];         /* received through SCM_RIGHTS, in order */
	int nfds;
};

/* The listening socket and the eventfd producers wake us with. */
struct ctl_listener {
	int listen_fd;
	uv_poll_t listen_poll;
	int wake_efd;
	uv_poll_t wake_poll;
};

static struct ctl_listener *listener(struct daemon *d)
{
	if (!d->lis && (d->lis = calloc(1, sizeof(*d->lis)))) {
		d->lis->listen_fd = -1;
		d->lis->wake_efd = -1;
	}
	return d->lis;
}

void ctl_fini(struct daemon *d)
{
	free(d->lis);
	d->lis = NULL;
}

static void client_io(uv_poll_t *h, int status, int events);

static void update_poll(struct client *c)
{
	int ev = c->gone ? 0 : UV_READABLE;

	if (c->tx.len)
		ev |= UV_WRITABLE;
	if (c->tr_open && !uv_is_closing((uv_handle_t *)&c->conn->poll)) {
		if (ev)
			uv_poll_start(&c->conn->poll, ev, client_io);
		else
			uv_poll_stop(&c->conn->poll);
	}
}

void ctl_flush(struct client *c)
{
	while (c->tx.len && c->conn && c->conn->fd >= 0) {
		ssize_t n = send(c->conn->fd, c->tx.buf + c->tx.head, c->tx.len, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				break;
			c->tx.len = c->tx.head = 0; /* the peer is gone; EOF on read will tell */
			break;
		}
		tx_consumed(&c->tx, (size_t)n);
	}
	update_poll(c);
}

/* The eventfd rides on the frame when it can go out at once and the
 * program has read everything sent to it before (SIOCOUTQ: nothing of
 * ours left in the socket); otherwise the frame goes without it, and the
 * program asks again (WAKE) or drains on the daemon's timer only. So one
 * descriptor at most is in flight to a program: each counts against our
 * user's open files until read, and a program asking for it in a loop
 * without reading would otherwise pile up hundreds per connection, until
 * no program could be given one (ETOOMANYREFS). */
static int send_with_wake(struct client *c, uint16_t type, const void *payload, uint32_t len)
{
	struct ringlog_ctl_frame f = { .len = len, .type = type };
	int fd = c->d->lis ? c->d->lis->wake_efd : -1, unread = -1;
	size_t n;
	long sent;
	int err;

	if (c->conn->fd < 0 || fd < 0 || c->tx.len ||
	    ioctl(c->conn->fd, SIOCOUTQ, &unread) < 0 || unread != 0)
		return client_send(c, type, payload, len);
	sent = ringlog_ctl_send(c->conn->fd, type, payload, len, fd, MSG_DONTWAIT);
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
	ctl_flush(c);
	return err;
}

int ctl_send_welcome(struct client *c, const void *payload, uint32_t len)
{
	return send_with_wake(c, RINGLOG_CTL_WELCOME, payload, len);
}

int ctl_send_wake(struct client *c)
{
	return send_with_wake(c, RINGLOG_CTL_WAKE, NULL, 0);
}

bool ctl_wake_ready(const struct client *c)
{
	return c->d->lis && c->d->lis->wake_efd >= 0;
}

static void on_closed(uv_handle_t *h)
{
	struct client *c = h->data;

	c->tr_open = false;
	client_maybe_free(c);
}

void ctl_close(struct client *c)
{
	for (int i = 0; i < c->conn->nfds; i++)
		close(c->conn->fds[i]);
	c->conn->nfds = 0;
	if (c->tr_open)
		uv_close((uv_handle_t *)&c->conn->poll, on_closed);
	close(c->conn->fd);
	c->conn->fd = -1;
}

void ctl_free(struct client *c)
{
	free(c->conn); /* NULL for a client adopted from the fd store */
	c->conn = NULL;
}

/* The descriptors came with the frame's first byte, in order. */
d_obj_t ctl_take_obj(struct client *c, const uint8_t *p, uint32_t len, size_t struct_len)
{
	int fd;

	(void)p;
	(void)len;
	(void)struct_len;
	if (!c->conn->nfds)
		return -1;
	fd = c->conn->fds[0];
	memmove(c->conn->fds, c->conn->fds + 1, (size_t)(c->conn->nfds - 1) * sizeof(int));
	c->conn->nfds--;
	return fd;
}

d_obj_t ctl_dup_obj(struct client *c, d_obj_t fd)
{
	if (!c->d->fdstore || fd < 0)
		return -1;
	return fcntl(fd, F_DUPFD_CLOEXEC, 3);
}

void ctl_drop_obj(struct client *c, d_obj_t fd)
{
	(void)c;
	if (fd >= 0)
		close(fd);
}

const char ctl_obj_kind[] = "a memfd sealed against shrinking (F_SEAL_SHRINK)";

/* Size of a sealed memfd, or -EPERM when it is not one we can trust: not
 * a memfd, or not sealed against shrinking (then the writer could shrink
 * it under our mapping and make us fault). */
static long sealed_size(int fd)
{
	struct stat st;
	int seals = fcntl(fd, F_GET_SEALS);

	if (seals < 0 || !(seals & F_SEAL_SHRINK))
		return -EPERM;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return -EPERM;
	return (long)st.st_size;
}

int ctl_map(struct client *c, d_obj_t fd, bool writable, uint64_t max, void **mem, size_t *size)
{
	long n = sealed_size(fd);
	void *m;

	(void)c;
	*mem = NULL;
	*size = n > 0 ? (size_t)n : 0;
	if (n < 0 || (uint64_t)n > max) {
		close(fd);
		return n < 0 ? (int)n : -EFBIG;
	}
	/* MAP_POPULATE: our page tables filled now, not by a fault per 16
	 * pages (fault-around) as the drain first reads them. With 1,000
	 * writers of 512 KiB rings a lap takes ~10 s, and those faults were
	 * ~11 % of the daemon's CPU for that long (bench-scale, perf): with
	 * this, its CPU per event in the steady state was 140-158 ns against
	 * 178-183 without (3 runs each, alternating). The writer populated
	 * its memfd (client/os-unix.c), so this maps pages that exist: it
	 * allocates nothing for a ring used as it should be, and for one that
	 * is not, no more than reading it would. */
	m = mmap(NULL, (size_t)n, writable ? PROT_READ | PROT_WRITE : PROT_READ,
		 MAP_SHARED | MAP_POPULATE, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return -errno;
	/* Read front to back, and never worth keeping for our sake: with
	 * VM_SEQ_READ the kernel does not mark each page accessed when the
	 * mapping goes (zap_pte_range(): every page moved on the LRU under its
	 * lock, irqs off): a ring of 512 KiB took 32-37 us to unmap, 13-15
	 * with it, and 1,000 threads ending together ~40 % less of the
	 * daemon's time in munmap() (bench-scale, perf). Advice only: a
	 * kernel that refuses it costs that time, nothing else. */
	(void)madvise(m, (size_t)n, MADV_SEQUENTIAL);
	*mem = m;
	return 0;
}

void ctl_unmap(void *mem, size_t size)
{
	munmap(mem, size);
}

static void read_some(struct client *c)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * 8)];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = c->rx + c->rx_len, .iov_len = CLIENT_RX_CAP - c->rx_len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			      .msg_controllen = sizeof(u.buf) };
	ssize_t n = recvmsg(c->conn->fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);

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
			if (c->conn->nfds < (int)(sizeof(c->conn->fds) / sizeof(c->conn->fds[0])))
				c->conn->fds[c->conn->nfds++] = fd;
			else
				close(fd); /* a peer flooding descriptors */
		}
	}
	if (msg.msg_flags & MSG_CTRUNC) {
		d_log(LOG_WARNING, "client pid %u sent more descriptors than a frame carries: disconnected", c->pid);
		client_close(c);
		return;
	}
	client_received(c, (size_t)n);
}

static void client_io(uv_poll_t *h, int status, int events)
{
	struct client *c = h->data;

	if (status < 0) {
		client_close(c);
		return;
	}
	if (events & UV_WRITABLE)
		ctl_flush(c);
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
		uv_poll_start(&d->lis->listen_poll, UV_READABLE, on_accept);
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
	uv_poll_stop(&d->lis->listen_poll);
	d->accept_timer.data = d;
	uv_timer_start(&d->accept_timer, resume_accepting, 100, 0);
}

/* A REFUSE for the whole connection (handle 0) with why, then close: the
 * library passes why to the program's diagnostics, the command prints it. */
static void refuse_fd(int fd, const char *why)
{
	struct ringlog_ctl_refuse r = { 0 };
	size_t n = strlen(why);
	struct ringlog_ctl_frame f = { .len = (uint32_t)(sizeof(r) + n), .type = RINGLOG_CTL_REFUSE };
	uint8_t b[sizeof(f) + sizeof(r) + 256];

	if (n > 256)
		n = 256, f.len = (uint32_t)(sizeof(r) + n);
	memcpy(b, &f, sizeof(f));
	memcpy(b + sizeof(f), &r, sizeof(r));
	memcpy(b + sizeof(f) + sizeof(r), why, n);
	if (send(fd, b, sizeof(f) + f.len, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
		/* best effort: the peer may be gone already */
	}
	close(fd);
}

static void on_accept(uv_poll_t *h, int status, int events)
{
	struct daemon *d = h->data;

	(void)events;
	if (status < 0)
		return;
	for (;;) {
		int fd = accept4(d->lis->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		struct ucred cr;
		socklen_t crlen = sizeof(cr);
		struct ctl_conn *k;
		struct client *c;
		unsigned access;
		char why[200];

		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE)
				pause_accepting(d);
			return;
		}
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crlen) < 0) {
			close(fd);
			continue;
		}
		access = access_peer(d, fd, cr.uid, cr.gid);
		if (!ctl_admit(d, NULL, cr.uid, access, why, sizeof(why))) {
			d_log(LOG_WARNING, "pid %d (uid %u) refused: %s", (int)cr.pid, cr.uid, why);
			refuse_fd(fd, why);
			continue;
		}
		if (!(k = calloc(1, sizeof(*k))) || !(c = client_new(d))) {
			free(k);
			close(fd);
			continue;
		}
		c->conn = k;
		k->fd = fd;
		c->pid = (uint32_t)cr.pid;
		c->uid = cr.uid;
		c->gid = cr.gid;
		c->access = access;
		read_proc(c);
		uv_poll_init(d->loop, &c->conn->poll, fd);
		c->conn->poll.data = c;
		c->tr_open = true;
		uv_poll_start(&c->conn->poll, UV_READABLE, client_io);
	}
}

/* Socket activation (sd_listen_fds(3), the protocol without libsystemd):
 * the descriptors from 3 on, when LISTEN_PID is us. Those whose names
 * (LISTEN_FDNAMES) start with "rlm-" or "rlr-" are rings and metadata
 * regions the previous daemon left in the fd store (unix/fdstore.c): they
 * are adopted. Of the others, one may be the listening socket
 * (ringlogd.socket). Returns its fd, -1 when none was passed, or -EINVAL
 * for one that is no listening Unix stream socket, or for several. */
static int activated_fd(struct daemon *d)
{
	const char *pid = getenv("LISTEN_PID"), *n = getenv("LISTEN_FDS");
	const char *names_env = getenv("LISTEN_FDNAMES");
	char *names = names_env ? strdup(names_env) : NULL, *save = NULL, *tok;
	char **snames = NULL;
	int *sfds = NULL, sock = -1, nsock = 0;
	unsigned nstored = 0;
	long count;

	if (!pid || !n || strtol(pid, NULL, 10) != (long)getpid()) {
		free(names);
		return -1;
	}
	count = strtol(n, NULL, 10);
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	if (count < 0 || count > 65536)
		count = 0;
	snames = calloc((size_t)count + 1, sizeof(*snames));
	sfds = calloc((size_t)count + 1, sizeof(*sfds));
	tok = names ? strtok_r(names, ":", &save) : NULL;
	for (long i = 0; i < count; i++, tok = tok ? strtok_r(NULL, ":", &save) : NULL) {
		int fd = 3 + (int)i;

		fcntl(fd, F_SETFD, FD_CLOEXEC);
		if (tok && (!strncmp(tok, "rlm-", 4) || !strncmp(tok, "rlr-", 4)) && snames && sfds) {
			snames[nstored] = tok;
			sfds[nstored++] = fd;
			continue;
		}
		sock = fd;
		nsock++;
	}
	if (nstored)
		fdstore_adopt(d, snames, sfds, nstored);
	free(snames);
	free(sfds);
	free(names);
	if (nsock == 0)
		return -1;
	if (nsock > 1) {
		d_log(LOG_ERR, "LISTEN_FDS=%ld: expected one socket (ringlogd.socket), got %d", count,
		      nsock);
		return -EINVAL;
	}
	{
		int type = 0, listening = 0;
		socklen_t len = sizeof(type);
		struct sockaddr_un a;
		socklen_t alen = sizeof(a);

		if (getsockopt(sock, SOL_SOCKET, SO_TYPE, &type, &len) < 0 || type != SOCK_STREAM ||
		    getsockopt(sock, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) < 0 || !listening ||
		    getsockname(sock, (struct sockaddr *)&a, &alen) < 0 || a.sun_family != AF_UNIX) {
			d_log(LOG_ERR, "the socket passed by the service manager (fd %d) is not a "
			      "listening Unix stream socket; fix ListenStream= in ringlogd.socket", sock);
			return -EINVAL;
		}
	}
	fcntl(sock, F_SETFL, fcntl(sock, F_GETFL) | O_NONBLOCK);
	return sock;
}

int ctl_listen(struct daemon *d)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	const char *path = d->cfg.socket_path;
	struct group *g;
	int fd, err;

	fd = activated_fd(d);
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
	if (!listener(d)) {
		close(fd);
		return -ENOMEM;
	}
	d->lis->listen_fd = fd;
	uv_poll_init(d->loop, &d->lis->listen_poll, fd);
	d->lis->listen_poll.data = d;
	uv_poll_start(&d->lis->listen_poll, UV_READABLE, on_accept);
	return 0;
fail:
	err = -errno;
	d_log(LOG_ERR, "cannot listen on %s: %s", path, strerror(errno));
	close(fd);
	return err;
}

static void on_wake(uv_poll_t *h, int status, int events)
{
	struct daemon *d = h->data;
	uint64_t v = 0;

	(void)status;
	(void)events;
	if (read(d->lis->wake_efd, &v, sizeof(v)) != sizeof(v))
		v = 0;
	drain_woken(d, v);
}

int ctl_wake_open(struct daemon *d)
{
	if (!listener(d))
		return -ENOMEM;
	d->lis->wake_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (d->lis->wake_efd < 0)
		return -errno;
	uv_poll_init(d->loop, &d->lis->wake_poll, d->lis->wake_efd);
	d->lis->wake_poll.data = d;
	uv_poll_start(&d->lis->wake_poll, UV_READABLE, on_wake);
	return 0;
}

static void on_wake_closed(uv_handle_t *h)
{
	struct daemon *d = h->data;

	close(d->lis->wake_efd);
	d->lis->wake_efd = -1;
}

void ctl_wake_close(struct daemon *d)
{
	if (d->lis && d->lis->wake_efd >= 0)
		uv_close((uv_handle_t *)&d->lis->wake_poll, on_wake_closed);
}

void ctl_close_listen(struct daemon *d)
{
	if (!d->lis || d->lis->listen_fd < 0)
		return;
	uv_poll_stop(&d->lis->listen_poll);
	uv_close((uv_handle_t *)&d->lis->listen_poll, NULL);
	close(d->lis->listen_fd);
	d->lis->listen_fd = -1;
	/* An activated socket belongs to systemd, which keeps listening on it
	 * and starts us again when a client connects. */
	if (!d->socket_activated)
		unlink(d->cfg.socket_path);
}
