/* tests/test-store.c - the store keeps its promise when the directory under
 * it is misused: a second daemon pointed at it, the directory deleted
 * while the daemon writes, a filesystem whose min_free leaves less than a
 * segment, a budget shrunk by SIGHUP. Every event is stored or counted
 * lost with a reason. Real daemon, real programs. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <dirent.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"
#include "live.h"

TestSuite(store, .fini = th_check_leaks, .timeout = 300);

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

static pid_t emit(int threads, long events, const char *ring_size, const char *pause_us)
{
	char t[16], n[32], env[64];
	const char *argv[] = { EMITTER_PATH, t, n, "--wait-daemon", "20", "--pause-us", pause_us, NULL };
	const char *envv[] = { env, NULL };

	snprintf(t, sizeof(t), "%d", threads);
	snprintf(n, sizeof(n), "%ld", events);
	snprintf(env, sizeof(env), "RINGLOG_RING_SIZE=%s", ring_size);
	return live_spawn(argv, envv, "/dev/null");
}

static json_t *status_json(void)
{
	return live_status_json();
}

static uint64_t status_int(json_t *j, const char *obj, const char *key)
{
	json_t *o = obj ? json_object_get(j, obj) : j;

	return (uint64_t)json_integer_value(json_object_get(o, key));
}

/* Name, size and modification time of every file in dir, one per line. */
static void listing(const char *dir, char *out, size_t cap)
{
	struct dirent **names;
	int n = scandir(dir, &names, NULL, alphasort);
	size_t len = 0;

	out[0] = 0;
	for (int i = 0; i < n; i++) {
		char path[600];
		struct stat st;

		snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
		if (names[i]->d_name[0] != '.' && stat(path, &st) == 0 && len < cap)
			len += (size_t)snprintf(out + len, cap - len, "%s %lld %lld.%09ld\n",
						names[i]->d_name, (long long)st.st_size,
						(long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
		free(names[i]);
	}
	free(names);
}

/* ------------------------------------------------------------------------
 * One daemon per directory
 */

Test(store, a_second_daemon_on_the_same_directory_exits_and_changes_nothing)
{
	enum { EVENTS = 60000 };
	struct live e;
	struct live_read rd = { 0 };
	char cmd[1200], out[4096], before[8192], after[8192], pidstr[32];
	pid_t d, prog;
	int rc;

	live_init(&e);
	d = live_daemon(&e, NULL);
	/* A program that goes on writing while the second daemon tries. */
	prog = emit(1, EVENTS, "1M", "200");
	sleep_ms(500);
	/* Seal nothing in between: stop the first daemon's clock while the
	 * directory is compared, so that only the second one could change it. */
	kill(d, SIGSTOP);
	listing(e.store, before, sizeof(before));
	/* timeout: before the lock, the second one ran and had to be stopped. */
	snprintf(cmd, sizeof(cmd), "timeout 5 " RINGLOGD_PATH " --storage %s --socket %s/other.sock 2>&1",
		 e.store, e.dir);
	rc = live_run(cmd, out, sizeof(out));
	listing(e.store, after, sizeof(after));
	kill(d, SIGCONT);
	cr_log_info("second daemon: exit %d: %s", rc, out);
	cr_expect(rc != 0 && rc != -1, "a second ringlogd on %s started (exit %d)", e.store, rc);
	cr_expect(strstr(out, e.store), "its message does not name the directory: %s", out);
	snprintf(pidstr, sizeof(pidstr), "PID %d", (int)d);
	cr_expect(strstr(out, pidstr), "its message does not name the holder (%s): %s", pidstr, out);
	cr_expect_str_eq(after, before, "the second daemon changed the directory");
	cr_expect(access(e.dir, F_OK) == 0);

	live_wait_ok(prog, "emitter");
	live_daemon_stop(d);
	live_read_store(e.store, &rd);
	cr_expect_eq(rd.events, EVENTS, "stored %llu of %d events", (unsigned long long)rd.events,
		     EVENTS);
	cr_expect_eq(rd.damaged_bytes + rd.damaged_records + rd.recovered, 0,
		     "a segment was damaged or sealed as crashed");
	live_cleanup(&e);
}

/* ------------------------------------------------------------------------
 * The directory deleted under a running daemon
 */

Test(store, a_deleted_directory_is_noticed_counted_recreated_and_stored_into_again)
{
	enum { EVENTS = 120000 };
	struct live e;
	struct live_read rd = { 0 };
	char cmd[700], log[1 << 16];
	json_t *st;
	uint64_t deleted, total_lost;
	pid_t d, prog;

	live_init(&e);
	d = live_daemon(&e, NULL);
	/* ~12 s of events: 100 every 10 ms. */
	prog = emit(1, EVENTS, "4M", "10000");
	sleep_ms(4000);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", e.store);
	cr_assert_eq(live_run(cmd, NULL, 0), 0);
	sleep_ms(5000);
	/* The user recreates it too, as the reporter did. */
	mkdir(e.store, 0750);
	live_wait_ok(prog, "emitter");
	st = status_json();
	cr_assert(st, "ringlog status failed");
	deleted = status_int(st, "lost", "deleted");
	total_lost = status_int(st, "lost", "total");
	json_decref(st);
	live_daemon_stop(d);
	live_log(&e, log, sizeof(log));
	live_read_store(e.store, &rd);
	cr_log_info("stored and readable %llu, counted lost as deleted %llu, of %d",
		    (unsigned long long)rd.events, (unsigned long long)deleted, EVENTS);
	cr_expect(strstr(log, "was deleted or replaced"), "the log says nothing: %s", log);
	cr_expect_gt(deleted, 0, "nothing counted lost");
	cr_expect_eq(total_lost, deleted, "other losses: %llu", (unsigned long long)total_lost);
	cr_expect_gt(rd.events, EVENTS / 3, "only %llu events readable after the directory came back",
		     (unsigned long long)rd.events);
	cr_expect_eq(rd.events + deleted, EVENTS, "stored %llu + counted %llu != emitted %d",
		     (unsigned long long)rd.events, (unsigned long long)deleted, EVENTS);
	cr_expect_eq(rd.damaged_bytes + rd.damaged_records, 0);
	live_cleanup(&e);
}

/* ------------------------------------------------------------------------
 * min_free and segment sizes
 */

/* A newest event of the emitter's thread 0 as stored (live_read callback). */
struct newest {
	uint64_t events, max_seq;
};

static int on_newest(void *ctx, const struct ringlog_dec_event *ev)
{
	struct newest *n = ctx;
	uint64_t seq = ev->values[1].u; /* Tick{thread, seq, text} */

	n->events++;
	if (seq > n->max_seq)
		n->max_seq = seq;
	return 0;
}

/* Mount a tmpfs of size (e.g. "20m") at e->dir/small and put the store on
 * it; false (the test skips, saying why) without root or mount. */
static bool small_fs(struct live *e, const char *size, char *mnt, size_t cap)
{
	char cmd[700], out[1024];

	if (geteuid() != 0)
		return false;
	snprintf(mnt, cap, "%s/small", e->dir);
	mkdir(mnt, 0755);
	snprintf(cmd, sizeof(cmd), "mount -t tmpfs -o size=%s ringlog-test '%s' 2>&1", size, mnt);
	if (live_run(cmd, out, sizeof(out)) != 0) {
		cr_log_warn("mount: %s", out);
		return false;
	}
	if (snprintf(e->store, sizeof(e->store), "%.280s/store", mnt) >= (int)sizeof(e->store))
		return false;
	return true;
}

static void small_fs_done(const char *mnt)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "umount '%s'", mnt);
	live_run(cmd, NULL, 0);
}

