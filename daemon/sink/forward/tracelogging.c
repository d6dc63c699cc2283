/* daemon/sink/forward/tracelogging.c - encode ringlog events as TraceLogging events (see
 * tracelogging.h for the format and the type mapping). */
#include "tracelogging.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "sha1.h"
#include "tlg-upcase.h"

/* The UTF-16 code units (1 or 2) of the next character of a NUL-ended
 * UTF-8 name at *s, decoded as TraceLoggingDynamic.h's CopyUtfCodePoint
 * does, so that every name gives Microsoft's GUID: a byte that does not
 * start a complete, shortest-form sequence is taken as the Latin-1
 * character of that value (0xE9 is U+00E9, as in CP1252 text); surrogates
 * encoded in three bytes pass as lone code units; four-byte forms past
 * U+10FFFF pass byte by byte. The NUL stops every look-ahead. */
static unsigned next_units(const unsigned char **s, uint16_t u[2])
{
	const unsigned char *p = *s;
	uint32_t c = p[0], v;

	*s = p + 1;
	u[0] = (uint16_t)c;
	if (c <= 0xbf || (p[1] & 0xc0) != 0x80)
		return 1;
	if (c <= 0xdf) {
		v = (c & 0x1f) << 6 | (p[1] & 0x3f);
		if (v >= 0x80)
			*s = p + 2, u[0] = (uint16_t)v;
		return 1;
	}
	if ((p[2] & 0xc0) != 0x80)
		return 1;
	if (c <= 0xef) {
		v = (c & 0x0f) << 12 | (uint32_t)(p[1] & 0x3f) << 6 | (p[2] & 0x3f);
		if (v >= 0x800)
			*s = p + 3, u[0] = (uint16_t)v;
		return 1;
	}
	if ((p[3] & 0xc0) != 0x80 || c > 0xf4)
		return 1;
	v = ((c & 0x07) << 18 | (uint32_t)(p[1] & 0x3f) << 12 | (uint32_t)(p[2] & 0x3f) << 6 |
	     (p[3] & 0x3f)) - 0x10000; /* wraps for an overlong form: refused below */
	if (v > 0xfffff)
		return 1;
	*s = p + 4;
	u[0] = (uint16_t)(0xd800 | v >> 10);
	u[1] = (uint16_t)(0xdc00 | (v & 0x3ff));
	return 2;
}

/* Windows' default (file system) upper case of one UTF-16 code unit:
 * tlg-upcase.h. */
static uint16_t upcase(uint16_t c)
{
	size_t lo = 0, hi = sizeof(tlg_upcase) / sizeof(tlg_upcase[0]);

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		const struct tlg_upcase_range *r = &tlg_upcase[mid];

		if (c < r->first)
			hi = mid;
		else if (c > r->last)
			lo = mid + 1;
		else
			return (c - r->first) % r->step ? c : (uint16_t)(c + r->delta);
	}
	return c;
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
	/* GetGuidForName hashes the name's UTF-16 code units upper-cased one
	 * by one (LCMapStringEx's default casing never changes a length, so
	 * its 16-unit batches do not matter) and byte-swapped to big-endian. */
	while (*s) {
		uint16_t u[2];
		unsigned n = next_units(&s, u);

		for (unsigned i = 0; i < n; i++) {
			uint16_t c = upcase(u[i]);
			uint8_t b[2] = { (uint8_t)(c >> 8), (uint8_t)c };

			ringlog_sha1_update(&h, b, 2);
		}
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
