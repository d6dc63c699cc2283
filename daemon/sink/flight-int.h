/* daemon/sink/flight-int.h - the flight recorder's state, shared by its
 * buffer (flight.c) and its triggers and snapshots (flight-trigger.c).
 * Internal to those two files: the rest of the daemon sees flight.h. */
#ifndef RINGLOG_DAEMON_FLIGHT_INT_H
#define RINGLOG_DAEMON_FLIGHT_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "segment.h"
#include "sink/snapshot.h"

struct daemon;
struct ring;
struct client;
struct sink;
struct sink_request;

#define FL_CHUNK_MAX  (1u << 20) /* a slot; smaller for a small buffer */
#define FL_SLOTS_MIN  8u
#define FL_SCAN_MS    20         /* how often rings' trigger counts are read */
#define FL_WAITERS    64         /* `ringlog snapshot`s answered by one snapshot */
#define FL_REASON_MAX 200

struct fl_slot {
	uint64_t no;         /* sealing order from 1; 0: empty */
	uint32_t events;
	uint32_t len;        /* bytes to write: header, body, padding */
	uint64_t first_real, last_real;
	unsigned pinned;     /* a snapshot is writing it */
};

/* What the buffer overwrote: events and the newest time among them, per
 * slot overwritten, newest last (as many as there are slots). */
struct fl_over {
	uint64_t last_real;
	uint64_t events;
};

/* Older overwritten slots, when more were overwritten within `pre` than
 * the list above holds: counted by time in FL_BUCKETS buckets of pre /
 * FL_BUCKETS (at least 1 ms), so that a snapshot counts them to within one
 * bucket of its window's start and forgets only what is older than pre. */
#define FL_BUCKETS 256
struct fl_buckets {
	uint64_t w;                /* ns per bucket; 0: none yet */
	uint64_t no[FL_BUCKETS];   /* which bucket (real ns / w) each holds */
	uint64_t n[FL_BUCKETS];    /* its events */
};

struct fl_pending {
	bool on;
	uint64_t first_real, last_real; /* first and last trigger */
	uint64_t first_mono, due_mono;
	char reasons[RINGLOG_SEG_SNAP_REASONS];
	uint32_t len, n;
	uint64_t waiters[FL_WAITERS]; /* client seq of `ringlog snapshot`s */
	unsigned nwaiters;
};

struct flight {
	struct daemon *d;
	unsigned trigger_level;  /* flight.trigger_level, here for the hot path */
	uint8_t *mem;
	size_t size, chunk;
	unsigned nslots;
	struct fl_slot *slots;
	unsigned open;       /* slot being filled */
	uint32_t len;        /* its body bytes */
	uint32_t events;
	uint64_t lost;       /* events its LOSS records count */
	uint64_t ts_min[2], ts_max[2]; /* its raw clocks: [0] monotonic, [1] TSC */
	uint64_t gen;        /* its number: descriptions are per chunk */
	uint64_t seal_no;
	size_t span_off;     /* open PACK in the body, or SIZE_MAX; while
	                      * open, len need not be 8-aligned (its
	                      * padding comes when it ends: fl_pack_end) */
	uint32_t span_stream;
	uint32_t span_nev;   /* its writer's events described when it began:
	                      * a description ends a PACK (put()), so an id
	                      * below it is described in this chunk */
	uint64_t span_next;  /* ring position it continues at */
	uint64_t span_ts;    /* its last event's timestamp (pack.h) */
	/* described in chunk gen: by writer id (with the metadata events
	 * described + 1) and by stream id */
	uint64_t *w_gen;
	uint32_t *w_nev;
	uint32_t nw, nw2;
	uint64_t *s_gen;
	uint32_t ns;
	uint32_t *trig_seen; /* by stream id: ring trigger_count acted on,
	                      * plus 1 (0: not looked at yet) */
	uint32_t ntrig;

	struct fl_over *over;
	unsigned over_next;
	struct fl_buckets older; /* what fell out of over */

	uint64_t events_in, bytes_in, memory_only; /* since start */
	uint64_t overwritten, dropped;
	uint64_t dropped_since;  /* not yet reported in a snapshot */

	struct fl_pending pend;
	uint64_t *taken_at;      /* CLOCK_MONOTONIC of the last max_snapshots */
	unsigned ntaken;         /* its entries */
	unsigned taken_next;
	uint64_t triggers, coalesced, refused, written, failed;
	uint64_t refused_logged; /* CLOCK_MONOTONIC of the last refusal logged */
	char last_reason[FL_REASON_MAX];
	char last_path[RINGLOG_CONFIG_PATH_MAX + 48];
	char last_error[RINGLOG_CONFIG_PATH_MAX + 160];
	uint64_t last_write_ns, last_bytes;
	char dir[RINGLOG_CONFIG_PATH_MAX + 16];
	uint8_t boot_id[16];     /* a snapshot's header, as the store's */
	char host[64];
	unsigned snaps;
	uint64_t snap_bytes;

	uv_timer_t due, scan;
	uv_work_t work;
	struct snap_job job;
	struct fl_pending writing; /* the one being written */
	unsigned *pinned;
	unsigned npinned;
	uint8_t *lead;           /* the LOSS chunk opening it, or NULL */
	bool busy;
	bool closing;
	unsigned handles;        /* timers not closed yet */
};

/* flight.c: seal the open slot and move on, overwriting the oldest (false:
 * a snapshot still writes it); free it all */
bool fl_advance(struct flight *f);
/* Events overwritten with a time at or after from, among those that fell
 * out of the per-slot list (to within one bucket). */
/* Delete the oldest snapshots past flight.max_disk, the newest kept
 * (flight-trigger.c). */
void fl_trim_dir(struct flight *f);
uint64_t fl_older_since(const struct flight *f, uint64_t from);
void fl_free(struct flight *f);

/* flight-trigger.c: a trigger (waiter: the client seq of a `ringlog
 * snapshot` to answer, 0 none); the timers' callbacks; a writer gone;
 * taking the pending snapshot now (shutdown); the SNAPSHOT request */
void fl_trigger(struct flight *f, const char *reason, uint64_t waiter);
void fl_on_scan(uv_timer_t *t);
void fl_on_due(uv_timer_t *t);
void fl_closed(struct sink *s, struct client *c);
int fl_request(struct sink *s, const struct sink_request *rq);
void fl_take(struct flight *f);

#endif /* RINGLOG_DAEMON_FLIGHT_INT_H */
