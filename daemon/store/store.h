/* daemon/store/store.h - bytes on disk: chunks (segment.c), the segment
 * index and the disk budget (retention.c), through one write backend
 * (io-ops.h) and the system's files (file.h).
 *
 * What comes in: validated records of the writers' rings, from the drain
 * (ingest/drain.c), with the metadata that describes them. What goes out:
 * the sinks' notifications (sink/sink.h), through the list lifecycle.c
 * hands over in st.sinks, and "there is room again" through st.room. The
 * store never calls the drain or a sink by name.
 *
 * Sizes: store_configure() derives every size from the configuration, at
 * start and at each reload, into st.budget; nothing in the store reads the
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

#include "config.h"
#include "meta.h"
#include "ringbuf.h"
#include "segment.h"

struct daemon;
struct ring;
struct sink;
struct io;

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
};

/* A segment file known to the index (retention.c). */
struct segfile {
	struct segfile *next;  /* by seq, oldest first */
	uint64_t seq;
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
	uint64_t seal_no;    /* order of sealing: ring space is released in it */
	/* whose records it carries: to release their ring space once written,
	 * or to count them lost if the write fails */
	struct chunk_who {
		struct ring *r;
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
	struct daemon *d;
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
};

struct store {
	struct store_budget budget;
	/* What the filesystem has: file_space() (file.h), or a test's figure. */
	int (*space)(const char *dir, uint64_t *avail, uint64_t *total);
	/* Published to (sink.h); set by lifecycle.c. */
	struct sink *sinks;
	/* Chunk buffers are free again after being all in flight: the drain
	 * may resume (lifecycle.c sets it to drain_start()). */
	void (*room)(struct daemon *d);
	/* A segment file is about to be deleted (budget, vacuum, age): set
	 * by lifecycle.c (shipping counts what goes unshipped), may be NULL. */
	void (*deleting)(struct daemon *d, const struct segfile *s);
	/* Should a segment the budget does not force out stay (vacuum,
	 * max_retention)? Shipping keeps what is not yet acknowledged, up to
	 * ship.max_backlog. NULL: nothing is kept. */
	bool (*keep)(struct daemon *d, const struct segfile *s);

	struct io *io;
	const char *io_name;
	char io_note[160];   /* why the backend is what it is */
	struct segfile *segs; /* index, oldest first */
	struct segfile *cur;
	uint64_t next_seq;
	uint64_t used_bytes; /* sum of segfile.bytes */
	uint32_t seg_gen;
	struct chunk *chunks;
	unsigned nchunks;
	struct chunk *open;  /* being filled, or NULL */
	struct store_run run;
	uint64_t seal_next;  /* seal_no of the next chunk sealed */
	uint64_t release_next; /* seal_no whose ring space is released next */
	bool disk_blocked;   /* last write failed for lack of space */
	int dir_lock;        /* storage_dir's lock (file_lock_dir), or -1 */
	uint64_t dir_id[2];  /* storage_dir's device and inode when locked */
	char disk_error[STORE_WHY_MAX];

	/* counters */
	uint64_t stored, stored_bytes, lost_disk;
	uint64_t lost_deleted; /* stored, then deleted under us (not by budget) */
};

/* segment.c */

/* Lock and scan storage_dir, size everything (store_configure()), allocate
 * the chunk buffers, open a segment: 0 or -errno, logged with what to do
 * (-EBUSY: another daemon holds the directory). */
int store_init(struct daemon *d);
void store_fini(struct daemon *d);
/* Every size from d->cfg into st.budget; at start, and at each reload
 * (store_reload()), where chunk sizes stay within the buffers' size. */
void store_configure(struct daemon *d);
/* The configuration was reloaded: seal the chunk sized for the old budget,
 * configure, close a segment now too large, trim the store to it. */
void store_reload(struct daemon *d);
/* Take storage_dir's lock (again, once it was recreated): 0 or -errno,
 * logged with what to do. */
int store_lock_dir(struct daemon *d);

/* One validated event record of ring r (its bytes at payload, len as in
 * the ring, e its definition): packed into the open chunk and published
 * to the sinks. 0, STORE_FULL or -errno. */
int store_event(struct daemon *d, struct ring *r, uint16_t type, uint16_t id,
		const uint8_t *payload, uint32_t len, const struct ringlog_event_desc *e);
/* Commit the events taken from r so far: before anything else may write
 * to the chunk (the drain calls it after each ring's pass). */
void store_events_end(struct daemon *d);
/* A LOSS record of ring r's stream, len bytes at l as in the ring (32 or
 * 40, proto/ring.h), in stream order; published to the sinks as sl.
 * 0, STORE_FULL or -errno. */
int store_ring_loss(struct daemon *d, struct ring *r, uint16_t aux,
		    const struct ringlog_rec_loss *l, uint32_t len,
		    const struct ringlog_seg_loss *sl);
/* A loss the daemon found (corrupt ring, a writer's exit): 0, STORE_FULL
 * or -errno; a loss not written now is still counted. */
int store_loss(struct daemon *d, struct ring *r, uint64_t records, uint64_t bytes,
	       uint32_t reason);
/* Report r's pending disk loss in its stream now (a ring about to go):
 * 0, or STORE_FULL while the disk still refuses. */
int store_settle_loss(struct daemon *d, struct ring *r);

/* Seal the open chunk and hand it to the backend (now: a tail's backlog,
 * a flush, a ring to give back, shutdown). */
void store_seal(struct daemon *d);
/* Periodic: seal a chunk that waited long enough, rotate by age, notice a
 * deleted storage_dir. */
void store_tick(struct daemon *d);
/* Has storage_dir or the current segment been deleted under us? Then
 * count what they held as lost, recreate the directory and go on. */
void store_check(struct daemon *d);
/* Nothing open, nothing in flight. */
bool store_idle(struct daemon *d);
void store_close_current(struct daemon *d);
/* max_retention: seal and close the segment being written once its oldest
 * event is older than before_ns, so that it may go in turn, then delete
 * the sealed segments older than that (ret_vacuum()). Returns how many
 * went; each (may be NULL) sees each one before it goes. */
unsigned store_expire(struct daemon *d, uint64_t before_ns,
		      void (*each)(void *ctx, const struct segfile *s), void *ctx);
/* How large the segment opened now may grow (budget and free space). */
uint64_t store_seg_limit(const struct daemon *d);

/* retention.c: the segment index and the budget */

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
int ret_scan(struct daemon *d);
void ret_add(struct daemon *d, struct segfile *s);
/* Delete the oldest segments until `bytes` more fit the budget. */
enum store_room ret_make_room(struct daemon *d, uint64_t bytes);
/* Delete sealed segments (never the one being written, nor one with writes
 * in flight, nor one st.keep keeps), oldest first, until the store takes at most keep_bytes; then
 * those whose newest event is older than before_ns (0: no age limit). each
 * (may be NULL) sees each one before it goes. Returns how many went. */
unsigned ret_vacuum(struct daemon *d, uint64_t keep_bytes, uint64_t before_ns,
		    void (*each)(void *ctx, const struct segfile *s), void *ctx);
/* The filesystem's free bytes (UINT64_MAX: unknown) and the floor
 * (min_free), from one look at it (st.space); or either alone. */
void ret_fs_room(const struct daemon *d, uint64_t *fs_free, uint64_t *floor);
uint64_t ret_fs_free(const struct daemon *d);
uint64_t ret_min_free(const struct daemon *d);

#endif /* RINGLOG_DAEMON_STORE_H */
