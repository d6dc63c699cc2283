/* daemon/sink/forward/forward.c - the part of forwarding every tracer shares: start and
 * stop with the configuration, one backend handle per (writer, event), the
 * write path from drain.c, loss counters, and enablement raised in the
 * clients while a tracer listens (the path `ringlog tail` uses). */
#define _GNU_SOURCE
#include "daemon.h"
#include "log.h"
#include "clock.h"
#include "ingest/registry.h"
#include "forward.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#if defined(__linux__)
static const struct fwd_ops *const backend = &fwd_user_events_ops;
#elif defined(_WIN32)
static const struct fwd_ops *const backend = &fwd_etw_ops;
#else
static const struct fwd_ops *const backend = NULL;
#endif

static bool wanted(const struct daemon *d)
{
#ifdef _WIN32
	return backend && d->cfg.forward.etw;
#else
	return backend && d->cfg.forward.user_events;
#endif
}

static void event_seen(struct client *c, const struct ringlog_event_desc *e)
{
	struct fwd *f = c->d->fwd;
	struct provider *p;

	if (e->provider >= c->nprov || !(p = c->prov[e->provider]))
		return;
	if (ringlog_grow(&c->fwd_ev, &c->nfwd_ev, e->id, sizeof(*c->fwd_ev)) < 0)
		return;
	c->fwd_ev[e->id] = f->ops->event_new(f, p->name, e);
}

/* Ids are dense and handed out in order, so "not offered yet" is the
 * range from fwd_next to the end. */
static void fwd_sync_client(struct client *c)
{
	if (!c->d->fwd)
		return;
	for (; c->fwd_next < c->meta.nev; c->fwd_next++)
		if (c->meta.events[c->fwd_next])
			event_seen(c, c->meta.events[c->fwd_next]);
}

/* Two providers the tracer would show as one (fwd_refusal): the second is
 * not forwarded, and the operator hears of it once, with both names. */
static void refuse(struct fwd *f, const char *provider, const char *owner, const char *target)
{
	struct fwd_refusal *r;

	for (r = f->refused; r; r = r->next)
		if (!strcmp(r->provider, provider))
			return;
	d_log(LOG_WARNING, "%s: provider \"%s\" is not forwarded: it would share %s with "
	      "provider \"%s\", and tracers would show the two as one; rename one of them",
	      f->ops->name, provider, target, owner);
	if (!(r = calloc(1, sizeof(*r))) || !(r->provider = strdup(provider)) ||
	    !(r->owner = strdup(owner)) || !(r->target = strdup(target))) {
		if (r) {
			free(r->provider);
			free(r->owner);
		}
		free(r);
		return;
	}
	r->next = f->refused;
	f->refused = r;
}

static void start(struct daemon *d)
{
	struct fwd *f = calloc(1, sizeof(*f));
	char why[sizeof(d->fwd_state) - 32];
	int err;

	if (!f) {
		snprintf(d->fwd_state, sizeof(d->fwd_state), "unavailable: out of memory");
		return;
	}
	f->ops = backend;
	f->refuse = refuse;
	err = f->ops->open(f, why, sizeof(why));
	if (err) {
		snprintf(d->fwd_state, sizeof(d->fwd_state), "unavailable: %s", why);
		d_log(LOG_NOTICE, "forwarding to %s is unavailable: %s", backend->name, why);
		free(f);
		return;
	}
	/* Counters survive a stop/start by SIGHUP. */
	f->forwarded = d->fwd_forwarded;
	memcpy(f->lost, d->fwd_lost, sizeof(f->lost));
	d->fwd = f;
	sink_want(&d->sinks, &d->fwd_sink, true);
	snprintf(d->fwd_state, sizeof(d->fwd_state), "on");
	for (struct client *c = d->clients; c; c = c->next)
		if (c->writer)
			fwd_sync_client(c);
	d_log(LOG_INFO, "forwarding to %s", backend->name);
}

static void fwd_client_free(struct client *c)
{
	struct fwd *f = c->d->fwd;

	for (uint32_t i = 0; i < c->nfwd_ev; i++)
		if (c->fwd_ev[i] && f)
			f->ops->event_free(c->fwd_ev[i]);
	free(c->fwd_ev);
	c->fwd_ev = NULL;
	c->nfwd_ev = 0;
	c->fwd_next = 0;
}

