/* tests/test-pack.c - the packed record form of segment files (proto/pack.h):
 * exact bytes, round trips at every edge, and every malformed input the
 * unpacker must refuse rather than misread. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "pack.h"

struct rec {
	uint16_t type, aux;
	uint32_t len;
	uint8_t payload[RINGLOG_REC_MAX_LEN];
};

static void make(struct rec *r, uint16_t type, uint16_t aux, uint32_t len, uint64_t ts,
		 uint8_t fill)
{
	r->type = type;
	r->aux = aux;
	r->len = len;
	for (uint32_t i = 0; i < len; i++)
		r->payload[i] = (uint8_t)(fill + i * 7);
	if (type != RINGLOG_REC_LOSS)
		memcpy(r->payload, &ts, sizeof(ts));
}

/* Unpack one record from [p, end) and compare it with r. */
static void expect_same(const uint8_t **p, const uint8_t *end, uint64_t *prev, const struct rec *r)
{
	static uint8_t payload[RINGLOG_REC_MAX_LEN];
	struct ringlog_rec_hdr h;
	const char *why = NULL;
	int rc = ringlog_unpack_rec(p, end, prev, &h, payload, &why);

	cr_assert_eq(rc, 1, "unpack: %d (%s)", rc, why ? why : "-");
	cr_expect_eq(h.type, r->type);
	cr_expect_eq(h.aux, r->aux);
	cr_expect_eq(h.len, r->len);
	cr_expect(memcmp(payload, r->payload, r->len) == 0, "payload of aux %u len %u differs",
		  r->aux, r->len);
}

Test(pack, the_48_byte_event_is_36_bytes_and_exactly_these)
{
	static const uint8_t want[] = {
		0x15,       /* tag: aux 5 << 2 | EVENT */
		0x28,       /* len 40: ts and four u64 */
		0xc8, 0x01, /* ts delta +100, zigzag 200 */
	};
	struct rec r;
	uint8_t out[64];
	uint64_t prev = 1000;

	make(&r, RINGLOG_REC_EVENT, 5, 40, 1100, 1);
	cr_assert_eq(ringlog_pack_rec(out, r.type, r.aux, r.payload, r.len, &prev), 36);
	cr_expect_eq(prev, 1100);
	cr_expect(memcmp(out, want, sizeof(want)) == 0);
	cr_expect(memcmp(out + 4, r.payload + 8, 32) == 0, "fields follow unchanged");
}

Test(pack, a_clock_stepping_back_and_every_edge_round_trip)
{
	static uint8_t buf[1 << 20];
	static struct rec recs[64];
	const uint64_t ts[] = { 0, 1, UINT64_MAX, 0, 1ull << 63, (1ull << 63) - 1, 5, 4, 4,
				123456789012345ull };
	const uint32_t lens[] = { 8, 9, 15, 16, 40, 127, 128, 4096, RINGLOG_REC_MAX_LEN };
	const uint16_t auxes[] = { 0, 1, 31, 32, 4095, 16383, 16384, 65535 };
	size_t n = 0, at = 0;
	uint64_t prev = 0;
	int k = 0;

	for (size_t i = 0; i < sizeof(ts) / sizeof(ts[0]); i++)
		make(&recs[n++], i & 1 ? RINGLOG_REC_EVENT_ACT : RINGLOG_REC_EVENT,
		     auxes[i % 8], lens[i % 9], ts[i], (uint8_t)i);
	for (size_t i = 0; i < 9; i++)
		make(&recs[n++], RINGLOG_REC_EVENT, auxes[(i + 3) % 8], lens[i], 77 * i, (uint8_t)(i + 50));
	make(&recs[n++], RINGLOG_REC_LOSS, 0, 32, 0, 9);
	make(&recs[n++], RINGLOG_REC_LOSS, 65535, 0, 0, 9);
	for (size_t i = 0; i < n; i++) {
		size_t w = ringlog_pack_rec(buf + at, recs[i].type, recs[i].aux, recs[i].payload,
					    recs[i].len, &prev);

		cr_assert_leq(w, RINGLOG_PACK_MAX(recs[i].len), "record %zu packs past the bound", i);
		at += w;
		/* Filler between records, as the packer pads each batch */
		if (i % 3 == 0)
			for (int f = 0; f < 5; f++)
				buf[at++] = 0;
	}
	const uint8_t *p = buf, *end = buf + at;

	prev = 0;
	for (size_t i = 0; i < n; i++, k++)
		expect_same(&p, end, &prev, &recs[i]);
	cr_expect_eq(k, (int)n);
	{
		struct ringlog_rec_hdr h;
		const char *why = NULL;
		uint8_t pl[64];

		cr_expect_eq(ringlog_unpack_rec(&p, end, &prev, &h, pl, &why), 0, "the end");
	}
}

