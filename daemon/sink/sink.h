/* daemon/sink/sink.h - what consumes what the store publishes.
 *
 * The store (store/) takes validated records from the drain, writes them
 * into chunks and segment files, and publishes three things, in this order
 * per record: the record itself once the store has accepted it (it is in
 * the open chunk), a loss once it is counted in a stream, and each sealed
 * chunk once it is on disk or counted lost (in the order chunks were
 * sealed, after the ring space its records held is given back). A sink is
 * one ops table and a node in the list lifecycle.c hands the store: the
 * store calls through the table, never a sink by name, so a new consumer
 * (export, a flight recorder, shipping) plugs in here without touching it.
 * The registry asks the same list what enablement the sinks raise, and
 * the control channel hands it the tools' requests a sink answers (TAIL,
 * SYNC, SNAPSHOT), the news that a peer closed, that a writer described more and
 * that it is freed: ingest names no sink either.
 *
 * Every op runs on the loop thread and must not call back into the store
 * (no seal, no event): a sink that needs the disk to move (the tail's
 * backlog, a flush) asks from its own entry points, not from an op.
 * Every op is optional (NULL: not interested).
 */
#ifndef RINGLOG_DAEMON_SINK_H
#define RINGLOG_DAEMON_SINK_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "meta.h"
#include "segment.h"

struct ring;
struct sink;
struct client;

/* One event record the store accepted, valid only during the call: its
 * bytes are in the writer's ring, validated against e by the drain. */
struct sink_record {
	struct ring *r;           /* its stream and writer (ingest/registry.h) */
	uint16_t type;            /* RINGLOG_REC_EVENT or RINGLOG_REC_EVENT_ACT */
	uint16_t id;              /* event id in the writer's metadata */
	const uint8_t *payload;   /* timestamp, activity, fields */
	uint32_t len;
	const struct ringlog_event_desc *e;
	bool memory_only;         /* not stored on disk: only a memory-only
	                           * sink (the flight recorder) enabled it */
};

/* One sealed chunk, done: valid only during the call. */
struct sink_chunk {
	const uint8_t *bytes;     /* chunk header and body as written, or NULL
	                           * when the chunk was lost (not written) */
	size_t len;               /* bytes on disk, padding included */
	uint64_t segment;         /* seq of the segment it went to */
	uint64_t seal_no;         /* order of sealing, from 0, gap-free */
	uint64_t next_segment;    /* seq of the segment the store writes next */
	uint32_t events;
};

/* A peer's request for a sink (TAIL, SYNC, SNAPSHOT: proto/ctl.h), handed over by
 * the control channel once it has drained every ring and sealed the open
 * chunk, with the store's progress at that moment. */
struct sink_request {
	struct client *c;
	uint16_t type;            /* RINGLOG_CTL_* */
	const uint8_t *payload;
	uint32_t len;
	uint64_t sealed;          /* chunks sealed so far: what the peer
	                           * emitted before is in seal_no < sealed */
	uint64_t segment;         /* seq of the segment the store writes next */
};

struct sink_ops {
	const char *name;
	void (*record)(struct sink *s, const struct sink_record *rec);
	/* Optional: n records of one kind laid end to end in the ring, first
	 * describing the first (the rest ringlog_rec_total(len) bytes apart;
	 * the consumer's rec_end just past the first), as n calls of record
	 * would give them. Without it, record is called for each. */
	void (*record_run)(struct sink *s, const struct sink_record *first, uint32_t n);
	/* A loss in r's stream (ring overflow reported by the writer). */
	void (*loss)(struct sink *s, struct ring *r, const struct ringlog_seg_loss *l);
	void (*chunk)(struct sink *s, const struct sink_chunk *c);
	/* The drain finished a pass over the rings: what a sink batched
	 * from record() and loss() should go out now. */
	void (*passed)(struct sink *s);
	/* The daemon stops: the store is idle, its last chunk written. */
	void (*shutdown)(struct sink *s);
	/* A sink that wants more than the configuration enables (a tail at
	 * verbose, a tracer session) ORs it into kw[level] for provider name:
	 * the registry asks every sink whenever enablement is computed. */
	void (*raise)(struct sink *s, const char *provider, uint64_t kw[8]);
	/* A request of a type this sink answers: 0, or -errno as a frame
	 * handler returns it (ingest/ctl.c: -EPROTO closes the connection);
	 * -ENOTSUP: not this sink's, ask the next. */
	int (*request)(struct sink *s, const struct sink_request *rq);
	/* A peer of the control channel closed: forget what it asked. A
	 * writer's rings are still registered and mapped (they drain after
	 * this): the flight recorder reads them to judge how it went. */
	void (*closed)(struct sink *s, struct client *c);
	/* A writer's metadata grew (the registry parsed new providers or
	 * events): c->meta describes more. */
	void (*described)(struct sink *s, struct client *c);
	/* A writer is freed (its last ring released): drop what the sink
	 * keeps for it. */
	void (*freed)(struct sink *s, struct client *c);
};

