/* client/lib.h - internals of libringlog shared by its files. */
#ifndef RINGLOG_CLIENT_LIB_H
#define RINGLOG_CLIENT_LIB_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "bell.h"
#include "event.h"
#include "ring.h"
#include "ringbuf.h"
#include "ringlog.h"

#ifdef _WIN32
#define LIB_HIDDEN
/* A system object the daemon is handed: a HANDLE here, a descriptor on
 * Unix (os-*.c, transport-*.c). */
typedef void *lib_obj_t;
#define LIB_OBJ_NONE NULL
#else
#define LIB_HIDDEN __attribute__((visibility("hidden")))
typedef int lib_obj_t;
#define LIB_OBJ_NONE (-1)
#endif

struct transport;
#define LIB_META_SIZE (256u << 10)   /* metadata region: ~2000 events */
#define LIB_RING_DEFAULT (1u << 20)  /* see lib_ring_size() */

/* One ring: a thread's, or a finished one the daemon has not drained yet. */
struct lib_ring {
	/* first, and the block 64-aligned (ring.c): the inline path's fields
	 * (struct ringlog__hot) are then one cache line */
	struct ringlog_producer prod;
	struct lib_ring *next;
	uint32_t bell_slot; /* + 1; 0: none (prod.bell: the slot, bell.c) */
	void *mem;
	size_t map_size;
	lib_obj_t obj;  /* the shared memory, handed to the daemon */
	uint32_t tid;
	uint64_t handle;
	bool sent;      /* handed to the current daemon connection */
	bool finished;  /* its thread exited (or the library closed) */
	bool refused;   /* the daemon said no: events still go in, nobody reads */
	bool released;  /* the current daemon unmapped it for good (RELEASED) */
	unsigned limbo_parity; /* in lib.limbo: the trigger count it waits for */
};

struct lib {
	pthread_mutex_t lock;       /* everything below except the atomics */
	pthread_cond_t cond;        /* sync_acked moved, or the thread stopped */
	bool started;
	uint32_t pid;               /* of the process that started us (fork) */
	bool tsc;                   /* the hot-path clock is the TSC */

	/* metadata region (event.h) */
	lib_obj_t meta_obj;
	struct ringlog_meta_hdr *meta;
	bool meta_dirty;            /* grew since the daemon last heard */
	struct ringlog_provider *providers;

	/* the bell page (bell.c), or NULL */
	lib_obj_t bell_obj;
	struct ringlog_bell_page *bell;
	uint32_t bell_used[RINGLOG_BELL_SLOTS / 32];
	bool daemon_bell;           /* WELCOME said RINGLOG_WELCOME_BELL */
	bool bell_sent;             /* to the current connection */

	/* rings */
	struct lib_ring *rings;
	struct lib_ring *limbo;     /* freed while a ringlog_trigger() was
	                             * busy: unmapped once none is (ring.c) */
	uint64_t next_handle;
	uint64_t ring_size;         /* from $RINGLOG_RING_SIZE or the daemon */
	bool ring_size_from_env;

	/* background thread */
	pthread_t thread;
	bool thread_running;
	bool stop;
	lib_obj_t daemon_wake;      /* the daemon's wake object (WELCOME), or
	                             * LIB_OBJ_NONE. Emitting threads read it
	                             * unlocked: once set it stays valid
	                             * (tr_take_daemon_wake) */
	struct transport *conn;     /* while connected */
	bool connected;
	bool tried;                 /* a connection attempt has failed since start */
	bool refused_all;           /* the daemon refused this process (access) */
	uint64_t sync_want, sync_acked;
	unsigned flush_waiters;     /* in ringlog_flush(): reconnect at once */
	bool ever_connected;        /* a daemon answered since start (at exit) */
	int connect_err;            /* the last failed attempt's errno, or 0 */
	bool access_refused;        /* the daemon refused this process; cleared
	                             * by the next session it accepts */

	void (*diag)(void *ctx, const char *msg);
	void *diag_ctx;

	struct ringlog_stats stats; /* atomics for the counters bumped on emit */
	struct ringlog_overload_stats ovl; /* atomics (overload.c) */
	/* events that found no ring and none could be made (an atomic), and
	 * how many of them the daemon was told (SUPPRESSED, event 0) */
	uint64_t no_ring, no_ring_reported;
	bool daemon_overload;       /* WELCOME said RINGLOG_WELCOME_OVERLOAD */
	bool daemon_released;       /* WELCOME said RINGLOG_WELCOME_RELEASED */
	/* WELCOME came without the daemon's wake object (our descriptor
	 * table was full): ask for it (WAKE, proto/ctl.h), no sooner than
	 * wake_retry_ns: 1 s after an answer without it, 5 s after a
	 * request not answered. Until then emitters past a high-water mark
	 * wake nobody (or an earlier daemon's object), and the rings drain
	 * on the daemon's timer. */
	bool wake_wanted;
	uint64_t wake_retry_ns;     /* CLOCK_MONOTONIC */
};

extern struct lib lib LIB_HIDDEN;

