/* daemon/sink/forward/eventheader.c - encode ringlog events as EventHeader events (see
 * eventheader.h for the format and the type mapping). */
#include "eventheader.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int ringlog_eh_name(char *out, size_t cap, const char *provider, uint8_t level, uint64_t keyword)
{
	size_t n = 0;
	int tail;

	for (const char *s = provider; *s; s++) {
		char ch = *s;
		bool ok = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
			  (ch >= '0' && ch <= '9') || ch == '_';

		if (n + 1 >= cap)
			return -ENAMETOOLONG;
		out[n++] = ok ? ch : '_';
	}
	if (n == 0 || n >= cap)
		return -ENAMETOOLONG;
	tail = snprintf(out + n, cap - n, "_L%xK%llx", (unsigned)level, (unsigned long long)keyword);
	if (tail < 0 || (size_t)tail >= cap - n || n + (size_t)tail >= RINGLOG_EH_NAME_MAX)
		return -ENAMETOOLONG;
	return (int)(n + (size_t)tail);
}

int ringlog_eh_command(char *out, size_t cap, const char *name)
{
	int n = snprintf(out, cap, "%s %s", name, RINGLOG_EH_COMMAND_TYPES);

	return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : n;
}

/* A name without ';' (EventHeader attributes start with it), NUL-ended. */
static long put_name(uint8_t *out, size_t cap, size_t at, const char *name)
{
	size_t len = strlen(name);

	if (at + len + 1 > cap)
		return -ENOSPC;
	for (size_t i = 0; i < len; i++)
		out[at + i] = name[i] == ';' ? '_' : (uint8_t)name[i];
	out[at + len] = 0;
	return (long)(at + len + 1);
}

/* Encoding and format (0: the encoding's default) of a ringlog field. */
static void map_field(const struct ringlog_field_desc *f, uint8_t *enc, uint8_t *fmt)
{
	static const uint8_t value_enc[] = {
		[RINGLOG_TYPE_I8] = RINGLOG_EH_ENC_VALUE8,   [RINGLOG_TYPE_U8] = RINGLOG_EH_ENC_VALUE8,
		[RINGLOG_TYPE_I16] = RINGLOG_EH_ENC_VALUE16, [RINGLOG_TYPE_U16] = RINGLOG_EH_ENC_VALUE16,
		[RINGLOG_TYPE_I32] = RINGLOG_EH_ENC_VALUE32, [RINGLOG_TYPE_U32] = RINGLOG_EH_ENC_VALUE32,
		[RINGLOG_TYPE_I64] = RINGLOG_EH_ENC_VALUE64, [RINGLOG_TYPE_U64] = RINGLOG_EH_ENC_VALUE64,
		[RINGLOG_TYPE_F64] = RINGLOG_EH_ENC_VALUE64, [RINGLOG_TYPE_BOOL] = RINGLOG_EH_ENC_VALUE8,
		[RINGLOG_TYPE_STR] = RINGLOG_EH_ENC_STRING_LENGTH16_CHAR8,
		[RINGLOG_TYPE_BLOB] = RINGLOG_EH_ENC_STRING_LENGTH16_CHAR8,
	};
	bool is_signed = f->type >= RINGLOG_TYPE_I8 && f->type <= RINGLOG_TYPE_I64;
	bool is_int = f->type >= RINGLOG_TYPE_I8 && f->type <= RINGLOG_TYPE_U64;
	bool is_32 = f->type == RINGLOG_TYPE_I32 || f->type == RINGLOG_TYPE_U32;

	/* types are checked by the metadata parser; stay in bounds anyway */
	*enc = f->type < sizeof(value_enc) && value_enc[f->type] ? value_enc[f->type]
							     : RINGLOG_EH_ENC_VALUE8;
	*fmt = is_signed ? RINGLOG_EH_FMT_SIGNED_INT : 0;
	if (f->type == RINGLOG_TYPE_F64)
		*fmt = RINGLOG_EH_FMT_FLOAT;
	else if (f->type == RINGLOG_TYPE_BOOL)
		*fmt = RINGLOG_EH_FMT_BOOLEAN;
	else if (f->type == RINGLOG_TYPE_BLOB)
		*fmt = RINGLOG_EH_FMT_HEX_BYTES;
	else if (is_int && f->format == RINGLOG_FMT_HEX)
		*fmt = RINGLOG_EH_FMT_HEX_INT;
	else if (is_32 && f->format == RINGLOG_FMT_PID)
		*fmt = RINGLOG_EH_FMT_PID;
	else if (is_32 && f->format == RINGLOG_FMT_ERRNO)
		*fmt = RINGLOG_EH_FMT_ERRNO;
}

long ringlog_eh_metadata(uint8_t *out, size_t cap, const struct ringlog_event_desc *e)
{
	long at = put_name(out, cap, 0, e->name);

	if (at < 0)
		return at;
	at = put_name(out, cap, (size_t)at, RINGLOG_EH_TIME_FIELD);
	if (at < 0 || (size_t)at + 1 > cap)
		return -ENOSPC;
	out[at++] = RINGLOG_EH_ENC_VALUE64;
	for (uint16_t i = 0; i < e->nfields; i++) {
		uint8_t enc, fmt;

		at = put_name(out, cap, (size_t)at, e->fields[i].name);
		if (at < 0 || (size_t)at + 2 > cap)
			return -ENOSPC;
		map_field(&e->fields[i], &enc, &fmt);
		if (fmt) {
			out[at++] = enc | RINGLOG_EH_ENC_CHAIN;
			out[at++] = fmt;
		} else {
			out[at++] = enc;
		}
	}
	return at;
}

static int put(uint8_t *out, size_t cap, size_t *at, const void *p, size_t n)
{
	if (*at + n > cap)
		return -ENOSPC;
	memcpy(out + *at, p, n);
	*at += n;
	return 0;
}

long ringlog_eh_event(uint8_t *out, size_t cap, const struct ringlog_event_desc *e,
		      const uint8_t *meta, size_t meta_len, const uint8_t act[16],
		      uint64_t emit_time_ns, const uint8_t *fields, size_t fields_len)
{
	struct ringlog_eh_header h = {
		.flags = RINGLOG_EH_FLAG_POINTER64 | RINGLOG_EH_FLAG_LITTLE_ENDIAN |
			 RINGLOG_EH_FLAG_EXTENSION,
		.opcode = e->opcode,
		.level = e->level,
	};
	struct ringlog_eh_extension mx = { .size = (uint16_t)meta_len, .kind = RINGLOG_EH_EXT_METADATA };
	/* eventheader_write()'s order: the activity id first, chained to the
	 * metadata, which Microsoft's events always carry last */
	struct ringlog_eh_extension ax = {
		.size = 16,
		.kind = RINGLOG_EH_EXT_ACTIVITY_ID | RINGLOG_EH_EXT_CHAIN,
	};
	size_t at = 0;

	if (meta_len > UINT16_MAX)
		return -EINVAL;
	if (put(out, cap, &at, &h, sizeof(h)) < 0)
		return -ENOSPC;
	if (act && (put(out, cap, &at, &ax, sizeof(ax)) < 0 || put(out, cap, &at, act, 16) < 0))
		return -ENOSPC;
	if (put(out, cap, &at, &mx, sizeof(mx)) < 0 || put(out, cap, &at, meta, meta_len) < 0)
		return -ENOSPC;
	if (put(out, cap, &at, &emit_time_ns, 8) < 0)
		return -ENOSPC;
	return ringlog_fields_plain(out, cap, at, e, fields, fields_len);
}
