/* proto/pack.h - the packed form of ring records in segment files: the body
 * of a PACK record (segment.h). Header-only: the daemon packs on its drain
 * path, where a call per event would show.
 *
 * A SPAN stores ring records verbatim: 8 bytes of header, an 8-byte raw
 * timestamp, the fields, padding to 8. Most of that header is implied by
 * the metadata, and consecutive timestamps of one thread differ by a few
 * hundred ticks, so on disk, where every byte is paid for in bandwidth and
 * in how much history the budget holds, each record is stored as
 *
 *   | tag: varint | len: varint | ts: zigzag varint | rest: len - 8 bytes |
 *
 *   tag   (aux << 2) | kind, kind 1 EVENT, 2 EVENT_ACT, 3 LOSS; a zero byte
 *         in place of a tag is filler and is skipped (the packer pads each
 *         batch to 8 bytes, so the PACK record stays 8-aligned)
 *   len   the ring record's payload length (ring.h), so that the ring
 *         position advances exactly as in the ring: ringlog_rec_total(len)
 *   ts    events only: the timestamp minus the previous event's in this
 *         PACK (0 before the first), zigzag-encoded (a migrated thread's
 *         clock may step back a little)
 *   rest  the payload after the timestamp (events) or all of it (LOSS),
 *         unpadded
 *
 * The 48-byte event (four u64) packs into 36 bytes instead of 48 when it
 * comes 64 to 8191 clock ticks after the previous one (35 sooner). A
 * varint is 7 bits per byte, low first, high bit set on all but the last
 * byte; one longer than the value needs, or past its limit, is damage.
 */
#ifndef RINGLOG_PROTO_PACK_H
#define RINGLOG_PROTO_PACK_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "event.h"
#include "ring.h"

enum {
	RINGLOG_PACK_EVENT = 1,
	RINGLOG_PACK_EVENT_ACT = 2,
	RINGLOG_PACK_LOSS = 3,
};

/* Most bytes one record of payload length len packs into: tag 3, len 2,
 * ts 10, then len - 8 (events) or len (LOSS, which has no ts). */
#define RINGLOG_PACK_MAX(len) ((size_t)(len) + 5u + 10u)

static inline size_t ringlog_pack_varint(uint8_t *o, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		o[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	o[n++] = (uint8_t)v;
	return n;
}

/* memcpy for a record's payload, inline: most are a few dozen bytes, for
 * which a call to the C library's memmove cost 5 % of the daemon's time.
 * Whole 8-byte words, then one more word ending exactly at len
 * (overlapping the last), so nothing past len is read or written. (At
 * most 16 KiB: a record's bound, proto/ring.h.) */
static inline void ringlog_pack_copy(uint8_t *o, const uint8_t *s, size_t len)
{
	size_t i = 0;

	if (len < 8) {
		for (; i < len; i++)
			o[i] = s[i];
		return;
	}
	for (; i + 8 <= len; i += 8)
		memcpy(o + i, s + i, 8);
	if (i < len)
		memcpy(o + len - 8, s + len - 8, 8);
}

/* Pack one ring record whose header the consumer validated (type EVENT,
 * EVENT_ACT or LOSS; events have len >= 8). *prev is the previous event's
 * timestamp in this PACK and is updated. Returns the bytes written, at most
 * RINGLOG_PACK_MAX(len). */
static inline size_t ringlog_pack_rec(uint8_t *o, uint16_t type, uint16_t aux,
				      const uint8_t *payload, uint32_t len, uint64_t *prev)
{
	unsigned kind = type == RINGLOG_REC_EVENT ? RINGLOG_PACK_EVENT
			: type == RINGLOG_REC_EVENT_ACT ? RINGLOG_PACK_EVENT_ACT : RINGLOG_PACK_LOSS;
	size_t n = ringlog_pack_varint(o, (uint64_t)aux << 2 | kind);

	n += ringlog_pack_varint(o + n, len);
	if (kind != RINGLOG_PACK_LOSS) {
		uint64_t ts, d;

		memcpy(&ts, payload, sizeof(ts));
		d = ts - *prev;
		*prev = ts;
		n += ringlog_pack_varint(o + n, d << 1 ^ (uint64_t)-(int64_t)(d >> 63));
		payload += 8;
		len -= 8;
	}
	ringlog_pack_copy(o + n, payload, len);
	return n + len;
}

/* ringlog_pack_rec() for n event records (EVENT or EVENT_ACT, len >= 8)
 * of one type, aux and len, stride bytes apart from payload: the same
 * bytes as n calls, the varints of the header encoded once. Widens
 * [*ts_min, *ts_max] to the records' timestamps. Returns the bytes
 * written; o must have room for n * RINGLOG_PACK_MAX(len) (the header's
 * bytes are stored 8 at a time, within that room). */
#if defined(__GNUC__)
#define RINGLOG_PACK_ALWAYS_INLINE static inline __attribute__((always_inline))
#else
#define RINGLOG_PACK_ALWAYS_INLINE static inline
#endif

/* ringlog_pack_copy() of len bytes, for a size class known when inlined:
 * wide 16 (16 <= len <= 32) or 32 (32 <= len <= 64) copies the first and
 * the last `wide` bytes, overlapping in the middle: two loads and two
 * stores of a width the compiler does at once, where the 8-byte loop took
 * up to eight and a branch each (a run's records share their length, so
 * the class is chosen once per run). 0: any length. */
RINGLOG_PACK_ALWAYS_INLINE void ringlog_pack_copy_as(uint8_t *o, const uint8_t *s, size_t len,
						     unsigned wide)
{
	if (wide == 16) {
		memcpy(o, s, 16);
		memcpy(o + len - 16, s + len - 16, 16);
	} else if (wide == 32) {
		memcpy(o, s, 32);
		memcpy(o + len - 32, s + len - 32, 32);
	} else {
		ringlog_pack_copy(o, s, len);
	}
}

/* The loop of ringlog_pack_run() for one copy class (its wide). */
RINGLOG_PACK_ALWAYS_INLINE size_t ringlog_pack_run_as(uint8_t *o, const uint8_t head[8],
						      size_t hn, const uint8_t *payload,
						      size_t body, size_t stride, uint32_t n,
						      uint64_t *prev, uint64_t *ts_min,
						      uint64_t *ts_max, unsigned wide)
{
	uint64_t last = *prev, lo = *ts_min, hi = *ts_max;
	uint8_t *start = o;

	for (uint32_t i = 0; i < n; i++, payload += stride) {
		uint64_t ts, d;

		memcpy(&ts, payload, sizeof(ts));
		d = ts - last;
		last = ts;
		lo = ts < lo ? ts : lo;
		hi = ts > hi ? ts : hi;
		memcpy(o, head, 8);
		o += hn;
		o += ringlog_pack_varint(o, d << 1 ^ (uint64_t)-(int64_t)(d >> 63));
		ringlog_pack_copy_as(o, payload + 8, body, wide);
		o += body;
	}
	*prev = last;
	*ts_min = lo;
	*ts_max = hi;
	return (size_t)(o - start);
}

static inline size_t ringlog_pack_run(uint8_t *o, uint16_t type, uint16_t aux,
				      const uint8_t *payload, uint32_t len, size_t stride,
				      uint32_t n, uint64_t *prev, uint64_t *ts_min,
				      uint64_t *ts_max)
{
	unsigned kind = type == RINGLOG_REC_EVENT ? RINGLOG_PACK_EVENT : RINGLOG_PACK_EVENT_ACT;
	uint8_t head[8] = { 0 };
	size_t hn = ringlog_pack_varint(head, (uint64_t)aux << 2 | kind), body = len - 8u;

	hn += ringlog_pack_varint(head + hn, len); /* at most 3 + 2 bytes */
	if (body >= 16 && body <= 32)
		return ringlog_pack_run_as(o, head, hn, payload, body, stride, n, prev, ts_min,
					   ts_max, 16);
	if (body > 32 && body <= 64)
		return ringlog_pack_run_as(o, head, hn, payload, body, stride, n, prev, ts_min,
					   ts_max, 32);
	return ringlog_pack_run_as(o, head, hn, payload, body, stride, n, prev, ts_min, ts_max, 0);
}

/* Read a varint of at most `max` bits from [*p, end); 0, or -1 if it is
 * cut off, too long or over-long. */
static inline int ringlog_unpack_varint(const uint8_t **p, const uint8_t *end, unsigned max,
					uint64_t *v)
{
	uint64_t x = 0;

	for (unsigned shift = 0; *p < end && shift < max; shift += 7) {
		uint8_t b = *(*p)++;

		if (shift > 57 && (b & 0x7f) >> (64 - shift))
			return -1; /* past 64 bits */
		x |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			if ((shift && !b) || (max < 64 && x >> max))
				return -1;
			*v = x;
			return 0;
		}
	}
	return -1;
}

