/* daemon/sink/tail.h - live subscribers, `ringlog tail` (tail.c): a sink
 * of the store's records, losses and sealed chunks (tail_sink_ops), which
 * takes TAIL requests and closed peers through the same ops table. */
#ifndef RINGLOG_DAEMON_TAIL_H
#define RINGLOG_DAEMON_TAIL_H

#include <stdbool.h>
#include <stdint.h>

struct daemon;
struct client;
struct provider;
struct tail;

/* Events dropped for slow readers: told and not yet told. */
uint64_t tail_lost_total(const struct daemon *d);
/* Periodic: answer the tails whose backlog write takes too long. */
void tail_tick(struct daemon *d);
/* Shutdown: what is batched goes out; whether a tail still has bytes
 * queued (the connection's close would drop them). */
bool tail_sending(struct daemon *d);
extern const struct sink_ops tail_sink_ops;

#endif /* RINGLOG_DAEMON_TAIL_H */
