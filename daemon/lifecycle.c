/* daemon/lifecycle.c - bring the daemon up on its configuration (identity,
 * clock, I/O backend, storage, access, forwarding, the control socket,
 * timers, signals, readiness), the loop's periodic work, SIGHUP reload,
 * the draining shutdown, and tearing everything down. main.c only parses
 * options; the fuzz targets start the same daemon in-process. */
#define _GNU_SOURCE
#include "daemon.h"
#include "log.h"
#include "clock.h"
#include "notify.h"
#include "ingest/client.h"
#include "ingest/registry.h"
#include "ingest/transport.h"
#include "ingest/drain.h"
#include "sink/sync.h"
#include "ingest/operate.h"
#include "ingest/fdstore.h"
#include "sink/tail.h"
#include "sink/flight.h"
#include "sink/forward/forward.h"
#include "sink/shipping.h"
#include "store/io-ops.h"
#include "store/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef _WIN32
/* One backend on Windows: IOCP. libuv's pool cannot write the overlapped
 * handles segments are opened with, and io_uring is Linux's. */
static void open_backend(struct daemon *d)
{
	d->io = io_iocp_ops.open(d->loop);
	d->io_name = io_iocp_ops.name;
	snprintf(d->io_note, sizeof(d->io_note), "%s", d->cfg.io_backend == RINGLOG_IO_POOL ?
		 "io_backend pool: Windows writes through IOCP" : "auto");
}
#else
static void open_backend(struct daemon *d)
{
	enum ringlog_io_backend want = d->cfg.io_backend;

	if (want != RINGLOG_IO_POOL) {
		d->io = io_uring_ops.open(d->loop);
		if (d->io) {
			d->io_name = io_uring_ops.name;
			snprintf(d->io_note, sizeof(d->io_note), "%s",
				 want == RINGLOG_IO_URING ? "forced by configuration" : "auto");
			return;
		}
		snprintf(d->io_note, sizeof(d->io_note), "io_uring refused (%s): fell back to the thread pool",
			 strerror(errno));
		d_log(LOG_INFO, "%s", d->io_note);
	} else {
		snprintf(d->io_note, sizeof(d->io_note), "forced by configuration");
	}
	d->io = io_pool_ops.open(d->loop);
	d->io_name = io_pool_ops.name;
}
#endif

void d_status_notify(struct daemon *d)
{
	char msg[256];

	if (!d->notify)
		return;
	snprintf(msg, sizeof(msg), "STATUS=%u clients, %llu events stored, %llu MiB of %llu MiB used",
		 d->nclients, (unsigned long long)d->st->stored,
		 (unsigned long long)(d->st->used_bytes >> 20), (unsigned long long)(d->cfg.max_disk >> 20));
	sd_notify_send(msg);
}

static void on_flush_timer(uv_timer_t *t)
{
	struct daemon *d = t->data;
	uint64_t now = d_now(CLOCK_MONOTONIC);

	store_tick(d->st); /* and max_retention */
	tail_tick(d);
	if (sync_waiting(d)) {
		drain_all(d);
		store_seal(d->st);
		ovl_sealed(d); /* a report kept for room and stored since */
	}
	sync_tick(d);
	fwd_tick(d);
	if (ship_tick(d) && !d->stopping) {
		drain_all(d);
		store_seal(d->st); /* ship.live: the open chunk, every ship.interval */
	}
	if (now - d->rate_prev_ns >= 1000000000u) {
		double s = (double)(now - d->rate_prev_ns) / 1e9;

		/* Smoothed over ~5 s: a user reading status wants the trend. */
		d->rate_events = (uint64_t)(0.8 * (double)d->rate_events +
					    0.2 * (double)(d->st->stored - d->rate_prev_events) / s);
		d->rate_bytes = (uint64_t)(0.8 * (double)d->rate_bytes +
					   0.2 * (double)(d->st->stored_bytes - d->rate_prev_bytes) / s);
		d->rate_prev_events = d->st->stored;
		d->rate_prev_bytes = d->st->stored_bytes;
		d->rate_prev_ns = now;
		d_status_notify(d);
	}
}

static void on_watchdog(uv_timer_t *t)
{
	(void)t;
	sd_notify_send("WATCHDOG=1");
}

