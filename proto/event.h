/* proto/event.h - how an event is encoded in a ring record, and the metadata
 * region that says what the bytes mean.
 *
 * An event is one ring record (ring.h) of type EVENT or EVENT_ACT whose aux
 * field is the event's id in its process's metadata region:
 *
 *   ring record payload
 *   +----------+------------------+---------+---------+-----+
 *   | ts:64    | activity:128     | field 0 | field 1 | ... |
 *   +----------+------------------+---------+---------+-----+
 *              (EVENT_ACT only)
 *
 * ts is the raw hot-path clock: TSC ticks when the ring header's compat flag
 * RINGLOG_RING_CLOCK_TSC is set, CLOCK_MONOTONIC nanoseconds otherwise. The
 * daemon records the calibration that turns ticks into nanoseconds and wall
 * time (segment.h), so the hot path never converts.
 *
 * Fields follow in declaration order, packed (no alignment), little-endian:
 * integers and doubles in their natural size, bool as one byte, strings and
 * blobs as a u16 length and the bytes. Bit 15 of a string's length says the
 * string was truncated at the source (RINGLOG_STR_MAX bytes kept), so a
 * reader can show it and the length stays within 15 bits.
 *
 * Names and types never travel with the event: they live in the metadata
 * region, a second sealed memfd per process that the library appends to
 * and the daemon reads (map read-only, validate every entry):
 *
 *   +----------------+-------+-------+-------+----
 *   | meta header 64 | entry | entry | entry | ...   entries 8-aligned,
 *   +----------------+-------+-------+-------+----   `used` bytes valid
 *
 *   entry: | len:32 | kind:16 | id:16 | body ... |   len includes the 8 bytes
 *
 *   PROVIDER body: | name_len:16 | name ... |
 *   EVENT body:    | keyword:64 | provider:16 | level:8 | opcode:8 |
 *                  | nfields:16 | name_len:16 | name ... |
 *                  then nfields times | type:8 | format:8 | name_len:16 | name |
 *
 * Ids start at 1 and are dense within a kind. The library appends an entry,
 * then publishes `used` with a release store; it assigns an event's id only
 * after that, so a record carrying the id is always preceded (in memory
 * order) by its entry. The daemon copies entries verbatim into each segment
 * (segment.h), where the same parser reads them.
 *
 * Who writes what: everything here is written by the client and read by the
 * daemon; the daemon never writes into client memory except cons_pos and the
 * consumer block of rings (ring.h).
 */
#ifndef RINGLOG_PROTO_EVENT_H
#define RINGLOG_PROTO_EVENT_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

/* Ring record types above RINGLOG_REC_USER_MIN (ring.h). */
enum {
	RINGLOG_REC_EVENT     = 16, /* aux = event id; ts + fields */
	RINGLOG_REC_EVENT_ACT = 17, /* aux = event id; ts + activity id + fields */
};

#define RINGLOG_RING_CLOCK_TSC 0x1u /* compat flag: ts are TSC ticks */

/* Field types: the storage in the payload. */
enum ringlog_type {
	RINGLOG_TYPE_I8 = 1,
	RINGLOG_TYPE_I16,
	RINGLOG_TYPE_I32,
	RINGLOG_TYPE_I64,
	RINGLOG_TYPE_U8,
	RINGLOG_TYPE_U16,
	RINGLOG_TYPE_U32,
	RINGLOG_TYPE_U64,
	RINGLOG_TYPE_F64,
	RINGLOG_TYPE_BOOL,
	RINGLOG_TYPE_STR,  /* u16 len (bit 15 = truncated) + UTF-8 bytes */
	RINGLOG_TYPE_BLOB, /* u16 len + bytes */
	RINGLOG_TYPE_MAX_ = RINGLOG_TYPE_BLOB,
};

/* Display hints: how a reader shows a value; never changes the storage. */
enum ringlog_format {
	RINGLOG_FMT_DEFAULT = 0,
	RINGLOG_FMT_HEX,   /* integers as 0x... */
	RINGLOG_FMT_PID,   /* a process or thread id */
	RINGLOG_FMT_ERRNO, /* an errno value: shown with its name */
	RINGLOG_FMT_TIME,  /* nanoseconds since the Unix epoch, shown as UTC */
	RINGLOG_FMT_MAX_ = RINGLOG_FMT_TIME,
};

