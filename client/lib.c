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

static void at_exit(void)
{
	/* Hand every ring to the daemon before the process goes: the daemon
	 * keeps draining them after we are gone. Only when connected, and
	 * bounded: a missing or stuck daemon must not hold up exit. */
	ringlog_flush(500);
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

	pthread_mutex_init(&lib.lock, NULL);
	pthread_cond_init(&lib.cond, NULL);
	while (r) {
		struct lib_ring *next = r->next;

		lib_ring_free(r);
		r = next;
	}
	lib.rings = NULL;
	memset(&lib.stats, 0, sizeof(lib.stats));
	lib_forget_all_after_fork();
	lib_meta_reopen_after_fork();
	lib.meta_dirty = true;
	tr_close(lib.conn);
	lib.conn = NULL;
	tr_wake_reset_after_fork();
	lib.connected = false;
	lib.tried = false;
	lib.thread_running = false;
	lib.stop = false;
	lib.sync_want = lib.sync_acked = 0;
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

int ringlog_flush(int timeout_ms)
{
	struct timespec dl;
	uint64_t token;
	int err = 0;

	if (!__atomic_load_n(&lib.started, __ATOMIC_ACQUIRE))
		return -ENOTCONN;
	deadline_after(&dl, timeout_ms);
	pthread_mutex_lock(&lib.lock);
	/* A program that emits and flushes right away must not lose its
	 * events to the race with the first connection: wait for that first
	 * attempt, not for a daemon that is not there. */
	while (!lib.connected && !lib.tried && !err)
		err = pthread_cond_timedwait(&lib.cond, &lib.lock, &dl);
	err = 0;
	if (!lib.connected) {
		pthread_mutex_unlock(&lib.lock);
		return -ENOTCONN;
	}
	token = ++lib.sync_want;
	pthread_mutex_unlock(&lib.lock);
	lib_wake();
	pthread_mutex_lock(&lib.lock);
	while (lib.sync_acked < token && lib.connected && !err)
		err = pthread_cond_timedwait(&lib.cond, &lib.lock, &dl);
	if (lib.sync_acked >= token)
		err = 0;
	else if (!lib.connected)
		err = ENOTCONN;
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
	return err == -ENOTCONN ? 0 : err;
}

void ringlog_get_stats(struct ringlog_stats *s)
{
	pthread_mutex_lock(&lib.lock);
	*s = lib.stats;
	s->dropped_full = __atomic_load_n(&lib.stats.dropped_full, __ATOMIC_RELAXED);
	s->dropped_other = __atomic_load_n(&lib.stats.dropped_other, __ATOMIC_RELAXED);
	s->connected = lib.connected;
	s->daemon_wakeups = __atomic_load_n(&lib.stats.daemon_wakeups, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&lib.lock);
}
