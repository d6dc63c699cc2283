/* tests/test-crc32c.c - the chunk checksum against a bit-by-bit reference
 * written here from the definition (CRC-32C, reflected polynomial
 * 0x82F63B78, initial and final inversion), at every length around the
 * three-stream path's block boundaries, at odd alignments, and chained. */
#include <criterion/criterion.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "segment.h"

static uint32_t reference(uint32_t crc, const uint8_t *p, size_t len)
{
	crc = ~crc;
	while (len--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = crc & 1 ? (crc >> 1) ^ 0x82f63b78u : crc >> 1;
	}
	return ~crc;
}

Test(crc32c, known_vectors)
{
	static const uint8_t zeros[32], ones[32] = { [0 ... 31] = 0xff };

	/* RFC 3720 (iSCSI) B.4 and the usual check value */
	cr_expect_eq(ringlog_crc32c(0, "123456789", 9), 0xe3069283u);
	cr_expect_eq(ringlog_crc32c(0, zeros, 32), 0x8a9136aau);
	cr_expect_eq(ringlog_crc32c(0, ones, 32), 0x62a8ab43u);
	cr_expect_eq(ringlog_crc32c(0, "", 0), 0);
}

Test(crc32c, every_length_and_alignment_matches_the_definition)
{
	enum { MAX = 3 * 4096 * 2 + 100 };
	uint8_t *buf = malloc(MAX + 8);
	uint32_t seed = 12345;

	cr_assert(buf);
	for (size_t i = 0; i < MAX + 8; i++) {
		seed = seed * 1103515245u + 12345u;
		buf[i] = (uint8_t)(seed >> 16);
	}
	/* around 3 x 4096 (one round of three streams) and twice that */
	for (size_t len = 0; len < MAX; len += len < 64 ? 1 : len > 12200 && len < 12400 ? 1 :
							   len > 24500 && len < 24700 ? 1 : 97)
		for (size_t off = 0; off < 8; off += 3)
			cr_assert_eq(ringlog_crc32c(0, buf + off, len), reference(0, buf + off, len),
				     "length %zu at offset %zu", len, off);
	/* chaining: the CRC of a whole equals the CRC continued over parts */
	for (size_t cut = 0; cut < MAX; cut += 4099)
		cr_assert_eq(ringlog_crc32c(ringlog_crc32c(0, buf, cut), buf + cut, MAX - cut),
			     reference(0, buf, MAX), "cut at %zu", cut);
	free(buf);
}

/* The widest path this CPU has (proto/crc32c.c: VPCLMULQDQ folding from
 * 512 bytes, 256 per step, then 64, then 16, then the crc32 instruction)
 * at every length up to where each of its loops has run a few times, every
 * remainder of each, and on a whole chunk (1 MiB). */
Test(crc32c, the_folding_path_matches_the_definition_at_every_remainder)
{
	enum { BIG = 1 << 20 };
	uint8_t *buf = malloc(BIG + 8);
	uint32_t seed = 777;

	if (strcmp(ringlog_crc32c_impl(), "vpclmulqdq") != 0) {
		free(buf);
		cr_skip_test("this CPU computes CRC32C with %s: it has no VPCLMULQDQ and AVX-512 "
			     "(or the build is for Windows), so the folding path is not used",
			     ringlog_crc32c_impl());
	}
	cr_assert(buf);
	for (size_t i = 0; i < BIG + 8; i++) {
		seed = seed * 1103515245u + 12345u;
		buf[i] = (uint8_t)(seed >> 16);
	}
	for (size_t len = 480; len < 1600; len++)
		for (size_t off = 0; off < 3; off++)
			cr_assert_eq(ringlog_crc32c(0xdeadbeef, buf + off, len),
				     reference(0xdeadbeef, buf + off, len), "length %zu at offset %zu",
				     len, off);
	cr_assert_eq(ringlog_crc32c(0, buf + 1, BIG), reference(0, buf + 1, BIG), "1 MiB");
	free(buf);
}
