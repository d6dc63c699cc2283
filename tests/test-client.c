/* tests/test-client.c - libringlog seen from programs: every field type
 * round-trips exactly through the daemon and `ringlog read`; 64 threads;
 * disabled events cost no ring; 10,000 threads and fork/exec leak nothing;
 * the header works from C++17. Real daemon, real client processes. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers.h"
#include "live.h"
#include "segment.h"

TestSuite(client, .fini = th_check_leaks, .timeout = 300);

/* Run a program with stdout captured; expects exit 0. */
static void run_ok(const char *cmd, char *out, size_t cap)
{
	int rc = live_run(cmd, out, cap);

	cr_assert_eq(rc, 0, "%s: exit %d: %s", cmd, rc, out);
}

/* The "fields" object of the JSON line of event `name` in text. */
static const char *fields_of(const char *text, const char *name, char *buf, size_t cap)
{
	char key[128];
	const char *p, *f, *end;

	snprintf(key, sizeof(key), "\"event\":\"%s\"", name);
	if (!(p = strstr(text, key)) || !(f = strstr(p, "\"fields\":")) || !(end = strchr(f, '\n')))
		return "";
	snprintf(buf, cap, "%.*s", (int)(end - f), f);
	return buf;
}

Test(client, every_field_type_round_trips_exactly)
{
	static char out[1 << 20];
	static char want_long[8192], want_blob[40000], got[40000];
	struct live e;
	char cmd[600];
	pid_t d;

	live_init(&e);
	d = live_daemon(&e, NULL);
	run_ok(TYPES_PATH " types", out, sizeof(out));
	live_daemon_stop(d);
	snprintf(cmd, sizeof(cmd), RINGLOG_CLI_PATH " read --json --dir '%s'", e.store);
	run_ok(cmd, out, sizeof(out));

	cr_expect_str_eq(fields_of(out, "Ints", got, sizeof(got)),
			 "\"fields\":{\"i8\":-128,\"i16\":-32768,\"i32\":-2147483648,"
			 "\"i64\":-9223372036854775808,\"u8\":255,\"u16\":65535,"
			 "\"u32\":4294967295,\"u64\":18446744073709551615,\"yes\":true,\"no\":false}}");
	cr_expect(strstr(out, "\"keyword\":\"0x8000000000000001\""), "keyword lost");
	cr_expect_str_eq(fields_of(out, "Doubles", got, sizeof(got)),
			 "\"fields\":{\"half\":1.5,\"neg\":-2.25e-300,\"nan\":\"nan\",\"inf\":\"inf\","
			 "\"ninf\":\"-inf\",\"zero\":0}}");
	cr_expect_str_eq(fields_of(out, "Hints", got, sizeof(got)),
			 "\"fields\":{\"h32\":\"0xdeadbeef\",\"h64\":\"0x123456789abcdef\","
			 "\"pid\":4242,\"err\":2,\"when\":\"2023-11-14T22:13:20.123456789Z\"}}");
	/* The long string is cut at RINGLOG_STR_MAX bytes and flagged. */
	memset(want_long, 'x', 4096);
	want_long[4096] = 0;
	{
		size_t n = 0;

		for (int i = 0; i < 8192; i++)
			n += (size_t)snprintf(want_blob + n, sizeof(want_blob) - n, "%02x", i & 0xff);
	}
	{
		static char want[60000];

		snprintf(want, sizeof(want),
			 "\"fields\":{\"empty\":\"\",\"quote\":\"say \\\"hi\\\"\\u000a\\u0009tab\","
			 "\"utf8\":\"caf\xc3\xa9\",\"long\":\"%s\","
			 "\"none\":\"\",\"big\":\"%s\"},\"truncated\":[\"long\"]}",
			 want_long, want_blob);
		cr_expect_str_eq(fields_of(out, "Strings", got, sizeof(got)), want);
	}
	cr_expect(strstr(out, "\"opcode\":\"start\""), "opcode lost");
	cr_expect(strstr(out, "\"activity\":\"a0a1a2a3a4a5a6a7a8a9aaabacadaeaf\""), "activity id lost");
	live_cleanup(&e);
}

