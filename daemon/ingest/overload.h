/* daemon/ingest/overload.h - the daemon's side of overload (overload.c):
 * each ring's shed reserve, each writer's per-event policies (rate limit,
 * wait), the rate-limit reports of programs, and loss by level. Hooks in
 * registry.c, drain.c, ctl.c and status.c call these; the rest of the
 * daemon does not know about overload. */
#ifndef RINGLOG_DAEMON_OVERLOAD_H
#define RINGLOG_DAEMON_OVERLOAD_H

#include <stdbool.h>
#include <stdint.h>

#include "ring.h"

struct daemon;
struct client;
struct ring;
struct provider;
typedef struct json_t json_t;

/* Counters kept in struct daemon, client and provider. */
struct ovl_counts {
	uint64_t lost_level[RINGLOG_LOSS_LEVELS]; /* ring loss by level (index 1..5;
	                                           * 0: not said) */
	uint64_t suppressed;                      /* by rate limits */
};

/* A rate limit's report the store had no room for (a slow disk, every
 * chunk in flight): kept by the writer and stored by ovl_retry(). */
struct ovl_pending {
	uint16_t event;
	uint64_t count;
};
/* Store what c's reports left pending (called by the drain, once a pass
 * per writer that has some). */
void ovl_retry(struct daemon *d, struct client *c);
/* Every open chunk was just sealed (a SYNC, the flush timer while one
 * waits): the reports stored so far are in chunks below st->seal_next. */
void ovl_sealed(struct daemon *d);
/* A report c sent is not on disk yet (kept for a stream or for room, in
 * a chunk not sealed or not written): a flush waits for it. */
bool ovl_flush_pending(struct client *c);
/* Some writer has a report kept that one of its streams could take
 * (shutdown waits for it, within its bound). */
bool ovl_pending(const struct daemon *d);

/* A ring was attached: give it the configured shed reserve and level. */
void ovl_ring_attached(struct daemon *d, struct ring *r);
/* Configuration or run-time rules changed: every ring and every writer's
 * policies again. */
void ovl_reload(struct daemon *d);
/* The writer's metadata grew: policies of its new events. */
void ovl_meta_synced(struct client *c);
/* A ring LOSS record (or the loss counted at a ring's end) split by level. */
void ovl_count_levels(struct daemon *d, struct ring *r, struct provider *p,
		      const uint64_t by_level[RINGLOG_LOSS_LEVELS]);
/* Store the loss a ring counted but never reported in-stream (its end):
 * one LOSS record per level when the ring kept them, else one. */
/* The loss a finished ring's producer counted but never reported in its
 * stream, stored by level when the ring kept them: 0, or STORE_FULL (no
 * room now: call again later; what was stored is not stored twice) or
 * -errno from the store. */
int ovl_exit_loss(struct daemon *d, struct ring *r, const struct ringlog_rec_loss *l);
/* A SUPPRESSED frame: each count becomes a LOSS record naming its event.
 * 0, or -EPROTO for a frame of the wrong size. */
int ovl_suppressed(struct client *c, const uint8_t *p, uint32_t len);
/* Add "overload" (config in force, loss by level, suppressed) to a STATUS
 * reply, and the per-provider figures to its "providers" rows. */
void ovl_status(struct daemon *d, json_t *status);

#endif /* RINGLOG_DAEMON_OVERLOAD_H */
