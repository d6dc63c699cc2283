/* proto/crc32c.c - CRC32C (Castagnoli, reflected polynomial 0x82F63B78), the
 * checksum of segment chunks. x86-64 CPUs with SSE4.2 compute it in hardware
 * at several GB/s, which keeps checksumming far below the cost of the write;
 * elsewhere a byte table does it.
 */
#include "segment.h"

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
__attribute__((target("sse4.2")))
static uint32_t crc_hw(uint32_t crc, const uint8_t *p, size_t len)
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