/* A daemon storing on a 20 MiB tmpfs (mnt: its mount point) with min_free
 * 12M, which leaves 8 MiB to the store, less than one max_segment_size
 * (16M); chunks sealed every 100 ms. Skips without root or mount. */
static pid_t small_fs_daemon(struct live *e, char *mnt, size_t cap)
{
	char cfg[400];

	live_init(e);
	if (!small_fs(e, "20m", mnt, cap)) {
		live_cleanup(e);
		cr_skip_test("needs root and a tmpfs mount for a 20 MiB filesystem");
	}
	snprintf(cfg, sizeof(cfg), "%s/floor.json", e->dir);
	live_write_file(cfg, "{ \"min_free\": \"12M\", \"max_segment_size\": \"16M\", "
			"\"flush_interval\": \"200ms\" }\n");
	return live_daemon(e, "--config", cfg, NULL);
}

Test(store, min_free_with_one_large_segment_never_stops_storing)
{
	enum { EVENTS = 400000 }; /* ~19 MB of packed events: the store turns over */
	struct live e;
	struct newest nw = { 0 };
	struct live_read rd = { .ctx = &nw, .on_event = on_newest };
	char mnt[300];
	struct statvfs v;
	uint64_t fs_free, chunk;
	json_t *st;
	pid_t d = small_fs_daemon(&e, mnt, sizeof(mnt));

	live_wait_ok(emit(1, EVENTS, "16M", "300"), "emitter");
	sleep_ms(1000);
	st = status_json();
	cr_assert(st, "ringlog status failed");
	cr_log_info("status: %llu stored, lost %llu (disk %llu), %llu segments",
		    (unsigned long long)status_int(st, NULL, "stored_events"),
		    (unsigned long long)status_int(st, "lost", "total"),
		    (unsigned long long)status_int(st, "lost", "disk"),
		    (unsigned long long)status_int(st, NULL, "segment_count"));
	cr_expect_eq(status_int(st, NULL, "stored_events"), EVENTS,
		     "storing stopped: %llu of %d stored, %llu counted lost",
		     (unsigned long long)status_int(st, NULL, "stored_events"), EVENTS,
		     (unsigned long long)status_int(st, "lost", "total"));
	chunk = status_int(st, NULL, "chunk_bytes");
	json_decref(st);
	cr_assert_eq(statvfs(mnt, &v), 0);
	fs_free = (uint64_t)v.f_bavail * v.f_frsize;
	live_daemon_stop(d);
	live_read_store(e.store, &rd);
	cr_log_info("%llu events retained, the newest %llu; %llu bytes free", (unsigned long long)nw.events,
		    (unsigned long long)nw.max_seq, (unsigned long long)fs_free);
	/* Retention took the oldest: the newest events are there. */
	cr_expect_eq(nw.max_seq, EVENTS - 1, "the newest event stored is %llu",
		     (unsigned long long)nw.max_seq);
	/* Segments of at most a quarter of the 8 MiB, and never less than two
	 * chunks (store_seg_limit()): 2 MiB + 4 KiB with the 1 MiB chunks of
	 * old, 4 MiB + 4 KiB with today's 2 MiB (max_segment_size / 8): two or
	 * more are left after the store turned over */
	cr_expect_geq(rd.segments, 2, "it should have rotated (%u segments)", rd.segments);
	/* The floor held: never more than one chunk into min_free. */
	cr_expect_geq(fs_free + chunk, 12u << 20, "only %llu bytes left free (chunks of %llu)",
		      (unsigned long long)fs_free, (unsigned long long)chunk);
	small_fs_done(mnt);
	live_cleanup(&e);
}

