/* tests/test-export-perfetto.c - `ringlog export --format perfetto` (issue
 * 25) against a store a real daemon wrote: every field type, non-ASCII and
 * empty strings, blobs, start/stop pairs (nested on a thread, and by
 * activity id across two threads), a stop that closes nothing, several
 * processes and threads, and ring overflows.
 *
 * The file must decode with `protoc --decode=perfetto.protos.Trace` against
 * proto/perfetto/ringlog-perfetto-subset.proto with nothing on stderr and
 * no unknown field (protoc prints those as bare numbers). A walker then
 * reads protoc's text, not our bytes, and checks the trace as
 * trace_processor would take it against `ringlog read --json`:
 *   - the first packet is a ClockSnapshot making REALTIME the trace clock;
 *   - each sequence's first packet clears incremental state and sets the
 *     REALTIME clock and its track as defaults, every later one needs
 *     incremental state; every iid used was interned on its sequence
 *     before (or in the same packet), and no iid ever names two strings;
 *   - every track used was described before: thread tracks (pid, tid)
 *     under their process track (pid, comm), activity tracks under theirs,
 *     counter tracks under the thread's;
 *   - every event: time, provider (category), name, pid, tid and every
 *     field value as read prints them; slices' ends where they belong;
 *   - every loss: an instant "N events lost: ..." on its thread at read's
 *     time, and the thread's loss counter ends at read's total.
 * --max-size: several files, each decoding and walking alone, the events
 * split between them exactly once. Negative: a damaged file is refused by
 * protoc, and a field missing from the .proto shows up as unknown.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>

#include <ctype.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"
#include "live.h"

TestSuite(export_perfetto, .fini = th_check_leaks, .timeout = 600);

#define CLI RINGLOG_CLI_PATH
#define PROTO_DIR RINGLOG_SOURCE_DIR "/proto/perfetto"
#define PROTO_FILE "ringlog-perfetto-subset.proto"

static void need_protoc(void)
{
	char out[256];

	if (live_run("protoc --version 2>&1", out, sizeof(out)) != 0)
		cr_skip_test("protoc is not installed (apt-get install protobuf-compiler; "
			     "scripts/test.sh installs it as root)");
}

/* ------------------------------------------------------------------------
 * Small containers.
 */
struct strs {
	char **v;
	size_t n, cap;
};

static void strs_add(struct strs *l, char *s)
{
	if (l->n == l->cap) {
		l->v = realloc(l->v, (l->cap = l->cap ? l->cap * 2 : 1024) * sizeof(char *));
		cr_assert(l->v);
	}
	l->v[l->n++] = s;
}

