/* proto/segment.h - the segment file format written by ringlogd and read by
 * `ringlog read`, `ringlog status` and the daemon's own startup scan.
 *
 * A segment is one file, `<storage_dir>/<seq:016x>.rlseg`; seq grows by one
 * per segment across daemon restarts, so names sort oldest first.
 *
 *   0                  4096                        (4096-aligned)
 *   +------------------+-------------+-----+-------------+-----+----
 *   | segment header   | chunk hdr   |body | chunk hdr   |body | ...
 *   +------------------+-------------+-----+-------------+-----+----
 *                       |<- padded to 4096 ->|
 *
 * Every chunk starts on a 4096-byte boundary (the file is written with
 * O_DIRECT where the filesystem allows) and is padded with zeros to the next
 * one. A chunk's CRC32C covers its 48-byte header (crc field zero) and its
 * body. A reader walks chunk by chunk; when a chunk is torn or corrupt it
 * reports the range and resynchronises by probing the next 4096-byte
 * boundaries for a header whose CRC verifies. A crash thus loses at most the
 * chunks in flight, never what precedes or follows damage.
 *
 * The header is written when the segment opens (state ONLINE) and rewritten
 * in place when it closes (state CLOSED, with the totals). A segment left
 * ONLINE by a crash is read the same way, by walking its chunks.
 *
 * A chunk body is a sequence of 8-aligned records:
 *
 *   | len:32 | type:16 | flags:16 | id:32 | reserved:32 | body ... | pad |
 *
 *   WRITER  id = writer id;  body struct ringlog_seg_writer + exe path
 *   STREAM  id = stream id;  body struct ringlog_seg_stream
 *   META    id = writer id;  body = one metadata entry (event.h), verbatim
 *   SPAN    id = stream id;  body = ring records (ring.h), verbatim: events
 *                            and LOSS records exactly as the client wrote them.
 *                            With flag RINGLOG_SPAN_POS (always, in files) the
 *                            body starts with the u64 ring position of its
 *                            first record and the records are contiguous in
 *                            the ring: a reader drops any record at a position
 *                            it has already seen for that ring, which is how
 *                            a daemon killed after a write but before giving
 *                            the ring space back never yields duplicates
 *   PACK    id = stream id;  body = the u64 ring position of the first record,
 *                            then the same records as a SPAN's, packed
 *                            (pack.h): 36 bytes instead of 48 for the 48-byte
 *                            event. What ringlogd writes to files (flag
 *                            RINGLOG_SEG_PACKED in the header); SPAN remains
 *                            for the live tail stream and older files
 *   LOSS    id = stream id;  body struct ringlog_seg_loss: events the daemon
 *                            itself could not store (disk, slow reader, ...)
 *   CLOCK, SCOPE             only in the live tail stream (ctl.h)
 *
 * Self-contained: before the first SPAN or PACK of a stream in a segment,
 * the daemon writes that stream's WRITER, STREAM and the META entries of
 * every event (and its provider) used in the segment, and repeats them
 * every 4th chunk (readers skip identical repeats), so a damaged chunk hides
 * the descriptions from at most the chunks up to the repeat. Deleting older
 * segments therefore never makes a newer one unreadable. Writer and stream ids are scoped to a
 * segment. The live `ringlog tail` stream uses the same records.
 *
 * Timestamps: ring records carry raw clock values (event.h). The header's
 * calibration turns TSC ticks into wall-clock nanoseconds:
 *   real_ns = real_ref + (ticks - tsc_ref) * 1e9 / tsc_hz
 * and stream clock MONO values with real_ns = real_ref + (mono - mono_ref).
 * Chunk headers carry wall-clock times already converted, so time-range
 * queries and the retention index never decode events. A reader that has
 * no calibration (a header it rebuilt: FORMAT.md "A damaged magic") sets
 * real_ref to RINGLOG_SEG_CLOCK_UNKNOWN and shows events at their chunk's
 * time; no writer stores that value.
 */
