/* daemon/sink/ship-window.c - the publish window (ship-int.h): a chunk's
 * message, compressed (zstd, ship.compress), cut into fragments within
 * max_payload, each published asynchronously with its headers
 * (Nats-Msg-Id, host, CRC32C, format, parts); the acknowledgements, on
 * libnats's thread, advance the acknowledged position over the longest run
 * of acks; a failure marks the window for a go-back-N from the first
 * unacknowledged message.
 */
#define _GNU_SOURCE
#include "sink/ship-int.h"
#include "daemon.h"
#include "log.h"
#include "clock.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct pend *ship_win_at(struct ship *s, size_t i)
{
	return &s->win[(s->head + i) % s->cap];
}

/* HOST/STORE/SEGMENT/CHUNK/PART, STORE the first 8 bytes of the
 * segment's boot id and its creation time (16 hex digits each), PART "0"
 * for a whole message and "I.N.TAG" for fragment I of N, TAG the CRC32C of
 * the message's bytes after its header followed by the fragments' size
 * (proto/ship.h). */
void ship_msg_id(char *buf, size_t len, const char *host, const uint8_t boot[8],
		 uint64_t created, uint64_t seg, uint64_t chunk, unsigned part, unsigned parts,
		 uint32_t tag)
{
	char hex[33];

	for (int i = 0; i < 8; i++)
		snprintf(hex + 2 * i, 3, "%02x", boot[i]);
	snprintf(hex + 16, 17, "%016" PRIx64, created);
	if (parts > 1)
		snprintf(buf, len, "%s/%s/%" PRIu64 "/%" PRIu64 "/%u.%u.%08x", host, hex, seg, chunk,
			 part, parts, tag);
	else
		snprintf(buf, len, "%s/%s/%" PRIu64 "/%" PRIu64 "/0", host, hex, seg, chunk);
}

/* seg, chunk, part and the cut's tag (0: whole) from an id ship_msg_id()
 * made: a late ack of another cut of the same chunk is not this one's. */
static bool parse_id(const char *id, uint64_t *seg, uint64_t *chunk, unsigned *part,
		     uint32_t *tag)
{
	const char *p = strrchr(id, '/');
	unsigned n;
	int k = 0;

	/* the last three fields: walk back over two more slashes */
	while (p && p > id && k < 2) {
		p--;
		while (p > id && *p != '/')
			p--;
		k++;
	}
	*tag = 0;
	if (!p)
		return false;
	k = sscanf(p, "/%" SCNu64 "/%" SCNu64 "/%u.%u.%" SCNx32, seg, chunk, part, &n, tag);
	return k == 3 || k == 5;
}

/* Pop the acknowledged run at the head of the window. */
static void advance(struct ship *s)
{
	while (s->n && ship_win_at(s, 0)->state == P_ACKED) {
		struct pend *p = ship_win_at(s, 0);

		/* A chunk's events count as shipped with its last part: readers
		 * skip a chunk whose parts are not all there, and a chunk sent
		 * again after a failure sends part 0 again (its events counted
		 * once more, a review found). */
		if (p->part == 0)
			s->cut_events = 0;
		s->cut_events += p->events;
		if (p->part + 1 == p->parts) {
			uint64_t ev = s->cut_events;

			s->cut_events = 0;
			/* by the chunk's own segment */
			if (p->seg != s->ack_events_seg) {
				s->ack_events_seg = p->seg;
				s->ack_seg_events = 0;
			}
			s->ack_seg_events += ev;
			for (size_t i = 0; i < s->nheld; i++)
				if (s->held[i].seg == p->seg)
					s->held[i].acked += ev;
			s->acked_events += ev;
			s->ack_valid = true;
			s->ack_seg = p->seg;
			s->ack_chunk = p->chunk;
			s->ack_off = p->file_end;
			s->ack_real_ns = p->last_real_ns;
			s->acked_chunks++;
			s->dirty = true;
			ship_doubt_acked(s, p->seg, p->chunk);
			/* the chunk carrying the not-shipped count is in */
			if (s->carry.on && p->seg == s->carry.seg && p->chunk == s->carry.chunk) {
				s->not_shipped_pending -= s->carry.x < s->not_shipped_pending ?
					s->carry.x : s->not_shipped_pending;
				s->carry.on = false;
			}
		}
		s->acked_bytes += p->bytes;
		s->acked_raw_bytes += p->raw_bytes;
		s->head = (s->head + 1) % s->cap;
		s->n--;
	}
	if (s->nheld)
		ship_held_settle(s, false);
}

