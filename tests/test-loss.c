/* tests/test-loss.c - nothing lost without a count (issue 20, points 7-9),
 * with the real daemon, real programs and the real `ringlog` command:
 *   - a loss line sits at its own gap: its time lies between the events of
 *     its own thread around it, and `read` stays in time order;
 *   - status attributes ring overflow to providers, says since when its
 *     counters run, and gives the retained store's totals, which survive a
 *     restart; read and tail filter loss lines by writer and provider, and
 *     every JSON object says its "type";
 *   - forged segment headers (valid checksums, header_size or tsc_hz out of
 *     what the format allows) are named with their value, and no event is
 *     skipped for them.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>

#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"
#include "live.h"
#include "segment.h"

TestSuite(loss, .fini = th_check_leaks, .timeout = 300);

#define CLI RINGLOG_CLI_PATH

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

static void must_run(const char *cmd)
{
	char out[4096];

	cr_assert_eq(live_run(cmd, out, sizeof(out)), 0, "`%s`:\n%s", cmd, out);
}

static void slurp(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY);
	ssize_t n = fd >= 0 ? read(fd, buf, cap - 1) : -1;

	buf[n > 0 ? n : 0] = 0;
	if (fd >= 0)
		close(fd);
}

/* `ringlog status --json ARGS`; NULL if it printed no JSON. */
static json_t *status_json(const char *args)
{
	static char out[1 << 20];
	char cmd[1200];
	json_error_t err;

	snprintf(cmd, sizeof(cmd), CLI " status --json %s 2>/dev/null", args);
	live_run(cmd, out, sizeof(out));
	return json_loads(out, 0, &err);
}

static uint64_t jint(json_t *j, const char *obj, const char *key)
{
	json_t *o = obj ? json_object_get(j, obj) : j;

	return (uint64_t)json_integer_value(json_object_get(o, key));
}

/* One line of `ringlog read` output, as the checks need it: the emitter's
 * Tick{thread, seq} numbers each thread's events from 0, so a gap of N
 * lost events is exactly a jump of N + 1 in seq. */
struct line {
	uint64_t ns;   /* JSON: time_ns; text: the printed time, in us */
	uint32_t tid;
	bool loss;
	uint64_t n;    /* event: its seq; loss: events lost */
};

struct lines {
	struct line *l;
	size_t n, cap;
	size_t bad;    /* lines that would not parse */
	size_t untyped; /* JSON objects without "type" */
};

static void lines_add(struct lines *ls, struct line l)
{
	if (ls->n == ls->cap) {
		ls->cap = ls->cap ? 2 * ls->cap : 4096;
		ls->l = realloc(ls->l, ls->cap * sizeof(*ls->l));
		cr_assert(ls->l);
	}
	ls->l[ls->n++] = l;
}

/* `ringlog read --json` output: every object needs "type". */
static void parse_json(const char *path, struct lines *ls)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t cap = 0;

	cr_assert(f, "%s", path);
	while (getline(&buf, &cap, f) > 0) {
		json_t *j = json_loads(buf, 0, NULL);
		const char *type = json_string_value(json_object_get(j, "type"));
		bool loss = type ? !strcmp(type, "loss") : !!json_object_get(j, "lost");

		if (!j) {
			ls->bad++;
		} else {
			ls->untyped += !type;
			lines_add(ls, (struct line){ .ns = jint(j, NULL, "time_ns"),
				.tid = (uint32_t)jint(j, NULL, "tid"), .loss = loss,
				.n = loss ? jint(j, NULL, "lost") : jint(j, "fields", "seq") });
		}
		json_decref(j);
	}
	free(buf);
	fclose(f);
}

/* Text: "YYYY-MM-DD HH:MM:SS.uuuuuu ..." then "[pid/tid] thread=T seq=S"
 * for an event or "-- N events lost: ... (pid P comm, thread T...) --"
 * for a loss. */