static void strs_free(struct strs *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

static int cmp_s(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void strs_sort(struct strs *l)
{
	if (l->n) /* qsort's base may not be NULL */
		qsort(l->v, l->n, sizeof(char *), cmp_s);
}

static char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	cr_assert(vasprintf(&s, fmt, ap) >= 0);
	va_end(ap);
	return s;
}

/* A string grown by appending. */
static void cat(char **s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void cat(char **s, const char *fmt, ...)
{
	va_list ap;
	char *t, *n;

	va_start(ap, fmt);
	cr_assert(vasprintf(&t, fmt, ap) >= 0);
	va_end(ap);
	n = xasprintf("%s%s", *s ? *s : "", t);
	free(*s);
	free(t);
	*s = n;
}

/* The names whose JSON value is a time (ISO text) or a double spelled as
 * a string ("nan"): the tests choose them. */
static bool is_time_name(const char *n)
{
	return !strcmp(n, "when") || !strcmp(n, "t");
}

static uint64_t iso_ns(const char *s)
{
	struct tm tm = { 0 };
	unsigned long ns = 0;

	cr_assert(sscanf(s, "%d-%d-%dT%d:%d:%d.%9luZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
			 &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &ns) == 7, "time field %s", s);
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	return (uint64_t)timegm(&tm) * 1000000000ull + ns;
}

static char *canon_double(double d)
{
	if (isnan(d))
		return strdup("nan");
	if (isinf(d))
		return strdup(d > 0 ? "inf" : "-inf");
	return xasprintf("%.17g", d);
}

/* ------------------------------------------------------------------------
 * What read --json says: events as canonical lines, losses.
 *   TIME|PROVIDER|EVENT|PID|TID|COMM|name=value;...
 */
struct want_loss {
	uint32_t pid, tid;
	uint64_t t, n;
	bool used;
};

struct want {
	struct strs ev;
	struct want_loss *loss;
	size_t nloss;
	struct strs starts;  /* "EVENT|ACTIVITY" of start events */
	size_t nstop;
};

static char *json_value(const char *name, json_t *v)
{
	if (json_is_true(v) || json_is_false(v))
		return strdup(json_is_true(v) ? "true" : "false");
	if (json_is_integer(v))
		return xasprintf("%" PRId64, (int64_t)json_integer_value(v));
	if (json_is_real(v))
		return canon_double(json_real_value(v));
	if (!strcmp(json_string_value(v), "U64MAX"))
		return strdup("18446744073709551615");
	if (is_time_name(name))
		return xasprintf("%" PRIu64, iso_ns(json_string_value(v)));
	return strdup(json_string_value(v));
}

static void read_want(const char *args, struct want *w)
{
	char *cmd = xasprintf(CLI " read --json --no-pager %s 2>/dev/null", args);
	FILE *p = popen(cmd, "r");
	char *line = NULL;
	size_t cap = 0;

	cr_assert(p);
	memset(w, 0, sizeof(*w));
	while (getline(&line, &cap, p) > 0) {
		/* jansson takes integers up to INT64_MAX: the one u64 above it
		 * the tests emit goes through as a marked string */
		char *big = strstr(line, ":18446744073709551615");
		json_error_t je;
		json_t *o, *f, *v;
		const char *k;

		if (big)
			memcpy(big, ":\"U64MAX\"            ", 21);
		o = json_loads(line, 0, &je);
		cr_assert(o, "read --json line is not JSON: %s (%s)", line, je.text);
		if (!strcmp(json_string_value(json_object_get(o, "type")), "event")) {
			const char *op = json_string_value(json_object_get(o, "opcode"));
			json_t *act = json_object_get(o, "activity");
			char *s = xasprintf("%" PRIu64 "|%s|%s|%" PRId64 "|%" PRId64 "|%s|",
					    (uint64_t)json_integer_value(json_object_get(o, "time_ns")),
					    json_string_value(json_object_get(o, "provider")),
					    json_string_value(json_object_get(o, "event")),
					    (int64_t)json_integer_value(json_object_get(o, "pid")),
					    (int64_t)json_integer_value(json_object_get(o, "tid")),
					    json_string_value(json_object_get(o, "comm")));

			f = json_object_get(o, "fields");
			json_object_foreach(f, k, v) {
				char *val = json_value(k, v);

				cat(&s, "%s=%s;", k, val);
				free(val);
			}
			strs_add(&w->ev, s);
			if (!strcmp(op, "start"))
				strs_add(&w->starts, xasprintf("%s|%s",
					 json_string_value(json_object_get(o, "event")),
					 act ? json_string_value(act) : ""));
			w->nstop += !strcmp(op, "stop");
		} else {
			w->loss = realloc(w->loss, (w->nloss + 1) * sizeof(*w->loss));
			w->loss[w->nloss++] = (struct want_loss){
				(uint32_t)json_integer_value(json_object_get(o, "pid")),
				(uint32_t)json_integer_value(json_object_get(o, "tid")),
				(uint64_t)json_integer_value(json_object_get(o, "time_ns")),
				(uint64_t)json_integer_value(json_object_get(o, "lost")), false };
		}
		json_decref(o);
	}
	free(line);
	pclose(p);
	free(cmd);
}

static void want_free(struct want *w)
{
	strs_free(&w->ev);
	strs_free(&w->starts);
	free(w->loss);
}

/* ------------------------------------------------------------------------
 * The walker over protoc's text.
 */
enum { K_CAT, K_NAME, K_ANN, K_N };

struct iidmap {                /* iid -> string, dense enough for an array */
	char **s;
	size_t n;
};

static const char *iid_get(const struct iidmap *m, uint64_t iid)
{
	return iid < m->n ? m->s[iid] : NULL;
}

static void iid_put(struct iidmap *m, uint64_t iid, const char *s)
{
	cr_assert_lt(iid, 1u << 24, "iid %" PRIu64 " is not dense", iid);
	if (iid >= m->n) {
		size_t n = (size_t)iid * 2 + 16;

		m->s = realloc(m->s, n * sizeof(char *));
		cr_assert(m->s);
		memset(m->s + m->n, 0, (n - m->n) * sizeof(char *));
		m->n = n;
	}
	free(m->s[iid]);
	m->s[iid] = strdup(s);
}

static void iid_free(struct iidmap *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->s[i]);
	free(m->s);
	memset(m, 0, sizeof(*m));
}

struct track {
	uint64_t uuid, parent;
	enum { T_PROCESS, T_THREAD, T_COUNTER, T_NAMED } kind;
	int64_t pid, tid;
	char *name;
	int64_t last_counter;
	bool has_counter;
	unsigned depth;          /* thread tracks: slices open */
};

struct wseq {
	uint32_t id;
	bool started;
	uint64_t def_track;
	struct iidmap in[K_N];
};

struct ann {
	uint64_t name_iid;
	char kind[32];
	char *val;
};

/* The packet being read. */
struct pkt {
	uint64_t ts, seq, flags, clock_id;
	bool has_ts, has_defaults, has_cs, primary_realtime, cs_realtime;
	uint64_t def_clock, def_track;
	/* interned_data */
	struct { int kind; uint64_t iid; char *name; } in[512];
	size_t nin;
	/* track_descriptor */
	bool td, td_process, td_thread, td_counter;
	struct track t;
	/* track_event */
	bool te, te_track;
	uint64_t type, track, cat, name_iid;
	char *name;
	int64_t counter;
	struct ann ann[300];
	size_t nann;
	int ncat;
};

struct walk {
	const char *file;
	struct wseq *seq;
	size_t nseq;
	struct track *tr;
	size_t ntr;
	struct iidmap global[K_N];     /* no iid names two strings, over files */
	size_t packets;
	uint64_t begins, ends, instants;
	struct strs ev;                /* canonical lines, as read's */
	struct strs starts;            /* "EVENT|ACTIVITY" of begins */
	struct { uint32_t pid, tid; uint64_t t, n; } *loss;
	size_t nloss;
	struct { uint32_t pid, tid; int64_t max; } *ctr; /* per thread */
	size_t nctr;
	bool stray_instant;            /* Test.Types Stray: a stop made instant */
	bool req_async;                /* Request slices on an activity track */
	bool nested_thread;            /* Outer/Inner slices on the thread track */
};

static struct track *track_of(struct walk *w, uint64_t uuid)
{
	for (size_t i = 0; i < w->ntr; i++)
		if (w->tr[i].uuid == uuid)
			return &w->tr[i];
	return NULL;
}

static struct wseq *seq_of(struct walk *w, uint32_t id)
{
	for (size_t i = 0; i < w->nseq; i++)
		if (w->seq[i].id == id)
			return &w->seq[i];
	w->seq = realloc(w->seq, (w->nseq + 1) * sizeof(*w->seq));
	cr_assert(w->seq);
	memset(&w->seq[w->nseq], 0, sizeof(*w->seq));
	w->seq[w->nseq].id = id;
	return &w->seq[w->nseq++];
}

/* protoc's C-escaped string (between its quotes) back to bytes. */
static char *unescape(const char *s)
{
	char *o = malloc(strlen(s) + 1), *q = o;

	cr_assert(o);
	cr_assert_eq(*s, '"', "not a string: %s", s);
	for (s++; *s && *s != '"'; s++) {
		if (*s != '\\') {
			*q++ = *s;
			continue;
		}
		s++;
		if (*s >= '0' && *s <= '7') {
			int v = 0, k = 0;

			while (k < 3 && *s >= '0' && *s <= '7')
				v = v * 8 + (*s++ - '0'), k++;
			s--;
			*q++ = (char)v;
		} else if (*s == 'x') {
			unsigned v;

			sscanf(s + 1, "%2x", &v);
			s += 2;
			*q++ = (char)v;
		} else {
			*q++ = *s == 'n' ? '\n' : *s == 't' ? '\t' : *s == 'r' ? '\r' : *s;
		}
	}
	*q = 0;
	return o;
}

static uint64_t u64(const char *v)
{
	return strtoull(v, NULL, 10);
}

/* One "key: value" line inside the context named ctx (its parent: up). */
static void on_field(struct pkt *p, const char *up, const char *ctx, const char *k,
		     const char *v)
{
	if (!strcmp(ctx, "packet")) {
		if (!strcmp(k, "timestamp"))
			p->ts = u64(v), p->has_ts = true;
		else if (!strcmp(k, "trusted_packet_sequence_id"))
			p->seq = u64(v);
		else if (!strcmp(k, "sequence_flags"))
			p->flags = u64(v);
		else if (!strcmp(k, "timestamp_clock_id"))
			p->clock_id = u64(v);
		else
			cr_assert_fail("unexpected packet field %s", k);
	} else if (!strcmp(ctx, "trace_packet_defaults")) {
		p->def_clock = u64(v);
	} else if (!strcmp(ctx, "track_event_defaults")) {
		p->def_track = u64(v);
	} else if (!strcmp(ctx, "clocks")) {
		if (!strcmp(k, "clock_id") && u64(v) == 1)
			p->cs_realtime = true;
	} else if (!strcmp(ctx, "clock_snapshot")) {
		p->primary_realtime = !strcmp(k, "primary_trace_clock") &&
				      !strcmp(v, "BUILTIN_CLOCK_REALTIME");
	} else if (!strcmp(up, "interned_data")) {
		if (!strcmp(k, "iid"))
			p->in[p->nin].iid = u64(v);
		else
			p->in[p->nin].name = unescape(v);
	} else if (!strcmp(ctx, "track_descriptor")) {
		if (!strcmp(k, "uuid"))
			p->t.uuid = u64(v);
		else if (!strcmp(k, "parent_uuid"))
			p->t.parent = u64(v);
		else if (!strcmp(k, "name"))
			p->t.name = unescape(v);
	} else if (!strcmp(ctx, "process")) {
		if (!strcmp(k, "pid"))
			p->t.pid = (int64_t)u64(v);
		else if (!strcmp(k, "process_name"))
			p->t.name = unescape(v);
	} else if (!strcmp(ctx, "thread")) {
		if (!strcmp(k, "pid"))
			p->t.pid = (int64_t)u64(v);
		else if (!strcmp(k, "tid"))
			p->t.tid = (int64_t)u64(v);
	} else if (!strcmp(ctx, "track_event")) {
		if (!strcmp(k, "type"))
			p->type = !strcmp(v, "TYPE_SLICE_BEGIN") ? 1 : !strcmp(v, "TYPE_SLICE_END") ? 2 :
				  !strcmp(v, "TYPE_INSTANT") ? 3 : !strcmp(v, "TYPE_COUNTER") ? 4 : 0;
		else if (!strcmp(k, "track_uuid"))
			p->track = u64(v), p->te_track = true;
		else if (!strcmp(k, "category_iids"))
			p->cat = u64(v), p->ncat++;
		else if (!strcmp(k, "name_iid"))
			p->name_iid = u64(v);
		else if (!strcmp(k, "name"))
			p->name = unescape(v);
		else if (!strcmp(k, "counter_value"))
			p->counter = strtoll(v, NULL, 10);
	} else if (!strcmp(ctx, "debug_annotations")) {
		struct ann *a = &p->ann[p->nann];

		if (!strcmp(k, "name_iid")) {
			a->name_iid = u64(v);
		} else {
			snprintf(a->kind, sizeof(a->kind), "%s", k);
			a->val = v[0] == '"' ? unescape(v) : strdup(v);
		}
	}
}

static char *ann_value(const struct ann *a)
{
	if (!strcmp(a->kind, "pointer_value"))
		return xasprintf("0x%llx", strtoull(a->val, NULL, 10));
	if (!strcmp(a->kind, "double_value"))
		return canon_double(strtod(a->val, NULL));
	return strdup(a->val);
}

static void pkt_free(struct pkt *p)
{
	for (size_t i = 0; i < p->nin; i++)
		free(p->in[i].name);
	for (size_t i = 0; i < p->nann; i++)
		free(p->ann[i].val);
	free(p->t.name);
	free(p->name);
}

static const char *need_iid(struct walk *w, struct wseq *s, int kind, uint64_t iid)
{
	const char *n = iid_get(&s->in[kind], iid);

	cr_assert(n, "%s packet %zu: iid %" PRIu64 " (kind %d) used on sequence %u before it "
		  "was interned there", w->file, w->packets, iid, kind, s->id);
	return n;
}

/* A whole packet: check it against what came before, and record it. */
static void on_packet(struct walk *w, struct pkt *p)
{
	struct wseq *s;
	struct track *t;

	w->packets++;
	if (w->packets == 1) {
		cr_assert(p->has_cs && p->primary_realtime && p->cs_realtime,
			  "%s: the first packet is not a ClockSnapshot making REALTIME the trace "
			  "clock", w->file);
		return;
	}
	cr_assert(!p->has_cs, "%s: a second ClockSnapshot", w->file);
	cr_assert_gt(p->seq, 1u, "%s packet %zu: sequence %" PRIu64, w->file, w->packets, p->seq);
	s = seq_of(w, (uint32_t)p->seq);
	if (!s->started) {
		cr_assert_eq(p->flags, 1u, "%s packet %zu: the first of sequence %u has flags %" PRIu64
			     ", not SEQ_INCREMENTAL_STATE_CLEARED", w->file, w->packets, s->id, p->flags);
		cr_assert(p->has_defaults && p->def_clock == 1 && p->def_track,
			  "%s: sequence %u starts without its defaults", w->file, s->id);
		/* one sequence per writer thread: no two share a track */
		for (size_t i = 0; i < w->nseq; i++)
			cr_assert(&w->seq[i] == s || !w->seq[i].started ||
				  w->seq[i].def_track != p->def_track,
				  "%s: sequences %u and %u both stand for track %" PRIu64, w->file,
				  w->seq[i].id, s->id, p->def_track);
		s->started = true;
		s->def_track = p->def_track;
	} else {
		cr_assert_eq(p->flags, 2u, "%s packet %zu: flags %" PRIu64 ", not "
			     "SEQ_NEEDS_INCREMENTAL_STATE", w->file, w->packets, p->flags);
		cr_assert(!p->has_defaults);
	}
	for (size_t i = 0; i < p->nin; i++) {
		const char *g = iid_get(&w->global[p->in[i].kind], p->in[i].iid);

		cr_assert(p->in[i].name && p->in[i].iid);
		cr_assert(!g || !strcmp(g, p->in[i].name), "iid %" PRIu64 " names \"%s\" and \"%s\"",
			  p->in[i].iid, g, p->in[i].name);
		iid_put(&w->global[p->in[i].kind], p->in[i].iid, p->in[i].name);
		iid_put(&s->in[p->in[i].kind], p->in[i].iid, p->in[i].name);
	}
	if (p->td) {
		struct track *par = p->t.parent ? track_of(w, p->t.parent) : NULL;

		cr_assert(p->t.uuid);
		p->t.kind = p->td_process ? T_PROCESS : p->td_thread ? T_THREAD :
			    p->td_counter ? T_COUNTER : T_NAMED;
		if (p->t.parent)
			cr_assert(par, "%s: track %" PRIu64 " under %" PRIu64 ", not described before",
				  w->file, p->t.uuid, p->t.parent);
		if (p->t.kind == T_THREAD)
			cr_assert(par && par->kind == T_PROCESS && par->pid == p->t.pid,
				  "thread track %" PRId64 "/%" PRId64 " is not under its process's",
				  p->t.pid, p->t.tid);
		if (p->t.kind == T_COUNTER)
			/* a loss whose writer is unknown (its description was in
			 * a damaged chunk) counts on the unknown writers' track */
			cr_assert(par && (par->kind == T_THREAD ||
					  (par->kind == T_NAMED && par->name &&
					   strstr(par->name, "unknown writers"))),
				  "a counter track not under a thread nor under the unknown writers' "
				  "track");
		if (p->t.kind == T_PROCESS)
			cr_assert(p->t.name && p->t.pid > 0, "a process track without pid or name");
		if ((t = track_of(w, p->t.uuid))) { /* described again: the same */
			cr_assert_eq(t->kind, p->t.kind);
			free(p->t.name);
		} else {
			w->tr = realloc(w->tr, (w->ntr + 1) * sizeof(*w->tr));
			w->tr[w->ntr++] = p->t;
		}
		p->t.name = NULL;
	}
	if (!p->te)
		return;
	cr_assert(p->has_ts, "%s packet %zu: an event without a timestamp", w->file, w->packets);
	t = track_of(w, p->te_track ? p->track : s->def_track);
	cr_assert(t, "%s packet %zu: an event on track %" PRIu64 ", never described", w->file,
		  w->packets, p->te_track ? p->track : s->def_track);
	struct track *th = track_of(w, s->def_track);
	int64_t pid = th->kind == T_THREAD || th->kind == T_PROCESS ? th->pid : 0;
	int64_t tid = th->kind == T_THREAD ? th->tid : 0;
	struct track *pr = th->kind == T_THREAD ? track_of(w, th->parent) : th;

	if (p->type == 4) { /* a loss counter */
		cr_assert_eq(t->kind, T_COUNTER);
		cr_assert(!t->has_counter || p->counter >= t->last_counter, "the loss counter fell");
		t->last_counter = p->counter;
		t->has_counter = true;
		size_t i;

		for (i = 0; i < w->nctr; i++)
			if (w->ctr[i].pid == pid && w->ctr[i].tid == tid)
				break;
		if (i == w->nctr) {
			w->ctr = realloc(w->ctr, (++w->nctr) * sizeof(*w->ctr));
			w->ctr[i].pid = (uint32_t)pid, w->ctr[i].tid = (uint32_t)tid, w->ctr[i].max = 0;
		}
		if (p->counter > w->ctr[i].max)
			w->ctr[i].max = p->counter;
		return;
	}
	/* a slice's end names nothing: trace_processor would match it to a
	 * slice of the same name only; its name and provider are arguments */
	cr_assert_eq(p->ncat, p->type == 2 ? 0 : 1, "%s packet %zu: %d categories", w->file,
		     w->packets, p->ncat);
	cr_assert(p->type != 2 || (!p->name && !p->name_iid), "a slice end with a name");
	const char *category = p->type == 2 ? NULL : need_iid(w, s, K_CAT, p->cat);

	if (p->name) { /* a loss */
		unsigned long long n;

		cr_assert(!strcmp(category, "ringlog") && p->type == 3 &&
			  sscanf(p->name, "%llu events lost: ", &n) == 1, "%s: %s", w->file, p->name);
		cr_assert(!p->te_track, "a loss off its writer's track");
		w->loss = realloc(w->loss, (w->nloss + 1) * sizeof(*w->loss));
		w->loss[w->nloss].pid = (uint32_t)pid;
		w->loss[w->nloss].tid = (uint32_t)tid;
		w->loss[w->nloss].t = p->ts;
		w->loss[w->nloss++].n = n;
		return;
	}
	const char *name = NULL;
	char *fields = NULL, *activity = NULL, *line;

	if (p->type == 2) { /* its provider and name: the first two arguments */
		cr_assert(p->nann >= 2 &&
			  !strcmp(need_iid(w, s, K_ANN, p->ann[0].name_iid), "stop.provider") &&
			  !strcmp(need_iid(w, s, K_ANN, p->ann[1].name_iid), "stop.event"),
			  "%s packet %zu: a slice end without stop.provider and stop.event", w->file,
			  w->packets);
		category = p->ann[0].val;
		name = p->ann[1].val;
	} else {
		name = need_iid(w, s, K_NAME, p->name_iid);
	}
	for (size_t i = p->type == 2 ? 2 : 0; i < p->nann; i++) {
		const char *an = need_iid(w, s, K_ANN, p->ann[i].name_iid);
		char *v = ann_value(&p->ann[i]);

		cr_assert(p->ann[i].kind[0], "an annotation without a value");
		if (p->type == 2) {
			cr_assert(!strncmp(an, "stop.", 5), "a slice end's field %s is not stop.NAME",
				  an);
			an += 5;
		}
		if (!strcmp(an, "activity") && i == p->nann - 1)
			activity = strdup(v);
		else
			cat(&fields, "%s=%s;", an, v);
		free(v);
	}
	line = xasprintf("%" PRIu64 "|%s|%s|%" PRId64 "|%" PRId64 "|%s|%s", p->ts, category, name,
			 pid, tid, pr && pr->name ? pr->name : "", fields ? fields : "");
	free(fields);
	strs_add(&w->ev, line);
	if (p->type == 1) {
		w->begins++;
		strs_add(&w->starts, xasprintf("%s|%s", name, activity ? activity : ""));
		cr_assert(activity ? t->kind == T_NAMED && track_of(w, t->parent) &&
			  track_of(w, t->parent)->kind == T_PROCESS &&
			  track_of(w, t->parent)->pid == pid : t->uuid == s->def_track,
			  "%s: a slice %s on the wrong track", w->file, name);
	}
	w->ends += p->type == 2;
	/* a thread's events are in time order in the file: its slices must
	 * nest there, as trace_processor will stack them */
	if (t->kind == T_THREAD && p->type == 1)
		t->depth++;
	if (t->kind == T_THREAD && p->type == 2) {
		cr_assert_gt(t->depth, 0u, "%s packet %zu: a slice end on thread %" PRId64 " closes "
			     "nothing", w->file, w->packets, tid);
		t->depth--;
	}
	w->instants += p->type == 3;
	if (!strcmp(name, "Stray"))
		w->stray_instant = p->type == 3;
	if (!strcmp(name, "Request") && t->kind == T_NAMED)
		w->req_async = true;
	if ((!strcmp(name, "Outer") || !strcmp(name, "InnerDone")) && p->type == 2 &&
	    t->uuid == s->def_track && t->kind == T_THREAD)
		w->nested_thread = true;
	free(activity);
}

/* Decode path with protoc and walk it into w (which may hold earlier
 * files' results: --max-size). Sequences and tracks start afresh. */
static void walk_file(struct walk *w, const char *path)
{
	char *txt = xasprintf("%s.txt", path), *err = xasprintf("%s.err", path);
	char *cmd = xasprintf("protoc -I '%s' --decode=perfetto.protos.Trace " PROTO_FILE
			      " < '%s' > '%s' 2> '%s'", PROTO_DIR, path, txt, err);
	char out[2048], stack[8][40], *line = NULL;
	size_t cap = 0;
	int depth = 0;
	struct pkt *p = calloc(1, sizeof(*p));
	FILE *f;

	cr_assert(p);
	cr_assert_eq(live_run(cmd, out, sizeof(out)), 0, "protoc refused %s", path);
	free(cmd);
	cmd = xasprintf("cat '%s'", err);
	live_run(cmd, out, sizeof(out));
	cr_assert_eq(out[0], 0, "protoc said something on %s: %s", path, out);
	for (size_t i = 0; i < w->nseq; i++)
		for (int k = 0; k < K_N; k++)
			iid_free(&w->seq[i].in[k]);
	free(w->seq);
	w->seq = NULL;
	w->nseq = 0;
	for (size_t i = 0; i < w->ntr; i++)
		free(w->tr[i].name);
	free(w->tr);
	w->tr = NULL;
	w->ntr = 0;
	w->packets = 0;
	w->file = path;
	f = fopen(txt, "r");
	cr_assert(f);
	while (getline(&line, &cap, f) > 0) {
		char *s = line, *e = s + strlen(s), *colon;

		while (*s == ' ')
			s++;
		while (e > s && (e[-1] == '\n' || e[-1] == ' '))
			*--e = 0;
		if (!strcmp(s, "}")) {
			const char *ctx = stack[--depth];

			if (!strcmp(ctx, "debug_annotations"))
				p->nann++;
			else if (depth >= 1 && !strcmp(stack[depth - 1], "interned_data"))
				p->nin++;
			if (depth == 0) {
				on_packet(w, p);
				pkt_free(p);
				memset(p, 0, sizeof(*p));
			}
			continue;
		}
		if (e - s > 2 && !strcmp(e - 2, " {")) {
			e[-2] = 0;
			cr_assert(!isdigit((unsigned char)*s), "%s: an unknown field %s", path, s);
			cr_assert_lt(depth, 8);
			snprintf(stack[depth++], sizeof(stack[0]), "%s", s);
			if (depth == 1)
				cr_assert(!strcmp(s, "packet"), "%s: top-level %s", path, s);
			cr_assert(p->nin < 511 && p->nann < 299, "%s: a packet too big to walk", path);
			if (depth >= 2 && !strcmp(stack[depth - 2], "interned_data"))
				p->in[p->nin].kind = !strcmp(s, "event_categories") ? K_CAT :
						     !strcmp(s, "event_names") ? K_NAME : K_ANN;
			p->td |= !strcmp(s, "track_descriptor");
			p->td_process |= !strcmp(s, "process");
			p->td_thread |= !strcmp(s, "thread");
			p->td_counter |= !strcmp(s, "counter");
			p->te |= !strcmp(s, "track_event");
			p->has_cs |= !strcmp(s, "clock_snapshot");
			p->has_defaults |= !strcmp(s, "trace_packet_defaults");
			continue;
		}
		colon = strstr(s, ": ");
		cr_assert(colon && depth > 0, "%s: cannot read \"%s\"", path, s);
		*colon = 0;
		/* protoc prints a field the .proto does not know by number */
		cr_assert(!isdigit((unsigned char)*s), "%s: an unknown field %s: %s", path, s,
			  colon + 2);
		on_field(p, depth > 1 ? stack[depth - 2] : "", stack[depth - 1], s, colon + 2);
	}
	cr_assert_eq(depth, 0);
	free(line);
	fclose(f);
	free(p);
	unlink(txt);
	unlink(err);
	free(txt);
	free(err);
	free(cmd);
}

static void walk_free(struct walk *w)
{
	for (size_t i = 0; i < w->nseq; i++)
		for (int k = 0; k < K_N; k++)
			iid_free(&w->seq[i].in[k]);
	for (size_t i = 0; i < w->ntr; i++)
		free(w->tr[i].name);
	for (int k = 0; k < K_N; k++)
		iid_free(&w->global[k]);
	free(w->seq), free(w->tr), free(w->loss), free(w->ctr);
	strs_free(&w->ev);
	strs_free(&w->starts);
}

/* The walked files against read --json: events, starts, losses, counters. */
static void compare(struct walk *w, struct want *r)
{
	uint64_t lost = 0;

	strs_sort(&w->ev);
	strs_sort(&r->ev);
	cr_expect_eq(w->ev.n, r->ev.n, "the export holds %zu events, read --json %zu", w->ev.n,
		     r->ev.n);
	for (size_t i = 0; i < w->ev.n && i < r->ev.n; i++)
		if (strcmp(w->ev.v[i], r->ev.v[i])) {
			cr_expect_fail("first difference (sorted), event %zu:\nread:     %.900s\n"
				       "perfetto: %.900s", i, r->ev.v[i], w->ev.v[i]);
			break;
		}
	strs_sort(&w->starts);
	strs_sort(&r->starts);
	cr_expect_eq(w->starts.n, r->starts.n, "%zu slice begins, read has %zu starts",
		     w->starts.n, r->starts.n);
	for (size_t i = 0; i < w->starts.n && i < r->starts.n; i++)
		cr_expect_str_eq(w->starts.v[i], r->starts.v[i], "start name|activity");
	cr_expect_leq(w->ends, r->nstop, "more slice ends than stops");
	/* losses: each of read's on its thread at its time (0: unknown) */
	cr_expect_eq(w->nloss, r->nloss, "%zu loss instants, read has %zu losses", w->nloss,
		     r->nloss);
	for (size_t i = 0; i < r->nloss; i++) {
		bool found = false;

		lost += r->loss[i].n;
		for (size_t k = 0; k < w->nloss && !found; k++)
			/* a loss whose writer is unknown (its description in a
			 * damaged chunk; read still names the thread) is on the
			 * unknown writers' track: pid 0, tid 0 */
			if (w->loss[k].n == r->loss[i].n && w->loss[k].pid == r->loss[i].pid &&
			    (w->loss[k].tid == r->loss[i].tid || (!r->loss[i].pid && !w->loss[k].tid)) &&
			    (!r->loss[i].t || w->loss[k].t == r->loss[i].t)) {
				found = true;
				w->loss[k].n = UINT64_MAX; /* used */
			}
		cr_expect(found, "no instant for read's loss of %" PRIu64 " at %" PRIu64
			  " (pid %u tid %u)", r->loss[i].n, r->loss[i].t, r->loss[i].pid,
			  r->loss[i].tid);
	}
	/* the counters end at each thread's total */
	for (size_t c = 0; c < w->nctr; c++) {
		uint64_t sum = 0;

		for (size_t i = 0; i < r->nloss; i++)
			if (r->loss[i].pid == w->ctr[c].pid &&
			    (r->loss[i].tid == w->ctr[c].tid || (!w->ctr[c].pid && !w->ctr[c].tid)))
				sum += r->loss[i].n;
		cr_expect_eq((uint64_t)w->ctr[c].max, sum, "pid %u tid %u: counter ends at %" PRId64
			     ", read counts %" PRIu64, w->ctr[c].pid, w->ctr[c].tid, w->ctr[c].max,
			     sum);
	}
	if (r->nloss)
		cr_expect_gt(w->nctr, 0u, "losses but no loss counter");
	(void)lost;
}

/* ------------------------------------------------------------------------
 * Stores and exports.
 */
static void emit(const char *args)
{
	char cmd[4096], out[4096];

	snprintf(cmd, sizeof(cmd), CLI " emit %s 2>&1", args);
	cr_assert_eq(live_run(cmd, out, sizeof(out)), 0, "`%s`:\n%s", cmd, out);
}

/* Every field type, slices, several processes and threads, losses. */
static void fill_store(struct live *e)
{
	const char *const types[] = { TYPES_PATH, "types", NULL };
	const char *const slices[] = { TYPES_PATH, "slices", NULL };
	const char *const calm[] = { EMITTER_PATH, "2", "2000", NULL };
	/* no pause: a 64 KiB ring overflows whatever the daemon's speed */
	const char *const burst[] = { EMITTER_PATH, "1", "60000", NULL };
	const char *const small_ring[] = { "RINGLOG_RING_SIZE=64K", NULL };
	pid_t d = live_daemon(e, NULL), p2, p3;

	live_wait_ok(live_spawn(types, NULL, "/dev/null"), "test-types types");
	live_wait_ok(live_spawn(slices, NULL, "/dev/null"), "test-types slices");
	emit("Export.Emit Mixed --level warning h:hex=255 data:blob=00ff10 none:blob= "
	     "t:time=1700000000123456789 f:f64=-0.5 b:bool=false s:str='ünï ✓ \"q\"' "
	     "empty:str= event:i32=-7 n:u64=12345678901");
	emit("Export.Emit Bare --level verbose");
	p2 = live_spawn(calm, NULL, "/dev/null");
	p3 = live_spawn(burst, small_ring, "/dev/null");
	live_wait_ok(p2, "emitter");
	live_wait_ok(p3, "bursting emitter");
	live_daemon_stop(d);
}

/* Export with args into path; the exit code must be want_rc. */
static void export(const char *path, const char *args, int want_rc, char *out, size_t cap)
{
	char *cmd = xasprintf(CLI " export --format perfetto --output '%s' %s 2>&1", path, args);
	int rc = live_run(cmd, out, cap);

	cr_assert_eq(rc, want_rc, "`%s`: exit %d, expected %d:\n%s", cmd, rc, want_rc, out);
	free(cmd);
}

/* Export, walk, compare with read ARGS; the event count. */
static size_t check_export(const char *path, const char *args, int want_rc, struct walk *out)
{
	struct walk w = { 0 };
	struct want r;
	char msg[8192];
	size_t n;

	export(path, args, want_rc, msg, sizeof(msg));
	walk_file(&w, path);
	read_want(args, &r);
	compare(&w, &r);
	n = r.ev.n;
	want_free(&r);
	if (out)
		*out = w;
	else
		walk_free(&w);
	return n;
}

Test(export_perfetto, protoc_decodes_it_and_the_walk_matches_read)
{
	struct live e;
	struct walk w;
	char *path, *args;
	size_t n;

	need_protoc();
	live_init(&e);
	fill_store(&e);
	path = xasprintf("%s/t.pftrace", e.dir);
	args = xasprintf("--dir '%s'", e.store);
	n = check_export(path, args, 0, &w);
	cr_expect_gt(n, 4000u, "the store holds too few events: %zu", n);
	cr_expect_gt(w.nloss, 0u, "the 64 KiB ring lost nothing: the loss checks checked nothing");
	cr_expect(w.nested_thread, "Outer/Inner are not slices on their thread's track");
	cr_expect(w.req_async, "Request is not a slice on an activity track");
	cr_expect(w.stray_instant, "the stop that closes nothing is not an instant");
	cr_expect_eq(w.begins, 5u, "begins: Outer, Inner, Request x2, Begin");
	cr_expect_eq(w.ends, 4u, "ends: Inner, Outer, Request x2");
	size_t nproc = 0, nthread = 0;

	for (size_t i = 0; i < w.ntr; i++) {
		nproc += w.tr[i].kind == T_PROCESS;
		nthread += w.tr[i].kind == T_THREAD;
	}
	cr_expect(nproc >= 5 && nthread >= 7, "%zu process and %zu thread tracks: test-types "
		  "x2 (one with 2 threads), emit x2, the emitters (2 threads, 1)", nproc, nthread);
	printf("perfetto: %zu events, %zu losses, %zu tracks checked against read --json\n", n,
	       w.nloss, w.ntr);
	walk_free(&w);
	free(path);
	free(args);
	live_cleanup(&e);
}

Test(export_perfetto, max_size_splits_into_files_that_stand_alone)
{
	struct live e;
	struct walk w = { 0 };
	struct want r;
	char out[8192], *path, *args, *name;
	unsigned files = 0;
	struct stat st;

	need_protoc();
	live_init(&e);
	fill_store(&e);
	path = xasprintf("%s/split.pftrace", e.dir);
	args = xasprintf("--dir '%s' --max-size 64K", e.store);
	export(path, args, 0, out, sizeof(out));
	cr_expect(strstr(out, "split-001.pftrace") || strstr(out, "split-0"), "%s", out);
	for (unsigned i = 1;; i++) {
		name = xasprintf("%s/split-%03u.pftrace", e.dir, i);
		if (stat(name, &st) < 0) {
			free(name);
			break;
		}
		cr_expect_leq(st.st_size, 64 * 1024, "%s: %lld bytes", name, (long long)st.st_size);
		walk_file(&w, name);
		files++;
		free(name);
	}
	cr_expect_gt(files, 3u, "--max-size 64K made %u files", files);
	cr_expect_eq(access(path, F_OK), -1, "%s exists beside the numbered files", path);
	free(args);
	args = xasprintf("--dir '%s'", e.store);
	read_want(args, &r);
	compare(&w, &r); /* every event once, over all files */
	printf("perfetto --max-size 64K: %u files, %zu events\n", files, r.ev.n);
	want_free(&r);
	walk_free(&w);
	free(path);
	free(args);
	live_cleanup(&e);
}

Test(export_perfetto, selection_options_select_as_in_read)
{
	struct live e;
	char *path, *args;
	size_t n;
	const char *const sel[] = {
		"--provider 'Test.Types'",
		"-p warning",
		"--event 'Mix*' --provider 'Export.*'",
		"h=0xff",
		"--provider Test.Emitter thread=1",
		"--since '2000-01-01' -p err",
		"--until '2000-01-01'",
	};

	need_protoc();
	live_init(&e);
	fill_store(&e);
	for (size_t i = 0; i < sizeof(sel) / sizeof(*sel); i++) {
		path = xasprintf("%s/sel%zu.pftrace", e.dir, i);
		args = xasprintf("--dir '%s' %s", e.store, sel[i]);
		n = check_export(path, args, 0, NULL);
		if (i < 6)
			cr_expect_gt(n, 0u, "%s selected nothing: the comparison checked nothing",
				     sel[i]);
		else
			cr_expect_eq(n, 0u, "%s", sel[i]);
		free(path);
		free(args);
	}
	live_cleanup(&e);
}

Test(export_perfetto, a_damaged_chunk_is_skipped_and_said_as_read_says_it)
{
	struct live e;
	char cmd[4096], out[8192], *path, *args;
	const char *const calm[] = { EMITTER_PATH, "2", "60000", NULL };
	int rc;
	pid_t d;

	need_protoc();
	live_init(&e);
	d = live_daemon(&e, NULL);
	live_wait_ok(live_spawn(calm, NULL, "/dev/null"), "emitter");
	live_daemon_stop(d);
	live_damage_second_chunk(&e);
	snprintf(cmd, sizeof(cmd), CLI " read --dir '%s' > /dev/null 2>&1", e.store);
	rc = live_run(cmd, out, sizeof(out));
	cr_assert_eq(rc, 4, "read of a damaged store: exit %d", rc);
	path = xasprintf("%s/d.pftrace", e.dir);
	args = xasprintf("--dir '%s'", e.store);
	cr_expect_gt(check_export(path, args, 4, NULL), 1000u,
		     "the comparison after damage checked too few events");
	export(path, args, 4, out, sizeof(out));
	cr_expect(strstr(out, "damaged") && strstr(out, "skipped"),
		  "export does not say what it skipped:\n%s", out);
	free(path);
	free(args);
	live_cleanup(&e);
}

/* The checks can fail: protoc refuses a damaged file, and a field our
 * .proto does not declare is seen as unknown. */
Test(export_perfetto, the_checks_fail_on_a_damaged_file_or_an_unknown_field)
{
	struct live e;
	char cmd[8192], out[8192], *path;
	const char *const calm[] = { EMITTER_PATH, "1", "200", NULL };
	pid_t d;

	need_protoc();
	live_init(&e);
	d = live_daemon(&e, NULL);
	live_wait_ok(live_spawn(calm, NULL, "/dev/null"), "emitter");
	live_daemon_stop(d);
	path = xasprintf("%s/n.pftrace", e.dir);
	snprintf(cmd, sizeof(cmd), "--dir '%s'", e.store);
	export(path, cmd, 0, out, sizeof(out));
	/* sound: decodes; to stdout, the same bytes */
	snprintf(cmd, sizeof(cmd), "protoc -I '%s' --decode=perfetto.protos.Trace " PROTO_FILE
		 " < '%s' > /dev/null 2>&1", PROTO_DIR, path);
	cr_assert_eq(live_run(cmd, out, sizeof(out)), 0, "protoc refused a sound export");
	snprintf(cmd, sizeof(cmd), CLI " export --format perfetto --output - --dir '%s' "
		 "2>/dev/null | cmp - '%s'", e.store, path);
	cr_expect_eq(live_run(cmd, out, sizeof(out)), 0, "--output - wrote other bytes: %s", out);
	/* cut short: a length runs past the end */
	snprintf(cmd, sizeof(cmd), "head -c -3 '%s' > '%s.cut' && protoc -I '%s' "
		 "--decode=perfetto.protos.Trace " PROTO_FILE " < '%s.cut' > /dev/null 2>&1",
		 path, path, PROTO_DIR, path);
	cr_expect_neq(live_run(cmd, out, sizeof(out)), 0, "protoc took a truncated file");
	/* a length byte broken inside: 0xff bytes 40 from the start */
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s.bad' && printf '\\377\\377\\377\\377\\377\\377"
		 "\\377\\377\\377\\377\\377' | dd of='%s.bad' bs=1 seek=40 conv=notrunc 2>/dev/null "
		 "&& protoc -I '%s' --decode=perfetto.protos.Trace " PROTO_FILE " < '%s.bad' "
		 "> /dev/null 2>&1", path, path, path, PROTO_DIR, path);
	cr_expect_neq(live_run(cmd, out, sizeof(out)), 0, "protoc took a damaged file");
	/* a .proto without debug_annotations: protoc prints them as "4 {" */
	snprintf(cmd, sizeof(cmd), "grep -v 'debug_annotations = 4' '%s/" PROTO_FILE "' > "
		 "'%s/" PROTO_FILE "' && protoc -I '%s' --decode=perfetto.protos.Trace "
		 PROTO_FILE " < '%s' | grep -c '^ *4 {'", PROTO_DIR, e.dir, e.dir, path);
	live_run(cmd, out, sizeof(out));
	cr_expect_gt(atoi(out), 0, "a field missing from the .proto was not printed as a number: "
		     "the unknown-field check would see nothing");
	free(path);
	live_cleanup(&e);
}

