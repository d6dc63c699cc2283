/* client/cli/tail.c - `ringlog tail`: follow live events; filters run in
 * the daemon, which also raises enablement while we run. */
#define _GNU_SOURCE
#include "cli.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ctl.h"
#include "query.h"

/* Per ring (its writer's pid and start, the thread, the ring's id: the
 * names a ring keeps across daemons, proto/segment.h), the newest event
 * shown, by the writer's own stamp (the same live and stored; a time
 * depends on the calibration, which each segment measures again). A
 * ringlogd killed while it held events it had stored but not yet sent to a
 * slow tail took them with it: the tail, following the next ringlogd, read
 * only that one's segments, and they were missing with no word (CI's ASan
 * run: 13,256 of 40,000). So the old run's last segments are read again,
 * and what this tail showed is skipped by these marks. */
struct mark {
	uint64_t pid, start_ns, tid, ring_id;
	uint64_t newest_ts; /* of what this tail showed */
	uint64_t newest_n;  /* how many it showed with that stamp (a
	                     * CLOCK_MONOTONIC ring's events may share one) */
	uint64_t loss_ns;   /* the newest loss it showed of the ring, by time */
	uint64_t before_ts, before_n, before_loss_ns; /* the three when
	                     * ringlogd went away */
	uint64_t eq_read;   /* events stamped before_ts read again since */
	unsigned gen;       /* when made (tl.gen: 0 the first run) */
	bool used;
};

struct tl {
	const struct query *q;
	struct mark *marks; /* open addressing, cap a power of 2 */
	size_t nmarks, cap;
	unsigned gen;       /* reconnections */
	uint64_t attach_ns; /* when it asked the ringlogd followed last */
	bool old_run;       /* keep(): reading the old run's segments */
};

/* The wall clock events are stamped in (not RINGLOG_NOW's, a test's). */
static uint64_t real_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t mark_hash(const struct mark *k)
{
	uint64_t h = k->pid * 0x9e3779b97f4a7c15ull ^ k->start_ns;

	h = (h ^ k->tid) * 0xff51afd7ed558ccdull ^ k->ring_id;
	return h ^ h >> 29;
}

/* The mark of (w, s), made when make; NULL if none (or no memory). */
static struct mark *mark_of(struct tl *t, const struct ringlog_dec_writer *w,
			    const struct ringlog_dec_stream *s, bool make)
{
	struct mark k = { .pid = w->w.pid, .start_ns = w->w.start_real_ns, .tid = s->s.tid,
			  .ring_id = s->s.ring_id, .gen = t->gen, .used = true };
	size_t i;

	if (make && 2 * (t->nmarks + 1) > t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 64;
		struct mark *m = calloc(cap, sizeof(*m));

		if (!m)
			return NULL;
		for (size_t j = 0; j < t->cap; j++) {
			if (!t->marks[j].used)
				continue;
			for (i = mark_hash(&t->marks[j]) & (cap - 1); m[i].used; i = (i + 1) & (cap - 1))
				;
			m[i] = t->marks[j];
		}
		free(t->marks);
		t->marks = m;
		t->cap = cap;
	}
	if (!t->cap)
		return NULL;
	for (i = mark_hash(&k) & (t->cap - 1); t->marks[i].used; i = (i + 1) & (t->cap - 1)) {
		struct mark *m = &t->marks[i];

		if (m->pid == k.pid && m->start_ns == k.start_ns && m->tid == k.tid &&
		    m->ring_id == k.ring_id)
			return m;
	}
	if (!make)
		return NULL;
	t->marks[i] = k;
	t->nmarks++;
	return &t->marks[i];
}

/* An event shown, or (ts 0) a loss at real_ns. */
static void shown(struct tl *t, const struct ringlog_dec_writer *w,
		  const struct ringlog_dec_stream *s, uint64_t ts, uint64_t real_ns)
{
	struct mark *m = w && s ? mark_of(t, w, s, true) : NULL;

	if (!m)
		return;
	if (!ts) {
		if (real_ns > m->loss_ns)
			m->loss_ns = real_ns;
	} else if (ts > m->newest_ts) {
		m->newest_ts = ts;
		m->newest_n = 1;
	} else if (ts == m->newest_ts) {
		m->newest_n++;
	}
}

