/* client/lib.c - library state: start, fork, flush, close, diagnostics. */
#define _GNU_SOURCE
#include "lib.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "transport.h"

struct lib lib = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.cond = PTHREAD_COND_INITIALIZER,
	.meta_obj = LIB_OBJ_NONE,
	.bell_obj = LIB_OBJ_NONE,
	.daemon_wake = LIB_OBJ_NONE,
};

static pthread_once_t once = PTHREAD_ONCE_INIT;

void lib_diag(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (!lib.diag)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	lib.diag(lib.diag_ctx, msg);
}

void ringlog_set_diag(void (*fn)(void *ctx, const char *msg), void *ctx)
{
	pthread_mutex_lock(&lib.lock);
	lib.diag = fn;
	lib.diag_ctx = ctx;
	pthread_mutex_unlock(&lib.lock);
}

/* "64K", "1M", "1048576": a ring size from the environment. */
static uint64_t env_size(const char *name)
{
	const char *s = getenv(name);
	char *end;
	unsigned long long v;

	if (!s || !*s)
		return 0;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return 0;
	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	default: break;
	}
	return *end ? 0 : v;
}

static void deadline_after(struct timespec *ts, int ms)
{
	clock_gettime(CLOCK_REALTIME, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

/* RINGLOG_EXIT_TIMEOUT: milliseconds the exit waits, at most, for a daemon
 * to store what this process emitted. */
#define EXIT_TIMEOUT_DEFAULT_MS 2000

/* lib.lock at exit. On Windows a DLL's atexit handlers run in
 * DLL_PROCESS_DETACH, after ExitProcess has ended every other thread: one
 * that held lib.lock at that moment (the connection thread, mid-frame)
 * never gives it back, and waiting for it hung the process at exit. So
 * there the wait is bounded, and a lock not had is an exit without the
 * final flush. 0, or an error from pthread_mutex_timedlock. */
static int exit_lock(void)
{
#ifdef _WIN32
	struct timespec dl;

	deadline_after(&dl, 200);
	return pthread_mutex_timedlock(&lib.lock, &dl);
#else
	return pthread_mutex_lock(&lib.lock);
#endif
}

static void at_exit(void)
{
	const char *s = getenv("RINGLOG_EXIT_TIMEOUT");
	int ms = EXIT_TIMEOUT_DEFAULT_MS, err;
	bool daemon_here;

	if (s && *s) {
		char *end;
		long v = strtol(s, &end, 10);

		if (!*end && v >= 0 && v <= 3600000)
			ms = (int)v;
	}
	if (!__atomic_load_n(&lib.started, __ATOMIC_ACQUIRE))
		return;
	/* An orderly exit, not a crash: the daemon's flight recorder takes a
	 * writer that goes without this for one that crashed (proto/ring.h). */
	if (exit_lock())
		return;
	for (struct lib_ring *r = lib.rings; r; r = r->next)
		__atomic_store_n(&r->prod.hdr->exit_flags, RINGLOG_RING_EXITING, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&lib.lock);
	/* Wait (bounded) for the daemon to store everything, reconnecting if
	 * it restarts meanwhile: once we are gone, events it had not taken
	 * are lost. Not on a host with no daemon at all (no socket, never
	 * connected): there, exit at once, counting what is left. */
	if (exit_lock())
		return;
	{
		/* Decide on the first attempt's answer, not before it was made
		 * (a program that emits and returns at once). */
		struct timespec dl;
		int e = 0;

		deadline_after(&dl, 200);
		while (!lib.tried && !lib.connected && !lib.ever_connected && !e)
			e = pthread_cond_timedwait(&lib.cond, &lib.lock, &dl);
	}
	daemon_here = lib.ever_connected || lib.connect_err != ENOENT;
	pthread_mutex_unlock(&lib.lock);
	err = ringlog_flush(daemon_here ? ms : 0);
	if (err < 0)
		lib_diag("at exit: %llu events were not stored (%s); RINGLOG_EXIT_TIMEOUT=%d ms",
			 (unsigned long long)lib.stats.unstored, strerror(-err), daemon_here ? ms : 0);
}

#ifndef _WIN32
static void before_fork(void)
{
	pthread_mutex_lock(&lib.lock);
}

static void after_fork_parent(void)
{
	pthread_mutex_unlock(&lib.lock);
}

/* The child has one thread and a copy of our memory. The parent's rings,
 * socket and thread are not its own: drop them without touching them (the
 * parent still writes those rings), and let lib_start() build new ones. */
static void after_fork_child(void)
{
	struct lib_ring *r = lib.rings;

	/* This thread took the lock in before_fork(): it may release it (a
	 * mutex initialised again while held is undefined) */
	pthread_mutex_unlock(&lib.lock);
	pthread_cond_init(&lib.cond, NULL);
	/* First, nothing here may write the parent's rings any more (a signal
	 * handler's ringlog_trigger() included); a call another thread was in
	 * at the fork did not come along. */
	lib_forget_all_after_fork();
	__atomic_store_n(&lib_trigger_hdr, NULL, __ATOMIC_SEQ_CST);
	__atomic_store_n(&lib_trigger_busy[0], 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&lib_trigger_busy[1], 0, __ATOMIC_SEQ_CST);
	while (r) {
		struct lib_ring *next = r->next;

		lib_ring_free(r);
		r = next;
	}
	lib.rings = NULL;
	memset(&lib.stats, 0, sizeof(lib.stats));
	lib.no_ring = lib.no_ring_reported = 0; /* the parent's to report */
	lib_meta_reopen_after_fork();
	lib_bell_forget_after_fork();
	lib.meta_dirty = true;
	tr_close(lib.conn);
	lib.conn = NULL;
	tr_wake_reset_after_fork();
	lib.connected = false;
	lib.tried = false;
	lib.thread_running = false;
	lib.stop = false;
	lib.sync_want = lib.sync_acked = 0;
	lib.wake_wanted = false;
	lib.wake_retry_ns = 0;
	lib.pid = lib_pid();
	__atomic_store_n(&lib.started, false, __ATOMIC_RELEASE);
}
#endif

static void init_once(void)
{
	lib_clock_init();
#ifndef _WIN32
	pthread_atfork(before_fork, after_fork_parent, after_fork_child);
#endif
	atexit(at_exit);
}

int lib_start(void)
{
	int err = 0;

	if (__atomic_load_n(&lib.started, __ATOMIC_ACQUIRE))
		return 0;
	pthread_once(&once, init_once);
	pthread_mutex_lock(&lib.lock);
	if (lib.started)
		goto out;
	lib.pid = lib_pid();
	if (!lib.ring_size) {
		lib.ring_size = env_size("RINGLOG_RING_SIZE");
		lib.ring_size_from_env = lib.ring_size != 0;
	}
	if (!lib.meta && (err = lib_meta_create()) < 0)
		goto out;
	/* optional: without it the daemon polls our rings (bell.c) */
	if (!lib.bell)
		(void)lib_bell_create();
	if ((err = tr_wake_init()) < 0)
		goto out;
	if ((err = lib_thread_start_locked()) < 0)
		goto out;
	__atomic_store_n(&lib.started, true, __ATOMIC_RELEASE);
out:
	pthread_mutex_unlock(&lib.lock);
	return err;
}

int ringlog_open(void)
{
	return lib_start();
}

void lib_wake(void)
{
	tr_wake_signal();
}

/* Events in our rings that no daemon has stored, in all of them or in the
 * refused ones only. */
static uint64_t unstored_locked(bool refused_only)
{
	uint64_t n = 0;

	for (struct lib_ring *r = lib.rings; r; r = r->next)
		if (!refused_only || r->refused)
			n += lib_ring_unstored(r);
	return n;
}

int ringlog_flush(int timeout_ms)
{
	struct timespec dl;
	uint64_t token;
	int err = 0;

	if (!__atomic_load_n(&lib.started, __ATOMIC_ACQUIRE))
		return 0; /* nothing emitted, nothing to store */
	deadline_after(&dl, timeout_ms < 0 ? 0 : timeout_ms);
	pthread_mutex_lock(&lib.lock);
	/* The daemon answers SYNC once everything the rings held when it
	 * read the request is written to a segment. Not connected, or the
	 * connection lost meanwhile: the thread reconnects at once while we
	 * wait, and asks the next daemon. */
	token = ++lib.sync_want;
	lib.flush_waiters++;
	pthread_mutex_unlock(&lib.lock);
	lib_wake();
	pthread_mutex_lock(&lib.lock);
	while (lib.sync_acked < token && !lib.access_refused && !err)
		err = pthread_cond_timedwait(&lib.cond, &lib.lock, &dl);
	lib.flush_waiters--;
	if (lib.sync_acked >= token) {
		/* Rings the daemon refused were not part of the answer. */
		lib.stats.unstored = unstored_locked(true);
		err = lib.stats.unstored ? EPERM : 0;
	} else {
		lib.stats.unstored = unstored_locked(false);
		err = lib.access_refused ? ECONNREFUSED : lib.connected ? ETIMEDOUT : ENOTCONN;
	}
	pthread_mutex_unlock(&lib.lock);
	return -err;
}

int ringlog_close(int timeout_ms)
{
	int err;

	lib_thread_ring_finish();
	err = ringlog_flush(timeout_ms);
	lib_thread_stop();
	pthread_mutex_lock(&lib.lock);
	/* The daemon holds its own mappings of the rings it took; our finished
	 * ones go. Rings of threads still running stay: those threads may emit
	 * again, which restarts the library. */
	for (struct lib_ring **pp = &lib.rings; *pp;) {
		struct lib_ring *r = *pp;

		if (!r->finished) {
			pp = &r->next;
			continue;
		}
		*pp = r->next;
		lib_ring_free(r);
		lib.stats.rings_freed++;
		lib.stats.rings_live--;
	}
	__atomic_store_n(&lib.started, false, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&lib.lock);
	return err;
}

void ringlog_get_stats(struct ringlog_stats *s)
{
	pthread_mutex_lock(&lib.lock);
	*s = lib.stats;
	s->dropped_full = __atomic_load_n(&lib.stats.dropped_full, __ATOMIC_RELAXED);
	s->dropped_other = __atomic_load_n(&lib.stats.dropped_other, __ATOMIC_RELAXED);
	s->connected = lib.connected && !lib.access_refused;
	s->daemon_wakeups = __atomic_load_n(&lib.stats.daemon_wakeups, __ATOMIC_RELAXED);
	{
		/* Refused, or no daemon: nothing in the rings will be stored as
		 * things stand (connected: only refused rings' events). */
		uint64_t now = unstored_locked(lib.connected && !lib.access_refused);

		if (now > s->unstored)
			s->unstored = now;
	}
	pthread_mutex_unlock(&lib.lock);
}
