/* client/ring.c - creating, handing over and releasing per-thread rings.
 *
 * A ring is shared memory the daemon can map without fear of faults (a
 * sealed memfd, a pagefile section: os-*.c). Rings stay on lib.rings
 * until their thread has exited *and* the daemon has consumed everything:
 * a finished ring whose daemon died must survive to be handed to the next
 * daemon.
 */
#define _GNU_SOURCE
#include "lib.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t ring_size(void)
{
	uint64_t s = lib.ring_size ? lib.ring_size : LIB_RING_DEFAULT;
	uint64_t p = RINGLOG_RING_MIN_DATA;

	while (p < s && p < RINGLOG_RING_MAX_DATA)
		p <<= 1;
	return p;
}

static void unmap(struct lib_ring *r)
{
	lib_shm_destroy(r->obj, r->mem, r->map_size);
	free(r);
}

/* 64-aligned where the inline path runs, so that its fields (the head of
 * prod) are one cache line. */
static struct lib_ring *ring_alloc(void)
{
#ifdef _WIN32
	return calloc(1, sizeof(struct lib_ring));
#else
	void *m;

	if (posix_memalign(&m, 64, sizeof(struct lib_ring)) != 0)
		return NULL;
	return memset(m, 0, sizeof(struct lib_ring));
#endif
}

static int create_err; /* the last ring creation's failure, or 0 */

struct lib_ring *lib_ring_create(void)
{
	struct lib_ring *r = ring_alloc();
	uint64_t size;
	int err;

	if (!r)
		return NULL;
	pthread_mutex_lock(&lib.lock);
	size = ring_size();
	pthread_mutex_unlock(&lib.lock);
	r->map_size = RINGLOG_RING_HEADER_SIZE + size;
	r->tid = lib_tid();
	/* populate: fault the whole ring in now, on the thread's first event
	 * (which creates the ring anyway), instead of one page at a time
	 * during its first lap: a page fault can sleep, and an emit must not.
	 * The price is that a thread's ring is resident from its first event,
	 * as LTTng's buffers are. */
	err = lib_shm_create("ringlog-ring", r->map_size, true, &r->obj, &r->mem);
	if (err < 0) {
		/* Once per cause until a ring is made again, not once an
		 * event: each event of a thread without a ring comes here. */
		if (__atomic_exchange_n(&create_err, err, __ATOMIC_RELAXED) != err)
			lib_diag("cannot create a %llu-byte ring: %s (said once until one can be "
				 "made; the events are counted in dropped_other)",
				 (unsigned long long)r->map_size, strerror(-err));
		free(r);
		return NULL;
	}
	__atomic_store_n(&create_err, 0, __ATOMIC_RELAXED);
	err = ringlog_prod_init(&r->prod, r->mem, size, lib_pid(), r->tid,
				lib_now_ns(CLOCK_REALTIME));
	if (err < 0) {
		lib_diag("cannot set up a ring: %s", strerror(-err));
		unmap(r); /* never published: no trigger can hold it */
		return NULL;
	}
	if (lib.tsc)
		r->prod.hdr->compat_flags |= RINGLOG_RING_CLOCK_TSC;
	r->prod.hdr->compat_flags |= RINGLOG_RING_MARKS_EXIT; /* lib.c at_exit() */

	pthread_mutex_lock(&lib.lock);
	r->handle = ++lib.next_handle;
	lib_bell_take_locked(r);
	r->next = lib.rings;
	lib.rings = r;
	/* ringlog_trigger() from a thread without a ring writes this one.
	 * seq_cst: the ring it replaces may be freed next (lib_ring_free()). */
	__atomic_store_n(&lib_trigger_hdr, r->prod.hdr, __ATOMIC_SEQ_CST);
	lib.stats.rings_created++;
	lib.stats.rings_live++;
	lib_ring_offer_locked(r);
	pthread_mutex_unlock(&lib.lock);
	lib_wake(); /* the metadata it may have added */
	return r;
}

void lib_trigger_retarget_locked(struct lib_ring *r, bool going)
{
	struct lib_ring *pick = NULL, *any = NULL;

	if (__atomic_load_n(&lib_trigger_hdr, __ATOMIC_RELAXED) != r->prod.hdr)
		return;
	/* newest first: the newest ring of a running thread, which the
	 * daemon reads for as long as the thread lives */
	for (struct lib_ring *x = lib.rings; x && !pick; x = x->next) {
		if (x == r)
			continue;
		if (!x->finished)
			pick = x;
		else if (!any)
			any = x;
	}
	if (!pick && going)
		pick = any;
	if (pick || going)
		__atomic_store_n(&lib_trigger_hdr, pick ? pick->prod.hdr : NULL, __ATOMIC_SEQ_CST);
}