/* ringlogd went away: the marks as they stand are what the reads of the
 * next one compare with (a read may show a ring's later events first,
 * from another retention class's segment, before its earlier ones). */
static void marks_freeze(struct tl *t)
{
	for (size_t i = 0; i < t->cap; i++) {
		struct mark *m = &t->marks[i];

		m->before_ts = m->newest_ts;
		m->before_n = m->newest_n;
		m->before_loss_ns = m->loss_ns;
		m->eq_read = 0;
	}
	t->gen++;
}

/* What the history of a reconnection shows: of a ring this tail showed
 * before ringlogd went away, what is newer (the rest it showed, or the
 * old run drained it and the new one again; of events sharing the last
 * stamp, those past the ones shown, in ring order); of another ring, from
 * the old run's segments what came since this tail joined it (older
 * events were stored before it came), from the new run's all. A loss (ts
 * 0) likewise by its time: one shown live is not shown again. */
static bool not_shown(void *ctx, const struct ringlog_dec_writer *w,
		      const struct ringlog_dec_stream *s, uint64_t ts, uint64_t real_ns)
{
	struct tl *t = ctx;
	struct mark *m = w && s ? mark_of(t, w, s, false) : NULL;
	bool take;

	if (m && m->gen < t->gen && !ts && m->before_loss_ns)
		take = real_ns > m->before_loss_ns;
	else if (m && m->gen < t->gen && ts && m->before_n)
		take = ts > m->before_ts || (ts == m->before_ts && ++m->eq_read > m->before_n);
	else /* nothing of its kind shown of the ring before */
		take = !t->old_run || real_ns >= t->attach_ns;
	if (take)
		shown(t, w, s, ts, real_ns);
	return take;
}

/* The first history: all of it shown, and marked. */
static bool mark_all(void *ctx, const struct ringlog_dec_writer *w,
		     const struct ringlog_dec_stream *s, uint64_t ts, uint64_t real_ns)
{
	shown(ctx, w, s, ts, real_ns);
	return true;
}

static int on_event(void *ctx, const struct ringlog_dec_event *e)
{
	struct tl *t = ctx;
	char *s;

	/* the daemon applied the coarse part; the whole selection is ours */
	if (sel_match(&t->q->sel, e) && (s = out_event(&t->q->out, e))) {
		fputs(s, stdout);
		free(s);
		shown(t, e->writer, e->stream, e->ts, e->real_ns);
	}
	return 0;
}

static void on_loss(void *ctx, const struct ringlog_dec_loss *l)
{
	struct tl *t = ctx;
	char *s;

	if (sel_match_loss(&t->q->sel, l) && (s = out_loss(&t->q->out, l))) {
		fputs(s, stdout);
		free(s);
		shown(t, l->writer, l->stream, 0, l->real_ns);
	}
}

static void on_damage(void *ctx, const char *what)
{
	(void)ctx;
	fprintf(stderr, "ringlog: tail: undecodable record from ringlogd: %s\n", what);
}

static void tail_help(void)
{
	printf("usage: ringlog tail [OPTIONS] [FIELD=VALUE...]\n"
	       "Follow live events: the newest N stored ones first (ringlog read -f -n N).\n"
	       "Filters run in ringlogd; a --priority or --keyword above what is enabled\n"
	       "raises enablement for matching providers while the tail runs.\n"
	       "Ctrl-C exits 0; --until ends it at that time. A restarted ringlogd is followed\n"
	       "again, with what it stored before the tail joined again (and what the one\n"
	       "before stored and never sent this tail).\n"
	       "\n"
	       "  -n, --lines N          stored events shown first (default 10; 0: none; \"all\")\n"
	       "      --since T, --until T\n"
	       "                         T: as ringlog read --help says; --until in the future\n"
	       "  -p, --priority P       warning (and more severe), err..info, 1..5 (as read)\n"
	       "      --provider GLOB    --event GLOB (repeat to give alternatives)\n"
	       "      --keyword MASK     --pid PID  --uid UID\n"
	       "  -g, --grep REGEX       on the short line\n"
	       "  FIELD=VALUE            events whose field equals VALUE (see ringlog read --help)\n"
	       "  -o, --output MODE      %s\n"
	       "      --json --utc --color[=WHEN]\n"
	       "      --socket PATH      ringlogd's socket\n"
	       "      --nats URL[,URL...] follow a NATS JetStream cluster that ringlogd ships to\n"
	       "                         (-n: the newest of its last messages, at least 64)\n"
	       "      --stream S         the stream (default: ringlog)\n"
	       "      --host GLOB        events of these hosts only (repeat: alternatives)\n"
	       "      --durable NAME     a named consumer, resumed by the next run\n",
	       out_mode_names);
}

