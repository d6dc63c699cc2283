/* daemon/win/transport.c - the control channel on Windows: the named pipe
 * (win/pipe.c makes its instances with our security descriptor), each
 * connected instance a libuv stream; the peer's identity from the pipe and
 * its token (win/peer.c); objects as handle values in the frame, taken by
 * DuplicateHandle and mapped only when they are sections committed all
 * through; and the event producers wake us with, watched by the system
 * thread pool. ctl.c handles the frames, exactly as on Linux.
 */
#include "daemon.h"
#include "log.h"
#include "clock.h"
#include "ingest/transport.h"
#include "access.h"
#include "ingest/registry.h"
#include "ingest/drain.h"
#include "win/peer.h"
#include "compat-win.h"
#include "pipe.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A connection's transport state: ctl.c sees only the pointer. */
struct ctl_conn {
	uv_pipe_t pipe;
	struct peer_id peer; /* process handle, user SID, image */
	uv_write_t wreq;
	uint8_t *wbuf;       /* the bytes of the write in flight */
	bool writing;
};

/* The pipe's listening side and the event producers wake us with. */
struct ctl_listener {
	struct pipe_listener *listener;
	PSECURITY_DESCRIPTOR pipe_sd;
	HANDLE wake_event, wake_wait;
	uv_async_t wake_async;
	bool wake_open;
};

static struct ctl_listener *listener(struct daemon *d)
{
	if (!d->lis)
		d->lis = calloc(1, sizeof(*d->lis));
	return d->lis;
}

void ctl_fini(struct daemon *d)
{
	free(d->lis);
	d->lis = NULL;
}

const char ctl_obj_kind[] = "a section of the client's (a CreateFileMapping handle value), "
			    "committed all through";

static void on_closed(uv_handle_t *h)
{
	struct client *c = h->data;

	c->tr_open = false;
	client_maybe_free(c);
}

static void on_written(uv_write_t *w, int status)
{
	struct client *c = w->data;

	free(c->conn->wbuf);
	c->conn->wbuf = NULL;
	c->conn->writing = false;
	if (status < 0) {
		c->tx.len = c->tx.head = 0; /* the peer is gone; the read side will tell */
		return;
	}
	ctl_flush(c);
}

/* One write in flight at a time, of everything queued when it started:
 * the queue keeps its limit, and order is kept. */
void ctl_flush(struct client *c)
{
	uv_buf_t b;

	if (c->conn->writing || !c->tx.len || !c->tr_open || uv_is_closing((uv_handle_t *)&c->conn->pipe))
		return;
	c->conn->wbuf = c->tx.buf;
	b = uv_buf_init((char *)c->conn->wbuf + c->tx.head, (unsigned)c->tx.len);
	c->tx.buf = NULL;
	c->tx.len = c->tx.cap = c->tx.head = 0;
	c->conn->wreq.data = c;
	if (uv_write(&c->conn->wreq, (uv_stream_t *)&c->conn->pipe, &b, 1, on_written) < 0) {
		free(c->conn->wbuf);
		c->conn->wbuf = NULL;
		return;
	}
	c->conn->writing = true;
}

static void on_shutdown(uv_shutdown_t *s, int status)
{
	struct client *c = s->data;

	(void)status;
	free(s);
	uv_close((uv_handle_t *)&c->conn->pipe, on_closed);
}

/* What was queued last (a refusal, an error to a tool) still goes out:
 * closing a libuv stream would cancel it, so a pending write is waited
 * for, unless the daemon itself is stopping. */
void ctl_close(struct client *c)
{
	uv_shutdown_t *s;

	if (!c->tr_open || uv_is_closing((uv_handle_t *)&c->conn->pipe))
		return;
	uv_read_stop((uv_stream_t *)&c->conn->pipe);
	ctl_flush(c);
	if (c->conn->writing && !c->d->stopping && (s = calloc(1, sizeof(*s)))) {
		s->data = c;
		if (uv_shutdown(s, (uv_stream_t *)&c->conn->pipe, on_shutdown) == 0)
			return;
		free(s);
	}
	uv_close((uv_handle_t *)&c->conn->pipe, on_closed);
}

void ctl_free(struct client *c)
{
	if (c->conn)
		peer_release(&c->conn->peer);
	free(c->conn);
	c->conn = NULL;
}

