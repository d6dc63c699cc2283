/* tests/test-operate.c - what an operator types every day (issue 24,
 * operating), against a real daemon and real programs: status in human
 * durations with rows in every table, status --watch, enable and disable
 * reaching a running program (and refused to a non-member), list, vacuum,
 * max_retention, and the completion files.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>

#include <dirent.h>
#include <jansson.h>
#include <regex.h>
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

TestSuite(operate, .fini = th_check_leaks, .timeout = 300);

#define CLI RINGLOG_CLI_PATH
#define PROVIDER "Test.Emitter" /* tests/emitter.c's Tick{thread, seq, text}, info, 0x1 */

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

static bool have(const char *prog)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", prog);
	return system(cmd) == 0;
}

/* A daemon on a fresh private store with the JSON config members extra
 * ("" for none), flushing every 100 ms. */
static pid_t daemon_with(struct live *e, const char *extra)
{
	char conf[400], text[1024];

	live_init(e);
	snprintf(conf, sizeof(conf), "%s/ringlogd.json", e->dir);
	snprintf(text, sizeof(text), "{\"flush_interval\": \"100ms\"%s%s}\n", *extra ? ", " : "",
		 extra);
	live_write_file(conf, text);
	return live_daemon(e, "--config", conf, NULL);
}

/* An emitter that runs until SIGUSR1: 100 events, then pause_us. */
static pid_t emitter_running(long pause_us)
{
	static char pause[32];
	const char *argv[] = { EMITTER_PATH, "1", "0", "--pause-us", pause, NULL };

	snprintf(pause, sizeof(pause), "%ld", pause_us);
	return live_spawn(argv, NULL, "/dev/null");
}

static void emitter_stop(pid_t pid)
{
	kill(pid, SIGUSR1);
	live_wait_ok(pid, "test-emitter");
}

static json_t *status_json(void)
{
	static char out[1 << 20];
	json_t *j;

	cr_assert_eq(live_run(CLI " status --json", out, sizeof(out)), 0, "status: %s", out);
	j = json_loads(out, 0, NULL);
	cr_assert(j, "status --json is not JSON: %s", out);
	return j;
}

/* What the daemon counts stored for provider, or 0 before it knows it. */
static uint64_t stored_of(const char *provider)
{
	json_t *j = status_json(), *v;
	uint64_t n = 0;
	size_t i;

	json_array_foreach(json_object_get(j, "providers"), i, v)
		if (!strcmp(json_string_value(json_object_get(v, "name")), provider))
			n = (uint64_t)json_integer_value(json_object_get(v, "stored"));
	json_decref(j);
	return n;
}

/* Wait (5 s at most) until a running program has declared PROVIDER, and
 * so has been sent its enablement (registry.c sends it with the metadata):
 * a loaded machine may start the program late. */
static void wait_declared(void)
{
	char out[4096];
	int i;

	for (i = 0; i < 50; i++) {
		if (live_run(CLI " list --providers", out, sizeof(out)) == 0 && strstr(out, PROVIDER))
			return;
		sleep_ms(100);
	}
	cr_assert_fail("no program declared " PROVIDER " within 5 s");
}

static bool matches(const char *s, const char *pattern)
{
	regex_t re;
	bool m;

	cr_assert_eq(regcomp(&re, pattern, REG_EXTENDED | REG_NEWLINE), 0, "%s", pattern);
	m = regexec(&re, s, 0, NULL, 0) == 0;
	regfree(&re);
	return m;
}

/* Every table header in a status screen is followed by a row or a line
 * saying why there is none: never a header and then a blank line. */
static void expect_rows_after_headers(const char *out)
{
	static const char *const heads[] = { "PID ", "PROVIDER ", "SEGMENT ", "RUN-TIME RULE" };

	for (size_t k = 0; k < sizeof(heads) / sizeof(heads[0]); k++)
		for (const char *p = out; (p = strstr(p, heads[k])); p++) {
			const char *nl = strchr(p, '\n');

			if (p != out && p[-1] != '\n')
				continue; /* not at the start of a line */
			cr_expect(nl && nl[1] && nl[1] != '\n', "table \"%s\" has no row:\n%s", heads[k], out);
		}
}