static void finish_stop(struct daemon *d)
{
	uv_timer_stop(&d->drain_timer);
	uv_timer_stop(&d->flush_timer);
	uv_timer_stop(&d->watchdog_timer);
	uv_timer_stop(&d->stop_timer);
	uv_signal_stop(&d->sig_term);
	uv_signal_stop(&d->sig_int);
	uv_signal_stop(&d->sig_hup);
	store_stop(d->st);
	uv_stop(d->loop);
}

/* Shutdown: stop accepting, drain every ring until empty, write the last
 * chunk, wait for the writes, seal the segment. Bounded by stop_timer. */
static void on_stop_step(uv_timer_t *t)
{
	struct daemon *d = t->data;
	uint64_t moved = drain_all(d);

	if (!moved) {
		store_seal(d->st);
		store_sync_soon(d->st); /* closed segments: not a round away */
	}
	if (!moved && store_idle(d->st) && !ovl_pending(d)) {
		/* What the tails were sent reaches them before their
		 * connections close: a tail that follows the next run reads
		 * its segments only, so a queue dropped here was never shown
		 * (a review found). 2 s at most for a reader that stalls. */
		if (tail_sending(d) && d_now(CLOCK_MONOTONIC) - d->stop_started_ns < 2000000000ull) {
			uv_timer_start(t, on_stop_step, 1, 0);
			return;
		}
		finish_stop(d);
		return;
	}
	if (d_now(CLOCK_MONOTONIC) - d->stop_started_ns > 10000000000ull) {
		d_log(LOG_WARNING, "shutdown: gave up waiting for writes after 10 s");
		finish_stop(d);
		return;
	}
	uv_timer_start(t, on_stop_step, 1, 0);
}

void daemon_stop(struct daemon *d, const char *why)
{
	if (d->stopping)
		return;
	d->stopping = true;
	d_log(LOG_NOTICE, "%s: draining every ring and stopping", why);
	sd_notify_send("STOPPING=1");
	ctl_close_listen(d);
	d->stop_started_ns = d_now(CLOCK_MONOTONIC);
	d->stop_timer.data = d;
	uv_timer_start(&d->stop_timer, on_stop_step, 0, 0);
}

static void on_stop_signal(uv_signal_t *s, int sig)
{
	char why[32];

	snprintf(why, sizeof(why), "signal %d", sig);
	daemon_stop(s->data, why);
}

/* Another thread asked (the Windows service control manager). */
static void on_stop_async(uv_async_t *a)
{
	daemon_stop(a->data, "the service control manager");
}

/* From any thread: a stop asked before the loop is up is seen once it is
 * (daemon_start()); after, the loop is woken. */
void daemon_stop_async(struct daemon *d)
{
	__atomic_store_n(&d->stop_asked, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&d->loop_up, __ATOMIC_SEQ_CST))
		uv_async_send(&d->stop_async);
}

#ifndef _WIN32
static void on_hup(uv_signal_t *s, int sig)
{
	struct daemon *d = s->data;
	struct ringlog_config c;
	char err[4096];

	(void)sig;
	if (!d->have_config_path) {
		d_log(LOG_INFO, "SIGHUP: no --config file; nothing to reload");
		return;
	}
	ringlog_config_defaults(&c);
	if (ringlog_config_load_host(&c, d->config_path, err, sizeof(err)) < 0) {
		d_log(LOG_WARNING, "SIGHUP: keeping the running configuration: %s", err);
		return;
	}
	/* Paths are fixed for the life of the process. */
	memcpy(c.storage_dir, d->cfg.storage_dir, sizeof(c.storage_dir));
	memcpy(c.socket_path, d->cfg.socket_path, sizeof(c.socket_path));
	c.io_backend = d->cfg.io_backend;
	ship_reload(d, &c); /* may keep the running ship section in c */
	d->cfg = c;
	store_reload(d->st, &d->cfg);
	flight_start(d);
	access_resolve(d);
	fwd_apply(d);
	op_reset(d); /* `ringlog enable` rules last until a reload */
	reg_enable_recompute(d);
	d_log(LOG_NOTICE, "SIGHUP: configuration reloaded from %s", d->config_path);
}
#endif

/* A write completed: with no chunk open the drain may have stopped for
 * want of a buffer; while stopping, the sooner the rings empty the better. */
static void on_store_written(void *ctx, bool idle)
{
	struct daemon *d = ctx;

	if (idle || d->stopping)
		drain_start(d);
}

static int on_store_mkdir(void *ctx, const char *dir)
{
	(void)dir; /* the daemon's storage_dir, with its read_group */
	return access_mkdir_store(ctx);
}