/* ------------------------------------------------------------------------
 * SIGHUP resizes
 */

static uint64_t store_bytes(const char *store)
{
	struct dirent **names;
	int n = scandir(store, &names, NULL, alphasort);
	uint64_t sum = 0;

	for (int i = 0; i < n; i++) {
		char path[600];
		struct stat st;

		snprintf(path, sizeof(path), "%s/%s", store, names[i]->d_name);
		if (strstr(names[i]->d_name, ".rlseg") && stat(path, &st) == 0)
			sum += (uint64_t)st.st_size;
		free(names[i]);
	}
	free(names);
	return sum;
}

Test(store, sighup_to_a_smaller_budget_settles_under_it_and_status_says_so)
{
	enum { BUDGET = 16 << 20, CHUNK = 1 << 20 };
	struct live e;
	struct newest nw = { 0 };
	struct live_read rd = { .ctx = &nw, .on_event = on_newest };
	char cfg[400];
	uint64_t before, peak = 0, least = UINT64_MAX, after;
	json_t *st;
	pid_t d, prog;

	live_init(&e);
	snprintf(cfg, sizeof(cfg), "%s/budget.json", e.dir);
	live_write_file(cfg, "{ \"max_disk\": \"1G\", \"max_segment_size\": \"16M\", \"min_free\": \"0\", \"flush_interval\": \"200ms\" }\n");
	d = live_daemon(&e, "--config", cfg, NULL);
	/* Under load all along: ~1.5 M events/s for ~4 s. */
	prog = emit(1, 6000000, "64M", "50");
	for (int i = 0; i < 100 && store_bytes(e.store) < 3 * (uint64_t)BUDGET; i++)
		sleep_ms(50);
	before = store_bytes(e.store);
	live_write_file(cfg, "{ \"max_disk\": \"16M\", \"max_segment_size\": \"16M\", \"min_free\": \"0\", \"flush_interval\": \"200ms\" }\n");
	kill(d, SIGHUP);
	/* Settled within a second or two, and held while the load goes on. */
	sleep_ms(1500);
	while (kill(prog, 0) == 0 && waitpid(prog, NULL, WNOHANG) == 0) {
		uint64_t b = store_bytes(e.store);

		if (b > peak)
			peak = b;
		if (b < least)
			least = b;
		sleep_ms(20);
	}
	after = store_bytes(e.store);
	st = status_json();
	cr_assert(st, "ringlog status failed");
	cr_log_info("store: %llu bytes before the reload, %llu..%llu after it settled, %llu at the end; "
		    "status: max_disk %llu, used %llu", (unsigned long long)before,
		    (unsigned long long)least, (unsigned long long)peak, (unsigned long long)after,
		    (unsigned long long)status_int(st, NULL, "max_disk"),
		    (unsigned long long)status_int(st, NULL, "used_bytes"));
	cr_expect_gt(before, (uint64_t)BUDGET, "the store never grew past the new budget (%llu)",
		     (unsigned long long)before);
	cr_expect_leq(peak, (uint64_t)BUDGET + CHUNK, "after the reload the store held %llu bytes",
		      (unsigned long long)peak);
	cr_expect_leq(after, (uint64_t)BUDGET + CHUNK);
	/* Segments sized for the new budget: when the oldest goes, most of
	 * the history stays (one segment the size of the budget would take
	 * it all at once). */
	cr_expect_geq(least, (uint64_t)BUDGET / 2, "the store fell to %llu bytes",
		      (unsigned long long)least);
	cr_expect_leq(status_int(st, NULL, "max_segment_bytes"), (uint64_t)BUDGET / 4);
	cr_expect_eq(status_int(st, NULL, "max_disk"), (uint64_t)BUDGET);
	cr_expect_leq(status_int(st, NULL, "used_bytes"), (uint64_t)BUDGET + CHUNK);
	json_decref(st);
	live_daemon_stop(d);
	{
		char log[1 << 14];

		live_log(&e, log, sizeof(log));
		cr_log_info("ringlogd's log: %s", log);
	}
	live_read_store(e.store, &rd);
	cr_expect_eq(nw.max_seq, 6000000 - 1, "the newest event is missing");
	cr_expect_eq(rd.damaged_bytes + rd.damaged_records, 0);
	live_cleanup(&e);
}

