/* client/connect.c - the library's only thread: find the daemon, hand it
 * the metadata region and every ring, apply its enablement, reconnect after
 * a restart, and release rings the daemon has finished with. The link
 * itself is transport.h's (a Unix socket, or a named pipe on Windows).
 *
 * Nothing here is on an emitting thread's fast path. A thread's first
 * event hands its new ring over itself when the socket takes it at once
 * (lib_ring_offer_locked()), else signals this thread's wake object, as
 * registering metadata does.
 */
#define _GNU_SOURCE
#include "lib.h"
#include "ctl.h"
#include "transport.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int send_hello(struct transport *t)
{
	struct ringlog_ctl_hello h = {
		.version = RINGLOG_CTL_VERSION,
		.clock = lib.tsc ? RINGLOG_RING_CLOCK_TSC : 0,
		.tsc = lib_clock(),
		.mono_ns = lib_now_ns(CLOCK_MONOTONIC),
		.real_ns = lib_now_ns(CLOCK_REALTIME),
	};

	return tr_send(t, RINGLOG_CTL_HELLO, &h, sizeof(h), lib.meta_obj);
}

static int send_ring(struct transport *t, struct lib_ring *r, bool now)
{
	struct ringlog_ctl_ring m = { .handle = r->handle, .tid = r->tid, .bell = r->bell_slot };

	return now ? tr_try_send(t, RINGLOG_CTL_RING, &m, sizeof(m), r->obj)
		   : tr_send(t, RINGLOG_CTL_RING, &m, sizeof(m), r->obj);
}

/* On the thread's first event, which made r: a process that dies right
 * after it (abort(), SIGKILL) must not take its events with it because
 * this thread had not yet woken the library's. A descriptor in flight on
 * the socket outlives the process; the daemon maps it, drains the ring
 * and stores them (an outsider's test lost 1-3 new threads' events in
 * 1-10 % of such runs). Not while the daemon cannot use it yet (a bell
 * page it was not sent), nor when the socket cannot take it at once. */
void lib_ring_offer_locked(struct lib_ring *r)
{
	if (!lib.connected || !lib.conn || lib.access_refused || r->sent ||
	    (r->bell_slot && !lib.bell_sent))
		return;
	if (send_ring(lib.conn, r, true) == 0)
		r->sent = true;
}

/* Send what the daemon does not have yet: metadata news, new rings, a sync
 * request. Called with lib.lock held; tr_send() is bounded by a send
 * timeout, and emitters never take this lock on their fast path. */
