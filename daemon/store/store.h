/* daemon/store/store.h - bytes on disk: chunks (segment.c), the segment
 * index and the disk budget (retention.c), through one write backend
 * (io-ops.h) and the system's files (file.h).
 *
 * The store is an object of its own (struct store): store_open() is given
 * what it needs (the directory, the backend, the clock, the sinks, how to
 * say "there is room again") and it reads nothing of the daemon. What comes
 * in: validated records of the writers' rings, from the drain
 * (ingest/drain.c), with the metadata that describes them (the registry's
 * types, ingest/registry.h: read, never called). What goes out: the sinks'
 * notifications (sink/sink.h), through the list it is given, and the
 * written() callback. The store never calls the drain or a sink by name.
 *
 * Sizes: store_configure() derives every size from the configuration, at
 * open and at each reload, into st->budget; nothing in the store reads the
 * budget's settings from the configuration itself.
 *
 * Return contract of the entry points below: 0 on success; STORE_FULL
 * (positive) when the store cannot take the record now (every chunk buffer
 * in flight, or the budget waits for writes to complete): it stays in its
 * ring for the next pass, nothing is lost; -errno for what the caller must
 * treat as an error (-ENOMEM). */
#ifndef RINGLOG_DAEMON_STORE_H
#define RINGLOG_DAEMON_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clock.h"
#include "config.h"
#include "meta.h"
#include "ringbuf.h"
#include "segment.h"
#include "sink/sink.h"
#include "store/stream.h"

struct ring;
struct io;
struct store;

#define STORE_FULL 1
/* A reason that names a path: the room the daemon's messages give it. */
#define STORE_WHY_MAX (RINGLOG_CONFIG_PATH_MAX + 300)

/* Every size the store works with, from the configuration
 * (store_configure()). */
struct store_budget {
	uint64_t max_disk;        /* all segments together */
	uint64_t min_free_bytes;  /* the filesystem floor, fixed... */
	unsigned min_free_percent; /* ...or as a share of its size (bytes win) */
	uint64_t seg_max;         /* a segment's size: max_segment_size, at most
	                           * a quarter of max_disk */
	size_t chunk_size;        /* of the chunks opened now */
	size_t chunk_alloc;       /* of the buffers: chunk_size's ceiling, fixed
	                           * at start */
	uint64_t max_age_ns;      /* rotate a segment this old */
	uint64_t seal_after_ns;   /* seal a chunk that waited this long */
	uint64_t sync_interval_ns; /* at most one round of syncs this often
	                            * (durable.c) */
	uint64_t max_retention_ns; /* expire segments older (0: none) */
};

/* A segment file known to the index (retention.c). */
struct segfile {
	struct segfile *next;  /* by seq, oldest first */
	uint64_t seq;
	unsigned lane;       /* its class's lane (0: default, or a class no
	                      * longer configured) */
	char cls[RINGLOG_CLASS_NAME_MAX]; /* its header's class_name */
	char *path;
	uint64_t bytes;      /* file size we account for */
	uint64_t first_real_ns, last_real_ns;
	uint64_t events;
	uint64_t lost;       /* events its LOSS records count (chunk headers) */
	bool current;        /* being written */
	bool closed;
	bool orphan;         /* its file was deleted under us: out of the
	                      * index, freed once its last write lands */
	int inflight;        /* writes not completed */
	int fd;
	bool direct;
	uint64_t off;        /* next chunk offset (current) */
	uint64_t created_mono_ns;
	uint64_t chunks;
	uint64_t begun;      /* chunks started in it (room(), segment.c) */
	uint64_t limit;      /* rotate before passing it (store_seg_limit()) */
	struct ringlog_seg_hdr *hdr; /* aligned copy (current) */
	struct store *st;    /* its store, for durable.c's completions */
	/* durable.c: chunk writes completed in it, and as many as the last
	 * sync started covers; a sync of it in flight; the next rotated
	 * segment waiting for the round */
	uint64_t writes_done, writes_synced;
	bool syncing;
	bool sync_waiting;   /* rotated, header written, in st->sync_queue */
	struct segfile *sync_next;
};

