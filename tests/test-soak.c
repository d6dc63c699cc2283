/* tests/test-soak.c - the memory soak: the real daemon under a steady load
 * for RINGLOG_SOAK_SECONDS (default 600), with programs coming and going,
 * status and tail clients, and rotation under a small budget the whole
 * time. The daemon's private memory (RssAnon) and its open descriptors must
 * not grow after the first minute of warm-up.
 *
 * Not a ctest test: scripts/test.sh runs it in the background beside the
 * sanitizer suite (it only needs time, not CPU), and waits for it at the
 * end. RINGLOG_SOAK_SECONDS=7200 build/tests/test-soak for the long variant.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"
#include "live.h"

TestSuite(soak, .timeout = 8 * 3600);

static long proc_kb(pid_t pid, const char *key)
{
	char path[64], line[256];
	size_t n = strlen(key);
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (!(f = fopen(path, "re")))
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, n) && line[n] == ':') {
			v = strtol(line + n + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* An emitter of 2 threads at about 20,000 events/s each (100 events, then
 * 5 ms), until SIGUSR1. */
static pid_t steady_emitter(void)
{
	const char *argv[] = { EMITTER_PATH, "2", "0", "--pause-us", "5000", NULL };

	return live_spawn(argv, NULL, "/dev/null");
}

Test(soak, daemon_memory_and_fds_stay_flat_under_a_steady_load)
{
	const char *env = getenv("RINGLOG_SOAK_SECONDS");
	double seconds = env ? atof(env) : 600, warm = seconds / 10, t0, next_sample = 0;
	struct live e;
	char cfg[400], tailout[400], st[1 << 16];
	pid_t d, em[2], tp = 0;
	long rss_warm = -1, rss_max = 0, rss_end;
	int fds_warm = -1, fds_max = 0, fds_end, churns = 0, tails = 0, statuses = 0;

	if (warm > 60)
		warm = 60;
	live_init(&e);
	snprintf(cfg, sizeof(cfg), "%s/soak.json", e.dir);
	/* A small budget: segments rotate and the oldest are deleted every
	 * few seconds, the whole time. */
	live_write_file(cfg, "{ \"max_disk\": \"64M\", \"max_segment_size\": \"8M\", \"min_free\": \"0\" }\n");
	snprintf(tailout, sizeof(tailout), "%s/tail.out", e.dir);
	d = live_daemon(&e, "--config", cfg, NULL);
	em[0] = steady_emitter();
	em[1] = steady_emitter();
	t0 = now_s();
	for (;;) {
		double t = now_s() - t0;

		if (t >= seconds)
			break;
		if (t >= next_sample) {
			long rss = proc_kb(d, "RssAnon");
			int fds = live_fd_count(d);

			cr_assert(rss > 0 && fds > 0, "ringlogd is gone");
			if (t >= warm && rss_warm < 0) {
				rss_warm = rss;
				fds_warm = fds;
			}
			if (rss_warm >= 0) {
				if (rss > rss_max)
					rss_max = rss;
				if (fds > fds_max)
					fds_max = fds;
			}
			fprintf(stderr, "soak: %5.0f s RssAnon %ld kB, VmRSS %ld kB, fds %d\n", t, rss,
				proc_kb(d, "VmRSS"), fds);
			next_sample += 30;
		}
		/* Every 20 s one program ends and another starts (new client,
		 * new rings, old ones drained and released). */
		if ((int)t / 20 > churns) {
			int k = churns % 2;

			kill(em[k], SIGUSR1);
			live_wait_ok(em[k], "emitter");
			em[k] = steady_emitter();
			churns++;
		}
		/* Every 10 s a status; every 15 s a tail starts or stops. */
		if ((int)t / 10 > statuses) {
			cr_assert_eq(live_run(RINGLOG_CLI_PATH " status --json 2>&1", st, sizeof(st)), 0,
				     "status failed: %s", st);
			statuses++;
		}
		if ((int)t / 15 > tails) {
			if (tp) {
				kill(tp, SIGINT);
				waitpid(tp, NULL, 0);
				tp = 0;
			} else {
				const char *argv[] = { RINGLOG_CLI_PATH, "tail", "-n", "10", "--provider",
						       "Test.*", NULL };

				tp = live_spawn(argv, NULL, tailout);
			}
			tails++;
		}
		usleep(100000);
	}
	if (tp) {
		kill(tp, SIGINT);
		waitpid(tp, NULL, 0);
	}
	for (int k = 0; k < 2; k++) {
		kill(em[k], SIGUSR1);
		live_wait_ok(em[k], "emitter");
	}
	usleep(1500000); /* the last rings drained and released */
	rss_end = proc_kb(d, "RssAnon");
	fds_end = live_fd_count(d);
	cr_assert(live_run(RINGLOG_CLI_PATH " status --json 2>&1", st, sizeof(st)) == 0);
	{
		const char *p = strstr(st, "\"stored_events\":");
		unsigned long long stored = p ? strtoull(p + 16, NULL, 10) : 0;

		fprintf(stderr, "soak: %.0f s, %llu events stored, %d program restarts, %d tails, %d "
			"status calls; RssAnon %ld kB after warm-up, at most %ld, %ld at the end; "
			"fds %d after warm-up, at most %d, %d at the end\n",
			seconds, stored, churns, (tails + 1) / 2, statuses, rss_warm, rss_max, rss_end,
			fds_warm, fds_max, fds_end);
	}
	live_daemon_stop(d);
	/* Flat: the daemon's pools are sized at start; what may still move is
	 * malloc's own arenas by a few hundred kB. 2 MiB is far below what a
	 * leak per event, per program or per tail would add over the run. */
	cr_expect_leq(rss_end, rss_warm + 2048, "RssAnon grew from %ld to %ld kB", rss_warm, rss_end);
	/* The peak may add what the design lets one slow reader hold: a tail
	 * that does not keep up queues up to 8 MiB in the daemon before its
	 * events are dropped and counted (TAIL_QUEUE_LIMIT, daemon/sink/
	 * tail.c); one tail runs at a time here. Under ASan beside the
	 * sanitizer suite, CI saw 17,572 kB once against 11,996 after
	 * warm-up, and 9,220 at the end. */
	cr_expect_leq(rss_max, rss_warm + 4096 + 8192, "RssAnon peaked at %ld kB (%ld after warm-up)",
		      rss_max, rss_warm);
	cr_expect_leq(fds_end, fds_warm, "fds grew from %d to %d", fds_warm, fds_end);
	live_cleanup(&e);
}
