/* client/bell.c - the process's bell page (proto/bell.h): one slot per
 * ring, rung by the ring's thread on its first event after a silence, so
 * that the daemon need not poll silent rings.
 *
 * The page is optional: without it (no memory, a daemon that does not
 * take it, more than RINGLOG_BELL_SLOTS rings) a ring has no slot and the
 * daemon polls it as before. Slots are taken and given back under
 * lib.lock; a slot goes back only when its ring is freed, after its thread
 * ended, so each slot has one writer at a time.
 */
#define _GNU_SOURCE
#include "lib.h"

#include <string.h>

int lib_bell_create(void)
{
	void *m;
	int err = lib_shm_create("ringlog-bell", RINGLOG_BELL_SIZE, false, &lib.bell_obj, &m);

	if (err < 0)
		return err;
	lib.bell = m;
	memset(lib.bell_used, 0, sizeof(lib.bell_used));
	return 0;
}

#ifndef _WIN32
/* The child of fork() shares the parent's page (MAP_SHARED): it drops it
 * without writing it, and lib_start() makes its own. */
void lib_bell_forget_after_fork(void)
{
	if (!lib.bell)
		return;
	lib_shm_destroy(lib.bell_obj, lib.bell, RINGLOG_BELL_SIZE);
	lib.bell = NULL;
	lib.bell_obj = LIB_OBJ_NONE;
	lib.bell_sent = false;
}
#endif

void lib_bell_take_locked(struct lib_ring *r)
{
	if (!lib.bell)
		return;
	for (uint32_t w = 0; w < RINGLOG_BELL_SLOTS / 32; w++) {
		uint32_t free_bits = ~lib.bell_used[w];

		if (!free_bits)
			continue;
		uint32_t b = (uint32_t)__builtin_ctz(free_bits);

		lib.bell_used[w] |= 1u << b;
		r->bell_slot = w * 32 + b + 1;
		r->prod.bell = &lib.bell->slot[w * 32 + b];
		return;
	}
}

void lib_bell_put_locked(struct lib_ring *r)
{
	uint32_t s = r->bell_slot - 1;

	if (!r->bell_slot || !lib.bell || r->prod.bell != &lib.bell->slot[s])
		return; /* none, or a page forgotten since (fork) */
	lib.bell_used[s / 32] &= ~(1u << s % 32);
	r->bell_slot = 0;
	r->prod.bell = NULL;
}
