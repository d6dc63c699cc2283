/* proto/tracelogging.c - encode ringlog events as TraceLogging events (see
 * tracelogging.h for the format and the type mapping). */
#include "tracelogging.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "sha1.h"

/* The next code point of UTF-8 text at *s; invalid or truncated sequences
 * and overlong forms give U+FFFD and skip one byte. */
static uint32_t next_code_point(const unsigned char **s)
{
	const unsigned char *p = *s;
	uint32_t c = p[0], min;
	int more;

	if (c < 0x80) {
		*s = p + 1;
		return c;
	}
	if ((c & 0xe0) == 0xc0)
		more = 1, c &= 0x1f, min = 0x80;
	else if ((c & 0xf0) == 0xe0)
		more = 2, c &= 0x0f, min = 0x800;
	else if ((c & 0xf8) == 0xf0)
		more = 3, c &= 0x07, min = 0x10000;
	else
		goto bad;
	for (int i = 1; i <= more; i++) {
		if ((p[i] & 0xc0) != 0x80)
			goto bad;
		c = c << 6 | (p[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		goto bad;
	*s = p + 1 + more;
	return c;
bad:
	*s = p + 1;
	return 0xfffd;
}

static void hash_utf16be(struct ringlog_sha1 *h, uint32_t c)
{
	uint8_t b[4];

	if (c >= 0x10000) {
		uint32_t v = c - 0x10000, hi = 0xd800 | v >> 10, lo = 0xdc00 | (v & 0x3ff);

		b[0] = (uint8_t)(hi >> 8), b[1] = (uint8_t)hi;
		b[2] = (uint8_t)(lo >> 8), b[3] = (uint8_t)lo;
		ringlog_sha1_update(h, b, 4);
		return;
	}
	b[0] = (uint8_t)(c >> 8), b[1] = (uint8_t)c;
	ringlog_sha1_update(h, b, 2);
}

void ringlog_tlg_provider_guid(uint8_t guid[16], const char *name)
{
	static const uint8_t ns[16] = { 0x48, 0x2c, 0x2d, 0xb2, 0xc3, 0x90, 0x47, 0xc8,
					0x87, 0xf8, 0x1a, 0x15, 0xbf, 0xc1, 0x30, 0xfb };
	const unsigned char *s = (const unsigned char *)name;
	struct ringlog_sha1 h;
	uint8_t d[20];

	ringlog_sha1_init(&h);
	ringlog_sha1_update(&h, ns, sizeof(ns));
	/* Only ASCII is folded: Windows folds with its own Unicode tables,
	 * which a portable encoder cannot reproduce; provider names are ASCII
	 * in practice, and a non-ASCII name still gets a stable GUID. */
	while (*s) {
		uint32_t c = next_code_point(&s);

		hash_utf16be(&h, c >= 'a' && c <= 'z' ? c - 32 : c);
	}
	ringlog_sha1_final(&h, d);
	memcpy(guid, d, 16);
	guid[7] = (uint8_t)((guid[7] & 0x0f) | 0x50);
}

void ringlog_tlg_guid_string(char out[39], const uint8_t g[16])
{
	snprintf(out, 39,
		 "{%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x}", g[3],
		 g[2], g[1], g[0], g[5], g[4], g[7], g[6], g[8], g[9], g[10], g[11], g[12], g[13],
		 g[14], g[15]);
}

/* name and its NUL at out + at; the new end, or -ENOSPC. */
static long put_name(uint8_t *out, size_t cap, size_t at, const char *name)
{
	size_t len = strlen(name);

	if (at + len + 1 > cap)
		return -ENOSPC;
	memcpy(out + at, name, len + 1);
	return (long)(at + len + 1);
}

static long put_size16(uint8_t *out, long len)
{
	if (len < 0)
		return len;
	if (len > UINT16_MAX)
		return -ENOSPC;
	out[0] = (uint8_t)len;
	out[1] = (uint8_t)(len >> 8);
	return len;
}

long ringlog_tlg_traits(uint8_t *out, size_t cap, const char *name)
{
	if (cap < 2)
		return -ENOSPC;
	return put_size16(out, put_name(out, cap, 2, name));
}

/* intype and outtype (0: the intype's default) of a ringlog field. */
static void map_field(const struct ringlog_field_desc *f, uint8_t *in, uint8_t *out)
{
	static const uint8_t intype[] = {
		[RINGLOG_TYPE_I8] = RINGLOG_TLG_IN_INT8,     [RINGLOG_TYPE_U8] = RINGLOG_TLG_IN_UINT8,
		[RINGLOG_TYPE_I16] = RINGLOG_TLG_IN_INT16,   [RINGLOG_TYPE_U16] = RINGLOG_TLG_IN_UINT16,
		[RINGLOG_TYPE_I32] = RINGLOG_TLG_IN_INT32,   [RINGLOG_TYPE_U32] = RINGLOG_TLG_IN_UINT32,
		[RINGLOG_TYPE_I64] = RINGLOG_TLG_IN_INT64,   [RINGLOG_TYPE_U64] = RINGLOG_TLG_IN_UINT64,
		[RINGLOG_TYPE_F64] = RINGLOG_TLG_IN_DOUBLE,  [RINGLOG_TYPE_BOOL] = RINGLOG_TLG_IN_UINT8,
		[RINGLOG_TYPE_STR] = RINGLOG_TLG_IN_COUNTEDANSISTRING,
		[RINGLOG_TYPE_BLOB] = RINGLOG_TLG_IN_BINARY,
	};
	bool is_8 = f->type == RINGLOG_TYPE_I8 || f->type == RINGLOG_TYPE_U8;
	bool is_16 = f->type == RINGLOG_TYPE_I16 || f->type == RINGLOG_TYPE_U16;
	bool is_32 = f->type == RINGLOG_TYPE_I32 || f->type == RINGLOG_TYPE_U32;
	bool is_64 = f->type == RINGLOG_TYPE_I64 || f->type == RINGLOG_TYPE_U64;

	/* types are checked by the metadata parser; stay in bounds anyway */
	*in = f->type < sizeof(intype) && intype[f->type] ? intype[f->type] : RINGLOG_TLG_IN_UINT8;
	*out = 0;
	if (f->type == RINGLOG_TYPE_BOOL) {
		*out = RINGLOG_TLG_OUT_BOOLEAN;
	} else if (f->type == RINGLOG_TYPE_STR) {
		*out = RINGLOG_TLG_OUT_UTF8;
	} else if (f->format == RINGLOG_FMT_HEX) {
		/* Only TraceLoggingDynamic.h's Type combinations, which TDH and
		 * WPA know: TypeHexInt8/16 are UINT8/UINT16 + HEX, TypeHexInt32/64
		 * the HEXINT32/HEXINT64 in-types (the sign is the formatter's
		 * business: hex shows the bits either way) */
		if (is_8 || is_16) {
			*in = is_8 ? RINGLOG_TLG_IN_UINT8 : RINGLOG_TLG_IN_UINT16;
			*out = RINGLOG_TLG_OUT_HEX;
		} else if (is_32) {
			*in = RINGLOG_TLG_IN_HEXINT32;
		} else if (is_64) {
			*in = RINGLOG_TLG_IN_HEXINT64;
		}
	} else if (is_32 && f->format == RINGLOG_FMT_PID) {
		*in = RINGLOG_TLG_IN_UINT32; /* TypePid: UINT32 + PID */
		*out = RINGLOG_TLG_OUT_PID;
	}
}

long ringlog_tlg_metadata(uint8_t *out, size_t cap, const struct ringlog_event_desc *e)
{
	long at;

	if (cap < 3)
		return -ENOSPC;
	out[2] = 0; /* no tags */
	at = put_name(out, cap, 3, e->name);
	if (at >= 0)
		at = put_name(out, cap, (size_t)at, RINGLOG_TLG_TIME_FIELD);
	if (at < 0 || (size_t)at + 1 > cap)
		return -ENOSPC;
	out[at++] = RINGLOG_TLG_IN_UINT64;
	for (uint16_t i = 0; i < e->nfields; i++) {
		uint8_t in, ot;

		at = put_name(out, cap, (size_t)at, e->fields[i].name);
		if (at < 0 || (size_t)at + 2 > cap)
			return -ENOSPC;
		map_field(&e->fields[i], &in, &ot);
		if (ot) {
			out[at++] = in | RINGLOG_TLG_IN_CHAIN;
			out[at++] = ot;
		} else {
			out[at++] = in;
		}
	}
	return put_size16(out, at);
}

long ringlog_tlg_payload(uint8_t *out, size_t cap, const struct ringlog_event_desc *e,
			 uint64_t emit_time_ns, const uint8_t *fields, size_t fields_len)
{
	if (cap < 8)
		return -ENOSPC;
	for (int i = 0; i < 8; i++)
		out[i] = (uint8_t)(emit_time_ns >> (8 * i));
	return ringlog_fields_plain(out, cap, 8, e, fields, fields_len);
}
