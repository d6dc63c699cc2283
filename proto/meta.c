/* proto/meta.c - metadata entries and event payloads, validated. */
#include "meta.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void ringlog_meta_init(struct ringlog_meta *m)
{
	memset(m, 0, sizeof(*m));
}

static void event_free(struct ringlog_event_desc *e)
{
	if (!e)
		return;
	for (unsigned i = 0; i < e->nfields; i++)
		free(e->fields[i].name);
	free(e->fields);
	free(e->name);
	free((void *)e->raw);
	free(e);
}

void ringlog_meta_free(struct ringlog_meta *m)
{
	for (uint32_t i = 0; i < m->nprov; i++)
		free(m->providers[i]);
	for (uint32_t i = 0; i < m->nev; i++)
		event_free(m->events[i]);
	free(m->providers);
	free(m->events);
	memset(m, 0, sizeof(*m));
}

int ringlog_grow(void *arrp, uint32_t *n, uint32_t id, size_t elem)
{
	uint8_t **arr = arrp;
	uint32_t want = *n ? *n : 16;
	uint8_t *a;

	if (id < *n)
		return 0;
	if (id >= (1u << 24))
		return -ERANGE;
	while (want <= id)
		want *= 2;
	a = realloc(*arr, (size_t)want * elem);
	if (!a)
		return -ENOMEM;
	memset(a + (size_t)*n * elem, 0, (size_t)(want - *n) * elem);
	*arr = a;
	*n = want;
	return 0;
}

uint32_t ringlog_meta_provider_entry(uint8_t buf[RINGLOG_META_PROVIDER_ENTRY_MAX], uint16_t id,
				     const char *name)
{
	uint16_t nl = (uint16_t)strlen(name);
	struct ringlog_meta_entry h = {
		.len = (uint32_t)ringlog_align_up8(sizeof(h) + 2u + nl),
		.kind = RINGLOG_META_PROVIDER,
		.id = id,
	};

	memset(buf, 0, h.len);
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), &nl, 2);
	memcpy(buf + sizeof(h) + 2, name, nl);
	return h.len;
}

/* Names: 1..RINGLOG_NAME_MAX bytes, no NUL, no control characters (they
 * would let a client forge lines in a reader's terminal). */
static const char *check_name(const uint8_t *p, size_t len)
{
	if (len == 0)
		return "empty name";
	if (len > RINGLOG_NAME_MAX)
		return "name longer than 255 bytes";
	for (size_t i = 0; i < len; i++)
		if (p[i] < 0x20 || p[i] == 0x7f)
			return "control character in a name";
	return NULL;
}

static char *dup_name(const uint8_t *p, size_t len)
{
	char *s = malloc(len + 1);

	if (s) {
		memcpy(s, p, len);
		s[len] = 0;
	}
	return s;
}

static uint32_t fixed_size(unsigned type)
{
	switch (type) {
	case RINGLOG_TYPE_I8: case RINGLOG_TYPE_U8: case RINGLOG_TYPE_BOOL: return 1;
	case RINGLOG_TYPE_I16: case RINGLOG_TYPE_U16: return 2;
	case RINGLOG_TYPE_I32: case RINGLOG_TYPE_U32: return 4;
	case RINGLOG_TYPE_STR: case RINGLOG_TYPE_BLOB: return 2; /* the length */
	default: return 8;
	}
}

static long add_provider(struct ringlog_meta *m, const struct ringlog_meta_entry *h,
			 const uint8_t *body, size_t blen, const char **why)
{
	uint16_t nl;
	char *name;

	if (blen < 2)
		return *why = "PROVIDER entry too short", -EBADMSG;
	memcpy(&nl, body, 2);
	if ((size_t)nl + 2 > blen)
		return *why = "PROVIDER name runs past the entry", -EBADMSG;
	if ((*why = check_name(body + 2, nl)))
		return -EBADMSG;
	if (ringlog_grow(&m->providers, &m->nprov, h->id, sizeof(*m->providers)))
		return -ENOMEM;
	if (m->providers[h->id]) {
		if (strlen(m->providers[h->id]) == nl &&
		    !memcmp(m->providers[h->id], body + 2, nl))
			return h->len;
		return *why = "provider id redefined", -EEXIST;
	}
	if (!(name = dup_name(body + 2, nl)))
		return -ENOMEM;
	m->providers[h->id] = name;
	m->bytes += nl + 16;
	return h->len;
}

