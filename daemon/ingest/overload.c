/* daemon/ingest/overload.c - what the daemon does about overload; the
 * programs do the rest (client/overload.c, proto/ringbuf.c).
 *
 * Shedding: each ring's consumer block gets shed_reserve (ring_reserve of
 * its data size) and shed_level when it is attached and at every reload;
 * the producer keeps that much room for events at or above shed_level and
 * reports what it shed in its LOSS records, by level.
 *
 * Policies: a writer gets one POLICY entry per event whose configured rate
 * limit or wait is not the default (every event's, on a reload), matched as
 * enablement is: the first provider pattern that matches, then the first
 * of its event patterns. Its reports of what rate limits suppressed become
 * LOSS records naming the event.
 */
#define _GNU_SOURCE
#include "daemon.h"
#include "log.h"
#include "ctl.h"
#include "count.h"
#include "ingest/overload.h"
#include "ingest/registry.h"
#include "ingest/operate.h"

#include <errno.h>
#ifdef _WIN32
#include "compat-win.h" /* fnmatch */
#else
#include <fnmatch.h>
#endif
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

void ovl_ring_attached(struct daemon *d, struct ring *r)
{
	struct ringlog_ring_hdr *h = r->cons.hdr;
	uint64_t reserve = r->cons.size * d->cfg.ring_reserve_percent / 100;

	if (!h)
		return;
	__atomic_store_n(&h->shed_reserve, (uint32_t)(reserve & ~7ull), __ATOMIC_RELAXED);
	__atomic_store_n(&h->shed_level, d->cfg.shed_level, __ATOMIC_RELAXED);
}

/* The configured policy of an event of provider pname. */
static struct ringlog_config_policy policy_of(const struct daemon *d, const char *pname,
					      const char *ename)
{
	const struct ringlog_config_provider *r = &d->cfg.default_provider;
	struct ringlog_config_policy pol;

	if (op_rule_policy(d, pname, ename, &pol)) /* `ringlog enable --rate` first */
		return pol;
	for (unsigned i = 0; i < d->cfg.n_providers; i++)
		if (!fnmatch(d->cfg.providers[i].pattern, pname, 0)) {
			r = &d->cfg.providers[i];
			break;
		}
	for (unsigned i = 0; i < r->n_events; i++)
		if (!fnmatch(r->events[i].pattern, ename, 0))
			return r->events[i].pol;
	return r->pol;
}

/* POLICY entries for c's events whose policy is not what the program
 * has (the default, none, until we send one): a reload or a new tail
 * sends nothing when no policy changed. */
static void send_policies(struct client *c)
{
	struct ringlog_ctl_policy batch[64];
	unsigned n = 0;

	if (!c->writer || c->gone || c->refused || c->meta.nev <= 1)
		return;
	if (c->npol_sent < c->meta.nev) {
		struct ringlog_config_policy *s = realloc(c->pol_sent, c->meta.nev * sizeof(*s));

		if (!s)
			return; /* tried again at the next change */
		memset(s + c->npol_sent, 0, (c->meta.nev - c->npol_sent) * sizeof(*s));
		c->pol_sent = s;
		c->npol_sent = c->meta.nev;
	}
	for (uint32_t id = 1; id < c->meta.nev; id++) {
		const struct ringlog_event_desc *e = ringlog_meta_event(&c->meta, id);
		const char *pname = e ? ringlog_meta_provider(&c->meta, e->provider) : NULL;
		struct ringlog_config_policy pol;

		if (!e || !pname)
			continue;
		pol = policy_of(c->d, pname, e->name);
		if (!memcmp(&pol, &c->pol_sent[id], sizeof(pol)))
			continue;
		c->pol_sent[id] = pol;
		batch[n] = (struct ringlog_ctl_policy){ .event = (uint16_t)id, .wait_us = pol.wait_us,
			.rate = pol.rate, .period_ms = pol.period_ms, .burst = pol.burst };
		if (++n == 64) {
			client_send(c, RINGLOG_CTL_POLICY, batch, sizeof(batch));
			n = 0;
		}
	}
	if (n)
		client_send(c, RINGLOG_CTL_POLICY, batch, n * sizeof(batch[0]));
}

void ovl_meta_synced(struct client *c)
{
	if (c->meta.nev > c->npol_sent)
		send_policies(c);
}

void ovl_reload(struct daemon *d)
{
	for (struct client *c = d->clients; c; c = c->next) {
		for (struct ring *r = c->rings; r; r = r->next)
			if (!r->dead && r->mem)
				ovl_ring_attached(d, r);
		send_policies(c);
	}
}