Test(client, sixty_four_threads_100k_events_each_stored_once_in_order)
{
	struct live e;
	pid_t d;
	static char out[16384];

	live_init(&e);
	d = live_daemon(&e, NULL);
	setenv("RINGLOG_RING_SIZE", "8M", 1);
	run_ok(EMITTER_PATH " 64 100000 --wait-daemon 10", out, sizeof(out));
	unsetenv("RINGLOG_RING_SIZE");
	live_daemon_stop(d);

	struct live_order *o = calloc(1, sizeof(*o));
	struct live_read rd = { .ctx = o, .on_event = live_order_event };

	live_read_store(e.store, &rd);
	cr_expect_eq(o->dups_or_gaps, 0, "per-thread order broken %llu times",
		     (unsigned long long)o->dups_or_gaps);
	free(o);
	cr_expect_eq(rd.events, 6400000u, "stored %llu of 6,400,000", (unsigned long long)rd.events);
	cr_expect_eq(rd.lost, 0);
	cr_expect(strstr(out, "dropped_full=0 dropped_other=0"), "%s", out);
	live_cleanup(&e);
}

/* A thread's first event makes its ring resident and writes every page of
 * it, so that no later emit stalls on a page's first fault (or, in a VM
 * with shadow page tables, a 10-15 us trap: bench-scale's emit p99 with
 * 1,000 writers was 9.8 us for it). MAP_POPULATE alone left them clean. */
Test(client, a_new_ring_is_resident_and_written_before_its_first_event_returns)
{
	char out[256];
	long size = 0, rss = 0, clean = -1;
	/* no daemon: the ring is made all the same */
	int rc = live_run("RINGLOG_SOCKET=/nonexistent/ringlog.sock " TYPES_PATH " resident", out,
			  sizeof(out));

	cr_assert_eq(rc, 0, "exit %d: %s", rc, out);
	cr_assert_eq(sscanf(out, "size=%ld rss=%ld clean=%ld", &size, &rss, &clean), 3, "%s", out);
	cr_assert_gt(size, 0, "no ring mapping found: %s", out);
	cr_expect_eq(rss, size, "only %ld of the ring's %ld kB resident", rss, size);
	cr_expect_eq(clean, 0, "%ld of the ring's %ld kB never written: an emit takes their first "
		     "fault", clean, size);
}

Test(client, disabled_events_are_not_stored_and_take_no_ring)
{
	struct live e;
	pid_t d;
	char out[4096], cmd[600];

	live_init(&e);
	d = live_daemon(&e, NULL);
	run_ok(TYPES_PATH " disabled", out, sizeof(out));
	live_daemon_stop(d);
	cr_expect(strstr(out, "after_disabled rings_created=0 dropped=0"),
		  "a disabled event created a ring: %s", out);
	cr_expect(strstr(out, "after_enabled rings_created=1"), "%s", out);
	snprintf(cmd, sizeof(cmd), RINGLOG_CLI_PATH " read --json --dir '%s'", e.store);
	run_ok(cmd, out, sizeof(out));
	cr_expect(!strstr(out, "Chatty"), "a disabled event was stored");
	cr_expect(strstr(out, "\"event\":\"Once\""), "the enabled event is missing");
	live_cleanup(&e);
}

/* A ring past its high-water mark wakes a sleeping daemon (one write to
 * the daemon's eventfd); a steady stream that keeps it awake costs no
 * system call at all. How many events a burst would have lost without the
 * wakeup depends on timing, so it is printed, not asserted. */
