/* daemon/sink/tail.c - live subscribers (`ringlog tail`).
 *
 * Filters run here, on the drain path, so a tail of one provider costs the
 * daemon nothing for the others' events. Matching events are framed as
 * segment records (proto/segment.h) in DATA frames: the tail tool decodes
 * them with the same decoder as segment files. A reader that does not keep
 * up only fills its own queue; past the limit its events are dropped and
 * counted, and it is told how many when it catches up.
 *
 * A tail asking for more than is enabled (a higher level, other keywords)
 * raises enablement for the providers it matches while it runs.
 *
 * `tail -n` reads the newest segments itself. So that they hold everything
 * emitted before the tail began, the daemon drains every ring, seals the
 * open chunk, and answers only once those writes have completed; live
 * events drained meanwhile are held back for that reader until then, so
 * its output has no gap, no duplicate and no reordering at the seam.
 */
#define _GNU_SOURCE
#include "daemon.h"
#include "log.h"
#include "clock.h"
#include "ingest/registry.h"
#include "sink/tail.h"

#include <errno.h>
#ifdef _WIN32
#include "compat-win.h" /* fnmatch */
#else
#include <fnmatch.h>
#endif
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "match.h"

#define TAIL_QUEUE_LIMIT (8u << 20)
/* A frame is queued once it holds this much, or at the end of the pass.
 * Kept far below the 1 MiB the queue's limit allows over TAIL_QUEUE_LIMIT,
 * so a frame begun below that limit is always taken. */
#define TAIL_BATCH (64u << 10)
/* A write that takes longer than this must not hold a tail back forever:
 * it answers anyway, and its backlog may then miss what was in flight. */
#define TAIL_FLUSH_WAIT_NS (2000000000ull)

struct tail {
	struct tail *next;
	struct client *c;
	struct ringlog_match m; /* the reader's selection, as `ringlog read`
	                         * judges stored events (proto/match.h) */
	uint32_t *writer_nev;   /* by writer id: metadata entries sent + 1 */
	uint32_t nwriters;
	uint8_t *stream_sent;   /* by stream id */
	uint32_t nstreams;
	/* The selection's verdict on everything but field values, which is
	 * fixed for a writer's event: by writer id, by event id, VERDICT_*.
	 * Globs are matched once per event type, not once per record. */
	struct verdicts { uint8_t *v; uint32_t n; } *verdicts;
	uint32_t nverdicts;
	uint64_t dropped;       /* events not sent since the last report */
	uint8_t *frame;         /* DATA frame being built; until answered,
	                         * every live record held back */
	size_t flen, fcap;
	uint64_t pending;       /* events in the frame */
	bool answered;          /* TAIL reply sent */
	uint64_t answer_after;  /* seal number every chunk before which must be
	                         * on disk before the reply */
	uint64_t segment;       /* where the store writes next, as last told */
	uint64_t start_ns;      /* CLOCK_MONOTONIC */
	uint64_t held;          /* events in the frame before the reply */
	json_t *ends;           /* "run_ends": this run's segments and where
	                         * they ended when it asked, [[seq, end], ...] */
};

static int rec(struct tail *t, uint16_t type, uint32_t id, const void *a, size_t alen,
	       const void *b, size_t blen)
{
	size_t len = ringlog_align_up8(sizeof(struct ringlog_seg_rec) + alen + blen);
	struct ringlog_seg_rec h = { .len = (uint32_t)len, .type = type, .id = id };

	if (t->flen + len > t->fcap) {
		size_t cap = t->fcap ? t->fcap * 2 : 4096;
		uint8_t *f;

		while (cap < t->flen + len)
			cap *= 2;
		if (!(f = realloc(t->frame, cap)))
			return -ENOMEM;
		t->frame = f;
		t->fcap = cap;
	}
	memset(t->frame + t->flen, 0, len);
	memcpy(t->frame + t->flen, &h, sizeof(h));
	if (alen)
		memcpy(t->frame + t->flen + sizeof(h), a, alen);
	if (blen)
		memcpy(t->frame + t->flen + sizeof(h) + alen, b, blen);
	t->flen += len;
	return 0;
}