Test(operate, status_speaks_in_human_durations_and_never_prints_an_empty_table)
{
	struct live e;
	static char out[1 << 16];
	pid_t d = daemon_with(&e, ""), em;

	/* Nothing connected yet: the tables say so. */
	cr_assert_eq(live_run(CLI " status", out, sizeof(out)), 0, "%s", out);
	expect_rows_after_headers(out);
	cr_expect(strstr(out, "(no program is connected now"), "empty PID table unexplained:\n%s", out);
	cr_expect(strstr(out, "(no provider declared"), "empty provider table unexplained:\n%s", out);

	/* A program writing: its row, a rate, and when the oldest data goes,
	 * in days and hours, not in seconds by the hundred thousand. */
	em = emitter_running(2000);
	wait_declared();
	sleep_ms(3000);
	cr_assert_eq(live_run(CLI " status", out, sizeof(out)), 0, "%s", out);
	expect_rows_after_headers(out);
	cr_expect(matches(out, "^[0-9]+ +test-emitter "), "no row for the running program:\n%s", out);
	cr_expect(matches(out, "^oldest data deleted in +[0-9]+ (y|d|h|min|s)( [0-9]+ (d|h|min|s))? "
				"at this rate$"), "not a human duration:\n%s", out);
	cr_expect(!matches(out, "[0-9]{4,} s"), "a duration in bare seconds:\n%s", out);
	cr_expect(matches(out, "^oldest event .*\\(([0-9]+ (min|s) ?)+ ago\\)$"), "%s", out);
	emitter_stop(em);
	live_daemon_stop(d);
	live_cleanup(&e);
}

/* What a power loss may take: how often segment files are synced, when
 * last, what waits, what failed (store/durable.c). */
