/* proto/crc32c.c - CRC32C (Castagnoli, reflected polynomial 0x82F63B78), the
 * checksum of segment chunks. x86-64 CPUs with SSE4.2 compute it in hardware
 * at several GB/s (the crc32 instruction, three streams at once); those with
 * VPCLMULQDQ and AVX-512 fold 256 bytes per step with carry-less multiplies,
 * about four times that; elsewhere a byte table does it. The daemon checksums
 * every byte it stores, so at 50 M events/s this was 12-14 % of its CPU.
 */
#include "segment.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#if !defined(_WIN32)
/* Not on Windows: mingw-w64's GCC does not realign the stack for 64-byte
 * spills (GCC bug 54412), which zmm code may need. */
#define CRC_FOLD 1
#endif
#endif
#include <pthread.h>
#include <stdbool.h>
#include <string.h>

static uint32_t table[256];

static void init_table(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
		table[i] = c;
	}
}

static uint32_t crc_sw(uint32_t crc, const uint8_t *p, size_t len)
{
	static bool ready;

	if (!__atomic_load_n(&ready, __ATOMIC_ACQUIRE)) {
		init_table(); /* idempotent: racing threads compute the same table */
		__atomic_store_n(&ready, true, __ATOMIC_RELEASE);
	}
	while (len--)
		crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

#if defined(__x86_64__) && defined(__GNUC__)
/* The crc32 instruction takes 3 cycles but can start one per cycle: three
 * independent streams over three blocks run three times as fast as one.
 * The blocks are then joined: with the register not inverted (as inside
 * ringlog_crc32c), CRC(A || B) = shift(CRC(A), |B|) ^ CRC_from_0(B), where
 * shift() runs the register over |B| zero bytes. That is linear in the
 * register, so it is four table lookups, one per register byte; the tables
 * are computed once, with the instruction itself. */
#define BLOCK 4096u

static uint32_t shift_table[4][256];
static pthread_once_t shift_once = PTHREAD_ONCE_INIT;

__attribute__((target("sse4.2")))
static uint32_t crc_hw_1(uint32_t crc, const uint8_t *p, size_t len)
{
	uint64_t c = crc;

	for (; len >= 8; len -= 8, p += 8) {
		uint64_t v;

		memcpy(&v, p, 8);
		c = __builtin_ia32_crc32di(c, v);
	}
	crc = (uint32_t)c;
	while (len--)
		crc = __builtin_ia32_crc32qi(crc, *p++);
	return crc;
}

__attribute__((target("sse4.2")))
static void shift_init(void)
{
	for (unsigned k = 0; k < 4; k++)
		for (unsigned b = 0; b < 256; b++) {
			uint64_t c = (uint64_t)b << (8 * k);

			for (unsigned i = 0; i < BLOCK / 8; i++)
				c = __builtin_ia32_crc32di(c, 0);
			shift_table[k][b] = (uint32_t)c;
		}
}

static uint32_t shift_block(uint32_t crc)
{
	return shift_table[0][crc & 0xff] ^ shift_table[1][(crc >> 8) & 0xff] ^
	       shift_table[2][(crc >> 16) & 0xff] ^ shift_table[3][crc >> 24];
}

__attribute__((target("sse4.2")))
static uint32_t crc_hw(uint32_t crc, const uint8_t *p, size_t len)
{
	if (len >= 3 * BLOCK)
		pthread_once(&shift_once, shift_init);
	for (; len >= 3 * BLOCK; len -= 3 * BLOCK, p += 3 * BLOCK) {
		uint64_t c0 = crc, c1 = 0, c2 = 0;

		for (size_t i = 0; i < BLOCK; i += 8) {
			uint64_t v0, v1, v2;

			memcpy(&v0, p + i, 8);
			memcpy(&v1, p + BLOCK + i, 8);
			memcpy(&v2, p + 2 * BLOCK + i, 8);
			c0 = __builtin_ia32_crc32di(c0, v0);
			c1 = __builtin_ia32_crc32di(c1, v1);
			c2 = __builtin_ia32_crc32di(c2, v2);
		}
		crc = shift_block((uint32_t)c0) ^ (uint32_t)c1;
		crc = shift_block(crc) ^ (uint32_t)c2;
	}
	return crc_hw_1(crc, p, len);
}

#ifdef CRC_FOLD
/* Folding (Intel's "Fast CRC Computation for Generic Polynomials Using
 * PCLMULQDQ", in the bit-reflected form). A 128-bit block A stands for the
 * polynomial A(x) of the bits so far, the first bit the highest power;
 * its low qword L holds the higher powers: A = L x^64 + H. Moving A by D
 * bits, to the block D bits later, is
 *
 *     A x^D = L x^(D+64) + H x^D  ==  L (x^(D+64) mod P) + H (x^D mod P)
 *
 * mod P, and the CRC only needs the message mod P, so A becomes two 64 x 32
 * bit carry-less products XORed into that later block. The constants are
 * x^n mod P bit-reflected in 33 bits (n = D + 32 and D - 32: the reflected
 * product comes out one bit off, and the 33-bit placement 31 more); the
 * same formula gives the published CRC-32 constants, and tests/test-crc32c.c
 * checks the CRCs they give against the bit-by-bit definition. The initial
 * register is XORed into the first 4 bytes; the last 128-bit block then goes
 * through the crc32 instruction from 0, which gives (A x^|rest| + rest) x^32
 * mod P for the rest, the CRC of the whole. */
/* x^n mod P, reflected in 33 bits, for the three distances D used: */
#define X2080 0xdcb17aa4ull  /* D 2048 bits: 4 zmm (256 bytes) on, the main loop */
#define X2016 0xb9e02b86ull
#define X544 0x740eef02ull   /* D 512: one zmm to the next */
#define X480 0x9e4addf8ull
#define X160 0xf20c0dfeull   /* D 128: one 128-bit lane to the next */
#define X96 0x14cd00bd6ull
#define FOLD_MIN 512u /* below it the crc32 instruction is as fast */

#define FOLD_TARGET "avx512f,vpclmulqdq,pclmul,sse4.2"

__attribute__((target(FOLD_TARGET), always_inline))
static inline __m512i fold512(__m512i a, __m512i k, __m512i next)
{
	return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(a, k, 0x00),
					 _mm512_clmulepi64_epi128(a, k, 0x11), next, 0x96);
}