/* Queue the frame built so far, whose LOSS record tells `told` drops (or
 * none). If the queue refuses it (out of memory), its events are counted
 * dropped, and the writers and streams it described are described again in
 * the next. */
static void flush_frame(struct daemon *d, struct tail *t, uint64_t told)
{
	if (!t->answered || !t->flen)
		return;
	if (client_send(t->c, RINGLOG_CTL_DATA, t->frame, (uint32_t)t->flen) == 0) {
		d->lost_reader += told;
	} else {
		t->dropped += t->pending + told;
		if (t->writer_nev)
			memset(t->writer_nev, 0, t->nwriters * sizeof(*t->writer_nev));
		if (t->stream_sent)
			memset(t->stream_sent, 0, t->nstreams);
	}
	t->flen = 0;
	t->pending = 0;
}

/* events more went into the frame. Before the reply, the frame keeps
 * growing instead. */
static void send_frame(struct daemon *d, struct tail *t, uint64_t events)
{
	if (!t->answered) {
		t->held += events;
		return;
	}
	t->pending += events;
	if (t->flen >= TAIL_BATCH)
		flush_frame(d, t, 0);
}

/* Once its queue is half empty, a reader is told what it missed. */
static void report_dropped(struct daemon *d, struct tail *t)
{
	struct ringlog_seg_loss l = { .records = t->dropped, .reason = RINGLOG_LOSS_READER };

	if (!t->dropped || !t->answered || t->c->gone || t->c->tx.len > TAIL_QUEUE_LIMIT / 2)
		return;
	if (rec(t, RINGLOG_SEG_REC_LOSS, 0, &l, sizeof(l), NULL, 0) < 0)
		return; /* out of memory: told later */
	t->dropped = 0;
	flush_frame(d, t, l.records);
}

uint64_t tail_lost_total(const struct daemon *d)
{
	uint64_t n = d->lost_reader;

	/* drops not yet told to their reader (it may never read again) */
	for (const struct tail *t = d->tails; t; t = t->next)
		n += t->dropped;
	return n;
}

