/* daemon/sink/forward/eventheader.h - ringlog events in Microsoft's EventHeader encoding,
 * for Linux user_events (daemon/sink/forward/fwd-user-events.c).
 *
 * Written from the published format: Linux Documentation/trace/
 * user_events.rst (registration, the write index) and eventheader.h of
 * microsoft/LinuxTracepoints (names, header, extensions, field encodings).
 * Platform-neutral and allocation-free, so it is unit-tested byte for byte.
 *
 * One tracepoint carries every event of a provider with the same level and
 * keyword; its name says which:
 *
 *   <Provider>_L<level hex>K<keyword hex>      e.g. Acme_Net_L4K1f
 *
 * the provider name reduced to [A-Za-z0-9_] (anything else becomes '_'),
 * level and keyword in lowercase hex without leading zeros. Microsoft's
 * provider keeps the name as given (only ' ' and ':' are forbidden); we
 * reduce it because perf 6.1 (Debian 12) cannot record "Acme.Net_L4K1"
 * (`perf record -e user_events:Acme.Net_L4K1` crashes in libtraceevent on
 * the test kernel, and '-', '+', '@', ',', non-ASCII... are parse errors;
 * tracefs takes them all but '/'), and eventheader.h itself recommends
 * [A-Za-z0-9_]. Two providers that reduce to the same name would share
 * tracepoints, so the daemon forwards only the first of them
 * (fwd-user-events.c). The kernel command string declares the header as
 * the tracepoint's fields, which is how a decoder recognises an
 * EventHeader tracepoint; it is EVENTHEADER_COMMAND_TYPES of eventheader.h
 * byte for byte, "; " between fields (LinuxTracepoints v1.3.3: kernels
 * that split the field list on whitespace to detect "already registered"
 * refuse a second registration of a tracepoint with EADDRINUSE otherwise):
 *
 *   "<name> u8 eventheader_flags; u8 version; u16 id; u16 tag; u8 opcode; u8 level"
 *
 * An event as written (after the 4-byte write index user_events wants), in
 * the order eventheader_write() writes it: the activity id first, chained,
 * then the metadata, which ends the chain:
 *
 *   +-------------------------------------------------------------+
 *   | eventheader 8: flags=07 version=0 id=0 tag=0 opcode level   |
 *   +-------------------------------------------------------------+
 *   | extension: size=16 kind=ACTIVITY_ID | CHAIN, the 16-byte id |  EVENT_ACT
 *   +-------------------------------------------------------------+
 *   | extension: size:16 kind:16 = METADATA                       |
 *   |   event name \0                                             |
 *   |   per field: name \0, encoding:8 [| 0x80], [format:8]       |
 *   +-------------------------------------------------------------+
 *   | payload: emit_time_ns:64, then the fields                   |
 *   +-------------------------------------------------------------+
 *
 * The first field, "emit_time_ns", is when the program emitted the event
 * (nanoseconds since the Unix epoch); the kernel's own timestamp is the
 * time of forwarding. Field types map as follows (format byte only where
 * it is not the encoding's default):
 *
 *   ringlog            encoding                format
 *   i8/i16/i32/i64     value8/16/32/64         signed_int
 *   u8/u16/u32/u64     value8/16/32/64         (unsigned)
 *     hint hex         same                    hex_int
 *     hint pid/errno   value32                 pid / errno   (32-bit only)
 *     hint time        value64                 (unsigned)    EventHeader's
 *                      "time" is seconds; ours are nanoseconds and would
 *                      be misread, so they travel as a plain u64
 *   double             value64                 float
 *   bool               value8                  boolean
 *   string             string_length16_char8   (utf-8)   truncation bit
 *                                              cleared from the length
 *   blob               string_length16_char8   hex_bytes
 *
 * Names may not contain ';' in EventHeader (it starts attributes): such
 * characters become '_'.
 */
#ifndef RINGLOG_PROTO_EVENTHEADER_H
#define RINGLOG_PROTO_EVENTHEADER_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

#include "meta.h"

