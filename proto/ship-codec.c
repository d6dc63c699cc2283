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

int ringlog_ship_compress(struct ringlog_ship_zbuf *z, int level, size_t prefix, const void *src,
			  size_t len, const char **why)
{
	size_t r;

	*why = NULL;
	if (!z->cctx && !(z->cctx = ZSTD_createCCtx()))
		return -ENOMEM;
	/* the level may change on a reload; the checksum guards the decoded
	 * bytes end to end, the size lets a reader refuse a frame too large
	 * before decoding it */
	if (ZSTD_isError(ZSTD_CCtx_setParameter(z->cctx, ZSTD_c_compressionLevel, level)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(z->cctx, ZSTD_c_checksumFlag, 1)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(z->cctx, ZSTD_c_contentSizeFlag, 1))) {
		*why = "zstd refused the compression parameters";
		return -EIO;
	}
	if (reserve(z, prefix + ZSTD_compressBound(len)) < 0)
		return -ENOMEM;
	r = ZSTD_compress2(z->cctx, z->data + prefix, z->cap - prefix, src, len);
	if (ZSTD_isError(r)) {
		*why = ZSTD_getErrorName(r);
		return -EIO;
	}
	z->len = prefix + r;
	return 0;
}

int ringlog_ship_decompress(struct ringlog_ship_zbuf *z, const void *src, size_t len, size_t want,
			    const char **why)
{
	unsigned long long n;
	size_t r;

	*why = NULL;
	if (want > RINGLOG_SHIP_DECODED_MAX) {
		*why = "the header's descriptions and body are over 64 MiB";
		return -EINVAL;
	}
	n = ZSTD_getFrameContentSize(src, len);
	if (n == ZSTD_CONTENTSIZE_ERROR) {
		*why = "not a zstd frame";
		return -EINVAL;
	}
	if (n == ZSTD_CONTENTSIZE_UNKNOWN) {
		*why = "the zstd frame does not state its decoded size";
		return -EINVAL;
	}
	if (n != want) {
		*why = "the zstd frame's decoded size is not the header's";
		return -EINVAL;
	}
	/* exactly one frame: what follows it is not part of the message */
	r = ZSTD_findFrameCompressedSize(src, len);
	if (ZSTD_isError(r) || r != len) {
		*why = ZSTD_isError(r) ? ZSTD_getErrorName(r) : "bytes follow the zstd frame";
		return -EINVAL;
	}
	if (!z->dctx && !(z->dctx = ZSTD_createDCtx()))
		return -ENOMEM;
	if (reserve(z, want ? want : 1) < 0)
		return -ENOMEM;
	r = ZSTD_decompressDCtx(z->dctx, z->data, want, src, len);
	if (ZSTD_isError(r)) {
		*why = ZSTD_getErrorName(r);
		return -EINVAL;
	}
	if (r != want) {
		*why = "the zstd frame decoded to fewer bytes than it states";
		return -EINVAL;
	}
	z->len = r;
	return 0;
}

void ringlog_ship_zbuf_free(struct ringlog_ship_zbuf *z)
{
	ZSTD_freeCCtx(z->cctx);
	ZSTD_freeDCtx(z->dctx);
	free(z->data);
	z->cctx = z->dctx = NULL;
	z->data = NULL;
	z->cap = z->len = 0;
}
