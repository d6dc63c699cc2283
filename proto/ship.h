/* proto/ship.h - one shipped message: what ringlogd publishes to a NATS
 * JetStream stream for each sealed chunk (daemon/sink/ship.c) and what
 * `ringlog read --nats` / `tail --nats` decode (client/cli/nats.c).
 *
 * A chunk on disk needs its segment: the header's clock calibration, and
 * the WRITER, STREAM and META records that the daemon writes only where a
 * writer first appears and every 4th chunk (segment.h). A shipped message
 * must decode alone, so it carries them:
 *
 *   0                 184                     184 + desc_len
 *   +-----------------+-----------------------+--------------------------+
 *   | ringlog_ship_hdr| description records   | chunk body records       |
 *   |  host, boot id, | (WRITER, STREAM, META |  (the chunk's records as |
 *   |  segment, chunk,|  of every stream the  |   on disk)               |
 *   |  clock, not     |  body names; segment  |                          |
 *   |  shipped        |  record format)       |                          |
 *   +-----------------+-----------------------+--------------------------+
 *
 * A new encoding comes with a new version (and Ringlog-Format): a reader
 * that does not know a message's version leaves it alone, and a version 2
 * message with an encoding other than 1 is damaged.
 *
 * Compressed (ship.compress, zstd by default: encoding 1, version 2), the
 * header stays as it is and the descriptions and body after it are one
 * zstd frame (ship-codec.h) that decodes to exactly desc_len + body_len
 * bytes:
 *
 *   0                 184
 *   +-----------------+--------------------------------------------------+
 *   | ringlog_ship_hdr| zstd frame of: description records, chunk body   |
 *   |  version 2,     |  (its decoded size in its header, its content    |
 *   |  encoding 1     |   checksum at its end)                           |
 *   +-----------------+--------------------------------------------------+
 *
 * The header is outside the frame because the sender writes its "not
 * shipped" count when it publishes, and a re-send may carry another: what
 * follows it must be the same bytes whenever the chunk is sent.
 *
 * A message larger than the server's max_payload (1 MiB by default, and a
 * chunk alone may be 2 MiB) is cut into fragments of consecutive bytes, one
 * NATS message each, PART 0..N-1 in their ids and "Ringlog-Parts: N" in
 * their headers; a reader joins them before decoding. Cutting bytes rather
 * than records: one PACK record may fill a chunk.
 *
 * NATS headers of each message:
 *   Nats-Msg-Id     HOST/STORE/SEGMENT/CHUNK/PART (STORE: 32 hex digits,
 *                   the first 8 bytes of the segment's boot id then its
 *                   creation time, ns; once the whole boot id, which a
 *                   store deleted and made again on the same boot shared,
 *                   so that JetStream discarded its chunks as re-sends;
 *                   decimal numbers): the same for the same bytes whenever they are
 *                   sent, so JetStream drops a re-send after a crash, an
 *                   outage or a lost acknowledgement. PART is "0" for a
 *                   whole message; for a fragment "I.N.TAG": I of N, TAG
 *                   the CRC32C (8 hex digits) of the message's bytes after
 *                   its header followed by the fragments' size (8 bytes,
 *                   little-endian). A chunk cut otherwise when sent again
 *                   (another ship.compress, another max_payload, another
 *                   zstd) has other ids, so JetStream keeps both cuts and a
 *                   reader joins fragments of one cut only
 *   Ringlog-Host    HOST (ship.host, default the system's host name)
 *   Ringlog-Segment-Created  the segment's creation time (decimal ns): a
 *                   reader orders and groups chunks by it, then SEGMENT and
 *                   CHUNK (a store made again numbers from 0); absent from
 *                   messages of older ringlogd, read as 0
 *   Ringlog-Crc32c  8 hex digits: CRC32C of this NATS message's data
 *   Ringlog-Parts   N, when the message is cut into N > 1 fragments
 *   Ringlog-Format  the header's version: "1", or "2" when compressed
 * The subject is ship.subject, by default "ringlog.HOST".
 *
 * A probe: an empty message with a chunk message's Nats-Msg-Id, its
 * Ringlog-Host and "Ringlog-Probe: 1". ringlogd sends one for a message
 * that went out and was never acknowledged once the segment holding it is
 * deleted: JetStream answers "duplicate" when the stream has the message
 * (within its duplicate window), and stores the probe otherwise. Readers
 * skip probes.
 *
 * All integers little-endian, as on disk.
 */
