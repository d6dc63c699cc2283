/* tests/test-export.c - `ringlog export` (issue 25) against a store a real
 * daemon wrote: every field type, non-ASCII and empty strings, blobs, an
 * activity id with a start opcode, several processes and threads, and ring
 * overflows. babeltrace2 (Debian's 2.0) must print exactly the events
 * `ringlog read --json` prints (times to the ns, names, context, every
 * field value) with no warning but the discarded-events reports, whose
 * counts must be ringlog's and whose intervals must hold each loss; a
 * damaged metadata or packet file must make it fail, so the check can.
 * Selection options, a damaged chunk, usage errors, and the speed
 * (printed, not asserted).
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"
#include "live.h"

TestSuite(export, .fini = th_check_leaks, .timeout = 600);

#define CLI RINGLOG_CLI_PATH

static bool have_babeltrace2(void)
{
	char out[256];

	return live_run("babeltrace2 --version 2>&1", out, sizeof(out)) == 0;
}

#define NEED_BT2()                                                                       \
	do {                                                                             \
		if (!have_babeltrace2())                                                 \
			cr_skip_test("babeltrace2 is not installed (apt-get install "     \
				     "babeltrace2; scripts/test.sh installs it as root)"); \
	} while (0)

/* Run cmd with stdout into a malloc'ed buffer (the caller frees); *status
 * gets the exit status. */
static char *run_out(const char *cmd, int *status)
{
	FILE *p = popen(cmd, "r");
	size_t n = 0, cap = 1 << 16;
	char *b = malloc(cap);
	size_t k;

	cr_assert(p && b, "cannot run %s", cmd);
	while ((k = fread(b + n, 1, cap - n - 1, p)) > 0) {
		n += k;
		if (cap - n < 4096) {
			b = realloc(b, cap *= 2);
			cr_assert(b);
		}
	}
	b[n] = 0;
	*status = pclose(p);
	*status = WIFEXITED(*status) ? WEXITSTATUS(*status) : -1;
	return b;
}

struct lines {
	char **v;
	size_t n, cap;
};

static void lines_add(struct lines *l, char *s)
{
	if (l->n == l->cap) {
		l->v = realloc(l->v, (l->cap = l->cap ? l->cap * 2 : 1024) * sizeof(char *));
		cr_assert(l->v);
	}
	l->v[l->n++] = s;
}