struct chunk {
	uint8_t *mem;        /* RINGLOG_SEG_ALIGN-aligned: header + body */
	size_t cap;          /* bytes of mem */
	size_t len;          /* body bytes */
	uint32_t events;
	uint64_t lost;       /* events its LOSS records count */
	uint64_t first_real_ns, last_real_ns; /* set when sealed */
	uint64_t ts_min[2], ts_max[2]; /* raw event clocks: [0] monotonic, [1] TSC */
	uint64_t opened_mono_ns;
	struct segfile *seg; /* the segment it is written to (in flight) */
	uint64_t seg_seq;    /* its seq, which outlives the segfile */
	size_t total;        /* bytes written: header, body, padding */
	bool busy;           /* sealed: in flight, or written and waiting for
	                      * the chunks sealed before it */
	bool done;           /* the write completed (or failed and was counted) */
	bool failed;         /* counted lost, not on disk */
	bool opened;         /* a lane's open chunk (not busy yet, not free) */
	uint64_t seal_no;    /* order of sealing: ring space is released in it */
	/* whose records it carries: to release their ring space once written,
	 * or to count them lost if the write fails */
	struct chunk_who {
		struct ring *r;
		uint64_t ticket;                 /* its place in r's store.pend */
		uint32_t events;
		uint64_t loss;                   /* disk loss it reports in-stream:
		                                  * pending again if it is lost */
		uint64_t end;                    /* ring position after them */
		uint64_t seen_records, seen_bytes; /* loss totals as of end */
	} *who;
	uint32_t nwho, capwho;
	size_t span_off;     /* open PACK record, or SIZE_MAX */
	uint32_t span_stream;
	uint64_t span_next;  /* ring position the open PACK continues at */
	uint64_t span_ts;    /* its last timestamp: the next delta's base */
	struct store *st;
};

/* Consecutive event records of one ring packed straight into the open
 * chunk's PACK (proto/pack.h), committed as one (segment.c). */
struct store_run {
	struct ring *r;      /* NULL: no run open */
	const uint8_t *recs; /* first record header, in the ring */
	size_t bytes;        /* of ring records */
	uint32_t events;
	uint64_t ts_min, ts_max; /* raw clock */
	uint64_t end;        /* ring position after the last record */
	uint8_t *out;        /* where the run is packed, in the open chunk */
	size_t packed;       /* bytes packed at out */
	size_t room;         /* what the readied chunk can take at out */
	uint64_t prev_ts;    /* the PACK's last timestamp (pack.h) */
	/* Taken when the run opens, so that a record of the run reads no
	 * other structure: event ids below nev are described in the segment
	 * (the writer's seg_nev), and whether any sink wants records (a sink
	 * stops wanting them only from the loop, between passes, or from its
	 * own callback, which then ignores the rest). */
	uint32_t nev;
	bool publish;
};

/* What the store is given at store_open(): everything it knows of the
 * daemon that runs it. */
struct store_params {
	const char *dir;          /* storage_dir (copied) */
	struct io *io;            /* the write backend, opened on the loop */
	const char *io_name;
	struct d_clock *clock;    /* segments record it; refreshed at each one */
	struct sink_list *sinks;  /* published to; NULL: none */
	/* A write completed. idle: no chunk is open, so the drain may have
	 * stopped for want of a buffer and should resume. NULL: nobody. */
	void (*written)(void *ctx, bool idle);
	/* Create dir if missing (with the daemon's group): 0 or -errno.
	 * NULL: file_mkdir(). */
	int (*mkdir)(void *ctx, const char *dir);
	/* What the filesystem has. NULL: file_space() (file.h). */
	int (*space)(const char *dir, uint64_t *avail, uint64_t *total);
	/* A segment file is about to be deleted (budget, vacuum, age): set
	 * by lifecycle.c (shipping counts what goes unshipped). NULL: nobody. */
	void (*deleting)(void *ctx, const struct segfile *s);
	/* Should a segment the budget does not force out stay (vacuum,
	 * max_retention)? Shipping keeps what is not yet acknowledged, up to
	 * ship.max_backlog. NULL: nothing is kept. */
	bool (*keep)(void *ctx, const struct segfile *s);
	void *ctx;                /* for written(), mkdir(), deleting(), keep() */
};

/* A retention class's segment stream (FORMAT.md "Retention classes"):
 * lane 0 is the default class. */
struct store_lane {
	char name[RINGLOG_CLASS_NAME_MAX];  /* "" for the default class */
	const struct ringlog_config_class *cls; /* st->classes[]; NULL: default */
	struct segfile *cur; /* its segment being written, while not active */
	struct chunk *open;  /* its chunk being filled, while not active */
	uint32_t gen;        /* its seg_gen, while not active */
	uint64_t share_bytes; /* min_share of budget.max_disk */
	uint64_t min_age_ns;
	/* evictions by the budget since the daemon started */
	uint64_t evicted, evicted_bytes, forced;
	char last_why[200];
};