int lib_start(void) LIB_HIDDEN;
void lib_diag(const char *fmt, ...) LIB_HIDDEN __attribute__((format(printf, 1, 2)));
uint64_t lib_clock(void) LIB_HIDDEN;
void lib_clock_init(void) LIB_HIDDEN;
uint64_t lib_now_ns(int clock_id) LIB_HIDDEN;

/* trigger.c: the ring ringlog_trigger() uses from a thread that has none
 * (the newest ring of a running thread, ring.c picks it), or NULL; and
 * how many such calls are between loading it and their last store, by the
 * parity of lib_trigger_epoch when they began. lib_ring_free() moves the
 * target off a ring, flips the epoch, and unmaps the ring once the old
 * parity's count is seen 0 (new calls count in the other): a trigger
 * racing with the free writes memory still mapped, never freed memory. */
extern struct ringlog_ring_hdr *lib_trigger_hdr LIB_HIDDEN;
extern unsigned lib_trigger_epoch LIB_HIDDEN;
extern unsigned lib_trigger_busy[2] LIB_HIDDEN;

/* registry.c: metadata region */
int lib_meta_create(void) LIB_HIDDEN;
int lib_meta_reopen_after_fork(void) LIB_HIDDEN;
int lib_event_register_locked(struct ringlog_event *e) LIB_HIDDEN;

/* bell.c */
int lib_bell_create(void) LIB_HIDDEN;
void lib_bell_forget_after_fork(void) LIB_HIDDEN;
void lib_bell_take_locked(struct lib_ring *r) LIB_HIDDEN;
void lib_bell_put_locked(struct lib_ring *r) LIB_HIDDEN;
/* Ring r's bell whatever the gap (its ring finished), with a value its
 * last one is not (a timestamp's low half): a store, as ringlog__bell()'s
 * (ringlog.h). Its thread is the slot's only writer. */
static inline void lib_bell_ring(struct lib_ring *r, uint64_t ts)
{
	if (r->prod.bell)
		__atomic_store_n(r->prod.bell, (uint32_t)ts, __ATOMIC_RELAXED);
}

/* ring.c */
struct lib_ring *lib_ring_create(void) LIB_HIDDEN;
/* Free r, out of lib.rings, under lib.lock (the child after fork: alone);
 * with a ringlog_trigger() busy, its memory stays mapped until none is. */
void lib_ring_free(struct lib_ring *r) LIB_HIDDEN;
/* r is the trigger target and its thread finished (going false: moved to
 * a running thread's ring, if any) or r goes (moved to any other ring, or
 * NULL). Under lib.lock. */
void lib_trigger_retarget_locked(struct lib_ring *r, bool going) LIB_HIDDEN;
void lib_rings_gc_locked(void) LIB_HIDDEN;
uint64_t lib_ring_unstored(const struct lib_ring *r) LIB_HIDDEN;
void lib_thread_ring_finish(void) LIB_HIDDEN;
void lib_forget_all_after_fork(void) LIB_HIDDEN;

/* os-unix.c, os-win.c: shared memory the daemon maps (size bytes, zeroed;
 * populate: fault it all in now), and ids */
int lib_shm_create(const char *name, size_t size, bool populate, lib_obj_t *obj, void **mem)
	LIB_HIDDEN;
void lib_shm_destroy(lib_obj_t obj, void *mem, size_t size) LIB_HIDDEN;
uint32_t lib_tid(void) LIB_HIDDEN;
uint32_t lib_pid(void) LIB_HIDDEN;
void lib_sleep_ns(uint64_t ns) LIB_HIDDEN;

/* overload.c: per-event policies from the daemon (rate limit, wait) */
#define LIB_POL_RATE 0x1u /* ringlog_event.policy bits */
#define LIB_POL_WAIT 0x2u
void lib_policy_event_locked(struct ringlog_event *e) LIB_HIDDEN;
void lib_policy_apply_locked(const uint8_t *p, uint32_t len) LIB_HIDDEN;
int lib_policy_send_locked(struct transport *t) LIB_HIDDEN;
/* True when e (id, policy bits pol) may be written now; false: suppressed
 * by its rate limit, and counted. No lock, no system call. */
bool lib_rate_admit(uint16_t id, uint16_t pol) LIB_HIDDEN;
/* How long an event may wait for room: the caller's RINGLOG_EVENT_WAIT,
 * else its policy's; 0: not at all. */
uint64_t lib_wait_ns(uint16_t id, uint16_t pol) LIB_HIDDEN;
/* Reserve len bytes in r, waiting up to wait_ns for room. NULL: timed out,
 * the drop counted in the ring. */
void *lib_wait_reserve(struct lib_ring *r, uint32_t len, uint16_t type, uint16_t id,
		       uint64_t wait_ns) LIB_HIDDEN;
void lib_wake_daemon(void) LIB_HIDDEN;

/* connect.c */
int lib_thread_start_locked(void) LIB_HIDDEN;
void lib_thread_stop(void) LIB_HIDDEN;
void lib_wake(void) LIB_HIDDEN;
/* A new ring to the daemon from the thread that made it, if that can be
 * done now without waiting (connect.c); else the library's thread does. */
void lib_ring_offer_locked(struct lib_ring *r) LIB_HIDDEN;

#endif /* RINGLOG_CLIENT_LIB_H */
