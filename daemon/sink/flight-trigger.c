/* daemon/sink/flight-trigger.c - the flight recorder's triggers and
 * snapshots (flight.h): a trigger opens a pending snapshot, due post
 * later; triggers meanwhile join it (every reason kept) and extend it up to
 * pre + post; max_snapshots over a sliding period refuses the rest,
 * counted. When due, the slots of the window are pinned and written behind
 * a segment header by snapshot.c on a libuv worker; the `ringlog snapshot`s
 * waiting get the path. Triggers: the SNAPSHOT frame, ringlog_trigger()'s
 * count in the rings (read every FL_SCAN_MS and when a writer goes), and a
 * writer whose connection closes without its exit handlers having run.
 */
#define _GNU_SOURCE
#include "daemon.h"
#include "log.h"
#include "count.h"
#include "clock.h"
#include "ingest/client.h"
#include "ingest/registry.h"
#include "sink/flight.h"
#include "sink/flight-int.h"
#include "sink/snapshot.h"
#include "store/file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ------------------------------------------------------------------------
 * Triggers
 */

static bool take_reason(struct fl_pending *p, const char *reason)
{
	size_t n = strnlen(reason, FL_REASON_MAX - 1);

	if (p->len + n + 1 > sizeof(p->reasons))
		return false; /* the first ones are kept; the count says more came */
	memcpy(p->reasons + p->len, reason, n);
	p->reasons[p->len + n] = '\0';
	p->len += (uint32_t)n + 1;
	p->n++;
	return true;
}

static void reply_error(struct flight *f, uint64_t waiter, const char *msg)
{
	for (struct client *c = f->d->clients; waiter && c; c = c->next)
		if (c->seq == waiter && !c->gone)
			tool_error(c, msg);
}

void fl_trigger(struct flight *f, const char *reason, uint64_t waiter)
{
	const struct ringlog_config_flight *cf = &f->d->cfg.flight;
	uint64_t now = d_now(CLOCK_MONOTONIC), real = d_now(CLOCK_REALTIME);
	struct fl_pending *p = &f->pend;

	f->triggers++;
	snprintf(f->last_reason, sizeof(f->last_reason), "%s", reason);
	if (p->on) {
		/* Overlapping windows: one snapshot, every reason. It waits
		 * for post after the last trigger, but never beyond pre + post
		 * after the first, or a steady stream would hold it forever. */
		uint64_t due = now + cf->post_ns, cap = p->first_mono + cf->post_ns + cf->pre_ns;

		take_reason(p, reason);
		p->last_real = real;
		if (waiter && p->nwaiters < FL_WAITERS)
			p->waiters[p->nwaiters++] = waiter;
		else if (waiter) /* told now rather than never */
			reply_error(f, waiter, "snapshot pending with too many `ringlog snapshot`s waiting "
				    "for it: your reason is in it; ringlog status shows its path once written");
		if (due > cap)
			due = cap;
		if (due > p->due_mono)
			p->due_mono = due;
		f->coalesced++;
		/* overdue already (a snapshot is being written): as soon as it is done */
		uv_timer_start(&f->due, fl_on_due, p->due_mono > now ? (p->due_mono - now) / 1000000 : 0, 0);
		return;
	}
	/* max_snapshots: over the last period, counting those begun */
	{
		uint64_t oldest = f->taken_at[f->taken_next];

		if (oldest && now - oldest < cf->max_snapshots_per_ns) {
			char msg[FL_REASON_MAX + 160];

			f->refused++;
			snprintf(msg, sizeof(msg), "snapshot refused: flight.max_snapshots allows %u per "
				 "%llu s and %u were taken (trigger: %s)", f->ntaken,
				 (unsigned long long)(cf->max_snapshots_per_ns / 1000000000ull),
				 f->ntaken, reason);
			/* a storm of error events must not become a storm of
			 * log lines: one a minute, the count in status */
			if (!f->refused_logged || now - f->refused_logged >= 60000000000ull) {
				d_log(LOG_WARNING, "flight recorder: %s (%llu refused so far)", msg,
				      (unsigned long long)f->refused);
				f->refused_logged = now;
			}
			reply_error(f, waiter, msg);
			return;
		}
		f->taken_at[f->taken_next] = now;
		f->taken_next = (f->taken_next + 1) % f->ntaken;
	}
	memset(p, 0, sizeof(*p));
	p->on = true;
	p->first_real = p->last_real = real;
	p->first_mono = now;
	p->due_mono = now + cf->post_ns;
	take_reason(p, reason);
	if (waiter)
		p->waiters[p->nwaiters++] = waiter;
	d_log(LOG_NOTICE, "flight recorder: snapshot triggered (%s); written in %llu ms", reason,
	      (unsigned long long)(cf->post_ns / 1000000));
	uv_timer_start(&f->due, fl_on_due, cf->post_ns / 1000000, 0);
}