/* The last evictions by the budget, for `ringlog status`. */
#define STORE_EVICT_LOG 16
struct store_eviction {
	uint64_t seq, bytes, first_real_ns, last_real_ns, at_real_ns;
	unsigned lane;
	char why[200];
};

struct store {
	struct store_budget budget;
	/* Retention classes: lanes[0..nlanes), the one being filled is
	 * active (st->cur and st->seg_gen are its). */
	struct ringlog_config_class classes[RINGLOG_CONFIG_CLASSES];
	struct store_lane lanes[STORE_LANES];
	unsigned nlanes, active;
	uint32_t route_gen;
	struct store_eviction evictions[STORE_EVICT_LOG];
	uint64_t nevictions;
	bool forced_logged;
	/* What the filesystem has: file_space() (file.h), or a test's figure. */
	int (*space)(const char *dir, uint64_t *avail, uint64_t *total);
	struct sink_list *sinks; /* never NULL: an empty list when not given */
	struct sink_list no_sinks;
	void (*written)(void *ctx, bool idle);
	int (*mkdir)(void *ctx, const char *dir);
	/* A segment file is about to be deleted (budget, vacuum, age):
	 * shipping counts what goes unshipped. May be NULL. */
	void (*deleting)(void *ctx, const struct segfile *s);
	/* Should a segment the budget does not force out stay (vacuum,
	 * max_retention)? Shipping keeps what is not yet acknowledged, up to
	 * ship.max_backlog. NULL: nothing is kept. */
	bool (*keep)(void *ctx, const struct segfile *s);
	void *ctx;
	struct d_clock *clock;
	char dir[RINGLOG_CONFIG_PATH_MAX];
	uint8_t boot_id[16];
	char host[64];

	struct io *io;
	const char *io_name;
	struct segfile *segs; /* index, oldest first */
	struct segfile *cur;
	uint64_t next_seq;
	uint64_t run_first_seq; /* next_seq when this process opened the store:
	                         * the segments it writes are from here on (a
	                         * tail following again after a restart reads
	                         * them: sink/tail.c) */
	uint64_t used_bytes; /* sum of segfile.bytes */
	uint64_t inflight_bytes;  /* chunk writes submitted, not completed: the
	                           * filesystem may not count them yet */
	uint32_t seg_gen;
	/* Generations come from one counter for every lane, so that a lane
	 * never sees a value again (a writer's per-lane mark that equals it
	 * would skip its descriptions in a new segment). */
	uint32_t gen_next;
	struct chunk *chunks;
	uint8_t *chunk_pool; /* their buffers, one block (alloc_chunks()) */
	unsigned nchunks;
	struct chunk *open;  /* being filled, or NULL */
	struct store_run run;
	uint64_t seal_next;  /* seal_no of the next chunk sealed */
	uint64_t release_next; /* seal_no whose ring space is released next */
	uint64_t expire_tick_ns; /* last max_retention check (CLOCK_MONOTONIC) */
	bool disk_blocked;   /* last write failed for lack of space */
	bool full_by_budget; /* the last ROOM_FULL: max_disk, not min_free */
	int dir_lock;        /* storage_dir's lock (file_lock_dir), or -1 */
	unsigned finalizing; /* rotated segments whose seal is in flight or
	                      * waits for its sync round (durable.c) */
	unsigned syncing;    /* syncs of segments being written in flight */
	struct segfile *sync_queue; /* rotated, waiting for the round */
	unsigned sync_queued;  /* how many */
	uint64_t sync_round_ns; /* CLOCK_MONOTONIC of the last round */
	/* status: when the last round started (wall clock), the syncs that
	 * failed and the last one's reason */
	uint64_t sync_round_real_ns;
	uint64_t sync_failures;
	char sync_error[STORE_WHY_MAX];
	bool stopping;       /* store_stop(): seals run in place */
	uint64_t dir_id[2];  /* storage_dir's device and inode when locked */
	char disk_error[STORE_WHY_MAX];

	/* counters */
	uint64_t stored, stored_bytes, lost_disk;
	uint64_t lost_deleted; /* stored, then deleted under us (not by budget) */
};

/* segment.c */

/* Create and lock p->dir, scan it, size everything from cfg
 * (store_configure()), allocate the chunk buffers, open a segment: the
 * store, or NULL with errno set, logged with what to do (EBUSY: another
 * daemon holds the directory). */
struct store *store_open(const struct store_params *p, const struct ringlog_config *cfg);
/* Finalize the segments and free the store (its backend is the caller's,
 * closed first so that every write has landed). NULL is a no-op. */
