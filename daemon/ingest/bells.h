/* daemon/ingest/bells.h - writers' bell pages (proto/bell.h): a BELL frame
 * maps one, a RING frame's slot ties a ring to it, and each drain pass
 * asks which sleeping rings rang (drain.c). Also the list of a writer's
 * awake rings, which is what a pass visits: a ring leaves it to sleep on
 * its bell, or when it is released. */
#ifndef RINGLOG_DAEMON_BELLS_H
#define RINGLOG_DAEMON_BELLS_H

#include <stdint.h>

#include "ingest/registry.h"

struct ring;

/* A BELL frame: 0 (a page we cannot use is logged and left out: the
 * writer's rings are polled as before) or -EPROTO / -ENOMEM. */
int reg_bell(struct client *c, const uint8_t *p, uint32_t len, d_obj_t o);
/* r, new, was given slot (the RING frame's bell: slot + 1, 0: none). */
void bell_ring_added(struct ring *r, uint32_t slot);
/* r goes (reg_ring_release()), or its client: forget them. */
void bell_ring_released(struct ring *r);
void bell_client_free(struct client *c);
/* Flag and wake every ring of c whose counter moved since the last look;
 * returns how many. */
unsigned bell_scan(struct client *c);
/* May r sleep at all: it has a slot in a page we mapped. */
static inline bool bell_works(const struct client *c, const struct ring *r)
{
	return c->bell && r->bell_slot;
}
/* On c->awake, or asleep: at the tail of c->asleep, as visited at
 * r->last_visit_ms (a ring made by hand, in a test, is on neither until
 * its first visit). */
void bell_wake(struct ring *r);
void bell_sleep(struct ring *r);

#endif /* RINGLOG_DAEMON_BELLS_H */
