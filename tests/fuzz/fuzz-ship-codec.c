/* tests/fuzz/fuzz-ship-codec.c - the zstd frame of a shipped message
 * (proto/ship-codec.h) as `ringlog read --nats` meets a damaged or forged
 * one: input = the header's decoded size (4 bytes, little-endian), then
 * the frame. Decoding must refuse or give exactly that many bytes. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ship-codec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ringlog_ship_zbuf z = { 0 };
	const char *why = NULL;
	uint32_t want;
	int rc;

	if (size < 4)
		return 0;
	want = (uint32_t)data[0] | (uint32_t)data[1] << 8 | (uint32_t)data[2] << 16 |
	       (uint32_t)data[3] << 24;
	/* sizes over the cap are refused before anything is allocated; below
	 * it, keep inputs cheap: at most 1 MiB */
	if (want <= RINGLOG_SHIP_DECODED_MAX)
		want %= 1u << 20;
	rc = ringlog_ship_decompress(&z, data + 4, size - 4, want, &why);
	if (rc == 0 && z.len != want)
		abort(); /* decoded to another size than asked */
	if (rc < 0 && rc != -ENOMEM && !why)
		abort(); /* a refusal must say why */
	ringlog_ship_zbuf_free(&z);
	return 0;
}
