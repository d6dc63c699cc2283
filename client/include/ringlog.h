/* ringlog.h - emit structured events into ringlog, the host-wide collector.
 *
 * The only header a program needs. It includes standard headers only and
 * compiles as C11 and as C++17.
 *
 *   #include <ringlog.h>
 *
 *   RINGLOG_PROVIDER_DEFINE(acme_net, "Acme.Net");      // once, in one file
 *
 *   RINGLOG_EVENT(acme_net, "Connect", RINGLOG_LEVEL_INFO, 0x1,
 *                 RINGLOG_STR("host", host), RINGLOG_U16("port", port),
 *                 RINGLOG_ERRNO("err", err));
 *
 * The event's name, level, keywords and its fields' names and types are
 * fixed at compile time and live in static descriptors; only the values go
 * into the calling thread's ring, together with a timestamp. An event that
 * no consumer wants costs one load and one branch: the daemon publishes, per
 * provider and level, the keywords it wants, and the library keeps that in
 * the provider object the macro reads. Before any daemon has answered,
 * levels 1..4 with all keywords are enabled.
 *
 * Emitting never blocks, never allocates and makes no system call, except
 * on a thread's first enabled event, which creates the thread's ring and
 * hands it to the daemon when that can be done without waiting (so that a
 * crash right after it does not take its events along). When
 * the ring is full the event is dropped and the loss is counted in the
 * stream; once it is fuller than the daemon's ring_reserve, events less
 * important than its shed_level go first. Only RINGLOG_EVENT_WAIT and a
 * provider the daemon lets wait ever wait (bounded, opt-in); a rate limit
 * the daemon sets for an event is applied here, without a lock or a system
 * call. The library starts one background thread that connects to
 * ringlogd (socket from $RINGLOG_SOCKET or /run/ringlog/ringlog.sock),
 * hands it the rings and reconnects after a daemon restart.
 *
 * A thread's ring ends with the thread (a pthread key's destructor, in the
 * last of the rounds of destructors). On Linux another key's destructor
 * may still emit until then; an event after it is counted lost (cause
 * no_ring). On Windows the ring ends in the first round. Each ring is a
 * memfd of ring_size (1 MiB by default): one descriptor and its memory per
 * thread, kept after the thread ends until the daemon has stored what it
 * holds.
 *
 * Field macros (name is a string literal):
 *   RINGLOG_I8/I16/I32/I64(name, v)   RINGLOG_U8/U16/U32/U64(name, v)
 *   RINGLOG_F64(name, v)              RINGLOG_BOOL(name, v)
 *   RINGLOG_STR(name, s)     NUL-terminated UTF-8, at most RINGLOG_STR_MAX
 *                            bytes kept (the reader sees it was truncated);
 *                            NULL is stored as an empty string
 *   RINGLOG_STRN(name, s, n) the same with an explicit length
 *   RINGLOG_BLOB(name, p, n) bytes, at most RINGLOG_BLOB_MAX kept
 *   RINGLOG_HEX32/HEX64(name, v)   unsigned, shown as hex
 *   RINGLOG_PID(name, v)     i32 process/thread id
 *   RINGLOG_ERRNO(name, v)   i32 errno value, shown with its name
 *   RINGLOG_TIME(name, ns)   u64 nanoseconds since the Unix epoch
 * Up to 16 fields per macro call (32 through the run-time API).
 */
#ifndef RINGLOG_H
#define RINGLOG_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32) && defined(RINGLOG_BUILDING_DLL)
#define RINGLOG_API __declspec(dllexport)
#elif defined(_WIN32)
#define RINGLOG_API /* functions import through ringlog.lib's thunks */
#else
#define RINGLOG_API __attribute__((visibility("default")))
#endif

#define RINGLOG_VERSION_MAJOR 0
#define RINGLOG_VERSION_MINOR 1

enum {
	RINGLOG_LEVEL_CRITICAL = 1,
	RINGLOG_LEVEL_ERROR = 2,
	RINGLOG_LEVEL_WARNING = 3,
	RINGLOG_LEVEL_INFO = 4,
	RINGLOG_LEVEL_VERBOSE = 5,
};

enum { RINGLOG_OPCODE_INFO = 0, RINGLOG_OPCODE_START = 1, RINGLOG_OPCODE_STOP = 2 };

/* Field storage types and display hints: the same numbers as proto/event.h. */
enum {
	RINGLOG_T_I8 = 1, RINGLOG_T_I16, RINGLOG_T_I32, RINGLOG_T_I64,
	RINGLOG_T_U8, RINGLOG_T_U16, RINGLOG_T_U32, RINGLOG_T_U64,
	RINGLOG_T_F64, RINGLOG_T_BOOL, RINGLOG_T_STR, RINGLOG_T_BLOB,
};
enum {
	RINGLOG_F_DEFAULT = 0, RINGLOG_F_HEX, RINGLOG_F_PID, RINGLOG_F_ERRNO, RINGLOG_F_TIME,
};

#define RINGLOG_STR_MAX  4096u
#define RINGLOG_BLOB_MAX 8192u

/* A provider. Define it once with RINGLOG_PROVIDER_DEFINE, declare it
 * elsewhere with RINGLOG_PROVIDER_DECLARE. kw[level] is the keyword mask
 * wanted at that level (0: level off); the library writes it, the macros
 * read it. */
struct ringlog_provider {
	uint64_t kw[8];
	const char *name;
	uint16_t id;       /* metadata id, set by the library */
	uint16_t reserved0;
	uint32_t reserved1;
	struct ringlog_provider *next;
};