#ifndef RINGLOG_PROTO_SEGMENT_H
#define RINGLOG_PROTO_SEGMENT_H

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define RINGLOG_SEG_MAGIC        0x4745534c474e4952ull /* "RINGLSEG" */
#define RINGLOG_SEG_CLOCK_UNKNOWN UINT64_MAX /* real_ref: no calibration (a reader's) */
#define RINGLOG_SEG_VERSION      1u
#define RINGLOG_SEG_HEADER_SIZE  4096u
#define RINGLOG_SEG_ALIGN        4096u
#define RINGLOG_CHUNK_MAGIC      0x4b434c52u /* "RLCK" */
#define RINGLOG_CHUNK_HDR_SIZE   48u
#define RINGLOG_CHUNK_MAX        (16u << 20) /* readers refuse larger chunks */
/* tsc_hz is 0 (no invariant TSC) or within these bounds, far around any
 * real counter (TSCs run at 1-6 GHz, Windows' QPC at 10 MHz): a reader
 * warns about a value outside them and does not convert TSC timestamps
 * with it. header_size is RINGLOG_SEG_HEADER_SIZE in version 1; a reader
 * warns about any other value and reads chunks from 4096 regardless, so
 * that a forged one cannot hide chunks. */
#define RINGLOG_SEG_TSC_HZ_MIN   1000000ull      /* 1 MHz */
#define RINGLOG_SEG_TSC_HZ_MAX   100000000000ull /* 100 GHz */

enum { RINGLOG_SEG_ONLINE = 1, RINGLOG_SEG_CLOSED = 2 };

/* compat_flags */
#define RINGLOG_SEG_RECOVERED 0x1u /* sealed by the next daemon after a crash:
                                    * the totals come from a scan, and bytes
                                    * past `end` may hold a torn chunk */
#define RINGLOG_SEG_SNAPSHOT  0x2u /* a flight recorder snapshot: the header
                                    * holds struct ringlog_seg_snap at
                                    * RINGLOG_SEG_SNAP_OFF (why, which window) */
/* incompat_flags: a reader that does not know a bit set here must refuse
 * the segment rather than misread it */
#define RINGLOG_SEG_PACKED    0x1u /* events are in PACK records (pack.h) */
#define RINGLOG_SEG_INCOMPAT_KNOWN RINGLOG_SEG_PACKED

#define RINGLOG_SEG_CLASS_NAME_SIZE 32

/* A retention class's name, in the configuration ("retention") and in a
 * segment's class_name: 1 to RINGLOG_SEG_CLASS_NAME_SIZE - 1 bytes of
 * a-z, 0-9, _ and -. s holds n of them, then a NUL. */
static inline bool ringlog_seg_class_name_ok(const char *s, size_t n)
{
	return n && n < RINGLOG_SEG_CLASS_NAME_SIZE &&
	       strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789_-") == n;
}

struct ringlog_seg_hdr {
	uint64_t magic;
	uint16_t version;
	uint16_t header_size;
	uint32_t incompat_flags;
	uint32_t compat_flags;
	uint32_t state;          /* ONLINE while written, CLOSED when sealed */
	uint64_t seq;
	uint64_t created_real_ns;
	uint8_t boot_id[16];
	char host[64];           /* NUL-padded */
	/* calibration: see the comment above */
	uint64_t tsc_ref;
	uint64_t mono_ref;
	uint64_t real_ref;
	uint64_t tsc_hz;         /* 0: the host has no invariant TSC */
	/* totals, valid when state == CLOSED */
	uint64_t first_real_ns;
	uint64_t last_real_ns;
	uint64_t events;
	uint64_t chunks;
	uint64_t end;            /* file offset past the last chunk */
	uint32_t hdr_crc;        /* CRC32C of bytes [0, 256) with this field 0 */
	uint32_t reserved0;
	uint64_t lost;           /* events counted by its LOSS records (the sum
	                          * of the chunks' `lost`); 0 in files from
	                          * before the field, which did not count */
	char class_name[RINGLOG_SEG_CLASS_NAME_SIZE]; /* the retention class whose stream this
	                          * segment is (FORMAT.md "Retention classes"),
	                          * NUL-padded; all zero: the default class
	                          * (and every file from before the field) */
	uint8_t reserved[RINGLOG_SEG_HEADER_SIZE - 240];
};

