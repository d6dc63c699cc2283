/* proto/crc32c.c - CRC32C (Castagnoli, reflected polynomial 0x82F63B78), the
 * checksum of segment chunks. x86-64 CPUs with SSE4.2 compute it in hardware
 * at several GB/s, which keeps checksumming far below the cost of the write;
 * elsewhere a byte table does it.
 */
#include "segment.h"

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

static bool have_hw(void)
{
	static int cached = -1;

	if (cached < 0)
		cached = __builtin_cpu_supports("sse4.2") ? 1 : 0;
	return cached;
}
#endif

uint32_t ringlog_crc32c(uint32_t crc, const void *buf, size_t len)
{
	crc = ~crc;
#if defined(__x86_64__) && defined(__GNUC__)
	if (have_hw())
		return ~crc_hw(crc, buf, len);
#endif
	return ~crc_sw(crc, buf, len);
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