void ship_on_ack(jsCtx *js, natsMsg *msg, jsPubAck *pa, jsPubAckErr *pae, void *closure)
{
	struct ship *s = closure;
	const char *id = NULL;
	uint64_t seg, chunk;
	unsigned part;
	uint32_t tag;

	if (natsMsgHeader_Get(msg, "Nats-Msg-Id", &id) != NATS_OK || !id ||
	    !parse_id(id, &seg, &chunk, &part, &tag)) {
		natsMsg_Destroy(msg);
		return;
	}
	pthread_mutex_lock(&s->mu);
	/* A late ack of a connection a reload closed is not for the window:
	 * the same chunk, sent again to the new servers, awaits their own. */
	for (size_t i = 0; js == s->js && i < s->n; i++) {
		struct pend *p = ship_win_at(s, i);

		if (p->seg != seg || p->chunk != chunk || p->part != part || p->tag != tag ||
		    p->state != P_SENT)
			continue;
		if (pa) {
			/* acknowledged again after a failure: back to normal */
			/* (the reconnection may have said "connected" already,
			 * leaving the outage's error in status: an outsider) */
			if (!s->failed && (!strcmp(s->state, "retrying") || s->error[0])) {
				snprintf(s->state, sizeof(s->state), "connected");
				s->error[0] = '\0';
				ship_say(s, LOG_NOTICE, "ship: the stream acknowledges again");
			}
			p->state = P_ACKED;
			if (!s->good_since_ns)
				s->good_since_ns = d_now(CLOCK_MONOTONIC);
			s->acked_msgs++;
			s->last_ack_real_ns = d_now(CLOCK_REALTIME);
			if (pa->Duplicate)
				s->dedup++;
		} else {
			p->state = P_FAILED;
			s->good_since_ns = 0;
			if (!s->failed)
				ship_set_error(s, "retrying", "no acknowledgement from stream \"%s\" for %s: %s; "
					  "sending again from it", s->c.stream, id,
					  pae && pae->ErrText ? pae->ErrText :
					  natsStatus_GetText(pae ? pae->Err : NATS_ERR));
			s->failed = true;
		}
		break;
	}
	advance(s);
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	natsMsg_Destroy(msg);
}

/* Where reading starts again: the chunk after the acknowledged one, or
 * the first of the oldest segment. Sets *seg and *min_chunk. */
void ship_resume_point(struct ship *s, uint64_t *seg, uint64_t *min_chunk)
{
	if (s->n) {
		*seg = ship_win_at(s, 0)->seg;
		*min_chunk = ship_win_at(s, 0)->chunk;
	} else if (s->ack_valid) {
		*seg = s->ack_seg;
		*min_chunk = s->ack_chunk + 1;
	} else {
		/* never one given up for the backlog (the oldest on disk may be) */
		*seg = ship_next_kept(s->dir, &s->skip, UINT64_MAX);
		*min_chunk = 0;
	}
}

/* The bytes to send for msg: itself (version 1), or in s->z its header
 * marked version 2, encoding zstd, then the zstd frame of the rest
 * (ship-codec.h) when ship.compress says so. NULL when it cannot be
 * compressed (the window is marked failed, as for a refused publish). */
