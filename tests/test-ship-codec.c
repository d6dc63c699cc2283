/* tests/test-ship-codec.c - the zstd frame of a compressed shipped
 * message (proto/ship-codec.h): what the sender writes after the header is
 * a frame as RFC 8878 lays it out, with its decoded size and checksum; what
 * a reader is given is trusted for nothing. */
#include <criterion/criterion.h>

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "ship.h"
#include "ship-codec.h"

/* A message as ship-disk.c builds one: a header, then records that repeat
 * with a growing sequence and time, as a chunk's do. */
static uint8_t *message(size_t *len)
{
	size_t n = RINGLOG_SHIP_HDR_SIZE + 200000;
	uint8_t *m = calloc(1, n);
	struct ringlog_ship_hdr h = { .magic = RINGLOG_SHIP_MAGIC, .version = RINGLOG_SHIP_VERSION,
				      .header_size = RINGLOG_SHIP_HDR_SIZE, .body_len = 200000,
				      .events = 5000 };

	cr_assert(m);
	memcpy(m, &h, sizeof(h));
	for (size_t i = 0; i < 5000; i++) {
		uint64_t seq = i, ts = 1000000000ull + i * 997;

		memcpy(m + RINGLOG_SHIP_HDR_SIZE + i * 40, &seq, 8);
		memcpy(m + RINGLOG_SHIP_HDR_SIZE + i * 40 + 8, &ts, 8);
		memcpy(m + RINGLOG_SHIP_HDR_SIZE + i * 40 + 16, "GET /index.html 200 ok!", 24);
	}
	*len = n;
	return m;
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

Test(ship_codec, a_message_round_trips_at_every_level_in_one_checked_frame)
{
	size_t len;
	uint8_t *m = message(&len);
	struct ringlog_ship_zbuf z = { 0 }, u = { 0 };
	const char *why;

	for (int level = 1; level <= RINGLOG_SHIP_ZSTD_LEVEL_MAX; level++) {
		const uint8_t *f;
		uint8_t fhd;
		unsigned fcs_size;
		uint64_t fcs = 0;

		/* the frame goes after room for the ship header */
		cr_assert_eq(ringlog_ship_compress(&z, level, RINGLOG_SHIP_HDR_SIZE, m, len, &why), 0,
			     "level %d: %s", level, why);
		cr_assert_gt(z.len, RINGLOG_SHIP_HDR_SIZE);
		f = z.data + RINGLOG_SHIP_HDR_SIZE;
		cr_expect_lt(z.len, len / 4, "level %d: %zu of %zu bytes", level, z.len, len);
		/* RFC 8878 3.1.1: magic 0xFD2FB528, then the frame header
		 * descriptor: Frame_Content_Size_Flag (bits 7-6),
		 * Single_Segment_Flag (bit 5), Content_Checksum_Flag (bit 2) */
		cr_assert_eq(le32(f), 0xFD2FB528u);
		fhd = f[4];
		cr_expect(fhd & 0x04, "level %d: no content checksum (descriptor %02x)", level, fhd);
		fcs_size = (unsigned[]){ (fhd & 0x20) ? 1 : 0, 2, 4, 8 }[fhd >> 6];
		cr_assert(fcs_size, "level %d: the decoded size is not in the frame header", level);
		/* the size is the header's last field; window descriptor
		 * (absent with Single_Segment_Flag) and dictionary id (none)
		 * before it */
		{
			const uint8_t *p = f + 5 + ((fhd & 0x20) ? 0 : 1);

			for (unsigned i = 0; i < fcs_size; i++)
				fcs |= (uint64_t)p[i] << (8 * i);
			if (fcs_size == 2)
				fcs += 256;
		}
		cr_expect_eq(fcs, len, "level %d: frame says %llu bytes, the message has %zu", level,
			     (unsigned long long)fcs, len);
		cr_assert_eq(ringlog_ship_decompress(&u, f, z.len - RINGLOG_SHIP_HDR_SIZE, len, &why), 0,
			     "level %d: %s", level, why);
		cr_assert_eq(u.len, len);
		cr_expect_eq(memcmp(u.data, m, len), 0, "level %d: decoded bytes differ", level);
	}
	ringlog_ship_zbuf_free(&z);
	ringlog_ship_zbuf_free(&u);
	free(m);
}

/* The same bytes give the same frame: a chunk sent again after a failure
 * is the same message after its header, as Nats-Msg-Id promises. */
Test(ship_codec, the_same_message_gives_the_same_bytes)
{
	size_t len;
	uint8_t *m = message(&len), *first;
	struct ringlog_ship_zbuf z = { 0 };
	const char *why;
	size_t flen;

	cr_assert_eq(ringlog_ship_compress(&z, 1, 0, m, len, &why), 0);
	flen = z.len;
	first = malloc(flen);
	memcpy(first, z.data, flen);
	cr_assert_eq(ringlog_ship_compress(&z, 3, 0, m, len, &why), 0); /* the context is reused */
	cr_assert_eq(ringlog_ship_compress(&z, 1, 0, m, len, &why), 0);
	cr_assert_eq(z.len, flen);
	cr_expect_eq(memcmp(z.data, first, flen), 0);
	free(first);
	ringlog_ship_zbuf_free(&z);
	free(m);
}

static void refused(const void *frame, size_t len, size_t want, const char *expect)
{
	struct ringlog_ship_zbuf u = { 0 };
	const char *why = NULL;

	cr_expect_eq(ringlog_ship_decompress(&u, frame, len, want, &why), -EINVAL, "accepted (%s)",
		     expect);
	cr_expect(why && strstr(why, expect), "said \"%s\", not \"%s\"", why ? why : "(nothing)",
		  expect);
	ringlog_ship_zbuf_free(&u);
}

Test(ship_codec, a_reader_refuses_what_is_not_one_whole_honest_frame)
{
	size_t len, cap, n;
	uint8_t *m = message(&len), *two, *big;
	struct ringlog_ship_zbuf z = { 0 };
	const char *why;
	ZSTD_CCtx *cc = ZSTD_createCCtx();

	cr_assert_eq(ringlog_ship_compress(&z, 1, 0, m, len, &why), 0);
	refused("not zstd at all", 15, len, "not a zstd frame");
	refused(z.data, 3, len, "not a zstd frame");
	/* the header says other lengths than the frame */
	refused(z.data, z.len, len - 1, "decoded size is not the header's");
	refused(z.data, z.len, (64u << 20) + 1, "over 64 MiB");
	/* cut short: the last block and the checksum missing (zstd's words) */
	refused(z.data, z.len - 10, len, "");
	/* one byte changed near the end, in the checksum: zstd says so */
	z.data[z.len - 2] ^= 0x40;
	refused(z.data, z.len, len, "checksum");
	z.data[z.len - 2] ^= 0x40;
	/* two frames back to back: the second is not part of the message */
	two = malloc(2 * z.len);
	memcpy(two, z.data, z.len);
	memcpy(two + z.len, z.data, z.len);
	refused(two, 2 * z.len, len, "bytes follow the zstd frame");
	free(two);
	/* a frame that does not state its size (contentSizeFlag off) */
	cap = ZSTD_compressBound(len);
	two = malloc(cap);
	ZSTD_CCtx_setParameter(cc, ZSTD_c_contentSizeFlag, 0);
	n = ZSTD_compress2(cc, two, cap, m, len);
	cr_assert(!ZSTD_isError(n));
	refused(two, n, len, "does not state its decoded size");
	free(two);
	/* one that states more than a message may be (65 MiB of zeros
	 * compress to a few KiB), with a header that says the same: refused
	 * before anything is allocated */
	big = calloc(1, (65u << 20));
	cr_assert(big);
	cap = ZSTD_compressBound(65u << 20);
	two = malloc(cap);
	ZSTD_CCtx_reset(cc, ZSTD_reset_session_and_parameters);
	n = ZSTD_compress2(cc, two, cap, big, 65u << 20);
	cr_assert(!ZSTD_isError(n));
	refused(two, n, 65u << 20, "over 64 MiB");
	free(two);
	free(big);
	ZSTD_freeCCtx(cc);
	ringlog_ship_zbuf_free(&z);
	free(m);
}