__attribute__((target(FOLD_TARGET), always_inline))
static inline __m128i fold128(__m128i a, __m128i k, __m128i next)
{
	return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(a, k, 0x00),
					   _mm_clmulepi64_si128(a, k, 0x11)), next);
}

/* A lane's constants: x^(D+32) for its low qword, x^(D-32) for its high. */
__attribute__((target(FOLD_TARGET), always_inline))
static inline __m128i lane_k(uint64_t up, uint64_t down)
{
	return _mm_set_epi64x((long long)down, (long long)up);
}

__attribute__((target(FOLD_TARGET)))
static uint32_t crc_fold(uint32_t crc, const uint8_t *p, size_t len)
{
	const __m512i k2048 = _mm512_broadcast_i32x4(lane_k(X2080, X2016));
	const __m512i k512 = _mm512_broadcast_i32x4(lane_k(X544, X480));
	const __m128i k128 = lane_k(X160, X96);
	__m512i x0 = _mm512_loadu_si512(p), x1 = _mm512_loadu_si512(p + 64);
	__m512i x2 = _mm512_loadu_si512(p + 128), x3 = _mm512_loadu_si512(p + 192);
	__m128i a;
	uint64_t c;

	x0 = _mm512_xor_si512(x0, _mm512_zextsi128_si512(_mm_cvtsi32_si128((int)crc)));
	for (p += 256, len -= 256; len >= 256; p += 256, len -= 256) {
		x0 = fold512(x0, k2048, _mm512_loadu_si512(p));
		x1 = fold512(x1, k2048, _mm512_loadu_si512(p + 64));
		x2 = fold512(x2, k2048, _mm512_loadu_si512(p + 128));
		x3 = fold512(x3, k2048, _mm512_loadu_si512(p + 192));
	}
	x1 = fold512(x0, k512, x1);
	x2 = fold512(x1, k512, x2);
	x3 = fold512(x2, k512, x3);
	for (; len >= 64; p += 64, len -= 64)
		x3 = fold512(x3, k512, _mm512_loadu_si512(p));
	a = fold128(_mm512_extracti32x4_epi32(x3, 0), k128, _mm512_extracti32x4_epi32(x3, 1));
	a = fold128(a, k128, _mm512_extracti32x4_epi32(x3, 2));
	a = fold128(a, k128, _mm512_extracti32x4_epi32(x3, 3));
	for (; len >= 16; p += 16, len -= 16)
		a = fold128(a, k128, _mm_loadu_si128((const __m128i *)(const void *)p));
	c = __builtin_ia32_crc32di(0, (uint64_t)_mm_cvtsi128_si64(a));
	c = __builtin_ia32_crc32di(c, (uint64_t)_mm_extract_epi64(a, 1));
	return crc_hw_1((uint32_t)c, p, len);
}

#endif /* CRC_FOLD */

#endif /* x86-64 */

/* The ways, in ringlog_crc32c_impl()'s order of names. */
enum { IMPL_TABLE, IMPL_SSE42, IMPL_FOLD };

static int impl(void)
{
	static int cached = -1;

	if (cached < 0) {
		cached = IMPL_TABLE;
#if defined(__x86_64__) && defined(__GNUC__)
		if (__builtin_cpu_supports("sse4.2"))
			cached = IMPL_SSE42;
#ifdef CRC_FOLD
		if (cached && __builtin_cpu_supports("avx512f") &&
		    __builtin_cpu_supports("vpclmulqdq") && __builtin_cpu_supports("pclmul"))
			cached = IMPL_FOLD;
#endif
#endif
	}
	return cached;
}

uint32_t ringlog_crc32c(uint32_t crc, const void *buf, size_t len)
{
	crc = ~crc;
#ifdef CRC_FOLD
	if (impl() == IMPL_FOLD && len >= FOLD_MIN)
		return ~crc_fold(crc, buf, len);
#endif
#if defined(__x86_64__) && defined(__GNUC__)
	if (impl() != IMPL_TABLE)
		return ~crc_hw(crc, buf, len);
#endif
	return ~crc_sw(crc, buf, len);
}

const char *ringlog_crc32c_impl(void)
{
	static const char *const name[] = { "table", "sse4.2", "vpclmulqdq" };

	return name[impl()];
}

uint32_t ringlog_seg_hdr_crc(const struct ringlog_seg_hdr *h)
{
	struct ringlog_seg_hdr c;

	memcpy(&c, h, 256);
	c.hdr_crc = 0;
	return ringlog_crc32c(0, &c, 256);
}

uint32_t ringlog_chunk_crc(const struct ringlog_chunk_hdr *h, const void *body)
{
	struct ringlog_chunk_hdr c = *h;

	c.crc = 0;
	return ringlog_crc32c(ringlog_crc32c(0, &c, sizeof(c)), body, h->body_len);
}

uint32_t ringlog_seg_snap_crc(const struct ringlog_seg_snap *s)
{
	struct ringlog_seg_snap c = *s;

	c.crc = 0;
	return ringlog_crc32c(0, &c, sizeof(c));
}
