/* proto/ship-codec.c - zstd frames of shipped messages (ship-codec.h). */
#include "ship-codec.h"

#include <errno.h>
#include <stdlib.h>

#include <zstd.h>

/* Room for n bytes in z->data. */
static int reserve(struct ringlog_ship_zbuf *z, size_t n)
{
	uint8_t *d;

	if (n <= z->cap)
		return 0;
	d = realloc(z->data, n);
	if (!d)
		return -ENOMEM;
	z->data = d;
	z->cap = n;
	return 0;
}

int ringlog_ship_compress(struct ringlog_ship_zbuf *z, int level, const void *src, size_t len,
			  const char **why)
{
	size_t r;

	*why = NULL;
	if (!z->ctx && !(z->ctx = ZSTD_createCCtx()))
		return -ENOMEM;
	/* the level may change on a reload; the checksum guards the decoded
	 * bytes end to end, the size lets a reader refuse a frame too large
	 * before decoding it */
	if (ZSTD_isError(ZSTD_CCtx_setParameter(z->ctx, ZSTD_c_compressionLevel, level)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(z->ctx, ZSTD_c_checksumFlag, 1)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(z->ctx, ZSTD_c_contentSizeFlag, 1))) {
		*why = "zstd refused the compression parameters";
		return -EIO;
	}
	if (reserve(z, ZSTD_compressBound(len)) < 0)
		return -ENOMEM;
	r = ZSTD_compress2(z->ctx, z->data, z->cap, src, len);
	if (ZSTD_isError(r)) {
		*why = ZSTD_getErrorName(r);
		return -EIO;
	}
	z->len = r;
	return 0;
}

int ringlog_ship_decompress(struct ringlog_ship_zbuf *z, const void *src, size_t len,
			    const char **why)
{
	unsigned long long n = ZSTD_getFrameContentSize(src, len);
	size_t r;

	*why = NULL;
	if (n == ZSTD_CONTENTSIZE_ERROR) {
		*why = "not a zstd frame";
		return -EINVAL;
	}
	if (n == ZSTD_CONTENTSIZE_UNKNOWN) {
		*why = "the zstd frame does not say its decoded size";
		return -EINVAL;
	}
	if (n == 0 || n > RINGLOG_SHIP_DECODED_MAX) {
		*why = "the zstd frame's decoded size is 0 or over 64 MiB";
		return -EINVAL;
	}
	if (reserve(z, (size_t)n) < 0)
		return -ENOMEM;
	r = ZSTD_decompress(z->data, (size_t)n, src, len);
	if (ZSTD_isError(r)) {
		*why = ZSTD_getErrorName(r);
		return -EINVAL;
	}
	if (r != n) {
		*why = "the zstd frame decoded to fewer bytes than it declares";
		return -EINVAL;
	}
	z->len = r;
	return 0;
}

void ringlog_ship_zbuf_free(struct ringlog_ship_zbuf *z)
{
	ZSTD_freeCCtx(z->ctx);
	free(z->data);
	z->ctx = NULL;
	z->data = NULL;
	z->cap = z->len = 0;
}
