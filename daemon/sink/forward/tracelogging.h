/* daemon/sink/forward/tracelogging.h - ringlog events as TraceLogging events, for Windows
 * ETW (daemon/sink/forward/fwd-etw.c).
 *
 * mingw-w64 has no TraceLoggingProvider.h, so the project builds the
 * metadata itself, from Microsoft's published description of the format
 * (the "Provider Traits" page of the ETW documentation, the TlgIn/TlgOut
 * type tables of TraceLoggingProvider.h as documented on learn.microsoft
 * .com, and "ETW provider names and GUIDs" for the GUID). Platform-neutral
 * and allocation-free, so it is unit-tested byte for byte on Linux.
 *
 * Provider. One ETW provider per ringlog provider. Its GUID is derived from
 * the name as TraceLoggingDynamic.h's GetGuidForName does (and EventSource,
 * tracelog and PerfView's "*Name"):
 *
 *   SHA-1( 48 2C 2D B2 C3 90 47 C8 87 F8 1A 15 BF C1 30 FB    namespace
 *          || UTF-16BE(upper-case(name)) )
 *   the first 16 bytes, byte 7 = (byte 7 & 0x0F) | 0x50,
 *   read as a GUID in Windows' in-memory (little-endian) order
 *
 * where the name's UTF-8 is decoded as CopyUtfCodePoint decodes it (a byte
 * that does not start a valid sequence is the Latin-1 character of its
 * value) and upper-cased per UTF-16 code unit with Windows' default casing
 * table (LCMapStringEx without LCMAP_LINGUISTIC_CASING; tlg-upcase.h).
 * Provider traits (EventSetInformation(EventProviderSetTraits) and, on
 * every event, an EVENT_DATA_DESCRIPTOR of type 2):
 *
 *   +--------------+----------------------+
 *   | size:16      | provider name, UTF-8 |  size counts itself; no traits
 *   +--------------+--------------- \0 ---+  (no provider group)
 *
 * Event metadata (an EVENT_DATA_DESCRIPTOR of type 1, before the payload):
 *
 *   +---------+------+--------------+-----------------------------------+
 *   | size:16 | tags | event name\0 | per field: name\0 intype:8        |
 *   |         | 00   |              |   [outtype:8 when intype & 0x80]  |
 *   +---------+------+--------------+-----------------------------------+
 *
 * size counts itself. The tags are a chain of 7-bit bytes, high bit "more
 * follows"; ringlog events carry none, which is the single byte 00. The
 * EVENT_DESCRIPTOR has Id 0, Version 0, Task 0, Channel 11 (TraceLogging's),
 * the event's level, opcode and keyword; the activity id travels as the
 * ActivityId of EventWriteTransfer.
 *
 * The first field, "emit_time_ns" (UINT64), is when the program emitted the
 * event, in nanoseconds since the Unix epoch; ETW's own timestamp is the
 * time of forwarding. Field types map as follows, only to the InType +
 * OutType combinations of TraceLoggingDynamic.h's Type enum (the ones
 * winmeta.xml defines and TDH, WPA and xperf decode; outtype only where it
 * is not the intype's default):
 *
 *   ringlog            intype                     outtype
 *   i8/i16/i32/i64     INT8/16/32/64  (3 5 7 9)
 *   u8/u16/u32/u64     UINT8/16/32/64 (4 6 8 10)
 *     hint hex 8/16    UINT8/UINT16 (4 6)         HEX (4)       TypeHexInt8/16
 *     hint hex 32/64   HEXINT32/HEXINT64 (20 21)                TypeHexInt32/64
 *     hint pid         UINT32 (8)                 PID (5)       TypePid, 32-bit
 *                                                               only
 *     hint errno       same                       (none: errno values are
 *                                                 not Win32 error codes)
 *     hint time        UINT64                     (none: nanoseconds, not a
 *                                                 FILETIME)
 *   double             DOUBLE (12)
 *   bool               UINT8 (4)                  BOOLEAN (3)
 *   string             COUNTEDANSISTRING (23)     UTF8 (35)
 *   blob               BINARY (14)                (hex by default)
 *
 * Payload: emit_time_ns, then the fields exactly as ringlog stores them
 * (strings and blobs are a u16 byte count and the bytes in both formats),
 * except that a string's count loses ringlog's truncation bit.
 */
