/* daemon/sink/ship-doubt.c - chunks sent and never acknowledged, of
 * segments the disk budget deleted: in the stream or not?
 *
 * A server that stops answering without closing its connection (frozen,
 * SIGSTOP, a stalled disk) keeps what was sent to it and stores it once it
 * goes on; its acks came too late and counted as failures. When the budget
 * deletes such a chunk's segment, the chunk cannot go again, and counting
 * its events "not shipped" over-counted (an outsider's test: 170,000
 * events in the stream, 45,415 of them also counted not shipped).
 *
 * So each message that went out and left the window unacknowledged (the
 * go-back-N after a failure) is noted here, by its id, until an ack in
 * order covers its chunk. When its segment is settled (ship-status.c) the
 * chunk is in doubt: its events are held back from the count, and once the
 * stream acknowledges again the thread asks it, with an empty message
 * under the same Nats-Msg-Id (a "probe", marked Ringlog-Probe, which
 * readers skip): "duplicate" means the stream holds that message. A chunk
 * is in the stream when every message of one of its cuts is; otherwise
 * its events are counted not shipped then.
 *
 * Limits: the stream's duplicate window (10 minutes for a stream ringlogd
 * creates) bounds what a probe can tell; an outage longer than it makes
 * every probe new, and the chunk is counted, possibly twice over (in the
 * stream and counted), as before. A restart before the probes answered
 * counts the doubtful events from ship.state's held segments: never an
 * event uncounted, at worst one counted that is in the stream.
 */
#define _GNU_SOURCE
#include "sink/ship-int.h"
#include "clock.h"
#include "log.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

enum { D_OUT, D_NOT_OUT, D_IN_STREAM, D_PROBE, D_MISSING };

/* Before a probe, the stream must have acknowledged for this long: a
 * message the frozen server received before it stopped is stored before
 * the probe is looked at (on one connection in order; after a reconnect
 * the old connection's bytes are read first when it wakes). */
#define PROBE_SETTLE_NS (2 * 1000000000ull)

static struct ship_doubt *find(struct ship *s, const struct pend *p)
{
	for (size_t i = 0; i < s->ndoubt; i++) {
		struct ship_doubt *x = &s->doubt[i];

		if (x->seg == p->seg && x->chunk == p->chunk && x->part == p->part &&
		    x->tag == p->tag)
			return x;
	}
	return NULL;
}

/* Whether a probe is owed for some message of a chunk. */
static bool owed(const struct ship *s, uint64_t seg, uint64_t chunk)
{
	for (size_t i = 0; i < s->ndoubt; i++)
		if (s->doubt[i].seg == seg && s->doubt[i].chunk == chunk &&
		    s->doubt[i].state == D_PROBE)
			return true;
	return false;
}

/* A chunk whose messages are not all noted: none of its cuts can be
 * found whole, so it is counted not shipped (never taken as in the
 * stream on the word of the parts noted). */
static void poison(struct ship *s, uint64_t seg, uint64_t chunk)
{
	for (size_t i = 0; i < s->ndoubt; i++)
		if (s->doubt[i].seg == seg && s->doubt[i].chunk == chunk)
			s->doubt[i].state = D_NOT_OUT;
}

/* Room: the chunks the acknowledged position covers go, whole
 * (acknowledged in order, or counted with their segment), unless a probe
 * is owed for one. */
static void purge(struct ship *s)
{
	size_t k = 0;

	for (size_t i = 0; i < s->ndoubt; i++) {
		const struct ship_doubt *x = &s->doubt[i];
		bool behind = s->ack_valid && (x->seg < s->ack_seg ||
					       (x->seg == s->ack_seg && x->chunk <= s->ack_chunk));

		if (!behind || owed(s, x->seg, x->chunk))
			s->doubt[k++] = *x;
	}
	s->ndoubt = k;
}

