/* tests/test-flight.c - the flight recorder (issue 26), with the real
 * daemon, real programs (test-flight-prog) and the real `ringlog`:
 *   - verbose events enabled by flight_level only never reach the
 *     segments; an error event writes a snapshot of [t - pre, t + post]
 *     holding them in order without a gap;
 *   - `ringlog snapshot`, ringlog_trigger() (also from a SIGSEGV handler
 *     of a program that then dies) and a kill -9'ed writer each produce a
 *     snapshot with that writer's last events;
 *   - triggers close together coalesce into one snapshot listing every
 *     reason; max_snapshots refuses the rest, counted in status;
 *   - a daemon SIGKILLed while writing leaves a whole, readable snapshot
 *     or none; snapshots take their share of max_disk.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>

#include <dirent.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"
#include "live.h"
#include "segment.h"

TestSuite(flight, .fini = th_check_leaks, .timeout = 300);

#define CLI RINGLOG_CLI_PATH
#define PROG FLIGHT_PROG_PATH

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

/* A configuration: Test.Flight stored up to info, verbose in memory. */
/* The configuration start() runs with (its path in path). */
static void write_conf(const struct live *e, const char *flight, const char *top, char *path,
		       size_t len)
{
	char text[2048];

	snprintf(path, len, "%s/ringlogd.json", e->dir);
	snprintf(text, sizeof(text), "{ %s%s\"providers\": { \"Test.*\": {\"level\": 4, "
		 "\"flight_level\": 5} }, \"flight\": { %s } }", top ? top : "", top ? ", " : "",
		 flight);
	live_write_file(path, text);
}

static pid_t start(struct live *e, const char *flight, const char *top)
{
	char path[400];

	write_conf(e, flight, top, path, sizeof(path));
	return live_daemon(e, "--config", path, NULL);
}

/* Another flight section for the next reload. */
static void start_conf(const struct live *e, const char *flight)
{
	char path[400];

	write_conf(e, flight, NULL, path, sizeof(path));
}

/* SIGHUP, and wait until the daemon says it applied it. */
static void reload(const struct live *e, pid_t d)
{
	static char log[1 << 22];
	const char *at;
	unsigned before = 0, now = 0;

	live_log(e, log, sizeof(log));
	for (at = log; (at = strstr(at, "SIGHUP: configuration reloaded")); at++)
		before++;
	cr_assert_eq(kill(d, SIGHUP), 0);
	for (int i = 0; i < 100 && now <= before; i++) {
		sleep_ms(50);
		live_log(e, log, sizeof(log));
		now = 0;
		for (at = log; (at = strstr(at, "SIGHUP: configuration reloaded")); at++)
			now++;
	}
	cr_assert_gt(now, before, "the daemon did not log the reload");
}

static unsigned snapshots(const struct live *e, char paths[][700], unsigned max)
{
	char dir[400];
	struct dirent **names;
	unsigned n = 0;
	int k;

	snprintf(dir, sizeof(dir), "%s/snapshots", e->store);
	k = scandir(dir, &names, NULL, alphasort);
	for (int i = 0; i < k; i++) {
		if (strlen(names[i]->d_name) == 22 && !strcmp(names[i]->d_name + 16, ".rlseg")) {
			if (n < max && paths)
				snprintf(paths[n], 700, "%s/%s", dir, names[i]->d_name);
			n++;
		}
		free(names[i]);
	}
	if (k >= 0)
		free(names);
	return n;
}

/* Wait (bounded, not a timing assertion: the test fails only when nothing
 * came at all) for at least n snapshots. */
static unsigned wait_snapshots(const struct live *e, unsigned n)
{
	unsigned got = 0;

	for (int i = 0; i < 3000 && (got = snapshots(e, NULL, 0)) < n; i++)
		sleep_ms(10);
	return got;
}

/* What one snapshot holds. */
struct snap {
	uint64_t events, lost_overwritten, damaged;
	uint64_t verbose, info, errors;
	uint64_t first_seq, last_seq, gaps, first_ns, last_ns;
	uint64_t error_seq, error_ns;
	char kept_name[16];     /* the first event it holds, of any kind */
	uint64_t kept_seq;
	uint32_t pid;           /* the one Test.Flight writer expected */
	uint64_t prev;
	char reasons[1024];     /* joined with " | " */
	struct ringlog_seg_snap hdr;
	struct ringlog_seg_hdr seg;
	bool hdr_ok, closed;
};

static int on_event(void *ctx, const struct ringlog_dec_event *ev)
{
	struct snap *s = ctx;
	uint64_t seq = ev->values[0].u;

	if (!s->events++) {
		snprintf(s->kept_name, sizeof(s->kept_name), "%s", ev->desc->name);
		s->kept_seq = seq;
	}
	if (strcmp(ev->provider, "Test.Flight"))
		return 0;
	if (!strcmp(ev->desc->name, "Info")) {
		s->info++;
		return 0;
	}
	if (!strcmp(ev->desc->name, "Error")) {
		s->errors++;
		s->error_seq = seq;
		s->error_ns = ev->real_ns;
		return 0;
	}
	if (strcmp(ev->desc->name, "Verbose"))
		return 0; /* Start */
	s->verbose++;
	if (ev->writer && ev->writer->w.pid != s->pid) {
		/* a new program: its own series (a snapshot may hold several) */
		s->pid = ev->writer->w.pid;
		s->first_seq = 0;
	}
	if (!s->first_seq) {
		s->first_seq = seq;
		s->first_ns = ev->real_ns;
	} else if (seq != s->prev + 1) {
		s->gaps++;
	}
	s->prev = s->last_seq = seq;
	s->last_ns = ev->real_ns;
	return 0;
}

