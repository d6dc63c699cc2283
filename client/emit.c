/* client/emit.c - the hot path: find the thread's ring, reserve, stamp.
 *
 * ringlog__begin() and ringlog__commit() are what RINGLOG_EVENT() calls when
 * the event is enabled. The common case touches only thread-local state and
 * the ring: no lock, no system call, no allocation.
 */
#define _GNU_SOURCE
#include "lib.h"

#include <assert.h>
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include "transport.h"

/* The thread's ring, shared with the inline fast path in ringlog.h.
 * initial-exec: a thread-pointer-relative load instead of __tls_get_addr,
 * in the library and in the programs that read it. It costs a few bytes of
 * the static TLS surplus glibc keeps for libraries loaded with dlopen(). */
__thread struct ringlog__thread ringlog__thread_v2 __attribute__((tls_model("initial-exec")));

/* struct ringlog__hot is the head of struct ringlog_producer. */
#define SAME(f) static_assert(offsetof(struct ringlog__hot, f) == offsetof(struct ringlog_producer, f) && \
			      sizeof(((struct ringlog__hot *)0)->f) == sizeof(((struct ringlog_producer *)0)->f), \
			      "ringlog__hot." #f " mirrors ringlog_producer")
SAME(data);
SAME(bell);
SAME(mask);
SAME(pos);
SAME(next);
SAME(limit);
SAME(max_len);
SAME(last_ts);
#undef SAME
static_assert(sizeof(void *) != 8 || offsetof(struct ringlog__hot, last_ts) + 8 == 64,
	      "the inline path reads one line");
static_assert(RINGLOG__BELL_GAP == RINGLOG_BELL_GAP, "bell gap in ringlog.h");
static_assert(RINGLOG__PROD_POS_FROM_DATA == RINGLOG_PROD_POS_FROM_DATA, "prod_pos in ringlog.h");
static_assert(RINGLOG__REC_EVENT == RINGLOG_REC_EVENT && RINGLOG__REC_EVENT_ACT == RINGLOG_REC_EVENT_ACT,
	      "record types in ringlog.h");
static_assert(RINGLOG_REC_HDR_SIZE == 8 && RINGLOG_EVENT_HDR_SIZE == 8 && RINGLOG_ACTIVITY_SIZE == 16,
	      "sizes the inline path assumes");

static struct lib_ring *thread_ring(void)
{
	struct ringlog__hot *h = ringlog__thread_v2.hot;

	return h ? (struct lib_ring *)((char *)h - offsetof(struct lib_ring, prod)) : NULL;
}

static pthread_key_t exit_key;
static pthread_once_t exit_once = PTHREAD_ONCE_INIT;
static bool exit_key_made;

static void finish_ring(struct lib_ring *r)
{
	pthread_mutex_lock(&lib.lock);
	ringlog_prod_finish(&r->prod);
	/* A ring asleep in the daemon (proto/bell.h) is let go once it is
	 * seen finished: tell it now, not at its next sweep. */
	lib_bell_ring(r, lib_clock());
	r->finished = true;
	/* the daemon lets a finished ring go once drained: triggers from
	 * threads without a ring go to a running thread's */
	lib_trigger_retarget_locked(r, false);
	pthread_mutex_unlock(&lib.lock);
	lib_wake();
}

#ifndef PTHREAD_DESTRUCTOR_ITERATIONS
#define PTHREAD_DESTRUCTOR_ITERATIONS 4
#endif

#ifndef _WIN32
/* Rounds of key destructors this thread's ring has waited (below), and
 * whether it is finished: a ring made after that would never be. */
static __thread unsigned exit_rounds;
static __thread bool exit_done;
#endif

/* Finish the thread's ring r with the thread claimed (busy): a signal
 * handler that emits meanwhile is dropped as reentrant (dropped_other),
 * rather than make a ring under the lib.lock this thread holds. */
static void finish_claimed(struct lib_ring *r)
{
	ringlog__thread_v2.busy = 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (ringlog__thread_v2.hot == (struct ringlog__hot *)&r->prod)
		ringlog__thread_v2.hot = NULL;
	finish_ring(r);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	ringlog__thread_v2.busy = 0;
}