Test(client, a_burst_wakes_a_sleeping_daemon_and_steady_emitting_makes_no_system_call)
{
	struct live e;
	pid_t d;
	char out[4096];
	unsigned long long wakeups = 99, dropped = 0, emitted = 0;

	live_init(&e);
	d = live_daemon(&e, NULL);
	setenv("RINGLOG_RING_SIZE", "64K", 1);
	run_ok(TYPES_PATH " burst", out, sizeof(out));
	unsetenv("RINGLOG_RING_SIZE");
	cr_assert_eq(sscanf(out, "wakeups=%llu dropped=%llu emitted=%llu", &wakeups, &dropped, &emitted),
		     3, "%s", out);
	fprintf(stderr, "client: 5 bursts of 2,000 events into a 64 KiB ring after 300 ms idle: %llu "
		"wakeups, %llu of %llu dropped\n", wakeups, dropped, emitted);
	cr_expect_geq(wakeups, 1, "no burst woke the daemon: %s", out);
	cr_expect_leq(wakeups, 10, "woken more than twice per burst: %s", out);
	{
		static char st[1 << 16];
		char cmd[600];
		const char *p;

		snprintf(cmd, sizeof(cmd), RINGLOG_CLI_PATH " status --json --socket '%s' 2>&1", e.sock);
		cr_assert_eq(live_run(cmd, st, sizeof(st)), 0, "%.500s", st);
		p = strstr(st, "\"producer_wakeups\":");
		cr_assert(p, "status has no producer_wakeups");
		cr_expect_geq(strtoull(p + 19, NULL, 10), 1, "the daemon counted no wakeup: %.300s", p);
	}
	/* 8 MiB: the daemon may stall 680 ms (ASan, a loaded CI machine)
	 * before the ring is half full and the writer has to wake it; with
	 * 1 MiB that was 85 ms */
	setenv("RINGLOG_RING_SIZE", "8M", 1);
	run_ok(TYPES_PATH " steady", out, sizeof(out));
	unsetenv("RINGLOG_RING_SIZE");
	cr_assert_eq(sscanf(out, "wakeups=%llu dropped=%llu emitted=%llu", &wakeups, &dropped, &emitted),
		     3, "%s", out);
	fprintf(stderr, "client: 2 s steady at 100 events/ms: %llu wakeups, %llu of %llu dropped\n",
		wakeups, dropped, emitted);
	cr_expect_eq(wakeups, 0, "steady emitting made system calls: %s", out);
	live_daemon_stop(d);
	live_cleanup(&e);
}

Test(client, ten_thousand_threads_leave_no_fds_and_no_rings_behind)
{
	struct live e;
	pid_t d;
	char out[4096];
	int before = -1, after = -1;
	unsigned long long created = 0, live = 0;

	live_init(&e);
	d = live_daemon(&e, NULL);
	/* 64 KiB rings: what is counted is descriptors and rings, and each
	 * new ring's pages are written on its first event (os-unix.c) */
	run_ok("RINGLOG_RING_SIZE=64K " TYPES_PATH " threads", out, sizeof(out));
	live_daemon_stop(d);
	cr_assert_eq(sscanf(out, "fds_before=%d fds_after=%d rings_created=%llu rings_live=%llu",
			    &before, &after, &created, &live), 4, "%s", out);
	cr_expect_eq(created, 10001);
	cr_expect_leq(after, before + 2, "fds grew from %d to %d", before, after);
	cr_expect_leq(live, 4, "%llu rings still live after 10,000 threads ended", live);

	struct live_read rd = { 0 };

	live_read_store(e.store, &rd);
	cr_expect_eq(rd.events, 10002);
	live_cleanup(&e);
}

struct forked {
	uint32_t parent_pid, child_pid;
	int parent_events, child_events;
};

static int on_forked(void *ctx, const struct ringlog_dec_event *ev)
{
	struct forked *f = ctx;

	if (!strcmp(ev->desc->name, "Parent")) {
		f->parent_pid = ev->writer->w.pid;
		f->parent_events++;
	} else if (!strcmp(ev->desc->name, "Child")) {
		f->child_pid = ev->writer->w.pid;
		f->child_events++;
	}
	return 0;
}

/* The pages of a thread's ring are the program's to free, as they were
 * its to allocate: the library lets a finished ring go only after the
 * daemon said RELEASED, which it says once it has unmapped it. Before,
 * the library closed a ring as soon as it was drained, and the daemon's
 * munmap() then freed the pages (~50 us of its time for 512 KiB), for
 * about half of many threads ending together (bench-scale --only churn). */
Test(client, a_finished_ring_is_freed_by_the_program_after_the_daemon_let_it_go)
{
	struct live e;
	pid_t d;
	char out[4096], cmd[256];
	unsigned long long freed = 0, live = 0;
	int maps = -1, excess = -1;

	live_init(&e);
	d = live_daemon(&e, NULL);
	snprintf(cmd, sizeof(cmd), TYPES_PATH " released %d", (int)d);
	run_ok(cmd, out, sizeof(out));
	live_daemon_stop(d);
	cr_assert_eq(sscanf(out, "rings_freed=%llu rings_live=%llu daemon_ring_maps=%d excess=%d",
			    &freed, &live, &maps, &excess), 4, "%s", out);
	cr_expect_eq(freed, 200, "%s: the finished threads' rings were not all freed", out);
	cr_expect_eq(maps, 1, "%s: the daemon still maps rings of ended threads", out);
	cr_expect_eq(excess, 0, "%s: the library freed rings the daemon still had mapped", out);
	live_cleanup(&e);
}