/* A reason from shared memory: printable text only, whatever the writer
 * put there (or tore, racing with itself). */
static void ring_reason(const struct ring *r, char *out, size_t len)
{
	char raw[RINGLOG_RING_TRIGGER_REASON];
	size_t n = 0, o;

	memcpy(raw, (const void *)r->cons.hdr->trigger_reason, sizeof(raw));
	o = (size_t)snprintf(out, len, "ringlog_trigger() in pid %u (%s): ", r->c->pid, r->c->comm);
	if (o >= len)
		o = len - 1;
	for (; n < sizeof(raw) - 1 && raw[n] && o + 1 < len; n++)
		out[o++] = (unsigned char)raw[n] >= 0x20 && raw[n] != 0x7f ? raw[n] : '?';
	out[o] = '\0';
	if (!n)
		snprintf(out + o, len - o, "(no reason)");
}

/* Has ringlog_trigger() been called in r since we last looked? */
static void scan_ring(struct flight *f, struct ring *r)
{
	uint32_t n;

	if (r->dead || !r->mem || ringlog_grow(&f->trig_seen, &f->ntrig, r->id, sizeof(uint32_t)))
		return;
	/* First look: what a daemon before us acted on already (ring.h). */
	if (!f->trig_seen[r->id])
		f->trig_seen[r->id] = __atomic_load_n(&r->cons.hdr->trigger_seen, __ATOMIC_RELAXED) + 1u;
	/* Pairs with the release add in ringlog_trigger() (client/trigger.c). */
	n = __atomic_load_n(&r->cons.hdr->trigger_count, __ATOMIC_ACQUIRE);
	if (n + 1u != f->trig_seen[r->id]) {
		char why[FL_REASON_MAX];

		f->trig_seen[r->id] = n + 1u;
		__atomic_store_n(&r->cons.hdr->trigger_seen, n, __ATOMIC_RELAXED);
		ring_reason(r, why, sizeof(why));
		fl_trigger(f, why, 0);
	}
}

void fl_on_scan(uv_timer_t *t)
{
	struct flight *f = t->data;

	for (struct client *c = f->d->clients; c; c = c->next)
		for (struct ring *r = c->rings; r; r = r->next)
			scan_ring(f, r);
}

/* A writer's connection closed: a trigger it set just before (a crash
 * handler) is read now, while its rings are mapped; and a writer that went
 * without running its exit handlers crashed or was killed. */
void fl_closed(struct sink *s, struct client *c)
{
	struct flight *f = ((struct daemon *)s->ctx)->flight;
	unsigned active = 0;

	/* a tool's `ringlog snapshot` is answered by seq, or not at all once
	 * it is gone; the daemon closing its connections is not the writer
	 * going */
	if (!f || !c->writer || f->d->stopping)
		return;
	for (struct ring *r = c->rings; r; r = r->next) {
		struct ringlog_ring_hdr *h = r->cons.hdr;

		scan_ring(f, r);
		if (r->dead || !r->mem || !(h->compat_flags & RINGLOG_RING_MARKS_EXIT))
			continue;
		if (__atomic_load_n(&h->state, __ATOMIC_ACQUIRE) != RINGLOG_RING_FINISHED &&
		    !(__atomic_load_n(&h->exit_flags, __ATOMIC_ACQUIRE) & RINGLOG_RING_EXITING))
			active++;
	}
	if (active && !c->refused) {
		char why[FL_REASON_MAX];

		snprintf(why, sizeof(why), "writer pid %u (%s) went away with %u ring%s registered "
			 "(crashed or killed)", c->pid, c->comm, active, active == 1 ? "" : "s");
		fl_trigger(f, why, 0);
	}
}

/* ------------------------------------------------------------------------
 * Snapshots
 */

/* Delete the oldest snapshots until those left and `room` more bytes fit
 * flight.max_disk, keeping `keep` at least. */
