/* proto/meta.h - parse and validate metadata entries (event.h) and decode
 * event payloads. Shared by the daemon (reading a client's metadata region)
 * and every reader (segments, the tail stream). All input is untrusted.
 */
#ifndef RINGLOG_PROTO_META_H
#define RINGLOG_PROTO_META_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "event.h"

struct ringlog_field_desc {
	uint8_t type;   /* enum ringlog_type */
	uint8_t format; /* enum ringlog_format */
	char *name;
};

struct ringlog_event_desc {
	uint16_t id;
	uint16_t provider;
	uint8_t level;
	uint8_t opcode;
	uint16_t nfields;
	uint64_t keyword;
	uint32_t min_len;  /* smallest valid payload after ts (+activity) */
	char *name;
	struct ringlog_field_desc *fields;
	const uint8_t *raw; /* the entry as received, for copying into segments */
	uint32_t raw_len;
};

/* Descriptors of one writer (process), by id; ids may have holes. */
struct ringlog_meta {
	char **providers;              /* [nprov], NULL where unknown */
	uint32_t nprov;
	struct ringlog_event_desc **events; /* [nev] */
	uint32_t nev;
	uint64_t bytes;                /* memory held, for limits */
};

void ringlog_meta_init(struct ringlog_meta *m);
void ringlog_meta_free(struct ringlog_meta *m);

/* Validate one entry at p (avail bytes readable) and add it to m. Returns the
 * entry's length (> 0), or -EBADMSG with *why set, or -EEXIST when an entry
 * with the same kind and id is already known and differs, or -ENOMEM.
 * An identical duplicate is accepted (a segment may repeat entries). */
long ringlog_meta_add(struct ringlog_meta *m, const uint8_t *p, size_t avail,
		      const char **why);

static inline const struct ringlog_event_desc *
ringlog_meta_event(const struct ringlog_meta *m, uint32_t id)
{
	return id < m->nev ? m->events[id] : NULL;
}

static inline const char *ringlog_meta_provider(const struct ringlog_meta *m, uint32_t id)
{
	return id < m->nprov ? m->providers[id] : NULL;
}

/* Grow *arrp (an array of *n elements of elem bytes, zero-filled) so that
 * index id exists. Ids come from untrusted input: those at or above 2^24
 * are refused with -ERANGE rather than allocated. Returns 0 or -errno. */
int ringlog_grow(void *arrp, uint32_t *n, uint32_t id, size_t elem);

/* Encode a PROVIDER metadata entry (event.h) into buf; returns its length.
 * name must be a valid name (1..RINGLOG_NAME_MAX bytes). */
#define RINGLOG_META_PROVIDER_ENTRY_MAX (8u + 2u + RINGLOG_NAME_MAX + 7u)
uint32_t ringlog_meta_provider_entry(uint8_t buf[RINGLOG_META_PROVIDER_ENTRY_MAX], uint16_t id,
				     const char *name);

/* One decoded field value. Strings and blobs point into the payload. */
struct ringlog_value {
	const struct ringlog_field_desc *field;
	union {
		int64_t i;
		uint64_t u;
		double d;
		bool b;
	};
	const uint8_t *data; /* STR, BLOB */
	uint32_t len;
	bool truncated;
};

/* Decode the fields of an event payload (after ts and activity id) into
 * out[0..e->nfields). Returns 0, or -EBADMSG when the bytes do not match the
 * descriptor (too short, a length past the end, bytes left over). */
int ringlog_event_decode(const struct ringlog_event_desc *e, const uint8_t *p,
			 size_t len, struct ringlog_value *out);

/* Names for display and JSON. */
/* The fields of a validated payload (p, len: the record's bytes after ts
 * and activity) as the OS tracers' formats lay them out, appended to out at
 * offset at: the same bytes, except that a string's u16 length loses
 * ringlog's truncation bit. EventHeader and TraceLogging both count strings
 * and blobs with a u16 before the bytes, so both encoders use this.
 * Returns the new end offset, -ENOSPC when cap is too small, -EBADMSG when
 * the bytes do not match e. */
long ringlog_fields_plain(uint8_t *out, size_t cap, size_t at, const struct ringlog_event_desc *e,
			  const uint8_t *p, size_t len);

const char *ringlog_type_name(unsigned type);
const char *ringlog_format_name(unsigned format);
const char *ringlog_level_name(unsigned level);
const char *ringlog_opcode_name(unsigned opcode);

#endif /* RINGLOG_PROTO_META_H */
