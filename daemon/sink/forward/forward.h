/* daemon/sink/forward/forward.h - events handed on to the OS tracer. One ops table, one
 * file per tracer (fwd-user-events.c on Linux; fwd-etw.c on Windows), like
 * io-ops.h for writes; forward.c is the part they share: which events of which
 * writer go where, the counters, and raising enablement in the clients
 * when a tracer starts listening.
 *
 * A backend groups events into targets (a user_events tracepoint per
 * provider x level x keyword; an ETW provider) and owns the encoding. It
 * learns each event definition once, when a writer's metadata shows it,
 * so that a tracer can enable the target before the first event flows.
 */
#ifndef RINGLOG_DAEMON_FORWARD_H
#define RINGLOG_DAEMON_FORWARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "meta.h"

struct fwd;

/* What an event costs the tracer's side: counted per reason. */
enum fwd_loss {
	FWD_LOST_DISABLED, /* the target went away between check and write */
	FWD_LOST_TRACER,   /* the tracer had no room (ENOSPC, ENOMEM) */
	FWD_LOST_OTHER,    /* any other error, or an event too big to encode */
	FWD_LOST_N_,
};

struct fwd_ops {
	const char *name; /* "user_events", "etw" */
	/* 0, or -errno with why filled in (ENOENT: the kernel has no such
	 * tracer; EACCES: not allowed). */
	int (*open)(struct fwd *f, char *why, size_t len);
	void (*close)(struct fwd *f);
	/* A writer defined event e of the provider named so: a handle kept
	 * per (writer, event id), or NULL when it cannot be forwarded (logged). */
	void *(*event_new)(struct fwd *f, const char *provider, const struct ringlog_event_desc *e);
	void (*event_free)(void *ev);
	/* Whether a tracer listens to ev's target now: a memory load. */
	bool (*event_enabled)(const void *ev);
	/* Hand one event on. act is NULL or 16 bytes; fields are the record's
	 * bytes after ts and activity, validated against e. 0 or a loss. */
	int (*event_write)(struct fwd *f, void *ev, const uint8_t *act, uint64_t emit_real_ns,
			   const uint8_t *fields, size_t len, enum fwd_loss *why);
	/* True when the set of enabled targets changed since the last call. */
	bool (*changed)(struct fwd *f);
	/* OR into kw[level] the keywords tracers want from provider name. */
	void (*raise)(struct fwd *f, const char *provider, uint64_t kw[8]);
	/* Targets known and enabled, for status. */
	void (*count)(struct fwd *f, unsigned *targets, unsigned *enabled);
};

/* A provider that is not forwarded because the tracer would confuse it
 * with another: its target (user_events tracepoint names, ETW GUID) is
 * already the owner's. target is what they would share, as a phrase:
 * "tracepoints Acme_Net_L*K*", "GUID {...}". */
struct fwd_refusal {
	struct fwd_refusal *next;
	char *provider, *owner, *target;
};

struct fwd {
	const struct fwd_ops *ops;
	void *priv;
	uint64_t forwarded;
	uint64_t lost[FWD_LOST_N_];
	/* Called by the backend each time it refuses an event of provider
	 * because target already belongs to provider owner (NULL: nobody
	 * listens). forward.c logs it once per provider and lists it in
	 * status. */
	void (*refuse)(struct fwd *f, const char *provider, const char *owner, const char *target);
	struct fwd_refusal *refused;
};

extern const struct fwd_ops fwd_user_events_ops;
extern const struct fwd_ops fwd_etw_ops;

/* forward.c, for the daemon: a sink of the store's records (fwd_sink_ops;
 * its shutdown closes the backend). */
struct daemon;
struct client;
struct provider;
void fwd_apply(struct daemon *d);       /* start or stop as the config says */
void fwd_tick(struct daemon *d);        /* tracers came or went: re-raise */
struct json_t *fwd_status(struct daemon *d);
extern const struct sink_ops fwd_sink_ops;

#endif /* RINGLOG_DAEMON_FORWARD_H */