void ship_doubt_keep(struct ship *s)
{
	for (size_t i = 0; i < s->n; i++) {
		const struct pend *p = ship_win_at(s, i);
		uint8_t st = p->state == P_ACKED ? D_IN_STREAM : p->out ? D_OUT : D_NOT_OUT;
		struct ship_doubt *x = find(s, p);

		if (x) {
			/* acknowledged is the better news of two copies; a part
			 * once not sent (or a chunk poisoned) stays so: its
			 * cut is never taken for whole on a later copy's word */
			if (st == D_IN_STREAM)
				x->state = st;
			continue;
		}
		if (s->ndoubt == SHIP_DOUBT_MAX)
			purge(s);
		if (s->ndoubt == SHIP_DOUBT_MAX) {
			/* never seen: its chunk is counted as before, and one
			 * noted in part cannot be taken for whole (a review:
			 * two parts of three found, the third never noted) */
			poison(s, p->seg, p->chunk);
			continue;
		}
		s->doubt[s->ndoubt++] = (struct ship_doubt){
			.seg = p->seg, .chunk = p->chunk, .events = p->chunk_events,
			.created = p->created, .tag = p->tag, .part = p->part, .parts = p->parts,
			.state = st };
		memcpy(s->doubt[s->ndoubt - 1].boot, p->boot, sizeof(p->boot));
	}
}

/* Drop the entries of one chunk (or of every chunk of seg: chunk
 * UINT64_MAX). */
static void drop(struct ship *s, uint64_t seg, uint64_t chunk)
{
	size_t k = 0;

	for (size_t i = 0; i < s->ndoubt; i++)
		if (s->doubt[i].seg != seg || (chunk != UINT64_MAX && s->doubt[i].chunk != chunk))
			s->doubt[k++] = s->doubt[i];
	s->ndoubt = k;
}

void ship_doubt_acked(struct ship *s, uint64_t seg, uint64_t chunk)
{
	if (s->ndoubt)
		drop(s, seg, chunk);
}

void ship_doubt_forget(struct ship *s, uint64_t seg)
{
	if (s->ndoubt)
		drop(s, seg, UINT64_MAX);
}

/* What the entries say of one chunk: in the stream (every message of one
 * cut is), missing (nothing can be: no cut has a message that may still be
 * there), or open (a probe is owed). */
enum verdict { V_IN, V_MISSING, V_OPEN };

static enum verdict verdict(const struct ship *s, uint64_t seg, uint64_t chunk)
{
	bool open = false;

	for (size_t i = 0; i < s->ndoubt; i++) {
		const struct ship_doubt *a = &s->doubt[i];
		bool whole = true, maybe = true;

		if (a->seg != seg || a->chunk != chunk)
			continue;
		/* the cut of a: every entry of it in the stream? */
		for (size_t j = 0; j < s->ndoubt; j++) {
			const struct ship_doubt *b = &s->doubt[j];

			if (b->seg != seg || b->chunk != chunk || b->tag != a->tag)
				continue;
			if (b->state != D_IN_STREAM)
				whole = false;
			if (b->state == D_NOT_OUT || b->state == D_MISSING)
				maybe = false;
		}
		if (whole)
			return V_IN;
		if (maybe)
			open = true;
	}
	return open ? V_OPEN : V_MISSING;
}

uint64_t ship_doubt_mark(struct ship *s, uint64_t seg, uint64_t *found)
{
	uint64_t doubtful = 0;

	*found = 0;
	for (size_t i = 0; i < s->ndoubt; i++) {
		struct ship_doubt *a = &s->doubt[i];
		bool first = true;

		if (a->seg != seg)
			continue;
		for (size_t j = 0; j < i; j++) /* each chunk once */
			if (s->doubt[j].seg == seg && s->doubt[j].chunk == a->chunk)
				first = false;
		if (!first)
			continue;
		switch (verdict(s, seg, a->chunk)) {
		case V_IN:
			*found += a->events;
			break;
		case V_OPEN:
			doubtful += a->events;
			for (size_t j = 0; j < s->ndoubt; j++)
				if (s->doubt[j].seg == seg && s->doubt[j].chunk == a->chunk &&
				    s->doubt[j].state == D_OUT)
					s->doubt[j].state = D_PROBE;
			break;
		case V_MISSING:
			break;
		}
	}
	/* what is not owed a probe is settled: its entries go */
	{
		size_t k = 0;

		for (size_t i = 0; i < s->ndoubt; i++) {
			const struct ship_doubt *a = &s->doubt[i];

			if (a->seg != seg || owed(s, seg, a->chunk))
				s->doubt[k++] = *a;
		}
		s->ndoubt = k;
	}
	if (*found)
		s->found_in_stream += *found;
	return doubtful;
}

/* One chunk's probes answered (or it cannot be in the stream): its held
 * segment lets go of its events, counted not shipped unless found. */