struct ringlog_field {
	uint8_t type;      /* RINGLOG_T_* */
	uint8_t format;    /* RINGLOG_F_* */
	const char *name;
};

struct ringlog_event {
	struct ringlog_provider *provider;
	const char *name;
	const struct ringlog_field *fields;
	uint16_t nfields;
	uint8_t level;
	uint8_t opcode;
	uint16_t id;       /* metadata id, set by the library on first use */
	uint16_t policy;   /* set by the library: non-zero sends the event to
	                    * its slow path (a rate limit or a wait the daemon
	                    * configured; see RINGLOG_EVENT_WAIT) */
	uint64_t keyword;
};

/* A 128-bit activity id (a GUID in ETW terms), to correlate start/stop. */
struct ringlog_activity {
	uint8_t bytes[16];
};

#define RINGLOG__DEFAULT_KW { 0, ~0ull, ~0ull, ~0ull, ~0ull, 0, 0, 0 }

#if defined(__cplusplus)
#define RINGLOG__CTOR(fn) static void fn(void); \
	static const int fn##_run_ = (fn(), 0); static void fn(void)
#else
#define RINGLOG__CTOR(fn) __attribute__((constructor)) static void fn(void)
#endif

/* Register a provider: called for you by RINGLOG_PROVIDER_DEFINE before
 * main(). Returns 0, or -EINVAL for a bad name (empty, > 255 bytes, control
 * characters), -ENOSPC when the metadata region is full. */
RINGLOG_API int ringlog_provider_register(struct ringlog_provider *p);

/* Each event the macros declare leaves a pointer to its descriptor in the
 * "ringlog_events" section of its program or library; the linker brackets
 * the section with __start_/__stop_ symbols (weak: a link unit may have
 * none). Registering a provider registers those events of it, before any
 * is emitted, so the daemon and OS tracers know them all from the start. */
#if defined(__GNUC__) && !defined(_WIN32) && !defined(__APPLE__)
#define RINGLOG__SECTION 1
extern struct ringlog_event *const __start_ringlog_events[]
	__attribute__((weak, visibility("hidden")));
extern struct ringlog_event *const __stop_ringlog_events[]
	__attribute__((weak, visibility("hidden")));
#define RINGLOG__REGISTER_SECTION(p) \
	ringlog__register_events(&(p), __start_ringlog_events, __stop_ringlog_events)
#define RINGLOG__IN_SECTION(e) \
	static struct ringlog_event *const ringlog__ep \
		__attribute__((section("ringlog_events"), used)) = &(e);
#else
#define RINGLOG__REGISTER_SECTION(p) ((void)0)
#define RINGLOG__IN_SECTION(e)
#endif
RINGLOG_API void ringlog__register_events(struct ringlog_provider *p,
					  struct ringlog_event *const *begin,
					  struct ringlog_event *const *end);

