/* daemon/ingest/registry.h - writers' providers and rings (registry.c):
 * HELLO maps a writer's metadata region, RING attaches a ring through the
 * validating consumer (proto/ringbuf.h), and enablement per provider goes
 * back to every writer (ENABLE frames).
 *
 * Identity comes from the transport, never from a message. reg_hello()
 * and reg_ring() return 0 (a refusal is sent to the peer, not an error),
 * -EPROTO (a frame the protocol does not allow: the connection closes) or
 * -ENOMEM. */
#ifndef RINGLOG_DAEMON_REGISTRY_H
#define RINGLOG_DAEMON_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ringbuf.h"
#include "ingest/client.h"
#include "ingest/overload.h"
#include "store/stream.h"

struct daemon;

/* Enablement and counters of one provider name, across all writers. */
struct provider {
	struct provider *next;
	char *name;
	uint64_t kw[8];      /* effective: config rule, raised by tails and
	                      * the flight recorder */
	uint64_t disk_kw[8]; /* of kw, what is written to disk: without what
	                      * only the flight recorder raises (memory only) */
	/* `ringlog enable --flight-level`: the flight buffer keeps levels
	 * (flight_rule_level, flight_rule] with flight_rule_kw; 0: as configured */
	unsigned flight_rule, flight_rule_level;
	uint64_t flight_rule_kw;
	uint64_t stored;     /* events */
	uint64_t lost_ring;  /* ring overflow the program attributed to it (the
	                      * LOSS record's aux); other losses have no provider */
	struct ovl_counts ovl; /* ingest/overload.c */
};

/* One ring of a writer: a stream in segment terms. */
struct ring {
	struct ring *next;
	struct client *c;
	uint32_t id;         /* stream id, daemon-unique */
	uint32_t tid;
	uint32_t clock;      /* RINGLOG_RING_CLOCK_TSC or 0 */
	uint64_t handle;     /* the client's name for it */
	uint64_t ring_id;    /* ring header created_ns, read once (STREAM) */
	void *mem;
	size_t map_size;
	struct ringlog_consumer cons;
	struct store_stream store; /* the store's (store/stream.h) */
	bool dead;           /* corrupt: detached, mapping released */
	bool fd_stored;      /* a copy is in the service manager's fd store */
	bool handed_over;    /* adopted after a restart, then registered again
	                      * by its live program: the new ring drains it */
	bool finishing;      /* drained for good; released when held == 0 */
	/* Idle rings are visited less often (drain.c): the loop's clock (ms)
	 * when a pass last found data in it, and when one last looked. */
	uint64_t last_data_ms, last_visit_ms;
	/* The bell (ingest/bells.c): its slot + 1 (0: none; it never sleeps),
	 * rung since the last pass, and its links on c->awake (aw_pprev NULL:
	 * off it, asleep until it rings or a sweep) or on c->asleep (sl_pprev
	 * NULL: off that; on it since last_visit_ms). */
	uint32_t bell_slot;
	bool bell_rung;
	uint64_t last_ev_ts; /* the newest event drained, in the ring's clock
	                      * (0: none yet): whether it may sleep at once */
	bool clock_agrees;   /* its clock and ours shown in step (pace.h), by
	                      * its writer's HELLO or a visit */
	struct ring *aw_next, **aw_pprev;
	struct ring *sl_next, **sl_pprev;
	uint8_t exit_levels_done; /* levels whose exit loss is stored (overload.c) */
};

int reg_hello(struct client *c, const uint8_t *p, uint32_t len, d_obj_t o);
int reg_ring(struct client *c, const uint8_t *p, uint32_t len, d_obj_t o);
/* Attach a mapped ring to c: the ring, or NULL with *why (the mapping is
 * then the caller's to drop). */
struct ring *reg_ring_add(struct client *c, uint64_t handle, uint32_t tid, void *mem, size_t size,
			  const char **why);
/* Parse what the writer appended to its metadata region: 0 (a corrupt
 * region refuses the writer) or -ENOMEM. */
int reg_meta_sync(struct client *c);
/* A REFUSE frame for the writer (handle 0: the whole registration), the
 * first few logged. */
void reg_refuse(struct client *c, uint64_t handle, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* A ring drained for good (or a client going): unmap and free it. */
void reg_ring_release(struct ring *r);
/* The RELEASED frames of the rings released since the last call, one per
 * client (drain.c, at the end of a pass); those a client's queue cannot
 * take now are kept for the next, up to REG_RELEASED_KEPT_MAX (512 KiB). */
void reg_send_released(struct daemon *d);
#define REG_RELEASED_KEPT_MAX 65536u
/* Configuration, tails or tracers changed: enablement again, everywhere. */
void reg_enable_recompute(struct daemon *d);
struct provider *reg_provider(struct daemon *d, const char *name);

#endif /* RINGLOG_DAEMON_REGISTRY_H */