/* At thread exit the key's value is the ring. Not thread_ring(): the
 * thread's own TLS may already be gone (emulated TLS, as on Windows, frees
 * its block in a destructor of its own that can run first); there the ring
 * is finished at once, and another key's destructor that emits after this
 * one writes into a ring that is finished (and may be freed).
 *
 * Where TLS outlives the keys' destructors (native TLS: glibc, musl), the
 * ring stays the thread's until the last round of destructors: each round
 * sets the key again, so that another key's destructor, which may run
 * after this one and emit, writes into it (a thread that wrote into it
 * once it was finished wrote into memory the library may have freed). In
 * the last round it is finished and forgotten; an event after that finds
 * no ring and is counted (no_ring). */
static void on_thread_exit(void *arg)
{
#ifndef _WIN32
	struct lib_ring *r = arg;

	if (++exit_rounds < PTHREAD_DESTRUCTOR_ITERATIONS && pthread_setspecific(exit_key, r) == 0)
		return;
	exit_done = true;
	finish_claimed(r);
#else
	finish_ring(arg);
#endif
}

static void make_key(void)
{
	exit_key_made = pthread_key_create(&exit_key, on_thread_exit) == 0;
}

void lib_thread_ring_finish(void)
{
	struct lib_ring *r = thread_ring();

	if (!r)
		return;
	/* finished now: the exit destructor must not see it again, by when
	 * the library may have freed it */
	if (exit_key_made)
		pthread_setspecific(exit_key, NULL);
	finish_claimed(r);
}

/* After fork() in the child: the parent's rings are not ours. */
void lib_forget_all_after_fork(void)
{
	ringlog__thread_v2.hot = NULL;
	if (exit_key_made) /* the ring it names was the parent's, and is freed */
		pthread_setspecific(exit_key, NULL);
}

static void drop(uint64_t *counter)
{
	__atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
}

/* The ring passed its high-water mark while the daemon sleeps: the one
 * system call an emit may make. */
void lib_wake_daemon(void)
{
	if (tr_signal(__atomic_load_n(&lib.daemon_wake, __ATOMIC_ACQUIRE)))
		__atomic_fetch_add(&lib.stats.daemon_wakeups, 1, __ATOMIC_RELAXED);
}

/* First event of this thread, or an unregistered event. */
static struct lib_ring *slow_ring(struct ringlog_event *e)
{
	struct lib_ring *r;

	if (lib_start() < 0)
		return NULL;
	if (!__atomic_load_n(&e->id, __ATOMIC_ACQUIRE) && ringlog_event_register(e) < 0)
		return NULL;
	if ((r = thread_ring()))
		return r;
#ifndef _WIN32
	if (exit_done)
		return NULL; /* past the thread's last round of destructors */
#endif
	pthread_once(&exit_once, make_key);
	r = lib_ring_create();
	if (!r)
		return NULL;
	ringlog__thread_v2.tsc = lib.tsc;
	ringlog__thread_v2.hot = (struct ringlog__hot *)&r->prod;
	/* Any non-NULL value makes the destructor run at thread exit. */
	pthread_setspecific(exit_key, r);
	return r;
}