/* Unpack the record at *p (after any filler) into h and payload (room for
 * RINGLOG_REC_MAX_LEN bytes), the ring record as the producer wrote it.
 * Returns 1 with *p past it, 0 at the end of the body (only filler left), or
 * -1 with *why set: the rest of the body cannot be read. */
static inline int ringlog_unpack_rec(const uint8_t **p, const uint8_t *end, uint64_t *prev,
				     struct ringlog_rec_hdr *h, uint8_t *payload, const char **why)
{
	uint64_t tag, len, zz;
	unsigned kind;
	size_t rest;

	while (*p < end && **p == 0)
		(*p)++;
	if (*p == end)
		return 0;
	if (ringlog_unpack_varint(p, end, 18, &tag) || !(kind = tag & 3)) {
		*why = "packed record tag is invalid";
		return -1;
	}
	if (ringlog_unpack_varint(p, end, 14, &len) || len > RINGLOG_REC_MAX_LEN ||
	    (kind != RINGLOG_PACK_LOSS && len < 8)) {
		*why = "packed record length is invalid";
		return -1;
	}
	h->len = (uint32_t)len;
	h->aux = (uint16_t)(tag >> 2);
	h->type = kind == RINGLOG_PACK_EVENT ? RINGLOG_REC_EVENT
		  : kind == RINGLOG_PACK_EVENT_ACT ? RINGLOG_REC_EVENT_ACT : RINGLOG_REC_LOSS;
	rest = (size_t)len;
	if (kind != RINGLOG_PACK_LOSS) {
		uint64_t ts;

		if (ringlog_unpack_varint(p, end, 64, &zz)) {
			*why = "packed record timestamp is invalid";
			return -1;
		}
		ts = *prev + (zz >> 1 ^ (uint64_t)-(int64_t)(zz & 1));
		*prev = ts;
		memcpy(payload, &ts, sizeof(ts));
		payload += 8;
		rest -= 8;
	}
	if (rest > (size_t)(end - *p)) {
		*why = "packed record runs past its PACK";
		return -1;
	}
	memcpy(payload, *p, rest);
	*p += rest;
	return 1;
}

#endif /* RINGLOG_PROTO_PACK_H */