static void trim_to(struct flight *f, uint64_t room, unsigned keep)
{
	char oldest[RINGLOG_CONFIG_PATH_MAX + 48];
	unsigned n;
	uint64_t bytes;

	while (snap_scan(f->dir, false, &n, &bytes, oldest, sizeof(oldest)) == 0 && n > keep &&
	       bytes + room > f->d->cfg.flight.max_disk) {
		if (file_remove(oldest) < 0) {
			d_log(LOG_WARNING, "flight recorder: cannot delete %s (snapshots over "
			      "flight.max_disk): %s", oldest, strerror(errno));
			break;
		}
		d_log(LOG_INFO, "flight recorder: deleted %s (snapshots over flight.max_disk)", oldest);
	}
	snap_scan(f->dir, false, &f->snaps, &f->snap_bytes, NULL, 0);
}

/* flight.max_disk after a write or a reload that lowered it: the oldest
 * go; the newest always stays */
void fl_trim_dir(struct flight *f)
{
	trim_to(f, 0, 1);
}

static void snap_work(uv_work_t *w)
{
	struct flight *f = w->data;

	snap_write(&f->job);
}

static void reply_written(struct flight *f)
{
	const struct fl_pending *p = &f->writing;
	json_t *reasons = json_array(), *j;
	char *s;

	for (uint32_t o = 0; o < p->len; o += (uint32_t)strlen(p->reasons + o) + 1)
		json_array_append_new(reasons, json_string(p->reasons + o));
	j = json_pack("{s:s,s:o,s:I,s:I,s:I}", "path", f->job.path, "reasons", reasons, "events",
		      (json_int_t)f->job.hdr->events, "bytes", (json_int_t)f->job.bytes,
		      "overwritten", (json_int_t)f->job.hdr->lost);
	s = j ? json_dumps(j, JSON_COMPACT) : NULL;
	for (unsigned i = 0; s && i < p->nwaiters; i++)
		for (struct client *c = f->d->clients; c; c = c->next)
			if (c->seq == p->waiters[i] && !c->gone)
				client_send(c, RINGLOG_CTL_SNAPSHOT, s, (uint32_t)strlen(s));
	free(s);
	json_decref(j);
}

static void snap_after(uv_work_t *w, int status)
{
	struct flight *f = w->data;
	struct snap_job *j = &f->job;

	(void)status;
	for (unsigned i = 0; i < f->npinned; i++)
		f->slots[f->pinned[i]].pinned--;
	if (j->err) {
		f->failed++;
		snprintf(f->last_error, sizeof(f->last_error), "cannot %s %s: %s", j->what, j->tmp,
			 strerror(-j->err));
		d_log(LOG_ERR, "flight recorder: snapshot not written: %s", f->last_error);
		for (unsigned i = 0; i < f->writing.nwaiters; i++) {
			char msg[sizeof(f->last_error) + 32];

			snprintf(msg, sizeof(msg), "snapshot not written: %s", f->last_error);
			reply_error(f, f->writing.waiters[i], msg);
		}
	} else {
		f->written++;
		f->last_write_ns = j->ns;
		f->last_bytes = j->bytes;
		snprintf(f->last_path, sizeof(f->last_path), "%s", j->path);
		d_log(LOG_NOTICE, "flight recorder: snapshot %s written: %llu events, %llu bytes in "
		      "%.1f ms", j->path, (unsigned long long)j->hdr->events,
		      (unsigned long long)j->bytes, (double)j->ns / 1e6);
		reply_written(f);
		fl_trim_dir(f);
	}
	file_aligned_free(j->hdr);
	file_aligned_free(f->lead);
	free(j->parts);
	j->hdr = NULL;
	j->parts = NULL;
	f->lead = NULL;
	f->busy = false;
	if (f->closing) {
		if (!f->handles)
			fl_free(f);
		return;
	}
	if (f->pend.on && !uv_is_active((uv_handle_t *)&f->due))
		uv_timer_start(&f->due, fl_on_due, 0, 0);
}

/* The chunk that opens a snapshot missing overwritten events: one LOSS
 * record with the count, at the time of the newest of them. */
