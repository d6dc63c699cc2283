/* daemon/sink/forward/sha1.c - SHA-1 as FIPS 180-4 describes it: 80 rounds over 64-byte
 * blocks, big-endian words, the message padded with 0x80, zeros and its
 * length in bits. Speed does not matter: it hashes a provider name once. */
#include "sha1.h"

#include <string.h>

static uint32_t rol(uint32_t x, unsigned n)
{
	return x << n | x >> (32 - n);
}

static void block(uint32_t h[5], const uint8_t *p)
{
	uint32_t w[80], a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];

	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		       (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (int i = 16; i < 80; i++)
		w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
	for (int i = 0; i < 80; i++) {
		uint32_t f, k, t;

		if (i < 20) {
			f = (b & c) | (~b & d);
			k = 0x5a827999;
		} else if (i < 40) {
			f = b ^ c ^ d;
			k = 0x6ed9eba1;
		} else if (i < 60) {
			f = (b & c) | (b & d) | (c & d);
			k = 0x8f1bbcdc;
		} else {
			f = b ^ c ^ d;
			k = 0xca62c1d6;
		}
		t = rol(a, 5) + f + e + k + w[i];
		e = d;
		d = c;
		c = rol(b, 30);
		b = a;
		a = t;
	}
	h[0] += a;
	h[1] += b;
	h[2] += c;
	h[3] += d;
	h[4] += e;
}

void ringlog_sha1_init(struct ringlog_sha1 *s)
{
	static const uint32_t iv[5] = { 0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476,
					0xc3d2e1f0 };

	memcpy(s->h, iv, sizeof(iv));
	s->bytes = 0;
}

void ringlog_sha1_update(struct ringlog_sha1 *s, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n) {
		size_t have = (size_t)(s->bytes % 64), take = 64 - have < n ? 64 - have : n;

		memcpy(s->block + have, b, take);
		s->bytes += take;
		b += take;
		n -= take;
		if (have + take == 64)
			block(s->h, s->block);
	}
}

void ringlog_sha1_final(struct ringlog_sha1 *s, uint8_t digest[20])
{
	uint64_t bits = s->bytes * 8;
	uint8_t pad = 0x80, zero = 0, len[8];

	ringlog_sha1_update(s, &pad, 1);
	while (s->bytes % 64 != 56)
		ringlog_sha1_update(s, &zero, 1);
	for (int i = 0; i < 8; i++)
		len[i] = (uint8_t)(bits >> (56 - 8 * i));
	ringlog_sha1_update(s, len, 8);
	for (int i = 0; i < 20; i++)
		digest[i] = (uint8_t)(s->h[i / 4] >> (24 - 8 * (i % 4)));
}