struct ringlog_chunk_hdr {
	uint32_t magic;
	uint32_t crc;            /* CRC32C of header (crc = 0) + body */
	uint32_t body_len;
	uint32_t events;
	uint64_t seq;            /* chunk number within the segment, from 0 */
	uint64_t first_real_ns;
	uint64_t last_real_ns;
	uint64_t lost;           /* events counted by the LOSS records in its
	                          * body (0 in files from before the field) */
};

enum {
	RINGLOG_SEG_REC_WRITER = 1,
	RINGLOG_SEG_REC_STREAM = 2,
	RINGLOG_SEG_REC_META = 3,
	RINGLOG_SEG_REC_SPAN = 4,
	RINGLOG_SEG_REC_LOSS = 5,
	RINGLOG_SEG_REC_CLOCK = 6, /* tail stream only: struct ringlog_seg_clock */
	RINGLOG_SEG_REC_SCOPE = 7, /* tail stream only: ids that follow belong to
	                            * scope `id` (0: live); used for the backlog */
	RINGLOG_SEG_REC_PACK = 8,  /* files: struct ringlog_seg_span, packed records */
};

struct ringlog_seg_clock {
	uint64_t tsc_ref;
	uint64_t mono_ref;
	uint64_t real_ref;
	uint64_t tsc_hz;
};

struct ringlog_seg_rec {
	uint32_t len;   /* whole record including this header, multiple of 8 */
	uint16_t type;
	uint16_t flags;
	uint32_t id;
	uint32_t reserved;
};

struct ringlog_seg_writer {
	uint32_t pid;   /* from SO_PEERCRED, never from the client */
	uint32_t uid;
	uint32_t gid;
	uint32_t exe_len;   /* bytes of executable path after this struct */
	char comm[16];  /* /proc/PID/comm, NUL-padded */
	uint64_t start_real_ns;
};

struct ringlog_seg_stream {
	uint32_t writer;
	uint32_t tid;
	uint32_t clock;  /* RINGLOG_RING_CLOCK_TSC or 0 (CLOCK_MONOTONIC ns) */
	uint32_t reserved;
	uint64_t ring_id; /* the ring header's created_ns: with writer pid, start
	                   * time and tid it names one ring across segments */
};

#define RINGLOG_SPAN_POS 0x1u /* seg_rec.flags of a SPAN: body starts with */
struct ringlog_seg_span {      /* this */
	uint64_t pos;
};

enum ringlog_loss_reason {
	RINGLOG_LOSS_RING = 1,   /* the client's ring was full (in the SPAN) */
	RINGLOG_LOSS_DISK = 2,   /* the daemon could not write: disk full, I/O error */
	RINGLOG_LOSS_READER = 3, /* a slow tail reader: only that reader misses them */
	RINGLOG_LOSS_CORRUPT = 4,/* the ring was corrupt and detached */
	RINGLOG_LOSS_EXIT = 5,   /* counted by the client but never reported in-stream */
	RINGLOG_LOSS_OVERWRITTEN = 6, /* snapshots: the flight buffer overwrote
	                               * them before the snapshot's first event */
	RINGLOG_LOSS_RATE = 7,   /* suppressed by the event's rate limit (event says which) */
	/* Never in files: what a reader of a cluster (`read --nats`) shows
	 * for a shipped message's not_shipped count (proto/ship.h), by its
	 * reason: RINGLOG_LOSS_SHIP + enum ringlog_ship_loss - 1 */
	RINGLOG_LOSS_SHIP = 8,
	/* 8..15 are for the ship reasons. The library made no ring for the
	 * event's thread (out of descriptors or memory, metadata region
	 * full): counted by the program, said over the control link
	 * (proto/ctl.h SUPPRESSED, event 0), stored in another of its
	 * streams. */
	RINGLOG_LOSS_NO_RING = 16,
};

/* A snapshot's own part of the segment header (compat flag SNAPSHOT), at
 * RINGLOG_SEG_SNAP_OFF, outside the 256 bytes hdr_crc covers (a reader
 * from before the flag never looks there) and checksummed by its own crc.
 * reasons holds nreasons NUL-terminated UTF-8 strings, the triggers that
 * coalesced into this snapshot, in the order they came. */