static struct snap_part lead_loss(uint64_t events, uint64_t at_real)
{
	uint8_t *m = file_aligned(RINGLOG_SEG_ALIGN);
	struct ringlog_chunk_hdr *h = (struct ringlog_chunk_hdr *)(void *)m;
	struct ringlog_seg_rec r = { .len = sizeof(r) + sizeof(struct ringlog_seg_loss),
				     .type = RINGLOG_SEG_REC_LOSS };
	struct ringlog_seg_loss l = { .records = events, .reason = RINGLOG_LOSS_OVERWRITTEN };

	if (!m)
		return (struct snap_part){ 0 };
	memcpy(m + sizeof(*h), &r, sizeof(r));
	memcpy(m + sizeof(*h) + sizeof(r), &l, sizeof(l));
	h->magic = RINGLOG_CHUNK_MAGIC;
	h->body_len = r.len;
	h->lost = events;
	h->seq = 3;
	h->first_real_ns = h->last_real_ns = at_real;
	h->crc = ringlog_chunk_crc(h, m + sizeof(*h));
	return (struct snap_part){ m, RINGLOG_SEG_ALIGN };
}

void fl_take(struct flight *f)
{
	const struct ringlog_config_flight *cf = &f->d->cfg.flight;
	struct fl_pending *p = &f->pend;
	uint64_t from = p->first_real > cf->pre_ns ? p->first_real - cf->pre_ns : 0;
	uint64_t to = p->last_real + cf->post_ns, lost = 0, lost_at = 0, events = 0;
	uint64_t first = 0, last = 0;
	struct snap_job *j = &f->job;
	struct ringlog_seg_hdr *h;
	struct ringlog_seg_snap sn = { 0 };
	unsigned n = 0;

	fl_advance(f); /* what came until now is in the snapshot */
	for (unsigned i = 0; i < f->nslots; i++)
		if (f->over[i].events && f->over[i].last_real >= from) {
			ringlog_count_add(&lost, f->over[i].events);
			if (f->over[i].last_real > lost_at)
				lost_at = f->over[i].last_real;
		}
	ringlog_count_add(&lost, fl_older_since(f, from));
	ringlog_count_add(&lost, f->dropped_since);
	memset(j, 0, sizeof(*j));
	j->parts = calloc(f->nslots + 1, sizeof(*j->parts));
	j->hdr = file_aligned(RINGLOG_SEG_HEADER_SIZE);
	if (!f->pinned)
		f->pinned = calloc(f->nslots, sizeof(*f->pinned));
	if (!j->parts || !j->hdr || !f->pinned) {
		free(j->parts);
		file_aligned_free(j->hdr);
		j->hdr = NULL;
		j->parts = NULL;
		f->failed++;
		snprintf(f->last_error, sizeof(f->last_error), "out of memory");
		for (unsigned i = 0; i < p->nwaiters; i++)
			reply_error(f, p->waiters[i], "snapshot not written: ringlogd is out of memory");
		p->on = false;
		return;
	}
	if (lost) {
		j->parts[0] = lead_loss(lost, lost_at ? lost_at : from);
		if ((f->lead = (uint8_t *)j->parts[0].mem))
			n++;
	}
	f->npinned = 0;
	/* oldest first: the slot after the open one, round */
	for (unsigned k = 1; k <= f->nslots; k++) {
		unsigned i = (f->open + k) % f->nslots;
		struct fl_slot *s = &f->slots[i];

		if (!s->no || s->last_real < from || s->first_real > to)
			continue;
		s->pinned++;
		f->pinned[f->npinned++] = i;
		j->parts[n++] = (struct snap_part){ f->mem + (size_t)i * f->chunk, s->len };
		events += s->events;
		if (!first || s->first_real < first)
			first = s->first_real;
		if (s->last_real > last)
			last = s->last_real;
	}
	j->nparts = n;
	h = j->hdr;
	h->magic = RINGLOG_SEG_MAGIC;
	h->version = RINGLOG_SEG_VERSION;
	h->header_size = RINGLOG_SEG_HEADER_SIZE;
	h->compat_flags = RINGLOG_SEG_SNAPSHOT;
	h->incompat_flags = RINGLOG_SEG_PACKED; /* flight.c packs events */
	h->state = RINGLOG_SEG_CLOSED;
	/* the first trigger's wall clock: unique enough, and sorted by time */
	h->seq = p->first_real;
	h->created_real_ns = d_now(CLOCK_REALTIME);
	memcpy(h->boot_id, f->boot_id, 16);
	memcpy(h->host, f->host, sizeof(h->host));
	h->tsc_ref = f->d->clock.seg.tsc_ref;
	h->mono_ref = f->d->clock.seg.mono_ref;
	h->real_ref = f->d->clock.seg.real_ref;
	h->tsc_hz = f->d->clock.seg.tsc_hz;
	h->first_real_ns = first;
	h->last_real_ns = last;
	h->events = events;
	h->chunks = n;
	h->lost = lost;
	sn.nreasons = p->n;
	sn.trigger_real_ns = p->first_real;
	sn.from_real_ns = from;
	sn.to_real_ns = to;
	sn.overwritten = lost;
	sn.reasons_len = p->len;
	memcpy(sn.reasons, p->reasons, p->len);
	sn.crc = ringlog_seg_snap_crc(&sn);
	memcpy((uint8_t *)h + RINGLOG_SEG_SNAP_OFF, &sn, sizeof(sn));
	snprintf(j->path, sizeof(j->path), "%s/%016llx.rlseg", f->dir, (unsigned long long)h->seq);
	snprintf(j->tmp, sizeof(j->tmp), "%s/.%016llx.rlseg.tmp", f->dir, (unsigned long long)h->seq);
	/* Room for it before it is written, not after: the old ones and the
	 * new one were on disk together, past flight.max_disk by a whole
	 * snapshot (an outsider's test). The newest stays (its path was just
	 * given to whoever asked, and the new one may fail): each is at most
	 * flight.size, and config.c keeps flight.max_disk at twice that. */
	{
		uint64_t need = RINGLOG_SEG_HEADER_SIZE;

		for (unsigned i = 0; i < j->nparts; i++)
			need += j->parts[i].len;
		trim_to(f, need, 1);
	}
	f->writing = *p;
	f->dropped_since = 0;
	p->on = false;
	f->busy = true;
	f->work.data = f;
	if (uv_queue_work(f->d->loop, &f->work, snap_work, snap_after) < 0) {
		j->err = -EAGAIN;
		j->what = "queue";
		snap_after(&f->work, 0);
	}
}