static long add_event(struct ringlog_meta *m, const struct ringlog_meta_entry *h,
		      const uint8_t *body, size_t blen, const char **why)
{
	struct ringlog_meta_event ev;
	struct ringlog_event_desc *e;
	size_t off;

	if (blen < sizeof(ev))
		return *why = "EVENT entry too short", -EBADMSG;
	memcpy(&ev, body, sizeof(ev));
	if (ev.level < 1 || ev.level > 5)
		return *why = "event level outside 1..5", -EBADMSG;
	if (ev.opcode > RINGLOG_OP_MAX_)
		return *why = "unknown event opcode", -EBADMSG;
	if (ev.nfields > RINGLOG_FIELDS_MAX)
		return *why = "more than 32 fields", -EBADMSG;
	if (ev.provider == 0 || !ringlog_meta_provider(m, ev.provider))
		return *why = "event names a provider not defined before it", -EBADMSG;
	off = sizeof(ev);
	if (off + ev.name_len > blen)
		return *why = "event name runs past the entry", -EBADMSG;
	if ((*why = check_name(body + off, ev.name_len)))
		return -EBADMSG;

	if (ringlog_grow(&m->events, &m->nev, h->id, sizeof(*m->events)))
		return -ENOMEM;
	if (m->events[h->id]) {
		const struct ringlog_event_desc *o = m->events[h->id];

		/* Identical means header and body: h is a copy of the header
		 * only (comparing h->len bytes from it read past it, and made
		 * identical repeats, as segments carry, look redefined). */
		if (o->raw_len == h->len && !memcmp(o->raw, h, sizeof(*h)) &&
		    !memcmp(o->raw + sizeof(*h), body, h->len - sizeof(*h)))
			return h->len;
		return *why = "event id redefined", -EEXIST;
	}
	if (!(e = calloc(1, sizeof(*e))))
		return -ENOMEM;
	e->id = h->id;
	e->provider = ev.provider;
	e->level = ev.level;
	e->opcode = ev.opcode;
	e->keyword = ev.keyword;
	e->name = dup_name(body + off, ev.name_len);
	e->fields = calloc(ev.nfields ? ev.nfields : 1, sizeof(*e->fields));
	if (!e->name || !e->fields)
		goto nomem;
	off += ev.name_len;
	for (unsigned i = 0; i < ev.nfields; i++) {
		struct ringlog_meta_field f;

		if (off + sizeof(f) > blen) {
			*why = "field descriptor runs past the entry";
			goto bad;
		}
		memcpy(&f, body + off, sizeof(f));
		off += sizeof(f);
		if (f.type < 1 || f.type > RINGLOG_TYPE_MAX_) {
			*why = "unknown field type";
			goto bad;
		}
		if (f.format > RINGLOG_FMT_MAX_) {
			*why = "unknown field format";
			goto bad;
		}
		if (off + f.name_len > blen) {
			*why = "field name runs past the entry";
			goto bad;
		}
		if ((*why = check_name(body + off, f.name_len)))
			goto bad;
		e->fields[i].type = f.type;
		e->fields[i].format = f.format;
		e->fields[i].name = dup_name(body + off, f.name_len);
		e->nfields = (uint16_t)(i + 1); /* for event_free() on error */
		if (!e->fields[i].name)
			goto nomem;
		off += f.name_len;
		e->min_len += fixed_size(f.type);
	}
	e->nfields = ev.nfields;
	e->raw_len = h->len;
	e->raw = malloc(h->len);
	if (!e->raw)
		goto nomem;
	memcpy((void *)e->raw, h, sizeof(*h));
	memcpy((uint8_t *)e->raw + sizeof(*h), body, h->len - sizeof(*h));
	m->events[h->id] = e;
	m->bytes += h->len * 3u + 64;
	return h->len;
nomem:
	event_free(e);
	return -ENOMEM;
bad:
	event_free(e);
	return -EBADMSG;
}

long ringlog_meta_add(struct ringlog_meta *m, const uint8_t *p, size_t avail,
		      const char **why)
{
	struct ringlog_meta_entry h;

	*why = NULL;
	if (avail < sizeof(h))
		return *why = "metadata entry header truncated", -EBADMSG;
	memcpy(&h, p, sizeof(h));
	if (h.len < sizeof(h) + 2 || h.len % 8 || h.len > avail)
		return *why = "metadata entry length is invalid", -EBADMSG;
	if (h.id == 0)
		return *why = "metadata id 0 is reserved", -EBADMSG;
	switch (h.kind) {
	case RINGLOG_META_PROVIDER:
		return add_provider(m, &h, p + sizeof(h), h.len - sizeof(h), why);
	case RINGLOG_META_EVENT:
		return add_event(m, &h, p + sizeof(h), h.len - sizeof(h), why);
	default:
		return *why = "unknown metadata entry kind", -EBADMSG;
	}
}

