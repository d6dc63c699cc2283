/* client/trigger.c - ringlog_trigger(): a flight recorder snapshot asked
 * from the program, safe in a signal handler (proto/ring.h: trigger_count,
 * trigger_reason). Plain stores and atomics into memory the daemon maps:
 * no lock (the handler may have interrupted its holder), no allocation,
 * no system call. */
#include "lib.h"

#include <errno.h>

struct ringlog_ring_hdr *lib_trigger_hdr;
unsigned lib_trigger_epoch;
unsigned lib_trigger_busy[2];

#ifndef RINGLOG__INLINE_PATH
/* emit.c's; ringlog.h declares it only where the inline path uses it */
extern __thread struct ringlog__thread ringlog__thread_v2;
#endif

static void put(struct ringlog_ring_hdr *hdr, const char *reason)
{
	size_t i = 0;

	if (reason)
		for (; i < RINGLOG_RING_TRIGGER_REASON - 1 && reason[i]; i++)
			hdr->trigger_reason[i] = reason[i];
	for (; i < RINGLOG_RING_TRIGGER_REASON; i++)
		hdr->trigger_reason[i] = '\0';
	/* Pairs with the acquire load in the daemon's scan_ring()
	 * (daemon/sink/flight-trigger.c): the reason is written before the
	 * count moves. */
	__atomic_fetch_add(&hdr->trigger_count, 1, __ATOMIC_RELEASE);
}

int ringlog_trigger(const char *reason)
{
	struct ringlog__hot *h = ringlog__thread_v2.hot;
	struct ringlog_ring_hdr *hdr;
	unsigned e;

	/* The thread's own ring: freed only once the thread is done with it
	 * (finished, and hot cleared first: emit.c). */
	if (h) {
		put(((struct ringlog_producer *)(void *)h)->hdr, reason);
		return 0;
	}
	/* Else the process's target ring (ring.c), which another thread may
	 * be freeing now: counted busy from before the load to after the last
	 * store, so that lib_ring_free() keeps it mapped meanwhile. seq_cst
	 * pairs with the target's store, the epoch's flip and the busy load
	 * there: a call that counts itself in the old parity after the free
	 * looked loads the new target. */
	e = __atomic_load_n(&lib_trigger_epoch, __ATOMIC_SEQ_CST) & 1u;
	__atomic_fetch_add(&lib_trigger_busy[e], 1, __ATOMIC_SEQ_CST);
	hdr = __atomic_load_n(&lib_trigger_hdr, __ATOMIC_SEQ_CST);
	if (hdr)
		put(hdr, reason);
	__atomic_fetch_sub(&lib_trigger_busy[e], 1, __ATOMIC_RELEASE);
	return hdr ? 0 : -ENOTCONN;
}
