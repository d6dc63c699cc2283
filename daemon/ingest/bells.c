/* daemon/ingest/bells.c - writers' bell pages (proto/bell.h) and the awake
 * rings a drain pass visits.
 *
 * The page is the writer's memory: every counter is a hint. A value we did
 * not expect only makes us look at one of that writer's rings; a slot out
 * of range or taken twice only makes a ring lose its bell, and a ring
 * without one is polled as before bells (drain.c: pace_idle_wait()). So no
 * bad page can hide an event from us or make another writer's rings cost.
 */
#define _GNU_SOURCE
#include "daemon.h"
#include "log.h"
#include "ingest/bells.h"
#include "ingest/registry.h"
#include "ingest/transport.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Off c->asleep, if on it. */
static void unqueue(struct ring *r)
{
	struct client *c = r->c;

	if (!r->sl_pprev)
		return;
	*r->sl_pprev = r->sl_next;
	if (r->sl_next)
		r->sl_next->sl_pprev = r->sl_pprev;
	else
		c->asleep_tail = r->sl_pprev;
	r->sl_next = NULL;
	r->sl_pprev = NULL;
}

/* Off c->awake, if on it. */
static void unwake(struct ring *r)
{
	if (!r->aw_pprev)
		return;
	*r->aw_pprev = r->aw_next;
	if (r->aw_next)
		r->aw_next->aw_pprev = r->aw_pprev;
	r->aw_next = NULL;
	r->aw_pprev = NULL;
}

void bell_wake(struct ring *r)
{
	struct client *c = r->c;

	if (r->aw_pprev)
		return; /* on the list */
	unqueue(r);
	r->aw_next = c->awake;
	if (c->awake)
		c->awake->aw_pprev = &r->aw_next;
	r->aw_pprev = &c->awake;
	c->awake = r;
}

/* At the tail of c->asleep, again if it was on it: the queue stays in
 * the order of r->last_visit_ms, which only grows. */
void bell_sleep(struct ring *r)
{
	struct client *c = r->c;

	unwake(r);
	unqueue(r);
	if (!c->asleep) /* else the head's is older: the bound holds */
		c->asleep_since_ms = r->last_visit_ms;
	if (!c->asleep_tail)
		c->asleep_tail = &c->asleep;
	r->sl_pprev = c->asleep_tail;
	*c->asleep_tail = r;
	c->asleep_tail = &r->sl_next;
}

static uint32_t load(const struct client *c, uint32_t s)
{
	return __atomic_load_n(&c->bell->slot[s], __ATOMIC_RELAXED);
}

static int tables(struct client *c)
{
	if (c->bell_ring)
		return 0;
	c->bell_ring = calloc(RINGLOG_BELL_SLOTS, sizeof(*c->bell_ring));
	c->bell_seen = calloc(RINGLOG_BELL_SLOTS, sizeof(*c->bell_seen));
	if (!c->bell_ring || !c->bell_seen) {
		free(c->bell_ring);
		free(c->bell_seen);
		c->bell_ring = NULL;
		c->bell_seen = NULL;
		return -ENOMEM;
	}
	return 0;
}

int reg_bell(struct client *c, const uint8_t *p, uint32_t len, d_obj_t o)
{
	struct ringlog_ctl_bell b;
	char why[160] = "";
	size_t size;
	void *mem;
	int err;

	if (!c->writer || len < sizeof(b) || o == D_OBJ_NONE) {
		ctl_drop_obj(c, o);
		return -EPROTO;
	}
	memcpy(&b, p, sizeof(b));
	if (c->refused || c->bell) {
		ctl_drop_obj(c, o);
		if (c->bell)
			d_log(LOG_WARNING, "client pid %u (%s): a second bell page; the first is kept",
			      c->pid, c->comm);
		return 0;
	}
	err = ctl_map(c, o, false, RINGLOG_BELL_SIZE, &mem, &size);
	if (err == -EPERM)
		snprintf(why, sizeof(why), "it is not %s", ctl_obj_kind);
	else if (err == -EFBIG || (!err && size != RINGLOG_BELL_SIZE))
		snprintf(why, sizeof(why), "its size is not %u bytes", RINGLOG_BELL_SIZE);
	else if (err)
		snprintf(why, sizeof(why), "%s", strerror(-err));
	else if (b.slots != RINGLOG_BELL_SLOTS)
		snprintf(why, sizeof(why), "its slot count is not %u", (unsigned)RINGLOG_BELL_SLOTS);
	if (why[0]) {
		if (!err)
			ctl_unmap(mem, size);
		d_log(LOG_WARNING, "client pid %u (%s): bell page of %zu bytes, %u slots not used: %s "
		      "(a library of another version?); its rings are polled instead",
		      c->pid, c->comm, size, b.slots, why);
		return 0;
	}
	if (tables(c) < 0) {
		ctl_unmap(mem, size);
		return -ENOMEM;
	}
	c->bell = mem;
	for (uint32_t s = 0; s < c->bell_top; s++)
		c->bell_seen[s] = load(c, s);
	return 0;
}

void bell_ring_added(struct ring *r, uint32_t slot)
{
	struct client *c = r->c;
	struct ring *old;
	uint32_t s = slot - 1;

	if (!slot)
		return;
	if (slot > RINGLOG_BELL_SLOTS) {
		if (!c->bell_warned)
			d_log(LOG_WARNING, "client pid %u (%s): ring of thread %u names bell slot %u, "
			      "beyond the page's %u; it is polled instead",
			      c->pid, c->comm, r->tid, slot, (unsigned)RINGLOG_BELL_SLOTS);
		c->bell_warned = true;
		return;
	}
	if (tables(c) < 0)
		return; /* polled */
	/* A slot given again while we still hold its old ring (finished,
	 * waiting for its chunks): the old one loses its bell. */
	if ((old = c->bell_ring[s]) && old != r) {
		old->bell_slot = 0;
		bell_wake(old);
	}
	c->bell_ring[s] = r;
	c->bell_seen[s] = c->bell ? load(c, s) : 0;
	r->bell_slot = slot;
	if (slot > c->bell_top)
		c->bell_top = slot;
}

void bell_ring_released(struct ring *r)
{
	struct client *c = r->c;

	unwake(r);
	unqueue(r);
	if (r->bell_slot && c->bell_ring && c->bell_ring[r->bell_slot - 1] == r)
		c->bell_ring[r->bell_slot - 1] = NULL;
	r->bell_slot = 0;
}

void bell_client_free(struct client *c)
{
	if (c->bell)
		ctl_unmap((void *)c->bell, RINGLOG_BELL_SIZE);
	c->bell = NULL;
	free(c->bell_ring);
	free(c->bell_seen);
	c->bell_ring = NULL;
	c->bell_seen = NULL;
}

unsigned bell_scan(struct client *c)
{
	unsigned n = 0;

	for (uint32_t s = 0; s < c->bell_top; s++) {
		uint32_t v = load(c, s);
		struct ring *r;

		if (v == c->bell_seen[s])
			continue;
		c->bell_seen[s] = v;
		if (!(r = c->bell_ring[s]))
			continue;
		r->bell_rung = true;
		bell_wake(r);
		n++;
	}
	return n;
}