Test(operate, status_says_how_often_segment_files_are_synced)
{
	struct live e;
	static char out[1 << 16];
	pid_t d = daemon_with(&e, "\"sync_interval\": \"300ms\""), em;
	json_t *st, *v;
	struct timespec ts;
	uint64_t now, last;

	em = emitter_running(2000);
	wait_declared();
	sleep_ms(1500);
	cr_assert_eq(live_run(CLI " status", out, sizeof(out)), 0, "%s", out);
	cr_expect(matches(out, "^durability +segment files synced at most every 300 ms, last "
				"[0-9]+ s ago; [0-9]+ closed segments waiting; 0 syncs failed$"),
		  "no durability line:\n%s", out);
	cr_expect(!strstr(out, "SYNC PROBLEM"), "%s", out);
	st = live_status_json();
	cr_assert(st, "no status");
	v = json_object_get(st, "durability");
	clock_gettime(CLOCK_REALTIME, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	last = (uint64_t)json_integer_value(json_object_get(v, "last_round_ns"));
	cr_expect_eq(json_integer_value(json_object_get(v, "sync_interval_ns")), 300000000);
	/* a program writing all along: a round at least every interval and
	 * a tenth of flush_interval (100 ms) */
	cr_expect(last && now - last < 2000000000u, "last round %lld ns ago",
		  (long long)(now - last));
	cr_expect_eq(json_integer_value(json_object_get(v, "sync_failures")), 0);
	json_decref(st);
	emitter_stop(em);
	live_daemon_stop(d);
	live_cleanup(&e);
}

Test(operate, status_watch_refreshes_and_redraws_on_a_terminal)
{
	struct live e;
	static char out[1 << 16];
	char cmd[600];
	pid_t d = daemon_with(&e, ""), em = emitter_running(5000);
	int n = 0, rc;

	/* Piped: one screen after another, every 1 s; Ctrl-C ends it with 0. */
	rc = live_run("timeout --preserve-status -s INT -k 5 2.6 " CLI " status --watch 1", out,
		      sizeof(out));
	cr_expect_eq(rc, 0, "status --watch after Ctrl-C: exit %d\n%s", rc, out);
	for (const char *p = out; (p = strstr(p, "ringlog status --watch: every 1 s")); p++)
		n++;
	cr_expect(n >= 2 && n <= 4, "%d screens in 2.6 s:\n%s", n, out);
	cr_expect(!strstr(out, "\033[2J"), "escape codes into a pipe:\n%s", out);
	cr_expect(matches(out, "^in +[0-9]+ events/s stored") && matches(out, "^out +") &&
		  matches(out, "^loss +") && matches(out, "^disk +") && matches(out, "^horizon +") &&
		  matches(out, "^[0-9]+ +test-emitter +[0-9]+ +[0-9]+"), "%s", out);

	/* --json: from the second document on, the rates between two
	 * refreshes, which are what the counters moved over the interval
	 * (the daemon's rate_* are smoothed: an outsider read 20,739 -> 37,130
	 * events/s against a steady ~45,000) */
	rc = live_run("timeout --preserve-status -s INT -k 5 2.6 " CLI " status --watch 1 --json",
		      out, sizeof(out));
	cr_expect_eq(rc, 0, "status --watch --json: exit %d", rc);
	{
		json_t *prev = NULL, *j, *w;
		int docs = 0, rated = 0;

		for (char *l = strtok(out, "\n"); l; l = strtok(NULL, "\n"), docs++) {
			j = json_loads(l, 0, NULL);
			cr_assert(j, "not JSON: %s", l);
			if ((w = json_object_get(j, "watch")) && prev) {
				double dt = json_real_value(json_object_get(w, "interval_s"));
				double moved = (double)(json_integer_value(json_object_get(j, "stored_events")) -
							json_integer_value(json_object_get(prev, "stored_events")));
				double got = json_real_value(json_object_get(w, "events_per_s")) * dt;

				cr_expect(dt > 0 && got > moved - 1 && got < moved + 1,
					  "events_per_s x interval %.1f, the counter moved %.0f", got, moved);
				rated++;
			}
			json_decref(prev);
			prev = j;
		}
		json_decref(prev);
		cr_expect(docs >= 2 && rated == docs - 1, "%d documents, %d with watch rates", docs,
			  rated);
	}

	/* On a terminal (script(1) gives it one): cleared and redrawn in place. */
	if (!have("script")) {
		cr_log_warn("no script(1) (bsdutils): the terminal redraw is not checked");
	} else {
		snprintf(cmd, sizeof(cmd), "RINGLOG_SOCKET='%s' script -qec 'timeout -s INT -k 5 2.6 "
			 CLI " status --watch 1' /dev/null", e.sock);
		live_run(cmd, out, sizeof(out));
		n = 0;
		for (const char *p = out; (p = strstr(p, "\033[H\033[2J")); p++)
			n++;
		cr_expect(n >= 2, "%d redraws on a terminal:\n%s", n, out);
	}
	emitter_stop(em);
	live_daemon_stop(d);
	live_cleanup(&e);
}

Test(operate, enable_and_disable_reach_a_running_program)
{
	struct live e;
	static char out[1 << 16];
	pid_t d = daemon_with(&e, "\"providers\": {\"" PROVIDER "\": {\"level\": \"warning\"}}"), em;
	uint64_t a, b, base;
	json_t *j;
	int i;

	em = emitter_running(2000);
	/* Until its first ENABLE arrives the program goes by the library's
	 * default: a few events may be stored at its start, none after. */
	wait_declared();
	sleep_ms(500);
	a = stored_of(PROVIDER);
	sleep_ms(1000);
	b = stored_of(PROVIDER);
	cr_expect_eq(a, b, "info events stored while the config says warning: %llu then %llu",
		     (unsigned long long)a, (unsigned long long)b);

	cr_assert_eq(live_run(CLI " enable " PROVIDER, out, sizeof(out)), 0, "%s", out);
	cr_expect(strstr(out, "enabled up to verbose") && strstr(out, "applies to 1 provider now: "
		  PROVIDER), "%s", out);
	base = b;
	for (i = 0; i < 50 && stored_of(PROVIDER) <= base + 100; i++)
		sleep_ms(100);
	cr_expect_lt(i, 50, "enable did not reach the running program in 5 s");

	cr_assert_eq(live_run(CLI " status", out, sizeof(out)), 0, "%s", out);
	cr_expect(matches(out, "^" PROVIDER " +verbose +0xffffffffffffffff +[0-9]+ s ago by uid"),
		  "status does not show the rule:\n%s", out);
	expect_rows_after_headers(out);

	cr_assert_eq(live_run(CLI " disable 'Test.*'", out, sizeof(out)), 0, "%s", out);
	cr_expect(strstr(out, "disabled"), "%s", out);
	sleep_ms(1000); /* the program applies ENABLE; what it wrote before drains */
	a = stored_of(PROVIDER);
	sleep_ms(1500);
	b = stored_of(PROVIDER);
	cr_expect_eq(a, b, "events still stored after disable: %llu then %llu",
		     (unsigned long long)a, (unsigned long long)b);
	cr_expect_gt(a, base + 100);

	/* SIGHUP: the configuration applies alone again. */
	kill(d, SIGHUP);
	sleep_ms(500);
	j = status_json();
	cr_expect_eq(json_array_size(json_object_get(j, "enable_rules")), 0,
		     "run-time rules survived SIGHUP");
	json_decref(j);

	/* Bad input is a usage error naming the value. */
	cr_expect_eq(live_run(CLI " enable " PROVIDER " loud 2>&1", out, sizeof(out)), 2);
	cr_expect(strstr(out, "level \"loud\""), "%s", out);
	cr_expect_eq(live_run(CLI " enable " PROVIDER " info 0xZZ 2>&1", out, sizeof(out)), 2);
	cr_expect(strstr(out, "keywords \"0xZZ\""), "%s", out);
	cr_expect_eq(live_run(CLI " disable 2>&1", out, sizeof(out)), 2);
	emitter_stop(em);
	live_daemon_stop(d);
	live_cleanup(&e);
}

/* Throw-away users and groups of our own (test-service has its own names:
 * the two may run at once). */
#define OP_W "rlop-w"
#define OP_R "rlop-r"

static void drop_users(void)
{
	if (system("for u in rlop-none rlop-writer rlop-reader; do userdel $u >/dev/null 2>&1; "
		   "done; groupdel " OP_W " >/dev/null 2>&1; groupdel " OP_R " >/dev/null 2>&1; true")) {
		/* best effort */
	}
}

static int cli_as(const struct live *e, const char *user, const char *args, char *out, size_t cap)
{
	char cmd[1400];

	snprintf(cmd, sizeof(cmd), "setpriv --reuid=%s --regid=$(id -g %s) --init-groups "
		 "env RINGLOG_SOCKET='%s' " CLI " %s 2>&1", user, user, e->sock, args);
	return live_run(cmd, out, cap);
}

Test(operate, enable_disable_and_vacuum_are_refused_to_non_readers_with_the_group_named,
     .timeout = 180)
{
	struct live e;
	char out[8192], conf[400];
	pid_t d;

	if (geteuid() != 0)
		cr_skip_test("needs root to create throw-away users and groups");
	if (!have("useradd") || !have("setpriv"))
		cr_skip_test("needs useradd (passwd) and setpriv (util-linux)");
	drop_users();
	cr_assert_eq(system("groupadd " OP_W " && groupadd " OP_R " && "
			    "useradd -M -N -s /bin/sh rlop-none && "
			    "useradd -M -N -s /bin/sh -G " OP_W " rlop-writer && "
			    "useradd -M -N -s /bin/sh -G " OP_R " rlop-reader"), 0);
	live_init(&e);
	chmod(e.dir, 0755);
	snprintf(conf, sizeof(conf), "%s/ringlogd.json", e.dir);
	live_write_file(conf, "{\"socket_group\": \"" OP_W "\", \"read_group\": \"" OP_R "\"}\n");
	d = live_daemon(&e, "--config", conf, NULL);

	static const char *const cmds[] = { "enable Acme.Net", "disable Acme.Net", "list",
					    "vacuum --size 1G" };
	for (size_t k = 0; k < sizeof(cmds) / sizeof(cmds[0]); k++) {
		int rc = cli_as(&e, "rlop-none", cmds[k], out, sizeof(out));

		cr_expect_neq(rc, 0, "a non-member ran `%s`: %s", cmds[k], out);
		cr_expect(strstr(out, "access refused") && strstr(out, "may not read events") &&
			  strstr(out, OP_R), "`%s` by a non-member: %s", cmds[k], out);
		rc = cli_as(&e, "rlop-writer", cmds[k], out, sizeof(out));
		cr_expect_neq(rc, 0, "a writer ran `%s`: %s", cmds[k], out);
		cr_expect(strstr(out, "may not read events") && strstr(out, OP_R),
			  "`%s` by a writer: %s", cmds[k], out);
	}
	cr_expect_eq(cli_as(&e, "rlop-reader", "enable Acme.Net info", out, sizeof(out)), 0, "%s", out);
	cr_expect(strstr(out, "enabled up to info"), "%s", out);
	/* A writer's status says why it sees no programs. */
	cr_expect_eq(cli_as(&e, "rlop-writer", "status", out, sizeof(out)), 0, "%s", out);
	cr_expect(strstr(out, "(hidden: per-program detail is for root and members of group \"" OP_R),
		  "%s", out);
	live_daemon_stop(d);
	live_cleanup(&e);
	drop_users();
}

Test(operate, list_shows_a_running_programs_events_and_fields)
{
	struct live e;
	static char out[1 << 16];
	pid_t d = daemon_with(&e, ""), em = emitter_running(20000);
	json_t *j, *p, *ev;

	wait_declared();
	cr_assert_eq(live_run(CLI " list", out, sizeof(out)), 0, "%s", out);
	cr_expect(matches(out, "^" PROVIDER "  \\(recorded up to info; declared by pid [0-9]+ "
				"\\(test-emitter\\)\\)$"), "%s", out);
	cr_expect(matches(out, "^    Tick +info +0x1 +info +thread:u32 seq:u64 text:str$"), "%s", out);
	cr_assert_eq(live_run(CLI " list --providers", out, sizeof(out)), 0);
	cr_expect_str_eq(out, PROVIDER "\n");
	cr_assert_eq(live_run(CLI " list --events", out, sizeof(out)), 0);
	cr_expect_str_eq(out, "Tick\n");
	cr_assert_eq(live_run(CLI " list --json 'Test.*'", out, sizeof(out)), 0);
	j = json_loads(out, 0, NULL);
	cr_assert(j, "%s", out);
	p = json_array_get(json_object_get(j, "providers"), 0);
	ev = json_array_get(json_object_get(p, "events"), 0);
	cr_expect_str_eq(json_string_value(json_object_get(ev, "name")), "Tick");
	cr_expect_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(ev, "fields"),
				1), "type")), "u64");
	json_decref(j);
	cr_assert_eq(live_run(CLI " list 'Nothing.*'", out, sizeof(out)), 0);
	cr_expect(strstr(out, "no running program has declared a provider matching"), "%s", out);
	emitter_stop(em);
	live_daemon_stop(d);
	live_cleanup(&e);
}