static int cmp_s(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void lines_free(struct lines *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

/* A growable string. */
struct str {
	char *s;
	size_t n, cap;
};

static void put(struct str *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct str *b, const char *fmt, ...)
{
	va_list ap;
	int k;

	for (;;) {
		va_start(ap, fmt);
		k = vsnprintf(b->s ? b->s + b->n : NULL, b->s ? b->cap - b->n : 0, fmt, ap);
		va_end(ap);
		if (b->s && (size_t)k < b->cap - b->n)
			break;
		b->cap = (b->cap + (size_t)k + 1) * 2;
		b->s = realloc(b->s, b->cap);
		cr_assert(b->s);
	}
	b->n += (size_t)k;
}

/* The types the JSON does not tell, by field name: the tests choose the
 * names (test-types, `ringlog emit` below, the emitter's Tick). */
static bool name_in(const char *n, const char *const *set)
{
	for (; *set; set++)
		if (!strcmp(n, *set))
			return true;
	return false;
}

static const char *const f64_names[] = { "half", "neg", "nan", "inf", "ninf", "zero", "f", "x",
					 NULL };
static const char *const time_names[] = { "when", "t", NULL };
static const char *const blob_names[] = { "none", "big", "data", "blob", NULL };

/* babeltrace2's pretty string: the escapes it uses */
static void put_bt_str(struct str *b, const char *s)
{
	put(b, "\"");
	for (; *s; s++) {
		switch (*s) {
		case '"': put(b, "\\\""); break;
		case '\\': put(b, "\\\\"); break;
		case '\n': put(b, "\\n"); break;
		case '\t': put(b, "\\t"); break;
		case '\r': put(b, "\\r"); break;
		default: put(b, "%c", *s);
		}
	}
	put(b, "\"");
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

/* One `read --json` event as babeltrace2 prints it, the host left out. */
static char *bt_line(json_t *o)
{
	struct str b = { 0 };
	uint64_t t = json_integer_value(json_object_get(o, "time_ns"));
	json_t *f = json_object_get(o, "fields"), *v;
	const char *op = json_string_value(json_object_get(o, "opcode")), *k;
	json_t *act = json_object_get(o, "activity");
	bool first = true;

	/* time_ns goes past INT64_MAX only after 2262 */
	put(&b, "[%llu.%09llu] %s:%s: { pid = %lld, tid = %lld, uid = %lld, comm = ",
	    (unsigned long long)(t / 1000000000u), (unsigned long long)(t % 1000000000u),
	    json_string_value(json_object_get(o, "provider")),
	    json_string_value(json_object_get(o, "event")),
	    json_integer_value(json_object_get(o, "pid")), json_integer_value(json_object_get(o, "tid")),
	    json_integer_value(json_object_get(o, "uid")));
	put_bt_str(&b, json_string_value(json_object_get(o, "comm")));
	put(&b, " }, { opcode = ( \"%s\" : container = %d ), activity = \"%s\" }", op,
	    !strcmp(op, "start") ? 1 : !strcmp(op, "stop") ? 2 : 0,
	    act ? json_string_value(act) : "");
	json_object_foreach(f, k, v) {
		put(&b, first ? ", { " : ", ");
		first = false;
		if (name_in(k, blob_names)) {
			const char *h = json_string_value(v);
			size_t n = strlen(h) / 2;

			put(&b, "%s_len = %zu, %s = [ ", k, n, k);
			for (size_t i = 0; i < n; i++) {
				unsigned x;

				sscanf(h + 2 * i, "%2x", &x);
				put(&b, "%s[%zu] = %u", i ? ", " : "", i, x);
			}
			put(&b, n ? " ]" : "]");
		} else if (name_in(k, time_names)) {
			put(&b, "%s = %llu", k, (unsigned long long)iso_ns(json_string_value(v)));
		} else if (json_is_true(v) || json_is_false(v)) {
			put(&b, "%s = ( \"%s\" : container = %d )", k, json_is_true(v) ? "true" : "false",
			    json_is_true(v));
		} else if (json_is_integer(v)) {
			put(&b, "%s = %lld", k, json_integer_value(v));
		} else if (json_is_real(v)) {
			put(&b, "%s = %g", k, json_real_value(v));
		} else if (json_is_string(v) && !strcmp(json_string_value(v), "U64MAX")) {
			put(&b, "%s = 18446744073709551615", k);
		} else if (json_is_string(v) && name_in(k, f64_names)) {
			put(&b, "%s = %s", k, json_string_value(v)); /* nan, inf, -inf */
		} else if (json_is_string(v) && !strncmp(json_string_value(v), "0x", 2)) {
			const char *h = json_string_value(v);

			put(&b, "%s = 0x", k);
			for (h += 2; *h; h++)
				put(&b, "%c", *h >= 'a' && *h <= 'f' ? *h - 32 : *h);
		} else {
			put(&b, "%s = ", k);
			put_bt_str(&b, json_string_value(v));
		}
	}
	if (!first)
		put(&b, " }");
	return b.s;
}

struct loss {
	uint32_t pid, tid;
	uint64_t t, n;
};

/* `ringlog read --json ARGS`: its events as babeltrace2 lines, sorted, and
 * its losses. jansson reads u64 above INT64_MAX as reals: the tests keep
 * u64 fields under it except for the one compared textually below. */
static void read_expected(const char *args, struct lines *ev, struct loss **loss, size_t *nloss)
{
	char cmd[4096];
	int st;
	char *out, *save = NULL;

	snprintf(cmd, sizeof(cmd), CLI " read --json --no-pager %s 2>/dev/null", args);
	out = run_out(cmd, &st);
	*loss = NULL;
	*nloss = 0;
	for (char *l = strtok_r(out, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		/* jansson takes integers up to INT64_MAX: the one u64 above it
		 * the tests emit goes through as a marked string */
		char *big = strstr(l, ":18446744073709551615");
		json_error_t je;

		if (big)
			memcpy(big, ":\"U64MAX\"            ", 21);
		json_t *o = json_loads(l, 0, &je);

		cr_assert(o, "read --json line is not JSON: %s (%s)", l, je.text);
		if (!strcmp(json_string_value(json_object_get(o, "type")), "event")) {
			lines_add(ev, bt_line(o));
		} else {
			*loss = realloc(*loss, (*nloss + 1) * sizeof(**loss));
			(*loss)[(*nloss)++] = (struct loss){
				(uint32_t)json_integer_value(json_object_get(o, "pid")),
				(uint32_t)json_integer_value(json_object_get(o, "tid")),
				(uint64_t)json_integer_value(json_object_get(o, "time_ns")),
				(uint64_t)json_integer_value(json_object_get(o, "lost")) };
		}
		json_decref(o);
	}
	free(out);
	if (ev->n)
		qsort(ev->v, ev->n, sizeof(char *), cmp_s);
}

struct report {
	uint32_t pid, tid;
	uint64_t from, to, n;
};

/* babeltrace2 on dir: its events (host removed), sorted; its discarded
 * reports; every other stderr line fails the test (no warning). */
static void bt_actual(const char *dir, struct lines *ev, struct report **rep, size_t *nrep)
{
	char cmd[4096], errpath[600];
	int st;
	char *out, *err, *save = NULL;

	snprintf(errpath, sizeof(errpath), "%s.bt-stderr", dir);
	snprintf(cmd, sizeof(cmd), "babeltrace2 --clock-seconds --no-delta '%s' 2>'%s'", dir,
		 errpath);
	out = run_out(cmd, &st);
	cr_assert_eq(st, 0, "babeltrace2 %s failed", dir);
	for (char *l = strtok_r(out, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char *host = strstr(l, "] "), *sp = host ? strchr(host + 2, ' ') : NULL;
		struct str b = { 0 };

		cr_assert(sp, "babeltrace2 line: %s", l);
		put(&b, "%.*s%s", (int)(host + 2 - l), l, sp + 1);
		lines_add(ev, b.s);
	}
	free(out);
	snprintf(cmd, sizeof(cmd), "cat '%s'", errpath);
	err = run_out(cmd, &st);
	*rep = NULL;
	*nrep = 0;
	save = NULL;
	for (char *l = strtok_r(err, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		unsigned long long n, s1, n1, s2, n2;
		unsigned pid, tid;
		const char *sp = strstr(l, "/stream-"), *bw = strstr(l, " between [");

		/* "1 event", "2 events" */
		cr_assert(sp && bw && sscanf(l, "WARNING: Tracer discarded %llu event", &n) == 1 &&
			  sscanf(bw, " between [%llu.%llu] and [%llu.%llu]", &s1, &n1, &s2, &n2) == 4 &&
			  sscanf(sp, "/stream-%u-%u", &pid, &tid) == 2,
			  "babeltrace2 said something else than a discarded-events report: %s", l);
		*rep = realloc(*rep, (*nrep + 1) * sizeof(**rep));
		(*rep)[(*nrep)++] = (struct report){ pid, tid, s1 * 1000000000ull + n1,
						     s2 * 1000000000ull + n2, n };
	}
	free(err);
	unlink(errpath);
	if (ev->n)
		qsort(ev->v, ev->n, sizeof(char *), cmp_s);
}

/* Export with ARGS into dir and check babeltrace2 against read ARGS. */
static void check_export(const char *store_args, const char *dir, int want_rc,
			 size_t *events_out, uint64_t *lost_out)
{
	struct lines want = { 0 }, got = { 0 };
	struct loss *loss;
	struct report *rep;
	size_t nloss, nrep;
	uint64_t lost = 0, reported = 0;
	char cmd[4096], out[8192];
	int rc;

	snprintf(cmd, sizeof(cmd), CLI " export --format ctf --output '%s' %s 2>&1", dir,
		 store_args);
	rc = live_run(cmd, out, sizeof(out));
	cr_assert_eq(rc, want_rc, "`%s`: exit %d, expected %d:\n%s", cmd, rc, want_rc, out);
	read_expected(store_args, &want, &loss, &nloss);
	bt_actual(dir, &got, &rep, &nrep);
	cr_expect_eq(got.n, want.n, "babeltrace2 printed %zu events, read --json %zu", got.n,
		     want.n);
	for (size_t i = 0; i < want.n && i < got.n; i++)
		if (strcmp(want.v[i], got.v[i])) {
			cr_expect_fail("first difference (sorted), event %zu:\nread:        %.900s\n"
				       "babeltrace2: %.900s", i, want.v[i], got.v[i]);
			break;
		}
	/* losses: ringlog's exact counts, per writer thread, and each one
	 * inside an interval babeltrace2 reports for its stream */
	for (size_t i = 0; i < nloss; i++) {
		bool inside = false;

		lost += loss[i].n;
		for (size_t k = 0; k < nrep && !inside; k++)
			inside = rep[k].pid == loss[i].pid && rep[k].tid == loss[i].tid &&
				 rep[k].from <= loss[i].t && loss[i].t <= rep[k].to;
		cr_expect(inside, "loss of %llu events at %llu (pid %u tid %u): no babeltrace2 "
			  "report around it", (unsigned long long)loss[i].n,
			  (unsigned long long)loss[i].t, loss[i].pid, loss[i].tid);
	}
	for (size_t k = 0; k < nrep; k++)
		reported += rep[k].n;
	cr_expect_eq(reported, lost, "babeltrace2 reports %llu discarded events, read counts %llu",
		     (unsigned long long)reported, (unsigned long long)lost);
	if (events_out)
		*events_out = want.n;
	if (lost_out)
		*lost_out = lost;
	lines_free(&want);
	lines_free(&got);
	free(loss);
	free(rep);
}

static void emit(const char *args)
{
	char cmd[4096], out[4096];

	snprintf(cmd, sizeof(cmd), CLI " emit %s 2>&1", args);
	cr_assert_eq(live_run(cmd, out, sizeof(out)), 0, "`%s`:\n%s", cmd, out);
}

/* The store of the main cases: a real daemon, every type, losses, several
 * processes and threads. */
static void fill_store(struct live *e)
{
	const char *const types[] = { TYPES_PATH, "types", NULL };
	const char *const flood[] = { EMITTER_PATH, "3", "300000", "--pause-us", "50", NULL };
	const char *const calm[] = { EMITTER_PATH, "2", "2000", NULL };
	/* no pause: a 64 KiB ring overflows whatever the daemon's speed */
	const char *const burst[] = { EMITTER_PATH, "1", "200000", NULL };
	const char *const small_ring[] = { "RINGLOG_RING_SIZE=64K", NULL };
	pid_t d = live_daemon(e, NULL), p1, p2, p3;

	live_wait_ok(live_spawn(types, NULL, "/dev/null"), "test-types types");
	emit("Export.Emit Mixed --level warning h:hex=255 data:blob=00ff10 none:blob= "
	     "t:time=1700000000123456789 f:f64=-0.5 b:bool=false s:str='ünï ✓ \"q\"' "
	     "empty:str= event:i32=-7 n:u64=12345678901");
	emit("Export.Emit Bare --level verbose");
	p1 = live_spawn(flood, small_ring, "/dev/null");
	p2 = live_spawn(calm, NULL, "/dev/null");
	p3 = live_spawn(burst, small_ring, "/dev/null");
	live_wait_ok(p1, "flooding emitter");
	live_wait_ok(p2, "emitter");
	live_wait_ok(p3, "bursting emitter");
	live_daemon_stop(d);
}

Test(export, babeltrace2_prints_what_read_prints_with_the_exact_losses)
{
	struct live e;
	char dir[400], args[400];
	size_t events;
	uint64_t lost;

	NEED_BT2();
	live_init(&e);
	fill_store(&e);
	snprintf(dir, sizeof(dir), "%s/ctf", e.dir);
	snprintf(args, sizeof(args), "--dir '%s'", e.store);
	check_export(args, dir, 0, &events, &lost);
	cr_expect_gt(events, 5000u, "the store holds too few events: %zu", events);
	cr_expect_gt(lost, 0u, "the 64 KiB rings lost nothing: the loss check checked nothing");
	printf("export: %zu events and %llu lost events checked against babeltrace2\n", events,
	       (unsigned long long)lost);
	live_cleanup(&e);
}

static void corrupt_at(const char *path, long off, const char *bytes, size_t n)
{
	FILE *f = fopen(path, "r+b");

	cr_assert(f, "open %s", path);
	fseek(f, off, off < 0 ? SEEK_END : SEEK_SET);
	cr_assert_eq(fwrite(bytes, 1, n, f), n);
	fclose(f);
}

Test(export, babeltrace2_refuses_a_damaged_metadata_or_packet)
{
	struct live e;
	char dir[300], cmd[4096], out[8192], path[600];
	const char *const calm[] = { EMITTER_PATH, "1", "100", NULL };
	pid_t d;

	NEED_BT2();
	live_init(&e);
	d = live_daemon(&e, NULL);
	live_wait_ok(live_spawn(calm, NULL, "/dev/null"), "emitter");
	live_daemon_stop(d);
	snprintf(dir, sizeof(dir), "%s/ctf", e.dir);
	snprintf(cmd, sizeof(cmd), CLI " export --format ctf --output '%s' --dir '%s' 2>&1 && "
		 "babeltrace2 '%s' > /dev/null 2>&1", dir, e.store, dir);
	cr_assert_eq(live_run(cmd, out, sizeof(out)), 0, "%s", out);

	/* metadata: the stream's event header declared as something else */
	snprintf(path, sizeof(path), "%s/metadata", dir);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s.good' && sed -i 's/uint32_t id;/uint32_t id; "
		 "uint64_t bogus;/' '%s' && babeltrace2 '%s' > /dev/null 2>&1", path, path, path,
		 dir);
	cr_expect_neq(live_run(cmd, out, sizeof(out)), 0, "babeltrace2 took a damaged metadata");
	snprintf(cmd, sizeof(cmd), "mv '%s.good' '%s' && truncate -s -40 '%s' && "
		 "babeltrace2 '%s' > /dev/null 2>&1", path, path, path, dir);
	cr_expect_neq(live_run(cmd, out, sizeof(out)), 0, "babeltrace2 took a truncated metadata");

	/* a packet: a fresh export, then its magic broken */
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' && " CLI " export --format ctf --output '%s' "
		 "--dir '%s' 2>/dev/null && ls '%s' | grep stream- | head -1", dir, dir, e.store,
		 dir);
	cr_assert_eq(live_run(cmd, out, sizeof(out)), 0);
	out[strcspn(out, "\n")] = 0;
	snprintf(path, sizeof(path), "%s/%.150s", dir, out);
	corrupt_at(path, 0, "\xde\xad\xbe\xef", 4);
	snprintf(cmd, sizeof(cmd), "babeltrace2 '%s' > /dev/null 2>&1", dir);
	cr_expect_neq(live_run(cmd, out, sizeof(out)), 0, "babeltrace2 took a broken packet magic");
	live_cleanup(&e);
}

Test(export, selection_options_select_as_in_read)
{
	struct live e;
	char dir[400], args[600];
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

	NEED_BT2();
	live_init(&e);
	fill_store(&e);
	for (size_t i = 0; i < sizeof(sel) / sizeof(*sel); i++) {
		snprintf(dir, sizeof(dir), "%s/ctf%zu", e.dir, i);
		snprintf(args, sizeof(args), "--dir '%s' %s", e.store, sel[i]);
		check_export(args, dir, 0, &n, NULL);
		if (i < 6)
			cr_expect_gt(n, 0u, "%s selected nothing: the comparison checked nothing",
				     sel[i]);
		else
			cr_expect_eq(n, 0u, "%s", sel[i]);
	}
	live_cleanup(&e);
}

Test(export, a_damaged_chunk_is_skipped_and_said_as_read_says_it)
{
	struct live e;
	char dir[400], args[400], cmd[4096], out[8192];
	const char *const calm[] = { EMITTER_PATH, "2", "200000", NULL };
	int rc;
	pid_t d;

	NEED_BT2();
	live_init(&e);
	d = live_daemon(&e, NULL);
	live_wait_ok(live_spawn(calm, NULL, "/dev/null"), "emitter");
	live_daemon_stop(d);
	live_damage_second_chunk(&e);
	snprintf(cmd, sizeof(cmd), CLI " read --dir '%s' > /dev/null 2>&1", e.store);
	rc = live_run(cmd, out, sizeof(out));
	cr_assert_eq(rc, 4, "read of a damaged store: exit %d", rc);
	snprintf(dir, sizeof(dir), "%s/ctf", e.dir);
	snprintf(args, sizeof(args), "--dir '%s'", e.store);
	check_export(args, dir, 4, NULL, NULL);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'; " CLI " export --format ctf --output '%s' "
		 "--dir '%s' 2>&1 >/dev/null", dir, dir, e.store);
	live_run(cmd, out, sizeof(out));
	cr_expect(strstr(out, "damaged") && strstr(out, "skipped"),
		  "export does not say what it skipped:\n%s", out);
	live_cleanup(&e);
}

Test(export, json_holds_read_json_objects)
{
	struct live e;
	char cmd[4096], path[400];
	char *a, *b;
	int st;

	live_init(&e);
	fill_store(&e);
	snprintf(path, sizeof(path), "%s/out.json", e.dir);
	snprintf(cmd, sizeof(cmd), CLI " export --format json --output '%s' --dir '%s' "
		 "--provider 'Test.*' 2>/dev/null && sort '%s'", path, e.store, path);
	a = run_out(cmd, &st);
	cr_assert_eq(st, 0);
	snprintf(cmd, sizeof(cmd), CLI " read --json --dir '%s' --provider 'Test.*' | sort",
		 e.store);
	b = run_out(cmd, &st);
	cr_expect(strlen(a) > 1000 && !strcmp(a, b), "export json (%zu bytes) and read --json "
		  "(%zu bytes) differ", strlen(a), strlen(b));
	free(a);
	free(b);
	live_cleanup(&e);
}

/* What babeltrace2's details sink shows of the trace: the environment
 * (this host, this boot, the tracer) and each event class's log level,
 * CTF's (syslog's and LTTng's: 2 critical, 3 error, 4 warning, 6 info, 14
 * debug) for ringlog's five. */
Test(export, the_trace_environment_and_log_levels_are_what_babeltrace2_shows)
{
	static const struct { const char *level, *ctf; } lv[] = {
		{ "critical", "Critical" }, { "error", "Error" }, { "warning", "Warning" },
		{ "info", "Info" }, { "verbose", "Debug" },
	};
	struct live e;
	char cmd[4096], host[256] = "", boot[64] = "", want[512], *out, *p;
	int st;
	pid_t d;
	FILE *f;

	NEED_BT2();
	live_init(&e);
	d = live_daemon(&e, NULL);
	for (size_t i = 0; i < sizeof(lv) / sizeof(*lv); i++) {
		snprintf(cmd, sizeof(cmd), CLI " emit Lvl.Test L%zu --level %s n=%zu", i, lv[i].level, i);
		cr_assert_eq(live_run(cmd, NULL, 0), 0, "%s", cmd);
	}
	live_daemon_stop(d);
	snprintf(cmd, sizeof(cmd), CLI " export --format ctf --output '%s/ctf' --dir '%s' 2>/dev/null "
		 "&& babeltrace2 '%s/ctf' -c sink.text.details", e.dir, e.store, e.dir);
	out = run_out(cmd, &st);
	cr_assert_eq(st, 0, "%s", out);
	for (size_t i = 0; i < sizeof(lv) / sizeof(*lv); i++) {
		snprintf(want, sizeof(want), "Event class `Lvl.Test:L%zu`", i);
		p = strstr(out, want);
		cr_expect(p, "no event class %s in:\n%.2000s", want, out);
		snprintf(want, sizeof(want), "Log level: %s\n", lv[i].ctf);
		if (p) {
			/* within this class's block: before the next class */
			char *next = strstr(p + 1, "Event class `"), *at = strstr(p, want);

			cr_expect(at && (!next || at < next), "L%zu (%s): not %s", i, lv[i].level,
				  want);
		}
	}
	gethostname(host, sizeof(host) - 1);
	if ((f = fopen("/proc/sys/kernel/random/boot_id", "r"))) {
		size_t n = 0;

		for (int c; (c = fgetc(f)) != EOF && n + 1 < sizeof(boot);)
			if (c != '-' && c != '\n')
				boot[n++] = (char)c;
		boot[n] = 0;
		fclose(f);
	}
	snprintf(want, sizeof(want), "hostname: %s\n", host);
	cr_expect(strstr(out, want), "the environment does not say %s", want);
	snprintf(want, sizeof(want), "boot_id: %s\n", boot);
	cr_expect(boot[0] && strstr(out, want), "the environment does not say %s", want);
	cr_expect(strstr(out, "tracer_name: ringlog\n"), "the environment does not name the tracer");
	free(out);
	live_cleanup(&e);
}

Test(export, usage_errors_exit_2)
{
	static const char *const bad[] = {
		" export --format ctf --output /tmp/x --max-size 1M --dir /tmp",
		" export --format xml --output /tmp/x --dir /tmp",
		" export --format ctf --dir /tmp",
		" export --output /tmp/x --dir /tmp",
		" export --format ctf --output /tmp/x --json --dir /tmp",
		" export --format ctf --output /tmp/x -n 5 --dir /tmp",
		" export --format ctf --output /tmp/x --since yesterdayish --dir /tmp",
	};
	char cmd[600], out[4096];

	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		snprintf(cmd, sizeof(cmd), CLI "%s 2>&1", bad[i]);
		cr_expect_eq(live_run(cmd, out, sizeof(out)), 2, "`%s`: %s", bad[i], out);
		if (i == 0)
			cr_expect(strstr(out, "perfetto"), "%s", out);
	}
	/* an existing directory with something in it is not overwritten */
	cr_expect_eq(live_run(CLI " export --format ctf --output /etc --dir /tmp 2>&1", out,
			      sizeof(out)), 1);
	cr_expect(strstr(out, "/etc is not empty"), "%s", out);
	cr_expect_eq(live_run(CLI " export --help", out, sizeof(out)), 0);
	cr_expect(strstr(out, "--format"), "%s", out);
}

/* --since in the middle of a segment: every event from then on, none
 * reported damaged. (A chunk before the time may describe the writers of
 * the chunks after it: export decodes it, and filters event by event.) */
Test(export, since_in_the_middle_of_a_segment_loses_nothing)
{
	struct live e;
	const char *const many[] = { EMITTER_PATH, "2", "300000", "--pause-us", "200", NULL };
	char cmd[4096], *all, *part, *save = NULL;
	uint64_t first = 0, last = 0, since, want = 0, got = 0;
	int st;
	pid_t d;

	live_init(&e);
	d = live_daemon(&e, NULL);
	live_wait_ok(live_spawn(many, NULL, "/dev/null"), "emitter");
	live_daemon_stop(d);
	snprintf(cmd, sizeof(cmd), CLI " read --json --dir '%s'", e.store);
	all = run_out(cmd, &st);
	cr_assert_eq(st, 0);
	for (char *l = strtok_r(all, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		unsigned long long t;
		const char *p = strstr(l, "\"time_ns\":");

		cr_assert(p && sscanf(p, "\"time_ns\":%llu", &t) == 1);
		if (!first)
			first = t;
		last = t;
	}
	since = first + (last - first) / 2;
	since -= since % 1000000000u; /* @SECONDS */
	free(all);
	all = run_out(cmd, &st);
	save = NULL;
	for (char *l = strtok_r(all, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		unsigned long long t;

		sscanf(strstr(l, "\"time_ns\":"), "\"time_ns\":%llu", &t);
		want += t >= since;
	}
	free(all);
	snprintf(cmd, sizeof(cmd), CLI " export --format json --output - --dir '%s' --since @%llu "
		 "2>&1 >/dev/null | grep -c damaged", e.store,
		 (unsigned long long)(since / 1000000000u));
	part = run_out(cmd, &st);
	cr_expect_eq(atoi(part), 0, "export --since reported damage in a sound store");
	free(part);
	snprintf(cmd, sizeof(cmd), CLI " export --format json --output - --dir '%s' --since @%llu "
		 "2>/dev/null", e.store, (unsigned long long)(since / 1000000000u));
	part = run_out(cmd, &st);
	cr_expect_eq(st, 0);
	for (const char *p = part; (p = strchr(p, '\n')); p++)
		got++;
	free(part);
	cr_expect_eq(got, want, "export --since: %llu events and losses, the store holds %llu from "
		     "then on", (unsigned long long)got, (unsigned long long)want);
	/* read --since alike: it once skipped chunks before the window that
	 * held the descriptions of the chunks in it. */
	snprintf(cmd, sizeof(cmd), CLI " read --json --dir '%s' --since @%llu 2>/dev/null", e.store,
		 (unsigned long long)(since / 1000000000u));
	part = run_out(cmd, &st);
	cr_expect_eq(st, 0, "read --since: exit %d", st);
	got = 0;
	for (const char *p = part; (p = strchr(p, '\n')); p++)
		got++;
	free(part);
	cr_expect_eq(got, want, "read --since: %llu events and losses, the store holds %llu from "
		     "then on", (unsigned long long)got, (unsigned long long)want);
	cr_expect_gt(want, 1000u);
	live_cleanup(&e);
}

/* The speed: a few million events to CTF, printed (not asserted). */
Test(export, speed_to_ctf, .timeout = 900)
{
	struct live e;
	const char *const many[] = { EMITTER_PATH, "2", "1500000", "--pause-us", "20", NULL };
	char dir[400], cmd[4096], out[8192];
	struct timespec t0, t1;
	unsigned long long events = 0, bytes = 0, lost = 0;
	double s;
	pid_t d;

	live_init(&e);
	d = live_daemon(&e, NULL);
	live_wait_ok(live_spawn(many, NULL, "/dev/null"), "emitter");
	live_daemon_stop(d);
	snprintf(dir, sizeof(dir), "%s/ctf", e.dir);
	snprintf(cmd, sizeof(cmd), CLI " export --format ctf --output '%s' --dir '%s' 2>&1", dir,
		 e.store);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	cr_assert_eq(live_run(cmd, out, sizeof(out)), 0, "%s", out);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	cr_assert(sscanf(out, "ringlog export: %llu events, %llu lost events counted, %llu bytes",
			 &events, &lost, &bytes) == 3, "%s", out);
	s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("export speed: %llu events to CTF in %.2f s: %.2f M events/s, %.1f bytes/event "
	       "(Tick{thread, seq, text}: 12-byte header, 2-byte context)\n", events, s,
	       (double)events / s / 1e6, events ? (double)bytes / (double)events : 0.0);
	cr_expect_gt(events, 1000000u);
	live_cleanup(&e);
}