static void parse_text(const char *path, struct lines *ls)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t cap = 0;

	cr_assert(f, "%s", path);
	while (getline(&buf, &cap, f) > 0) {
		struct tm tm = { 0 };
		unsigned us = 0, pid, tid;
		unsigned long long n;
		char *p = strptime(buf, "%Y-%m-%d %H:%M:%S", &tm), *q, *c;
		struct line l = { 0 };

		if (!p || sscanf(p, ".%6u", &us) != 1) {
			ls->bad++;
			continue;
		}
		tm.tm_isdst = -1;
		l.ns = ((uint64_t)mktime(&tm) * 1000000u + us) * 1000u;
		if ((q = strstr(p, "-- ")) && sscanf(q, "-- %llu events lost: ", &n) == 1 &&
		    (c = strstr(q, ", thread ")) && sscanf(c, ", thread %u", &tid) == 1) {
			l.loss = true;
		} else if (!(q = strchr(p, '[')) || sscanf(q, "[%u/%u]", &pid, &tid) != 2 ||
			   !(c = strstr(q, " seq=")) || sscanf(c, " seq=%llu", &n) != 1) {
			ls->bad++;
			continue;
		}
		l.tid = tid;
		l.n = n;
		lines_add(ls, l);
	}
	free(buf);
	fclose(f);
}

/* Each loss line must sit at its gap: between the two events of its own
 * thread whose seq numbers jump by exactly what the loss lines between
 * them count, with a time between theirs; and the whole output must be in
 * time order. Returns the loss lines seen. */
static size_t check_placement(const struct lines *ls, const char *what)
{
	enum { MAXT = 64 };
	struct {
		uint32_t tid;
		bool seen;
		uint64_t seq, ns;      /* its last event */
		uint64_t lost, nloss;  /* loss lines since */
		uint64_t first_loss_ns, last_loss_ns;
	} t[MAXT];
	size_t nt = 0, losses = 0, misplaced = 0, untimed = 0, disorder = 0, shown = 0;

	for (size_t i = 0; i < ls->n; i++) {
		const struct line *l = &ls->l[i];
		size_t k;

		if (i && l->ns < ls->l[i - 1].ns)
			disorder++;
		for (k = 0; k < nt && t[k].tid != l->tid; k++)
			;
		if (k == nt) {
			cr_assert_lt(nt, MAXT);
			memset(&t[nt++], 0, sizeof(t[0]));
			t[k].tid = l->tid;
		}
		if (l->loss) {
			losses++;
			if (!t[k].nloss++)
				t[k].first_loss_ns = l->ns;
			t[k].last_loss_ns = l->ns;
			t[k].lost += l->n;
			continue;
		}
		/* an event: the loss lines since its thread's last event must
		 * count exactly the seq numbers skipped */
		uint64_t skipped = l->n - (t[k].seen ? t[k].seq + 1 : 0);

		if (t[k].nloss && skipped != t[k].lost) {
			if (shown++ < 5)
				cr_log_warn("%s: thread %u: %llu lost between seq %llu and %llu, "
					    "where %llu are missing", what, l->tid,
					    (unsigned long long)t[k].lost, (unsigned long long)t[k].seq,
					    (unsigned long long)l->n, (unsigned long long)skipped);
			misplaced += t[k].nloss;
		} else if (t[k].nloss && ((t[k].seen && t[k].first_loss_ns < t[k].ns) ||
					  t[k].last_loss_ns > l->ns)) {
			untimed += t[k].nloss;
		}
		t[k].seen = true;
		t[k].seq = l->n;
		t[k].ns = l->ns;
		t[k].lost = t[k].nloss = 0;
	}
	cr_log_info("%s: %zu lines, %zu loss lines, %zu not at their gap, %zu timed outside it, "
		    "%zu lines out of time order", what, ls->n, losses, misplaced, untimed, disorder);
	cr_expect_eq(ls->bad, 0, "%s: %zu lines did not parse", what, ls->bad);
	cr_expect_eq(ls->untyped, 0, "%s: %zu objects without \"type\"", what, ls->untyped);
	cr_expect_eq(misplaced, 0, "%s: %zu of %zu loss lines are not at their gap", what,
		     misplaced, losses);
	cr_expect_eq(untimed, 0, "%s: %zu loss lines have a time outside their gap", what, untimed);
	cr_expect_eq(disorder, 0, "%s: %zu lines out of time order", what, disorder);
	return losses;
}