static void stop(struct daemon *d)
{
	struct fwd *f = d->fwd;

	if (!f)
		return;
	for (struct client *c = d->clients; c; c = c->next)
		fwd_client_free(c);
	d->fwd_forwarded = f->forwarded;
	memcpy(d->fwd_lost, f->lost, sizeof(d->fwd_lost));
	f->ops->close(f);
	for (struct fwd_refusal *r = f->refused, *n; r; r = n) {
		n = r->next;
		free(r->provider);
		free(r->owner);
		free(r->target);
		free(r);
	}
	free(f);
	d->fwd = NULL;
	sink_want(&d->sinks, &d->fwd_sink, false);
}

void fwd_apply(struct daemon *d)
{
	if (wanted(d) && !d->fwd)
		start(d);
	else if (!wanted(d) && d->fwd) {
		stop(d);
		reg_enable_recompute(d); /* what tracers raised goes back */
	}
	if (!wanted(d))
		snprintf(d->fwd_state, sizeof(d->fwd_state), backend ? "off" : "unsupported");
}

static void fwd_record(struct daemon *d, struct ring *r, uint16_t type,
		       const struct ringlog_event_desc *e, const uint8_t *payload, uint32_t len)
{
	struct fwd *f = d->fwd;
	struct client *c = r->c;
	void *ev = e->id < c->nfwd_ev ? c->fwd_ev[e->id] : NULL;
	uint32_t head = RINGLOG_EVENT_HDR_SIZE;
	const uint8_t *act = NULL;
	enum fwd_loss why;
	uint64_t ts;

	if (!ev || !f->ops->event_enabled(ev))
		return;
	if (type == RINGLOG_REC_EVENT_ACT) {
		act = payload + head;
		head += RINGLOG_ACTIVITY_SIZE;
	}
	memcpy(&ts, payload, sizeof(ts));
	if (f->ops->event_write(f, ev, act, clock_real_ns(&d->clock, r->clock, ts), payload + head,
				len - head, &why) == 0)
		f->forwarded++;
	else
		f->lost[why]++;
}

void fwd_tick(struct daemon *d)
{
	if (d->fwd && d->fwd->ops->changed(d->fwd))
		reg_enable_recompute(d);
}

/* What the tracers' sessions enable is raised in the programs. */
static void sink_raise(struct sink *s, const char *provider, uint64_t kw[8])
{
	struct daemon *d = s->ctx;

	if (d->fwd)
		d->fwd->ops->raise(d->fwd, provider, kw);
}

json_t *fwd_status(struct daemon *d)
{
	const struct fwd *f = d->fwd;
	const uint64_t *lost = f ? f->lost : d->fwd_lost;
	unsigned targets = 0, enabled = 0;
	json_t *refused = json_array();

	if (f)
		f->ops->count(d->fwd, &targets, &enabled);
	for (const struct fwd_refusal *r = f ? f->refused : NULL; r; r = r->next)
		json_array_append_new(refused, json_pack("{s:s,s:s,s:s}", "provider", r->provider,
							 "owner", r->owner, "target", r->target));
	return json_pack("{s:s,s:s,s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:o}",
#ifdef _WIN32
		"user_events", "unsupported on this system", "etw", d->fwd_state,
#else
		"user_events", d->fwd_state, "etw", "unsupported on this system",
#endif
		"backend", backend ? backend->name : "",
		"targets", (json_int_t)targets, "enabled", (json_int_t)enabled,
		"forwarded", (json_int_t)(f ? f->forwarded : d->fwd_forwarded),
		"lost_disabled", (json_int_t)lost[FWD_LOST_DISABLED],
		"lost_tracer", (json_int_t)lost[FWD_LOST_TRACER],
		"lost_other", (json_int_t)lost[FWD_LOST_OTHER],
		"refused", refused);
}

/* The sink: every stored event, while a backend is open (want_records);
 * the backend closes at shutdown. */
static void sink_record(struct sink *s, const struct sink_record *rec)
{
	fwd_record(s->ctx, rec->r, rec->type, rec->e, rec->payload, rec->len);
}

static void sink_shutdown(struct sink *s)
{
	stop(s->ctx);
}

/* A writer described more events: offered to the backend now, not at
 * their first record. */
static void sink_described(struct sink *s, struct client *c)
{
	(void)s;
	fwd_sync_client(c);
}

static void sink_freed(struct sink *s, struct client *c)
{
	(void)s;
	fwd_client_free(c);
}

const struct sink_ops fwd_sink_ops = { .name = "forward", .record = sink_record,
					.shutdown = sink_shutdown, .raise = sink_raise,
					.described = sink_described, .freed = sink_freed };
