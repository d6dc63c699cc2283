/* daemon/sink/shipping.h - the sink that ships every sealed chunk to a NATS
 * JetStream stream (ship.c with libnats; ship-none.c in a build without,
 * which says shipping is unavailable). Message format: proto/ship.h.
 *
 * The loop thread only notes what the store sealed (the chunk op: which
 * segment and chunk are on disk now) and wakes the shipping thread; that
 * thread reads chunks back from the segment files, publishes them
 * asynchronously with a bounded window of unacknowledged messages, and
 * keeps the acknowledged position in <storage_dir>/ship.state (written
 * to a temporary file, then renamed). Nothing here blocks the loop.
 */
#ifndef RINGLOG_DAEMON_SHIPPING_H
#define RINGLOG_DAEMON_SHIPPING_H

#include <stdbool.h>
#include <jansson.h>

#include "sink/sink.h"

struct daemon;
struct segfile;
struct ringlog_config;

extern const struct sink_ops ship_sink_ops;

/* Before store_open(): read the acknowledged position, so that segments
 * the start-up trim deletes are counted when they were not shipped. */
void ship_init(struct daemon *d);
/* After store_open(): start the shipping thread when ship.servers is set.
 * 0, or -errno (logged; the daemon stores locally all the same). */
int ship_start(struct daemon *d);
/* SIGHUP, before next replaces d->cfg: the new ship section takes effect
 * without a restart and without loss or duplication. live, interval and
 * max_backlog apply at once; any other change (servers, stream, subject,
 * host, credentials or the files they name, max_pending, stream creation)
 * makes the thread wait for the messages in flight (5 s at most), close
 * the connection and go on with the new settings from the acknowledged
 * position (ship.state); an emptied ship.servers stops shipping, a set one
 * starts it. A section libnats refuses (a TLS file that is no certificate,
 * an unreadable password_file) is logged and replaced in next by the
 * running one. */
void ship_reload(struct daemon *d, struct ringlog_config *next);
/* Periodic, on the loop (lifecycle.c): log what the thread has to say;
 * true when ship.live wants the open chunk sealed now. */
bool ship_tick(struct daemon *d);
/* The store is about to delete a segment (st->deleting): what it holds and
 * was not acknowledged is counted "not shipped". */
void ship_seg_deleting(struct daemon *d, const struct segfile *s);
/* st->keep: a segment not yet acknowledged stays when only age or a vacuum
 * would delete it, while the un-shipped bytes are within ship.max_backlog
 * (the budget itself deletes it all the same, counted above). */
bool ship_seg_keep(struct daemon *d, const struct segfile *s);
/* STATUS: the "ship" object (NULL: shipping off). */
json_t *ship_status(struct daemon *d);
/* Stop the thread, waiting at most a moment for outstanding acks. */
void ship_stop(struct daemon *d);

#endif /* RINGLOG_DAEMON_SHIPPING_H */
