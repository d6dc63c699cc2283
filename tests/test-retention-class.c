/* tests/test-retention-class.c - retention classes (issue 28.4) with the
 * real daemon and real programs (tests/emitter.c): a noisy program at about
 * 100 times the rate of a quiet one under a 4 MiB budget. Warnings and
 * worse are a class of their own with a fifth of the budget; the quiet
 * program's warnings of the whole run are all in `ringlog read --json` at
 * the end, the store never passes max_disk by more than one chunk (sampled
 * through the run), and `ringlog status` says which class each eviction
 * took and why; tail's backlog and export read both classes. A SIGHUP
 * adds a class to a running daemon; a restart without it keeps its
 * segments readable, as the default class's. Rates are printed, never
 * asserted.
 */
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

TestSuite(retention_class, .fini = th_check_leaks, .timeout = 300);

#define MAX_DISK (4u << 20)

static const char class_cfg[] =
	"{ \"max_disk\": \"4M\", \"max_segment_size\": \"256K\", \"flush_interval\": \"100ms\",\n"
	"  \"retention\": [ { \"name\": \"important\", \"levels\": \"warning\", "
	"\"min_share\": \"20%\" } ] }\n";

/* The bytes of the segment files, as the budget counts them. */
static uint64_t store_bytes(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	uint64_t n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		char path[600];
		struct stat sb;
		size_t len = strlen(e->d_name);

		if (len != 22 || strcmp(e->d_name + 16, ".rlseg"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (stat(path, &sb) == 0) /* gone meanwhile: deleted by the budget */
			n += (uint64_t)sb.st_size;
	}
	closedir(d);
	return n;
}

/* "level L emitted N" and "thread 0 ... emitted N" from the emitter. */
static void read_counts(const char *path, uint64_t *all, uint64_t *warnings)
{
	FILE *f = fopen(path, "r");
	char line[512];

	*all = *warnings = 0;
	cr_assert(f, "no emitter output at %s", path);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long a;
		unsigned l;

		if (sscanf(line, "level %u emitted %llu", &l, &a) == 2 && l <= 3)
			*warnings += a;
		else if (sscanf(line, "thread %*u tid %*d emitted %llu", &a) == 1)
			*all += a;
	}
	fclose(f);
}

static bool exited(pid_t pid, int *status)
{
	return waitpid(pid, status, WNOHANG) == pid;
}