/* The selection the daemon applies with the same matcher (proto/match.h,
 * daemon/sink/tail.c); what it cannot judge (--grep, times) sel_match adds
 * here, on events the daemon already matched. */
static json_t *tail_request(const struct query *q, long backlog)
{
	json_t *req = json_object();
	const struct ringlog_match *s = &q->sel.m;

	json_object_set_new(req, "backlog", json_integer(backlog));
	if (s->nproviders) {
		json_t *a = json_array();

		for (unsigned i = 0; i < s->nproviders; i++)
			json_array_append_new(a, json_string(s->providers[i]));
		json_object_set_new(req, "provider", a);
	}
	if (s->nevents) {
		json_t *a = json_array();

		for (unsigned i = 0; i < s->nevents; i++)
			json_array_append_new(a, json_string(s->events[i]));
		json_object_set_new(req, "event", a);
	}
	/* without -p, what is enabled up to info, as before */
	if (s->nfields) {
		json_t *o = json_object();

		for (unsigned i = 0; i < s->nfields; i++) {
			json_t *a = json_array();

			for (unsigned k = 0; k < s->fields[i].nvalues; k++)
				json_array_append_new(a, json_string(s->fields[i].values[k]));
			json_object_set_new(o, s->fields[i].name, a);
		}
		json_object_set_new(req, "fields", o);
	}
	json_object_set_new(req, "level", json_integer(s->level_max));
	if (s->level_min > 1)
		json_object_set_new(req, "level_min", json_integer(s->level_min));
	if (s->keyword)
		json_object_set_new(req, "keyword", json_integer((json_int_t)s->keyword));
	if (s->pid >= 0)
		json_object_set_new(req, "pid", json_integer(s->pid));
	if (s->uid >= 0)
		json_object_set_new(req, "uid", json_integer(s->uid));
	return req;
}

/* Send the TAIL request on fd: the first (-n N), or again after ringlogd
 * came back (its run's segments, to where they ended when it asked); 0,
 * or EXIT_FAIL. */
static int tail_ask(const struct query *q, int fd, bool again)
{
	json_t *req = tail_request(q, again ? 0 : q->lines);
	char *js;

	if (again)
		json_object_set_new(req, "run_ends", json_true());
	js = json_dumps(req, JSON_COMPACT);

	json_decref(req);
	if (!js)
		return EXIT_FAIL;
	/* A daemon at a limit sends REFUSE and closes: the send may fail,
	 * the reason is still there to read */
	cli_send(fd, RINGLOG_CTL_TAIL, js, (uint32_t)strlen(js));
	free(js);
	return 0;
}

/* After ringlogd went away: connect again once it is back (Ctrl-C or
 * --until end the wait). The descriptor, or -1 when interrupted. */
static int tail_wait_back(const struct query *q)
{
	for (;;) {
		int fd;

		cli_sleep_ms(250);
		if (cli_interrupted())
			return -1;
		if ((fd = cli_connect(socket_path(q->socket), true)) >= 0) {
			cli_watch(fd);
			return fd;
		}
	}
}

/* The reply to TAIL: the stored events before the live ones. The first
 * time, the newest -n of them; after ringlogd came back, what the old run
 * stored and this tail did not show (its marks), then what the new one
 * stored before this tail joined again: the segments of its run. *run: the
 * run followed. */