#define RINGLOG_SEG_SNAP_OFF     1024u
#define RINGLOG_SEG_SNAP_REASONS 976u
struct ringlog_seg_snap {
	uint32_t crc;             /* CRC32C of the struct with crc = 0 */
	uint32_t nreasons;
	uint64_t trigger_real_ns; /* the first trigger */
	uint64_t from_real_ns;    /* the window asked: first trigger - pre */
	uint64_t to_real_ns;      /*   to last trigger + post */
	uint64_t overwritten;     /* events the buffer overwrote before the
	                           * first one here (also a LOSS record) */
	uint32_t reasons_len;     /* bytes used in reasons */
	uint32_t reserved;
	char reasons[RINGLOG_SEG_SNAP_REASONS];
};

/* 24 bytes in files from before provider and first_ts, which readers
 * take as "not said"; readers ignore bytes past what they know. */
struct ringlog_seg_loss {
	uint64_t records;
	uint64_t bytes;
	uint32_t reason;
	uint32_t provider;  /* metadata provider id of every lost event, 0: not
	                     * known (the ring's LOSS aux, ring.h) */
	uint64_t first_ts;  /* the stream's clock when the gap began, 0: not
	                     * known (readers then use the stream's previous
	                     * event) */
	/* From here, 40 bytes (overload, issue 28); 32 before, read as 0. */
	uint32_t event;     /* metadata event id of every lost event, 0: not
	                     * known (RINGLOG_LOSS_RATE names it) */
	uint8_t  level;     /* level of every lost event, 0: not known or mixed */
	uint8_t  reserved[3];
};

