/* daemon/sink/ship.c - the shipping sink's entry points on the loop
 * (shipping.h): sealed chunks noted for the thread, the ship section
 * turned into the thread's settings, start, SIGHUP reload and stop. How
 * shipping works, and which file does what: ship-int.h.
 */
#define _GNU_SOURCE
#include "sink/ship-int.h"
#include "daemon.h"
#include "log.h"
#include "clock.h"
#include "sink/shipping.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct ship *ship_g;

static void sink_chunk(struct sink *sk, const struct sink_chunk *c)
{
	struct ship *s = ship_g;
	const struct ringlog_chunk_hdr *h = (const void *)c->bytes;

	(void)sk;
	if (!s || !c->bytes || c->len < sizeof(*h))
		return;
	pthread_mutex_lock(&s->mu);
	if (c->segment > s->front_seg || (c->segment == s->front_seg &&
					  (int64_t)h->seq > s->front_chunk)) {
		if (c->segment > s->front_seg)
			s->front_seg = c->segment;
		s->front_chunk = (int64_t)h->seq;
	}
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

const struct sink_ops ship_sink_ops = {
	.name = "ship",
	.chunk = sink_chunk,
};

static void host_default(const struct daemon *d, char *host, size_t len)
{
	size_t n = 0;

	for (const char *p = d->st->host; *p && n + 1 < len; p++)
		host[n++] = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-",
				   *p) ? *p : '_';
	host[n] = '\0';
	if (!n)
		snprintf(host, len, "unknown");
}

/* The ship section of c as the thread uses it. */
static void conf_from(const struct daemon *d, const struct ringlog_config *c, struct ship_conf *sc)
{
	char list[RINGLOG_SHIP_SERVERS_MAX], *save = NULL;
	size_t used = 0;

	memset(sc, 0, sizeof(*sc));
	sc->cfg = *c;
	if (c->ship.host[0])
		snprintf(sc->host, sizeof(sc->host), "%s", c->ship.host);
	else
		host_default(d, sc->host, sizeof(sc->host));
	if (c->ship.subject[0])
		snprintf(sc->subject, sizeof(sc->subject), "%s", c->ship.subject);
	else
		snprintf(sc->subject, sizeof(sc->subject), "ringlog.%s", sc->host);
	snprintf(sc->stream, sizeof(sc->stream), "%s", c->ship.stream);
	snprintf(sc->servers, sizeof(sc->servers), "%s", c->ship.servers);
	snprintf(list, sizeof(list), "%s", c->ship.servers);
	for (char *u = strtok_r(list, ",", &save); u; u = strtok_r(NULL, ",", &save)) {
		ship_strip_userinfo(u);
		used += (size_t)snprintf(sc->shown + used, sizeof(sc->shown) - used, "%s%s",
					 used ? "," : "", u);
		if (used >= sizeof(sc->shown))
			break;
	}
	sc->max_pending = c->ship.max_pending;
	sc->compress = c->ship.compress;
	sc->max_backlog = c->ship.max_backlog < c->max_disk ? c->ship.max_backlog : c->max_disk;
	sc->interval_ns = c->ship.interval_ns;
	/* the files named: a reload after one was replaced (a new password,
	 * a renewed certificate) connects again */
	{
		const char *files[] = { c->ship.creds, c->ship.password_file, c->ship.tls_ca,
					c->ship.tls_cert, c->ship.tls_key };
		uint64_t h = 1469598103934665603ull;

		for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
			struct stat st;
			uint64_t v[4] = { 0 };

			if (files[i][0] && stat(files[i], &st) == 0) {
				v[0] = (uint64_t)st.st_ino;
				v[1] = (uint64_t)st.st_size;
				v[2] = (uint64_t)st.st_mtim.tv_sec;
				v[3] = (uint64_t)st.st_mtim.tv_nsec;
			}
			for (size_t k = 0; k < 4; k++)
				h = (h ^ v[k]) * 1099511628211ull;
		}
		sc->files = h;
	}
}

/* Does going from a to b need a new connection (and window)? Everything
 * but live, interval and max_backlog, which apply as they are. compress
 * too: a chunk cut into parts and sent again must be cut from the same
 * bytes, and the window starts again from a whole acknowledged chunk. */
static bool conf_reconnects(const struct ship_conf *a, const struct ship_conf *b)
{
	const __typeof__(a->cfg.ship) *x = &a->cfg.ship, *y = &b->cfg.ship;

	return strcmp(a->host, b->host) || strcmp(a->subject, b->subject) ||
	       strcmp(a->stream, b->stream) || strcmp(a->servers, b->servers) ||
	       strcmp(x->creds, y->creds) || strcmp(x->user, y->user) ||
	       strcmp(x->password_file, y->password_file) || strcmp(x->tls_ca, y->tls_ca) ||
	       strcmp(x->tls_cert, y->tls_cert) || strcmp(x->tls_key, y->tls_key) ||
	       a->files != b->files || a->max_pending != b->max_pending ||
	       a->compress != b->compress ||
	       x->create_stream != y->create_stream || x->replicas != y->replicas ||
	       x->max_age_ns != y->max_age_ns || x->max_bytes != y->max_bytes;
}