int ringlog_event_decode(const struct ringlog_event_desc *e, const uint8_t *p,
			 size_t len, struct ringlog_value *out)
{
	size_t off = 0;

	for (unsigned i = 0; i < e->nfields; i++) {
		struct ringlog_value *v = &out[i];
		unsigned t = e->fields[i].type;
		uint32_t n = fixed_size(t);

		memset(v, 0, sizeof(*v));
		v->field = &e->fields[i];
		if (off + n > len)
			return -EBADMSG;
		switch (t) {
		case RINGLOG_TYPE_I8: { int8_t x; memcpy(&x, p + off, 1); v->i = x; break; }
		case RINGLOG_TYPE_I16: { int16_t x; memcpy(&x, p + off, 2); v->i = x; break; }
		case RINGLOG_TYPE_I32: { int32_t x; memcpy(&x, p + off, 4); v->i = x; break; }
		case RINGLOG_TYPE_I64: memcpy(&v->i, p + off, 8); break;
		case RINGLOG_TYPE_U8: v->u = p[off]; break;
		case RINGLOG_TYPE_U16: { uint16_t x; memcpy(&x, p + off, 2); v->u = x; break; }
		case RINGLOG_TYPE_U32: { uint32_t x; memcpy(&x, p + off, 4); v->u = x; break; }
		case RINGLOG_TYPE_U64: memcpy(&v->u, p + off, 8); break;
		case RINGLOG_TYPE_F64: memcpy(&v->d, p + off, 8); break;
		case RINGLOG_TYPE_BOOL: v->b = p[off] != 0; v->u = p[off]; break;
		case RINGLOG_TYPE_STR:
		case RINGLOG_TYPE_BLOB: {
			uint16_t l;

			memcpy(&l, p + off, 2);
			if (t == RINGLOG_TYPE_STR) {
				v->truncated = (l & RINGLOG_STR_TRUNCATED) != 0;
				l &= (uint16_t)~RINGLOG_STR_TRUNCATED;
			}
			if (off + 2 + l > len)
				return -EBADMSG;
			v->data = p + off + 2;
			v->len = l;
			n = 2u + l;
			break;
		}
		default:
			return -EBADMSG;
		}
		off += n;
	}
	return off == len ? 0 : -EBADMSG;
}

long ringlog_fields_plain(uint8_t *out, size_t cap, size_t at, const struct ringlog_event_desc *e,
			  const uint8_t *p, size_t len)
{
	size_t off = 0;

	for (uint16_t i = 0; i < e->nfields; i++) {
		uint8_t t = e->fields[i].type;
		size_t n = fixed_size(t);
		uint16_t l;

		if (t < RINGLOG_TYPE_I8 || t > RINGLOG_TYPE_MAX_ || off + n > len)
			return -EBADMSG;
		if (t == RINGLOG_TYPE_STR || t == RINGLOG_TYPE_BLOB) {
			memcpy(&l, p + off, 2);
			if (t == RINGLOG_TYPE_STR)
				l &= (uint16_t)~RINGLOG_STR_TRUNCATED;
			if (off + 2 + l > len)
				return -EBADMSG;
			if (at + 2 + l > cap)
				return -ENOSPC;
			memcpy(out + at, &l, 2);
			memcpy(out + at + 2, p + off + 2, l);
			n = 2u + l;
		} else {
			if (at + n > cap)
				return -ENOSPC;
			memcpy(out + at, p + off, n);
		}
		at += n;
		off += n;
	}
	return off == len ? (long)at : -EBADMSG;
}

const char *ringlog_type_name(unsigned type)
{
	static const char *const n[] = { "?", "i8", "i16", "i32", "i64", "u8", "u16",
		"u32", "u64", "f64", "bool", "str", "blob" };

	return type <= RINGLOG_TYPE_MAX_ ? n[type] : "?";
}

const char *ringlog_format_name(unsigned format)
{
	static const char *const n[] = { "", "hex", "pid", "errno", "time" };

	return format <= RINGLOG_FMT_MAX_ ? n[format] : "?";
}

const char *ringlog_level_name(unsigned level)
{
	static const char *const n[] = { "none", "crit", "error", "warn", "info", "verbose" };

	return level <= 5 ? n[level] : "?";
}

const char *ringlog_opcode_name(unsigned opcode)
{
	static const char *const n[] = { "info", "start", "stop" };

	return opcode <= RINGLOG_OP_MAX_ ? n[opcode] : "?";
}
