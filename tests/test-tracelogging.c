/* tests/test-tracelogging.c - the TraceLogging (ETW) encoder, byte for byte.
 *
 * Every expected byte below is written from Microsoft's code and
 * documentation, not from the encoder's output. TraceLoggingDynamic.h
 * (microsoft/tracelogging, etw/cpp/traceloggingdynamic): provider traits
 * are a u16 total size and the UTF-8 name with its NUL
 * (ProviderMetadataBuilder); event metadata is a u16 total size, the tag
 * chain (one 0x00 byte for no tags), the event name and per field its
 * name, an intype with chain bit 0x80 and then an outtype
 * (EventMetadataBuilder::AddFieldInfo); the InType enum counts INT8=3
 * UINT8=4 INT16=5 UINT16=6 INT32=7 UINT32=8 INT64=9 UINT64=10 DOUBLE=12
 * BINARY=14 HEXINT32=20 HEXINT64=21 COUNTEDANSISTRING=23, OutType BOOLEAN=3
 * HEX=4 PID=5 UTF8=35, and each field uses one of the Type enum's
 * combinations (TypeHexInt8 = UINT8 + HEX, TypeHexInt16 = UINT16 + HEX,
 * TypeHexInt32 = HEXINT32, TypeHexInt64 = HEXINT64, TypePid = UINT32 + PID,
 * TypeBool8, TypeCountedUtf8String, TypeBinary). Provider GUIDs: see
 * provider_guids_are_computed_as_GetGuidForName_does.
 */
#include <criterion/criterion.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "sha1.h"
#include "tracelogging.h"

static void expect_bytes(const uint8_t *got, long n, const uint8_t *want, size_t wn)
{
	cr_assert_eq(n, (long)wn, "length %ld, expected %zu", n, wn);
	for (size_t i = 0; i < wn; i++)
		cr_assert_eq(got[i], want[i], "byte %zu: 0x%02x, expected 0x%02x", i, got[i], want[i]);
}

static void sha1_hex(char out[41], const void *p, size_t n)
{
	struct ringlog_sha1 s;
	uint8_t d[20];

	ringlog_sha1_init(&s);
	ringlog_sha1_update(&s, p, n);
	ringlog_sha1_final(&s, d);
	for (int i = 0; i < 20; i++)
		sprintf(out + 2 * i, "%02x", d[i]);
}