static void on_loss(void *ctx, const struct ringlog_dec_loss *l)
{
	struct snap *s = ctx;

	if (l->reason == RINGLOG_LOSS_OVERWRITTEN)
		s->lost_overwritten += l->records;
}

static void on_damage(void *ctx, const char *what)
{
	struct snap *s = ctx;

	(void)what;
	s->damaged++;
}

static void read_snap(const char *path, struct snap *s)
{
	struct ringlog_seg_file f;
	struct ringlog_decoder d;
	struct ringlog_seg_clock clk;
	const char *why;
	size_t o = 0;

	memset(s, 0, sizeof(*s));
	cr_assert_eq(ringlog_seg_open(&f, path, &why), 0, "%s: %s", path, why);
	s->hdr_ok = f.hdr_ok;
	s->seg = f.hdr;
	s->closed = f.hdr.state == RINGLOG_SEG_CLOSED;
	memcpy(&s->hdr, (const uint8_t *)&f.hdr + RINGLOG_SEG_SNAP_OFF, sizeof(s->hdr));
	cr_expect(f.hdr.compat_flags & RINGLOG_SEG_SNAPSHOT, "%s: no SNAPSHOT flag", path);
	cr_expect_eq(ringlog_seg_snap_crc(&s->hdr), s->hdr.crc, "%s: snapshot header checksum", path);
	for (uint32_t i = 0, n = 0; n < s->hdr.nreasons && i < s->hdr.reasons_len; n++) {
		o += (size_t)snprintf(s->reasons + o, sizeof(s->reasons) - o, "%s%s", n ? " | " : "",
				      s->hdr.reasons + i);
		if (o >= sizeof(s->reasons))
			o = sizeof(s->reasons) - 1;
		i += (uint32_t)strnlen(s->hdr.reasons + i, s->hdr.reasons_len - i) + 1;
	}
	ringlog_seg_clock_of(&f.hdr, &clk);
	ringlog_dec_init(&d, &clk);
	d.ctx = s;
	d.on_event = on_event;
	d.on_loss = on_loss;
	d.on_damage = on_damage;
	while (ringlog_seg_next(&f, false) == 1)
		ringlog_dec_records(&d, f.body, f.chunk.body_len);
	s->damaged += f.damaged_bytes;
	ringlog_dec_free(&d);
	ringlog_seg_close(&f);
}

/* Verbose events of the stored segments (there must be none). */
struct names {
	uint64_t verbose, info;
};

static int count_names(void *ctx, const struct ringlog_dec_event *ev)
{
	struct names *n = ctx;

	if (!strcmp(ev->desc->name, "Verbose"))
		n->verbose++;
	else if (!strcmp(ev->desc->name, "Info"))
		n->info++;
	return 0;
}

static uint64_t *progress_map(const struct live *e, char *path, size_t len)
{
	int fd;
	uint64_t *p;

	snprintf(path, len, "%s/progress", e->dir);
	fd = open(path, O_RDWR | O_CREAT, 0600);
	cr_assert(fd >= 0 && ftruncate(fd, 4096) == 0);
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	cr_assert(p != MAP_FAILED);
	return p;
}

static void wait_progress(volatile uint64_t *p, uint64_t n)
{
	for (int i = 0; i < 3000 && __atomic_load_n(p, __ATOMIC_ACQUIRE) < n; i++)
		sleep_ms(10);
	cr_assert_geq(*p, n, "the program did not get to event %llu", (unsigned long long)n);
}