static int count_segments(const char *store, char *newest, size_t cap)
{
	struct dirent **names;
	int n = scandir(store, &names, NULL, alphasort), k = 0;

	cr_assert(n >= 0);
	for (int i = 0; i < n; i++) {
		if (strstr(names[i]->d_name, ".rlseg")) {
			k++;
			snprintf(newest, cap, "%.40s", names[i]->d_name);
		}
		free(names[i]);
	}
	free(names);
	return k;
}

struct newest {
	uint64_t max_seq;
};

static int on_tick(void *ctx, const struct ringlog_dec_event *ev)
{
	struct newest *n = ctx;

	if (ev->desc->nfields == 3 && ev->values[1].u > n->max_seq)
		n->max_seq = ev->values[1].u;
	return 0;
}

Test(operate, vacuum_keeps_the_newest_data_and_never_the_segment_being_written)
{
	struct live e;
	static char out[1 << 16];
	char newest[64], path[1400];
	pid_t d = daemon_with(&e, "\"max_segment_size\": \"256K\""), em;
	struct newest before = { 0 }, after = { 0 };
	struct live_read r = { .ctx = &before, .on_event = on_tick };
	json_t *j;
	int nseg, i;
	uint64_t used, cur;

	em = emitter_running(200);
	for (i = 0; i < 100 && count_segments(e.store, newest, sizeof(newest)) < 8; i++)
		sleep_ms(100);
	nseg = count_segments(e.store, newest, sizeof(newest));
	cr_assert_geq(nseg, 8, "only %d segments after 10 s", nseg);

	cr_assert_eq(live_run(CLI " vacuum --size 600K", out, sizeof(out)), 0, "%s", out);
	cr_expect(strstr(out, "Deleted segment ") && strstr(out, "Vacuuming done, freed "), "%s", out);
	/* The files first, then the index: the program still writes, so the
	 * index asked later may know more segments, never fewer (counted the
	 * other way round, a slow status let the files run ahead). */
	nseg = count_segments(e.store, newest, sizeof(newest));
	j = status_json();
	used = (uint64_t)json_integer_value(json_object_get(j, "used_bytes"));
	cur = 0;
	{
		json_t *s;
		size_t k;

		json_array_foreach(json_object_get(j, "segments"), k, s)
			if (json_is_true(json_object_get(s, "current")))
				cur = (uint64_t)json_integer_value(json_object_get(s, "seq"));
	}
	/* The index agrees with the directory (the program still writes: a
	 * segment newer than the index may have been made since), and the one
	 * being written is there. */
	{
		json_t *s;
		size_t k;

		json_array_foreach(json_object_get(j, "segments"), k, s)
			cr_expect(access(json_string_value(json_object_get(s, "path")), F_OK) == 0,
				  "the index holds %s, which is gone",
				  json_string_value(json_object_get(s, "path")));
		cr_expect_leq(nseg - (int)json_array_size(json_object_get(j, "segments")), 1,
			      "%d files, the index knows %zu", nseg,
			      json_array_size(json_object_get(j, "segments")));
	}
	/* What the vacuum left when it answered (its own figure: the program
	 * writes on, so the store measured later has grown by however long a
	 * loaded machine took to ask) */
	{
		const char *p = strstr(out, " left, the one being written");
		double v = 0;
		char unit[8] = "";

		while (p && p > out && *p != '(')
			p--;
		cr_assert(p && sscanf(p, "(%lf %7[A-Za-z])", &v, unit) == 2, "%s", out);
		v *= !strcmp(unit, "KiB") ? 1024 : !strcmp(unit, "MiB") ? 1048576 : 1;
		cr_expect_leq(v, (600u << 10) + (256u << 10), "vacuum left %s", out);
	}
	cr_log_info("the store was %llu bytes when status answered after the vacuum",
		    (unsigned long long)used);
	snprintf(path, sizeof(path), "%s/%016llx.rlseg", e.store, (unsigned long long)cur);
	cr_expect(cur == 0 || access(path, F_OK) == 0, "the segment being written (%s) is gone", path);
	json_decref(j);

	/* The newest data is all there: what the program emitted last. */
	emitter_stop(em);
	sleep_ms(500);
	live_read_store(e.store, &r);
	cr_expect_gt(before.max_seq, 0);
	cr_expect_lt(r.events, before.max_seq + 1, "vacuum deleted nothing");

	/* --time: everything sealed whose newest event is older goes; the
	 * newest segment stays whatever its age while it is written. */
	sleep_ms(1500);
	cr_assert_eq(live_run(CLI " vacuum --time 1s", out, sizeof(out)), 0, "%s", out);
	r.ctx = &after;
	live_read_store(e.store, &r);
	nseg = count_segments(e.store, newest, sizeof(newest));
	cr_expect_leq(nseg, 1, "%d segments left after --time 1s:\n%s", nseg, out);
	cr_expect(after.max_seq == 0 || after.max_seq == before.max_seq);
	cr_expect_eq(live_run(CLI " vacuum 2>&1", out, sizeof(out)), 2);
	cr_expect(strstr(out, "--size SIZE") && strstr(out, "--time AGE"), "%s", out);
	cr_expect_eq(live_run(CLI " vacuum --size lots 2>&1", out, sizeof(out)), 2);
	cr_expect(strstr(out, "--size \"lots\""), "%s", out);
	live_daemon_stop(d);

	/* With the daemon down: in the directory itself. */
	snprintf(path, sizeof(path), CLI " vacuum --socket '%s/nosuch' --dir '%s' --size 0 2>&1",
		 e.dir, e.store);
	cr_expect_eq(live_run(path, out, sizeof(out)), 0, "%s", out);
	cr_expect_eq(count_segments(e.store, newest, sizeof(newest)), 0, "%s", out);
	live_cleanup(&e);
}