static void tail_history(struct tl *t, const char *dir, const uint8_t *p, bool again,
			 uint64_t *run)
{
	const struct query *q = t->q;
	json_t *j = json_loads((const char *)p, 0, NULL);
	const char *own = json_string_value(json_object_get(j, "storage_dir"));
	const char *store = dir ? dir : own;
	json_t *first = json_object_get(j, "run_first_segment"), *ends = json_object_get(j, "ends");
	uint64_t now = json_is_integer(first) ? (uint64_t)json_integer_value(first) : UINT64_MAX;

	if (!again) {
		/* the default 10 of an unreadable store is skipped quietly;
		 * an -n asked for is not */
		const struct hist_opts o = { .keep = mark_all, .ctx = t };

		if (q->lines && store && read_history(q, store, q->lines, NULL, 0, &o) < 0 &&
		    q->lines_given)
			fprintf(stderr, "ringlog: %s: -n: cannot read %s (need membership in the "
				"read group)\n", q->cmd, store);
		/* a filter the stored events show cannot match waits on, but
		 * says so (it waited without a word: an outsider's test) */
		sel_explain(&q->sel, q->cmd, true);
	} else if (now != UINT64_MAX && now != *run && store && json_is_array(ends)) {
		size_t n = json_array_size(ends), k = 0;
		struct seg_end *e = calloc(n ? n : 1, sizeof(*e));
		struct ringlog_dedup dedup = { 0 };
		const struct hist_opts o = { .keep = not_shown, .ctx = t, .dedup = &dedup };

		marks_freeze(t);
		/* First what the old run stored and may not have sent: it
		 * sends at drain time, holding at most TAIL_QUEUE_LIMIT (8 MiB
		 * of records, daemon/sink/tail.c) for a slow tail, so that is
		 * in its last segments: as many of the newest as hold 32 MiB. */
		t->old_run = true;
		if (*run != UINT64_MAX && *run < now &&
		    read_history_range(q, store, *run, now, 32u << 20, &o) < 0)
			fprintf(stderr, "ringlog: %s: cannot read %s: what the ringlogd before stored "
				"and had not sent is not shown\n", q->cmd, store);
		t->old_run = false;

		for (size_t i = 0; e && i < n; i++) {
			json_t *a = json_array_get(ends, i);

			if (json_is_integer(json_array_get(a, 0)) && json_is_integer(json_array_get(a, 1)))
				e[k++] = (struct seg_end){ (uint64_t)json_integer_value(json_array_get(a, 0)),
							   (uint64_t)json_integer_value(json_array_get(a, 1)) };
		}
		if (!e || read_history(q, store, -1, e, k, &o) < 0)
			fprintf(stderr, "ringlog: %s: cannot read %s: what ringlogd stored before this "
				"tail joined again is not shown\n", q->cmd, store);
		ringlog_dedup_free(&dedup);
		free(e);
	} else if (now != UINT64_MAX && now == *run) {
		fprintf(stderr, "ringlog: %s: the same ringlogd as before: what it stored while this "
			"tail was away is not shown (ringlog read --since)\n", q->cmd);
	} else {
		fprintf(stderr, "ringlog: %s: this ringlogd does not say what it stored before this "
			"tail joined again: that is not shown (ringlog read --since)\n", q->cmd);
	}
	*run = now;
	json_decref(j);
}

/* Whether dir is another store than the daemon's (read -f --dir OTHER):
 * said, and the follow refused. */
static bool other_store(const struct query *q, const char *dir, const uint8_t *p)
{
	json_t *j = json_loads((const char *)p, 0, NULL);
	const char *own = json_string_value(json_object_get(j, "storage_dir"));
	bool other = dir && own && !cli_same_dir(dir, own);

	/* OTHER's history followed by another store's live events, without a
	 * word (an outsider's test) */
	if (other)
		fprintf(stderr, "ringlog %s: -f --dir %s: ringlogd at %s stores in %s; only the store "
			"of a running ringlogd can be followed (--socket names the one that stores "
			"in %s; without -f, read shows %s as it is)\n", q->cmd, dir,
			socket_path(q->socket), own, dir, dir);
	json_decref(j);
	return other;
}

