/* proto/decode.h - turn segment records (segment.h) back into events.
 *
 * One decoder per segment (or per tail connection): it keeps the writers,
 * streams and metadata that records define, and calls back once per event
 * and once per loss. Used by `ringlog read`, `ringlog tail`, `ringlog
 * status` (offline) and the daemon's startup scan. Every input byte is
 * untrusted; damage is reported, never fatal.
 */
#ifndef RINGLOG_PROTO_DECODE_H
#define RINGLOG_PROTO_DECODE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "meta.h"
#include "segment.h"

struct ringlog_dec_writer {
	struct ringlog_seg_writer w;
	char comm[17];
	char *exe;
	struct ringlog_meta meta;
};

struct ringlog_dec_stream {
	struct ringlog_seg_stream s;
	bool known;
	uint64_t last_real_ns;   /* of its last event decoded here, 0: none yet */
};

struct ringlog_dec_scope {
	struct ringlog_dec_writer **writers; /* by id */
	uint32_t nwriters;
	struct ringlog_dec_stream *streams;  /* by id */
	uint32_t nstreams;
};

struct ringlog_dec_event {
	const struct ringlog_dec_writer *writer;
	const struct ringlog_dec_stream *stream;
	const struct ringlog_event_desc *desc;
	const char *provider;
	uint64_t real_ns;        /* wall clock, from the calibration */
	const uint8_t *activity; /* 16 bytes or NULL */
	const struct ringlog_value *values;
	uint32_t stream_id;
	uint64_t ts;             /* the writer's own stamp, in its stream's clock:
	                          * the same live and stored, whatever the
	                          * calibration (a tail's marks: tail.c) */
};

struct ringlog_dec_loss {
	const struct ringlog_dec_writer *writer; /* may be NULL */
	const struct ringlog_dec_stream *stream;
	const char *provider;    /* of every lost event, as the program said;
	                          * NULL: not attributed to one provider */
	uint64_t records;
	uint64_t bytes;
	uint32_t reason;         /* enum ringlog_loss_reason */
	const char *event;       /* the event every lost one was (a rate limit's
	                          * report), NULL: not said */
	uint8_t level;           /* the level of every lost event, 0: not said */
	uint64_t by_level[8];    /* how many of records were of each level
	                          * (index 1..5) when the program said; all 0
	                          * otherwise */
	uint64_t real_ns;        /* wall clock of the gap: when its first event
	                          * was dropped where the record says (ring.h);
	                          * otherwise the previous event of the same
	                          * stream, else the previous event decoded
	                          * (any stream), 0 if none */
};

/* Ring positions already delivered, per ring, across segments: see
 * RINGLOG_SPAN_POS in segment.h. Shared by the decoders of the segments of
 * one store, fed in segment order; a live follow of a fleet
 * (`tail --nats`) may get a chunk after a later one of its ring (a resend
 * in between), so the ranges a jump forward skipped stay open,
 * RINGLOG_DEDUP_HOLES of them (when full, one no longer than a PAD goes
 * first, else the oldest), until records fill them. */
#define RINGLOG_DEDUP_HOLES 4
/* A skipped range no longer than the largest PAD may be one (a ring's
 * wrap: every lap jumps over one): given up before the others. */
#define RINGLOG_DEDUP_SMALL (RINGLOG_REC_MAX_LEN + RINGLOG_REC_HDR_SIZE)

struct ringlog_dedup {
	struct ringlog_dedup_slot {
		uint64_t pid_start, ring_id; /* key: (writer pid ^ start, ring, tid,
		                              * class: FORMAT.md "Retention classes") */
		uint64_t cls;
		uint32_t tid;
		uint32_t used;
		uint64_t next;               /* past every position delivered */
		struct { uint64_t lo, hi; } hole[RINGLOG_DEDUP_HOLES];
		                             /* below next, never delivered
		                              * ([lo, hi); lo == hi: none) */
	} *slot;
	size_t cap, n;
	uint64_t dropped;                /* records skipped as already seen */
};

void ringlog_dedup_free(struct ringlog_dedup *x);

/* Whether the record at ring positions [at, end) is new to its ring's slot
 * s, which then counts it delivered (the decoder asks for every record of
 * a SPAN or PACK). */