void store_close(struct store *st);
/* The configuration was reloaded: seal the chunk sized for the old budget,
 * configure, close a segment now too large, trim the store to it. */
void store_reload(struct store *st, const struct ringlog_config *cfg);
/* Take storage_dir's lock (again, once it was recreated): 0 or -errno,
 * logged with what to do. */
int store_lock_dir(struct store *st);

/* One validated event record of ring r (its bytes at payload, len as in
 * the ring, e its definition): packed into the open chunk and published
 * to the sinks that want records. 0, STORE_FULL or -errno. */
int store_event(struct store *st, struct ring *r, uint16_t type, uint16_t id,
		const uint8_t *payload, uint32_t len, const struct ringlog_event_desc *e);
/* store_event() for n records of one kind laid end to end in the ring
 * from payload (a run: ringlog_cons_run_fn), r->cons.rec_end just past the
 * first; published to the sinks that want records like store_event().
 * The record just before them, of the same kind, must have gone through
 * store_event() last: that chose the retention lane, which is not chosen
 * again (drain.c's on_run() does so).
 * Returns how many were taken, in order (fewer, 0 included: no room for
 * the rest now), or -errno. */
long store_event_run(struct store *st, struct ring *r, uint16_t type, uint16_t id,
		     const uint8_t *payload, uint32_t len, uint32_t n,
		     const struct ringlog_event_desc *e);
/* An event only memory-only sinks want (the flight recorder's
 * flight_level): published to the sinks that want records, not written.
 * Returns 0. */
int store_pass(struct store *st, struct ring *r, uint16_t type, uint16_t id,
	       const uint8_t *payload, uint32_t len, const struct ringlog_event_desc *e);
/* store_pass() for n records of one kind laid end to end from payload,
 * r->cons.rec_end just past the first (as store_event_run()). */
void store_pass_run(struct store *st, struct ring *r, uint16_t type, uint16_t id,
		    const uint8_t *payload, uint32_t len, uint32_t n,
		    const struct ringlog_event_desc *e);
/* Commit the events taken from r so far: before anything else may write
 * to the chunk (the drain calls it after each ring's pass). */
void store_events_end(struct store *st);
/* A LOSS record of ring r's stream, len bytes at l as in the ring (32, 40
 * or 104, proto/ring.h), in stream order; published to the sinks as sl.
 * 0, STORE_FULL or -errno. */
int store_ring_loss(struct store *st, struct ring *r, uint16_t aux,
		    const struct ringlog_rec_loss *l, uint32_t len,
		    const struct ringlog_seg_loss *sl);
/* A loss the daemon found (corrupt ring, a writer's exit): 0, STORE_FULL
 * or -errno; a loss not written now is still counted. */
int store_loss(struct store *st, struct ring *r, uint64_t records, uint64_t bytes,
	       uint32_t reason);
/* The same with every field of the record (provider, event, level: a rate
 * limit's report, ingest/overload.c). */
int store_loss_rec(struct store *st, struct ring *r, const struct ringlog_seg_loss *l);
/* Report r's pending disk loss in its stream now (a ring about to go):
 * 0, or STORE_FULL while the disk still refuses. */
int store_settle_loss(struct store *st, struct ring *r);

/* After a pass over r (or before it goes): with no chunk holding its
 * records, what is left unpublished is PAD only, and goes back at once.
 * With a quarter of the ring waiting for the open chunk, seal it now, so
 * that a ring smaller than a chunk never waits for the chunk to fill; with
 * a program waiting for room (its header's waiting), seal it at once. */
void store_give_back(struct store *st, struct ring *r);
/* Seal the open chunk and hand it to the backend (now: a tail's backlog,
 * a flush, a ring to give back, shutdown). */
void store_seal(struct store *st);
/* Periodic: seal a chunk that waited long enough, rotate by age, expire
 * by max_retention (at most once a second), notice a deleted
 * storage_dir. */
void store_tick(struct store *st);
/* Has storage_dir or the current segment been deleted under us? Then
 * count what they held as lost, recreate the directory and go on. */
void store_check(struct store *st);
/* Nothing open, nothing in flight (chunk writes, a rotated segment's
 * seal, a sync). */
bool store_idle(const struct store *st);
/* Something in flight (chunk writes, seals, syncs). */
bool store_writing(const struct store *st);
/* No chunk with records open, in any lane. */
bool store_idle_open(const struct store *st);
/* Make lane k (a retention class) the one filled (retention.c). */
void store_lane_use(struct store *st, unsigned k);
/* A new description generation for the active lane: every writer and
 * stream is described again before its next record there. */
