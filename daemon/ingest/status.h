/* daemon/ingest/status.h - the STATUS reply (status.c), from the store's
 * index and the counters: no disk scan. */
#ifndef RINGLOG_DAEMON_STATUS_H
#define RINGLOG_DAEMON_STATUS_H

#include <stdbool.h>

struct client;

/* detail: the per-program rows, for readers. 0 or -errno (-ENOMEM). */
int status_reply(struct client *c, bool detail);

#endif /* RINGLOG_DAEMON_STATUS_H */