Test(flight, verbose_events_stay_in_memory_and_an_error_writes_the_window_in_order)
{
	struct live e;
	char paths[4][700];
	const char *argv[] = { PROG, "--rate", "500", "--count", "3000", "--error-at", "1500", NULL };
	struct live_read rd = { 0 };
	struct names nm = { 0 };
	struct snap s;
	json_t *st, *fl;
	pid_t d, p;

	live_init(&e);
	d = start(&e, "\"size\": \"16M\", \"pre\": \"2s\", \"post\": \"1s\", \"trigger_level\": "
		  "\"error\", \"max_snapshots\": \"10/m\"", NULL);
	p = live_spawn(argv, NULL, "/dev/null");
	live_wait_ok(p, "test-flight-prog");
	cr_assert_eq(wait_snapshots(&e, 1), 1, "no snapshot after the error event");
	/* status: the buffer, the snapshot and its reason */
	st = live_status_json();
	cr_assert(st);
	fl = json_object_get(st, "flight");
	cr_expect(json_is_true(json_object_get(fl, "enabled")));
	cr_expect_eq(json_integer_value(json_object_get(fl, "size")), 16 << 20);
	cr_expect_geq(json_integer_value(json_object_get(fl, "memory_only")), 2900);
	cr_expect_eq(json_integer_value(json_object_get(json_object_get(fl, "snapshots"), "count")), 1);
	cr_expect(strstr(json_string_value(json_object_get(json_object_get(fl, "snapshots"),
							    "last_reason")) ?: "", "Test.Flight/Error"));
	/* what the buffer holds: bytes within its size, events, and the time
	 * span from the first to the last (the program ran ~6 s, all of it
	 * fits 16 MiB); the snapshots' disk use is the file's size */
	long long held = json_integer_value(json_object_get(fl, "bytes"));
	long long first = json_integer_value(json_object_get(fl, "first_ns"));
	long long last = json_integer_value(json_object_get(fl, "last_ns"));
	long long snap_bytes = json_integer_value(json_object_get(json_object_get(fl, "snapshots"),
								  "bytes"));

	cr_expect(held > 0 && held <= 16 << 20, "flight.bytes %lld", held);
	cr_expect_geq(json_integer_value(json_object_get(fl, "events")), 2900);
	cr_expect(first > 0 && last - first > 1000000000ll && last - first < 600000000000ll,
		  "the span held: first %lld last %lld", first, last);
	json_decref(st);
	live_daemon_stop(d);

	/* nothing verbose on disk; every Info there */
	rd.ctx = &nm;
	rd.on_event = count_names;
	live_read_store(e.store, &rd);
	cr_expect_eq(nm.verbose, 0, "%llu verbose events reached the segments",
		     (unsigned long long)nm.verbose);
	cr_expect_eq(nm.info, 300);

	cr_assert_eq(snapshots(&e, paths, 4), 1);
	{
		struct stat sb;

		cr_assert_eq(stat(paths[0], &sb), 0);
		cr_expect_eq(snap_bytes, (long long)sb.st_size, "status says snapshots take %lld "
			     "bytes, the file is %lld", snap_bytes, (long long)sb.st_size);
	}
	read_snap(paths[0], &s);
	cr_expect(s.hdr_ok && s.closed, "the snapshot is not a sealed segment");
	cr_expect_eq(s.damaged, 0);
	cr_expect_eq(s.errors, 1);
	cr_expect_eq(s.error_seq, 1500);
	cr_expect(strstr(s.reasons, "event Test.Flight/Error at level 2"), "reasons: %s", s.reasons);
	/* in order, no gap (nothing was overwritten in 16 MiB) */
	cr_expect_eq(s.gaps, 0, "%llu gaps in the verbose events", (unsigned long long)s.gaps);
	cr_expect_eq(s.lost_overwritten, 0);
	cr_expect_lt(s.first_seq, 1500);
	cr_expect_gt(s.last_seq, 1500, "nothing after the error (post)");
	/* the window: everything from pre before the trigger is there (the
	 * program ran 3 s before its error, pre is 2 s) */
	cr_expect_leq(s.first_ns, s.hdr.trigger_real_ns - 2000000000ull,
		      "the snapshot starts %lld ms after t - pre",
		      (long long)(s.first_ns - (s.hdr.trigger_real_ns - 2000000000ull)) / 1000000);
	cr_expect_eq(s.hdr.to_real_ns - s.hdr.trigger_real_ns, 1000000000ull);
	cr_expect_eq(s.verbose, s.last_seq - s.first_seq + 1);

	/* the tools take snapshots as segments: read --dir, export, status */
	{
		char cmd[1200], out[4096], dir[400];

		snprintf(dir, sizeof(dir), "%s/snapshots", e.store);
		snprintf(cmd, sizeof(cmd), CLI " read --dir '%s' | grep -c ' Verbose '", dir);
		live_run(cmd, out, sizeof(out));
		cr_expect_eq(strtoull(out, NULL, 10), s.verbose, "read --dir: %s", out);
		snprintf(cmd, sizeof(cmd), CLI " export --format json --output '%s/x.json' --dir '%s' && "
			 "grep -c '\"Verbose\"' '%s/x.json'", e.dir, dir, e.dir);
		live_run(cmd, out, sizeof(out));
		cr_expect_eq(strtoull(out, NULL, 10), s.verbose, "export: %s", out);
		snprintf(cmd, sizeof(cmd), CLI " status --dir '%s' --socket /nonexistent 2>/dev/null", e.store);
		live_run(cmd, out, sizeof(out));
		cr_expect(strstr(out, "snapshots              1 in") && strstr(out, "Test.Flight/Error"),
			  "status with the daemon down:\n%s", out);
	}
	live_cleanup(&e);
}

/* Emission order of test-flight-prog's events: Start, then Verbose(s),
 * with Info(s) after every 10th. How many came before this one. */
static uint64_t emitted_before(const char *name, uint64_t seq)
{
	if (!strcmp(name, "Start"))
		return 0;
	if (!strcmp(name, "Info"))
		return seq + seq / 10;
	return seq + (seq - 1) / 10;
}

/* A buffer far smaller than pre: the oldest is overwritten, and the
 * snapshot opens with a loss record counting exactly what it misses. More
 * chunks are overwritten than the buffer has (150,000 events: the daemon
 * once kept the counts of the last nslots only, and said 43,375 of
 * 121,993), and more than a packed 1 MiB holds. */