/* vacuum and status --dir OTHER with a daemon at the socket: OTHER's
 * files, never the daemon's own store. The daemon took the request
 * whatever --dir said and deleted from its own store (an outsider's test:
 * 261,742 events of the store not named). */
Test(operate, vacuum_and_status_dir_name_the_store_they_act_on)
{
	struct live e;
	static char out[1 << 16];
	char newest[64], other[600], cmd[1600];
	pid_t d = daemon_with(&e, "\"max_segment_size\": \"256K\""), em;
	int mine, theirs, i;
	json_t *j;

	em = emitter_running(200);
	for (i = 0; i < 100 && count_segments(e.store, newest, sizeof(newest)) < 6; i++)
		sleep_ms(100);
	emitter_stop(em);
	snprintf(other, sizeof(other), "%s/other", e.dir);
	snprintf(cmd, sizeof(cmd), "mkdir '%s' && cp '%s'/*.rlseg '%s'/", other, e.store, other);
	cr_assert_eq(live_run(cmd, out, sizeof(out)), 0, "%s", out);
	mine = count_segments(e.store, newest, sizeof(newest));
	theirs = count_segments(other, newest, sizeof(newest));
	cr_assert_geq(theirs, 6, "only %d segments", theirs);

	snprintf(cmd, sizeof(cmd), CLI " status --json --dir '%s' 2>/dev/null", other);
	cr_expect_eq(live_run(cmd, out, sizeof(out)), 0, "%s", out);
	j = json_loads(out, 0, NULL);
	cr_expect(j && !strcmp(json_string_value(json_object_get(j, "storage_dir")) ?: "", other),
		  "status --dir %s shows another store: %.300s", other, out);
	json_decref(j);

	/* a store that is not there, while a daemon runs: an error (it
	 * exited 0 saying "figures read from" it) */
	snprintf(cmd, sizeof(cmd), CLI " status --dir '%s/not-there' 2>&1", e.dir);
	cr_expect_eq(live_run(cmd, out, sizeof(out)), 1, "%s", out);
	cr_expect(strstr(out, "cannot read the storage directory") && !strstr(out, "figures read"),
		  "%s", out);

	/* read -f --dir OTHER cannot follow OTHER: refused, not OTHER's history
	 * then the daemon's live events without a word */
	snprintf(cmd, sizeof(cmd), "timeout 10 " CLI " read -f -n 5 --dir '%s' 2>&1", other);
	cr_expect_eq(live_run(cmd, out, sizeof(out)), 2, "%s", out);
	cr_expect(strstr(out, "only the store of a running ringlogd can be followed"), "%s", out);

	snprintf(cmd, sizeof(cmd), CLI " vacuum --dir '%s' --size 1 2>&1", other);
	cr_expect_eq(live_run(cmd, out, sizeof(out)), 0, "%s", out);
	cr_expect(strstr(out, other), "vacuum does not name the store it acted on: %s", out);
	cr_expect_eq(count_segments(e.store, newest, sizeof(newest)), mine,
		     "vacuum --dir %s deleted from the daemon's store: %s", other, out);
	cr_expect_lt(count_segments(other, newest, sizeof(newest)), theirs,
		     "vacuum --dir %s deleted nothing there: %s", other, out);
	/* and the daemon's own, named: through it */
	snprintf(cmd, sizeof(cmd), CLI " vacuum --dir '%s' --size 1 2>&1", e.store);
	cr_expect_eq(live_run(cmd, out, sizeof(out)), 0, "%s", out);
	cr_expect_lt(count_segments(e.store, newest, sizeof(newest)), mine, "%s", out);
	live_daemon_stop(d);
	live_cleanup(&e);
}