/* A handle value after the frame's struct (proto/ctl.h). */
d_obj_t ctl_take_obj(struct client *c, const uint8_t *p, uint32_t len, size_t struct_len)
{
	uint64_t v;

	(void)c;
	if (len < struct_len + sizeof(v))
		return D_OBJ_NONE;
	memcpy(&v, p + struct_len, sizeof(v));
	return v;
}

/* The handle is the client's; nothing of ours to close. */
/* Windows has no fd store: nothing to keep a second reference for. */
d_obj_t ctl_dup_obj(struct client *c, d_obj_t o)
{
	(void)c;
	(void)o;
	return D_OBJ_NONE;
}

void ctl_drop_obj(struct client *c, d_obj_t o)
{
	(void)c;
	(void)o;
}

int ctl_map(struct client *c, d_obj_t o, bool writable, uint64_t max, void **mem, size_t *size)
{
	int err;

	(void)writable; /* views are read-write; the daemon only reads metadata */
	err = peer_take_section(&c->conn->peer, o, 0, (size_t)max, mem, size);
	if (err == -EBADF || (err == -EINVAL && !*size))
		return -EPERM;
	if (err == -EINVAL)
		return -EFBIG;
	return err;
}

void ctl_unmap(void *mem, size_t size)
{
	(void)size;
	UnmapViewOfFile(mem);
}

int ctl_send_welcome(struct client *c, const void *w, uint32_t len)
{
	uint8_t buf[sizeof(struct ringlog_ctl_welcome) + sizeof(uint64_t)];
	uint64_t remote = 0;

	if (len > sizeof(struct ringlog_ctl_welcome))
		return -EINVAL;
	/* Set-only: the program can wake us and do nothing else with it. */
	if (c->d->lis && c->d->lis->wake_event && peer_give_handle(&c->conn->peer, c->d->lis->wake_event, EVENT_MODIFY_STATE,
						 &remote) < 0)
		remote = 0;
	memcpy(buf, w, len);
	memcpy(buf + len, &remote, sizeof(remote));
	return client_send(c, RINGLOG_CTL_WELCOME, buf, len + (uint32_t)sizeof(remote));
}

bool ctl_wake_ready(const struct client *c)
{
	return c->d->lis && c->d->lis->wake_event;
}

int ctl_send_wake(struct client *c)
{
	uint64_t remote = 0;

	if (c->d->lis && c->d->lis->wake_event &&
	    peer_give_handle(&c->conn->peer, c->d->lis->wake_event, EVENT_MODIFY_STATE, &remote) < 0)
		remote = 0;
	return client_send(c, RINGLOG_CTL_WAKE, &remote, sizeof(remote));
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
	struct client *c = h->data;

	(void)hint;
	*b = uv_buf_init((char *)c->rx + c->rx_len, (unsigned)(CLIENT_RX_CAP - c->rx_len));
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
	struct client *c = s->data;

	(void)b;
	if (n < 0) {
		client_close(c);
		return;
	}
	if (n > 0)
		client_received(c, (size_t)n);
}

/* The user SID's last part (the RID: 1001 for a local user, 18 for
 * SYSTEM): the u32 the segment format has for a uid. */
static uint32_t sid_rid(const char *sid)
{
	const char *p = strrchr(sid, '-');

	return p ? (uint32_t)strtoul(p + 1, NULL, 10) : 0;
}

static void fill_identity(struct client *c)
{
	FILETIME created, x1, x2, x3;
	const char *base = strrchr(c->conn->peer.exe, '\\');
	size_t n;

	c->pid = c->conn->peer.pid;
	c->uid = sid_rid(c->conn->peer.user);
	c->gid = 0;
	c->exe = strdup(c->conn->peer.exe);
	base = base ? base + 1 : c->conn->peer.exe;
	n = strlen(base);
	if (n > 4 && !_stricmp(base + n - 4, ".exe"))
		n -= 4;
	if (n > sizeof(c->comm) - 1)
		n = sizeof(c->comm) - 1;
	memcpy(c->comm, base, n);
	c->comm[n] = 0;
	/* The process's creation time, as wall-clock ns: the same in every
	 * daemon instance, so it names the writer across restarts. */
	if (GetProcessTimes(c->conn->peer.process, &created, &x1, &x2, &x3)) {
		uint64_t t = ((uint64_t)created.dwHighDateTime << 32) | created.dwLowDateTime;

		c->start_real_ns = (t - 116444736000000000ull) * 100;
	} else {
		c->start_real_ns = d_now(CLOCK_REALTIME);
	}
}

