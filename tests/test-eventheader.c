/* tests/test-eventheader.c - the EventHeader encoder, byte for byte.
 *
 * Every expected byte below is written from Microsoft's code
 * (microsoft/LinuxTracepoints, libeventheader-tracepoint), not from the
 * encoder's output:
 * - include/eventheader/eventheader.h: header flags 0x07
 *   (eventheader_flag_default_with_extension on x86-64: pointer64 |
 *   little_endian | extension), extension kinds 1 (metadata) and 2
 *   (activity id) with chain flag 0x8000, encodings value8=2, value16=3,
 *   value32=4, value64=5, string_length16_char8=10 with chain flag 0x80,
 *   formats signed_int=2, hex_int=3, errno=4, pid=5, boolean=7, float=8,
 *   hex_bytes=9; EVENTHEADER_COMMAND_TYPES and EVENTHEADER_FORMAT_COMMAND
 *   ("%s_L%xK%" PRIx64 "%s %s") for the registration string.
 * - src/eventheader-tracepoint.c eventheader_write() as EventHeaderDynamic.h's
 *   EventBuilder::Write() calls it: the activity-id extension first, kind
 *   activity_id | chain_flag, size 16, then the metadata extension, kind
 *   metadata without the chain flag, then the data.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <string.h>

#include "eventheader.h"

static void expect_bytes(const uint8_t *got, long n, const uint8_t *want, size_t wn)
{
	cr_assert_eq(n, (long)wn, "length %ld, expected %zu", n, wn);
	for (size_t i = 0; i < wn; i++)
		cr_assert_eq(got[i], want[i], "byte %zu: 0x%02x, expected 0x%02x", i, got[i], want[i]);
}

Test(eventheader, tracepoint_names_follow_the_convention)
{
	char b[RINGLOG_EH_NAME_MAX], big[400];

	cr_expect_eq(ringlog_eh_name(b, sizeof(b), "Acme.Net", 4, 0x1f), 14);
	cr_expect_str_eq(b, "Acme_Net_L4K1f");
	/* lowercase hex, no leading zeros, keyword 0 is "K0" */
	ringlog_eh_name(b, sizeof(b), "P", 5, 0);
	cr_expect_str_eq(b, "P_L5K0");
	ringlog_eh_name(b, sizeof(b), "P", 1, 0xABCDEF0123456789ull);
	cr_expect_str_eq(b, "P_L1Kabcdef0123456789");
	/* anything outside [A-Za-z0-9_] becomes '_', byte by byte (UTF-8 too) */
	ringlog_eh_name(b, sizeof(b), "my svc:x-1/\xc3\xa9_Z9", 2, 0x2);
	cr_expect_str_eq(b, "my_svc_x_1____Z9_L2K2");
	/* the whole name must stay under 256 bytes with its NUL */
	memset(big, 'a', sizeof(big));
	big[255 - 6] = 0; /* + "_L1K1" = 254 characters */
	cr_expect_eq(ringlog_eh_name(b, sizeof(b), big, 1, 1), 254);
	big[255 - 6] = 'a';
	big[256 - 6] = 0; /* 255 characters: the longest */
	cr_expect_eq(ringlog_eh_name(b, sizeof(b), big, 1, 1), 255);
	big[256 - 6] = 'a';
	big[257 - 6] = 0; /* 256 characters: no room for the NUL */
	cr_expect_eq(ringlog_eh_name(b, sizeof(b), big, 1, 1), -ENAMETOOLONG);
	big[257 - 6] = 'a';
	big[sizeof(big) - 1] = 0;
	cr_expect_eq(ringlog_eh_name(b, sizeof(b), big, 1, 1), -ENAMETOOLONG);
	cr_expect_eq(ringlog_eh_name(b, sizeof(b), "", 1, 1), -ENAMETOOLONG);
	cr_expect_eq(ringlog_eh_name(b, 8, "Provider", 1, 1), -ENAMETOOLONG);
}