Test(flight, what_the_buffer_overwrote_is_counted_at_the_snapshots_start)
{
	struct live e;
	char paths[4][700];
	const char *argv[] = { PROG, "--rate", "40000", "--count", "150000", "--trigger-at", "145000", NULL };
	struct snap s;
	json_t *st;
	pid_t dm, p;

	live_init(&e);
	dm = start(&e, "\"size\": \"1M\", \"pre\": \"1h\", \"post\": \"200ms\"", NULL);
	p = live_spawn(argv, NULL, "/dev/null");
	live_wait_ok(p, "test-flight-prog");
	cr_assert_eq(wait_snapshots(&e, 1), 1);
	st = live_status_json();
	cr_assert(st);
	cr_expect_gt(json_integer_value(json_object_get(json_object_get(st, "flight"), "overwritten")), 0);
	json_decref(st);
	live_daemon_stop(dm);
	snapshots(&e, paths, 4);
	read_snap(paths[0], &s);
	cr_expect_gt(s.lost_overwritten, 0, "nothing counted as overwritten");
	cr_expect_eq(s.lost_overwritten, s.hdr.overwritten);
	cr_expect_eq(s.gaps, 0, "a gap after the counted one");
	/* the count is exact: every event before the first one kept */
	cr_assert_gt(s.events, 0);
	cr_expect_eq(s.lost_overwritten, emitted_before(s.kept_name, s.kept_seq),
		     "counted %llu overwritten; the first event kept (%s %llu) had %llu before it",
		     (unsigned long long)s.lost_overwritten, s.kept_name,
		     (unsigned long long)s.kept_seq,
		     (unsigned long long)emitted_before(s.kept_name, s.kept_seq));
	/* export takes the snapshot and its loss too, in each format (the
	 * Perfetto one names the cause with out_loss_why(): reason 6) */
	for (int i = 0; i < 2; i++) {
		const char *fmt = i ? "perfetto" : "ctf";
		char cmd[2000], out[4096], *n;

		snprintf(cmd, sizeof(cmd), CLI " export --format %s --output '%s/x-%s' '%s' 2>&1",
			 fmt, e.dir, fmt, paths[0]);
		live_run(cmd, out, sizeof(out));
		n = strstr(out, " events, ");
		cr_expect(n && strtoull(n + 9, NULL, 10) == s.lost_overwritten,
			  "export --format %s of a snapshot counts %llu lost: %s", fmt,
			  (unsigned long long)s.lost_overwritten, out);
	}
	live_cleanup(&e);
}

/* A long flood into a 1 MiB buffer (16 chunks) and a snapshot with a pre
 * of 1 s while it goes on: what was overwritten before the window is not
 * counted as missing from it. Far more than 16 chunks were overwritten
 * before the window, so the per-chunk list has let them go to its time
 * buckets; the count is what fell within the window (at most a second of
 * events, one bucket and one chunk more), well below everything overwritten
 * before the snapshot. (An earlier fix merged the counts it let go into
 * the oldest it kept, and counted the whole history here.) */
Test(flight, overwritten_before_the_window_is_not_counted_in_it)
{
	struct live e;
	char paths[4][700], out[2048];
	/* up to 100 events every 500 us: some 100,000/s, for 6 s or so */
	const char *argv[] = { EMITTER_PATH, "1", "600000", "--pause-us", "500", NULL };
	uint64_t before;
	struct snap s;
	json_t *st;
	pid_t dm, em;

	live_init(&e);
	dm = start(&e, "\"size\": \"1M\", \"pre\": \"1s\", \"post\": \"0s\"", NULL);
	em = live_spawn(argv, NULL, "/dev/null");
	sleep_ms(4000);
	st = live_status_json();
	cr_assert(st);
	before = (uint64_t)json_integer_value(json_object_get(json_object_get(st, "flight"),
							      "overwritten"));
	json_decref(st);
	cr_expect_eq(live_run(CLI " snapshot 2>&1", out, sizeof(out)), 0, "%s", out);
	live_wait_ok(em, "test-emitter");
	live_daemon_stop(dm);
	cr_assert_eq(snapshots(&e, paths, 4), 1);
	read_snap(paths[0], &s);
	cr_log_info("%llu counted overwritten in the window; %llu overwritten before the snapshot",
		    (unsigned long long)s.lost_overwritten, (unsigned long long)before);
	cr_expect_gt(before, 0, "nothing was overwritten: the test proves nothing");
	cr_expect_lt(s.lost_overwritten, before, "counted %llu overwritten in a window of 1 s: "
		     "the whole history, %llu at least", (unsigned long long)s.lost_overwritten,
		     (unsigned long long)before);
	cr_expect_eq(s.lost_overwritten, s.hdr.overwritten);
	cr_expect_eq(s.gaps, 0, "a gap after the counted one");
	live_cleanup(&e);
}

Test(flight, ringlog_snapshot_prints_the_path_of_a_snapshot_with_the_writers_last_events)
{
	struct live e;
	char paths[4][700], prog[400], cmd[600], out[2048], pp[400];
	const char *argv[] = { PROG, "--rate", "500", "--progress", pp, NULL };
	uint64_t *progress, before;
	struct snap s;
	pid_t d, p;

	live_init(&e);
	progress = progress_map(&e, pp, sizeof(pp));
	(void)prog;
	d = start(&e, "\"size\": \"8M\", \"pre\": \"10s\", \"post\": \"500ms\"", NULL);
	p = live_spawn(argv, NULL, "/dev/null");
	wait_progress(progress, 300);
	before = *progress;
	snprintf(cmd, sizeof(cmd), CLI " snapshot --reason 'from the test' 2>&1");
	cr_assert_eq(live_run(cmd, out, sizeof(out)), 0, "%s", out);
	cr_assert_eq(snapshots(&e, paths, 4), 1);
	cr_expect(strstr(out, paths[0]), "printed \"%s\", wrote %s", out, paths[0]);
	cr_expect(strstr(out, "reason: ringlog snapshot by uid"), "%s", out);
	kill(p, SIGKILL);
	waitpid(p, NULL, 0);
	read_snap(paths[0], &s);
	cr_expect(strstr(s.reasons, "from the test"), "reasons: %s", s.reasons);
	cr_expect_eq(s.gaps, 0);
	cr_expect_leq(s.first_seq, 1);
	cr_expect_geq(s.last_seq, before, "the snapshot ends at %llu, the program was at %llu",
		      (unsigned long long)s.last_seq, (unsigned long long)before);
	/* the kill -9 above triggers another: the stop writes it */
	live_daemon_stop(d);
	munmap(progress, 4096);
	live_cleanup(&e);
}

