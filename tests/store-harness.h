/* tests/store-harness.h - the daemon's store, in this process: a store
 * opened on a storage directory of its own (store_open(), with no daemon),
 * the thread-pool backend, one writer with one in-memory ring, and the
 * real drain feeding the store (test-segment.c, test-retention.c). No
 * socket, no lifecycle: what is tested is store/ as the drain and
 * lifecycle.c drive it. */
#ifndef RINGLOG_TEST_STORE_HARNESS_H
#define RINGLOG_TEST_STORE_HARNESS_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon.h"
#include "ingest/registry.h"
#include "ringbuf.h"

struct harness {
	struct store *st;
	struct ringlog_config cfg;
	struct sink_list sinks; /* the store's: link a sink here */
	struct d_clock clock;
	uv_loop_t *loop;
	struct io *io;
	struct daemon *d;       /* the drain's only: its clients and rings */
	char dir[64];
	struct client *c;
	struct ring *r;
	void *mem;
	size_t mem_size;
	struct ringlog_producer p;
	uint64_t next_value;   /* the u64 field of the next event */
};

/* Another ring of the harness's writer, with a producer of its own, at
 * the head of the writer's list (a pass over every ring visits it
 * first). The drain releases it once finished and drained; h_stop() frees
 * it otherwise. */
struct h_ring {
	struct ring *r;
	struct ringlog_producer p;
};
void h_add_ring(struct harness *h, struct h_ring *x);

/* Defaults small enough for tests: max_disk 64 MiB, segments of 1 MiB,
 * sync_interval 10 ms (each loop turn of h_pump() and h_flush() asks for
 * the round),
 * no min_free. cfg (may be NULL) adjusts the configuration before the
 * store starts. The daemon is started as far as the store needs. */
void h_start(struct harness *h, void (*cfg)(struct ringlog_config *c));
/* Start another store on the same directory (a restart). */
void h_restart(struct harness *h);
/* seal, wait for writes, close (h->c NULL: the drain freed the writer) */
void h_stop(struct harness *h);
void h_cleanup(struct harness *h);   /* and remove the directory */

/* Write n events (one u64 field each) into the ring; returns how many the
 * ring took. h_emit(): "Tick", level info; h_emit_alarm(): "Alrm", level
 * error. */
unsigned h_emit(struct harness *h, unsigned n);
unsigned h_emit_alarm(struct harness *h, unsigned n);
/* Drain and run the loop until the ring is empty and no write is in
 * flight (at most 10 s). */
void h_pump(struct harness *h);
/* The same, but a rotated segment's seal may still be in flight (for a
 * test that holds it). */
void h_pump_chunks(struct harness *h);
/* Seal the open chunk and wait for every write. */
void h_flush(struct harness *h);
/* The thread of the ring ends: the drain finishes the ring and releases
 * it (h->r is then NULL; emit no more). */
void h_finish_ring(struct harness *h);
/* rounds x (emit per_round, pump), then flush: the events the ring took. */
unsigned h_fill(struct harness *h, unsigned rounds, unsigned per_round);

/* What the segment files in the directory hold, read back with the
 * readers' decoder: segments, chunks and events (damaged ranges skipped). */
struct h_disk {
	unsigned segments;
	uint64_t chunks, events, damaged;
	uint64_t class_events;     /* in segments of a retention class */
	unsigned class_segments;
	uint64_t first_seq, last_seq;
	/* LOSS records of a rate limit naming the event "Tick", and all
	 * other LOSS records (decoded) */
	uint64_t rate_lost_tick, lost_other;
};
struct h_disk h_read_disk(const struct harness *h);

#endif /* RINGLOG_TEST_STORE_HARNESS_H */
