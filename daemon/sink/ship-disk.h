/* daemon/sink/ship-disk.h - shipping reads what it sends back from the
 * segment files (ship-disk.c): one path for live chunks, a restart's
 * resume, a catch-up after an outage and a re-send after a lost ack. The
 * loop thread never waits for it; the shipping thread (ship.c) runs it.
 *
 * It also makes each chunk decodable alone (proto/ship.h): it keeps the
 * segment's description records (WRITER, STREAM, META) as it walks the
 * chunks, and puts in front of each chunk those of the streams it names.
 */
#ifndef RINGLOG_DAEMON_SHIP_DISK_H
#define RINGLOG_DAEMON_SHIP_DISK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "decode.h"
#include "ship.h"

struct ship_desc {
	uint16_t type;
	uint32_t id;          /* writer id (WRITER, META) or stream id (STREAM) */
	uint32_t writer;      /* STREAM: its writer */
	uint32_t len;         /* of rec, the record header included */
	uint8_t *rec;
};

struct ship_reader {
	char dir[1024];
	char path[1100];
	struct ringlog_seg_file f;
	bool open;
	uint64_t seg;         /* the open segment's seq */
	struct ship_desc *descs;
	size_t ndesc, cap;
	uint64_t chunk_end;   /* file offset past the chunk last returned */
	uint8_t *msg;         /* the message shipr_build() made, kept */
	size_t msg_cap;
	bool *want;           /* shipr_build(): the descriptions it takes */
	size_t want_cap;
};

/* One message (proto/ship.h): the header at the start of data. */
struct ship_part {
	uint8_t *data;
	size_t len;
};

/* Open segment seq of dir (closing the one open) and forget the previous
 * segment's descriptions. 0, -ENOENT when its file is gone, or -errno. */
int shipr_open(struct ship_reader *r, uint64_t seq);
void shipr_close(struct ship_reader *r);
void shipr_rewind(struct ship_reader *r);
/* Close, and free r (calloc'ed) with everything it keeps. */
void shipr_free(struct ship_reader *r);

/* The next complete chunk of the open segment into r->f.chunk / r->f.body:
 * 1, 0 when there is none (yet), or -errno. The file may grow: its size is
 * looked at again. The caller calls it for chunks the store announced as
 * on disk only (a chunk being written reads as damage). */
int shipr_next(struct ship_reader *r);

/* Learn the descriptions of the chunk last returned, before building its
 * messages: a STREAM it defines may name a WRITER of an earlier chunk, so
 * the prelude is chosen from both (what the chunk defines itself goes
 * twice; decoders take identical repeats). */
void shipr_absorb(struct ship_reader *r);

/* Build the message of the chunk last returned (proto/ship.h): 0 or
 * -ENOMEM. host is ship.host; out->data is r's, valid until the next
 * build or shipr_free(). (ship-window.c cuts it into fragments when it
 * exceeds the server's max_payload.) */
int shipr_build(struct ship_reader *r, const char *host, struct ship_part *out);

/* The smallest segment seq in dir above after (UINT64_MAX: none), and the
 * bytes of the segments from seq `from` on. */
uint64_t shipr_next_seq(const char *dir, uint64_t after);
uint64_t shipr_bytes_from(const char *dir, uint64_t from);

#endif /* RINGLOG_DAEMON_SHIP_DISK_H */