static void init_with(struct daemon *d, const struct ringlog_config *c)
{
	struct ship *s;

	if (!c->ship.servers[0] || ship_g)
		return;
	s = calloc(1, sizeof(*s));
	if (!s)
		return;
	s->d = d;
	pthread_mutex_init(&s->mu, NULL);
	pthread_mutex_init(&s->save_mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	if (strlen(c->storage_dir) >= sizeof(s->dir)) {
		d_log(LOG_ERR, "ship: storage_dir is longer than %zu bytes: shipping is off",
		      sizeof(s->dir) - 1);
		free(s);
		return;
	}
	memcpy(s->dir, c->storage_dir, strlen(c->storage_dir) + 1);
	s->reading_seg = UINT64_MAX;
	s->ack_events_seg = UINT64_MAX;
	ship_state_load(s);
	snprintf(s->state, sizeof(s->state), "starting");
	ship_g = s;
}

void ship_init(struct daemon *d)
{
	init_with(d, &d->cfg);
}

static int start_with(struct daemon *d, const struct ringlog_config *c)
{
	struct ship *s = ship_g;
	int err;

	if (!s || s->started)
		return 0;
	conf_from(d, c, &s->c);
	s->win = ship_window_new(s->c.max_pending, &s->cap);
	if (!s->win)
		return -ENOMEM;
	/* What is on disk now: every segment before the one being written,
	 * and its chunks when none is in flight (a start by SIGHUP: chunks
	 * sealed before it; with writes in flight, their completions tell) */
	s->front_seg = d->st->cur ? d->st->cur->seq : d->st->next_seq;
	s->front_chunk = d->st->cur && !d->st->cur->inflight ? (int64_t)d->st->cur->chunks - 1 : -1;
	if ((err = pthread_create(&s->th, NULL, ship_thread_main, s)) != 0) {
		d_log(LOG_ERR, "ship: cannot start the shipping thread: %s; storing locally only",
		      strerror(err));
		return -err;
	}
	s->started = true;
	d_log(LOG_INFO, "ship: to stream \"%s\" at %s as %s", s->c.stream, s->c.shown, s->c.host);
	return 0;
}

int ship_start(struct daemon *d)
{
	return start_with(d, &d->cfg);
}

void ship_reload(struct daemon *d, struct ringlog_config *next)
{
	struct ship *s = ship_g;
	struct ship_conf *sc;
	struct pend *win = NULL;
	size_t cap = 0;
	char why[sizeof(s->error)];
	bool reconnect;

	if (!s || !s->started) {
		/* not shipping yet: a ship section set now starts it */
		if (s && !next->ship.servers[0])
			return;
		init_with(d, next);
		if (start_with(d, next) == 0 && ship_g && ship_g->started)
			d_log(LOG_NOTICE, "SIGHUP: ship: shipping starts");
		return;
	}
	sc = malloc(sizeof(*sc));
	if (!sc) {
		d_log(LOG_WARNING, "SIGHUP: ship: out of memory; keeping the running ship section");
		next->ship = d->cfg.ship;
		return;
	}
	conf_from(d, next, sc);
	if (sc->servers[0]) {
		natsOptions *o = NULL;

		/* what libnats would refuse at the next connection is refused
		 * now, while the running section still works */
		if (ship_options(s, sc, &o, why, sizeof(why)) < 0) {
			d_log(LOG_WARNING, "SIGHUP: ship: keeping the running ship section (stream "
			      "\"%s\" at %s): the new one is refused: %s", s->c.stream, s->c.shown, why);
			next->ship = d->cfg.ship;
			free(sc);
			return;
		}
		natsOptions_Destroy(o);
	}
	pthread_mutex_lock(&s->mu);
	reconnect = conf_reconnects(s->reload ? &s->next : &s->c, sc) || s->off != !sc->servers[0];
	pthread_mutex_unlock(&s->mu);
	if (reconnect && sc->servers[0] && !(win = ship_window_new(sc->max_pending, &cap))) {
		d_log(LOG_WARNING, "SIGHUP: ship: out of memory; keeping the running ship section");
		next->ship = d->cfg.ship;
		free(sc);
		return;
	}
	pthread_mutex_lock(&s->mu);
	/* these apply at once: the loop and the thread read them under mu */
	s->c.max_backlog = sc->max_backlog;
	s->c.interval_ns = sc->interval_ns;
	if (reconnect) {
		free(s->next_win);
		s->next = *sc;
		s->next_win = win;
		s->next_cap = cap;
		s->reload = true;
		s->reload_by_ns = d_now(CLOCK_MONOTONIC) + 5000000000ull;
		pthread_cond_broadcast(&s->cv);
	} else if (s->reload) {
		s->next.max_backlog = sc->max_backlog;
		s->next.interval_ns = sc->interval_ns;
	}
	pthread_mutex_unlock(&s->mu);
	if (reconnect && sc->servers[0])
		d_log(LOG_NOTICE, "SIGHUP: ship: to stream \"%s\" at %s as %s (subject %s), from the "
		      "acknowledged position, once the messages in flight are acknowledged",
		      sc->stream, sc->shown, sc->host, sc->subject);
	else if (reconnect)
		d_log(LOG_NOTICE, "SIGHUP: ship: ship.servers is empty: shipping stops, once the "
		      "messages in flight are acknowledged (ship.state keeps the position)");
	free(sc);
}

void ship_stop(struct daemon *d)
{
	struct ship *s = ship_g;

	(void)d;
	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	s->stop_by_ns = d_now(CLOCK_MONOTONIC) + 2000000000ull;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	if (s->started)
		pthread_join(s->th, NULL);
	jsCtx_Destroy(s->js);
	natsConnection_Destroy(s->nc);
	nats_CloseAndWait(1000);
	free(s->win);
	free(s->next_win);
	ringlog_ship_zbuf_free(&s->z);
	pthread_mutex_destroy(&s->mu);
	pthread_mutex_destroy(&s->save_mu);
	pthread_cond_destroy(&s->cv);
	free(s);
	ship_g = NULL;
}
