/* tests/test-trigger.c - ringlog_trigger() from a thread without a ring of
 * its own, against the library's internals (client/lib.h, linked
 * statically): it writes the target ring (the newest ring of a running
 * thread), and a ring freed while such a call may still be writing it
 * stays mapped until the call is done, so the call never writes freed
 * memory. No daemon: rings are made and freed here as the library's
 * threads would. */
#define _GNU_SOURCE
#include "lib.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static void small_rings(void)
{
	lib.ring_size = RINGLOG_RING_MIN_DATA; /* one page: quick to make */
}

static bool mapped(const void *p)
{
	unsigned char v;
	long page = sysconf(_SC_PAGESIZE);

	/* ENOMEM: no mapping there */
	return mincore((void *)((uintptr_t)p & ~(uintptr_t)(page - 1)), 1, &v) == 0;
}

/* Out of lib.rings and freed, as the library's collector does. */
static void free_ring(struct lib_ring *r)
{
	pthread_mutex_lock(&lib.lock);
	for (struct lib_ring **pp = &lib.rings; *pp; pp = &(*pp)->next)
		if (*pp == r) {
			*pp = r->next;
			break;
		}
	lib_ring_free(r);
	pthread_mutex_unlock(&lib.lock);
}

Test(trigger, goes_to_the_newest_ring_of_a_running_thread)
{
	struct lib_ring *a, *b;

	small_rings();
	cr_assert_eq(ringlog_trigger("none yet"), -ENOTCONN, "no ring: the daemon cannot see it");
	cr_assert(a = lib_ring_create());
	cr_assert(b = lib_ring_create());
	cr_assert_eq(lib_trigger_hdr, b->prod.hdr, "the newest ring is the target");
	/* b's thread ends: the daemon lets b go once drained, a stays read */
	pthread_mutex_lock(&lib.lock);
	b->finished = true;
	lib_trigger_retarget_locked(b, false);
	pthread_mutex_unlock(&lib.lock);
	cr_assert_eq(lib_trigger_hdr, a->prod.hdr, "a finished ring is no target while a running one is");
	cr_assert_eq(ringlog_trigger("why"), 0);
	cr_assert_eq(a->prod.hdr->trigger_count, 1);
	cr_assert_str_eq(a->prod.hdr->trigger_reason, "why");
	cr_assert_eq(b->prod.hdr->trigger_count, 0);
	free_ring(a);
	cr_assert_eq(lib_trigger_hdr, b->prod.hdr, "the last ring, finished, is better than none");
	free_ring(b);
	cr_assert_null(lib_trigger_hdr);
	cr_assert_eq(ringlog_trigger("gone"), -ENOTCONN);
}

Test(trigger, a_ring_freed_during_a_trigger_stays_mapped_until_the_trigger_is_done)
{
	struct lib_ring *a, *b;
	struct ringlog_ring_hdr *held;
	unsigned e;

	small_rings();
	cr_assert(a = lib_ring_create());
	cr_assert(b = lib_ring_create());
	/* A ringlog_trigger() on another thread between its load of the
	 * target (b) and its last store, as trigger.c counts it: */
	e = __atomic_load_n(&lib_trigger_epoch, __ATOMIC_SEQ_CST) & 1u;
	__atomic_fetch_add(&lib_trigger_busy[e], 1, __ATOMIC_SEQ_CST);
	held = __atomic_load_n(&lib_trigger_hdr, __ATOMIC_SEQ_CST);
	cr_assert_eq(held, b->prod.hdr);
	free_ring(b);
	cr_assert_eq(lib_trigger_hdr, a->prod.hdr, "the target moved off the freed ring");
	cr_assert(lib.limbo, "freed while a trigger was busy: kept");
	cr_assert(mapped(held), "the busy trigger's ring was unmapped under it");
	held->trigger_count++; /* its late store lands in mapped memory */
	/* a call begun after the free counts in the other parity: it does
	 * not keep b */
	__atomic_fetch_add(&lib_trigger_busy[e ^ 1u], 1, __ATOMIC_SEQ_CST);
	__atomic_fetch_sub(&lib_trigger_busy[e], 1, __ATOMIC_RELEASE);
	/* The next free or collection unmaps it. */
	pthread_mutex_lock(&lib.lock);
	lib_rings_gc_locked();
	pthread_mutex_unlock(&lib.lock);
	cr_assert_null(lib.limbo);
	cr_assert_not(mapped(held), "no trigger that may hold it is busy: the ring should be gone");
	__atomic_fetch_sub(&lib_trigger_busy[e ^ 1u], 1, __ATOMIC_RELEASE);
	free_ring(a);
}

/* Real threads: rings made and freed as fast as the machine goes while
 * threads without a ring trigger; a store into an unmapped ring would
 * crash this test (SIGSEGV), under ASan too. */
static bool stop_flag;

static void *trigger_loop(void *arg)
{
	uint64_t *n = arg;

	while (!__atomic_load_n(&stop_flag, __ATOMIC_RELAXED))
		if (ringlog_trigger("stress") == 0)
			(*n)++;
	return NULL;
}

Test(trigger, rings_freed_while_threads_trigger_never_take_a_store)
{
	pthread_t t[2];
	uint64_t hits[2] = { 0 };

	small_rings();
	for (int i = 0; i < 2; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, trigger_loop, &hits[i]), 0);
	for (int i = 0; i < 40000; i++) {
		struct lib_ring *r = lib_ring_create();

		cr_assert(r);
		free_ring(r);
	}
	__atomic_store_n(&stop_flag, true, __ATOMIC_RELAXED);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	pthread_mutex_lock(&lib.lock);
	lib_rings_gc_locked();
	pthread_mutex_unlock(&lib.lock);
	cr_assert_null(lib.limbo, "every ring kept for a trigger was unmapped once none was busy");
	cr_assert_null(lib_trigger_hdr);
	cr_log_info("triggers that found a ring: %llu", (unsigned long long)(hits[0] + hits[1]));
}