/* Each case: bytes that must be refused with this reason. */
Test(pack, malformed_records_are_refused_with_a_reason)
{
	static const struct {
		const char *name;
		uint8_t b[24];
		size_t n;
		const char *why;
	} cases[] = {
		{ "tag cut off", { 0x81 }, 1, "tag is invalid" },
		{ "tag over-long", { 0x81, 0x00 }, 2, "tag is invalid" },
		{ "kind 0", { 0x04, 0x08 }, 2, "tag is invalid" },
		{ "tag past 18 bits", { 0xfd, 0xff, 0x7f, 0x08 }, 4, "tag is invalid" },
		{ "len cut off", { 0x01 }, 1, "length is invalid" },
		{ "len past the ring's maximum", { 0x01, 0xf9, 0x7f }, 3, "length is invalid" },
		{ "len past 14 bits", { 0x01, 0x80, 0x80, 0x01 }, 4, "length is invalid" },
		{ "event shorter than its timestamp", { 0x01, 0x07, 0x00 }, 3, "length is invalid" },
		{ "ts cut off", { 0x01, 0x08, 0x80 }, 3, "timestamp is invalid" },
		{ "ts of 11 bytes", { 0x01, 0x08, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
				      0x80, 0x01 }, 13, "timestamp is invalid" },
		{ "ts past 64 bits", { 0x01, 0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
				       0x02 }, 12, "timestamp is invalid" },
		{ "payload past the end", { 0x01, 0x10, 0x02, 1, 2, 3 }, 6, "runs past its PACK" },
		{ "LOSS past the end", { 0x03, 0x20, 1, 2, 3 }, 5, "runs past its PACK" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		static uint8_t pl[RINGLOG_REC_MAX_LEN];
		const uint8_t *p = cases[i].b;
		struct ringlog_rec_hdr h;
		const char *why = NULL;
		uint64_t prev = 0;
		int rc = ringlog_unpack_rec(&p, cases[i].b + cases[i].n, &prev, &h, pl, &why);

		cr_expect_eq(rc, -1, "%s: unpacked (%d)", cases[i].name, rc);
		cr_expect(why && strstr(why, cases[i].why), "%s: reason \"%s\", want \"%s\"",
			  cases[i].name, why ? why : "(none)", cases[i].why);
	}
}

Test(pack, the_largest_64_bit_timestamp_step_still_reads)
{
	/* zigzag(UINT64_MAX - 0) is 1 (a step of -1); the step from 0 to
	 * 2^63 is zigzag 2^64 - 1, ten bytes ending in 0x01 */
	uint8_t out[64];
	struct rec r;
	uint64_t prev = 0;
	size_t n;

	make(&r, RINGLOG_REC_EVENT, 0, 8, 1ull << 63, 0);
	n = ringlog_pack_rec(out, r.type, r.aux, r.payload, r.len, &prev);
	cr_assert_eq(n, 12);
	cr_expect_eq(out[11], 0x01);
	const uint8_t *p = out;

	prev = 0;
	expect_same(&p, out + n, &prev, &r);
}

/* The store packs a run of records of one kind in one loop
 * (ringlog_pack_run()): the bytes must be those of one ringlog_pack_rec()
 * per record, for every size of header varint, timestamps going back and
 * jumping, and records spaced as in a ring. */
Test(pack, a_run_packs_to_the_same_bytes_as_its_records_one_by_one)
{
	static uint8_t ring[1 << 16], one[1 << 17], run[1 << 17];
	/* bodies (len - 8) of every copy class: 0..15, 16..32, 33..64, more */
	const uint32_t lens[] = { 8, 9, 15, 16, 24, 33, 40, 41, 48, 72, 73, 127, 128, 200 };
	const uint16_t auxes[] = { 0, 1, 31, 32, 4095, 16383, 16384, 65535 };
	const uint64_t steps[] = { 1, 0, UINT64_MAX, 1ull << 63, 300, (uint64_t)-5, 1ull << 40 };

	for (int t = 0; t < 2; t++)
		for (size_t a = 0; a < 8; a++)
			for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
				uint16_t type = t ? RINGLOG_REC_EVENT_ACT : RINGLOG_REC_EVENT;
				uint32_t len = lens[l], n = 1 + (uint32_t)(a * 8 + l) % 37;
				size_t stride = ringlog_rec_total(len), w1 = 0, w2;
				uint64_t ts = 1000 + a, p1 = 999, p2 = 999;
				uint64_t lo = UINT64_MAX, hi = 0, want_lo = UINT64_MAX, want_hi = 0;

				cr_assert_leq(n * stride, sizeof(ring));
				for (uint32_t i = 0; i < n; i++) {
					uint8_t *p = ring + i * stride;

					ts += steps[(i + l) % 7];
					for (uint32_t b = 0; b < len; b++)
						p[b] = (uint8_t)(i * 13 + b);
					memcpy(p, &ts, sizeof(ts));
					want_lo = ts < want_lo ? ts : want_lo;
					want_hi = ts > want_hi ? ts : want_hi;
					w1 += ringlog_pack_rec(one + w1, type, auxes[a], p, len, &p1);
				}
				memset(run, 0xee, sizeof(run));
				w2 = ringlog_pack_run(run, type, auxes[a], ring, len, stride, n, &p2,
						      &lo, &hi);
				cr_assert_eq(w2, w1, "type %u aux %u len %u n %u: %zu bytes, not %zu",
					     type, auxes[a], len, n, w2, w1);
				cr_assert(memcmp(run, one, w1) == 0, "type %u aux %u len %u n %u differs",
					  type, auxes[a], len, n);
				cr_assert_leq(w2, n * RINGLOG_PACK_MAX(len));
				cr_expect_eq(p2, p1, "the next record's delta starts from the last");
				cr_expect_eq(lo, want_lo);
				cr_expect_eq(hi, want_hi);
			}
}