void fl_on_due(uv_timer_t *t)
{
	struct flight *f = t->data;

	if (!f->pend.on)
		return;
	if (f->busy) { /* one at a time: the next waits for the one writing */
		uv_timer_start(t, fl_on_due, 50, 0);
		return;
	}
	if (file_mkdir(f->dir) < 0) {
		snprintf(f->last_error, sizeof(f->last_error), "cannot create %s", f->dir);
		d_log(LOG_ERR, "flight recorder: %s: snapshot not written", f->last_error);
		f->failed++;
		for (unsigned i = 0; i < f->pend.nwaiters; i++)
			reply_error(f, f->pend.waiters[i], f->last_error);
		f->pend.on = false;
		return;
	}
	fl_take(f);
}

/* The SNAPSHOT frame from a reader (ingest/ctl.c hands it over once every
 * ring is drained): answered when written, or with ERROR. -ENOTSUP: not a
 * SNAPSHOT, another sink's. */
int fl_request(struct sink *s, const struct sink_request *rq)
{
	struct flight *f = ((struct daemon *)s->ctx)->flight;
	struct client *c = rq->c;
	json_t *j, *r;
	char why[FL_REASON_MAX + 64];
	const char *reason = NULL;

	if (rq->type != RINGLOG_CTL_SNAPSHOT)
		return -ENOTSUP;
	j = json_loadb((const char *)rq->payload, rq->len, 0, NULL);
	if (!f) {
		json_decref(j);
		tool_error(c, "the flight recorder is off: set flight.size in ringlogd.json "
			      "(e.g. \"256M\") and reload");
		return 0;
	}
	r = json_is_object(j) ? json_object_get(j, "reason") : NULL;
	if (!json_is_object(j) || (r && (!json_is_string(r) || json_string_length(r) > FL_REASON_MAX - 40 ||
					 memchr(json_string_value(r), '\0', json_string_length(r))))) {
		json_decref(j);
		tool_error(c, "SNAPSHOT: expected {\"reason\": \"text of at most 160 bytes\"}");
		return 0;
	}
	reason = r ? json_string_value(r) : NULL;
	snprintf(why, sizeof(why), "ringlog snapshot by uid %u%s%s", c->uid, reason ? ": " : "",
		 reason ? reason : "");
	fl_trigger(f, why, c->seq);
	json_decref(j);
	return 0;
}