/* Rings freed while a ringlog_trigger() of their parity was busy: once
 * that count is 0, none can hold one of them (the target had moved off
 * each before its epoch flipped; later calls load a later target). */
static void limbo_sweep_locked(void)
{
	for (struct lib_ring **pp = &lib.limbo; *pp;) {
		struct lib_ring *r = *pp;

		if (__atomic_load_n(&lib_trigger_busy[r->limbo_parity], __ATOMIC_SEQ_CST)) {
			pp = &r->next;
			continue;
		}
		*pp = r->next;
		unmap(r);
	}
}

/* The calls counted in parity p end: they are a few stores long, so a
 * short wait nearly always sees it; a call stopped midway (a preempted
 * thread, a handler that never returns) leaves the ring to the limbo. */
static bool trigger_drained(unsigned p)
{
	for (unsigned i = 0; i < 4096; i++)
		if (!__atomic_load_n(&lib_trigger_busy[p], __ATOMIC_SEQ_CST))
			return true;
	return false;
}

void lib_ring_free(struct lib_ring *r)
{
	unsigned old;

	lib_bell_put_locked(r);
	lib_trigger_retarget_locked(r, true);
	/* Pairs with ringlog_trigger() (trigger.c), all seq_cst: a call that
	 * loaded r's header counted itself before that load, which came
	 * before the store that moved the target off r, which comes before
	 * this flip; its count (in the old parity) is seen here until its
	 * release sub, after its last store. Calls from now count in the
	 * other parity and cannot hold r. */
	old = __atomic_fetch_add(&lib_trigger_epoch, 1, __ATOMIC_SEQ_CST) & 1u;
	if (!trigger_drained(old)) {
		r->limbo_parity = old;
		r->next = lib.limbo;
		lib.limbo = r;
		return;
	}
	unmap(r);
	limbo_sweep_locked();
}

/* A finished ring can go once nobody will read it again: everything is
 * consumed, or it never held anything, or the daemon refused it. And, when
 * the daemon we handed it to says RELEASED (proto/ctl.h), once it has
 * unmapped it too: our close is then the last reference, and the pages are
 * freed here, where they were allocated, not in its munmap() (~50 us of
 * its time for 512 KiB: bench-scale's threads that come and go). A daemon
 * that dies first drops the connection, and with it the wait; one that
 * refused the whole process drops the RING frames that follow, and will
 * say RELEASED for none of them. */
static bool collectable(struct lib_ring *r)
{
	uint64_t prod, cons;

	if (!r->finished)
		return false;
	if (r->refused)
		return true;
	prod = __atomic_load_n(&r->prod.hdr->prod_pos, __ATOMIC_RELAXED);
	/* Pairs with the release store of cons_pos in the daemon's drain. */
	cons = __atomic_load_n(&r->prod.hdr->cons_pos, __ATOMIC_ACQUIRE);
	if (cons != prod)
		return false;
	return r->released ||
	       !(r->sent && lib.connected && lib.daemon_released && !lib.refused_all);
}

/* Events in r that no daemon has stored yet: the records between the
 * consumer's position (moved only once they are written to a segment)
 * and ours. The daemon writes cons_pos: a walk bounded by the ring, on
 * lengths checked against it, whatever it says. */
uint64_t lib_ring_unstored(const struct lib_ring *r)
{
	const struct ringlog_ring_hdr *h = r->prod.hdr;
	uint64_t size = r->prod.mask + 1, n = 0;
	uint64_t prod = __atomic_load_n(&h->prod_pos, __ATOMIC_RELAXED);
	uint64_t pos = __atomic_load_n(&h->cons_pos, __ATOMIC_ACQUIRE);

	if (prod - pos > size)
		pos = prod - size; /* a confused daemon: count what can be there */
	while (pos < prod) {
		struct ringlog_rec_hdr rh;

		memcpy(&rh, r->prod.data + (pos & r->prod.mask), sizeof(rh));
		if (ringlog_rec_total(rh.len) > prod - pos)
			break;
		if (rh.type >= RINGLOG_REC_USER_MIN && rh.type <= RINGLOG_REC_USER_MAX)
			n++;
		pos += ringlog_rec_total(rh.len);
	}
	return n;
}

/* Frees finished rings the daemon has emptied. */
void lib_rings_gc_locked(void)
{
	struct lib_ring **pp = &lib.rings;

	limbo_sweep_locked();
	while (*pp) {
		struct lib_ring *r = *pp;

		if (collectable(r)) {
			*pp = r->next;
			lib_ring_free(r);
			lib.stats.rings_freed++;
			lib.stats.rings_live--;
		} else {
			pp = &r->next;
		}
	}
}