static_assert(sizeof(struct ringlog_seg_hdr) == RINGLOG_SEG_HEADER_SIZE, "segment header size");
static_assert(offsetof(struct ringlog_seg_hdr, magic) == 0, "seg magic");
static_assert(offsetof(struct ringlog_seg_hdr, version) == 8, "seg version");
static_assert(offsetof(struct ringlog_seg_hdr, header_size) == 10, "seg header_size");
static_assert(offsetof(struct ringlog_seg_hdr, incompat_flags) == 12, "seg incompat");
static_assert(offsetof(struct ringlog_seg_hdr, compat_flags) == 16, "seg compat");
static_assert(offsetof(struct ringlog_seg_hdr, state) == 20, "seg state");
static_assert(offsetof(struct ringlog_seg_hdr, seq) == 24, "seg seq");
static_assert(offsetof(struct ringlog_seg_hdr, created_real_ns) == 32, "seg created");
static_assert(offsetof(struct ringlog_seg_hdr, boot_id) == 40, "seg boot_id");
static_assert(offsetof(struct ringlog_seg_hdr, host) == 56, "seg host");
static_assert(offsetof(struct ringlog_seg_hdr, tsc_ref) == 120, "seg tsc_ref");
static_assert(offsetof(struct ringlog_seg_hdr, mono_ref) == 128, "seg mono_ref");
static_assert(offsetof(struct ringlog_seg_hdr, real_ref) == 136, "seg real_ref");
static_assert(offsetof(struct ringlog_seg_hdr, tsc_hz) == 144, "seg tsc_hz");
static_assert(offsetof(struct ringlog_seg_hdr, first_real_ns) == 152, "seg first");
static_assert(offsetof(struct ringlog_seg_hdr, last_real_ns) == 160, "seg last");
static_assert(offsetof(struct ringlog_seg_hdr, events) == 168, "seg events");
static_assert(offsetof(struct ringlog_seg_hdr, chunks) == 176, "seg chunks");
static_assert(offsetof(struct ringlog_seg_hdr, end) == 184, "seg end");
static_assert(offsetof(struct ringlog_seg_hdr, hdr_crc) == 192, "seg hdr_crc");
static_assert(offsetof(struct ringlog_seg_hdr, lost) == 200, "seg lost");
static_assert(offsetof(struct ringlog_seg_hdr, class_name) == 208, "seg class_name");
static_assert(offsetof(struct ringlog_seg_hdr, reserved) == 240, "seg reserved");
static_assert(sizeof(struct ringlog_chunk_hdr) == RINGLOG_CHUNK_HDR_SIZE, "chunk header size");
static_assert(offsetof(struct ringlog_chunk_hdr, crc) == 4, "chunk crc");
static_assert(offsetof(struct ringlog_chunk_hdr, body_len) == 8, "chunk body_len");
static_assert(offsetof(struct ringlog_chunk_hdr, events) == 12, "chunk events");
static_assert(offsetof(struct ringlog_chunk_hdr, seq) == 16, "chunk seq");
static_assert(offsetof(struct ringlog_chunk_hdr, first_real_ns) == 24, "chunk first");
static_assert(offsetof(struct ringlog_chunk_hdr, last_real_ns) == 32, "chunk last");
static_assert(offsetof(struct ringlog_chunk_hdr, lost) == 40, "chunk lost");
static_assert(sizeof(struct ringlog_seg_rec) == 16, "segment record header size");
static_assert(offsetof(struct ringlog_seg_rec, type) == 4, "rec type");
static_assert(offsetof(struct ringlog_seg_rec, flags) == 6, "rec flags");
static_assert(offsetof(struct ringlog_seg_rec, id) == 8, "rec id");
static_assert(sizeof(struct ringlog_seg_writer) == 40, "writer record size");
static_assert(offsetof(struct ringlog_seg_writer, comm) == 16, "writer comm");
static_assert(offsetof(struct ringlog_seg_writer, start_real_ns) == 32, "writer start");
static_assert(sizeof(struct ringlog_seg_stream) == 24, "stream record size");
static_assert(offsetof(struct ringlog_seg_stream, tid) == 4, "stream tid");
static_assert(offsetof(struct ringlog_seg_stream, clock) == 8, "stream clock");
static_assert(offsetof(struct ringlog_seg_stream, ring_id) == 16, "stream ring_id");
static_assert(sizeof(struct ringlog_seg_span) == 8, "span prefix size");
static_assert(sizeof(struct ringlog_seg_loss) == 40, "loss record size");
static_assert(offsetof(struct ringlog_seg_loss, event) == 32, "loss event");
static_assert(offsetof(struct ringlog_seg_loss, level) == 36, "loss level");
static_assert(offsetof(struct ringlog_seg_loss, provider) == 20, "loss provider");
static_assert(offsetof(struct ringlog_seg_loss, first_ts) == 24, "loss first_ts");
#define RINGLOG_SEG_LOSS_V1_SIZE 24u /* what files before provider/first_ts hold */
static_assert(sizeof(struct ringlog_seg_clock) == 32, "clock record size");
static_assert(sizeof(struct ringlog_seg_snap) == 1024, "snapshot header size");
static_assert(offsetof(struct ringlog_seg_snap, trigger_real_ns) == 8, "snap trigger");
static_assert(offsetof(struct ringlog_seg_snap, from_real_ns) == 16, "snap from");
static_assert(offsetof(struct ringlog_seg_snap, to_real_ns) == 24, "snap to");
static_assert(offsetof(struct ringlog_seg_snap, overwritten) == 32, "snap overwritten");
static_assert(offsetof(struct ringlog_seg_snap, reasons_len) == 40, "snap reasons_len");
static_assert(offsetof(struct ringlog_seg_snap, reasons) == 48, "snap reasons");
static_assert(RINGLOG_SEG_SNAP_OFF >= 240 && RINGLOG_SEG_SNAP_OFF + sizeof(struct ringlog_seg_snap) <=
	      RINGLOG_SEG_HEADER_SIZE, "snapshot part inside the header's reserved bytes");

/* CRC32C (Castagnoli), hardware-accelerated where the CPU has it. */
uint32_t ringlog_crc32c(uint32_t crc, const void *buf, size_t len);
/* Which way this CPU computes it: "vpclmulqdq", "sse4.2" or "table". */
const char *ringlog_crc32c_impl(void);

/* CRC of a segment header / chunk header + body, as stored. */
uint32_t ringlog_seg_hdr_crc(const struct ringlog_seg_hdr *h);
uint32_t ringlog_chunk_crc(const struct ringlog_chunk_hdr *h, const void *body);
uint32_t ringlog_seg_snap_crc(const struct ringlog_seg_snap *s);

static inline uint64_t ringlog_align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) & ~(a - 1);
}

#endif /* RINGLOG_PROTO_SEGMENT_H */