#ifndef RINGLOG_PROTO_SHIP_H
#define RINGLOG_PROTO_SHIP_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

#include "segment.h"

#define RINGLOG_SHIP_MAGIC    0x50485352u /* "RSHP" */
#define RINGLOG_SHIP_VERSION  1u /* the descriptions and body as they are */
#define RINGLOG_SHIP_VERSION_ENCODED 2u /* ... encoded as `encoding` says */

/* encoding, in a version 2 header */
enum ringlog_ship_encoding {
	RINGLOG_SHIP_ENC_NONE = 0,
	RINGLOG_SHIP_ENC_ZSTD = 1, /* one zstd frame (ship-codec.h) */
};
#define RINGLOG_SHIP_HOST_MAX 64u

/* not_shipped_reason */
enum ringlog_ship_loss {
	RINGLOG_SHIP_LOST_RETENTION = 1, /* the disk budget deleted it first */
	RINGLOG_SHIP_LOST_BACKLOG = 2,   /* over ship.max_backlog: given up */
};

struct ringlog_ship_hdr {
	uint32_t magic;
	uint16_t version;
	uint16_t header_size;      /* 184; readers skip what they do not know */
	uint32_t desc_len;         /* bytes of description records */
	uint32_t body_len;         /* bytes of chunk records after them */
	uint64_t segment;          /* the segment's seq on the host */
	uint64_t chunk;            /* the chunk's seq in the segment */
	uint8_t boot_id[16];
	char host[RINGLOG_SHIP_HOST_MAX]; /* NUL-padded */
	struct ringlog_seg_clock clock;   /* the segment's calibration */
	uint64_t first_real_ns;    /* of the chunk's events (0: none) */
	uint64_t last_real_ns;
	uint32_t events;           /* in the chunk */
	uint32_t encoding;         /* enum ringlog_ship_encoding; 0 in version 1 */
	uint64_t not_shipped;      /* events given up since the previous
	                            * message, for reason: */
	uint32_t not_shipped_reason; /* enum ringlog_ship_loss, 0: none */
	uint32_t reserved;
};

static_assert(sizeof(struct ringlog_ship_hdr) == 184, "ship header size");
static_assert(offsetof(struct ringlog_ship_hdr, desc_len) == 8, "ship desc_len");
static_assert(offsetof(struct ringlog_ship_hdr, body_len) == 12, "ship body_len");
static_assert(offsetof(struct ringlog_ship_hdr, segment) == 16, "ship segment");
static_assert(offsetof(struct ringlog_ship_hdr, chunk) == 24, "ship chunk");
static_assert(offsetof(struct ringlog_ship_hdr, boot_id) == 32, "ship boot_id");
static_assert(offsetof(struct ringlog_ship_hdr, host) == 48, "ship host");
static_assert(offsetof(struct ringlog_ship_hdr, clock) == 112, "ship clock");
static_assert(offsetof(struct ringlog_ship_hdr, first_real_ns) == 144, "ship first");
static_assert(offsetof(struct ringlog_ship_hdr, last_real_ns) == 152, "ship last");
static_assert(offsetof(struct ringlog_ship_hdr, events) == 160, "ship events");
static_assert(offsetof(struct ringlog_ship_hdr, encoding) == 164, "ship encoding");
static_assert(offsetof(struct ringlog_ship_hdr, not_shipped) == 168, "ship not_shipped");
static_assert(offsetof(struct ringlog_ship_hdr, not_shipped_reason) == 176, "ship reason");

#define RINGLOG_SHIP_HDR_SIZE ((uint32_t)sizeof(struct ringlog_ship_hdr))
/* The Nats-Msg-Id text: host, 32 hex digits, four numbers, a tag,
 * separators. */
#define RINGLOG_SHIP_ID_MAX (RINGLOG_SHIP_HOST_MAX + 32 + 4 * 21 + 8 + 8)

#endif /* RINGLOG_PROTO_SHIP_H */
