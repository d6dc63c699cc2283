/* daemon/ingest/status.c - the STATUS reply: retention, rates, backend, clients
 * and providers, as one JSON object (documented in `ringlog status`). All
 * figures come from the in-memory index and counters: no disk scan. */
#define _GNU_SOURCE
#include "daemon.h"
#include "ingest/operate.h"
#include "clock.h"
#include "count.h"
#include "ingest/status.h"
#include "ingest/registry.h"
#include "ingest/overload.h"
#include "sink/tail.h"
#include "sink/flight.h"
#include "sink/forward/forward.h"
#include "sink/shipping.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *lane_name(const struct store *st, unsigned k)
{
	return k && k < st->nlanes ? st->lanes[k].name : "default";
}

/* Retention classes (config "retention"): per class its bytes, share,
 * horizon (oldest event kept) and evictions, and the last evictions by the
 * budget with why, newest last. */
static json_t *retention(const struct store *st)
{
	json_t *o = json_object(), *classes = json_array(), *ev = json_array();
	uint64_t used[STORE_LANES] = { 0 }, segs[STORE_LANES] = { 0 }, horizon[STORE_LANES] = { 0 };
	uint64_t from = st->nevictions > STORE_EVICT_LOG ? st->nevictions - STORE_EVICT_LOG : 0;

	for (const struct segfile *s = st->segs; s; s = s->next) {
		unsigned k = s->lane < st->nlanes ? s->lane : 0;

		used[k] += s->bytes;
		segs[k]++;
		if (s->events && (!horizon[k] || s->first_real_ns < horizon[k]))
			horizon[k] = s->first_real_ns;
	}
	for (unsigned k = 0; k < st->nlanes; k++) {
		const struct store_lane *l = &st->lanes[k];

		json_array_append_new(classes, json_pack(
			"{s:s,s:I,s:I,s:I,s:f,s:I,s:I,s:I,s:I,s:I,s:s}",
			"name", lane_name(st, k), "min_share_bytes", (json_int_t)l->share_bytes,
			"min_age_ns", (json_int_t)l->min_age_ns, "bytes", (json_int_t)used[k],
			"share", st->budget.max_disk ? (double)used[k] / (double)st->budget.max_disk : 0.0,
			"segments", (json_int_t)segs[k], "horizon_ns", (json_int_t)horizon[k],
			"evicted_segments", (json_int_t)l->evicted,
			"evicted_bytes", (json_int_t)l->evicted_bytes,
			"forced_evictions", (json_int_t)l->forced, "last_eviction", l->last_why));
	}
	for (uint64_t i = from; i < st->nevictions; i++) {
		const struct store_eviction *e = &st->evictions[i % STORE_EVICT_LOG];

		json_array_append_new(ev, json_pack("{s:I,s:s,s:I,s:I,s:I,s:I,s:s}",
			"seq", (json_int_t)e->seq, "class", lane_name(st, e->lane),
			"bytes", (json_int_t)e->bytes, "first_ns", (json_int_t)e->first_real_ns,
			"last_ns", (json_int_t)e->last_real_ns, "at_ns", (json_int_t)e->at_real_ns,
			"why", e->why));
	}
	json_object_set_new(o, "classes", classes);
	json_object_set_new(o, "evictions", ev);
	json_object_set_new(o, "evictions_total", json_integer((json_int_t)st->nevictions));
	return o;
}

/* The segments, and in *store what the retained store holds in all: the
 * events stored and those its LOSS records count, across daemon restarts
 * (from the segment and chunk headers, retention.c). */
static json_t *segments(struct daemon *d, uint64_t *oldest, uint64_t *newest, unsigned *n,
			json_t **store)
{
	json_t *a = json_array();
	uint64_t events = 0, lost = 0;

	*oldest = *newest = 0;
	*n = 0;
	for (struct segfile *s = d->st->segs; s; s = s->next) {
		json_array_append_new(a, json_pack("{s:I,s:s,s:I,s:I,s:I,s:I,s:I,s:b,s:s}",
			"seq", (json_int_t)s->seq, "path", s->path, "bytes", (json_int_t)s->bytes,
			"events", (json_int_t)ringlog_count_sum(s->events, 0),
			"lost", (json_int_t)ringlog_count_sum(s->lost, 0),
			"first_ns", (json_int_t)s->first_real_ns, "last_ns", (json_int_t)s->last_real_ns,
			"current", s->current, "class", lane_name(d->st, s->lane)));
		ringlog_count_add(&events, s->events);
		ringlog_count_add(&lost, s->lost);
		if (s->events && (!*oldest || s->first_real_ns < *oldest))
			*oldest = s->first_real_ns;
		if (s->last_real_ns > *newest)
			*newest = s->last_real_ns;
		(*n)++;
	}
	*store = json_pack("{s:I,s:I,s:I}", "segments", (json_int_t)*n, "events", (json_int_t)events,
			   "lost", (json_int_t)lost);
	return a;
}

