/* tests/fuzz/fuzz-meta.h - the input layout the encoder fuzz targets share:
 * two bytes giving how much of the input is metadata entries (as a program
 * writes them, parsed by the real parser into m), then the payload bytes. */
#ifndef RINGLOG_FUZZ_META_H
#define RINGLOG_FUZZ_META_H

#include <stddef.h>
#include <stdint.h>

#include "meta.h"

/* Parse the metadata part of (*d, *n) into m (initialised here; the caller
 * frees it), leave *d, *n past the length prefix; returns the metadata's
 * length, the payload being the rest. -1 when the input is too short. */
static inline long fuzz_meta(const uint8_t **d, size_t *n, struct ringlog_meta *m)
{
	size_t mlen, off = 0;

	if (*n < 2)
		return -1;
	mlen = (size_t)((*d)[0] | (*d)[1] << 8);
	*d += 2;
	*n -= 2;
	if (mlen > *n)
		mlen = *n;
	ringlog_meta_init(m);
	while (off + 8 <= mlen) {
		const char *why;
		long k = ringlog_meta_add(m, *d + off, mlen - off, &why);

		if (k <= 0)
			break;
		off += (size_t)k;
	}
	return (long)mlen;
}

#endif /* RINGLOG_FUZZ_META_H */