/* Four threads overflow their 16 KiB rings, paced, while the daemon is
 * stopped (SIGSTOP) four times. Before loss records carried their own
 * time, a loss line took the time of whatever event the reader had
 * decoded last, often another thread's (or 0 at the start of a file), and
 * sorted there, away from its gap. */
Test(loss, loss_lines_sit_at_their_gap_between_their_own_threads_events)
{
	struct live e;
	char cmd[900], json[400], text[400];
	const char *argv[] = { EMITTER_PATH, "4", "25000", "--pause-us", "200", NULL };
	const char *env[] = { "RINGLOG_RING_SIZE=16K", NULL };
	struct lines lj = { 0 }, lt = { 0 };
	pid_t d, em;

	live_init(&e);
	d = live_daemon(&e, NULL);
	em = live_spawn(argv, env, "/dev/null");
	sleep_ms(200);
	for (int i = 0; i < 4; i++) {
		kill(d, SIGSTOP);
		sleep_ms(50);
		kill(d, SIGCONT);
		sleep_ms(100);
	}
	live_wait_ok(em, "emitter");
	live_daemon_stop(d);

	snprintf(json, sizeof(json), "%s/read.json", e.dir);
	snprintf(text, sizeof(text), "%s/read.txt", e.dir);
	snprintf(cmd, sizeof(cmd), CLI " read --dir '%s' --json > '%s'", e.store, json);
	must_run(cmd);
	snprintf(cmd, sizeof(cmd), CLI " read --dir '%s' > '%s'", e.store, text);
	must_run(cmd);
	parse_json(json, &lj);
	parse_text(text, &lt);
	cr_expect_gt(check_placement(&lj, "read --json"), 3, "the rings did not overflow");
	check_placement(&lt, "read");
	free(lj.l);
	free(lt.l);
	live_cleanup(&e);
}

/* The sum of "lost" over the loss lines of `read --json ARGS`, through jq
 * as a user would; *typed: every JSON object had a "type". */
static uint64_t read_lost(const struct live *e, const char *args, bool *typed)
{
	char cmd[900], out[256];
	unsigned long long sum = 0, untyped = 1;

	snprintf(cmd, sizeof(cmd), CLI " read --dir '%s' --json %s | jq -r 'if has(\"type\") "
		 "then (if .type == \"loss\" then .lost else empty end) else \"untyped\" end' | "
		 "awk '/untyped/ { u++ } /^[0-9]+$/ { s += $1 } END { print s + 0, u + 0 }'",
		 e->store, args);
	live_run(cmd, out, sizeof(out));
	cr_expect_eq(sscanf(out, "%llu %llu", &sum, &untyped), 2, "%s: %s", cmd, out);
	*typed = untyped == 0;
	return sum;
}

/* A program overflows its ring; status gives its provider the loss, says
 * since when its counters run and what the store holds in all, which stays
 * after a restart and with the daemon down. read and tail show the loss to
 * its own pid and provider only, and type every JSON object. */