static inline void store_new_gen(struct store *st)
{
	st->seg_gen = ++st->gen_next;
}
void store_close_current(struct store *st);
/* Shutdown: the current segment is sealed now, in place, and so is every
 * one after (the loop may not run again to complete a seal). */
void store_stop(struct store *st);
/* Close retention class lane k's segment being written, so that the
 * budget may delete it. */
void store_close_lane(struct store *st, unsigned k);

/* durable.c: a segment's end and the sync rounds */

/* Seal rotated segment s (no write in flight in it): its CLOSED header,
 * its sync in the next round, then its descriptor closed. */
void seg_finalize(struct store *st, struct segfile *s);
/* A round of syncs when sync_interval has passed and there is something to
 * sync (the flush timer's tick). */
void store_sync_tick(struct store *st);
/* A round now. */
void store_sync_round(struct store *st);
/* Someone waits for the rotated segments' seals (retention, shutdown): a
 * round now if any waits for one. */
void store_sync_soon(struct store *st);
/* s is about to be deleted: if it only waits for its round (nothing in
 * flight), it leaves the queue and is closed unsynced (a deleted file needs
 * no sync). true: done, s is closed with nothing in flight. */
bool store_sync_drop(struct store *st, struct segfile *s);
/* Stopping: what waits for a round is synced in place. */
void store_sync_stop(struct store *st);

/* retention.c: the segment index and the budget */

_Static_assert(STORE_LANES == RINGLOG_CONFIG_CLASSES + 1, "a lane per class and the default");

/* The retention classes from cfg (at open before the scan, and at reload
 * after the seal): lanes, shares, the routing cache invalidated. When the
 * list of names changed, every lane's segment being written is closed and
 * the index's segments are assigned to lanes by name again (a class no
 * longer configured: the default's). Returns 1 when the names changed and
 * segments were assigned again, 0, or -EAGAIN when the names changed but a
 * chunk with records is still open (nothing changed: try again later). */
int ret_classes(struct store *st, const struct ringlog_config *cfg);
/* The lane (class) of an event of provider prov (NULL: unknown) at level. */
unsigned ret_classify(const struct store *st, const char *prov, unsigned level);
/* The lane named name ("" or unknown: 0). */
unsigned ret_lane_of(const struct store *st, const char *name);

/* Every size from cfg into st->budget; at open, and at each reload
 * (store_reload()), where chunk sizes stay within the buffers' size. */
void store_configure(struct store *st, const struct ringlog_config *cfg);
/* How large the segment opened now may grow (budget and free space). */
uint64_t store_seg_limit(const struct store *st);
/* A new chunk's size: the budget's, or less on a filesystem with little
 * room (retention.c). */
size_t store_chunk_limit(const struct store *st);

/* What a chunk of `bytes` may do (ret_make_room()). */
enum store_room {
	ROOM_OK,     /* it fits */
	ROOM_ROTATE, /* it fits only as the current segment's last chunk:
	              * write it, then close the segment so that the
	              * budget can take it (the circular log eats its tail) */
	ROOM_WAIT,   /* deletable space frees up when writes complete */
	ROOM_FULL,   /* nothing left to delete: below min_free or over max_disk */
};
/* Read the segments storage_dir holds (sealing a crashed daemon's), trim
 * to the budget: 0 or -errno (the directory cannot be read). */
int ret_scan(struct store *st);
void ret_add(struct store *st, struct segfile *s);
/* Delete the oldest segments until `bytes` more fit the budget. */
enum store_room ret_make_room(struct store *st, uint64_t bytes);
/* Delete sealed segments (never the one being written, nor one with writes
 * in flight, nor one st->keep keeps), oldest first, until the store takes at most keep_bytes; then
 * those whose newest event is older than before_ns (0: no age limit). each
 * (may be NULL) sees each one before it goes. Returns how many went. */
unsigned ret_vacuum(struct store *st, uint64_t keep_bytes, uint64_t before_ns,
		    void (*each)(void *ctx, const struct segfile *s), void *ctx);
/* The filesystem's free bytes (UINT64_MAX: unknown) and the floor
 * (min_free), from one look at it (st->space); or either alone. */
void ret_fs_room(const struct store *st, uint64_t *fs_free, uint64_t *floor);
uint64_t ret_fs_free(const struct store *st);
uint64_t ret_min_free(const struct store *st);

#endif /* RINGLOG_DAEMON_STORE_H */