Test(operate, max_retention_deletes_old_segments_whatever_the_budget)
{
	struct live e;
	static char out[1 << 16];
	char newest[64];
	const char *argv[] = { EMITTER_PATH, "1", "2000", "--wait-daemon", "5", NULL };
	pid_t d = daemon_with(&e, "\"max_retention\": \"2s\", \"max_segment_age\": \"1s\""), em;
	int i, n;

	em = live_spawn(argv, NULL, "/dev/null");
	live_wait_ok(em, "test-emitter");
	sleep_ms(300);
	cr_expect_geq(count_segments(e.store, newest, sizeof(newest)), 1);
	for (i = 0; i < 100 && (n = count_segments(e.store, newest, sizeof(newest))) > 0; i++)
		sleep_ms(100);
	cr_expect_eq(n, 0, "%d segments still there 10 s after their last event (max_retention 2s)", n);
	/* the daemon logs once it has deleted them: the files may be gone a
	 * moment before the line is written */
	for (i = 0; i < 50; i++) {
		live_log(&e, out, sizeof(out));
		if (strstr(out, "max_retention: deleted"))
			break;
		sleep_ms(100);
	}
	cr_expect(strstr(out, "max_retention: deleted"), "the daemon's log does not say it: %s", out);
	cr_assert_eq(live_run(CLI " status", out, sizeof(out)), 0);
	cr_expect(matches(out, "^max_retention +2 s: older segments are deleted"), "%s", out);
	live_daemon_stop(d);
	live_cleanup(&e);
}

