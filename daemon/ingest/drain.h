/* daemon/ingest/drain.h - records from every ring into the store
 * (drain.c), on a timer or when a producer wakes us. */
#ifndef RINGLOG_DAEMON_DRAIN_H
#define RINGLOG_DAEMON_DRAIN_H

#include <stdint.h>

struct daemon;

/* One pass over every ring: the bytes consumed (0: nothing moved). */
uint64_t drain_all(struct daemon *d);
/* Drain now (and on the timer after). */
void drain_start(struct daemon *d);
/* A producer passed its high-water mark and woke us (n times). */
void drain_woken(struct daemon *d, uint64_t n);
/* At shutdown: what the passes kept. */
void drain_free(struct daemon *d);

#endif /* RINGLOG_DAEMON_DRAIN_H */