#ifndef RINGLOG_PROTO_TRACELOGGING_H
#define RINGLOG_PROTO_TRACELOGGING_H

#include <stddef.h>
#include <stdint.h>

#include "meta.h"

enum {
	RINGLOG_TLG_CHANNEL = 11,

	RINGLOG_TLG_IN_INT8 = 3,
	RINGLOG_TLG_IN_UINT8 = 4,
	RINGLOG_TLG_IN_INT16 = 5,
	RINGLOG_TLG_IN_UINT16 = 6,
	RINGLOG_TLG_IN_INT32 = 7,
	RINGLOG_TLG_IN_UINT32 = 8,
	RINGLOG_TLG_IN_INT64 = 9,
	RINGLOG_TLG_IN_UINT64 = 10,
	RINGLOG_TLG_IN_DOUBLE = 12,
	RINGLOG_TLG_IN_BINARY = 14,
	RINGLOG_TLG_IN_HEXINT32 = 20,
	RINGLOG_TLG_IN_HEXINT64 = 21,
	RINGLOG_TLG_IN_COUNTEDANSISTRING = 23,
	RINGLOG_TLG_IN_CHAIN = 0x80, /* an outtype byte follows */

	RINGLOG_TLG_OUT_BOOLEAN = 3,
	RINGLOG_TLG_OUT_HEX = 4,
	RINGLOG_TLG_OUT_PID = 5,
	RINGLOG_TLG_OUT_UTF8 = 35,

	/* EVENT_DATA_DESCRIPTOR.Type: the low byte of the field mingw-w64's
	 * older evntprov.h still calls Reserved */
	RINGLOG_TLG_DESC_EVENT_METADATA = 1,
	RINGLOG_TLG_DESC_PROVIDER_METADATA = 2,
	/* EVENT_INFO_CLASS EventProviderSetTraits, missing from mingw-w64 */
	RINGLOG_TLG_INFO_SET_TRAITS = 2,
};

#define RINGLOG_TLG_TIME_FIELD "emit_time_ns"
/* Upper bounds, from RINGLOG_NAME_MAX and RINGLOG_FIELDS_MAX. */
#define RINGLOG_TLG_TRAITS_MAX (2 + RINGLOG_NAME_MAX + 1)
#define RINGLOG_TLG_META_MAX \
	(3 + (RINGLOG_NAME_MAX + 1) * (RINGLOG_FIELDS_MAX + 1) + 2 * RINGLOG_FIELDS_MAX + \
	 sizeof(RINGLOG_TLG_TIME_FIELD) + 1)

/* The provider GUID for name (UTF-8; invalid bytes count as Latin-1, as in
 * GetGuidForName), as the 16 bytes of a Windows GUID in memory. */
void ringlog_tlg_provider_guid(uint8_t guid[16], const char *name);

/* The GUID as text, "{xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx}" (39 bytes with
 * the NUL), as Windows tools print it. */
void ringlog_tlg_guid_string(char out[39], const uint8_t guid[16]);

/* The provider traits for name. Returns the length, or -ENOSPC when cap is
 * too small or the name would make them longer than 65535 bytes. */
long ringlog_tlg_traits(uint8_t *out, size_t cap, const char *name);

/* The event metadata for e. Returns the length or -ENOSPC. */
long ringlog_tlg_metadata(uint8_t *out, size_t cap, const struct ringlog_event_desc *e);

/* The payload: emit_time_ns and the fields (the record's bytes after ts and
 * activity, validated against e). Returns the length, -ENOSPC when cap is
 * too small, -EBADMSG when the fields do not match e. */
long ringlog_tlg_payload(uint8_t *out, size_t cap, const struct ringlog_event_desc *e,
			 uint64_t emit_time_ns, const uint8_t *fields, size_t fields_len);

#endif /* RINGLOG_PROTO_TRACELOGGING_H */