void ovl_count_levels(struct daemon *d, struct ring *r, struct provider *p,
		      const uint64_t by_level[RINGLOG_LOSS_LEVELS])
{
	for (unsigned i = 0; i < RINGLOG_LOSS_LEVELS; i++) {
		ringlog_count_add(&d->ovl.lost_level[i], by_level[i]);
		ringlog_count_add(&r->c->ovl.lost_level[i], by_level[i]);
		if (p)
			ringlog_count_add(&p->ovl.lost_level[i], by_level[i]);
	}
}

int ovl_exit_loss(struct daemon *d, struct ring *r, const struct ringlog_rec_loss *l)
{
	uint64_t lv[RINGLOG_LOSS_LEVELS], sum = 0;
	bool wrapped = false;
	int err;

	ringlog_cons_pending_levels(&r->cons, lv);
	for (unsigned i = 0; i < RINGLOG_LOSS_LEVELS; i++)
		wrapped |= __builtin_add_overflow(sum, lv[i], &sum);
	/* not kept, or not all seen, or a header's levels that only add up
	 * by wrapping: one record */
	if (wrapped || sum != l->records)
		return store_loss(d->st, r, l->records, l->bytes, RINGLOG_LOSS_EXIT);
	/* One record a level; a level already stored by an earlier try (the
	 * store was full for a later one) is not stored twice. */
	for (unsigned i = 0; i < RINGLOG_LOSS_LEVELS; i++) {
		/* The bytes are the ring's total, given with the first level. */
		struct ringlog_seg_loss sl = { .records = lv[i], .reason = RINGLOG_LOSS_EXIT,
					       .level = (uint8_t)i,
					       .bytes = r->exit_levels_done ? 0 : l->bytes };

		if (!lv[i] || (r->exit_levels_done & 1u << i))
			continue;
		if ((err = store_loss_rec(d->st, r, &sl)) != 0)
			return err;
		r->exit_levels_done |= (uint8_t)(1u << i);
	}
	ovl_count_levels(d, r, NULL, lv);
	return 0;
}

/* A stream of c to place a report in: a live ring, else the last one
 * released (its threads ended before it reported), or NULL. */
static struct ring *report_ring(struct client *c)
{
	struct ring *r = c->rings;

	while (r && (r->dead || !r->mem))
		r = r->next;
	return r ? r : c->spent;
}

static int store_suppressed(struct daemon *d, struct ring *r, const struct ringlog_event_desc *e,
			    uint16_t event, uint64_t count)
{
	struct ringlog_seg_loss sl = { .records = count, .reason = RINGLOG_LOSS_RATE,
				       .provider = e->provider, .event = event, .level = e->level };
	int err = store_loss_rec(d->st, r, &sl);

	if (!err)
		r->c->ovl_unsealed = true; /* a flush waits for its chunk */
	return err;
}

/* Events the program could put in no ring (SUPPRESSED, event 0): a loss
 * in one of its streams, with no provider (the library counts them all
 * together). */
static int store_no_ring(struct daemon *d, struct ring *r, uint64_t count)
{
	struct ringlog_seg_loss sl = { .records = count, .reason = RINGLOG_LOSS_NO_RING };
	int err = store_loss_rec(d->st, r, &sl);

	if (!err)
		r->c->ovl_unsealed = true;
	return err;
}

/* Keep a report for ovl_retry(), added to one of the same event. Out of
 * memory, the count stays in status only. */
static void pend(struct client *c, uint16_t event, uint64_t count)
{
	struct ovl_pending *n;

	for (uint32_t i = 0; i < c->ovl_npending; i++)
		if (c->ovl_pending[i].event == event) {
			ringlog_count_add(&c->ovl_pending[i].count, count);
			return;
		}
	n = realloc(c->ovl_pending, (c->ovl_npending + 1) * sizeof(*n));
	if (!n)
		return;
	n[c->ovl_npending++] = (struct ovl_pending){ .event = event, .count = count };
	c->ovl_pending = n;
}