Test(eventheader, command_string_declares_the_header_fields)
{
	char c[RINGLOG_EH_COMMAND_MAX];

	/* EVENTHEADER_FORMAT_COMMAND(command, max, "Acme_Net", 4, 0x1f, NULL)
	 * of eventheader.h (LinuxTracepoints >= v1.3.3): the name, one space,
	 * EVENTHEADER_COMMAND_TYPES with "; " between the fields. Without the
	 * spaces, kernels that split the list on whitespace refuse to register
	 * the tracepoint again (EADDRINUSE) after a daemon restart. */
	static const char want[] = "Acme_Net_L4K1f u8 eventheader_flags; u8 version; u16 id; "
				   "u16 tag; u8 opcode; u8 level";

	cr_expect_eq(ringlog_eh_command(c, sizeof(c), "Acme_Net_L4K1f"), (int)sizeof(want) - 1);
	cr_expect_str_eq(c, want);
	cr_expect_eq(ringlog_eh_command(c, sizeof(want) - 1, "Acme_Net_L4K1f"), -ENAMETOOLONG);
	cr_expect_eq(ringlog_eh_command(c, 20, "Acme_Net_L4K1f"), -ENAMETOOLONG);
	/* the longest name (255) still fits: EVENTHEADER_COMMAND_MAX */
	char name[RINGLOG_EH_NAME_MAX];

	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = 0;
	cr_expect_eq(ringlog_eh_command(c, sizeof(c), name), (int)(255 + 1 + strlen(want + 15)));
}

#define F(t, fmt, n) { RINGLOG_TYPE_##t, RINGLOG_FMT_##fmt, (char *)(n) }

Test(eventheader, metadata_maps_every_field_type)
{
	struct ringlog_field_desc f[] = {
		F(I8, DEFAULT, "a"),  F(I16, DEFAULT, "b"), F(I32, DEFAULT, "c"),
		F(I64, DEFAULT, "d"), F(U8, DEFAULT, "e"),  F(U16, DEFAULT, "f"),
		F(U32, DEFAULT, "g"), F(U64, DEFAULT, "h"), F(F64, DEFAULT, "x"),
		F(BOOL, DEFAULT, "ok"), F(STR, DEFAULT, "s"), F(BLOB, DEFAULT, "bin"),
		F(U32, HEX, "hx"),    F(I32, PID, "pid"),   F(I32, ERRNO, "err"),
		F(U64, TIME, "t"),    F(U64, HEX, "hx64"),  F(I64, PID, "p64"),
		F(U8, HEX, "h8"),     F(STR, DEFAULT, "semi;colon"),
	};
	struct ringlog_event_desc e = { .name = (char *)"Conn;ect", .fields = f,
					.nfields = sizeof(f) / sizeof(f[0]) };
	static const uint8_t want[] = {
		'C', 'o', 'n', 'n', '_', 'e', 'c', 't', 0,
		'e', 'm', 'i', 't', '_', 't', 'i', 'm', 'e', '_', 'n', 's', 0, 0x05,
		'a', 0, 0x82, 0x02,           /* value8, signed_int */
		'b', 0, 0x83, 0x02,
		'c', 0, 0x84, 0x02,
		'd', 0, 0x85, 0x02,
		'e', 0, 0x02,                 /* value8, default (unsigned) */
		'f', 0, 0x03,
		'g', 0, 0x04,
		'h', 0, 0x05,
		'x', 0, 0x85, 0x08,           /* value64, float */
		'o', 'k', 0, 0x82, 0x07,      /* value8, boolean */
		's', 0, 0x0a,                 /* string_length16_char8, utf-8 */
		'b', 'i', 'n', 0, 0x8a, 0x09, /* string_length16_char8, hex_bytes */
		'h', 'x', 0, 0x84, 0x03,      /* value32, hex_int */
		'p', 'i', 'd', 0, 0x84, 0x05, /* value32, pid */
		'e', 'r', 'r', 0, 0x84, 0x04, /* value32, errno */
		't', 0, 0x05,                 /* ns since 1970: plain u64 */
		'h', 'x', '6', '4', 0, 0x85, 0x03,
		'p', '6', '4', 0, 0x85, 0x02, /* pid is 32-bit only: signed */
		'h', '8', 0, 0x82, 0x03,
		's', 'e', 'm', 'i', '_', 'c', 'o', 'l', 'o', 'n', 0, 0x0a,
	};
	uint8_t out[RINGLOG_EH_META_MAX];

	expect_bytes(out, ringlog_eh_metadata(out, sizeof(out), &e), want, sizeof(want));
	for (size_t cap = 0; cap < sizeof(want); cap++)
		cr_assert_eq(ringlog_eh_metadata(out, cap, &e), -ENOSPC, "cap %zu", cap);
}