/* Only the segments deleted, not the directory: counted, said as it is,
 * and the daemon keeps its lock (it once reported itself as the holder). */
Test(store, deleted_segments_alone_are_counted_and_named_as_such)
{
	enum { EVENTS = 60000 };
	struct live e;
	struct live_read rd = { 0 };
	char cmd[700], log[1 << 16];
	json_t *st;
	uint64_t deleted;
	pid_t d, prog;

	live_init(&e);
	d = live_daemon(&e, NULL);
	prog = emit(1, EVENTS, "4M", "10000"); /* ~6 s */
	sleep_ms(3000);
	snprintf(cmd, sizeof(cmd), "rm -f %s/*.rlseg", e.store);
	cr_assert_eq(live_run(cmd, NULL, 0), 0);
	live_wait_ok(prog, "emitter");
	st = status_json();
	cr_assert(st, "ringlog status failed");
	deleted = status_int(st, "lost", "deleted");
	json_decref(st);
	live_daemon_stop(d);
	live_log(&e, log, sizeof(log));
	live_read_store(e.store, &rd);
	cr_log_info("readable %llu + deleted %llu of %d", (unsigned long long)rd.events,
		    (unsigned long long)deleted, EVENTS);
	cr_expect(strstr(log, "were deleted under ringlogd"), "the log: %s", log);
	cr_expect(!strstr(log, "was deleted or replaced"), "the directory was not deleted: %s", log);
	cr_expect(!strstr(log, "in use by another"), "the daemon took itself for another: %s", log);
	cr_expect_eq(rd.events + deleted, EVENTS);
	cr_expect_gt(deleted, 0);
	live_cleanup(&e);
}