#define RINGLOG_PROVIDER_DEFINE(var, pname) \
	struct ringlog_provider var = { RINGLOG__DEFAULT_KW, pname, 0, 0, 0, NULL }; \
	RINGLOG__CTOR(ringlog__register_##var) \
	{ \
		ringlog_provider_register(&var); \
		RINGLOG__REGISTER_SECTION(var); \
	}
#define RINGLOG_PROVIDER_DECLARE(var) extern struct ringlog_provider var

/* True when an event of this level and keyword mask is wanted now: one load
 * and one test against a constant. A keyword of 0 means "any keyword". */
#define RINGLOG_ENABLED(prov, level, keyword) \
	((__atomic_load_n(&(prov).kw[(level) & 7], __ATOMIC_RELAXED) & \
	  ((keyword) ? (uint64_t)(keyword) : ~(uint64_t)0)) != 0)

/* Emit an event: RINGLOG_EVENT(provider, "Name", level, keyword, fields...). */
#define RINGLOG_EVENT(prov, ...) \
	RINGLOG__CAT(RINGLOG__EVN_, RINGLOG__NARG(__VA_ARGS__))(prov, 0, NULL, __VA_ARGS__)

/* The same with an opcode (RINGLOG_OPCODE_*) and an activity id (a pointer
 * to struct ringlog_activity, or NULL). */
#define RINGLOG_EVENT_EX(prov, opcode, activity, ...) \
	RINGLOG__CAT(RINGLOG__EVN_, RINGLOG__NARG(__VA_ARGS__))(prov, opcode, activity, __VA_ARGS__)

/* The same, but when the thread's ring is full, wait up to timeout_us
 * microseconds (at most 100000) for the daemon to make room instead of
 * dropping the event: RINGLOG_EVENT_WAIT(provider, timeout_us, "Name",
 * level, keyword, fields...). The wait spins briefly, then sleeps in short
 * steps, and wakes the daemon; a daemon that is gone, stopped or slow
 * holds the caller no longer than the timeout, after which the event is
 * dropped and counted (ringlog_get_overload_stats()). An event with room
 * costs what RINGLOG_EVENT costs plus two calls. */
#define RINGLOG_EVENT_WAIT(prov, timeout_us, ...) \
	do { \
		ringlog__wait_next(timeout_us); \
		RINGLOG_EVENT(prov, __VA_ARGS__); \
		ringlog__wait_next(0); \
	} while (0)

/* Field macros: (kind, type, format, name, ...). */
#define RINGLOG_I8(n, v)    (SCALAR, RINGLOG_T_I8, 0, n, int8_t, v)
#define RINGLOG_I16(n, v)   (SCALAR, RINGLOG_T_I16, 0, n, int16_t, v)
#define RINGLOG_I32(n, v)   (SCALAR, RINGLOG_T_I32, 0, n, int32_t, v)
#define RINGLOG_I64(n, v)   (SCALAR, RINGLOG_T_I64, 0, n, int64_t, v)
#define RINGLOG_U8(n, v)    (SCALAR, RINGLOG_T_U8, 0, n, uint8_t, v)
#define RINGLOG_U16(n, v)   (SCALAR, RINGLOG_T_U16, 0, n, uint16_t, v)
#define RINGLOG_U32(n, v)   (SCALAR, RINGLOG_T_U32, 0, n, uint32_t, v)
#define RINGLOG_U64(n, v)   (SCALAR, RINGLOG_T_U64, 0, n, uint64_t, v)
#define RINGLOG_F64(n, v)   (SCALAR, RINGLOG_T_F64, 0, n, double, v)
#define RINGLOG_BOOL(n, v)  (SCALAR, RINGLOG_T_BOOL, 0, n, uint8_t, (v) ? 1 : 0)
#define RINGLOG_HEX32(n, v) (SCALAR, RINGLOG_T_U32, RINGLOG_F_HEX, n, uint32_t, v)
#define RINGLOG_HEX64(n, v) (SCALAR, RINGLOG_T_U64, RINGLOG_F_HEX, n, uint64_t, v)
#define RINGLOG_PID(n, v)   (SCALAR, RINGLOG_T_I32, RINGLOG_F_PID, n, int32_t, v)
#define RINGLOG_ERRNO(n, v) (SCALAR, RINGLOG_T_I32, RINGLOG_F_ERRNO, n, int32_t, v)
#define RINGLOG_TIME(n, v)  (SCALAR, RINGLOG_T_U64, RINGLOG_F_TIME, n, uint64_t, v)
#define RINGLOG_STR(n, s)   (STR, RINGLOG_T_STR, 0, n, s)
#define RINGLOG_STRN(n, s, len) (STRN, RINGLOG_T_STR, 0, n, s, len)
#define RINGLOG_BLOB(n, p, len) (BLOB, RINGLOG_T_BLOB, 0, n, p, len)

/* ------------------------------------------------------------------------
 * Run-time API, for bindings and tools. All return 0 or -errno.
 */

/* Start the library now (it also starts by itself on first use): create the
 * metadata region and the background thread. */
RINGLOG_API int ringlog_open(void);

/* Finish the calling thread's ring, flush as ringlog_flush(timeout_ms)
 * does, then stop the background thread and free the finished rings.
 * Returns what the flush returned: on an error, the events it could not
 * hand over are lost, and counted in ringlog_stats.unstored.
 *
 * At exit the library does the same by itself, waiting at most
 * RINGLOG_EXIT_TIMEOUT milliseconds (environment; default 2000, 0: do not
 * wait) for a daemon, unless none was ever reachable (no socket); what it
 * could not hand over goes to the diagnostic callback. */
RINGLOG_API int ringlog_close(int timeout_ms);

/* Wait up to timeout_ms until every event this process emitted before the
 * call is durably in a segment: written to the file, where `ringlog read`
 * finds it and a daemon crash cannot take it (not merely taken from the
 * ring by the daemon). Without a daemon, or when the daemon restarts
 * meanwhile, it reconnects and waits for the next one, within the timeout.
 * Returns 0; -ETIMEDOUT (connected, not all written yet), -ENOTCONN (no
 * daemon within the timeout), -ECONNREFUSED (the daemon refused this
 * process: not in the writers' group, or a limit), -EPERM (the daemon
 * refused some rings). On an error ringlog_stats.unstored says how many
 * events were not yet stored. */
RINGLOG_API int ringlog_flush(int timeout_ms);

/* Register an event descriptor built at run time. e->fields and the names
 * must stay valid while the event is used. Returns 0, or -EINVAL naming
 * nothing (use the diag callback), -ENOSPC (metadata region full). */
RINGLOG_API int ringlog_event_register(struct ringlog_event *e);

/* A value for ringlog_emit(): the member named by the field's type. */
struct ringlog_arg {
	union {
		int64_t i;
		uint64_t u;
		double d;
		int b;
		struct { const void *ptr; size_t len; } bytes; /* STR, BLOB */
	} v;
};

/* Emit e (registered or not) with e->nfields values. Returns 0, -EAGAIN when
 * the event is disabled, -ENOBUFS when the ring was full or the event's
 * rate limit suppressed it (both counted). */
RINGLOG_API int ringlog_emit(struct ringlog_event *e, const struct ringlog_activity *act,
			     const struct ringlog_arg *args);

/* Diagnostics: the library never prints. fn receives one line per problem
 * (refused ring, metadata full, ...). */
RINGLOG_API void ringlog_set_diag(void (*fn)(void *ctx, const char *msg), void *ctx);

/* Counters of this process, for tests and tools. */
struct ringlog_stats {
	uint64_t rings_created;
	uint64_t rings_freed;
	uint64_t rings_live;
	uint64_t dropped_full;      /* events dropped because a ring was full */
	uint64_t dropped_other;     /* no ring could be made (also counted by the daemon:
	                             * loss cause no_ring), reentrancy from a handler */
	uint64_t connects;          /* successful connections to the daemon */
	int connected;
	uint64_t daemon_wakeups;    /* system calls made to wake a sleeping daemon
	                             * (a ring past its high-water mark) */
	uint64_t unstored;          /* events no daemon has stored or will store
	                             * as things stand: those in rings while no
	                             * daemon is connected or this process is
	                             * refused (limits, access), in refused
	                             * rings, or left by the last failed
	                             * ringlog_flush()/ringlog_close(); lost if
	                             * the process ends now */
};
RINGLOG_API void ringlog_get_stats(struct ringlog_stats *s);

/* What overload cost this process: events the rate limits the daemon
 * configured suppressed (each reported to the daemon, which stores a LOSS
 * record naming the event), and the opt-in waits (RINGLOG_EVENT_WAIT,
 * ringlog_emit_wait(), a provider's "wait" in the daemon's configuration).
 * Shed events (a low level dropped to keep the ring's reserve for higher
 * ones) are in ringlog_stats.dropped_full. */
struct ringlog_overload_stats {
	uint64_t suppressed;       /* events over a rate limit, not written */
	uint64_t waits;            /* emits that found the ring full and waited */
	uint64_t wait_ns;          /* time they spent waiting, in all */
	uint64_t wait_max_ns;      /* the longest single wait */
	uint64_t wait_timeouts;    /* waits that ended with the event dropped
	                            * (also in dropped_full) */
};
/* Fill *s (size bytes of it: pass sizeof(*s), so that a program built
 * against an older, shorter struct keeps working). */
RINGLOG_API void ringlog_get_overload_stats(struct ringlog_overload_stats *s, size_t size);

/* ringlog_emit() that waits up to timeout_us (at most 100000) for room when
 * the ring is full, as RINGLOG_EVENT_WAIT does. Returns as ringlog_emit();
 * -ENOBUFS when the wait timed out (counted). */
RINGLOG_API int ringlog_emit_wait(struct ringlog_event *e, const struct ringlog_activity *act,
				  const struct ringlog_arg *args, uint32_t timeout_us);

/* Ask ringlogd's flight recorder for a snapshot of the events around now
 * (ringlogd.json "flight"), with reason (UTF-8, cut at 87 bytes; NULL: none).
 * Async-signal-safe: it never blocks, allocates or makes a system call
 * (it sets a flag in the calling thread's ring, or in the newest ring of a
 * running thread, which the daemon sees on its next pass; a ring freed
 * meanwhile stays mapped until the call is done), so a crash handler may
 * call it before the process dies, from any thread. Returns 0, or -ENOTCONN when the process
 * has no ring yet (no event was ever enabled: the daemon cannot see it). */
RINGLOG_API int ringlog_trigger(const char *reason);

/* ------------------------------------------------------------------------
 * Internals used by the macros. Not API: they may change in any release.
 */

#if defined(__GNUC__)
#define RINGLOG__UNLIKELY_(x) __builtin_expect(!!(x), 0)
#define RINGLOG__LIKELY_(x) __builtin_expect(!!(x), 1)
#else
#define RINGLOG__UNLIKELY_(x) (x)
#define RINGLOG__LIKELY_(x) (x)
#endif

/* The calling thread's ring as the inline fast path sees it: the head of
 * the library's ring producer (proto/ringbuf.h), same order and types,
 * checked by static_asserts in client/emit.c. The fast path is inline
 * because on this class of CPU the TSC read alone costs ~11 ns and two calls
 * into the shared library cost another ~8: inline, the record costs little
 * more than the clock. The _v2 suffix is the layout's version: a change
 * renames the symbol, so a program built against another layout fails to
 * link instead of corrupting a ring. (v2: bell and last_ts; prod_pos is found
 * from data.) */
struct ringlog__hot {
	uint8_t *data;   /* the ring's data area; its prod_pos is at
	                  * RINGLOG__PROD_POS_FROM_DATA from it */
	uint32_t *bell;  /* the ring's slot in the bell page, or NULL */
	uint64_t mask;
	uint64_t pos;
	uint64_t next;   /* past the record being written */
	uint64_t limit;  /* a record ending at or below it fits */
	uint32_t max_len;
	uint32_t reserved;
	uint64_t last_ts; /* the previous event's timestamp */
};
struct ringlog__thread {
	struct ringlog__hot *hot; /* NULL until the thread's first event */
	uint32_t tsc;             /* timestamps are TSC ticks */
	uint32_t busy;            /* a record is being opened or is open: a
	                           * signal handler emitting now drops its event
	                           * (counted) instead of writing over ours */
};
#if defined(__GNUC__) && !defined(_WIN32)
#define RINGLOG__INLINE_PATH 1
RINGLOG_API extern __thread struct ringlog__thread ringlog__thread_v2
	__attribute__((tls_model("initial-exec")));
#endif

/* The slow path: first event of a thread, unregistered event, full ring, a
 * signal handler interrupting an open record. Returns the payload pointer
 * (the record is open and the thread busy: finish with ringlog__publish()
 * or ringlog__commit()) or NULL (dropped, counted). */
RINGLOG_API void *ringlog__begin(struct ringlog_event *e, uint32_t len,
				 const struct ringlog_activity *act);
RINGLOG_API void ringlog__commit(void);
/* The calling thread's next events may wait up to us microseconds for room
 * (RINGLOG_EVENT_WAIT); 0 ends that. */
RINGLOG_API void ringlog__wait_next(uint32_t us);
RINGLOG_API uint64_t ringlog__clock(void);

#define RINGLOG__REC_EVENT 16u
/* An event this far (in the ring's clock) after the thread's previous one
 * rings the daemon's bell for the ring (proto/bell.h): a silent ring is
 * then not polled, only swept now and then. The ring's prod_pos is at a
 * fixed distance before its data (proto/ring.h). */
#define RINGLOG__BELL_GAP (1ull << 20)
#define RINGLOG__PROD_POS_FROM_DATA (128 - 4096)
#define RINGLOG__REC_EVENT_ACT 17u

#if defined(__GNUC__)
/* The bell, for the event stamped ts (the inline path's and the slow
 * path's): the first event after a silence rings it, since the daemon may
 * have stopped looking at the ring (proto/bell.h). Any new value does; the
 * timestamp's low half is one without a load of the slot, whose line the
 * daemon reads. Before the record is published. */
static inline void ringlog__bell(struct ringlog__hot *h, uint64_t ts)
{
	if (RINGLOG__UNLIKELY_(ts - h->last_ts >= RINGLOG__BELL_GAP) && h->bell)
		__atomic_store_n(h->bell, (uint32_t)ts, __ATOMIC_RELAXED);
	h->last_ts = ts;
}
#endif

static inline void *ringlog__reserve(struct ringlog_event *e, uint32_t len,
				     const struct ringlog_activity *act)
{
#ifdef RINGLOG__INLINE_PATH
	struct ringlog__thread *t = &ringlog__thread_v2;
	struct ringlog__hot *h;
	uint16_t id;
	uint32_t head = act ? 24u : 8u; /* ts, activity id */
	uint32_t rec = len + head;
	uint64_t total = ((uint64_t)rec + 15u) & ~(uint64_t)7, pos, word, ts;
	uint8_t *p;

	if (RINGLOG__UNLIKELY_(t->busy))
		return ringlog__begin(e, len, act); /* counts the drop */
	/* Claim the thread before reading the ring: a handler that runs
	 * before this store finishes its record before we look; one that runs
	 * after it sees busy and drops. The signal fence keeps the compiler
	 * from moving the loads above the store. */
	t->busy = 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	h = t->hot;
	id = __atomic_load_n(&e->id, __ATOMIC_ACQUIRE);
	/* Bitwise | on purpose: one predictable branch for all the cases. A
	 * policy (rate limit, wait) is the slow path's; a ring more than its
	 * shed reserve full is too, because limit leaves the reserve out. */
	if (RINGLOG__UNLIKELY_(!h || ((id == 0) | (rec > h->max_len) |
				      (__atomic_load_n(&e->policy, __ATOMIC_RELAXED) != 0) |
				      (h->pos + total > h->limit)))) {
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		t->busy = 0;
		return ringlog__begin(e, len, act);
	}
	pos = h->pos;
	p = h->data + (pos & h->mask);
	/* Record header (proto/ring.h): len:32 | type:16 | aux:16, little-endian. */
	word = (uint64_t)rec | (uint64_t)(act ? RINGLOG__REC_EVENT_ACT : RINGLOG__REC_EVENT) << 32 |
	       (uint64_t)id << 48;
	memcpy(p, &word, 8);
#if defined(__x86_64__)
	ts = RINGLOG__LIKELY_(t->tsc) ? __builtin_ia32_rdtsc() : ringlog__clock();
#else
	ts = ringlog__clock();
#endif
	memcpy(p + 8, &ts, 8);
	ringlog__bell(h, ts);
	/* Ask for the line a few records ahead in exclusive state now: the
	 * daemon's core last read it, and the miss would otherwise land on a
	 * later event. A prefetch never faults, even past the mapping. */
	__builtin_prefetch(p + 512, 1);
	if (act)
		memcpy(p + 16, act, 16);
	h->next = pos + total;
	return p + 8 + head;
#else
	return ringlog__begin(e, len, act);
#endif
}

/* Publish the open record and release the thread. Pairs with the daemon's
 * acquire load of prod_pos (proto/ringbuf.c). */
static inline void ringlog__publish(void)
{
#ifdef RINGLOG__INLINE_PATH
	struct ringlog__thread *t = &ringlog__thread_v2;
	struct ringlog__hot *h = t->hot;

	__atomic_store_n((uint64_t *)(void *)(h->data + RINGLOG__PROD_POS_FROM_DATA), h->next,
			 __ATOMIC_RELEASE);
	h->pos = h->next;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	t->busy = 0;
#else
	ringlog__commit();
#endif
}

/* strlen(), not a bounded loop: the compiler folds it for literals and
 * libc's is vectorised; a C string is readable to its NUL by contract, and
 * only the first RINGLOG_STR_MAX bytes are copied. */
static inline uint32_t ringlog__strlen(const char *s, uint16_t *flagged)
{
	size_t n = s ? strlen(s) : 0;

	if (RINGLOG__UNLIKELY_(n > RINGLOG_STR_MAX)) {
		*flagged = (uint16_t)(RINGLOG_STR_MAX | 0x8000u);
		return RINGLOG_STR_MAX;
	}
	*flagged = (uint16_t)n;
	return (uint32_t)n;
}

static inline uint32_t ringlog__strnlen(const char *s, size_t n, uint16_t *flagged)
{
	if (!s)
		n = 0;
	if (n > RINGLOG_STR_MAX) {
		*flagged = (uint16_t)(RINGLOG_STR_MAX | 0x8000u);
		return RINGLOG_STR_MAX;
	}
	*flagged = (uint16_t)n;
	return (uint32_t)n;
}

static inline uint32_t ringlog__blobclip(size_t n)
{
	return n > RINGLOG_BLOB_MAX ? RINGLOG_BLOB_MAX : (uint32_t)n;
}

#define RINGLOG__CAT(a, b) RINGLOG__CAT_(a, b)
#define RINGLOG__CAT_(a, b) a##b
#define RINGLOG__X(...) __VA_ARGS__

/* Per field: M(index, (kind, type, format, name, ...)). */
#define RINGLOG__DESC(i, f) RINGLOG__DESC_(RINGLOG__X f)
#define RINGLOG__DESC_(...) RINGLOG__DESC__(__VA_ARGS__)
#define RINGLOG__DESC__(kind, type, fmt, name, ...) { type, fmt, name },
#define RINGLOG__DECL(i, f) RINGLOG__DECL_(i, RINGLOG__X f)
#define RINGLOG__DECL_(i, ...) RINGLOG__DECL__(i, __VA_ARGS__)
#define RINGLOG__DECL__(i, kind, type, fmt, name, ...) RINGLOG__DECL_##kind(i, __VA_ARGS__)
#define RINGLOG__SIZE(i, f) RINGLOG__SIZE_(i, RINGLOG__X f)
#define RINGLOG__SIZE_(i, ...) RINGLOG__SIZE__(i, __VA_ARGS__)
#define RINGLOG__SIZE__(i, kind, ...) + RINGLOG__SIZE_##kind(i)
#define RINGLOG__PUT(i, f) RINGLOG__PUT_(i, RINGLOG__X f)
#define RINGLOG__PUT_(i, ...) RINGLOG__PUT__(i, __VA_ARGS__)
#define RINGLOG__PUT__(i, kind, ...) RINGLOG__PUT_##kind(i)

#define RINGLOG__DECL_SCALAR(i, ctype, v) ctype ringlog__v##i = (ctype)(v);
#define RINGLOG__SIZE_SCALAR(i) (uint32_t)sizeof(ringlog__v##i)
#define RINGLOG__PUT_SCALAR(i) \
	memcpy(ringlog__p, &ringlog__v##i, sizeof(ringlog__v##i)); \
	ringlog__p += sizeof(ringlog__v##i);
#define RINGLOG__DECL_STR(i, s) const char *ringlog__v##i = (s); uint16_t ringlog__h##i; \
	uint32_t ringlog__n##i = ringlog__strlen(ringlog__v##i, &ringlog__h##i);
#define RINGLOG__DECL_STRN(i, s, n) const char *ringlog__v##i = (s); uint16_t ringlog__h##i; \
	uint32_t ringlog__n##i = ringlog__strnlen(ringlog__v##i, (n), &ringlog__h##i);
#define RINGLOG__DECL_BLOB(i, p, n) const void *ringlog__v##i = (p); \
	uint32_t ringlog__n##i = ringlog__blobclip(ringlog__v##i ? (size_t)(n) : 0); \
	uint16_t ringlog__h##i = (uint16_t)ringlog__n##i;
#define RINGLOG__SIZE_STR(i) (2u + ringlog__n##i)
#define RINGLOG__SIZE_STRN(i) (2u + ringlog__n##i)
#define RINGLOG__SIZE_BLOB(i) (2u + ringlog__n##i)
#define RINGLOG__PUT_BYTES(i) \
	memcpy(ringlog__p, &ringlog__h##i, 2); \
	if (ringlog__n##i) memcpy(ringlog__p + 2, ringlog__v##i, ringlog__n##i); \
	ringlog__p += 2u + ringlog__n##i;
#define RINGLOG__PUT_STR(i) RINGLOG__PUT_BYTES(i)
#define RINGLOG__PUT_STRN(i) RINGLOG__PUT_BYTES(i)
#define RINGLOG__PUT_BLOB(i) RINGLOG__PUT_BYTES(i)

#define RINGLOG__BODY(P, OP, ACT, NAME, LVL, KW, NF, DESCS, DECLS, SIZES, PUTS) \
	do { \
		static const struct ringlog_field ringlog__f[NF + 1] = { \
			RINGLOG__X DESCS { 0, 0, NULL } }; \
		static struct ringlog_event ringlog__e = { &(P), NAME, ringlog__f, NF, \
			(uint8_t)(LVL), (uint8_t)(OP), 0, 0, (uint64_t)(KW) }; \
		RINGLOG__IN_SECTION(ringlog__e) \
		if (RINGLOG_ENABLED(P, LVL, KW)) { \
			RINGLOG__X DECLS \
			uint8_t *ringlog__p = (uint8_t *)ringlog__reserve(&ringlog__e, \
				0u RINGLOG__X SIZES, (ACT)); \
			if (ringlog__p) { \
				RINGLOG__X PUTS \
				ringlog__publish(); \
			} \
		} \
	} while (0)

#define RINGLOG__FE_1(M, f1) M(0, f1)
#define RINGLOG__FE_2(M, f1, f2) M(0, f1) M(1, f2)
#define RINGLOG__FE_3(M, f1, f2, f3) M(0, f1) M(1, f2) M(2, f3)
#define RINGLOG__FE_4(M, f1, f2, f3, f4) M(0, f1) M(1, f2) M(2, f3) M(3, f4)
#define RINGLOG__FE_5(M, f1, f2, f3, f4, f5) M(0, f1) M(1, f2) M(2, f3) M(3, f4) M(4, f5)
#define RINGLOG__FE_6(M, f1, f2, f3, f4, f5, f6) M(0, f1) M(1, f2) M(2, f3) M(3, f4) M(4, f5) M(5, f6)
#define RINGLOG__FE_7(M, f1, f2, f3, f4, f5, f6, f7) M(0, f1) M(1, f2) M(2, f3) M(3, f4) M(4, f5) M(5, f6) M(6, f7)
#define RINGLOG__FE_8(M, f1, f2, f3, f4, f5, f6, f7, f8) M(0, f1) M(1, f2) M(2, f3) M(3, f4) M(4, f5) M(5, f6) M(6, f7) M(7, f8)
#define RINGLOG__FE_9(M, f1, f2, f3, f4, f5, f6, f7, f8, f9) M(0, f1) M(1, f2) M(2, f3) M(3, f4) M(4, f5) M(5, f6) M(6, f7) M(7, f8) M(8, f9)
#define RINGLOG__FE_10(M, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10) M(0, f1) M(1, f2) M(2, f3) M(3, f4) M(4, f5) M(5, f6) M(6, f7) M(7, f8) M(8, f9) M(9, f10)
#define RINGLOG__FE_11(M, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11) M(0, f1) M(1, f2) M(2, f3) M(3, f4) M(4, f5) M(5, f6) M(6, f7) M(7, f8) M(8, f9) M(9, f10) M(10, f11)
#define RINGLOG__FE_12(M, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12) M(0, f1) M(1, f2) M(2, f3) M(3, f4) M(4, f5) M(5, f6) M(6, f7) M(7, f8) M(8, f9) M(9, f10) M(10, f11) M(11, f12)
#define RINGLOG__FE_13(M, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13) M(0, f1) M(1, f2) M(2, f3) M(3, f4) M(4, f5) M(5, f6) M(6, f7) M(7, f8) M(8, f9) M(9, f10) M(10, f11) M(11, f12) M(12, f13)
#define RINGLOG__FE_14(M, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14) M(0, f1) M(1, f2) M(2, f3) M(3, f4) M(4, f5) M(5, f6) M(6, f7) M(7, f8) M(8, f9) M(9, f10) M(10, f11) M(11, f12) M(12, f13) M(13, f14)
#define RINGLOG__FE_15(M, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15) M(0, f1) M(1, f2) M(2, f3) M(3, f4) M(4, f5) M(5, f6) M(6, f7) M(7, f8) M(8, f9) M(9, f10) M(10, f11) M(11, f12) M(12, f13) M(13, f14) M(14, f15)
#define RINGLOG__FE_16(M, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16) M(0, f1) M(1, f2) M(2, f3) M(3, f4) M(4, f5) M(5, f6) M(6, f7) M(7, f8) M(8, f9) M(9, f10) M(10, f11) M(11, f12) M(12, f13) M(13, f14) M(14, f15) M(15, f16)
#define RINGLOG__NARG(...) RINGLOG__NARG_(__VA_ARGS__, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define RINGLOG__NARG_(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, _14, _15, _16, _17, _18, _19, n, ...) n
#define RINGLOG__EVN_3(P, OP, ACT, NAME, LVL, KW) \
	RINGLOG__BODY(P, OP, ACT, NAME, LVL, KW, 0, (), (), (), ())
#define RINGLOG__EVN_4(P, OP, ACT, NAME, LVL, KW, ...) \
	RINGLOG__BODY(P, OP, ACT, NAME, LVL, KW, 1, \
		(RINGLOG__FE_1(RINGLOG__DESC, __VA_ARGS__)), (RINGLOG__FE_1(RINGLOG__DECL, __VA_ARGS__)), \
		(RINGLOG__FE_1(RINGLOG__SIZE, __VA_ARGS__)), (RINGLOG__FE_1(RINGLOG__PUT, __VA_ARGS__)))
#define RINGLOG__EVN_5(P, OP, ACT, NAME, LVL, KW, ...) \
	RINGLOG__BODY(P, OP, ACT, NAME, LVL, KW, 2, \
		(RINGLOG__FE_2(RINGLOG__DESC, __VA_ARGS__)), (RINGLOG__FE_2(RINGLOG__DECL, __VA_ARGS__)), \
		(RINGLOG__FE_2(RINGLOG__SIZE, __VA_ARGS__)), (RINGLOG__FE_2(RINGLOG__PUT, __VA_ARGS__)))
#define RINGLOG__EVN_6(P, OP, ACT, NAME, LVL, KW, ...) \
	RINGLOG__BODY(P, OP, ACT, NAME, LVL, KW, 3, \
		(RINGLOG__FE_3(RINGLOG__DESC, __VA_ARGS__)), (RINGLOG__FE_3(RINGLOG__DECL, __VA_ARGS__)), \
		(RINGLOG__FE_3(RINGLOG__SIZE, __VA_ARGS__)), (RINGLOG__FE_3(RINGLOG__PUT, __VA_ARGS__)))
#define RINGLOG__EVN_7(P, OP, ACT, NAME, LVL, KW, ...) \
	RINGLOG__BODY(P, OP, ACT, NAME, LVL, KW, 4, \
		(RINGLOG__FE_4(RINGLOG__DESC, __VA_ARGS__)), (RINGLOG__FE_4(RINGLOG__DECL, __VA_ARGS__)), \
		(RINGLOG__FE_4(RINGLOG__SIZE, __VA_ARGS__)), (RINGLOG__FE_4(RINGLOG__PUT, __VA_ARGS__)))
#define RINGLOG__EVN_8(P, OP, ACT, NAME, LVL, KW, ...) \
	RINGLOG__BODY(P, OP, ACT, NAME, LVL, KW, 5, \
		(RINGLOG__FE_5(RINGLOG__DESC, __VA_ARGS__)), (RINGLOG__FE_5(RINGLOG__DECL, __VA_ARGS__)), \
		(RINGLOG__FE_5(RINGLOG__SIZE, __VA_ARGS__)), (RINGLOG__FE_5(RINGLOG__PUT, __VA_ARGS__)))
#define RINGLOG__EVN_9(P, OP, ACT, NAME, LVL, KW, ...) \
	RINGLOG__BODY(P, OP, ACT, NAME, LVL, KW, 6, \
		(RINGLOG__FE_6(RINGLOG__DESC, __VA_ARGS__)), (RINGLOG__FE_6(RINGLOG__DECL, __VA_ARGS__)), \
		(RINGLOG__FE_6(RINGLOG__SIZE, __VA_ARGS__)), (RINGLOG__FE_6(RINGLOG__PUT, __VA_ARGS__)))
#define RINGLOG__EVN_10(P, OP, ACT, NAME, LVL, KW, ...) \
	RINGLOG__BODY(P, OP, ACT, NAME, LVL, KW, 7, \
		(RINGLOG__FE_7(RINGLOG__DESC, __VA_ARGS__)), (RINGLOG__FE_7(RINGLOG__DECL, __VA_ARGS__)), \
		(RINGLOG__FE_7(RINGLOG__SIZE, __VA_ARGS__)), (RINGLOG__FE_7(RINGLOG__PUT, __VA_ARGS__)))
#define RINGLOG__EVN_11(P, OP, ACT, NAME, LVL, KW, ...) \
	RINGLOG__BODY(P, OP, ACT, NAME, LVL, KW, 8, \
		(RINGLOG__FE_8(RINGLOG__DESC, __VA_ARGS__)), (RINGLOG__FE_8(RINGLOG__DECL, __VA_ARGS__)), \
		(RINGLOG__FE_8(RINGLOG__SIZE, __VA_ARGS__)), (RINGLOG__FE_8(RINGLOG__PUT, __VA_ARGS__)))
#define RINGLOG__EVN_12(P, OP, ACT, NAME, LVL, KW, ...) \
	RINGLOG__BODY(P, OP, ACT, NAME, LVL, KW, 9, \
		(RINGLOG__FE_9(RINGLOG__DESC, __VA_ARGS__)), (RINGLOG__FE_9(RINGLOG__DECL, __VA_ARGS__)), \
		(RINGLOG__FE_9(RINGLOG__SIZE, __VA_ARGS__)), (RINGLOG__FE_9(RINGLOG__PUT, __VA_ARGS__)))
#define RINGLOG__EVN_13(P, OP, ACT, NAME, LVL, KW, ...) \
	RINGLOG__BODY(P, OP, ACT, NAME, LVL, KW, 10, \
		(RINGLOG__FE_10(RINGLOG__DESC, __VA_ARGS__)), (RINGLOG__FE_10(RINGLOG__DECL, __VA_ARGS__)), \
		(RINGLOG__FE_10(RINGLOG__SIZE, __VA_ARGS__)), (RINGLOG__FE_10(RINGLOG__PUT, __VA_ARGS__)))
#define RINGLOG__EVN_14(P, OP, ACT, NAME, LVL, KW, ...) \
	RINGLOG__BODY(P, OP, ACT, NAME, LVL, KW, 11, \
		(RINGLOG__FE_11(RINGLOG__DESC, __VA_ARGS__)), (RINGLOG__FE_11(RINGLOG__DECL, __VA_ARGS__)), \
		(RINGLOG__FE_11(RINGLOG__SIZE, __VA_ARGS__)), (RINGLOG__FE_11(RINGLOG__PUT, __VA_ARGS__)))
#define RINGLOG__EVN_15(P, OP, ACT, NAME, LVL, KW, ...) \
	RINGLOG__BODY(P, OP, ACT, NAME, LVL, KW, 12, \
		(RINGLOG__FE_12(RINGLOG__DESC, __VA_ARGS__)), (RINGLOG__FE_12(RINGLOG__DECL, __VA_ARGS__)), \
		(RINGLOG__FE_12(RINGLOG__SIZE, __VA_ARGS__)), (RINGLOG__FE_12(RINGLOG__PUT, __VA_ARGS__)))
#define RINGLOG__EVN_16(P, OP, ACT, NAME, LVL, KW, ...) \
	RINGLOG__BODY(P, OP, ACT, NAME, LVL, KW, 13, \
		(RINGLOG__FE_13(RINGLOG__DESC, __VA_ARGS__)), (RINGLOG__FE_13(RINGLOG__DECL, __VA_ARGS__)), \
		(RINGLOG__FE_13(RINGLOG__SIZE, __VA_ARGS__)), (RINGLOG__FE_13(RINGLOG__PUT, __VA_ARGS__)))
#define RINGLOG__EVN_17(P, OP, ACT, NAME, LVL, KW, ...) \
	RINGLOG__BODY(P, OP, ACT, NAME, LVL, KW, 14, \
		(RINGLOG__FE_14(RINGLOG__DESC, __VA_ARGS__)), (RINGLOG__FE_14(RINGLOG__DECL, __VA_ARGS__)), \
		(RINGLOG__FE_14(RINGLOG__SIZE, __VA_ARGS__)), (RINGLOG__FE_14(RINGLOG__PUT, __VA_ARGS__)))
#define RINGLOG__EVN_18(P, OP, ACT, NAME, LVL, KW, ...) \
	RINGLOG__BODY(P, OP, ACT, NAME, LVL, KW, 15, \
		(RINGLOG__FE_15(RINGLOG__DESC, __VA_ARGS__)), (RINGLOG__FE_15(RINGLOG__DECL, __VA_ARGS__)), \
		(RINGLOG__FE_15(RINGLOG__SIZE, __VA_ARGS__)), (RINGLOG__FE_15(RINGLOG__PUT, __VA_ARGS__)))
#define RINGLOG__EVN_19(P, OP, ACT, NAME, LVL, KW, ...) \
	RINGLOG__BODY(P, OP, ACT, NAME, LVL, KW, 16, \
		(RINGLOG__FE_16(RINGLOG__DESC, __VA_ARGS__)), (RINGLOG__FE_16(RINGLOG__DECL, __VA_ARGS__)), \
		(RINGLOG__FE_16(RINGLOG__SIZE, __VA_ARGS__)), (RINGLOG__FE_16(RINGLOG__PUT, __VA_ARGS__)))

#ifdef __cplusplus
}
#endif

#endif /* RINGLOG_H */