Test(loss, status_attributes_losses_and_gives_the_stores_totals_and_filters_apply_to_losses)
{
	struct live e;
	static char out[1 << 20];
	char cmd[900], path[3][400], pidarg[64];
	const char *argv[] = { EMITTER_PATH, "1", "300000", NULL };
	const char *env[] = { "RINGLOG_RING_SIZE=64K", NULL }; /* overflows at full speed */
	uint64_t ring, attributed = 0, stored, store_events, store_lost, all, mine, other, t0;
	json_t *st, *v;
	size_t i;
	bool typed;
	pid_t d, em, tp[3];

	if (live_run("command -v jq >/dev/null", NULL, 0) != 0)
		cr_skip_test("needs jq to check the JSON output as a user would");
	live_init(&e);
	t0 = (uint64_t)time(NULL) * 1000000000ull;
	d = live_daemon(&e, NULL);
	/* tails: another pid, another provider, and every loss in JSON */
	snprintf(path[0], sizeof(path[0]), "%s/tail-pid", e.dir);
	snprintf(path[1], sizeof(path[1]), "%s/tail-prov", e.dir);
	snprintf(path[2], sizeof(path[2]), "%s/tail-json", e.dir);
	for (int k = 0; k < 3; k++) {
		static const char *const args[] = { "--pid 1", "--provider Other.Provider", "--json" };

		tp[k] = fork();
		cr_assert(tp[k] >= 0);
		if (tp[k] == 0) {
			snprintf(cmd, sizeof(cmd), "exec " CLI " tail %s > '%s' 2>&1", args[k], path[k]);
			execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
			_exit(127);
		}
	}
	sleep_ms(400);
	em = live_spawn(argv, env, "/dev/null");
	live_wait_ok(em, "emitter");
	must_run(CLI " emit Other.Provider Ev n=1");
	sleep_ms(1300); /* a flush interval: everything on disk */
	for (int k = 0; k < 3; k++) {
		kill(tp[k], SIGINT);
		waitpid(tp[k], NULL, 0);
	}

	cr_assert((st = status_json("")));
	ring = jint(st, "lost", "ring");
	stored = jint(st, NULL, "stored_events");
	cr_expect_gt(ring, 0, "nothing was lost: the ring did not overflow");
	json_array_foreach(json_object_get(st, "providers"), i, v)
		if (!strcmp(json_string_value(json_object_get(v, "name")), "Test.Emitter"))
			attributed = jint(v, NULL, "lost_ring");
	/* Loss still pending when the program ended is counted by the daemon
	 * (reason "exit"), without a provider: it is the unattributed rest. */
	cr_expect_gt(attributed, 0, "Test.Emitter's LOST-RING is 0 of %llu ring overflow",
		     (unsigned long long)ring);
	cr_expect_eq(attributed + jint(st, "lost", "ring_unattributed"), ring,
		     "Test.Emitter's LOST-RING %llu + unattributed %llu != ring overflow %llu",
		     (unsigned long long)attributed,
		     (unsigned long long)jint(st, "lost", "ring_unattributed"),
		     (unsigned long long)ring);
	cr_expect(jint(st, "lost", "since_ns") >= t0 - 1000000000ull &&
		  jint(st, "lost", "since_ns") <= (uint64_t)time(NULL) * 1000000000ull,
		  "lost.since_ns %llu is not this daemon's start",
		  (unsigned long long)jint(st, "lost", "since_ns"));
	store_events = jint(st, "store", "events");
	store_lost = jint(st, "store", "lost");
	cr_log_info("status: ring overflow %llu (Test.Emitter's LOST-RING %llu, unattributed %llu), "
		    "stored %llu; the store holds %llu events and counts %llu lost",
		    (unsigned long long)ring, (unsigned long long)attributed,
		    (unsigned long long)jint(st, "lost", "ring_unattributed"),
		    (unsigned long long)stored, (unsigned long long)store_events,
		    (unsigned long long)store_lost);
	cr_expect_eq(store_events, stored, "store.events %llu, stored %llu",
		     (unsigned long long)store_events, (unsigned long long)stored);
	cr_expect_eq(store_lost, ring, "store.lost %llu, ring overflow %llu",
		     (unsigned long long)store_lost, (unsigned long long)ring);
	json_decref(st);
	cr_assert_eq(live_run(CLI " status", out, sizeof(out)), 0);
	cr_expect(strstr(out, "since ringlogd started") && strstr(out, "LOST-RING") &&
		  strstr(out, "store holds"), "status does not say what its losses count:\n%s", out);
	snprintf(cmd, sizeof(cmd), " %llu counted lost", (unsigned long long)ring);
	cr_expect(strstr(out, cmd), "status text without the store's %s:\n%s", cmd, out);

	/* A new daemon counts from 0; the store still holds what it held. */
	live_daemon_stop(d);
	d = live_daemon(&e, NULL);
	cr_assert((st = status_json("")));
	cr_expect_eq(jint(st, "lost", "ring"), 0);
	cr_expect_eq(jint(st, "store", "lost"), ring, "after a restart the store counts %llu lost",
		     (unsigned long long)jint(st, "store", "lost"));
	cr_expect_eq(jint(st, "store", "events"), stored);
	json_decref(st);
	live_daemon_stop(d);
	snprintf(cmd, sizeof(cmd), "--dir '%s' --socket '%s/none'", e.store, e.dir);
	cr_assert((st = status_json(cmd)), "status with the daemon down printed no JSON");
	cr_expect_eq(jint(st, "store", "lost"), ring, "offline, the store counts %llu lost",
		     (unsigned long long)jint(st, "store", "lost"));
	cr_expect_eq(jint(st, "store", "events"), stored);
	json_decref(st);

	/* read: losses go with their writer and provider */
	all = read_lost(&e, "", &typed);
	cr_expect(typed, "read --json printed an object without \"type\"");
	cr_expect_eq(all, ring, "read shows %llu lost, status counted %llu",
		     (unsigned long long)all, (unsigned long long)ring);
	snprintf(pidarg, sizeof(pidarg), "--pid %d", (int)em);
	mine = read_lost(&e, pidarg, &typed);
	cr_expect_eq(mine, ring, "read %s shows %llu lost", pidarg, (unsigned long long)mine);
	other = read_lost(&e, "--pid 1", &typed);
	cr_expect_eq(other, 0, "read --pid 1 shows another program's %llu lost",
		     (unsigned long long)other);
	other = read_lost(&e, "--provider Other.Provider", &typed);
	cr_expect_eq(other, 0, "read --provider Other.Provider shows Test.Emitter's %llu lost",
		     (unsigned long long)other);
	mine = read_lost(&e, "--provider 'Test.*'", &typed);
	cr_expect_eq(mine, attributed, "read --provider 'Test.*' shows %llu lost, %llu attributed",
		     (unsigned long long)mine, (unsigned long long)attributed);

	/* tail: the same rules, live */
	slurp(path[0], out, sizeof(out));
	cr_expect(!strstr(out, "events lost"), "tail --pid 1 shows another program's loss:\n%.2000s",
		  out);
	slurp(path[1], out, sizeof(out));
	cr_expect(!strstr(out, "events lost"), "tail --provider Other.Provider shows Test.Emitter's "
		  "loss:\n%.2000s", out);
	cr_expect(strstr(out, " Other.Provider Ev "), "tail --provider Other.Provider: %.2000s", out);
	snprintf(cmd, sizeof(cmd), "jq -s '([.[] | has(\"type\")] | all), "
		 "([.[] | select(.type == \"loss\")] | length)' '%s'", path[2]);
	cr_assert_eq(live_run(cmd, out, sizeof(out)), 0, "tail --json is not JSON: %s", out);
	cr_expect(!strncmp(out, "true\n", 5) && atoi(out + 5) > 0,
		  "tail --json: every object typed, loss objects among them? %s", out);
	live_cleanup(&e);
}