/* Event opcodes, as in ETW and EventHeader. */
enum ringlog_opcode {
	RINGLOG_OP_INFO = 0,
	RINGLOG_OP_START = 1,
	RINGLOG_OP_STOP = 2,
	RINGLOG_OP_MAX_ = RINGLOG_OP_STOP,
};

#define RINGLOG_STR_MAX        4096u    /* longer strings are truncated */
#define RINGLOG_STR_TRUNCATED  0x8000u  /* in a string's u16 length */
#define RINGLOG_BLOB_MAX       8192u    /* longer blobs are truncated */
#define RINGLOG_NAME_MAX       255u     /* provider, event and field names */
#define RINGLOG_FIELDS_MAX     32u
#define RINGLOG_EVENT_HDR_SIZE 8u       /* ts */
#define RINGLOG_ACTIVITY_SIZE  16u

/* ------------------------------------------------------------------------
 * Metadata region
 */
#define RINGLOG_META_MAGIC       0x54454d52u /* "RMET" */
#define RINGLOG_META_VERSION     1u
#define RINGLOG_META_HEADER_SIZE 64u
#define RINGLOG_META_MIN_SIZE    4096u

enum {
	RINGLOG_META_PROVIDER = 1,
	RINGLOG_META_EVENT = 2,
};

struct ringlog_meta_hdr {
	uint32_t magic;
	uint16_t version;
	uint16_t header_size;
	uint32_t size;       /* bytes of the whole region (== memfd size) */
	uint32_t used;       /* bytes of entries after the header; release-stored */
	uint16_t providers;  /* ids handed out so far, for quick checks */
	uint16_t events;
	uint32_t reserved0;
	uint64_t reserved[5];
};

struct ringlog_meta_entry {
	uint32_t len;  /* whole entry including this header, multiple of 8 */
	uint16_t kind;
	uint16_t id;
};

struct ringlog_meta_event {
	uint64_t keyword;
	uint16_t provider;
	uint8_t level;
	uint8_t opcode;
	uint16_t nfields;
	uint16_t name_len;
	/* name, then fields */
};

struct ringlog_meta_field {
	uint8_t type;
	uint8_t format;
	uint16_t name_len;
	/* name */
};

static_assert(sizeof(struct ringlog_meta_hdr) == RINGLOG_META_HEADER_SIZE, "meta header size");
static_assert(offsetof(struct ringlog_meta_hdr, magic) == 0, "meta magic");
static_assert(offsetof(struct ringlog_meta_hdr, version) == 4, "meta version");
static_assert(offsetof(struct ringlog_meta_hdr, header_size) == 6, "meta header_size");
static_assert(offsetof(struct ringlog_meta_hdr, size) == 8, "meta size");
static_assert(offsetof(struct ringlog_meta_hdr, used) == 12, "meta used");
static_assert(offsetof(struct ringlog_meta_hdr, providers) == 16, "meta providers");
static_assert(offsetof(struct ringlog_meta_hdr, events) == 18, "meta events");
static_assert(sizeof(struct ringlog_meta_entry) == 8, "meta entry size");
static_assert(offsetof(struct ringlog_meta_entry, len) == 0, "entry len");
static_assert(offsetof(struct ringlog_meta_entry, kind) == 4, "entry kind");
static_assert(offsetof(struct ringlog_meta_entry, id) == 6, "entry id");
static_assert(sizeof(struct ringlog_meta_event) == 16, "meta event size");
static_assert(offsetof(struct ringlog_meta_event, keyword) == 0, "event keyword");
static_assert(offsetof(struct ringlog_meta_event, provider) == 8, "event provider");
static_assert(offsetof(struct ringlog_meta_event, level) == 10, "event level");
static_assert(offsetof(struct ringlog_meta_event, opcode) == 11, "event opcode");
static_assert(offsetof(struct ringlog_meta_event, nfields) == 12, "event nfields");
static_assert(offsetof(struct ringlog_meta_event, name_len) == 14, "event name_len");
static_assert(sizeof(struct ringlog_meta_field) == 4, "meta field size");
static_assert(offsetof(struct ringlog_meta_field, type) == 0, "field type");
static_assert(offsetof(struct ringlog_meta_field, format) == 1, "field format");
static_assert(offsetof(struct ringlog_meta_field, name_len) == 2, "field name_len");

static inline size_t ringlog_align_up8(size_t v)
{
	return (v + 7) & ~(size_t)7;
}

#endif /* RINGLOG_PROTO_EVENT_H */