static void resolve(struct ship *s, uint64_t seg, uint64_t chunk)
{
	enum verdict v = verdict(s, seg, chunk);
	uint64_t events = 0;

	if (v == V_OPEN)
		return;
	for (size_t i = 0; i < s->ndoubt; i++)
		if (s->doubt[i].seg == seg && s->doubt[i].chunk == chunk) {
			events = s->doubt[i].events;
			break;
		}
	drop(s, seg, chunk);
	if (v == V_IN) {
		s->found_in_stream += events;
		ship_say(s, LOG_NOTICE, "ship: chunk %" PRIu64 " of segment %" PRIu64 ", deleted "
		    "unacknowledged, is in the stream: %" PRIu64 " events shipped", chunk, seg, events);
	} else {
		ship_give_up(s, events, RINGLOG_SHIP_LOST_RETENTION);
		ship_say(s, LOG_WARNING, "ship: chunk %" PRIu64 " of segment %" PRIu64 ", deleted "
		    "unacknowledged, is not in the stream: %" PRIu64 " events not shipped", chunk, seg,
		    events);
	}
	for (size_t i = 0; i < s->nheld; i++) {
		struct ship_held *h = &s->held[i];

		if (h->seg != seg || !h->probing)
			continue;
		h->events -= events < h->events ? events : h->events;
		if (!h->events) {
			s->held[i] = s->held[--s->nheld];
		}
		break;
	}
	s->dirty = true;
}

/* The probe for x answered, or sent and not answered: st for its entry,
 * found again (the loop may have settled segments meanwhile), and its
 * chunk resolved once nothing more is owed for it. */
static void answered(struct ship *s, const struct ship_doubt *x, uint8_t st)
{
	for (size_t i = 0; i < s->ndoubt; i++) {
		struct ship_doubt *y = &s->doubt[i];

		if (y->seg == x->seg && y->chunk == x->chunk && y->part == x->part &&
		    y->tag == x->tag && y->state == D_PROBE) {
			y->state = st;
			s->probes++;
			resolve(s, x->seg, x->chunk);
			return;
		}
	}
}

bool ship_doubt_owed(const struct ship *s)
{
	uint64_t now = d_now(CLOCK_MONOTONIC);

	if (!s->good_since_ns || now - s->good_since_ns < PROBE_SETTLE_NS)
		return false;
	for (size_t i = 0; i < s->ndoubt; i++)
		if (s->doubt[i].state == D_PROBE)
			return true;
	return false;
}

int ship_doubt_probe(struct ship *s)
{
	struct ship_doubt x;
	char id[RINGLOG_SHIP_ID_MAX];
	natsMsg *m = NULL;
	jsPubAck *pa = NULL;
	jsPubOptions po;
	jsErrCode jerr = 0;
	natsStatus st;
	size_t i;

	for (i = 0; i < s->ndoubt && s->doubt[i].state != D_PROBE; i++)
		;
	if (i == s->ndoubt)
		return 0;
	x = s->doubt[i];
	ship_msg_id(id, sizeof(id), s->c.host, x.boot, x.created, x.seg, x.chunk, x.part, x.parts,
		    x.tag);
	pthread_mutex_unlock(&s->mu);
	jsPubOptions_Init(&po);
	po.MaxWait = 5000;
	st = natsMsg_Create(&m, s->c.subject, NULL, NULL, 0);
	if (st == NATS_OK)
		st = natsMsgHeader_Set(m, "Nats-Msg-Id", id);
	if (st == NATS_OK)
		st = natsMsgHeader_Set(m, "Ringlog-Host", s->c.host);
	if (st == NATS_OK)
		st = natsMsgHeader_Set(m, "Ringlog-Probe", "1");
	/* not connected: not sent, asked again once the stream answers */
	if (st == NATS_OK && natsConnection_Status(s->nc) != NATS_CONN_STATUS_CONNECTED) {
		natsMsg_Destroy(m);
		pthread_mutex_lock(&s->mu);
		s->good_since_ns = 0;
		return -EAGAIN;
	}
	if (st == NATS_OK)
		st = js_PublishMsg(&pa, s->js, m, &po, &jerr);
	pthread_mutex_lock(&s->mu);
	natsMsg_Destroy(m);
	if (st != NATS_OK) {
		/* Sent and not answered, the probe may be stored: asked
		 * again, the stream would say "duplicate" of the probe itself
		 * (a review). So the chunk is counted not shipped, which it
		 * may not be: never the other way. */
		jsPubAck_Destroy(pa);
		answered(s, &x, D_MISSING);
		return -EAGAIN;
	}
	answered(s, &x, pa->Duplicate ? D_IN_STREAM : D_MISSING);
	jsPubAck_Destroy(pa);
	return 0;
}