bool ringlog_dedup_new(struct ringlog_dedup_slot *s, uint64_t at, uint64_t end);

struct ringlog_decoder {
	struct ringlog_dedup *dedup; /* optional */
	uint64_t dedup_class;        /* the segment's ringlog_seg_class_key() */
	struct ringlog_seg_clock clock;
	struct ringlog_dec_scope *scopes; /* by scope id */
	uint32_t nscopes;
	uint32_t scope;
	uint64_t last_real_ns;
	uint64_t unknown_time_ns; /* given to events whose clock cannot be
	                           * converted (a TSC stream without a valid
	                           * tsc_hz): `read` sets the chunk's first time */
	uint64_t damaged;        /* records that could not be decoded */
	void *ctx;
	int (*on_event)(void *ctx, const struct ringlog_dec_event *ev);
	void (*on_loss)(void *ctx, const struct ringlog_dec_loss *l);
	void (*on_damage)(void *ctx, const char *what);
};

void ringlog_dec_init(struct ringlog_decoder *d, const struct ringlog_seg_clock *clock);
void ringlog_dec_free(struct ringlog_decoder *d);

/* Decode a buffer of records (a chunk body, or tail DATA). Returns 0, or
 * the first non-zero value returned by on_event (decoding stops there). */
int ringlog_dec_records(struct ringlog_decoder *d, const uint8_t *p, size_t len);

/* Convert a raw timestamp of a stream to wall-clock nanoseconds. */
uint64_t ringlog_dec_real_ns(const struct ringlog_seg_clock *c, uint32_t stream_clock,
			     uint64_t ts);

/* ------------------------------------------------------------------------
 * Segment files.
 */
struct ringlog_seg_file {
	int fd;
	uint64_t size;
	struct ringlog_seg_hdr hdr;
	bool hdr_ok;             /* magic, version and CRC verified */
	uint64_t off;            /* where the next chunk is looked for */
	struct ringlog_chunk_hdr chunk;
	uint64_t chunk_off;      /* where chunk was read: a header whose body
	                          * then failed its checksum too */
	char damage_why[160];    /* what report() passes, when it adds a count */
	uint8_t *body;           /* of the last chunk returned */
	size_t cap;
	uint64_t damaged_bytes;
	char warning[480];       /* header fields outside what the format allows:
	                          * which, their value and what the reader does
	                          * instead (empty: none); the caller prints it
	                          * with the path */
	const char *path;
	void *ctx;
	/* one call per damaged range: [from, to) and why */
	void (*on_damage)(void *ctx, const char *path, uint64_t from, uint64_t to,
			  const char *why);
};

/* Open a segment and check its header. Returns 0 or -errno; -EBADMSG when
 * the file is not a segment at all (no header magic), with *why set. A bad
 * header CRC is not fatal: chunks still carry their own CRCs. A header_size
 * or tsc_hz outside what the format allows (segment.h) is not fatal either:
 * f->warning says which, and chunks are read from 4096 all the same. */
int ringlog_seg_open(struct ringlog_seg_file *f, const char *path, const char **why);
void ringlog_seg_close(struct ringlog_seg_file *f);

/* Read the next valid chunk into f->chunk / f->body. Returns 1, 0 at the end
 * of the file, or -errno on an I/O error. Damaged ranges are reported through
 * on_damage and skipped. With headers_only, bodies are not read or checked
 * (fast index scans of closed segments). */
int ringlog_seg_next(struct ringlog_seg_file *f, bool headers_only);

/* The calibration of a segment header, for the decoder; a tsc_hz outside
 * what the format allows is given as 0 (TSC times unknown: the decoder
 * then uses unknown_time_ns). */
void ringlog_seg_clock_of(const struct ringlog_seg_hdr *h, struct ringlog_seg_clock *c);
/* The duplicate check's class key of a segment: 0 for the default class,
 * else FNV-1a of its class_name (FORMAT.md "Retention classes"). */
uint64_t ringlog_seg_class_key(const struct ringlog_seg_hdr *h);

#endif /* RINGLOG_PROTO_DECODE_H */