Test(export_perfetto, usage_errors)
{
	static const char *const bad[] = {
		" export --format ctf --output /tmp/x --max-size 1M --dir /tmp",
		" export --format perfetto --output /tmp/x --max-size lots --dir /tmp",
		" export --format perfetto --output /tmp/x --max-size 0 --dir /tmp",
		/* usage errors too, once exit 1 (an outsider's report) */
		" export --format perfetto --output - --max-size 1M --dir /tmp",
		" export --format perfetto --output /tmp/x --max-size 1K --dir /tmp",
	};
	char cmd[600], out[4096];

	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		snprintf(cmd, sizeof(cmd), CLI "%s 2>&1", bad[i]);
		cr_expect_eq(live_run(cmd, out, sizeof(out)), 2, "`%s`: %s", bad[i], out);
		cr_expect(strstr(out, "--max-size"), "%s", out);
	}
	cr_expect_eq(live_run(CLI " export --format perfetto --output - --max-size 1M --dir /tmp "
			      "2>&1", out, sizeof(out)), 2);
	cr_expect(strstr(out, "several files"), "%s", out);
	cr_expect_eq(live_run(CLI " export --format perfetto --output /tmp/x --max-size 1K "
			      "--dir /tmp 2>&1", out, sizeof(out)), 2);
	cr_expect(strstr(out, "at least 64K") && strstr(out, "1024 bytes"), "%s", out);
	cr_expect_eq(live_run(CLI " export --help", out, sizeof(out)), 0);
	cr_expect(strstr(out, "perfetto") && strstr(out, "--max-size"), "%s", out);
}