/* Rewrite header field bytes [off, off + n) of the segment at path with v
 * and recompute the header's checksum, as a forger would. */
static void forge(const char *path, size_t off, const void *v, size_t n)
{
	struct ringlog_seg_hdr h;
	int fd = open(path, O_RDWR);

	cr_assert(fd >= 0 && pread(fd, &h, sizeof(h), 0) == (ssize_t)sizeof(h), "%s", path);
	memcpy((uint8_t *)&h + off, v, n);
	h.hdr_crc = ringlog_seg_hdr_crc(&h);
	cr_assert_eq(pwrite(fd, &h, sizeof(h), 0), (ssize_t)sizeof(h));
	close(fd);
}

/* `ringlog read FILE`: lines on stdout, its stderr and exit code, and its
 * first and last lines (the earliest and the latest time shown). */
static int read_file(const struct live *e, const char *file, int *rc, char *err, size_t errlen,
		     char *ends, size_t endslen)
{
	char cmd[2000], out[64], errp[400], outp[400];

	snprintf(errp, sizeof(errp), "%s/err", e->dir);
	snprintf(outp, sizeof(outp), "%s/out", e->dir);
	snprintf(cmd, sizeof(cmd), CLI " read '%s' > '%s' 2>'%s'", file, outp, errp);
	*rc = live_run(cmd, NULL, 0);
	slurp(errp, err, errlen);
	snprintf(cmd, sizeof(cmd), "head -1 '%s'; tail -1 '%s'", outp, outp);
	live_run(cmd, ends, endslen);
	snprintf(cmd, sizeof(cmd), "wc -l < '%s'", outp);
	live_run(cmd, out, sizeof(out));
	return atoi(out);
}

