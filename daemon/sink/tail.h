/* daemon/sink/tail.h - live subscribers, `ringlog tail` (tail.c): a sink
 * of the store's records, losses and sealed chunks (tail_sink_ops). */
#ifndef RINGLOG_DAEMON_TAIL_H
#define RINGLOG_DAEMON_TAIL_H

#include <stdint.h>

struct daemon;
struct client;
struct provider;
struct tail;

/* TAIL from a tool, once the rings are drained and the open chunk sealed
 * (the backlog): 0 (a bad request gets an ERROR frame) or -ENOMEM. */
int tail_start(struct client *c, const uint8_t *json, uint32_t len);
void tail_free(struct tail *t);
/* Events dropped for slow readers: told and not yet told. */
uint64_t tail_lost_total(const struct daemon *d);
/* Periodic: answer the tails whose backlog write takes too long. */
void tail_tick(struct daemon *d);
extern const struct sink_ops tail_sink_ops;

#endif /* RINGLOG_DAEMON_TAIL_H */