/* A TAIL member given as one glob or an array of them. */
static int globs_load(char ***list, unsigned *n, json_t *v)
{
	size_t k = json_is_array(v) ? json_array_size(v) : json_is_string(v) ? 1 : 0;

	for (size_t i = 0; i < k; i++) {
		json_t *g = json_is_array(v) ? json_array_get(v, i) : v;

		if (json_is_string(g) && ringlog_match_add_glob(list, n, json_string_value(g)) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* "fields": {"NAME": "VALUE" or ["VALUE", ...], ...} */
static int fields_load(struct ringlog_match *m, json_t *o)
{
	const char *name;
	json_t *v;

	json_object_foreach(o, name, v) {
		size_t k = json_is_array(v) ? json_array_size(v) : 1;

		for (size_t i = 0; i < k; i++) {
			json_t *x = json_is_array(v) ? json_array_get(v, i) : v;

			if (json_is_string(x) &&
			    ringlog_match_add_field(m, name, strlen(name), json_string_value(x)) < 0)
				return -ENOMEM;
		}
	}
	return 0;
}

enum { VERDICT_UNKNOWN, VERDICT_YES, VERDICT_NO };

/* The same matcher as `ringlog read`'s. Fields are decoded only for a
 * tail that matches on them, and only once the cheap tests passed; the
 * cheap tests' verdict is kept per writer and event id. */
static bool matches(struct tail *t, const struct ring *r, uint16_t type, uint16_t aux,
		    const uint8_t *payload, uint32_t len, const struct ringlog_event_desc *e,
		    const char *provider)
{
	struct ringlog_value v[RINGLOG_FIELDS_MAX];
	size_t head = RINGLOG_EVENT_HDR_SIZE + (type == RINGLOG_REC_EVENT_ACT ? RINGLOG_ACTIVITY_SIZE : 0);
	uint32_t w = r->c->id;
	uint8_t *verdict = NULL;

	if (ringlog_grow(&t->verdicts, &t->nverdicts, w, sizeof(*t->verdicts)) == 0 &&
	    ringlog_grow(&t->verdicts[w].v, &t->verdicts[w].n, aux, 1) == 0)
		verdict = &t->verdicts[w].v[aux];
	if (!verdict || *verdict == VERDICT_UNKNOWN) {
		struct ringlog_match cheap = t->m;
		bool yes;

		cheap.nfields = 0;
		yes = ringlog_match_event(&cheap, provider, e, r->c->pid, r->c->uid, NULL);
		if (verdict)
			*verdict = yes ? VERDICT_YES : VERDICT_NO;
		if (!yes)
			return false;
	} else if (*verdict == VERDICT_NO) {
		return false;
	}
	if (!t->m.nfields)
		return true;
	if (e->nfields > RINGLOG_FIELDS_MAX || len < head ||
	    ringlog_event_decode(e, payload + head, len - head, v) < 0)
		return false; /* undecodable: the drain reports it */
	return ringlog_match_event(&t->m, provider, e, r->c->pid, r->c->uid, v);
}

/* Does the tail's provider selection take this provider (none: all)? */
static bool takes_provider(const struct tail *t, const char *name)
{
	if (!t->m.nproviders)
		return true;
	for (unsigned i = 0; name && i < t->m.nproviders; i++)
		if (!fnmatch(t->m.providers[i], name, 0))
			return true;
	return false;
}

static int describe(struct tail *t, struct ring *r)
{
	struct client *c = r->c;

	if (ringlog_grow(&t->writer_nev, &t->nwriters, c->id, sizeof(uint32_t)) ||
	    ringlog_grow(&t->stream_sent, &t->nstreams, r->id, 1))
		return -ENOMEM;
	if (!t->writer_nev[c->id]) {
		struct ringlog_seg_writer w = { .pid = c->pid, .uid = c->uid, .gid = c->gid,
			.exe_len = c->exe ? (uint32_t)strlen(c->exe) : 0,
			.start_real_ns = c->start_real_ns };

		memcpy(w.comm, c->comm, sizeof(w.comm));
		rec(t, RINGLOG_SEG_REC_WRITER, c->id, &w, sizeof(w), c->exe, w.exe_len);
		for (uint32_t id = 1; id < c->meta.nprov; id++) {
			uint8_t e[RINGLOG_META_PROVIDER_ENTRY_MAX];

			if (c->meta.providers[id])
				rec(t, RINGLOG_SEG_REC_META, c->id, e,
				    ringlog_meta_provider_entry(e, (uint16_t)id, c->meta.providers[id]),
				    NULL, 0);
		}
		t->writer_nev[c->id] = 1; /* event ids start at 1 */
	}
	/* Ids are dense: stop at the first one not defined yet. */
	for (uint32_t id = t->writer_nev[c->id]; id < c->meta.nev && c->meta.events[id]; id++) {
		const struct ringlog_event_desc *e = c->meta.events[id];

		rec(t, RINGLOG_SEG_REC_META, c->id, e->raw, e->raw_len, NULL, 0);
		t->writer_nev[c->id] = id + 1;
	}
	if (!t->stream_sent[r->id]) {
		struct ringlog_seg_stream s = { .writer = c->id, .tid = r->tid, .clock = r->clock,
						.ring_id = r->ring_id };

		rec(t, RINGLOG_SEG_REC_STREAM, r->id, &s, sizeof(s), NULL, 0);
		t->stream_sent[r->id] = 1;
	}
	return 0;
}

/* n records of one kind, back to back in the ring (total bytes apart):
 * the drain hands them over as a run (sink_ops.record_run). A tail that
 * does not match on fields gives every record of the run the verdict of
 * the first, so a tail of one event skips the runs of others at once
 * rather than record by record. */
static void tail_event_run(struct daemon *d, struct ring *r, uint16_t type, uint16_t aux,
			   const uint8_t *payload, uint32_t len, uint32_t n,
			   const struct ringlog_event_desc *e)
{
	const char *provider = ringlog_meta_provider(&r->c->meta, e->provider);
	struct ringlog_rec_hdr rh = { .len = len, .type = type, .aux = aux };
	size_t total = ringlog_rec_total(len);

	for (struct tail *t = d->tails; t; t = t->next) {
		for (uint32_t i = 0; i < n && !t->c->gone; i++) {
			const uint8_t *p = payload + i * total;

			if (!matches(t, r, type, aux, p, len, e, provider)) {
				if (!t->m.nfields)
					break; /* nor will the rest */
				continue;
			}
			if (t->c->tx.len > TAIL_QUEUE_LIMIT || t->flen > TAIL_QUEUE_LIMIT) {
				t->dropped++;
				continue;
			}
			report_dropped(d, t);
			if (describe(t, r) < 0) {
				t->dropped++;
				continue;
			}
			/* A SPAN holding one ring record: rec() pads it to 8
			 * bytes, which is exactly ringlog_rec_total(len). */
			rec(t, RINGLOG_SEG_REC_SPAN, r->id, &rh, sizeof(rh), p, len);
			send_frame(d, t, 1);
		}
	}
}

/* A loss goes to the tails whose writer filters (pid, uid) it passes and,
 * for a --provider tail, only when the program attributed it to a matching
 * provider (ringlog(1)): --event, --level and --keyword select events,
 * and a loss is not known to be of any. */
static void tail_loss(struct daemon *d, struct ring *r, const struct ringlog_seg_loss *l)
{
	const char *provider = l->provider ? ringlog_meta_provider(&r->c->meta, l->provider) : NULL;

	for (struct tail *t = d->tails; t; t = t->next) {
		if (t->c->gone || !ringlog_match_loss(&t->m, provider, true, r->c->pid, r->c->uid))
			continue;
		if (describe(t, r) < 0)
			continue;
		rec(t, RINGLOG_SEG_REC_LOSS, r->id, l, sizeof(*l), NULL, 0);
		send_frame(d, t, 0);
	}
}

/* A tail asking for more than is enabled raises it while it runs. */
static void sink_raise(struct sink *s, const char *provider, uint64_t kw[8])
{
	struct daemon *d = s->ctx;

	for (struct tail *t = d->tails; t; t = t->next) {
		if (t->c->gone || !takes_provider(t, provider))
			continue;
		for (unsigned l = t->m.level_min; l <= t->m.level_max && l <= 5; l++)
			kw[l] |= t->m.keyword ? t->m.keyword : ~0ull;
	}
}

static void tail_free(struct tail *t)
{
	struct daemon *d = t->c->d;

	for (struct tail **pp = &d->tails; *pp; pp = &(*pp)->next)
		if (*pp == t) {
			*pp = t->next;
			d->ntails--;
			break;
		}
	sink_want(&d->sinks, &d->tail_sink, d->ntails > 0);
	ringlog_match_free(&t->m);
	free(t->writer_nev);
	free(t->stream_sent);
	for (uint32_t i = 0; i < t->nverdicts; i++)
		free(t->verdicts[i].v);
	free(t->verdicts);
	free(t->frame);
	json_decref(t->ends);
	free(t);
}

/* The reply, the clock, then what was held back, to every tail whose
 * backlog is on disk (or that waited too long). */
static void tail_flushed(struct daemon *d)
{
	uint64_t now = 0;

	for (struct tail *t = d->tails; t; t = t->next) {
		struct client *c = t->c;

		if (t->answered || c->gone)
			continue;
		if (d->tail_released < t->answer_after) {
			if (!now)
				now = d_now(CLOCK_MONOTONIC);
			if (now - t->start_ns < TAIL_FLUSH_WAIT_NS)
				continue;
			d_log(LOG_WARNING, "tail (pid %llu): segment writes still in flight after 2 s; its "
			      "backlog may miss them", (unsigned long long)c->pid);
		}
		json_t *r = json_pack("{s:s,s:I,s:I}", "storage_dir", d->cfg.storage_dir, "segment",
				      (json_int_t)t->segment, "run_first_segment",
				      (json_int_t)d->st->run_first_seq);

		if (r && t->ends)
			json_object_set(r, "ends", t->ends);
		char *s = r ? json_dumps(r, JSON_COMPACT) : NULL;
		struct ringlog_seg_rec h = { .len = sizeof(h) + sizeof(d->clock.seg),
					     .type = RINGLOG_SEG_REC_CLOCK };
		uint8_t b[sizeof(h) + sizeof(d->clock.seg)];

		if (s)
			client_send(c, RINGLOG_CTL_TAIL, s, (uint32_t)strlen(s));
		free(s);
		json_decref(r);
		memcpy(b, &h, sizeof(h));
		memcpy(b + sizeof(h), &d->clock.seg, sizeof(d->clock.seg));
		client_send(c, RINGLOG_CTL_DATA, b, sizeof(b));
		t->answered = true;
		send_frame(d, t, t->held);
		t->held = 0;
		flush_frame(d, t, 0);
	}
}

/* TAIL from a tool, once the rings are drained and the open chunk sealed
 * (the backlog): 0 (a bad request gets an ERROR frame) or -ENOMEM. */
static int tail_start(struct client *c, const uint8_t *p, uint32_t len, uint64_t sealed,
		      uint64_t segment)
{
	struct daemon *d = c->d;
	json_error_t jerr;
	json_t *j = json_loadb((const char *)p, len, 0, &jerr), *v;
	struct tail *t;
	bool oom, run_ends;

	if (!j || !json_is_object(j) || c->tail || c->writer) {
		json_decref(j);
		tool_error(c, "TAIL request must be one JSON object, once per connection");
		return 0;
	}
	if (!(t = calloc(1, sizeof(*t)))) {
		json_decref(j);
		return -ENOMEM;
	}
	t->c = c;
	ringlog_match_init(&t->m);
	t->m.level_max = 4; /* what is enabled up to info, unless asked */
	oom = globs_load(&t->m.providers, &t->m.nproviders, json_object_get(j, "provider")) ||
	      globs_load(&t->m.events, &t->m.nevents, json_object_get(j, "event")) ||
	      fields_load(&t->m, json_object_get(j, "fields"));
	if ((v = json_object_get(j, "level")) && json_is_integer(v))
		t->m.level_max = (unsigned)json_integer_value(v);
	if ((v = json_object_get(j, "level_min")) && json_is_integer(v))
		t->m.level_min = (unsigned)json_integer_value(v);
	if ((v = json_object_get(j, "keyword")) && json_is_integer(v))
		t->m.keyword = (uint64_t)json_integer_value(v);
	if ((v = json_object_get(j, "pid")) && json_is_integer(v))
		t->m.pid = json_integer_value(v);
	if ((v = json_object_get(j, "uid")) && json_is_integer(v))
		t->m.uid = json_integer_value(v);
	run_ends = json_is_true(json_object_get(j, "run_ends"));
	json_decref(j);
	if (oom || t->m.level_max < 1 || t->m.level_max > 5 || t->m.level_min < 1 ||
	    t->m.level_min > t->m.level_max) {
		ringlog_match_free(&t->m);
		free(t);
		tool_error(c, oom ? "out of memory" : "level must be 1..5 and level_min 1..level");
		return 0;
	}
	/* A tail following again after a restart reads what this run stored
	 * before it asked, up to here: what is stored after is live (read to
	 * the files' ends, a chunk written meanwhile was shown twice) */
	if (run_ends && (t->ends = json_array()))
		for (struct segfile *f = d->st->segs; f; f = f->next)
			if (f->seq >= d->st->run_first_seq)
				json_array_append_new(t->ends, json_pack("[I,I]", (json_int_t)f->seq,
					(json_int_t)(f->current ? f->off : f->bytes)));
	/* Everything emitted before this point went to the segments (the
	 * backlog: ctl.c drained every ring and sealed the open chunk before
	 * the request): answer once it is written. Events stored from here on
	 * are live. */
	c->tail = t;
	c->tx.limit = TAIL_QUEUE_LIMIT + (1u << 20);
	t->answer_after = sealed;
	t->segment = segment;
	t->start_ns = d_now(CLOCK_MONOTONIC);
	t->next = d->tails;
	d->tails = t;
	d->ntails++;
	sink_want(&d->sinks, &d->tail_sink, true);
	reg_enable_recompute(d);
	tail_flushed(d);
	return 0;
}

/* The end of a drain pass, and the timer: what was batched goes out, and
 * a reader whose queue has room again hears of its drops. */
static void tail_send_all(struct daemon *d)
{
	for (struct tail *t = d->tails; t; t = t->next) {
		if (t->c->gone)
			continue;
		flush_frame(d, t, 0);
		report_dropped(d, t);
	}
}

bool tail_sending(struct daemon *d)
{
	tail_send_all(d);
	for (struct tail *t = d->tails; t; t = t->next)
		if (!t->c->gone && t->answered && (t->flen || t->c->tx.len))
			return true;
	return false;
}

void tail_tick(struct daemon *d)
{
	if (!d->tails)
		return;
	tail_flushed(d); /* those whose backlog write is slow */
	tail_send_all(d);
}

/* The sink: events and losses as they are stored, and the backlog's
 * answer once the chunks sealed before a tail began are written. */
static void sink_record(struct sink *s, const struct sink_record *rec)
{
	tail_event_run(s->ctx, rec->r, rec->type, rec->id, rec->payload, rec->len, 1, rec->e);
}

static void sink_record_run(struct sink *s, const struct sink_record *first, uint32_t n)
{
	tail_event_run(s->ctx, first->r, first->type, first->id, first->payload, first->len, n,
		       first->e);
}

static void sink_loss(struct sink *s, struct ring *r, const struct ringlog_seg_loss *l)
{
	tail_loss(s->ctx, r, l);
}

static void sink_chunk(struct sink *s, const struct sink_chunk *c)
{
	struct daemon *d = s->ctx;

	d->tail_released = c->seal_no + 1; /* published in sealing order */
	for (struct tail *t = d->tails; t; t = t->next)
		t->segment = c->next_segment;
	tail_tick(d);
}

static void sink_passed(struct sink *s)
{
	tail_send_all(s->ctx);
}

static int on_request(struct sink *s, const struct sink_request *rq)
{
	(void)s;
	if (rq->type != RINGLOG_CTL_TAIL)
		return -ENOTSUP;
	return tail_start(rq->c, rq->payload, rq->len, rq->sealed, rq->segment);
}

static void on_closed(struct sink *s, struct client *c)
{
	(void)s;
	if (!c->tail)
		return;
	tail_free(c->tail);
	c->tail = NULL;
	reg_enable_recompute(c->d);
}

const struct sink_ops tail_sink_ops = { .name = "tail", .record = sink_record,
					.record_run = sink_record_run, .loss = sink_loss,
					.chunk = sink_chunk, .passed = sink_passed, .raise = sink_raise,
					.request = on_request, .closed = on_closed };