int status_reply(struct client *c, bool detail)
{
	struct daemon *d = c->d;
	uint64_t oldest, newest, fs_free = ret_fs_free(d->st), now = d_now(CLOCK_REALTIME);
	unsigned nseg;
	json_t *store;
	json_t *segs = segments(d, &oldest, &newest, &nseg, &store);
	json_t *clients = json_array(), *providers = json_array(), *j;
	uint64_t attributed = 0;
	double left = -1;
	char *s;
	int err;

	/* Which programs run, as whom, from where: for readers only. */
	for (struct client *x = detail ? d->clients : NULL; x; x = x->next) {
		if (!x->writer)
			continue;
		json_t *o = json_pack(
			"{s:I,s:s,s:s,s:I,s:I,s:b,s:I,s:I,s:I,s:I}",
			"pid", (json_int_t)x->pid, "comm", x->comm, "exe", x->exe ? x->exe : "",
			"uid", (json_int_t)x->uid, "rings", (json_int_t)x->nrings,
			"connected", !x->gone,
			"stored", (json_int_t)x->stored, "lost_ring", (json_int_t)x->lost_ring,
			"lost_disk", (json_int_t)x->store.lost_disk,
			"lost_corrupt", (json_int_t)x->lost_corrupt);

		if (!o)
			continue; /* (a comm that is not UTF-8) */
		json_object_set_new(o, "lost_no_ring", json_integer((json_int_t)x->lost_no_ring));
		json_array_append_new(clients, o);
	}
	for (struct provider *p = d->providers; p; p = p->next) {
		unsigned lvl = 0;

		for (unsigned l = 1; l <= 5; l++)
			if (p->kw[l])
				lvl = l;
		json_array_append_new(providers, json_pack("{s:s,s:I,s:I,s:i}", "name", p->name,
			"stored", (json_int_t)p->stored, "lost_ring", (json_int_t)p->lost_ring,
			"enabled_level", (int)lvl));
		ringlog_count_add(&attributed, p->lost_ring);
	}
	/* Until the oldest data goes: what the budget still holds over the
	 * write rate, plus the time the oldest segment took to fill. */
	if (d->rate_bytes) {
		/* the segments' budget: max_disk less the snapshots' share */
		uint64_t cap = d->st->budget.max_disk, floor = ret_min_free(d->st);
		uint64_t room = cap > d->st->used_bytes ? cap - d->st->used_bytes : 0;

		if (fs_free != UINT64_MAX && fs_free > floor && fs_free - floor < room)
			room = fs_free - floor;
		left = (double)room / (double)d->rate_bytes;
	}
	j = json_pack("{s:s,s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:o,s:I,s:I,s:I,s:I,s:I,s:{s:I,s:I,s:I},s:f,"
		      "s:s,s:s,s:s,s:o,s:{s:I,s:I,s:I,s:I,s:I},s:o,s:o,s:b,s:s}",
		"version", "0.1.0",
		"storage_dir", d->cfg.storage_dir,
		"max_disk", (json_int_t)d->cfg.max_disk,
		"min_free", (json_int_t)ret_min_free(d->st),
		"used_bytes", (json_int_t)d->st->used_bytes,
		"fs_free_bytes", (json_int_t)(fs_free == UINT64_MAX ? 0 : fs_free),
		"segment_count", (json_int_t)nseg,
		"oldest_event_ns", (json_int_t)oldest,
		"newest_event_ns", (json_int_t)newest,
		"segments", segs,
		"now_ns", (json_int_t)now,
		"rate_events_per_s", (json_int_t)d->rate_events,
		"rate_bytes_per_s", (json_int_t)d->rate_bytes,
		"stored_events", (json_int_t)d->st->stored,
		"producer_wakeups", (json_int_t)d->wakeups,
		"drain", "passes", (json_int_t)d->drain_passes, "visits", (json_int_t)d->drain_visits,
		"bells", (json_int_t)d->bells,
		"seconds_until_oldest_deleted", left,
		"backend", d->io_name,
		"backend_note", d->io_note,
		"socket", d->cfg.socket_path,
		"forwarding", fwd_status(d),
		"lost", "ring", (json_int_t)d->lost_ring, "disk", (json_int_t)d->st->lost_disk,
		"reader", (json_int_t)tail_lost_total(d), "corrupt", (json_int_t)d->lost_corrupt,
		"total", (json_int_t)ringlog_count_sum(ringlog_count_sum(d->lost_ring, d->st->lost_disk),
							d->lost_corrupt),
		"clients", clients, "providers", providers,
		"disk_blocked", d->st->disk_blocked, "disk_error", d->st->disk_error);
	if (!j)
		return -ENOMEM;
	/* The sizes in force (store_configure(): from the budget, at start and at
	 * each reload). */
	json_object_set_new(j, "max_segment_bytes", json_integer((json_int_t)d->st->budget.seg_max));
	json_object_set_new(j, "chunk_bytes", json_integer((json_int_t)d->st->budget.chunk_size));
	/* Stored, then deleted under the daemon (storage_dir removed). */
	json_object_set_new(json_object_get(j, "lost"), "deleted", json_integer((json_int_t)d->st->lost_deleted));
	/* Events the programs could put in no ring (they said how many). */
	json_object_set_new(json_object_get(j, "lost"), "no_ring",
			    json_integer((json_int_t)d->lost_no_ring));
	{
		uint64_t total = 0;

		ringlog_count_add(&total, d->lost_ring);
		ringlog_count_add(&total, d->st->lost_disk);
		ringlog_count_add(&total, d->lost_corrupt);
		ringlog_count_add(&total, d->st->lost_deleted);
		ringlog_count_add(&total, d->lost_no_ring);
		json_object_set_new(json_object_get(j, "lost"), "total",
				    json_integer((json_int_t)total));
	}
	/* These counters start at 0 with each daemon: say since when. Ring
	 * overflow the programs did not attribute to one provider (older
	 * libraries, gaps mixing providers) is in no provider's row. */
	json_object_set_new(json_object_get(j, "lost"), "since_ns",
			    json_integer((json_int_t)d->start_real_ns));
	json_object_set_new(json_object_get(j, "lost"), "ring_unattributed",
			    json_integer((json_int_t)(d->lost_ring > attributed ? d->lost_ring - attributed
										: 0)));
	json_object_set_new(j, "started_ns", json_integer((json_int_t)d->start_real_ns));
	/* What a power loss may take (store/durable.c). */
	/* bytes written since start: status --watch's rate to disk is the
	 * difference of two (rate_bytes_per_s is smoothed over minutes) */
	json_object_set_new(j, "stored_bytes", json_integer((json_int_t)d->st->stored_bytes));
	json_object_set_new(j, "durability", json_pack("{s:I,s:I,s:I,s:I,s:s}",
		"sync_interval_ns", (json_int_t)d->st->budget.sync_interval_ns,
		"last_round_ns", (json_int_t)d->st->sync_round_real_ns,
		"segments_waiting", (json_int_t)d->st->sync_queued,
		"sync_failures", (json_int_t)d->st->sync_failures,
		"last_error", d->st->sync_error));
	json_object_set_new(j, "store", store);
	json_object_set_new(j, "retention", retention(d->st));
	{
		json_t *ship = ship_status(d);

		if (ship)
			json_object_set_new(j, "ship", ship);
	}
	/* Run-time enablement rules (`ringlog enable`), and why "clients" is
	 * empty for a peer not in read_group. */
	json_object_set_new(j, "enable_rules", op_status(d));
	json_object_set_new(j, "clients_detail", json_boolean(detail));
	/* live readers attached (`ringlog tail`, `read -f`) */
	json_object_set_new(j, "tails", json_integer((json_int_t)d->ntails));
	json_object_set_new(j, "read_group", json_string(d->cfg.read_group));
	json_object_set_new(j, "flight", flight_status(d));
	json_object_set_new(j, "max_retention_ns", json_integer((json_int_t)d->cfg.max_retention_ns));
	ovl_status(d, j);
	s = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	if (!s)
		return -ENOMEM;
	err = client_send(c, RINGLOG_CTL_STATUS, s, (uint32_t)strlen(s));
	free(s);
	return err;
}