/* Both lines of ends start with a time within [t0, t1]. */
static void times_within(const char *ends, time_t t0, time_t t1, const char *what)
{
	const char *l = ends;

	for (int k = 0; k < 2 && l; k++, l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		struct tm tm = { 0 };
		time_t t;

		cr_assert(strptime(l, "%Y-%m-%d %H:%M:%S", &tm), "%s: %s", what, ends);
		tm.tm_isdst = -1;
		t = mktime(&tm);
		cr_expect(t >= t0 - 1 && t <= t1 + 1, "%s: events shown at times outside the run:\n%s",
			  what, ends);
	}
}

/* A fresh live store into which one thread emitted 150,000 events (clock:
 * NULL, or an environment setting such as RINGLOG_CLOCK=monotonic), the
 * daemon stopped; the path of its first segment in seg. */
static void store_of_150k(struct live *e, char *seg, size_t len, const char *clock)
{
	const char *argv[] = { EMITTER_PATH, "1", "150000", NULL };
	/* a ring that holds the whole run: with 8 MiB a daemon slowed for a
	 * few ms (CI 89) let the emitter overflow it, and the loss line the
	 * reader printed was counted as an event */
	const char *env[] = { "RINGLOG_RING_SIZE=32M", clock, NULL };
	char cmd[700];
	pid_t d;

	live_init(e);
	d = live_daemon(e, NULL);
	live_wait_ok(live_spawn(argv, env, "/dev/null"), "emitter");
	live_daemon_stop(d);
	snprintf(cmd, sizeof(cmd), "ls '%s'/*.rlseg | head -1", e->store);
	cr_assert_eq(live_run(cmd, seg, len), 0);
	seg[strcspn(seg, "\n")] = 0;
}

/* A segment with valid checksums but a header_size that would skip bytes
 * 4096..61440, or a tsc_hz that gives garbage times: the reader names the
 * file, the field and its value, reads every event, and shows no time it
 * cannot vouch for. */