static struct ringlog_field_desc conn_fields[] = {
	F(U16, DEFAULT, "port"), F(STR, DEFAULT, "host"), F(BLOB, DEFAULT, "b"),
};
static struct ringlog_event_desc conn = { .name = (char *)"E", .level = 3, .opcode = 1,
					  .fields = conn_fields, .nfields = 3 };
/* ringlog payload: port 0x1234, "ab" flagged truncated, blob de ad */
static const uint8_t conn_payload[] = { 0x34, 0x12, 0x02, 0x80, 'a', 'b', 0x02, 0x00, 0xde, 0xad };

Test(eventheader, event_with_activity_chains_activity_then_metadata_as_eventheader_write)
{
	uint8_t meta[64], out[256], act[16];
	long mlen = ringlog_eh_metadata(meta, sizeof(meta), &conn);
	/* eventheader_write(): headers[] is the eventheader, then (pActivityId
	 * set) an extension {size 16, kind activity_id | chain_flag} because
	 * the event has metadata (EventBuilder sets the extension flag), and
	 * the id; then EventBuilder::Write's metadataExt {size, kind metadata}
	 * and the metadata; then the data. */
	static const uint8_t want[] = {
		0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x03, /* flags ver id tag op level */
		0x10, 0x00, 0x02, 0x80,                         /* activity id, chained */
		0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
		32, 0x00, 0x01, 0x00,                           /* metadata, last */
		'E', 0, 'e', 'm', 'i', 't', '_', 't', 'i', 'm', 'e', '_', 'n', 's', 0, 0x05,
		'p', 'o', 'r', 't', 0, 0x03, 'h', 'o', 's', 't', 0, 0x0a, 'b', 0, 0x8a, 0x09,
		0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, /* emit_time_ns */
		0x34, 0x12, 0x02, 0x00, 'a', 'b', 0x02, 0x00, 0xde, 0xad,
	};

	cr_assert_eq(mlen, 32);
	for (int i = 0; i < 16; i++)
		act[i] = (uint8_t)i;
	expect_bytes(out, ringlog_eh_event(out, sizeof(out), &conn, meta, (size_t)mlen, act,
					   0x0102030405060708ull, conn_payload, sizeof(conn_payload)),
		     want, sizeof(want));
	for (size_t cap = 0; cap < sizeof(want); cap++)
		cr_assert_eq(ringlog_eh_event(out, cap, &conn, meta, (size_t)mlen, act, 1,
					      conn_payload, sizeof(conn_payload)),
			     -ENOSPC, "cap %zu", cap);
}

Test(eventheader, event_without_activity_ends_the_chain_at_metadata)
{
	uint8_t meta[64], out[256];
	long mlen = ringlog_eh_metadata(meta, sizeof(meta), &conn);
	long n = ringlog_eh_event(out, sizeof(out), &conn, meta, (size_t)mlen, NULL, 5,
				  conn_payload, sizeof(conn_payload));

	/* EventBuilder::Write without an activity id: the header (extension
	 * flag set), the metadata extension alone, unchained */
	static const uint8_t head[] = { 0x07, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x03,
					32, 0x00, 0x01, 0x00 };

	cr_assert_eq(n, 8 + 4 + 32 + 8 + 10);
	expect_bytes(out, sizeof(head), head, sizeof(head));
	cr_expect_eq(memcmp(out + 12, meta, 32), 0);
	cr_expect_eq(out[44], 5);
}

Test(eventheader, payloads_that_do_not_match_the_fields_are_refused)
{
	uint8_t meta[64], out[256], bad[sizeof(conn_payload) + 1];
	long mlen = ringlog_eh_metadata(meta, sizeof(meta), &conn);

	/* too short, a length past the end, bytes left over */
	cr_expect_eq(ringlog_eh_event(out, sizeof(out), &conn, meta, (size_t)mlen, NULL, 0,
				      conn_payload, 1), -EBADMSG);
	memcpy(bad, conn_payload, sizeof(conn_payload));
	bad[6] = 0x09;
	cr_expect_eq(ringlog_eh_event(out, sizeof(out), &conn, meta, (size_t)mlen, NULL, 0, bad,
				      sizeof(conn_payload)), -EBADMSG);
	memcpy(bad, conn_payload, sizeof(conn_payload));
	cr_expect_eq(ringlog_eh_event(out, sizeof(out), &conn, meta, (size_t)mlen, NULL, 0, bad,
				      sizeof(bad)), -EBADMSG);
}
