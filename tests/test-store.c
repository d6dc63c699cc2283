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

/* `ringlog status --json` against the running daemon; NULL if it failed. */
static json_t *status_json(void)
{
	static char out[1 << 20];
	json_error_t err;

	if (live_run(RINGLOG_CLI_PATH " status --json 2>/dev/null", out, sizeof(out)) != 0)
		return NULL;
	return json_loads(out, 0, &err);
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