static int send_pending_locked(struct transport *t)
{
	int err;

	if (lib.meta_dirty) {
		if ((err = tr_send(t, RINGLOG_CTL_META, NULL, 0, LIB_OBJ_NONE)) < 0)
			return err;
		lib.meta_dirty = false;
	}
	if (lib.bell && lib.daemon_bell && !lib.bell_sent) {
		struct ringlog_ctl_bell b = { .slots = RINGLOG_BELL_SLOTS };

		if ((err = tr_send(t, RINGLOG_CTL_BELL, &b, sizeof(b), lib.bell_obj)) < 0)
			return err;
		lib.bell_sent = true;
	}
	for (struct lib_ring *r = lib.rings; r; r = r->next) {
		if (r->sent || r->refused)
			continue;
		if ((err = send_ring(t, r, false)) < 0)
			return err;
		r->sent = true;
	}
	/* Before SYNC, so that a flush covers what was suppressed. */
	if ((err = lib_policy_send_locked(t)) < 0)
		return err;
	if (lib.wake_wanted) {
		uint64_t now = lib_now_ns(CLOCK_MONOTONIC);

		if (now >= lib.wake_retry_ns) {
			if ((err = tr_send(t, RINGLOG_CTL_WAKE, NULL, 0, LIB_OBJ_NONE)) < 0)
				return err;
			lib.wake_retry_ns = now + 5000000000u; /* unless answered */
		}
	}
	if (lib.sync_want > lib.sync_acked) {
		uint64_t token = lib.sync_want;

		if ((err = tr_send(t, RINGLOG_CTL_SYNC, &token, sizeof(token), LIB_OBJ_NONE)) < 0)
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

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* A RELEASED frame's handles against our rings, under lib.lock, which a
 * thread's first event waits for: sorted, one pass over the rings with a
 * binary search each, not handles x rings (a frame holds up to 4,096, and a
 * process up to limits.rings_per_process rings). */
static void mark_released_locked(const uint8_t *p, uint32_t len)
{
	size_t n = len / sizeof(struct ringlog_ctl_released);
	uint64_t *h = n ? malloc(n * sizeof(*h)) : NULL;

	if (!h) {
		for (size_t i = 0; i < n; i++) { /* no memory: the slow way */
			uint64_t one;

			memcpy(&one, p + i * sizeof(one), sizeof(one));
			for (struct lib_ring *x = lib.rings; x; x = x->next)
				if (x->handle == one && x->sent)
					x->released = true;
		}
		return;
	}
	memcpy(h, p, n * sizeof(*h));
	qsort(h, n, sizeof(*h), cmp_u64);
	for (struct lib_ring *x = lib.rings; x; x = x->next)
		if (x->sent && bsearch(&x->handle, h, n, sizeof(*h), cmp_u64))
			x->released = true;
	free(h);
}

static void handle_frame_locked(uint16_t type, const uint8_t *p, uint32_t len, lib_obj_t *obj)
{
	switch (type) {
	case RINGLOG_CTL_WELCOME: {
		struct ringlog_ctl_welcome w;

		if (len < sizeof(w))
			return;
		lib_obj_t wake = tr_frame_obj(p, len, sizeof(w), *obj);

		lib.access_refused = false;
		lib.ever_connected = true;
		memcpy(&w, p, sizeof(w));
		lib.wake_wanted = wake == LIB_OBJ_NONE && (w.flags & RINGLOG_WELCOME_WAKE);
		tr_take_daemon_wake(wake);
		*obj = LIB_OBJ_NONE;
		lib.daemon_overload = w.flags & RINGLOG_WELCOME_OVERLOAD;
		lib.daemon_bell = w.flags & RINGLOG_WELCOME_BELL;
		lib.daemon_released = w.flags & RINGLOG_WELCOME_RELEASED;
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
	case RINGLOG_CTL_POLICY:
		lib_policy_apply_locked(p, len);
		break;
	case RINGLOG_CTL_REFUSE: {
		struct ringlog_ctl_refuse r;

		if (len < sizeof(r))
			return;
		memcpy(&r, p, sizeof(r));
		if (!r.handle)
			lib.refused_all = lib.access_refused = true;
		pthread_cond_broadcast(&lib.cond); /* ringlog_flush() gives up */
		for (struct lib_ring *x = lib.rings; x; x = x->next)
			if (x->handle == r.handle)
				x->refused = true;
		lib_diag("ringlogd refused %s: %.*s", r.handle ? "a ring" : "this process",
			 (int)(len - sizeof(r)), (const char *)p + sizeof(r));
		break;
	}
	case RINGLOG_CTL_WAKE: {
		lib_obj_t wake = tr_frame_obj(p, len, 0, *obj);

		*obj = LIB_OBJ_NONE;
		if (wake != LIB_OBJ_NONE) {
			tr_take_daemon_wake(wake);
			lib.wake_wanted = false;
		} else {
			/* still no room for it: a second from now */
			lib.wake_retry_ns = lib_now_ns(CLOCK_MONOTONIC) + 1000000000u;
		}
		break;
	}
	case RINGLOG_CTL_RELEASED:
		mark_released_locked(p, len);
		break; /* freed by the next lib_rings_gc_locked() */
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

/* Read what the daemon sent; returns 0, or -errno / -EPIPE on EOF. */
static int receive(struct transport *t, struct rxbuf *rx)
{
	lib_obj_t obj;
	long n = tr_recv(t, rx->buf + rx->len, sizeof(rx->buf) - rx->len, &obj);
	size_t off = 0;

	if (n <= 0)
		return (int)n;
	rx->len += (size_t)n;
	pthread_mutex_lock(&lib.lock);
	while (rx->len - off >= sizeof(struct ringlog_ctl_frame)) {
		struct ringlog_ctl_frame f;

		memcpy(&f, rx->buf + off, sizeof(f));
		if (f.len > sizeof(rx->buf) - sizeof(f)) {
			pthread_mutex_unlock(&lib.lock);
			tr_close_obj(obj);
			return -EPROTO;
		}
		if (rx->len - off < sizeof(f) + f.len)
			break;
		handle_frame_locked(f.type, rx->buf + off + sizeof(f), f.len, &obj);
		off += sizeof(f) + f.len;
	}
	pthread_mutex_unlock(&lib.lock);
	tr_close_obj(obj); /* one no frame wanted */
	memmove(rx->buf, rx->buf + off, rx->len - off);
	rx->len -= off;
	return 0;
}

static void disconnect(struct transport *t)
{
	pthread_mutex_lock(&lib.lock);
	lib.conn = NULL;
	lib.connected = false;
	/* The next daemon gets every ring still here and all the metadata. */
	for (struct lib_ring *r = lib.rings; r; r = r->next)
		r->sent = r->released = false;
	lib.meta_dirty = true;
	lib.bell_sent = lib.daemon_bell = lib.daemon_released = false;
	lib.wake_wanted = false;
	lib.wake_retry_ns = 0;
	pthread_cond_broadcast(&lib.cond);
	pthread_mutex_unlock(&lib.lock);
	tr_close(t);
}

static void session(struct transport *t, struct rxbuf *rx)
{
	int err;

	rx->len = 0;
	pthread_mutex_lock(&lib.lock);
	err = send_hello(t);
	if (!err) {
		lib.conn = t;
		lib.connected = true;
		lib.stats.connects++;
		pthread_cond_broadcast(&lib.cond); /* ringlog_flush() waits for it */
		lib.meta_dirty = true;
	}
	pthread_mutex_unlock(&lib.lock);

	while (!err) {
		int ev;

		pthread_mutex_lock(&lib.lock);
		if (lib.stop) {
			pthread_mutex_unlock(&lib.lock);
			break;
		}
		err = send_pending_locked(t);
		lib_rings_gc_locked();
		pthread_mutex_unlock(&lib.lock);
		if (err)
			break;
		ev = tr_wait(t, 100);
		if (ev & TR_WOKEN)
			tr_wake_clear();
		if (ev & TR_READABLE)
			err = receive(t, rx);
	}
	disconnect(t);
}

static void *thread_main(void *arg)
{
	struct rxbuf *rx = malloc(sizeof(*rx));
	int backoff = 20, said = 0; /* said: the connect error last reported */

	(void)arg;
	while (rx) {
		struct transport *t;
		int cerr = 0, wait;

		pthread_mutex_lock(&lib.lock);
		lib_rings_gc_locked();
		if (lib.stop) {
			pthread_mutex_unlock(&lib.lock);
			break;
		}
		pthread_mutex_unlock(&lib.lock);

		t = tr_connect(&cerr);
		pthread_mutex_lock(&lib.lock);
		lib.connect_err = t ? 0 : -cerr; /* tr_connect() gives -errno */
		pthread_mutex_unlock(&lib.lock);
		if (t) {
			bool refused;

			session(t, rx);
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
		/* Refused by the socket's file (its mode, a directory's): the
		 * program's log is where its user can learn which group to
		 * join. Once per refusal, not at every retry. */
		if (cerr != said && (cerr == -EACCES || cerr == -EPERM)) {
			char why[400];

			tr_refusal(why, sizeof(why));
			lib_diag("cannot connect to ringlogd: %s; events wait in this process's rings "
				 "(overflow is counted) until it may", why);
		}
		said = cerr;
		pthread_mutex_lock(&lib.lock);
		lib.tried = true;
		pthread_cond_broadcast(&lib.cond);
		pthread_mutex_unlock(&lib.lock);
		/* No daemon yet: rings fill on their own; look again soon, but
		 * back off so an absent daemon costs nearly nothing; while a
		 * flush waits for one, every 20 ms. */
		pthread_mutex_lock(&lib.lock);
		wait = lib.flush_waiters && !lib.access_refused ? 20 : backoff;
		pthread_mutex_unlock(&lib.lock);
		if (tr_wait(NULL, wait) & TR_WOKEN)
			tr_wake_clear();
		if (backoff < 500)
			backoff *= 2;
	}
	free(rx);
	return NULL;
}

int lib_thread_start_locked(void)
{
	int err;

	if (lib.thread_running)
		return 0;
	lib.stop = false;
#ifdef _WIN32
	err = pthread_create(&lib.thread, NULL, thread_main, NULL);
#else
	sigset_t all, old;

	/* The thread must never run the program's signal handlers. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&lib.thread, NULL, thread_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
#endif
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