static void sum_no_ring(void *ctx, const struct ringlog_dec_loss *l)
{
	if (l->reason == RINGLOG_LOSS_NO_RING)
		*(uint64_t *)ctx += l->records;
}

static int count_dtor(void *ctx, const struct ringlog_dec_event *ev)
{
	unsigned *n = ctx;

	n[0]++;
	n[1] += !strcmp(ev->desc->name, "Dtor");
	return 0;
}

/* Another pthread key's destructor may emit after the library's own: the
 * thread must not write into a ring the library finished, and may have
 * freed, then (it did: heap corruption, SIGSEGV, or the event silently
 * gone). The ring stays the thread's until the last round of destructors:
 * the events of rounds 1-3 are stored, the last round's (after the
 * library's) is counted lost for want of a ring, and no ring is left
 * behind. */
Test(client, an_event_from_a_thread_exit_destructor_is_stored_and_corrupts_nothing)
{
	struct live e;
	unsigned n[2] = { 0, 0 };
	uint64_t no_ring = 0;
	struct live_read rd = { .ctx = n, .on_event = count_dtor };
	struct live_read rd2 = { .ctx = &no_ring, .on_loss = sum_no_ring };
	unsigned long long created = 0, live = 0, full = 0, other = 0;
	char out[4096];
	pid_t d;

	live_init(&e);
	d = live_daemon(&e, NULL);
	run_ok(TYPES_PATH " key-dtor", out, sizeof(out));
	live_daemon_stop(d);
	cr_assert_eq(sscanf(out, "rings_created=%llu rings_live=%llu dropped_full=%llu "
			    "dropped_other=%llu", &created, &live, &full, &other), 4, "%s", out);
	cr_expect_eq(live, 1, "%s: rings of ended threads stayed", out);
	cr_expect_eq(full, 0, "%s", out);
	cr_expect_eq(other, 20, "%s: not one event a thread after the last round", out);
	live_read_store(e.store, &rd);
	cr_expect_eq(n[1], 60, "%u of the 60 destructors' events of rounds 1-3 stored", n[1]);
	cr_expect_geq(n[0], 101, "%u events stored of the 101 that had a ring", n[0]);
	live_read_store(e.store, &rd2);
	cr_expect_eq(no_ring, 20, "%llu counted lost for want of a ring, of 20",
		     (unsigned long long)no_ring);
	live_cleanup(&e);
}

struct per_pid {
	uint32_t pid[64];
	unsigned n[64], npids;
};

static int count_per_pid(void *ctx, const struct ringlog_dec_event *ev)
{
	struct per_pid *p = ctx;
	unsigned i;

	for (i = 0; i < p->npids && p->pid[i] != ev->writer->w.pid; i++)
		;
	if (i == p->npids && p->npids < 64)
		p->pid[p->npids++] = ev->writer->w.pid;
	if (i < 64)
		p->n[i]++;
	return 0;
}

/* A process that aborts right after new threads' first events: every one
 * of them is stored (each thread hands its ring over itself when it makes
 * it; left to the library's thread, 1-3 threads' events of 50 were gone in
 * 1-10 % of such runs, with no count anywhere). */
Test(client, events_of_threads_just_started_survive_an_abort, .timeout = 120)
{
	enum { RUNS = 20 };
	struct per_pid p = { .npids = 0 };
	struct live_read rd = { .ctx = &p, .on_event = count_per_pid };
	struct live e;
	char out[4096];
	pid_t d;
	unsigned short_runs = 0;

	live_init(&e);
	d = live_daemon(&e, NULL);
	for (int i = 0; i < RUNS; i++) {
		int rc = live_run(TYPES_PATH " abort-fresh 2>&1", out, sizeof(out));

		cr_assert_neq(rc, 2, "could not start threads: %s", out);
		cr_assert_neq(rc, 3, "no daemon: %s", out);
	}
	usleep(1500000); /* what the aborted processes left is drained */
	live_daemon_stop(d);
	live_read_store(e.store, &rd);
	cr_expect_eq(p.npids, RUNS, "%u processes' events stored", p.npids);
	for (unsigned i = 0; i < p.npids; i++)
		if (p.n[i] != 501) {
			cr_log_error("pid %u: %u of 501 events stored", p.pid[i], p.n[i]);
			short_runs++;
		}
	cr_expect_eq(short_runs, 0, "%u of %u aborted runs lost events (no count)", short_runs, RUNS);
	cr_expect_eq(rd.lost, 0);
	live_cleanup(&e);
}

