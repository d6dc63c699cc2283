/* daemon/sink/sync.h - SYNC, the answer behind ringlog_flush(): given
 * once the client's events are written (sync.c), told by the store's
 * sealed-chunk notifications (a sink, sink/sink.h), which takes SYNC
 * requests and closed peers through the same ops table. */
#ifndef RINGLOG_DAEMON_SYNC_H
#define RINGLOG_DAEMON_SYNC_H

#include <stdbool.h>
#include <stdint.h>

struct daemon;

/* Requests wait: what a drain could not take at the request (every chunk
 * buffer busy) is to be taken, and the chunk holding it written. */
bool sync_waiting(const struct daemon *d);
void sync_tick(struct daemon *d);
extern const struct sink_ops sync_sink_ops;

#endif /* RINGLOG_DAEMON_SYNC_H */