Test(loss, forged_header_size_and_tsc_hz_are_named_and_skip_nothing)
{
	struct live e;
	static char err[1 << 16], first[1 << 12];
	char cmd[1600], seg[600], forged[600];
	uint16_t hs = 61440;
	uint64_t hz = 1000, tsc_hz;
	struct ringlog_seg_hdr h;
	int rc, lines, want, fd;
	time_t t0 = time(NULL), t1;

	store_of_150k(&e, seg, sizeof(seg), NULL);
	t1 = time(NULL);
	fd = open(seg, O_RDONLY);
	cr_assert(fd >= 0 && pread(fd, &h, sizeof(h), 0) == (ssize_t)sizeof(h));
	close(fd);
	tsc_hz = h.tsc_hz;
	want = read_file(&e, seg, &rc, err, sizeof(err), first, sizeof(first));
	cr_assert_eq(rc, 0, "the untouched segment: exit %d, %s", rc, err);
	cr_assert_gt(want, 100000, "only %d events in the first segment", want);
	times_within(first, t0, t1, "the untouched segment");

	snprintf(forged, sizeof(forged), "%s/header-size.rlseg", e.dir);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", seg, forged);
	must_run(cmd);
	forge(forged, offsetof(struct ringlog_seg_hdr, header_size), &hs, sizeof(hs));
	lines = read_file(&e, forged, &rc, err, sizeof(err), first, sizeof(first));
	cr_log_info("header_size 61440: %d of %d events read; stderr: %s", lines, want, err);
	cr_expect_eq(lines, want, "header_size 61440: %d of %d events read", lines, want);
	cr_expect(strstr(err, forged) && strstr(err, "header_size") && strstr(err, "61440"),
		  "the reader does not name the file, the field and the value: %s", err);
	cr_expect_eq(rc, 4, "a forged header is damage: exit %d", rc);

	snprintf(forged, sizeof(forged), "%s/tsc-hz.rlseg", e.dir);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", seg, forged);
	must_run(cmd);
	forge(forged, offsetof(struct ringlog_seg_hdr, tsc_hz), &hz, sizeof(hz));
	lines = read_file(&e, forged, &rc, err, sizeof(err), first, sizeof(first));
	cr_log_info("tsc_hz 1000 (was %llu): %d of %d events read; stderr: %s; first and last: %s",
		    (unsigned long long)tsc_hz, lines, want, err, first);
	cr_expect_eq(lines, want, "tsc_hz 1000: %d of %d events read", lines, want);
	cr_expect(strstr(err, forged) && strstr(err, "tsc_hz") && strstr(err, "1000"),
		  "the reader does not name the file, the field and the value: %s", err);
	cr_expect_eq(rc, 4, "a forged header is damage: exit %d", rc);
	times_within(first, t0, t1, "tsc_hz 1000");

	/* a retention class name no config allows, 32 bytes with no NUL:
	 * named, read as the default class (every event, once) */
	{
		char cls[32];

		memset(cls, 'Z', sizeof(cls));
		snprintf(forged, sizeof(forged), "%s/class-name.rlseg", e.dir);
		snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", seg, forged);
		must_run(cmd);
		forge(forged, offsetof(struct ringlog_seg_hdr, class_name), cls, sizeof(cls));
		lines = read_file(&e, forged, &rc, err, sizeof(err), first, sizeof(first));
		cr_expect_eq(lines, want, "class_name forged: %d of %d events read", lines, want);
		cr_expect(strstr(err, forged) && strstr(err, "class_name") &&
			  strstr(err, "read as the default class"),
			  "the reader does not name the file and the field: %s", err);
		cr_expect_eq(rc, 4, "a forged header is damage: exit %d", rc);
	}
	{
		/* the daemon's startup scan names a forged header too */
		static char log[1 << 16];

		snprintf(cmd, sizeof(cmd), "cp '%s/header-size.rlseg' '%s'", e.dir, seg);
		must_run(cmd);
		live_daemon_stop(live_daemon(&e, NULL));
		live_log(&e, log, sizeof(log));
		cr_expect(strstr(log, seg) && strstr(log, "header_size is 61440"),
			  "ringlogd's scan does not name the forged header_size: %s", log);
	}
	live_cleanup(&e);
}

/* Overwrite bytes [off, off + n) of the file at path with zeros, checksum
 * untouched: what a disk, a tool or a hand does, not a forger. */
static void zero_bytes(const char *path, off_t off, size_t n)
{
	static const uint8_t z[4096];
	int fd = open(path, O_RDWR);

	cr_assert(fd >= 0 && n <= sizeof(z), "%s", path);
	cr_assert_eq(pwrite(fd, z, n, off), (ssize_t)n);
	close(fd);
}

/* A segment whose header magic was hit (zeroed) is still a segment when a
 * valid chunk starts at byte 4096: readers read every event and say what
 * they did, the daemon's scan indexes it (its events counted, its bytes in
 * the budget, deletable by it) instead of ignoring the whole file. With
 * only the magic hit, the header's checksum holds once it is put back and
 * every field is trusted; with the whole header zeroed none is, and TSC
 * times are shown at their chunk's. A file with no valid chunk at 4096 is
 * still refused. (An outsider's test: the magic zeroed, the file refused,
 * all its events gone from read and status.) */