/* While the daemon is away, ended threads' rings wait in the process, a
 * descriptor each. When they fill its table the library must still
 * connect once the daemon comes (it could not: socket() said EMFILE, for
 * good), hand them over, and free them; and get the daemon's wake eventfd,
 * which its WELCOME could not carry into a full table. */
Test(client, rings_that_fill_the_fd_table_while_the_daemon_is_away_are_stored_and_freed,
     .timeout = 120)
{
	struct live e;
	uint64_t no_ring = 0;
	struct live_read rd = { .ctx = &no_ring, .on_loss = sum_no_ring };
	char out_path[400], out[4096] = "";
	const char *argv[] = { TYPES_PATH, "fd-full", NULL };
	/* a ring a burst passes the high-water mark of (types.c) */
	const char *env[] = { "RINGLOG_RING_SIZE=64K", NULL };
	json_t *st;
	unsigned threads = 0, emitted = 0;
	unsigned long long live = 0, other = 0, full_live = 0, wakeups = 0, dropped = 0, connects = 0;
	int flush = -99, fds = -1;
	pid_t p, d;

	live_init(&e);
	snprintf(out_path, sizeof(out_path), "%s/fd-full.out", e.dir);
	p = live_spawn(argv, env, out_path);
	for (int i = 0; i < 600 && !strstr(out, "full"); i++) {
		FILE *f = fopen(out_path, "r");

		usleep(50000);
		if (f) {
			size_t n = fread(out, 1, sizeof(out) - 1, f);

			out[n] = 0;
			fclose(f);
		}
	}
	cr_assert(sscanf(out, "full threads=%u rings_live=%llu", &threads, &full_live) == 2,
		  "the program did not fill its fd table: %s", out);
	d = live_daemon(&e, NULL);
	live_wait_ok(p, "test-types fd-full");
	{
		FILE *f = fopen(out_path, "r");
		size_t n = f ? fread(out, 1, sizeof(out) - 1, f) : 0;

		out[n] = 0;
		if (f)
			fclose(f);
	}
	st = live_status_json();
	cr_assert(st, "no status");
	/* the events that found no ring: the program said how many */
	cr_expect_gt(json_integer_value(json_object_get(json_object_get(st, "lost"), "no_ring")), 0,
		     "status counts no event that found no ring");
	json_decref(st);
	live_daemon_stop(d);
	cr_assert(strstr(out, "flush="), "%s", out);
	cr_assert_eq(sscanf(strstr(out, "flush="), "flush=%d emitted=%u dropped_other=%llu "
			    "rings_live=%llu fds=%d wakeups=%llu dropped_full=%llu connects=%llu", &flush,
			    &emitted, &other, &live, &fds, &wakeups, &dropped, &connects), 8, "%s", out);
	cr_expect_gt(full_live, 40, "%s: too few rings waited to fill the table", out);
	cr_log_info("%s", out);
	cr_expect_eq(flush, 0, "%s: never connected, or not everything stored", out);
	cr_expect_leq(live, 1, "%s: the waiting rings were not freed", out);
	/* WELCOME came with the table full, without the daemon's wake
	 * eventfd: the library asked again once it had room (WAKE) */
	cr_expect_geq(wakeups, 1, "%s: no burst woke the daemon", out);
	cr_expect_eq(connects, 1, "%s: it got the eventfd by connecting again", out);
	live_read_store(e.store, &rd);
	cr_expect_eq(rd.events, emitted - other - dropped, "%s: %llu stored", out,
		     (unsigned long long)rd.events);
	cr_expect_eq(no_ring, other, "%s: %llu stored as lost for want of a ring", out,
		     (unsigned long long)no_ring);
	live_cleanup(&e);
}

Test(client, fork_gives_the_child_its_own_ring_and_exec_leaks_no_fd)
{
	struct live e;
	struct forked f = { 0 };
	struct live_read rd = { .ctx = &f, .on_event = on_forked };
	pid_t d;
	char out[4096];

	live_init(&e);
	d = live_daemon(&e, NULL);
	run_ok(TYPES_PATH " fork", out, sizeof(out));
	live_daemon_stop(d);
	/* Nothing of the library's (memfds, eventfd) crossed exec. (The test
	 * harness's own descriptors may, so only ours are looked for.) */
	cr_expect(!strstr(out, "memfd:ringlog") && !strstr(out, "eventfd"),
		  "a library fd survived exec: %s", out);
	live_read_store(e.store, &rd);
	cr_expect_eq(f.parent_events, 2);
	cr_expect_eq(f.child_events, 1);
	cr_expect_neq(f.parent_pid, f.child_pid, "the child wrote as its parent");
	cr_expect_eq(rd.damaged_records + rd.damaged_bytes, 0);
	live_cleanup(&e);
}

