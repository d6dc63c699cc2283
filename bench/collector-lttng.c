/* bench/collector-lttng.c - LTTng-UST 2.13 as a benchmark collector, set up
 * the way its documentation recommends for user space: our own
 * lttng-sessiond --no-kernel (stopped at the end), per-UID buffers, a
 * channel in discard mode whose buffers match ringlog's rings (64 MiB per
 * CPU), one session per run writing CTF to a temporary directory. What was
 * stored is counted by reading the trace back with babeltrace2.
 */
#define _GNU_SOURCE
#include "collector.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char home[256], trace[320];
static int own_sessiond[16], n_own;
static unsigned run_no;

/* pids of the processes called comm (up to max). */
static int pids_named(const char *comm, int *out, int max)
{
	DIR *d = opendir("/proc");
	int n = 0;

	for (struct dirent *e; d && (e = readdir(d)) && n < max;) {
		char path[300], name[64] = "";
		FILE *f;

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/comm", e->d_name);
		if (!(f = fopen(path, "r")))
			continue;
		if (fgets(name, sizeof(name), f))
			name[strcspn(name, "\n")] = 0;
		fclose(f);
		/* comm is cut at 15 bytes: "lttng-consumerd" fits */
		if (!strncmp(name, comm, 15))
			out[n++] = atoi(e->d_name);
	}
	if (d)
		closedir(d);
	return n;
}

static int setup(struct collector *c, char *why, size_t len)
{
	int before[16], nb, after[16], na;

	if (access(c->job, X_OK)) {
		snprintf(why, len, "job-lttng is not built (apt-get install liblttng-ust-dev, then rebuild)");
		return -1;
	}
	if (system("command -v lttng >/dev/null && command -v lttng-sessiond >/dev/null && "
		   "command -v babeltrace2 >/dev/null")) {
		snprintf(why, len, "lttng-tools or babeltrace2 is missing "
			 "(apt-get install lttng-tools babeltrace2)");
		return -1;
	}
	snprintf(home, sizeof(home), "/tmp/ringlog-bench-lttng-XXXXXX");
	if (!mkdtemp(home)) {
		snprintf(why, len, "mkdtemp: %s", strerror(errno));
		return -1;
	}
	/* Sessions, sockets and traces under our own home (as root the
	 * session daemon's sockets are in /var/run/lttng regardless). */
	setenv("LTTNG_HOME", home, 1);
	nb = pids_named("lttng-sessiond", before, 16);
	if (nb == 0 && coll_run("lttng-sessiond --no-kernel --daemonize >/dev/null 2>&1")) {
		snprintf(why, len, "lttng-sessiond --no-kernel --daemonize failed");
		return -1;
	}
	na = pids_named("lttng-sessiond", after, 16);
	for (int i = 0; i < na; i++) {
		bool old = false;

		for (int k = 0; k < nb; k++)
			old |= after[i] == before[k];
		if (!old)
			own_sessiond[n_own++] = after[i];
	}
	if (nb)
		fprintf(stderr, "bench-emit: using the lttng-sessiond already running\n");
	return 0;
}

static void teardown(struct collector *c)
{
	(void)c;
	for (int i = 0; i < n_own; i++) {
		kill(own_sessiond[i], SIGTERM);
		for (int k = 0; k < 100 && kill(own_sessiond[i], 0) == 0; k++)
			usleep(20000);
	}
	coll_rm_rf(home);
}

static int start(struct collector *c)
{
	(void)c;
	snprintf(trace, sizeof(trace), "%s/trace-%u", home, ++run_no);
	if (coll_run("lttng create rlbench --output='%s' >/dev/null", trace) ||
	    coll_run("lttng enable-channel --userspace --buffers-uid --subbuf-size=4M "
		     "--num-subbuf=16 ch >/dev/null") ||
	    coll_run("lttng enable-event --userspace --channel=ch bench:std,bench:small "
		     ">/dev/null") ||
	    coll_run("lttng start >/dev/null"))
		return -1;
	return 0;
}

static void stop(struct collector *c)
{
	(void)c;
	/* stop waits until the consumer has written every buffer */
	coll_run("lttng stop >/dev/null");
	coll_run("lttng destroy >/dev/null");
}

static uint64_t cpu_ns(struct collector *c)
{
	int pids[16], n = pids_named("lttng-consumerd", pids, 16);
	uint64_t t = 0;

	(void)c;
	for (int i = 0; i < n; i++)
		t += coll_proc_cpu_ns(pids[i]);
	return t;
}

static void count(struct collector *c, uint64_t *events, uint64_t *bytes)
{
	char cmd[600], line[256];
	FILE *p;

	(void)c;
	*events = 0;
	*bytes = coll_dir_bytes(trace);
	/* babeltrace2 reads the whole trace back; its counter sink counts the
	 * event messages (only bench:std and bench:small are enabled; a run
	 * emits one of them), step=+0: once, at the end. */
	snprintf(cmd, sizeof(cmd), "babeltrace2 '%s' -c sink.utils.counter -p step=+0 2>/dev/null",
		 trace);
	if ((p = popen(cmd, "r"))) {
		while (fgets(line, sizeof(line), p)) {
			unsigned long long n;

			if (strstr(line, "Event message") && sscanf(line, "%llu", &n) == 1)
				*events = n;
		}
		pclose(p);
	}
	coll_rm_rf(trace);
}

struct collector collector_lttng = {
	.name = "LTTng-UST",
	.full_events = 20000000, /* ~8 M/s: 2.5 s; babeltrace2 reads them all */
	.full_events_quick = 3000000,
	.setup = setup,
	.teardown = teardown,
	.start = start,
	.stop = stop,
	.cpu_ns = cpu_ns,
	.count = count,
};