Test(tracelogging, sha1_matches_the_fips_180_test_vectors)
{
	static const char two_blocks[] = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	char hex[41];
	struct ringlog_sha1 s;
	uint8_t d[20], a[1000];

	sha1_hex(hex, "", 0);
	cr_expect_str_eq(hex, "da39a3ee5e6b4b0d3255bfef95601890afd80709");
	sha1_hex(hex, "abc", 3);
	cr_expect_str_eq(hex, "a9993e364706816aba3e25717850c26c9cd0d89d");
	sha1_hex(hex, two_blocks, sizeof(two_blocks) - 1);
	cr_expect_str_eq(hex, "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
	/* a million 'a', fed in uneven pieces */
	memset(a, 'a', sizeof(a));
	ringlog_sha1_init(&s);
	for (size_t left = 1000000, k = 1; left; k = k * 7 % 997 + 1) {
		size_t n = k < left ? k : left;

		ringlog_sha1_update(&s, a, n);
		left -= n;
	}
	ringlog_sha1_final(&s, d);
	for (int i = 0; i < 20; i++)
		sprintf(hex + 2 * i, "%02x", d[i]);
	cr_expect_str_eq(hex, "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
}

static void expect_guid(const char *name, const char *want)
{
	uint8_t g[16];
	char s[39];

	ringlog_tlg_provider_guid(g, name);
	ringlog_tlg_guid_string(s, g);
	cr_expect_str_eq(s, want, "provider \"%s\": %s, expected %s", name, s, want);
}

Test(tracelogging, provider_guids_of_ascii_names_are_microsofts)
{
	/* printed beside their names in Microsoft's TraceLogging examples */
	expect_guid("SimpleTraceLoggingProvider", "{0205c616-cf97-5c11-9756-56a2cee02ca7}");
	expect_guid("MyCompany.MyComponent", "{ce5fa4ea-ab00-5402-8b76-9f76ac858fb5}");
	/* microsoft/tracelogging etw/rust/tracelogging/src/guid.rs, the doc
	 * example of Guid::from_name */
	expect_guid("MyProvider", "{b3864c38-4273-58c5-545b-8b3608343471}");
	/* ETW provider names are case-insensitive */
	expect_guid("simpletraceloggingprovider", "{0205c616-cf97-5c11-9756-56a2cee02ca7}");
	expect_guid("MYCOMPANY.MYCOMPONENT", "{ce5fa4ea-ab00-5402-8b76-9f76ac858fb5}");
}

/* The expected GUIDs below were computed outside this project by a line-by-
 * line transcription of TraceLoggingDynamic.h's GetGuidForNameImpl<char>
 * (microsoft/tracelogging, etw/cpp/traceloggingdynamic): CopyUtfCodePoint's
 * UTF-8 decoding (MSVC's signed char included), its 16-unit buffer flushed
 * through LCMapStringEx(LOCALE_NAME_INVARIANT, LCMAP_UPPERCASE |
 * LCMAP_BYTEREV), Sha1ForNonSecretPurposes (as Python's hashlib), byte 7's
 * version nibble. LCMapStringEx was played by Windows' default casing as
 * tlg-upcase.h describes it (the one Windows fact the transcription could
 * not take from Microsoft's code). "caf\xc3\xa9" giving {99f70672-...} is
 * the value issue 21 reports from Microsoft's code. */
Test(tracelogging, provider_guids_of_non_ascii_names_are_computed_as_GetGuidForName_does)
{
	/* every character upper-cased, not only ASCII: café = CAFÉ */
	expect_guid("caf\xc3\xa9", "{99f70672-2dd0-5c54-15f1-e7c7098bfd73}");
	expect_guid("CAF\xc3\x89", "{99f70672-2dd0-5c54-15f1-e7c7098bfd73}");
	/* 17 characters: upper-cased across the 16-unit batches; ß has no
	 * one-character capital and stays */
	expect_guid("Gr\xc3\xb6\xc3\x9f" "e.\xc3\x9c" "berwachung",
		    "{911d9761-143c-56a9-0a3f-7587fa55736a}");
	expect_guid("\xd0\x9f\xd1\x80\xd0\xb8\xd0\xb2\xd0\xb5\xd1\x82.\xd0\x9c\xd0\xb8\xd1\x80",
		    "{9a482502-0ddb-558d-a115-24c9c77c0899}"); /* Привет.Мир */
	/* ÿ's capital Ÿ is outside Latin-1 */
	expect_guid("\xc3\xbf", "{ee37c335-0601-5b3b-97ca-b9d921a22865}");
	expect_guid("\xc5\xb8", "{ee37c335-0601-5b3b-97ca-b9d921a22865}");
	/* the final sigma is upper-cased; long s and micro sign are not
	 * (one-way mappings stay out of Windows' default table) */
	expect_guid("\xcf\x82", "{b7522712-f387-5e6e-52bb-062e53c36de9}");
	expect_guid("\xce\xa3", "{b7522712-f387-5e6e-52bb-062e53c36de9}");
	expect_guid("\xc5\xbf", "{a059609f-5646-5447-46c7-53f5d0bfffca}");
	expect_guid("S", "{6be13785-6964-56a1-3201-8beffe6200e9}");
	expect_guid("\xc2\xb5", "{66c2a766-30f6-50fa-7f8c-2ee43474896e}");
	expect_guid("\xce\x9c", "{ad868b4e-0028-55fc-b348-ca06a37d78b9}");
	/* beyond the BMP: a surrogate pair, never upper-cased (Deseret small
	 * letter long i is not its capital) */
	expect_guid("x\xf0\x9f\x98\x80", "{88ae18f9-ee2d-5719-12c2-8ddfbcbfc784}");
	expect_guid("\xf0\x90\x90\xa8", "{fa8d52b4-76f3-5ddc-6eef-fdb3fb88d199}");
	expect_guid("\xf0\x90\x90\x80", "{643d2f5d-9e7b-5b57-0081-061178a35816}");
}

Test(tracelogging, provider_guids_of_invalid_utf8_are_computed_as_GetGuidForName_does)
{
	/* a byte that starts no valid sequence is the Latin-1 character of its
	 * value: CP1252 "caf\xe9" is café */
	expect_guid("caf\xe9", "{99f70672-2dd0-5c54-15f1-e7c7098bfd73}");
	/* a sequence cut by the end: U+00C3 */
	expect_guid("caf\xc3", "{9dcc8888-2043-5197-3c51-f7729c6f9977}");
	/* a stray 0xFF after valid text: U+00FF, upper-cased to U+0178 */
	expect_guid("caf\xc3\xa9\xff", "{3d9af9dc-1ec0-5a0e-06fb-d1a2dbf4d1d2}");
	/* an overlong NUL: U+00C0 then U+0080 */
	expect_guid("\xc0\x80x", "{fa191171-0506-590e-3cdd-b348a0389fd2}");
	/* a surrogate in three bytes passes as a lone code unit */
	expect_guid("a\xed\xa0\x80" "b", "{c74832dc-2126-582a-3546-a58d5f3b656a}");
	/* past U+10FFFF, and a five-byte form: byte by byte */
	expect_guid("\xf4\x90\x80\x80", "{97d6b62b-93d6-5e01-06a5-031a76d5acef}");
	expect_guid("\xf8\x88\x80\x80\x80", "{b420527f-df20-5b6d-5538-1e5f814b3df2}");
}

Test(tracelogging, guid_layout_is_windows_in_memory_order)
{
	static const uint8_t g[16] = { 0x16, 0xc6, 0x05, 0x02, 0x97, 0xcf, 0x11, 0x5c,
				       0x97, 0x56, 0x56, 0xa2, 0xce, 0xe0, 0x2c, 0xa7 };
	uint8_t got[16];

	ringlog_tlg_provider_guid(got, "SimpleTraceLoggingProvider");
	expect_bytes(got, 16, g, sizeof(g));
	/* version nibble 5 in Data3's high byte, for any name */
	ringlog_tlg_provider_guid(got, "x");
	cr_expect_eq(got[7] >> 4, 5);
}

Test(tracelogging, provider_traits_are_the_size_and_the_name)
{
	static const uint8_t want[] = { 0x0b, 0x00, 'A', 'c', 'm', 'e', '.', 'N', 'e', 't', 0 };
	uint8_t out[RINGLOG_TLG_TRAITS_MAX];

	expect_bytes(out, ringlog_tlg_traits(out, sizeof(out), "Acme.Net"), want, sizeof(want));
	for (size_t cap = 0; cap < sizeof(want); cap++)
		cr_assert_eq(ringlog_tlg_traits(out, cap, "Acme.Net"), -ENOSPC, "cap %zu", cap);
}

#define F(t, fmt, n) { RINGLOG_TYPE_##t, RINGLOG_FMT_##fmt, (char *)(n) }

Test(tracelogging, metadata_maps_every_field_type)
{
	struct ringlog_field_desc f[] = {
		F(I8, DEFAULT, "a"),  F(I16, DEFAULT, "b"), F(I32, DEFAULT, "c"),
		F(I64, DEFAULT, "d"), F(U8, DEFAULT, "e"),  F(U16, DEFAULT, "f"),
		F(U32, DEFAULT, "g"), F(U64, DEFAULT, "h"), F(F64, DEFAULT, "x"),
		F(BOOL, DEFAULT, "ok"), F(STR, DEFAULT, "s"), F(BLOB, DEFAULT, "bin"),
		F(U32, HEX, "hx"),    F(I32, PID, "pid"),   F(I32, ERRNO, "err"),
		F(U64, TIME, "t"),    F(U64, HEX, "hx64"),  F(I64, PID, "p64"),
		F(U8, HEX, "h8"),     F(STR, DEFAULT, "semi;colon"),
		F(I8, HEX, "i8h"),    F(I16, HEX, "i16h"),  F(U16, HEX, "u16h"),
		F(I32, HEX, "i32h"),  F(I64, HEX, "i64h"),  F(U32, PID, "upid"),
	};
	struct ringlog_event_desc e = { .name = (char *)"Conn;ect", .fields = f,
					.nfields = sizeof(f) / sizeof(f[0]) };
	static const uint8_t want[] = {
		0x99, 0x00,                   /* total size, 153 */
		0x00,                         /* no tags */
		'C', 'o', 'n', 'n', ';', 'e', 'c', 't', 0, /* ';' is fine in ETW */
		'e', 'm', 'i', 't', '_', 't', 'i', 'm', 'e', '_', 'n', 's', 0, 10,
		'a', 0, 3,                    /* INT8 */
		'b', 0, 5,
		'c', 0, 7,
		'd', 0, 9,
		'e', 0, 4,                    /* UINT8 */
		'f', 0, 6,
		'g', 0, 8,
		'h', 0, 10,
		'x', 0, 12,                   /* DOUBLE */
		'o', 'k', 0, 0x84, 3,         /* UINT8, BOOLEAN */
		's', 0, 0x97, 35,             /* COUNTEDANSISTRING, UTF8 */
		'b', 'i', 'n', 0, 14,         /* BINARY (hex by default) */
		'h', 'x', 0, 20,              /* TypeHexInt32: HEXINT32 */
		'p', 'i', 'd', 0, 0x88, 5,    /* TypePid: UINT32 + PID */
		'e', 'r', 'r', 0, 7,          /* errno: no Win32 outtype fits */
		't', 0, 10,                   /* ns since 1970: plain UINT64 */
		'h', 'x', '6', '4', 0, 21,    /* TypeHexInt64: HEXINT64 */
		'p', '6', '4', 0, 9,          /* pid is 32-bit only */
		'h', '8', 0, 0x84, 4,         /* TypeHexInt8: UINT8 + HEX */
		's', 'e', 'm', 'i', ';', 'c', 'o', 'l', 'o', 'n', 0, 0x97, 35,
		'i', '8', 'h', 0, 0x84, 4,    /* TypeHexInt8, not INT8 + HEX */
		'i', '1', '6', 'h', 0, 0x86, 4, /* TypeHexInt16: UINT16 + HEX */
		'u', '1', '6', 'h', 0, 0x86, 4,
		'i', '3', '2', 'h', 0, 20,    /* TypeHexInt32 */
		'i', '6', '4', 'h', 0, 21,    /* TypeHexInt64 */
		'u', 'p', 'i', 'd', 0, 0x88, 5, /* TypePid */
	};
	uint8_t out[RINGLOG_TLG_META_MAX];

	cr_assert_eq(sizeof(want), 153);
	expect_bytes(out, ringlog_tlg_metadata(out, sizeof(out), &e), want, sizeof(want));
	for (size_t cap = 0; cap < sizeof(want); cap++)
		cr_assert_eq(ringlog_tlg_metadata(out, cap, &e), -ENOSPC, "cap %zu", cap);
}

Test(tracelogging, the_largest_event_fits_the_metadata_bound)
{
	static char names[RINGLOG_FIELDS_MAX + 1][RINGLOG_NAME_MAX + 1];
	struct ringlog_field_desc f[RINGLOG_FIELDS_MAX];
	struct ringlog_event_desc e = { .name = names[RINGLOG_FIELDS_MAX], .fields = f,
					.nfields = RINGLOG_FIELDS_MAX };
	uint8_t out[RINGLOG_TLG_META_MAX];

	for (unsigned i = 0; i <= RINGLOG_FIELDS_MAX; i++)
		memset(names[i], 'n', RINGLOG_NAME_MAX);
	for (unsigned i = 0; i < RINGLOG_FIELDS_MAX; i++)
		f[i] = (struct ringlog_field_desc)F(BOOL, DEFAULT, names[i]);
	cr_expect_gt(ringlog_tlg_metadata(out, sizeof(out), &e), 0);
}

static struct ringlog_field_desc conn_fields[] = {
	F(U16, DEFAULT, "port"), F(STR, DEFAULT, "host"), F(BLOB, DEFAULT, "b"),
};
static struct ringlog_event_desc conn = { .name = (char *)"E", .level = 3, .opcode = 1,
					  .fields = conn_fields, .nfields = 3 };
/* ringlog payload: port 0x1234, "ab" flagged truncated, blob de ad */
static const uint8_t conn_payload[] = { 0x34, 0x12, 0x02, 0x80, 'a', 'b', 0x02, 0x00, 0xde, 0xad };

Test(tracelogging, payload_is_the_time_then_the_fields_with_plain_counts)
{
	static const uint8_t want[] = {
		0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, /* emit_time_ns */
		0x34, 0x12,                                     /* port */
		0x02, 0x00, 'a', 'b',                           /* truncation bit gone */
		0x02, 0x00, 0xde, 0xad,                         /* UINT16 count + bytes */
	};
	uint8_t out[64];

	expect_bytes(out, ringlog_tlg_payload(out, sizeof(out), &conn, 0x0102030405060708ull,
					      conn_payload, sizeof(conn_payload)),
		     want, sizeof(want));
	for (size_t cap = 0; cap < sizeof(want); cap++)
		cr_assert_eq(ringlog_tlg_payload(out, cap, &conn, 1, conn_payload,
						 sizeof(conn_payload)),
			     -ENOSPC, "cap %zu", cap);
}

Test(tracelogging, payloads_that_do_not_match_the_fields_are_refused)
{
	uint8_t out[64], bad[sizeof(conn_payload) + 1];

	cr_expect_eq(ringlog_tlg_payload(out, sizeof(out), &conn, 0, conn_payload, 1), -EBADMSG);
	memcpy(bad, conn_payload, sizeof(conn_payload));
	bad[6] = 0x09; /* blob length past the end */
	cr_expect_eq(ringlog_tlg_payload(out, sizeof(out), &conn, 0, bad, sizeof(conn_payload)),
		     -EBADMSG);
	memcpy(bad, conn_payload, sizeof(conn_payload));
	cr_expect_eq(ringlog_tlg_payload(out, sizeof(out), &conn, 0, bad, sizeof(bad)), -EBADMSG);
}
