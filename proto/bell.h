/* proto/bell.h - the bell page: how a writer tells ringlogd that a ring
 * that was silent has data again, so that the daemon need not look at
 * silent rings at all.
 *
 * Why: the daemon polls rings (drain.c). With 1,000 writer threads that
 * emit in bursts, most visits found nothing, and each cost a miss on the
 * ring's producer line and on the daemon's own state for it: 2.5-2.8x the
 * CPU per event of one writer (bench-scale). A doorbell the producer rings
 * on the first event after a silence lets a silent ring sleep, and costs
 * the producer one compare on any other event.
 *
 * One page per writer process: shared memory the process creates (a memfd
 * sealed against shrinking and growing; a section on Windows) and hands
 * over in a BELL frame (ctl.h). The daemon maps it read-only.
 *
 *   0        4        8                                   4092     4096
 *   +--------+--------+-------- ... ----------------------+--------+
 *   | slot 0 | slot 1 | slot 2 ...                         |slot1023|
 *   +--------+--------+-------- ... ----------------------+--------+
 *   u32 counters, little-endian, 16 to a 64-byte line: the daemon reads
 *   one line for the rings of most processes
 *
 * A ring gets a slot when its process creates it; the RING frame names it
 * (bell = slot + 1; 0: the ring has none, and the daemon visits it on its
 * timer as before). The ring's thread is the slot's only writer: on an
 * event whose timestamp is RINGLOG_BELL_GAP or more after the ring's
 * previous event, it stores a new value there (the low half of that
 * timestamp: a store alone, no load of a line the daemon reads), before
 * the record is published. The daemon keeps the last value it saw; any
 * other value
 * means "look at this ring now". The value carries nothing else, so a
 * hostile writer can only make the daemon look at its own rings.
 *
 * Why the daemon may stop visiting a ring: once it has seen no new data in
 * a ring for a quiet time well above the gap (pace.h: BELL_QUIET_MS,
 * counted in real time from the end of the visit that found the last
 * data, drain.c), the ring's next event is more than the gap after the one
 * before it, so it rings. The one exception is an event reserved before
 * that moment and published after it (a thread preempted mid-record for
 * milliseconds): the daemon's sweep finds it (pace.h: a sleeping ring
 * that nothing visited for 100 ms with a tail attached, 500 ms without,
 * is visited). A thread that ends
 * rings too, once its ring is marked finished, so that the daemon lets
 * the ring go without waiting for a sweep.
 *
 * The gap is counted in the ring's clock (event.h: TSC ticks or ns):
 * 2^20 is ~0.4 ms of a 2.6 GHz TSC, 1.05 ms of ns, and under 1.1 ms of any
 * TSC of 1 GHz or more. libringlog's inline path tests it (ringlog.h:
 * RINGLOG__BELL_GAP, checked equal in client/emit.c).
 */
#ifndef RINGLOG_PROTO_BELL_H
#define RINGLOG_PROTO_BELL_H

#include <assert.h>
#include <stdint.h>

#define RINGLOG_BELL_SIZE  4096u
#define RINGLOG_BELL_SLOTS (RINGLOG_BELL_SIZE / sizeof(uint32_t))
#define RINGLOG_BELL_GAP   (1ull << 20) /* ring clock units */

struct ringlog_bell_page {
	uint32_t slot[RINGLOG_BELL_SLOTS];
};

static_assert(sizeof(struct ringlog_bell_page) == RINGLOG_BELL_SIZE, "bell page size");
static_assert(RINGLOG_BELL_SLOTS == 1024, "bell slots");

#endif /* RINGLOG_PROTO_BELL_H */