Test(flight, ringlog_trigger_in_a_program_and_in_its_sigsegv_handler)
{
	struct live e;
	char paths[4][700], pp[400];
	const char *ok[] = { PROG, "--rate", "500", "--count", "800", "--trigger-at", "500", NULL };
	const char *segv[] = { PROG, "--rate", "500", "--segv-at", "700", "--progress", pp, NULL };
	const char *segv_env[] = { "ASAN_OPTIONS=handle_segv=0:allow_user_segv_handler=1:detect_leaks=0",
				   NULL };
	uint64_t *progress;
	struct snap s;
	int st;
	pid_t d, p;

	live_init(&e);
	progress = progress_map(&e, pp, sizeof(pp));
	d = start(&e, "\"size\": \"8M\", \"pre\": \"10s\", \"post\": \"500ms\"", NULL);
	p = live_spawn(ok, NULL, "/dev/null");
	live_wait_ok(p, "test-flight-prog --trigger-at");
	cr_assert_geq(wait_snapshots(&e, 1), 1, "ringlog_trigger() took no snapshot");
	snapshots(&e, paths, 4);
	read_snap(paths[0], &s);
	cr_expect(strstr(s.reasons, "ringlog_trigger() in pid") && strstr(s.reasons, "flight-prog trigger"),
		  "reasons: %s", s.reasons);
	cr_expect_geq(s.last_seq, 500);
	cr_expect_eq(s.gaps, 0);

	/* under the sanitizers, the program's own handler, not ASan's */
	p = live_spawn(segv, segv_env, "/dev/null");
	cr_assert_eq(waitpid(p, &st, 0), p);
	cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV, "status %d: not a SIGSEGV", st);
	cr_assert_eq(*progress, 700);
	cr_assert_geq(wait_snapshots(&e, 2), 2, "the crash took no snapshot");
	cr_assert_eq(snapshots(&e, paths, 4), 2);
	read_snap(paths[1], &s);
	/* the handler's reason, and the writer gone without exiting: close
	 * together, one snapshot */
	cr_expect(strstr(s.reasons, "SIGSEGV in test-flight-prog"), "reasons: %s", s.reasons);
	cr_expect(strstr(s.reasons, "went away"), "reasons: %s", s.reasons);
	cr_expect_eq(s.last_seq, 700, "its last event (700) is not in the snapshot: %llu",
		     (unsigned long long)s.last_seq);
	cr_expect_eq(s.gaps, 0);
	live_daemon_stop(d);
	munmap(progress, 4096);
	live_cleanup(&e);
}

Test(flight, a_writer_killed_with_sigkill_takes_a_snapshot_with_its_last_events)
{
	struct live e;
	char paths[4][700], pp[400];
	const char *argv[] = { PROG, "--rate", "1000", "--progress", pp, NULL };
	uint64_t *progress, last;
	struct snap s;
	pid_t d, p;

	live_init(&e);
	progress = progress_map(&e, pp, sizeof(pp));
	d = start(&e, "\"size\": \"8M\", \"pre\": \"10s\", \"post\": \"500ms\"", NULL);
	p = live_spawn(argv, NULL, "/dev/null");
	wait_progress(progress, 1000);
	kill(p, SIGKILL);
	cr_assert_eq(waitpid(p, NULL, 0), p);
	last = *progress;
	cr_assert_eq(wait_snapshots(&e, 1), 1, "a killed writer took no snapshot");
	snapshots(&e, paths, 4);
	read_snap(paths[0], &s);
	cr_expect(strstr(s.reasons, "went away with 1 ring registered"), "reasons: %s", s.reasons);
	/* committed before the kill: in the snapshot, to the last one */
	cr_expect_eq(s.last_seq, last, "snapshot ends at %llu, the program committed %llu",
		     (unsigned long long)s.last_seq, (unsigned long long)last);
	cr_expect_eq(s.gaps, 0);
	cr_expect_eq(s.first_seq, 1);
	live_daemon_stop(d);
	munmap(progress, 4096);
	live_cleanup(&e);
}

/* An orderly exit is no trigger. */
Test(flight, a_writer_that_exits_normally_takes_no_snapshot)
{
	struct live e;
	const char *argv[] = { PROG, "--rate", "2000", "--count", "500", NULL };
	json_t *st;
	pid_t d, p;

	live_init(&e);
	d = start(&e, "\"size\": \"8M\", \"post\": \"100ms\"", NULL);
	p = live_spawn(argv, NULL, "/dev/null");
	live_wait_ok(p, "test-flight-prog");
	sleep_ms(500);
	st = live_status_json();
	cr_assert(st);
	cr_expect_eq(json_integer_value(json_object_get(json_object_get(json_object_get(st, "flight"),
		"snapshots"), "written")), 0, "an orderly exit was taken for a crash");
	cr_expect_eq(snapshots(&e, NULL, 0), 0);
	json_decref(st);
	live_daemon_stop(d);
	live_cleanup(&e);
}