struct ringlog_eh_header {
	uint8_t flags;
	uint8_t version;
	uint16_t id;
	uint16_t tag;
	uint8_t opcode;
	uint8_t level;
};
static_assert(sizeof(struct ringlog_eh_header) == 8, "eventheader size");
static_assert(offsetof(struct ringlog_eh_header, flags) == 0, "eventheader flags");
static_assert(offsetof(struct ringlog_eh_header, version) == 1, "eventheader version");
static_assert(offsetof(struct ringlog_eh_header, id) == 2, "eventheader id");
static_assert(offsetof(struct ringlog_eh_header, tag) == 4, "eventheader tag");
static_assert(offsetof(struct ringlog_eh_header, opcode) == 6, "eventheader opcode");
static_assert(offsetof(struct ringlog_eh_header, level) == 7, "eventheader level");

struct ringlog_eh_extension {
	uint16_t size; /* bytes of data after this block */
	uint16_t kind;
};
static_assert(sizeof(struct ringlog_eh_extension) == 4, "extension size");
static_assert(offsetof(struct ringlog_eh_extension, kind) == 2, "extension kind");

enum {
	RINGLOG_EH_FLAG_POINTER64 = 0x01,
	RINGLOG_EH_FLAG_LITTLE_ENDIAN = 0x02,
	RINGLOG_EH_FLAG_EXTENSION = 0x04,

	RINGLOG_EH_EXT_METADATA = 1,
	RINGLOG_EH_EXT_ACTIVITY_ID = 2,
	RINGLOG_EH_EXT_CHAIN = 0x8000,

	RINGLOG_EH_ENC_VALUE8 = 2,
	RINGLOG_EH_ENC_VALUE16 = 3,
	RINGLOG_EH_ENC_VALUE32 = 4,
	RINGLOG_EH_ENC_VALUE64 = 5,
	RINGLOG_EH_ENC_STRING_LENGTH16_CHAR8 = 10,
	RINGLOG_EH_ENC_CHAIN = 0x80, /* a format byte follows */

	RINGLOG_EH_FMT_SIGNED_INT = 2,
	RINGLOG_EH_FMT_HEX_INT = 3,
	RINGLOG_EH_FMT_ERRNO = 4,
	RINGLOG_EH_FMT_PID = 5,
	RINGLOG_EH_FMT_BOOLEAN = 7,
	RINGLOG_EH_FMT_FLOAT = 8,
	RINGLOG_EH_FMT_HEX_BYTES = 9,
};

#define RINGLOG_EH_NAME_MAX 256 /* tracepoint name with its NUL */
#define RINGLOG_EH_COMMAND_TYPES \
	"u8 eventheader_flags; u8 version; u16 id; u16 tag; u8 opcode; u8 level"
#define RINGLOG_EH_COMMAND_MAX (RINGLOG_EH_NAME_MAX + sizeof(RINGLOG_EH_COMMAND_TYPES))
#define RINGLOG_EH_TIME_FIELD "emit_time_ns"
/* The metadata extension's data is at most this long: name and fields are
 * bounded by RINGLOG_NAME_MAX and RINGLOG_FIELDS_MAX. */
#define RINGLOG_EH_META_MAX \
	((RINGLOG_NAME_MAX + 1) * (RINGLOG_FIELDS_MAX + 1) + 3 * RINGLOG_FIELDS_MAX + \
	 sizeof(RINGLOG_EH_TIME_FIELD) + 1)

/* The tracepoint name for (provider, level, keyword) into out (cap bytes
 * with the NUL). Returns its length, or -ENAMETOOLONG. */
int ringlog_eh_name(char *out, size_t cap, const char *provider, uint8_t level, uint64_t keyword);

/* The DIAG_IOCSREG command string for a tracepoint name. Returns its length
 * or -ENAMETOOLONG. */
int ringlog_eh_command(char *out, size_t cap, const char *name);

/* The data of an event's METADATA extension (without the 4-byte extension
 * header). Returns its length or -ENOSPC when cap is too small. */
long ringlog_eh_metadata(uint8_t *out, size_t cap, const struct ringlog_event_desc *e);

/* A whole event: header, the activity extension when act is not NULL, the
 * metadata extension (meta, meta_len bytes, as built by
 * ringlog_eh_metadata), the emit time and the fields of a ringlog payload (fields: the
 * record's bytes after ts and activity, already validated against e).
 * Returns the length written, -ENOSPC when cap is too small, -EBADMSG when
 * the fields do not match e. */
long ringlog_eh_event(uint8_t *out, size_t cap, const struct ringlog_event_desc *e,
		      const uint8_t *meta, size_t meta_len, const uint8_t act[16],
		      uint64_t emit_time_ns, const uint8_t *fields, size_t fields_len);

#endif /* RINGLOG_PROTO_EVENTHEADER_H */
