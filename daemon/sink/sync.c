/* daemon/sink/sync.c - SYNC, the answer behind ringlog_flush(): given once every
 * event the client's rings held when the request was read is written to a
 * segment file, so that a program may exit, or the daemon crash, without
 * losing what it flushed.
 *
 * The request takes, per ring, the producer's position at that moment
 * (prod_pos, untrusted like everything in a ring) as its target. The ring's
 * space is released (cons_pos published) only once the chunk holding its
 * records is written or counted lost (segment.c), so a ring is done when
 * its published position passes the target, when it is gone (drained for
 * good and released), or when it was detached as corrupt (its loss is
 * counted). Requests are checked again each time chunks are released.
 */
#define _GNU_SOURCE
#include "daemon.h"
#include "sink/sync.h"
#include "ingest/registry.h"
#include "ingest/overload.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct sync_wait {
	struct sync_wait *next;
	uint64_t token;
	uint32_t n;
	struct sync_target {
		uint32_t ring;   /* stream id */
		uint64_t pos;    /* ring position its records must be written to */
	} t[];
};

static bool ring_done(struct client *c, const struct sync_target *t)
{
	for (struct ring *r = c->rings; r; r = r->next) {
		if (r->id != t->ring)
			continue;
		/* Unsigned distance: published has reached pos (positions only
		 * grow; a forged prod_pos behind us reads as reached). */
		return r->dead || r->cons.published - t->pos < (1ull << 63);
	}
	return true; /* released: drained for good and written */
}

static bool sync_done(struct client *c, const struct sync_wait *w)
{
	/* the flush covers the rate limits' reports sent before it, on disk:
	 * one the store had no room for yet is still to go into a chunk */
	if (ovl_flush_pending(c))
		return false;
	for (uint32_t i = 0; i < w->n; i++)
		if (!ring_done(c, &w->t[i]))
			return false;
	return true;
}

static int answer(struct client *c, uint64_t token)
{
	return client_send(c, RINGLOG_CTL_SYNC, &token, sizeof(token));
}

/* A SYNC frame, once the rings are drained and the open chunk sealed
 * (ingest/ctl.c): 0, -EPROTO (malformed) or -ENOMEM. */
static int sync_request(struct client *c, const uint8_t *p, uint32_t len)
{
	struct daemon *d = c->d;
	struct sync_wait *w, **pp;
	uint64_t token;
	uint32_t n = 0;

	if (len != sizeof(token))
		return -EPROTO;
	memcpy(&token, p, sizeof(token));
	/* ctl.c took what was there and sent it to the disk without waiting
	 * for the chunk to fill or age: the targets are the positions now. */
	for (struct ring *r = c->rings; r; r = r->next)
		n++;
	w = calloc(1, sizeof(*w) + n * sizeof(w->t[0]));
	if (!w)
		return -ENOMEM;
	w->token = token;
	for (struct ring *r = c->rings; r; r = r->next) {
		if (r->dead)
			continue;
		w->t[w->n].ring = r->id;
		w->t[w->n].pos = __atomic_load_n(&r->cons.hdr->prod_pos, __ATOMIC_ACQUIRE);
		w->n++;
	}
	if (!c->syncs && sync_done(c, w)) {
		free(w);
		return answer(c, token);
	}
	/* Answers go out in request order. */
	for (pp = &c->syncs; *pp; pp = &(*pp)->next)
		;
	*pp = w;
	d->nsyncs++;
	return 0;
}

static void sync_check(struct daemon *d)
{
	for (struct client *c = d->clients; c && d->nsyncs; c = c->next) {
		while (c->syncs && sync_done(c, c->syncs)) {
			struct sync_wait *w = c->syncs;

			c->syncs = w->next;
			d->nsyncs--;
			if (!c->gone)
				answer(c, w->token);
			free(w);
		}
	}
}

bool sync_waiting(const struct daemon *d)
{
	return d->nsyncs > 0;
}

void sync_tick(struct daemon *d)
{
	if (d->nsyncs)
		sync_check(d);
}

static void sync_free(struct client *c)
{
	while (c->syncs) {
		struct sync_wait *w = c->syncs;

		c->syncs = w->next;
		c->d->nsyncs--;
		free(w);
	}
}

/* A sink only for the chunks: each one written gives ring space back,
 * which may answer a request. */
static void sink_chunk(struct sink *s, const struct sink_chunk *c)
{
	struct daemon *d = s->ctx;

	(void)c;
	if (d->nsyncs)
		sync_check(d);
}

static int on_request(struct sink *s, const struct sink_request *rq)
{
	(void)s;
	if (rq->type != RINGLOG_CTL_SYNC)
		return -ENOTSUP;
	return sync_request(rq->c, rq->payload, rq->len);
}

static void on_closed(struct sink *s, struct client *c)
{
	(void)s;
	sync_free(c);
}

const struct sink_ops sync_sink_ops = { .name = "sync", .chunk = sink_chunk,
					.request = on_request, .closed = on_closed };