/* A fork() while the library's thread waits in connect() (the daemon's
 * backlog full: up to the 2 s send timeout) gave the child the socket
 * being connected, which nothing in the child knew to close. */
Test(client, a_fork_while_the_library_connects_leaves_the_child_no_socket)
{
	char out[4096];
	int n = -1;
	const char *at;

	for (int i = 0; i < 3; i++) {
		run_ok(TYPES_PATH " fork-connecting", out, sizeof(out));
		at = strstr(out, "child sockets=");
		cr_assert(at, "%s", out);
		n = atoi(at + strlen("child sockets="));
		cr_expect_eq(n, 0, "run %d: the child holds %d of the library's sockets", i, n);
	}
}

struct reentry {
	uint64_t main_next, sig_next, main, sig, bad;
};

static int on_reentry(void *ctx, const struct ringlog_dec_event *ev)
{
	struct reentry *r = ctx;
	bool is_main = !strcmp(ev->desc->name, "Main");
	uint64_t seq = ev->values[0].u;

	if (is_main) {
		/* Drops are counted, so gaps may occur; never a repeat, never
		 * a field overwritten by the handler's record. */
		if (seq < r->main_next || ev->values[1].u != seq * 3 ||
		    ev->values[2].len != 15 || memcmp(ev->values[2].data, "from the thread", 15))
			r->bad++;
		r->main_next = seq + 1;
		r->main++;
	} else if (!strcmp(ev->desc->name, "Sig")) {
		if (seq < r->sig_next || ev->values[1].len != 14 ||
		    memcmp(ev->values[1].data, "from a handler", 14))
			r->bad++;
		r->sig_next = seq + 1;
		r->sig++;
	}
	return 0;
}

Test(client, a_signal_handler_emitting_mid_record_is_dropped_and_counted_never_interleaved)
{
	struct live e;
	struct reentry r = { 0 };
	struct live_read rd = { .ctx = &r, .on_event = on_reentry };
	unsigned long long main_n = 0, sig_n = 0, full = 0, other = 0;
	pid_t d;
	char out[4096];

	live_init(&e);
	d = live_daemon(&e, NULL);
	run_ok(TYPES_PATH " signal", out, sizeof(out));
	live_daemon_stop(d);
	cr_assert_eq(sscanf(out, "main=%llu sig=%llu dropped_full=%llu dropped_other=%llu",
			    &main_n, &sig_n, &full, &other), 4, "%s", out);
	live_read_store(e.store, &rd);
	cr_log_info("signal reentry: %llu main, %llu from the handler, %llu dropped as "
		    "reentrant, %llu dropped on a full ring", main_n, sig_n, other, full);
	cr_expect_eq(r.bad, 0, "%llu events repeated or with foreign bytes",
		     (unsigned long long)r.bad);
	cr_expect_eq(rd.damaged_records + rd.damaged_bytes, 0);
	cr_expect_eq(r.main + r.sig + full + other, main_n + sig_n,
		     "stored %llu + %llu, dropped %llu + %llu, emitted %llu + %llu",
		     (unsigned long long)r.main, (unsigned long long)r.sig, full, other, main_n, sig_n);
	cr_expect_gt(sig_n, 100, "the timer hardly fired (%llu)", sig_n);
	live_cleanup(&e);
}

Test(client, the_header_compiles_and_works_as_cxx17)
{
	struct live e;
	pid_t d;
	char out[256];

	if (!CXX17_PATH[0])
		cr_skip_test("no C++ compiler was found at configure time (apt-get install g++)");
	live_init(&e);
	d = live_daemon(&e, NULL);
	run_ok(CXX17_PATH, out, sizeof(out));
	live_daemon_stop(d);

	struct live_read rd = { 0 };

	live_read_store(e.store, &rd);
	/* Hello and Waited; the level-5 one is off by default */
	cr_expect_eq(rd.events, 2);
	live_cleanup(&e);
}