int cli_follow(struct query *q, const char *dir)
{
	struct tl t = { .q = q };
	uint64_t run = UINT64_MAX; /* the daemon's run_first_segment */
	uint64_t asked_ns = 0;     /* when it asked the daemon it follows now */
	bool again = false;        /* following again after it went away */
	char refused[800] = "";    /* the last refusal said while following again */
	int fd, rc = EXIT_OK;

	/* following never pages: less would hold the stream */
	q->out.color = out_color(q->color, 1);
	/* Without -p a follow asks the daemon for info and more severe (asking
	 * for verbose raises enablement), and shows the history alike. */
	if (!q->sel.level_given)
		q->sel.m.level_max = 4;
	cli_catch_interrupt();
	if ((fd = cli_connect(socket_path(q->socket), false)) < 0)
		return cli_interrupted() ? EXIT_OK : EXIT_NODAEMON;
	cli_watch(fd);
	if (cli_interrupted()) { /* interrupted while connecting */
		cli_watch(-1);
		close(fd);
		return EXIT_OK;
	}
	if (q->sel.until_ns) {
		uint64_t now = sel_now_ns(), left = q->sel.until_ns > now ? q->sel.until_ns - now : 0;

		cli_interrupt_after(left / 1000000u + 1);
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* A restarted ringlogd is followed again, as journalctl -f follows
	 * journald's (an outsider's test: the tail exited, 3) */
	asked_ns = real_now_ns();
	while (fd >= 0 && !(rc = tail_ask(q, fd, again))) {
		struct ringlog_decoder d;
		bool gone = false;

		/* each connection its own scopes: writer ids are the daemon's */
		ringlog_dec_init(&d, NULL);
		d.ctx = &t;
		d.on_event = on_event;
		d.on_loss = on_loss;
		d.on_damage = on_damage;
		while (!cli_interrupted()) {
			uint16_t type = 0;
			uint8_t *p;
			long n = cli_recv(fd, &type, &p);

			if (n < 0 && (n == -EINTR || cli_interrupted()))
				break;
			if (n <= 0 && !p) {
				if (cli_interrupted())
					break;
				fprintf(stderr, "ringlog: %s: ringlogd went away (%s); following again when "
					"it is back (Ctrl-C ends)\n", q->cmd,
					n == 0 ? "connection closed" : strerror((int)-n));
				gone = true;
				break;
			}
			if (type == RINGLOG_CTL_TAIL) {
				if (other_store(q, dir, p)) {
					rc = EXIT_USAGE;
					free(p);
					break;
				}
				if (again) /* said once it takes this tail */
					fprintf(stderr, "ringlog: %s: ringlogd is back\n", q->cmd);
				refused[0] = '\0';
				tail_history(&t, dir, p, again, &run);
				t.attach_ns = asked_ns; /* the old run's until now */
			} else if (type == RINGLOG_CTL_DATA) {
				ringlog_dec_records(&d, p, (size_t)n);
			} else if (type == RINGLOG_CTL_REFUSE) {
				char why[800];

				cli_refuse_text(p, n, why, sizeof(why));
				/* Following again, a refusal is waited out like the
				 * restart (a restarted ringlogd at limits.clients
				 * while every tail reconnects), said once */
				if (again) {
					if (strcmp(why, refused))
						fprintf(stderr, "ringlog: %s: %s; trying again (Ctrl-C "
							"ends)\n", q->cmd, why);
					snprintf(refused, sizeof(refused), "%s", why);
					gone = true;
					free(p);
					break;
				}
				fprintf(stderr, "ringlog: %s: %s\n", q->cmd, why);
				rc = EXIT_NODAEMON;
				free(p);
				break;
			} else if (type == RINGLOG_CTL_ERROR) {
				cli_print_error(q->cmd[0] == 't' ? "ringlog: tail" : "ringlog: read", p);
				rc = EXIT_FAIL;
				free(p);
				break;
			}
			free(p);
		}
		ringlog_dec_free(&d);
		cli_watch(-1);
		close(fd);
		fd = gone ? tail_wait_back(q) : -1;
		asked_ns = real_now_ns();
		again = true;
	}
	if (fd >= 0) { /* the request could not be made */
		cli_watch(-1);
		close(fd);
	}
	free(t.marks);
	return rc;
}

int cmd_tail(int argc, char **argv)
{
	struct query q;
	int rc = query_parse(&q, "tail", Q_LIVE | Q_NATS, 10, argc, argv, tail_help);

	if (!rc && q.nats) {
		q.out.color = out_color(q.color, 1);
		rc = nats_tail(&q);
	} else if (!rc) {
		rc = cli_follow(&q, NULL);
	}
	query_free(&q);
	return rc == QUERY_HELPED ? EXIT_OK : rc;
}