Test(flight, triggers_close_together_coalesce_and_max_snapshots_refuses_the_rest)
{
	struct live e;
	char paths[4][700], out[3][2048], cmd[600], pp[400];
	const char *argv[] = { PROG, "--rate", "500", "--progress", pp, NULL };
	uint64_t *progress;
	struct snap s;
	json_t *st, *sn;
	pid_t d, p, a, b;

	live_init(&e);
	progress = progress_map(&e, pp, sizeof(pp));
	d = start(&e, "\"size\": \"8M\", \"pre\": \"10s\", \"post\": \"2s\", \"max_snapshots\": \"2/h\"",
		  NULL);
	p = live_spawn(argv, NULL, "/dev/null");
	wait_progress(progress, 100);
	/* two at once: one snapshot with both reasons, both told its path */
	{
		const char *ca[] = { CLI, "snapshot", "--reason", "first", NULL };
		const char *cb[] = { CLI, "snapshot", "--reason", "second", NULL };
		char oa[400], ob[400];

		snprintf(oa, sizeof(oa), "%s/a.out", e.dir);
		snprintf(ob, sizeof(ob), "%s/b.out", e.dir);
		a = live_spawn(ca, NULL, oa);
		sleep_ms(100);
		b = live_spawn(cb, NULL, ob);
		live_wait_ok(a, "ringlog snapshot --reason first");
		live_wait_ok(b, "ringlog snapshot --reason second");
		snprintf(cmd, sizeof(cmd), "cat '%s'", oa);
		live_run(cmd, out[0], sizeof(out[0]));
		snprintf(cmd, sizeof(cmd), "cat '%s'", ob);
		live_run(cmd, out[1], sizeof(out[1]));
	}
	cr_assert_eq(snapshots(&e, paths, 4), 1, "two triggers 100 ms apart made two snapshots");
	cr_expect_str_eq(out[0], out[1]);
	read_snap(paths[0], &s);
	cr_expect(strstr(s.reasons, "first") && strstr(s.reasons, "second"), "reasons: %s", s.reasons);
	cr_expect_eq(s.hdr.nreasons, 2);
	/* the second of the hour is taken, the third refused */
	snprintf(cmd, sizeof(cmd), CLI " snapshot --reason third 2>&1");
	cr_expect_eq(live_run(cmd, out[2], sizeof(out[2])), 0, "%s", out[2]);
	snprintf(cmd, sizeof(cmd), CLI " snapshot --reason fourth 2>&1");
	cr_expect_eq(live_run(cmd, out[2], sizeof(out[2])), 1, "%s", out[2]);
	cr_expect(strstr(out[2], "refused") && strstr(out[2], "max_snapshots"), "%s", out[2]);
	cr_expect_eq(snapshots(&e, NULL, 0), 2);
	st = live_status_json();
	cr_assert(st);
	sn = json_object_get(json_object_get(st, "flight"), "snapshots");
	cr_expect_eq(json_integer_value(json_object_get(sn, "refused")), 1);
	cr_expect_geq(json_integer_value(json_object_get(sn, "coalesced")), 1);
	json_decref(st);
	/* a reload to 4/h: two more this hour, then refused; and back to 1/h:
	 * none (the newest one began within the hour) */
	start_conf(&e, "\"size\": \"8M\", \"pre\": \"10s\", \"post\": \"2s\", "
		   "\"max_snapshots\": \"4/h\"");
	reload(&e, d);
	for (int k = 0; k < 3; k++) {
		snprintf(cmd, sizeof(cmd), CLI " snapshot --reason after-reload-%d 2>&1", k);
		cr_expect_eq(live_run(cmd, out[2], sizeof(out[2])), k < 2 ? 0 : 1, "4/h, %d: %s", k,
			     out[2]);
	}
	cr_expect_eq(snapshots(&e, NULL, 0), 4);
	start_conf(&e, "\"size\": \"8M\", \"pre\": \"10s\", \"post\": \"2s\", "
		   "\"max_snapshots\": \"1/h\"");
	reload(&e, d);
	snprintf(cmd, sizeof(cmd), CLI " snapshot --reason after-second-reload 2>&1");
	cr_expect_eq(live_run(cmd, out[2], sizeof(out[2])), 1, "1/h: %s", out[2]);
	cr_expect_eq(snapshots(&e, NULL, 0), 4);
	kill(p, SIGTERM);
	waitpid(p, NULL, 0);
	live_daemon_stop(d);
	munmap(progress, 4096);
	live_cleanup(&e);
}

/* The snapshot directory's bytes, temporaries included, sampled every
 * millisecond until *stop: the most seen goes to *peak. */
struct dir_watch {
	char dir[400];
	volatile int stop;
	uint64_t peak;
};

static void *watch_dir(void *arg)
{
	struct dir_watch *w = arg;

	while (!w->stop) {
		DIR *d = opendir(w->dir);
		struct dirent *de;
		uint64_t n = 0;

		while (d && (de = readdir(d))) {
			char path[700];
			struct stat sb;

			snprintf(path, sizeof(path), "%s/%s", w->dir, de->d_name);
			if (de->d_name[0] != '.' || strstr(de->d_name, ".tmp"))
				if (stat(path, &sb) == 0 && S_ISREG(sb.st_mode))
					n += (uint64_t)sb.st_blocks * 512;
		}
		if (d)
			closedir(d);
		if (n > w->peak)
			w->peak = n;
		usleep(1000);
	}
	return NULL;
}

/* flight.max_disk holds at all times: the oldest snapshots go before the
 * next is written, not after (the old ones and the new one were on disk
 * together, a whole snapshot past the share, in an outsider's test). */