/* Shipping, told of the store's deletions and asked what to keep (the
 * store knows no sink by name; these are its hooks, like written()). */
static void on_store_deleting(void *ctx, const struct segfile *s)
{
	ship_seg_deleting(ctx, s);
}

static bool on_store_keep(void *ctx, const struct segfile *s)
{
	return ship_seg_keep(ctx, s);
}

/* The one place that knows who consumes what: the store publishes to
 * this list and tells the drain to resume through on_store_written(),
 * never by name. A new consumer (export, a flight recorder, shipping) is
 * one more node. */
static void wire(struct daemon *d)
{
	d->fwd_sink = (struct sink){ .ops = &fwd_sink_ops, .ctx = d };
	d->tail_sink = (struct sink){ .ops = &tail_sink_ops, .ctx = d };
	d->sync_sink = (struct sink){ .ops = &sync_sink_ops, .ctx = d };
	d->ship_sink = (struct sink){ .ops = &ship_sink_ops, .ctx = d };
	/* what it raises is kept in memory only (flight_level) */
	d->flight_sink = (struct sink){ .ops = &flight_sink_ops, .ctx = d, .memory_only = true };
	d->sinks = (struct sink_list){ 0 };
	sink_link(&d->sinks, &d->fwd_sink);
	sink_link(&d->sinks, &d->tail_sink);
	sink_link(&d->sinks, &d->sync_sink);
	sink_link(&d->sinks, &d->ship_sink);
	sink_link(&d->sinks, &d->flight_sink);
}

static int open_store(struct daemon *d)
{
	struct store_params p = {
		.dir = d->cfg.storage_dir, .io = d->io, .io_name = d->io_name,
		.clock = &d->clock, .sinks = &d->sinks, .written = on_store_written,
		.mkdir = on_store_mkdir, .deleting = on_store_deleting,
		.keep = on_store_keep, .ctx = d,
	};

	d->st = store_open(&p, &d->cfg);
	return d->st ? 0 : -errno;
}

int daemon_start(struct daemon *d)
{
	int err;

	d->loop = uv_default_loop();
	d->notify = getenv("NOTIFY_SOCKET") != NULL;
	{
		const char *sweep = getenv("RINGLOGD_TEST_BELL_SWEEP_MS");

		if (sweep)
			d->bell_sweep_test_ms = strtoull(sweep, NULL, 10);
	}
	wire(d);
	fdstore_init(d);
	d->start_real_ns = d_now(CLOCK_REALTIME);
	clock_calibrate_start(&d->clock);
	open_backend(d);
	if (!d->io) {
		d_log(LOG_ERR, "no I/O backend could start (%s)", strerror(errno));
		return -1;
	}
	if (d->cfg.io_backend == RINGLOG_IO_URING && strcmp(d->io_name, "io_uring")) {
		d_log(LOG_ERR, "io_backend io_uring is required by the configuration but unavailable");
		return -1;
	}
	access_resolve(d); /* first: a storage_dir store_open() creates gets read_group */
	/* Timers first: rings adopted from the fd store (ctl_listen) start
	 * the drain. */
	uv_timer_init(d->loop, &d->drain_timer);
	uv_timer_init(d->loop, &d->flush_timer);
	uv_timer_init(d->loop, &d->watchdog_timer);
	uv_timer_init(d->loop, &d->stop_timer);
	uv_timer_init(d->loop, &d->accept_timer);
	ship_init(d); /* before open_store(): its trim counts what was not shipped */
	if (open_store(d) < 0)
		return -1;
	flight_start(d); /* off when it cannot allocate: logged */
	fwd_apply(d);
	ship_start(d); /* failures are logged: the daemon stores locally */
	/* Signals before the socket: a SIGTERM sent as soon as the socket
	 * appears drains and exits 0, rather than killing a daemon that had
	 * no handler yet. (Handlers run from the loop, once it runs.) */
	uv_signal_init(d->loop, &d->sig_term);
	uv_signal_init(d->loop, &d->sig_int);
	uv_signal_init(d->loop, &d->sig_hup);
	uv_async_init(d->loop, &d->stop_async, on_stop_async);
	d->stop_async.data = d;
	d->sig_term.data = d->sig_int.data = d->sig_hup.data = d;
#ifdef _WIN32
	/* libuv's console events: Ctrl-C is SIGINT, Ctrl-Break SIGBREAK, and
	 * the console closing, logoff or shutdown SIGHUP, which must stop us
	 * here (Windows gives a few seconds, then ends the process). There is
	 * no reload signal: restart the service to apply a changed file. */
	uv_signal_start(&d->sig_term, on_stop_signal, SIGBREAK);
	uv_signal_start(&d->sig_int, on_stop_signal, SIGINT);
	uv_signal_start(&d->sig_hup, on_stop_signal, SIGHUP);
#else
	uv_signal_start(&d->sig_term, on_stop_signal, SIGTERM);
	uv_signal_start(&d->sig_int, on_stop_signal, SIGINT);
	uv_signal_start(&d->sig_hup, on_hup, SIGHUP);
#endif
	if (ctl_listen(d) < 0)
		return -1;
	/* Without it producers cannot wake us: the drain timer still runs. */
	if ((err = ctl_wake_open(d)) < 0)
		d_log(LOG_WARNING, "wake object: %s; programs cannot wake ringlogd, which drains on "
		      "its timer only", strerror(-err));
	d->flush_timer.data = d;
	d->rate_prev_ns = d_now(CLOCK_MONOTONIC);
	uv_timer_start(&d->flush_timer, on_flush_timer, 50, d->cfg.flush_interval_ns / 10000000 ?
		       d->cfg.flush_interval_ns / 10000000 : 1);
	drain_start(d);
	{
		const char *wd = getenv("WATCHDOG_USEC");
		unsigned long long usec = wd ? strtoull(wd, NULL, 10) : 0;

		if (usec) {
			d->watchdog_timer.data = d;
			uv_timer_start(&d->watchdog_timer, on_watchdog, 0, usec / 2000 ? usec / 2000 : 1);
		}
	}
	d_log(LOG_NOTICE, "listening on %s, storing in %s (%s), max_disk %llu bytes", d->cfg.socket_path,
	      d->cfg.storage_dir, d->io_name, (unsigned long long)d->cfg.max_disk);
	sd_notify_send("READY=1\nSTATUS=collecting");
	__atomic_store_n(&d->loop_up, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&d->stop_asked, __ATOMIC_SEQ_CST))
		daemon_stop(d, "the service control manager");
	return 0;
}

