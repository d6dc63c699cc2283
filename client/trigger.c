/* client/trigger.c - ringlog_trigger(): a flight recorder snapshot asked
 * from the program, safe in a signal handler (proto/ring.h: trigger_count,
 * trigger_reason). Plain stores and one atomic add into memory the daemon
 * maps: no lock (the handler may have interrupted its holder), no
 * allocation, no system call. */
#include "lib.h"

#include <errno.h>

struct ringlog_ring_hdr *lib_trigger_hdr;

#ifndef RINGLOG__INLINE_PATH
/* emit.c's; ringlog.h declares it only where the inline path uses it */
extern __thread struct ringlog__thread ringlog__thread_v1;
#endif

int ringlog_trigger(const char *reason)
{
	struct ringlog__hot *h = ringlog__thread_v1.hot;
	struct ringlog_ring_hdr *hdr;
	size_t i = 0;

	/* The thread's own ring: nobody frees it under us. Else the newest
	 * ring of the process (ring.c keeps the pointer). */
	hdr = h ? ((struct ringlog_producer *)(void *)h)->hdr :
		  __atomic_load_n(&lib_trigger_hdr, __ATOMIC_ACQUIRE);
	if (!hdr)
		return -ENOTCONN;
	if (reason)
		for (; i < RINGLOG_RING_TRIGGER_REASON - 1 && reason[i]; i++)
			hdr->trigger_reason[i] = reason[i];
	for (; i < RINGLOG_RING_TRIGGER_REASON; i++)
		hdr->trigger_reason[i] = '\0';
	/* Pairs with the acquire load in the daemon's flight_scan(): the
	 * reason is written before the count moves. */
	__atomic_fetch_add(&hdr->trigger_count, 1, __ATOMIC_RELEASE);
	return 0;
}
