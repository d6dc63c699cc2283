/* daemon/store/stream.h - what the store keeps about each writer and each
 * stream (a ring) it describes in segments.
 *
 * The store owns these fields; the registry (ingest/registry.h) only holds
 * them, in struct client and struct ring, so that the hot path reaches
 * them without a lookup (as libuv keeps a handle's private fields in the
 * handle). Only store/ writes them. The drain reads two of a stream's
 * (held, lost_disk_pending: whether a ring may go yet) and STATUS reads a
 * writer's lost_disk. */
#ifndef RINGLOG_DAEMON_STORE_STREAM_H
#define RINGLOG_DAEMON_STORE_STREAM_H

#include <stdbool.h>
#include <stdint.h>

/* One segment stream per retention class (lane; 0: the default class):
 * the default class and config.h's RINGLOG_CONFIG_CLASSES. */
#define STORE_LANES 5

/* What a lane's current segment already describes of a writer. */
struct store_desc {
	uint32_t seg_gen;    /* segment generation that has its WRITER + META[..] */
	uint32_t seg_nprov, seg_nev; /* metadata entries already in the segment */
};

struct store_writer {
	struct store_desc lane[STORE_LANES];
	/* The lane of each of its event ids, + 1 (0: not routed yet), valid
	 * while route_gen is the store's (a reload changes the classes). */
	uint8_t *route;
	uint32_t nroute, route_gen;
	uint64_t lost_disk;  /* its events that did not reach the disk */
};

struct store_stream {
	uint32_t seg_gen[STORE_LANES]; /* per lane: the generation with its STREAM record */
	uint32_t held;       /* chunk entries (open or in flight) holding its
	                      * records: their ring space is given back only
	                      * once the chunk is written */
	/* Its chunk entries in ring order (tickets), done or not: with a
	 * chunk open per retention class, a later chunk may be written
	 * before an earlier one holding older records of the ring, so ring
	 * space goes back only up to the first entry not written yet
	 * (segment.c release_ready()). A ring of pend_cap slots, by ticket. */
	struct store_pend {
		uint64_t end, seen_records, seen_bytes;
		bool done;
	} *pend;
	uint32_t pend_cap;
	uint64_t ticket_head, ticket_next;
	uint64_t lost_disk_pending; /* to report in-stream when writing resumes */
};

#endif /* RINGLOG_DAEMON_STORE_STREAM_H */