void daemon_finish(struct daemon *d)
{
	d->stopping = true; /* nothing waits on a peer any more */
	/* Writes still in flight (shutdown gave up waiting for them after
	 * 10 s) land first: their chunks hold the rings released below. A
	 * seal from here finishes in place. */
	store_stop(d->st);
	while (store_writing(d->st) && uv_run(d->loop, UV_RUN_ONCE))
		;
	/* Close what is left so the loop can end cleanly. */
	for (struct client *c = d->clients, *n; c; c = n) {
		bool gone = c->gone;

		n = c->next;
		/* The store is stopped: a report still pending stays in
		 * status only (and would keep the writer). */
		c->ovl_npending = 0;
		if (gone && !c->rings) { /* kept for such a report only */
			client_maybe_free(c);
			continue;
		}
		/* A client already gone is freed with its last ring
		 * (client_maybe_free()): not touched after that one. */
		while (c->rings) {
			bool last = !c->rings->next;

			reg_ring_release(c->rings);
			if (last && gone)
				break;
		}
		if (!gone)
			client_close(c);
	}
	sink_publish_shutdown(&d->sinks);
	ship_stop(d);
	flight_stop(d); /* freed once a snapshot being written is done */
	d->io->ops->close(d->io);
	ctl_wake_close(d);
	uv_close((uv_handle_t *)&d->drain_timer, NULL);
	uv_close((uv_handle_t *)&d->flush_timer, NULL);
	uv_close((uv_handle_t *)&d->watchdog_timer, NULL);
	uv_close((uv_handle_t *)&d->stop_timer, NULL);
	uv_close((uv_handle_t *)&d->accept_timer, NULL);
	uv_close((uv_handle_t *)&d->sig_term, NULL);
	uv_close((uv_handle_t *)&d->sig_int, NULL);
	uv_close((uv_handle_t *)&d->sig_hup, NULL);
	uv_close((uv_handle_t *)&d->stop_async, NULL);
	uv_run(d->loop, UV_RUN_DEFAULT);
	ctl_fini(d); /* its handles are closed now */
	store_close(d->st);
	d->st = NULL;
	op_free(d);
	drain_free(d);
	while (d->providers) {
		struct provider *p = d->providers;

		d->providers = p->next;
		free(p->name);
		free(p);
	}
	uv_loop_close(d->loop);
}