static const uint8_t *encode(struct ship *s, const struct ship_part *msg, unsigned level,
			     size_t *len)
{
	const char *why = NULL;

	*len = msg->len;
	if (!level)
		return msg->data;
	if (ringlog_ship_compress(&s->z, (int)level, RINGLOG_SHIP_HDR_SIZE,
				  msg->data + RINGLOG_SHIP_HDR_SIZE, msg->len - RINGLOG_SHIP_HDR_SIZE,
				  &why) == 0) {
		struct ringlog_ship_hdr *h = (struct ringlog_ship_hdr *)(void *)s->z.data;

		memcpy(h, msg->data, RINGLOG_SHIP_HDR_SIZE);
		h->version = RINGLOG_SHIP_VERSION_ENCODED;
		h->encoding = RINGLOG_SHIP_ENC_ZSTD;
		*len = s->z.len;
		return s->z.data;
	}
	pthread_mutex_lock(&s->mu);
	if (!s->failed)
		ship_set_error(s, "retrying", "cannot compress a message of %zu bytes: %s; "
			       "storing locally, trying again", msg->len, why ? why : "out of memory");
	s->failed = true;
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

/* Publish the current chunk's message, compressed as ship.compress says,
 * cut into fragments of at most limit bytes when it is larger (the
 * server's max_payload: 1 MiB by default, and a chunk may be 2 MiB before
 * its header and descriptions). 0, or -errno (the window is marked
 * failed). */
int ship_publish(struct ship *s, struct ship_reader *r, struct ship_part *msg, size_t limit)
{
	struct ringlog_ship_hdr *h = (struct ringlog_ship_hdr *)msg->data;
	char id[RINGLOG_SHIP_ID_MAX], crc[16], parts[16], format[4], created[24];
	const uint8_t *data;
	unsigned nparts, level;
	uint32_t tag = 0;
	size_t total;
	int err = 0;
	bool fresh;

	pthread_mutex_lock(&s->mu);
	/* The loss a resumed shipping reports, on one chunk at a time, the
	 * same on every copy of it (struct ship's carry) */
	{
		uint64_t seg = r->seg, chunk = r->f.chunk.seq;

		fresh = !s->pub_any || seg > s->pub_seg || (seg == s->pub_seg && chunk > s->pub_chunk);

		h->not_shipped = 0;
		h->not_shipped_reason = 0;
		if (s->carry.on && s->carry.seg == seg && s->carry.chunk == chunk) {
			h->not_shipped = s->carry.x;
			h->not_shipped_reason = s->carry.reason;
		} else if (fresh && !s->carry.on && s->not_shipped_pending) {
			s->carry.on = true;
			s->carry.seg = seg;
			s->carry.chunk = chunk;
			s->carry.x = s->not_shipped_pending;
			s->carry.reason = s->ns_reason;
			h->not_shipped = s->carry.x;
			h->not_shipped_reason = s->carry.reason;
		}
	}
	level = s->c.compress;
	pthread_mutex_unlock(&s->mu);
	data = encode(s, msg, level, &total);
	if (!data)
		return -EIO;
	nparts = (unsigned)((total + limit - 1) / limit);
	snprintf(parts, sizeof(parts), "%u", nparts);
	snprintf(format, sizeof(format), "%u", level ? RINGLOG_SHIP_VERSION_ENCODED : RINGLOG_SHIP_VERSION);
	if (nparts > 1) {
		/* the cut's name: the bytes after the header, then the
		 * fragments' size (8 bytes, little-endian): another
		 * max_payload with as many fragments is another cut */
		uint64_t cut = (uint64_t)limit;

		tag = ringlog_crc32c(0, data + RINGLOG_SHIP_HDR_SIZE, total - RINGLOG_SHIP_HDR_SIZE);
		tag = ringlog_crc32c(tag, &cut, sizeof(cut));
	}
	for (unsigned i = 0; i < nparts; i++) {
		size_t off = (size_t)i * limit, len = total - off < limit ? total - off : limit;
		natsMsg *m = NULL;
		natsStatus st;
		struct pend *p;

		pthread_mutex_lock(&s->mu);
		p = ship_win_at(s, s->n);
		*p = (struct pend){ .seg = r->seg, .chunk = r->f.chunk.seq, .part = (uint16_t)i, .tag = tag,
				    .parts = (uint16_t)nparts, .state = P_SENT,
				    .events = i ? 0 : h->events, .bytes = len,
				    .raw_bytes = i ? 0 : msg->len,
				    .file_end = r->chunk_end, .last_real_ns = r->f.chunk.last_real_ns,
				    .created = r->f.hdr.created_real_ns, .chunk_events = h->events };
		memcpy(p->boot, r->f.hdr.boot_id, sizeof(p->boot));
		s->n++;
		pthread_mutex_unlock(&s->mu);

		ship_msg_id(id, sizeof(id), s->c.host, r->f.hdr.boot_id, r->f.hdr.created_real_ns,
			    r->seg, r->f.chunk.seq, i, nparts, tag);
		snprintf(created, sizeof(created), "%" PRIu64, r->f.hdr.created_real_ns);
		snprintf(crc, sizeof(crc), "%08x", ringlog_crc32c(0, data + off, len));
		/* Never into libnats's reconnect buffer: a message that "failed"
		 * there (its ack timed out) went out all the same once the
		 * cluster was back, so a segment the budget deleted meanwhile
		 * was counted not shipped and was shipped (a test: 182,292
		 * counted, all 312,000 in the stream). Not sent while
		 * disconnected, a failed message was not sent; the disk holds
		 * the backlog. (A 1-byte buffer instead broke reconnecting.) */
		if (natsConnection_Status(s->nc) != NATS_CONN_STATUS_CONNECTED)
			st = NATS_CONNECTION_DISCONNECTED;
		else
			st = natsMsg_Create(&m, s->c.subject, NULL, (const char *)data + off, (int)len);
		if (st == NATS_OK)
			st = natsMsgHeader_Set(m, "Nats-Msg-Id", id);
		if (st == NATS_OK)
			st = natsMsgHeader_Set(m, "Ringlog-Host", s->c.host);
		if (st == NATS_OK)
			st = natsMsgHeader_Set(m, "Ringlog-Segment-Created", created);
		if (st == NATS_OK)
			st = natsMsgHeader_Set(m, "Ringlog-Crc32c", crc);
		if (st == NATS_OK)
			st = natsMsgHeader_Set(m, "Ringlog-Format", format);
		if (st == NATS_OK && nparts > 1)
			st = natsMsgHeader_Set(m, "Ringlog-Parts", parts);
		if (st == NATS_OK) {
			jsPubOptions po;

			jsPubOptions_Init(&po);
			po.MaxWait = 5000;
			st = js_PublishMsgAsync(s->js, &m, &po);
		}
		natsMsg_Destroy(m);
		/* sent again: a message that went out before, now out again
		 * (not each attempt refused while the cluster is away: the
		 * count ran to 2,749 for some 350 chunks in an outsider's
		 * outage) */
		if (st == NATS_OK) {
			pthread_mutex_lock(&s->mu);
			p->out = true; /* (the window is not cut while we publish) */
			if (!fresh)
				s->resent++;
			else if (i + 1 == nparts) { /* the newest sent */
				s->pub_any = true;
				s->pub_seg = r->seg;
				s->pub_chunk = r->f.chunk.seq;
			}
			pthread_mutex_unlock(&s->mu);
		}
		if (st != NATS_OK) {
			const char *why = nats_GetLastError(NULL);

			pthread_mutex_lock(&s->mu);
			p->state = P_FAILED;
			s->good_since_ns = 0;
			if (!s->failed)
				ship_set_error(s, "retrying", "cannot publish to %s: %s; storing locally, "
					  "sending again when it answers", s->c.subject,
					  why ? why : natsStatus_GetText(st));
			s->failed = true;
			pthread_mutex_unlock(&s->mu);
			err = -EIO;
			break;
		}
	}
	return err;
}

/* A message of the window awaits its ack (mu held). */
bool ship_outstanding(struct ship *s)
{
	for (size_t i = 0; i < s->n; i++)
		if (ship_win_at(s, i)->state == P_SENT)
			return true;
	return false;
}

/* The window for max_pending messages: a chunk's fragments beyond it,
 * 16 MiB chunks at most (segment.h), max_payload at least 64 KiB in
 * practice. NULL when out of memory. */
struct pend *ship_window_new(unsigned max_pending, size_t *cap)
{
	*cap = (size_t)max_pending + 512;
	return calloc(*cap, sizeof(struct pend));
}