static void on_client(void *ctx, HANDLE h)
{
	struct daemon *d = ctx;
	struct peer_id id;
	struct ctl_conn *k;
	struct client *c;
	int err;

	if ((err = peer_identify(h, &id)) < 0) {
		d_log(LOG_WARNING, "a client of the pipe could not be identified (%s): disconnected",
		      strerror(-err));
		CloseHandle(h);
		return;
	}
	if (!(k = calloc(1, sizeof(*k))) || !(c = client_new(d))) {
		free(k);
		peer_release(&id);
		CloseHandle(h);
		return;
	}
	c->conn = k;
	k->peer = id;
	fill_identity(c);
	uv_pipe_init(d->loop, &c->conn->pipe, 0);
	c->conn->pipe.data = c;
	c->tr_open = true;
	if ((err = uv_pipe_open(&c->conn->pipe, uv_open_osfhandle(h))) < 0) {
		d_log(LOG_WARNING, "client pid %u: uv_pipe_open: %s", c->pid, uv_strerror(err));
		client_close(c);
		return;
	}
	c->access = access_peer_win(d, &c->conn->peer);
	{
		char why[200];

		if (!ctl_admit(d, c, c->uid, c->access, why, sizeof(why))) {
			d_log(LOG_WARNING, "pid %u (uid %u) refused: %s", c->pid, c->uid, why);
			reg_refuse(c, 0, "%s", why);
			client_close(c);
			return;
		}
	}
	uv_read_start((uv_stream_t *)&c->conn->pipe, on_alloc, on_read);
}

int ctl_listen(struct daemon *d)
{
	const char *sids[4];
	char err[600];
	int rc;

	if (!listener(d))
		return -ENOMEM;
	access_pipe_sids(d, sids);
	if ((rc = peer_pipe_security(sids, &d->lis->pipe_sd, err, sizeof(err))) < 0) {
		d_log(LOG_ERR, "%s", err);
		return rc;
	}
	rc = pipe_listen(d->loop, d->cfg.socket_path, d->lis->pipe_sd, on_client, d, &d->lis->listener);
	if (rc == -EADDRINUSE)
		d_log(LOG_ERR, "another ringlogd (or another program) already has the pipe %s",
		      d->cfg.socket_path);
	else if (rc < 0)
		d_log(LOG_ERR, "cannot listen on %s: %s", d->cfg.socket_path, strerror(-rc));
	return rc;
}

void ctl_close_listen(struct daemon *d)
{
	if (!d->lis)
		return;
	if (d->lis->listener)
		pipe_listener_close(d->lis->listener);
	d->lis->listener = NULL;
}

/* The system thread pool saw the event set: wake the loop. */
static void CALLBACK on_wake_signalled(void *arg, BOOLEAN timed_out)
{
	(void)timed_out;
	uv_async_send(arg);
}

static void on_wake(uv_async_t *a)
{
	drain_woken(a->data, 1);
}

int ctl_wake_open(struct daemon *d)
{
	if (!listener(d))
		return -ENOMEM;
	/* Auto-reset: each wait sees one setting, however many programs set it. */
	d->lis->wake_event = CreateEventA(NULL, FALSE, FALSE, NULL);
	if (!d->lis->wake_event)
		return win_errno(GetLastError());
	uv_async_init(d->loop, &d->lis->wake_async, on_wake);
	d->lis->wake_async.data = d;
	d->lis->wake_open = true;
	if (!RegisterWaitForSingleObject(&d->lis->wake_wait, d->lis->wake_event, on_wake_signalled,
					 &d->lis->wake_async, INFINITE, WT_EXECUTEINWAITTHREAD)) {
		int err = win_errno(GetLastError());

		ctl_wake_close(d);
		return err;
	}
	return 0;
}

static void on_wake_closed(uv_handle_t *h)
{
	struct daemon *d = h->data;

	CloseHandle(d->lis->wake_event);
	d->lis->wake_event = NULL;
}

void ctl_wake_close(struct daemon *d)
{
	if (!d->lis || !d->lis->wake_open)
		return;
	d->lis->wake_open = false;
	/* INVALID_HANDLE_VALUE: return once no callback runs any more, so
	 * none can touch the async handle after it is closed. */
	if (d->lis->wake_wait)
		UnregisterWaitEx(d->lis->wake_wait, INVALID_HANDLE_VALUE);
	d->lis->wake_wait = NULL;
	uv_close((uv_handle_t *)&d->lis->wake_async, on_wake_closed);
}