Test(operate, cmake_install_puts_the_completion_files_where_shells_look, .timeout = 120)
{
	char cmd[1200], out[8192], dir[] = "/tmp/ringlog-op-install-XXXXXX";

	cr_assert(mkdtemp(dir));
	snprintf(cmd, sizeof(cmd), "DESTDIR='%s' cmake --install '" RINGLOG_BUILD_DIR "' >/dev/null && "
		 "cd '%s' && find . -path '*bash-completion/completions/ringlog' -o "
		 "-path '*/zsh/site-functions/_ringlog' | sort", dir, dir);
	cr_assert_eq(live_run(cmd, out, sizeof(out)), 0, "%s", out);
	cr_expect(strstr(out, "/bash-completion/completions/ringlog\n") &&
		  strstr(out, "/share/zsh/site-functions/_ringlog\n"), "installed: %s", out);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_expect_eq(system(cmd), 0);
}

Test(operate, completion_files_load_and_complete_names_from_the_daemon)
{
	struct live e;
	static char out[1 << 16];
	char cmd[1600];
	pid_t d, em;

	cr_assert_eq(live_run("bash -n " RINGLOG_SOURCE_DIR "/client/cli/completion/ringlog.bash 2>&1",
			      out, sizeof(out)), 0, "%s", out);
	cr_assert_eq(live_run("bash -c 'source " RINGLOG_SOURCE_DIR "/client/cli/completion/ringlog.bash"
			      " && complete -p ringlog' 2>&1", out, sizeof(out)), 0, "%s", out);
	cr_expect_str_eq(out, "complete -F _ringlog ringlog\n");

	d = daemon_with(&e, "");
	em = emitter_running(20000);
	wait_declared();
	/* What TAB would offer: COMP_WORDS as bash fills them. */
#define COMPLETE(words, cword)                                                                   \
	snprintf(cmd, sizeof(cmd), "bash -c 'source " RINGLOG_SOURCE_DIR                            \
		 "/client/cli/completion/ringlog.bash; COMP_WORDS=(" words "); COMP_CWORD=" cword    \
		 "; _ringlog; printf \"%%s\\n\" \"${COMPREPLY[@]}\"' 2>&1");                          \
	live_run(cmd, out, sizeof(out))
	COMPLETE(CLI " va", "1");
	cr_expect_str_eq(out, "vacuum\n");
	COMPLETE(CLI " enable \"\"", "2");
	cr_expect_str_eq(out, PROVIDER "\n");
	COMPLETE(CLI " enable " PROVIDER " ver", "3");
	cr_expect_str_eq(out, "verbose\n");
	COMPLETE(CLI " tail --event T", "3");
	cr_expect_str_eq(out, "Tick\n");
	COMPLETE(CLI " vacuum --s", "2");
	cr_expect(strstr(out, "--size\n") && strstr(out, "--socket\n"), "%s", out);
	COMPLETE(CLI " status --w", "2");
	cr_expect(strstr(out, "--watch"), "%s", out);
	emitter_stop(em);
	live_daemon_stop(d);
	live_cleanup(&e);

	if (!have("zsh")) {
		cr_log_warn("zsh is not installed (apt-get install zsh): _ringlog is not checked");
		return;
	}
	cr_expect_eq(live_run("zsh -n " RINGLOG_SOURCE_DIR "/client/cli/completion/_ringlog 2>&1", out,
			      sizeof(out)), 0, "%s", out);
	/* It loads as a completion function under compinit. */
	cr_expect_eq(live_run("zsh -fc 'fpath=(" RINGLOG_SOURCE_DIR "/client/cli/completion $fpath); "
			      "autoload -U compinit && compinit -u -D && autoload -Uz _ringlog && "
			      "print -r -- ${_comps[ringlog]}' 2>&1", out, sizeof(out)), 0, "%s", out);
	cr_expect_str_eq(out, "_ringlog\n");
}
