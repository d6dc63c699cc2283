/* daemon/ingest/ctl.c - the control channel's frames (proto/ctl.h), whatever
 * carries them: a connection's life, its replies, and what each frame
 * does. The transports (unix/transport.c: a Unix socket; win/transport.c: a named
 * pipe) accept peers, read bytes into c->rx and hand them here, and carry
 * out what c->tx holds.
 *
 * Every byte from a peer is untrusted: frame lengths are bounded, unknown
 * frames close the connection, objects arriving without a frame that
 * wants them are dropped. A peer that does not read its replies only fills
 * its own queue; past the queue's limit the daemon drops for that peer.
 */
#define _GNU_SOURCE
#include "daemon.h"
#include "ingest/operate.h"
#include "log.h"
#include "ingest/client.h"
#include "ingest/bells.h"
#include "ingest/transport.h"
#include "access.h"
#include "ingest/registry.h"
#include "ingest/drain.h"
#include "ingest/status.h"
#include "ingest/fdstore.h"

#include <errno.h>
#include <jansson.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int tx_append(struct txbuf *t, const void *a, size_t alen, const void *b, size_t blen)
{
	size_t need = t->len + alen + blen;

	if (t->limit && need > t->limit)
		return -ENOBUFS;
	if (t->head + need > t->cap && t->head) {
		/* what was written leaves room at the front: reuse it
		 * (once per buffer's worth of writes, not per write) */
		memmove(t->buf, t->buf + t->head, t->len);
		t->head = 0;
	}
	if (need > t->cap) {
		size_t cap = t->cap ? t->cap : 4096;
		uint8_t *n;

		while (cap < need)
			cap *= 2;
		if (!(n = realloc(t->buf, cap)))
			return -ENOMEM;
		t->buf = n;
		t->cap = cap;
	}
	memcpy(t->buf + t->head + t->len, a, alen);
	if (blen)
		memcpy(t->buf + t->head + t->len + alen, b, blen);
	t->len = need;
	return 0;
}

void tx_consumed(struct txbuf *t, size_t n)
{
	t->len -= n;
	t->head = t->len ? t->head + n : 0;
}

void tool_error(struct client *c, const char *msg)
{
	json_t *j = json_pack("{s:s}", "error", msg);
	char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;

	if (s)
		client_send(c, RINGLOG_CTL_ERROR, s, (uint32_t)strlen(s));
	free(s);
	json_decref(j);
}

/* A connection the transport accepted, linked in; the transport fills in
 * the identity and its handle. */
struct client *client_new(struct daemon *d)
{
	struct client *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	if (!(c->rx = malloc(CLIENT_RX_CAP))) {
		free(c);
		return NULL;
	}
	c->d = d;
	c->seq = ++d->client_seq;
	c->tx.limit = 64u << 20;
	c->next = d->clients;
	d->clients = c;
	d->nclients++;
	return c;
}

int client_send(struct client *c, uint16_t type, const void *payload, uint32_t len)
{
	struct ringlog_ctl_frame f = { .len = len, .type = type };
	int err;

	if (c->gone)
		return -EPIPE;
	if ((err = tx_append(&c->tx, &f, sizeof(f), payload, len)) < 0)
		return err;
	ctl_flush(c);
	return 0;
}

/* Stop talking to the peer. A writer's rings stay until they are drained:
 * what the process committed before it exited is stored. */
void client_close(struct client *c)
{
	if (c->gone)
		return;
	c->gone = true;
	c->d->rx_held -= c->rx_len;
	c->rx_len = 0;
	/* a tail, SYNC and SNAPSHOT requests; for a writer, the flight
	 * recorder judges how it went (its rings are still mapped) */
	sink_publish_closed(&c->d->sinks, c);
	ctl_close(c);
	free(c->rx);
	c->rx = NULL;
	drain_start(c->d); /* drain what it left, soon */
}