int ovl_suppressed(struct client *c, const uint8_t *p, uint32_t len)
{
	struct daemon *d = c->d;
	struct ring *r = report_ring(c);

	if (len % sizeof(struct ringlog_ctl_suppressed))
		return -EPROTO;
	for (uint32_t off = 0; off < len; off += sizeof(struct ringlog_ctl_suppressed)) {
		struct ringlog_ctl_suppressed m;
		const struct ringlog_event_desc *e;
		struct provider *pv;

		memcpy(&m, p + off, sizeof(m));
		if (m.event == 0) {
			if (!m.count)
				continue;
			ringlog_count_add(&d->lost_no_ring, m.count);
			ringlog_count_add(&c->lost_no_ring, m.count);
			if (!r || store_no_ring(d, r, m.count) != 0)
				pend(c, 0, m.count);
			continue;
		}
		e = ringlog_meta_event(&c->meta, m.event);
		if (!e) {
			reg_meta_sync(c);
			e = ringlog_meta_event(&c->meta, m.event);
		}
		if (!e || !m.count)
			continue; /* an id it never defined: not trusted, not counted */
		pv = e->provider < c->nprov ? c->prov[e->provider] : NULL;
		ringlog_count_add(&d->ovl.suppressed, m.count);
		ringlog_count_add(&c->ovl.suppressed, m.count);
		if (pv)
			ringlog_count_add(&pv->ovl.suppressed, m.count);
		/* In a stream of the writer, so that readers name the program
		 * and the event. Kept for later while the store has no room,
		 * or the writer no stream yet (a ring refused, or not yet
		 * registered); a writer that ends without ever having one
		 * stored nothing to place it next to, and keeps the count in
		 * status only. */
		if (!r || store_suppressed(d, r, e, m.event, m.count) != 0)
			pend(c, m.event, m.count);
	}
	return 0;
}

void ovl_retry(struct daemon *d, struct client *c)
{
	struct ring *r = report_ring(c);
	uint32_t i = 0;

	for (; r && i < c->ovl_npending; i++) {
		const struct ovl_pending *x = &c->ovl_pending[i];
		const struct ringlog_event_desc *e = ringlog_meta_event(&c->meta, x->event);

		if (!x->event ? store_no_ring(d, r, x->count) != 0
			      : e && store_suppressed(d, r, e, x->event, x->count) != 0)
			break;
	}
	memmove(c->ovl_pending, c->ovl_pending + i, (c->ovl_npending - i) * sizeof(*c->ovl_pending));
	c->ovl_npending -= i;
}

void ovl_sealed(struct daemon *d)
{
	if (!store_idle_open(d->st))
		return; /* a chunk could not be sealed: the reports in it wait */
	for (struct client *c = d->clients; c; c = c->next)
		if (c->ovl_unsealed) {
			c->ovl_unsealed = false;
			c->ovl_sealed_to = d->st->seal_next;
		}
}

/* Reports kept that one of c's streams could take now. */
static bool kept(struct client *c)
{
	return c->ovl_npending && report_ring(c);
}

bool ovl_flush_pending(struct client *c)
{
	/* release_next: every chunk sealed before it is written or counted
	 * lost (segment.c, in sealing order) */
	return kept(c) || c->ovl_unsealed || c->d->st->release_next < c->ovl_sealed_to;
}

bool ovl_pending(const struct daemon *d)
{
	for (struct client *c = d->clients; c; c = c->next)
		if (kept(c))
			return true;
	return false;
}

static json_t *levels_json(const uint64_t lv[RINGLOG_LOSS_LEVELS])
{
	static const char *const names[] = { "unknown", "critical", "error", "warning", "info",
		"verbose", "level6", "level7" };
	json_t *o = json_object();

	for (unsigned i = 0; i < RINGLOG_LOSS_LEVELS; i++)
		if (lv[i] || (i >= 1 && i <= 5))
			json_object_set_new(o, names[i], json_integer((json_int_t)lv[i]));
	return o;
}

void ovl_status(struct daemon *d, json_t *status)
{
	json_t *rows = json_object_get(status, "providers"), *lost = json_object_get(status, "lost");
	json_t *clients = json_object_get(status, "clients");
	size_t i = 0;

	json_object_set_new(status, "overload", json_pack("{s:i,s:i,s:I,s:o}",
		"ring_reserve_percent", (int)d->cfg.ring_reserve_percent,
		"shed_level", (int)d->cfg.shed_level,
		"suppressed", (json_int_t)d->ovl.suppressed,
		"ring_lost_by_level", levels_json(d->ovl.lost_level)));
	if (lost)
		json_object_set_new(lost, "rate_limited", json_integer((json_int_t)d->ovl.suppressed));
	/* The rows are in the order status.c walked them: the same lists. */
	for (struct provider *p = d->providers; p && i < json_array_size(rows); p = p->next, i++) {
		json_t *row = json_array_get(rows, i);

		json_object_set_new(row, "suppressed", json_integer((json_int_t)p->ovl.suppressed));
		json_object_set_new(row, "lost_by_level", levels_json(p->ovl.lost_level));
	}
	i = 0;
	for (struct client *c = d->clients; c && i < json_array_size(clients); c = c->next) {
		if (!c->writer)
			continue;
		json_t *row = json_array_get(clients, i++);

		json_object_set_new(row, "suppressed", json_integer((json_int_t)c->ovl.suppressed));
		json_object_set_new(row, "lost_by_level", levels_json(c->ovl.lost_level));
	}
}