Test(loss, a_segment_whose_magic_was_hit_is_read_from_its_chunks)
{
	struct live e;
	static char err[1 << 16], first[1 << 12], log[1 << 16];
	char cmd[1600], seg[600], hit[600];
	int rc, lines, want;
	time_t t0 = time(NULL), t1;
	json_t *st, *s = NULL;
	size_t i;
	pid_t d;

	/* the monotonic clock: with no calibration its times came out as
	 * 1970 plus the uptime (TSC ones at their chunk's: the test above) */
	store_of_150k(&e, seg, sizeof(seg), "RINGLOG_CLOCK=monotonic");
	t1 = time(NULL);
	want = read_file(&e, seg, &rc, err, sizeof(err), first, sizeof(first));
	cr_assert_eq(rc, 0, "the untouched segment: exit %d, %s", rc, err);
	cr_assert_gt(want, 100000, "only %d events in the first segment", want);

	/* the magic alone: put back, the header trusted */
	snprintf(hit, sizeof(hit), "%s/magic.rlseg", e.dir);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", seg, hit);
	must_run(cmd);
	zero_bytes(hit, 0, 8);
	lines = read_file(&e, hit, &rc, err, sizeof(err), first, sizeof(first));
	cr_expect_eq(lines, want, "magic zeroed: %d of %d events read; %s", lines, want, err);
	cr_expect(strstr(err, hit) && strstr(err, "magic is 0x0000000000000000") &&
		  strstr(err, "put back"), "the reader does not say what it did: %s", err);
	cr_expect_eq(rc, 4, "a hit magic is damage: exit %d", rc);
	times_within(first, t0, t1, "magic zeroed");

	/* the whole header: its chunks read, nothing of it trusted */
	snprintf(hit, sizeof(hit), "%s/header.rlseg", e.dir);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", seg, hit);
	must_run(cmd);
	zero_bytes(hit, 0, 4096);
	lines = read_file(&e, hit, &rc, err, sizeof(err), first, sizeof(first));
	cr_log_info("header zeroed: %d of %d events read; stderr: %s; first and last: %s", lines,
		    want, err, first);
	cr_expect_eq(lines, want, "header zeroed: %d of %d events read; %s", lines, want, err);
	cr_expect(strstr(err, hit) && strstr(err, "not trusted"),
		  "the reader does not say what it did: %s", err);
	cr_expect_eq(rc, 4, "a zeroed header is damage: exit %d", rc);
	times_within(first, t0, t1, "header zeroed");

	/* the first chunk's header too: not a segment any more */
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s/none.rlseg'", hit, e.dir);
	must_run(cmd);
	snprintf(hit, sizeof(hit), "%s/none.rlseg", e.dir);
	zero_bytes(hit, 4096, 64);
	lines = read_file(&e, hit, &rc, err, sizeof(err), first, sizeof(first));
	cr_expect_eq(lines, 0, "no valid chunk at 4096: %d events read", lines);
	cr_expect(strstr(err, "not a ringlog segment"), "%s", err);
	cr_expect_eq(rc, 4, "exit %d", rc);

	/* the daemon indexes the zeroed-header segment: its events and bytes */
	snprintf(cmd, sizeof(cmd), "cp '%s/header.rlseg' '%s'", e.dir, seg);
	must_run(cmd);
	d = live_daemon(&e, NULL);
	st = live_status_json();
	cr_assert(st, "status");
	json_array_foreach(json_object_get(st, "segments"), i, s)
		if (!strcmp(json_string_value(json_object_get(s, "path")), seg))
			break;
	cr_expect(i < json_array_size(json_object_get(st, "segments")),
		  "ringlogd does not index %s", seg);
	if (i < json_array_size(json_object_get(st, "segments")))
		cr_expect_eq(json_integer_value(json_object_get(s, "events")), want,
			     "ringlogd counts %lld of its %d events",
			     (long long)json_integer_value(json_object_get(s, "events")), want);
	json_decref(st);
	live_daemon_stop(d);
	live_log(&e, log, sizeof(log));
	cr_expect(strstr(log, seg) && strstr(log, "not trusted"),
		  "ringlogd's scan does not name the damaged header: %s", log);
	live_cleanup(&e);
}
