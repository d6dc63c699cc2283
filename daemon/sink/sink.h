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
 * The registry asks the same list what enablement the sinks raise.
 *
 * Every op runs on the loop thread and must not call back into the store
 * (no seal, no event): a sink that needs the disk to move (the tail's
 * backlog, a flush) asks from its own entry points, not from an op.
 * Every op is optional (NULL: not interested).
 */
#ifndef RINGLOG_DAEMON_SINK_H
#define RINGLOG_DAEMON_SINK_H

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
};

/* One sealed chunk, done: valid only during the call. */
struct sink_chunk {
	const uint8_t *bytes;     /* chunk header and body as written, or NULL
	                           * when the chunk was lost (not written) */
	size_t len;               /* bytes on disk, padding included */
	uint64_t segment;         /* seq of the segment it went to */
	uint64_t seal_no;         /* order of sealing, from 0, gap-free */
	uint32_t events;
};

struct sink_ops {
	const char *name;
	void (*record)(struct sink *s, const struct sink_record *rec);
	/* A loss in r's stream (ring overflow reported by the writer). */
	void (*loss)(struct sink *s, struct ring *r, const struct ringlog_seg_loss *l);
	void (*chunk)(struct sink *s, const struct sink_chunk *c);
	/* The daemon stops: the store is idle, its last chunk written. */
	void (*shutdown)(struct sink *s);
	/* A sink that wants more than the configuration enables (a tail at
	 * verbose, a tracer session) ORs it into kw[level] for provider name:
	 * the registry asks every sink whenever enablement is computed. */
	void (*raise)(struct sink *s, const char *provider, uint64_t kw[8]);
	/* A writer's connection closed (its rings are still registered and
	 * mapped: they drain after this). */
	void (*writer_gone)(struct sink *s, struct client *c);
};

struct sink {
	const struct sink_ops *ops;
	struct sink *next;
	void *ctx;
	/* Set by the sink: record() and loss() are called only while true,
	 * so that a sink with nobody listening costs the drain one load. */
	bool want_records;
	/* What this sink raises is kept in memory only (the flight recorder):
	 * the drain hands those events to the sinks without writing them
	 * (provider.disk_kw, ingest/registry.h). */
	bool memory_only;
};

/* Fan-out helpers for the store (and shutdown for lifecycle.c). */
static inline void sink_publish_record(struct sink *list, const struct sink_record *rec)
{
	for (struct sink *s = list; s; s = s->next)
		if (s->want_records && s->ops->record)
			s->ops->record(s, rec);
}

static inline void sink_publish_loss(struct sink *list, struct ring *r,
				     const struct ringlog_seg_loss *l)
{
	for (struct sink *s = list; s; s = s->next)
		if (s->want_records && s->ops->loss)
			s->ops->loss(s, r, l);
}

static inline void sink_publish_chunk(struct sink *list, const struct sink_chunk *c)
{
	for (struct sink *s = list; s; s = s->next)
		if (s->ops->chunk)
			s->ops->chunk(s, c);
}

/* memory: the sinks whose raise is kept in memory only, or the others. */
static inline void sink_publish_raise(struct sink *list, const char *provider, uint64_t kw[8],
				      bool memory)
{
	for (struct sink *s = list; s; s = s->next)
		if (s->ops->raise && s->memory_only == memory)
			s->ops->raise(s, provider, kw);
}

static inline void sink_publish_writer_gone(struct sink *list, struct client *c)
{
	for (struct sink *s = list; s; s = s->next)
		if (s->ops->writer_gone)
			s->ops->writer_gone(s, c);
}

static inline void sink_publish_shutdown(struct sink *list)
{
	for (struct sink *s = list; s; s = s->next)
		if (s->ops->shutdown)
			s->ops->shutdown(s);
}

#endif /* RINGLOG_DAEMON_SINK_H */