void *ringlog__begin(struct ringlog_event *e, uint32_t len,
		     const struct ringlog_activity *act)
{
	struct ringlog__thread *t = &ringlog__thread_v2;
	struct lib_ring *r;
	uint16_t id;
	uint32_t head = RINGLOG_EVENT_HDR_SIZE + (act ? RINGLOG_ACTIVITY_SIZE : 0);
	uint8_t *p;
	uint64_t ts, wait_ns;
	uint16_t pol;

	/* We interrupted this thread's own emit (a signal handler): its record
	 * is open where ours would go. See ringlog__reserve() in ringlog.h. */
	if (__builtin_expect(t->busy, 0)) {
		drop(&lib.stats.dropped_other);
		return NULL;
	}
	t->busy = 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	r = thread_ring();
	id = __atomic_load_n(&e->id, __ATOMIC_ACQUIRE);

	if (__builtin_expect(!r || !id, 0)) {
		int saved = errno; /* the program's, which a failed call it made set */

		r = slow_ring(e);
		errno = saved;
		if (!r) {
			drop(&lib.stats.dropped_other);
			drop(&lib.no_ring); /* for the daemon's count (overload.c) */
			goto fail;
		}
		id = e->id;
	}
	/* Overload (overload.c): an event over its rate limit is suppressed,
	 * not dropped; one allowed to wait waits for room; and the level goes
	 * to the ring, which sheds the less important ones first. */
	pol = __atomic_load_n(&e->policy, __ATOMIC_ACQUIRE);
	if (__builtin_expect(pol & LIB_POL_RATE, 0) && !lib_rate_admit(id, pol))
		goto fail;
	r->prod.level = e->level;
	wait_ns = lib_wait_ns(id, pol);
	if (__builtin_expect(wait_ns != 0, 0))
		p = lib_wait_reserve(r, len + head,
				     act ? RINGLOG_REC_EVENT_ACT : RINGLOG_REC_EVENT, id, wait_ns);
	else
		p = ringlog_prod_reserve(&r->prod, len + head,
					 act ? RINGLOG_REC_EVENT_ACT : RINGLOG_REC_EVENT, id);
	if (__builtin_expect(r->prod.wake, 0)) {
		r->prod.wake = 0;
		lib_wake_daemon();
	}
	if (__builtin_expect(!p, 0)) {
		drop(&lib.stats.dropped_full);
		/* Where the gap began and whose events it holds, for its LOSS
		 * record (proto/ring.h): one clock read per gap. */
		if (len + head <= r->prod.max_len) {
			if (ringlog_prod_gap_opened(&r->prod)) {
				r->prod.gap_ts = lib_clock();
				r->prod.gap_aux = e->provider->id;
			} else if (r->prod.gap_aux != e->provider->id) {
				r->prod.gap_aux = 0;
			}
		}
		goto fail;
	}
	ts = lib_clock();
	ringlog__bell((struct ringlog__hot *)&r->prod, ts);
	memcpy(p, &ts, 8);
	if (act)
		memcpy(p + 8, act, RINGLOG_ACTIVITY_SIZE);
	return p + head;
fail:
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	t->busy = 0;
	return NULL;
}

void ringlog__commit(void)
{
	ringlog_prod_commit(&thread_ring()->prod);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	ringlog__thread_v2.busy = 0;
}

uint64_t ringlog__clock(void)
{
	return lib_clock();
}

static uint32_t arg_size(const struct ringlog_field *f, const struct ringlog_arg *a,
			 uint16_t *h)
{
	switch (f->type) {
	case RINGLOG_T_I8: case RINGLOG_T_U8: case RINGLOG_T_BOOL: return 1;
	case RINGLOG_T_I16: case RINGLOG_T_U16: return 2;
	case RINGLOG_T_I32: case RINGLOG_T_U32: return 4;
	case RINGLOG_T_STR:
		return 2 + ringlog__strnlen(a->v.bytes.ptr, a->v.bytes.len, h);
	case RINGLOG_T_BLOB:
		*h = (uint16_t)ringlog__blobclip(a->v.bytes.ptr ? a->v.bytes.len : 0);
		return 2u + *h;
	default: return 8;
	}
}

int ringlog_emit(struct ringlog_event *e, const struct ringlog_activity *act,
		 const struct ringlog_arg *args)
{
	uint16_t h[RINGLOG_FIELDS_MAX];
	uint32_t n[RINGLOG_FIELDS_MAX], len = 0;
	uint8_t *p;

	if (!e || !e->provider || e->nfields > RINGLOG_FIELDS_MAX || (e->nfields && !args))
		return -EINVAL;
	if (!RINGLOG_ENABLED(*e->provider, e->level, e->keyword))
		return -EAGAIN;
	for (unsigned i = 0; i < e->nfields; i++)
		len += n[i] = arg_size(&e->fields[i], &args[i], &h[i]);
	p = ringlog__begin(e, len, act);
	if (!p)
		return -ENOBUFS;
	for (unsigned i = 0; i < e->nfields; i++) {
		const struct ringlog_arg *a = &args[i];

		switch (e->fields[i].type) {
		case RINGLOG_T_STR: case RINGLOG_T_BLOB:
			memcpy(p, &h[i], 2);
			if (n[i] > 2)
				memcpy(p + 2, a->v.bytes.ptr, n[i] - 2);
			break;
		case RINGLOG_T_F64: memcpy(p, &a->v.d, 8); break;
		case RINGLOG_T_BOOL: p[0] = a->v.b != 0; break;
		default: memcpy(p, &a->v.u, n[i]); break; /* little-endian: low bytes */
		}
		p += n[i];
	}
	ringlog__publish();
	return 0;
}
