/* proto/ship-codec.h - the compression of a shipped message (ship.h),
 * shared by the sender (daemon/sink/ship-window.c) and the readers
 * (client/cli/nats.c). Linked only where libnats is: never by libringlog.
 *
 * A message is compressed whole (header, descriptions, chunk body) into one
 * zstd frame that records its decoded size and a checksum of the decoded
 * bytes (zstd's content checksum), and published with the NATS header
 * "Ringlog-Encoding: zstd". A message without that header is the bytes of
 * ship.h as they are. Fragments (Ringlog-Parts) cut the compressed bytes.
 *
 * A reader trusts nothing of a frame: the decoded size must be declared,
 * at most RINGLOG_SHIP_DECODED_MAX, and exactly what decoding produced.
 */
#ifndef RINGLOG_PROTO_SHIP_CODEC_H
#define RINGLOG_PROTO_SHIP_CODEC_H

#include <stddef.h>
#include <stdint.h>

/* The NATS header naming the encoding, and its one value. */
#define RINGLOG_SHIP_ENCODING_HDR "Ringlog-Encoding"
#define RINGLOG_SHIP_ENCODING_ZSTD "zstd"
/* zstd levels ship.compress takes ("zstd:N"); "zstd" is the first. */
#define RINGLOG_SHIP_ZSTD_LEVEL_DEFAULT 1
#define RINGLOG_SHIP_ZSTD_LEVEL_MAX 19
/* A decoded message: a chunk (16 MiB at most, segment.h), its header and
 * its streams' descriptions, with room to spare. */
#define RINGLOG_SHIP_DECODED_MAX (64u << 20)

struct ringlog_ship_zbuf {
	void *ctx;        /* the zstd context, kept between messages */
	uint8_t *data;    /* the output, grown as needed */
	size_t cap, len;
};

/* Compress src into z->data/z->len at level (1..19). 0, or -ENOMEM, or
 * -EIO with *why set (zstd's own words). */
int ringlog_ship_compress(struct ringlog_ship_zbuf *z, int level, const void *src, size_t len,
			  const char **why);

/* Decode one frame into z->data/z->len. 0, or -EINVAL with *why saying
 * what is wrong with the frame, or -ENOMEM. */
int ringlog_ship_decompress(struct ringlog_ship_zbuf *z, const void *src, size_t len,
			    const char **why);

void ringlog_ship_zbuf_free(struct ringlog_ship_zbuf *z);

#endif /* RINGLOG_PROTO_SHIP_CODEC_H */