Test(flight, snapshots_stay_within_their_share_while_one_is_written, .timeout = 120)
{
	struct live e;
	char pp[400], cmd[600], out[2048];
	const char *argv[] = { PROG, "--rate", "200000", "--count", "0", "--progress", pp, NULL };
	struct dir_watch w = { .stop = 0 };
	const uint64_t share = 3u << 20;
	uint64_t *progress;
	pthread_t th;
	pid_t d, p;

	live_init(&e);
	progress = progress_map(&e, pp, sizeof(pp));
	/* a 1.5M buffer, so each snapshot is ~1.4M: three never fit 3M */
	d = start(&e, "\"size\": \"1536K\", \"pre\": \"1h\", \"post\": \"0s\", \"max_disk\": \"3M\", "
		      "\"max_snapshots\": \"100/m\"", NULL);
	p = live_spawn(argv, NULL, "/dev/null");
	wait_progress(progress, 100000); /* ~35 bytes each: the buffer has wrapped */
	snprintf(w.dir, sizeof(w.dir), "%s/snapshots", e.store);
	mkdir(w.dir, 0755);
	cr_assert_eq(pthread_create(&th, NULL, watch_dir, &w), 0);
	for (int k = 0; k < 6; k++) {
		snprintf(cmd, sizeof(cmd), CLI " snapshot --reason share-%d 2>&1", k);
		cr_expect_eq(live_run(cmd, out, sizeof(out)), 0, "snapshot %d: %s", k, out);
	}
	w.stop = 1;
	pthread_join(th, NULL);
	kill(p, SIGTERM);
	waitpid(p, NULL, 0);
	cr_expect_geq(snapshots(&e, NULL, 0), 1);
	cr_expect_leq(w.peak, share + (64u << 10), "snapshots took %llu bytes, over flight.max_disk",
		      (unsigned long long)w.peak);
	cr_log_info("flight: snapshots' peak %llu bytes of %llu", (unsigned long long)w.peak,
		    (unsigned long long)share);
	live_daemon_stop(d);
	munmap(progress, 4096);
	live_cleanup(&e);
}

/* SIGKILL at several points of a large snapshot's write: afterwards the
 * snapshot directory holds complete snapshots only (a half one never got
 * its name), and the next daemon removes the temporary. */
Test(flight, a_daemon_killed_while_writing_leaves_a_whole_snapshot_or_none)
{
	struct live e;
	const char *argv[] = { PROG, "--rate", "100000", "--count", "0", NULL };
	static const long delays_ms[] = { 0, 2, 5, 10, 30, 80 };
	unsigned whole = 0;
	pid_t d, p;

	live_init(&e);
	for (size_t k = 0; k < sizeof(delays_ms) / sizeof(delays_ms[0]); k++) {
		char paths[16][700], dir[400], cmd[700], out[256];
		const char *snap[] = { CLI, "snapshot", NULL };
		unsigned n;
		pid_t c;

		d = start(&e, "\"size\": \"64M\", \"pre\": \"1h\", \"post\": \"0s\", "
			  "\"max_snapshots\": \"100/m\", \"max_disk\": \"1G\"", "\"max_disk\": \"4G\"");
		p = live_spawn(argv, NULL, "/dev/null");
		sleep_ms(1500); /* some MiB of verbose events in the buffer */
		c = live_spawn(snap, NULL, "/dev/null");
		sleep_ms(delays_ms[k]);
		kill(d, SIGKILL);
		waitpid(d, NULL, 0);
		kill(p, SIGKILL);
		waitpid(p, NULL, 0);
		waitpid(c, NULL, 0);
		n = snapshots(&e, paths, 16);
		for (unsigned i = 0; i < n; i++) {
			struct snap s;

			read_snap(paths[i], &s);
			cr_expect(s.hdr_ok && s.closed, "%s: not a sealed segment", paths[i]);
			cr_expect_eq(s.damaged, 0, "%s: damaged", paths[i]);
			cr_expect_eq(s.events, s.seg.events, "%s: %llu events, the header says %llu",
				     paths[i], (unsigned long long)s.events,
				     (unsigned long long)s.seg.events);
		}
		whole = n;
		/* the next daemon removes what a killed one left half-written */
		live_daemon_stop(start(&e, "\"size\": \"1M\"", NULL));
		snprintf(dir, sizeof(dir), "%s/snapshots", e.store);
		snprintf(cmd, sizeof(cmd), "ls -a '%s' 2>/dev/null | grep -c '\\.tmp$'", dir);
		live_run(cmd, out, sizeof(out));
		cr_expect_eq(atoi(out), 0, "a temporary survived a restart");
	}
	cr_log_info("%u whole snapshots over %zu kills", whole,
		    sizeof(delays_ms) / sizeof(delays_ms[0]));
	live_cleanup(&e);
}

/* Segments get max_disk less flight.max_disk; snapshots past flight.max_disk
 * delete the oldest. */