void client_maybe_free(struct client *c)
{
	struct daemon *d = c->d;

	/* A rate limit's report not stored yet keeps the writer until the
	 * store has room for it (ovl_retry()). */
	if (!c->gone || c->tr_open || c->rings || (c->ovl_npending && c->spent))
		return;
	for (struct client **pp = &d->clients; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	d->nclients--;
	fdstore_forget_meta(c);
	if (c->meta_map)
		ctl_unmap((void *)c->meta_map, c->meta_size);
	bell_client_free(c);
	ctl_free(c);
	sink_publish_freed(&d->sinks, c); /* forwarding's per-writer state */
	ringlog_meta_free(&c->meta);
	free(c->store.route);
	free(c->prov);
	free(c->prov_sent);
	free(c->pol_sent);
	free(c->ovl_pending);
	free(c->spent);
	free(c->released);
	free(c->exe);
	free(c->tx.buf);
	free(c);
#ifdef __GLIBC__
	/* Programs come and go over months: hand the pages their buffers
	 * used back to the system now rather than keep them as free heap. */
	malloc_trim(0);
#endif
}

/* What a frame type needs. STATUS: writers get the summary, readers the
 * per-program detail too. */
static unsigned frame_needs(uint16_t type, unsigned have)
{
	switch (type) {
	case RINGLOG_CTL_TAIL:
	case RINGLOG_CTL_ENABLE_SET:
	case RINGLOG_CTL_LIST:
	case RINGLOG_CTL_VACUUM:
	case RINGLOG_CTL_SNAPSHOT: return ACCESS_READ;
	case RINGLOG_CTL_STATUS: return have & ACCESS_WRITE ? ACCESS_WRITE : ACCESS_READ;
	default: return ACCESS_WRITE;
	}
}

/* A peer asking for what its groups do not allow gets the reason and is
 * disconnected. */
static int deny(struct client *c, unsigned need)
{
	char why[400];

	access_explain(c->d, c->uid, need, why, sizeof(why));
	d_log(LOG_WARNING, "client pid %u (%s): refused: %s", c->pid, c->comm, why);
	if (need & ACCESS_WRITE)
		reg_refuse(c, 0, "%s", why);
	else
		tool_error(c, why);
	client_close(c); /* the reply is already on its way: sent at once */
	return -EACCES;
}

/* A request a sink answers: first every ring drained and the open chunk
 * sealed, so that what the peer emitted before is on its way to the disk,
 * then the request with the store's progress, to the sink that takes it. */
static int to_sink(struct client *c, uint16_t type, const uint8_t *p, uint32_t len)
{
	struct daemon *d = c->d;
	struct sink_request rq = { .c = c, .type = type, .payload = p, .len = len };

	drain_all(d);
	store_seal(d->st);
	ovl_sealed(d);
	rq.sealed = d->st->seal_next;
	rq.segment = d->st->cur ? d->st->cur->seq : d->st->next_seq;
	return sink_publish_request(&d->sinks, &rq);
}

static int handle_frame(struct client *c, uint16_t type, const uint8_t *p, uint32_t len)
{
	unsigned need = frame_needs(type, c->access);

	if (!(c->access & need))
		return deny(c, need);
	switch (type) {
	case RINGLOG_CTL_HELLO:
		return reg_hello(c, p, len, ctl_take_obj(c, p, len, sizeof(struct ringlog_ctl_hello)));
	case RINGLOG_CTL_RING:
		return reg_ring(c, p, len, ctl_take_obj(c, p, len, sizeof(struct ringlog_ctl_ring)));
	case RINGLOG_CTL_BELL:
		return reg_bell(c, p, len, ctl_take_obj(c, p, len, sizeof(struct ringlog_ctl_bell)));
	case RINGLOG_CTL_META:
		return c->writer ? reg_meta_sync(c) : -EPROTO;
	case RINGLOG_CTL_SUPPRESSED:
		return c->writer ? ovl_suppressed(c, p, len) : -EPROTO;
	case RINGLOG_CTL_WAKE: /* (a payload is for later versions) */
		return c->writer ? ctl_send_wake(c) : -EPROTO;
	case RINGLOG_CTL_SYNC:
		/* What is there now goes to the disk without waiting for the
		 * chunk to fill or age; the answer (sink/sync.c) waits for the
		 * write. */
		return to_sink(c, type, p, len);
	case RINGLOG_CTL_STATUS:
		c->tool = true;
		return status_reply(c, c->access & ACCESS_READ);
	case RINGLOG_CTL_TAIL:
		c->tool = true;
		/* The backlog: everything emitted before the tail joins goes to
		 * the segments, which the tail (sink/tail.c) reads itself; then
		 * it is live. */
		return to_sink(c, type, p, len);
	case RINGLOG_CTL_ENABLE_SET: return op_enable_set(c, p, len);
	case RINGLOG_CTL_LIST: return op_list(c, p, len);
	case RINGLOG_CTL_VACUUM: return op_vacuum(c, p, len);
	case RINGLOG_CTL_SNAPSHOT:
		c->tool = true;
		/* The flight recorder (sink/flight-trigger.c): what the rings
		 * hold now is in its buffer before the trigger is taken. */
		return to_sink(c, type, p, len);
	default:
		return -EPROTO;
	}
}

bool ctl_admit(struct daemon *d, const struct client *self, uint32_t uid, unsigned access,
	       char *why, size_t len)
{
	const struct ringlog_config *cfg = &d->cfg;
	uint32_t all = 0, mine = 0;
	uint32_t reserve = cfg->limits.clients_reserved < cfg->limits.clients / 4 ?
			   cfg->limits.clients_reserved : cfg->limits.clients / 4;
	bool privileged = uid == 0 || (access & ACCESS_READ);

	for (const struct client *c = d->clients; c; c = c->next) {
		if (c == self)
			continue;
		all++; /* gone writers too: their rings are still held */
		if (!c->gone && c->uid == uid)
			mine++;
	}
	/* The last clients_reserved places are for root and the read group:
	 * whoever fills the rest, an operator can still run status and tail. */
	if (all >= cfg->limits.clients - (privileged ? 0 : reserve)) {
		snprintf(why, len, "too many clients: %u connected, limits.clients is %u (the last %u "
			 "for root and read_group)", all, cfg->limits.clients, reserve);
		return false;
	}
	/* One user's programs cannot take every place. */
	if (uid != 0 && mine >= cfg->limits.clients_per_uid) {
		snprintf(why, len, "uid %u already has %u connections: limits.clients_per_uid is %u",
			 uid, mine, cfg->limits.clients_per_uid);
		return false;
	}
	return true;
}

/* Bytes of unfinished frames held for all connections: over
 * limits.buffered_bytes, the newest connections holding some are refused
 * (a peer that sends half a frame and waits holds up to a frame's size). */
static void rx_bound(struct daemon *d)
{
	while (d->rx_held > d->cfg.limits.buffered_bytes) {
		struct client *newest = NULL;

		for (struct client *c = d->clients; c; c = c->next)
			if (!c->gone && c->rx_len && (!newest || c->seq > newest->seq))
				newest = c;
		if (!newest)
			return;
		reg_refuse(newest, 0, "ringlogd holds %llu bytes of unfinished frames, over "
			   "limits.buffered_bytes (%llu): this connection's %zu are dropped; send whole "
			   "frames", (unsigned long long)d->rx_held,
			   (unsigned long long)d->cfg.limits.buffered_bytes, newest->rx_len);
		client_close(newest);
	}
}

void client_received(struct client *c, size_t n)
{
	size_t off = 0, held = c->rx_len;

	c->rx_len += n;
	c->d->rx_held += n; /* client_close() takes back what is left */
	while (c->rx_len - off >= sizeof(struct ringlog_ctl_frame) && !c->gone) {
		struct ringlog_ctl_frame f;
		int err;

		memcpy(&f, c->rx + off, sizeof(f));
		if (f.len > RINGLOG_CTL_MAX) {
			d_log(LOG_WARNING, "client pid %u: frame of %u bytes exceeds the %u limit: disconnected",
			      c->pid, f.len, RINGLOG_CTL_MAX);
			client_close(c);
			return;
		}
		if (c->rx_len - off < sizeof(f) + f.len)
			break;
		err = handle_frame(c, f.type, c->rx + off + sizeof(f), f.len);
		if (c->gone)
			return; /* refused and closed */
		off += sizeof(f) + f.len;
		if (err == -EPROTO) {
			d_log(LOG_WARNING, "client pid %u (%s): invalid or unexpected frame type %u: disconnected",
			      c->pid, c->comm, f.type);
			client_close(c);
			return;
		}
	}
	if (c->gone)
		return;
	memmove(c->rx, c->rx + off, c->rx_len - off);
	c->rx_len -= off;
	c->d->rx_held -= off;
	if (c->rx_len > held)
		rx_bound(c->d);
}