struct sink {
	const struct sink_ops *ops;
	struct sink *next;
	void *ctx;
	/* record() and loss() are called only while true; changed through
	 * sink_want() only, which keeps the list's count. */
	bool want_records;
	/* What this sink raises is kept in memory only (the flight recorder):
	 * the drain hands those events to the sinks without writing them
	 * (provider.disk_kw, ingest/registry.h). */
	bool memory_only;
};

/* The sinks in the order they are told (linked by lifecycle.c), and how
 * many want records: the store tests that count once per record, so that
 * with no tail and no forwarder the drain pays one predictable branch, not
 * a walk of the list. */
struct sink_list {
	struct sink *head;
	unsigned wanting;     /* sinks with want_records set */
	struct sink *only;    /* the one of them when wanting is 1, else NULL:
	                       * the flight recorder alone, or a tail alone,
	                       * is called without a walk of the list */
};

/* l->only, from the list (when a sink joins or its want changes). */
static inline void sink_only_update(struct sink_list *l)
{
	l->only = NULL;
	if (l->wanting != 1)
		return;
	for (struct sink *s = l->head; s; s = s->next)
		if (s->want_records)
			l->only = s;
}

/* Append s (want_records as set) to the list. */
static inline void sink_link(struct sink_list *l, struct sink *s)
{
	struct sink **pp = &l->head;

	while (*pp)
		pp = &(*pp)->next;
	s->next = NULL;
	*pp = s;
	if (s->want_records)
		l->wanting++;
	sink_only_update(l);
}

/* A sink starts or stops wanting records (a tail joins or leaves, a
 * tracer session opens or closes). */
static inline void sink_want(struct sink_list *l, struct sink *s, bool on)
{
	if (s->want_records == on)
		return;
	s->want_records = on;
	if (on)
		l->wanting++;
	else
		l->wanting--;
	sink_only_update(l);
}

/* Fan-out helpers for the store (and shutdown for lifecycle.c). The store
 * calls the first two only while l->wanting is not 0. */
static inline void sink_publish_record(const struct sink_list *l, const struct sink_record *rec)
{
	if (l->only) {
		if (l->only->ops->record)
			l->only->ops->record(l->only, rec);
		return;
	}
	for (struct sink *s = l->head; s; s = s->next)
		if (s->want_records && s->ops->record)
			s->ops->record(s, rec);
}

static inline void sink_publish_loss(const struct sink_list *l, struct ring *r,
				     const struct ringlog_seg_loss *loss)
{
	for (struct sink *s = l->head; s; s = s->next)
		if (s->want_records && s->ops->loss)
			s->ops->loss(s, r, loss);
}

static inline void sink_publish_passed(const struct sink_list *l)
{
	for (struct sink *s = l->head; s; s = s->next)
		if (s->want_records && s->ops->passed)
			s->ops->passed(s);
}

static inline void sink_publish_chunk(const struct sink_list *l, const struct sink_chunk *c)
{
	for (struct sink *s = l->head; s; s = s->next)
		if (s->ops->chunk)
			s->ops->chunk(s, c);
}

/* memory: ask the sinks whose raise is kept in memory only (the flight
 * recorder), or the others. The registry asks the others first and takes
 * that as what goes to disk (provider.disk_kw). */
static inline void sink_publish_raise(const struct sink_list *l, const char *provider, uint64_t kw[8],
				      bool memory)
{
	for (struct sink *s = l->head; s; s = s->next)
		if (s->ops->raise && s->memory_only == memory)
			s->ops->raise(s, provider, kw);
}

/* The first sink that answers rq's type takes it: its return, or -EPROTO
 * when none does (a frame the protocol does not allow here). */
static inline int sink_publish_request(const struct sink_list *l, const struct sink_request *rq)
{
	for (struct sink *s = l->head; s; s = s->next) {
		int err = s->ops->request ? s->ops->request(s, rq) : -ENOTSUP;

		if (err != -ENOTSUP)
			return err;
	}
	return -EPROTO;
}

static inline void sink_publish_closed(const struct sink_list *l, struct client *c)
{
	for (struct sink *s = l->head; s; s = s->next)
		if (s->ops->closed)
			s->ops->closed(s, c);
}

static inline void sink_publish_described(const struct sink_list *l, struct client *c)
{
	for (struct sink *s = l->head; s; s = s->next)
		if (s->ops->described)
			s->ops->described(s, c);
}

static inline void sink_publish_freed(const struct sink_list *l, struct client *c)
{
	for (struct sink *s = l->head; s; s = s->next)
		if (s->ops->freed)
			s->ops->freed(s, c);
}

static inline void sink_publish_shutdown(const struct sink_list *l)
{
	for (struct sink *s = l->head; s; s = s->next)
		if (s->ops->shutdown)
			s->ops->shutdown(s);
}

#endif /* RINGLOG_DAEMON_SINK_H */