Test(flight, snapshots_take_their_share_of_the_disk_budget)
{
	struct live e;
	const char *argv[] = { PROG, "--rate", "20000", "--count", "0", NULL };
	const char *flood[] = { EMITTER_PATH, "2", "400000", NULL };
	uint64_t seg_bytes = 0, snap_bytes = 0, max_disk = 24ull << 20, share = 4ull << 20;
	char paths[16][700];
	json_t *st;
	pid_t d, p, f;
	unsigned n;

	live_init(&e);
	/* (the buffer at most half the share: config.c refuses more) */
	d = start(&e, "\"size\": \"2M\", \"pre\": \"1h\", \"post\": \"0s\", \"max_snapshots\": "
		  "\"100/m\", \"max_disk\": \"4M\"", "\"max_disk\": \"24M\", \"max_segment_size\": \"4M\"");
	p = live_spawn(argv, NULL, "/dev/null");
	f = live_spawn(flood, NULL, "/dev/null");
	live_wait_ok(f, "test-emitter");
	for (int i = 0; i < 4; i++) {
		char out[2048];

		sleep_ms(400);
		cr_expect_eq(live_run(CLI " snapshot 2>&1", out, sizeof(out)), 0, "%s", out);
	}
	kill(p, SIGKILL);
	waitpid(p, NULL, 0);
	sleep_ms(300);
	st = live_status_json();
	cr_assert(st);
	seg_bytes = (uint64_t)json_integer_value(json_object_get(st, "used_bytes"));
	json_decref(st);
	{
		/* status's disk line counts both shares against max_disk (it
		 * counted the segments alone) */
		static char out[1 << 16];
		const char *l;

		cr_expect_eq(live_run(CLI " status 2>&1", out, sizeof(out)), 0, "%s", out);
		l = strstr(out, "\ndisk ");
		if (l)
			cr_log_info("%.*s", (int)strcspn(l + 1, "\n"), l + 1);
		cr_expect(l && strstr(l, "(segments ") && strstr(l, ", snapshots ") &&
			  strstr(l, ", snapshots ") < strchr(l + 1, '\n'),
			  "the disk line leaves the snapshots out: %.300s", l ? l : out);
	}
	n = snapshots(&e, paths, 16);
	for (unsigned i = 0; i < n; i++) {
		struct stat sb;

		cr_assert_eq(stat(paths[i], &sb), 0);
		snap_bytes += (uint64_t)sb.st_size;
	}
	cr_expect_geq(n, 1);
	/* the newest and what older ones fit beside it: the share (and a
	 * header of slack) */
	cr_expect_leq(snap_bytes, share + (64u << 10), "%u snapshots hold %llu bytes", n,
		      (unsigned long long)snap_bytes);
	cr_expect_leq(seg_bytes, max_disk - share + (1u << 20), "segments hold %llu bytes of %llu",
		      (unsigned long long)seg_bytes, (unsigned long long)(max_disk - share));
	live_daemon_stop(d);
	live_cleanup(&e);
}

/* `ringlog enable --flight-level` raises what the buffer keeps at run
 * time, over a configuration without flight_level: verbose in memory,
 * still not on disk. */
Test(flight, ringlog_enable_flight_level_keeps_verbose_in_memory_at_run_time)
{
	struct live e;
	char path[400], paths[4][700], out[2048];
	const char *argv[] = { PROG, "--rate", "1000", "--count", "600", "--trigger-at", "400", NULL };
	struct live_read rd = { 0 };
	struct names nm = { 0 };
	struct snap s;
	pid_t d, p;

	live_init(&e);
	snprintf(path, sizeof(path), "%s/ringlogd.json", e.dir);
	live_write_file(path, "{ \"providers\": { \"*\": {\"level\": 4} }, \"flight\": { \"size\": \"4M\", "
			"\"pre\": \"1m\", \"post\": \"200ms\" } }");
	d = live_daemon(&e, "--config", path, NULL);
	cr_assert_eq(live_run(CLI " enable --flight-level verbose 'Test.*' info 2>&1", out, sizeof(out)),
		     0, "%s", out);
	cr_expect(strstr(out, "in the flight buffer only up to verbose"), "%s", out);
	p = live_spawn(argv, NULL, "/dev/null");
	live_wait_ok(p, "test-flight-prog");
	cr_assert_eq(wait_snapshots(&e, 1), 1);
	live_daemon_stop(d);
	rd.ctx = &nm;
	rd.on_event = count_names;
	live_read_store(e.store, &rd);
	cr_expect_eq(nm.verbose, 0);
	cr_expect_eq(nm.info, 60);
	snapshots(&e, paths, 4);
	read_snap(paths[0], &s);
	cr_expect_eq(s.first_seq, 1);
	cr_expect_geq(s.last_seq, 400);
	cr_expect_eq(s.gaps, 0);
	live_cleanup(&e);
}

/* trigger_providers narrows trigger_level to the providers listed. */
Test(flight, trigger_level_applies_to_the_trigger_providers_only)
{
	struct live e;
	const char *argv[] = { PROG, "--rate", "2000", "--count", "400", "--error-at", "100", NULL };
	json_t *st;
	pid_t d, p;

	live_init(&e);
	d = start(&e, "\"size\": \"4M\", \"post\": \"100ms\", \"trigger_level\": \"error\", "
		  "\"trigger_providers\": [\"Other.*\"]", NULL);
	p = live_spawn(argv, NULL, "/dev/null");
	live_wait_ok(p, "test-flight-prog");
	sleep_ms(500);
	st = live_status_json();
	cr_assert(st);
	cr_expect_eq(json_integer_value(json_object_get(json_object_get(json_object_get(st, "flight"),
		"snapshots"), "written")), 0, "an error of Test.Flight triggered with trigger_providers "
		"[\"Other.*\"]");
	json_decref(st);
	cr_expect_eq(snapshots(&e, NULL, 0), 0);
	live_daemon_stop(d);
	live_cleanup(&e);
}
