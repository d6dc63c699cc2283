/* daemon/daemon.h - ringlogd as a whole: the state one loop thread owns,
 * and its life (lifecycle.c). main.c only parses the options.
 *
 * An event goes one way (daemon/README.md):
 *   ingest/  the control channel (ctl.c over transport.h), writers and
 *            their rings (registry.c), the drain (drain.c): validated
 *            records out
 *   store/   chunks and segment files (segment.c), the index and the
 *            budget (retention.c), the write backends (io-ops.h): bytes on
 *            disk, published to the sinks
 *   sink/    what consumes what the store publishes (sink.h): the live
 *            tail, the forwarders to the OS tracer, the flight recorder
 *   unix/, win/  the system under them
 * lifecycle.c wires them: the store knows its sinks only as a list.
 * Each part's header says what it offers and what its returns mean.
 */
#ifndef RINGLOG_DAEMON_H
#define RINGLOG_DAEMON_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "config.h"
#include "segment.h"

#include "access.h"
#include "clock.h"
#include "sink/sink.h"
#include "store/store.h"
#include "ingest/overload.h"

struct client;
struct provider;
struct tail;
struct fwd;
struct ctl_listener;
struct io;
struct drain_item;

struct daemon {
	uv_loop_t *loop;
	struct ringlog_config cfg;
	char config_path[RINGLOG_CONFIG_PATH_MAX];
	bool have_config_path;

	uv_timer_t drain_timer, flush_timer, watchdog_timer, stop_timer;
	/* the control channel: the transport's own (unix/transport.c,
	 * win/transport.c). Producers wake a sleeping daemon through its wake
	 * object (handed to each client with WELCOME) when a ring passes its
	 * high-water mark. */
	struct ctl_listener *lis;
	/* A stop asked from another thread (the Windows service control
	 * manager's): daemon_stop_async(). */
	uv_async_t stop_async;
	int stop_asked, loop_up;
	uint64_t drain_wait_ms; /* the drain timer's last wait (drain.c) */
	bool drain_woken;       /* a producer woke us since the last pass */
	bool drain_visit_all;   /* this pass skips no idle ring */
	bool drain_seal;        /* a ring finished in this pass: seal at its end */
	bool drain_release_left; /* rings a pass left to release (drain.c) */
	bool released_pending;  /* a client has RELEASED to be sent (registry.c) */
	struct drain_item *drain_list; /* a pass's rings, gathered before the
	                                * first is visited (drain.c) */
	size_t drain_cap;
	uint64_t wakeups;    /* times a producer woke us */
	uint64_t drain_passes, drain_visits; /* of rings, by the drain */
	uint64_t bells;      /* rings a bell woke (ingest/bells.c) */
	uint64_t bell_sweep_test_ms; /* RINGLOGD_TEST_BELL_SWEEP_MS (tests: a
	                              * sweep that never comes in a test's time
	                              * shows the bells alone find events) */
	uv_signal_t sig_term, sig_int, sig_hup;
	bool stopping;

	struct client *clients;
	uint32_t nclients;
	uint64_t client_seq;
	uint64_t rx_held;    /* bytes of unfinished frames, all connections */
	gid_t write_gid, read_gid; /* socket_group and read_group, resolved */
	bool have_write_gid, have_read_gid;
	void *write_sid, *read_sid; /* the same as SIDs (Windows: win/access.c) */
	bool socket_activated; /* the listening socket came from systemd */
	uv_timer_t accept_timer; /* accepting paused: out of file descriptors */
	uint32_t next_writer_id, next_stream_id;
	struct provider *providers;

	/* storage (store/store.h): its own object, opened by lifecycle.c on
	 * the write backend chosen there */
	struct store *st;
	struct io *io;
	const char *io_name;
	char io_note[160];   /* why the backend is what it is */

	struct d_clock clock; /* the calibration segments and tails are given */

	/* counters */
	uint64_t lost_ring, lost_corrupt, lost_reader; /* the store counts its own */
	uint64_t lost_no_ring; /* programs' events no ring could take (overload.c) */
	struct ovl_counts ovl;         /* ingest/overload.c */
	uint64_t rate_events, rate_bytes;     /* per second, smoothed */
	uint64_t rate_prev_events, rate_prev_bytes, rate_prev_ns;
	uint64_t stop_started_ns; /* when shutdown began (its 10 s bound) */
	uint64_t start_real_ns;

	struct op_rule *op_rules; /* run-time enablement, newest first (operate.c) */

	struct tail *tails;
	unsigned ntails;
	uint64_t tail_released; /* chunks the store published (tail.c) */
	unsigned nsyncs;     /* SYNC requests waiting, all clients */
	bool notify;         /* $NOTIFY_SOCKET is set */
	bool fdstore;        /* rings go to the service manager's fd store */

	/* the sinks, in the order they are told: lifecycle.c links them in
	 * sinks and hands the same list to the store (store_open()) */
	struct sink fwd_sink, tail_sink, sync_sink, flight_sink, ship_sink;
	struct sink_list sinks;
	struct flight *flight; /* the flight recorder (sink/flight.c), or NULL */

	/* forwarding to the OS tracer (forward.c) */
	struct fwd *fwd;     /* NULL: off or unavailable */
	char fwd_state[320]; /* "on", "off", "unavailable: why" */
	uint64_t fwd_forwarded, fwd_lost[3]; /* kept while fwd is NULL */
};

/* lifecycle.c: d->cfg is set; start everything the loop runs (0, or -1
 * when something could not start: logged), and after the loop ends,
 * close it all (d itself is the caller's). */
int daemon_start(struct daemon *d);
void daemon_finish(struct daemon *d);
void d_status_notify(struct daemon *d);

/* Stop as SIGTERM does (lifecycle.c); from the loop thread. */
void daemon_stop(struct daemon *d, const char *why);
/* The same, from any other thread. */
void daemon_stop_async(struct daemon *d);

#endif /* RINGLOG_DAEMON_H */
