/* daemon/ingest/sync.h - SYNC, the answer behind ringlog_flush(): given
 * once the client's events are written (sync.c), told by the store's
 * sealed-chunk notifications (a sink, sink/sink.h). */
#ifndef RINGLOG_DAEMON_SYNC_H
#define RINGLOG_DAEMON_SYNC_H

#include <stdint.h>

struct daemon;
struct client;

/* 0, -EPROTO (malformed) or -ENOMEM. */
int sync_request(struct client *c, const uint8_t *p, uint32_t len);
void sync_tick(struct daemon *d);
void sync_free(struct client *c);
extern const struct sink_ops sync_sink_ops;

#endif /* RINGLOG_DAEMON_SYNC_H */