static uint64_t count_lines(const char *text, const char *needle)
{
	uint64_t n = 0;

	for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

Test(retention_class, a_noisy_program_cannot_erase_a_quiet_ones_warnings)
{
	struct live e;
	char cfg[400], qout[400], nout[400], cmd[1200];
	/* The quiet one: 100 events then 25 ms asleep, every 10th a warning;
	 * the noisy one: 100 events then 100 us, info only. */
	const char *quiet_argv[] = { EMITTER_PATH, "1", "0", "--seconds", "4", "--pause-us", "25000",
				     "--warn-every", "10", NULL };
	const char *noisy_argv[] = { EMITTER_PATH, "1", "0", "--seconds", "4", "--pause-us", "100",
				     NULL };
	uint64_t peak = 0, samples = 0, q_all, q_warn, n_all, n_warn, read_warn, chunk;
	int qst = 0, nst = 0;
	bool q_done = false, n_done = false;
	json_t *st, *ret, *classes, *evs, *v;
	size_t i, cap = 64u << 20;
	char *text = malloc(cap);
	pid_t d, q, n;

	cr_assert(text);
	live_init(&e);
	snprintf(cfg, sizeof(cfg), "%s/ringlogd.json", e.dir);
	live_write_file(cfg, class_cfg);
	d = live_daemon(&e, "--config", cfg, NULL);
	snprintf(qout, sizeof(qout), "%s/quiet.out", e.dir);
	snprintf(nout, sizeof(nout), "%s/noisy.out", e.dir);
	q = live_spawn(quiet_argv, NULL, qout);
	n = live_spawn(noisy_argv, NULL, nout);
	/* The store's size all through the run, every 5 ms. */
	while (!q_done || !n_done) {
		uint64_t b = store_bytes(e.store);

		if (b > peak)
			peak = b;
		samples++;
		q_done = q_done || exited(q, &qst);
		n_done = n_done || exited(n, &nst);
		usleep(5000);
	}
	cr_assert(WIFEXITED(qst) && WEXITSTATUS(qst) == 0, "the quiet emitter failed");
	cr_assert(WIFEXITED(nst) && WEXITSTATUS(nst) == 0, "the noisy emitter failed");
	usleep(300000); /* three flush intervals: the last chunks are on disk */
	st = live_status_json();
	cr_assert(st, "no status");
	chunk = (uint64_t)json_integer_value(json_object_get(st, "chunk_bytes"));
	snprintf(cmd, sizeof(cmd), RINGLOG_CLI_PATH " status > %s/status.txt", e.dir);
	cr_expect_eq(live_run(cmd, NULL, 0), 0);
	/* tail's backlog reads both classes' segments too: the newest 50 */
	snprintf(cmd, sizeof(cmd), "timeout 20 " RINGLOG_CLI_PATH " tail -n 50 --pid %d -p warning "
		 "--json --until +1s", (int)q);
	live_run(cmd, text, cap);
	cr_expect_eq(count_lines(text, "\"event\":\"Alert\""), 50, "tail's backlog:\n%.2000s", text);
	live_daemon_stop(d);

	read_counts(qout, &q_all, &q_warn);
	read_counts(nout, &n_all, &n_warn);
	printf("retention classes: quiet emitted %llu (%llu warnings), noisy %llu (%.0fx the "
	       "quiet); store peak %llu bytes of max_disk %u + chunk %llu (%llu samples)\n",
	       (unsigned long long)q_all, (unsigned long long)q_warn, (unsigned long long)n_all,
	       q_all ? (double)n_all / (double)q_all : 0.0, (unsigned long long)peak, MAX_DISK,
	       (unsigned long long)chunk, (unsigned long long)samples);
	cr_assert_gt(q_warn, 0, "the quiet program emitted no warning: no test");
	cr_assert_eq(n_warn, 0);

	/* Every warning of the quiet program, from the whole run. */
	snprintf(cmd, sizeof(cmd), RINGLOG_CLI_PATH " read -D %s --pid %d -p warning --json -n all "
		 "--no-pager", e.store, (int)q);
	cr_assert_eq(live_run(cmd, text, cap), 0, "ringlog read failed");
	read_warn = count_lines(text, "\"event\":\"Alert\"");
	cr_expect_eq(read_warn, q_warn, "the quiet program's warnings: %llu emitted, %llu in "
		     "ringlog read", (unsigned long long)q_warn, (unsigned long long)read_warn);
	/* Its first warning in particular: the oldest history survives. */
	cr_expect(strstr(text, "\"seq\":0}") || strstr(text, "\"seq\":0,"),
		  "the quiet program's first warning (seq 0) is gone");

	/* export streams the store as read does, with its own duplicate
	 * check: the quiet program's events of both classes, the same count
	 * as read (a check blind to the class drops the info events read
	 * after the class's segment) */
	snprintf(cmd, sizeof(cmd), RINGLOG_CLI_PATH " export -F json -O - -D %s --pid %d", e.store,
		 (int)q);
	cr_assert_eq(live_run(cmd, text, cap), 0, "ringlog export failed");
	{
		uint64_t ex_all = count_lines(text, "\"type\":\"event\""), rd_all;

		cr_expect_eq(count_lines(text, "\"event\":\"Alert\""), q_warn,
			     "ringlog export lost warnings");
		snprintf(cmd, sizeof(cmd), RINGLOG_CLI_PATH " read -D %s --pid %d --json -n all "
			 "--no-pager", e.store, (int)q);
		cr_assert_eq(live_run(cmd, text, cap), 0, "ringlog read failed");
		rd_all = count_lines(text, "\"type\":\"event\"");
		printf("retention classes: the quiet program's events kept: %llu of %llu (read), "
		       "%llu (export)\n", (unsigned long long)rd_all, (unsigned long long)q_all,
		       (unsigned long long)ex_all);
		cr_expect_gt(rd_all, q_warn, "none of the quiet program's info events is kept");
		cr_expect_eq(ex_all, rd_all, "export and read disagree");
	}

	/* The budget: never more than one chunk over. */
	cr_expect_leq(peak, MAX_DISK + chunk, "the store held %llu bytes, max_disk %u + a chunk %llu",
		      (unsigned long long)peak, MAX_DISK, (unsigned long long)chunk);

	/* status: the noisy data went, the class's did not, and why. */
	ret = json_object_get(st, "retention");
	classes = json_object_get(ret, "classes");
	evs = json_object_get(ret, "evictions");
	cr_assert_eq(json_array_size(classes), 2, "default and important");
	json_array_foreach(classes, i, v) {
		const char *name = json_string_value(json_object_get(v, "name"));
		json_int_t evicted = json_integer_value(json_object_get(v, "evicted_segments"));

		if (!strcmp(name, "default")) {
			cr_expect_gt(evicted, 0, "the budget never evicted the noisy data: no test");
			cr_expect(strstr(json_string_value(json_object_get(v, "last_eviction")),
					 "class default was the most over its min_share"),
				  "default's last eviction: %s",
				  json_string_value(json_object_get(v, "last_eviction")));
		} else {
			cr_expect_str_eq(name, "important");
			cr_expect_eq(evicted, 0, "the class within its share lost segments");
			cr_expect_gt(json_integer_value(json_object_get(v, "bytes")), 0);
			cr_expect_gt(json_integer_value(json_object_get(v, "horizon_ns")), 0);
		}
	}
	cr_expect_gt(json_array_size(evs), 0, "status lists no eviction");
	json_array_foreach(evs, i, v)
		cr_expect_str_eq(json_string_value(json_object_get(v, "class")), "default");
	json_decref(st);
	/* and the text says it */
	snprintf(cmd, sizeof(cmd), "%s/status.txt", e.dir);
	{
		FILE *f = fopen(cmd, "r");
		size_t len = f ? fread(text, 1, cap - 1, f) : 0;

		if (f)
			fclose(f);
		text[len] = 0;
	}
	cr_expect(strstr(text, "important"), "status text has no line for the class:\n%s", text);
	cr_expect(strstr(text, "segments evicted"), "status text explains no eviction:\n%s", text);
	free(text);
	live_cleanup(&e);
}

static json_t *class_named(json_t *st, const char *name)
{
	json_t *classes = json_object_get(json_object_get(st, "retention"), "classes"), *v;
	size_t i;

	json_array_foreach(classes, i, v)
		if (!strcmp(json_string_value(json_object_get(v, "name")), name))
			return v;
	return NULL;
}

/* SIGHUP: classes added to a running daemon take the events from then on;
 * removed (a restart without them), their segments stay readable and count
 * as the default class's. */
Test(retention_class, classes_set_by_sighup_take_the_next_events_and_stay_readable)
{
	struct live e;
	char cfg[400], cmd[1200], *text = malloc(1u << 20);
	const char *argv[] = { EMITTER_PATH, "1", "2000", "--warn-every", "10", NULL };
	json_t *st = NULL;
	pid_t d;

	cr_assert(text);
	live_init(&e);
	snprintf(cfg, sizeof(cfg), "%s/ringlogd.json", e.dir);
	live_write_file(cfg, "{ \"flush_interval\": \"100ms\" }\n");
	d = live_daemon(&e, "--config", cfg, NULL);
	live_wait_ok(live_spawn(argv, NULL, "/dev/null"), "emitter");
	live_write_file(cfg, class_cfg);
	kill(d, SIGHUP);
	for (int i = 0; i < 100; i++) { /* the reload is asynchronous */
		json_decref(st);
		st = live_status_json();
		if (st && class_named(st, "important"))
			break;
		usleep(50000);
	}
	cr_assert(st && class_named(st, "important"), "SIGHUP did not add the class");
	json_decref(st);
	live_wait_ok(live_spawn(argv, NULL, "/dev/null"), "emitter");
	usleep(300000);
	st = live_status_json();
	cr_assert(st);
	cr_expect_gt(json_integer_value(json_object_get(class_named(st, "important"), "bytes")), 0,
		     "the class holds nothing after the reload");
	json_decref(st);
	live_daemon_stop(d);
	/* 200 warnings per run, the second run's in the class's segments */
	snprintf(cmd, sizeof(cmd), RINGLOG_CLI_PATH " read -D %s -p warning --json -n all --no-pager",
		 e.store);
	cr_assert_eq(live_run(cmd, text, 1u << 20), 0);
	cr_expect_eq(count_lines(text, "\"event\":\"Alert\""), 400);
	/* The class removed: readable all the same, counted as the default's */
	live_write_file(cfg, "{ \"flush_interval\": \"100ms\" }\n");
	d = live_daemon(&e, "--config", cfg, NULL);
	st = live_status_json();
	cr_assert(st);
	cr_expect_null(class_named(st, "important"));
	cr_expect_gt(json_integer_value(json_object_get(class_named(st, "default"), "bytes")), 0);
	json_decref(st);
	live_daemon_stop(d);
	cr_assert_eq(live_run(cmd, text, 1u << 20), 0);
	cr_expect_eq(count_lines(text, "\"event\":\"Alert\""), 400);
	free(text);
	live_cleanup(&e);
}