/* The floor breached by someone else's file, with nothing of ours left to
 * delete: what cannot be stored is counted as lost to the disk (not left
 * in the rings to overflow there), and storing resumes once space returns. */
Test(store, below_min_free_with_nothing_to_delete_counts_disk_loss_and_recovers)
{
	struct live e;
	struct newest nw = { 0 };
	struct live_read rd = { .ctx = &nw, .on_event = on_newest };
	char mnt[300], cmd[800];
	json_t *st;
	uint64_t disk, ring;
	pid_t d = small_fs_daemon(&e, mnt, sizeof(mnt));

	/* Some history first, so that retention has segments of ours to
	 * delete, and then none. */
	live_wait_ok(emit(1, 20000, "16M", "100"), "emitter");
	sleep_ms(500);
	/* Another program takes the filesystem down to 8-9 MiB free. */
	snprintf(cmd, sizeof(cmd), "dd if=/dev/zero of='%s/filler' bs=1M count=11 2>/dev/null", mnt);
	cr_assert_eq(live_run(cmd, NULL, 0), 0);
	live_wait_ok(emit(1, 50000, "16M", "100"), "emitter");
	sleep_ms(800);
	st = status_json();
	cr_assert(st, "ringlog status failed");
	disk = status_int(st, "lost", "disk");
	ring = status_int(st, "lost", "ring");
	json_decref(st);
	cr_log_info("below the floor: %llu counted lost to the disk, %llu to ring overflow",
		    (unsigned long long)disk, (unsigned long long)ring);
	cr_expect_eq(ring, 0, "the rings overflowed (%llu): the daemon stopped draining",
		     (unsigned long long)ring);
	cr_expect_eq(disk, 50000, "%llu of 50000 counted lost to the disk", (unsigned long long)disk);
	snprintf(cmd, sizeof(cmd), "rm -f '%s/filler'", mnt);
	live_run(cmd, NULL, 0);
	live_wait_ok(emit(1, 1000, "1M", "100"), "emitter");
	live_daemon_stop(d);
	live_read_store(e.store, &rd);
	cr_expect_geq(nw.events, 1000, "after the space came back %llu events stored",
		      (unsigned long long)nw.events);
	small_fs_done(mnt);
	live_cleanup(&e);
}
