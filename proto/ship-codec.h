/* proto/ship-codec.h - the zstd frame of a compressed shipped message
 * (ship.h, version 2, encoding 1), shared by the sender
 * (daemon/sink/ship-window.c) and the readers (client/cli/nats.c). Linked
 * only where libnats is: never by libringlog.
 *
 * The descriptions and chunk body of a message are one zstd frame (RFC
 * 8878) that records its decoded size and ends with zstd's checksum of the
 * decoded bytes. A reader trusts nothing of it: the frame must state its
 * size, that size must be what the ship header says (desc_len + body_len,
 * at most RINGLOG_SHIP_DECODED_MAX), and decoding must give exactly that
 * many bytes with the right checksum, and nothing may follow the frame.
 */
#ifndef RINGLOG_PROTO_SHIP_CODEC_H
#define RINGLOG_PROTO_SHIP_CODEC_H

#include <stddef.h>
#include <stdint.h>

/* zstd levels ship.compress takes ("zstd:N"); "zstd" is the first. */
#define RINGLOG_SHIP_ZSTD_LEVEL_DEFAULT 1
#define RINGLOG_SHIP_ZSTD_LEVEL_MAX 19
/* Decoded descriptions and body: a chunk (16 MiB at most, segment.h) and
 * its streams' descriptions, with room to spare. */
#define RINGLOG_SHIP_DECODED_MAX (64u << 20)

struct ringlog_ship_zbuf {
	void *cctx, *dctx; /* zstd's contexts, kept between messages */
	uint8_t *data;     /* the output, grown as needed */
	size_t cap, len;
};

/* Compress src into a frame at z->data + prefix (the caller writes the
 * prefix: the ship header), z->len = prefix + the frame's length. The
 * same bytes at the same level give the same frame. 0, or -ENOMEM, or
 * -EIO with *why set (zstd's own words). */
int ringlog_ship_compress(struct ringlog_ship_zbuf *z, int level, size_t prefix, const void *src,
			  size_t len, const char **why);

/* Decode the frame src (len bytes, nothing after it) into z->data, z->len
 * = want. 0, or -EINVAL with *why saying what is wrong with the frame, or
 * -ENOMEM. */
int ringlog_ship_decompress(struct ringlog_ship_zbuf *z, const void *src, size_t len, size_t want,
			    const char **why);

void ringlog_ship_zbuf_free(struct ringlog_ship_zbuf *z);

#endif /* RINGLOG_PROTO_SHIP_CODEC_H */
