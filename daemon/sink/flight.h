/* daemon/sink/flight.h - the flight recorder (flight.c): every event the
 * store publishes, including the verbose ones enabled only for it
 * (providers' flight_level, never written), kept in memory allocated once
 * as encoded segment chunks, the oldest overwritten and counted; on a
 * trigger, the window [t - pre, t + post] written out as a snapshot segment
 * (snapshot.c).
 *
 * Triggers: the SNAPSHOT control frame (`ringlog snapshot`, a sink request
 * handed over by ingest/ctl.c, sink/sink.h), an event at or above
 * flight.trigger_level, ringlog_trigger() in a program (a count in its
 * ring, proto/ring.h) and a writer whose connection closes without an
 * orderly exit (the closed op). Triggers while one is pending coalesce into one snapshot
 * listing every reason; flight.max_snapshots refuses the rest, counted. */
#ifndef RINGLOG_DAEMON_FLIGHT_H
#define RINGLOG_DAEMON_FLIGHT_H

#include <stdint.h>
#include <jansson.h>

struct daemon;
struct client;

extern const struct sink_ops flight_sink_ops;

/* Allocate the buffer d->cfg.flight asks for (none when size is 0), at
 * start and on reload (a new size starts an empty buffer): 0, or -ENOMEM
 * (logged; the flight recorder is then off). */
int flight_start(struct daemon *d);
void flight_stop(struct daemon *d);
/* The "flight" member of STATUS. */
json_t *flight_status(struct daemon *d);

#endif /* RINGLOG_DAEMON_FLIGHT_H */
