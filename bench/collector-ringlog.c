/* bench/collector-ringlog.c - ringlog as a benchmark collector: a real
 * ringlogd on a temporary store, the job through libringlog, the store
 * read back with the reader's dedup. */
#define _GNU_SOURCE
#include "collector.h"

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "decode.h"

static const char *daemon_path;
static char dir[256], store[300], sock[300], conf[300];
static pid_t daemon_pid;
static uint64_t daemon_cpu; /* its whole life's CPU, once it has exited */

void collector_ringlog_paths(const char *ringlogd, const char *self_dir)
{
	/* self_dir is at most 2 KiB (bench-emit.c) */
	daemon_path = ringlogd;
	snprintf(collector_ringlog.job, sizeof(collector_ringlog.job), "%s/job-ringlog", self_dir);
}

int collector_ringlog_pid(void)
{
	return (int)daemon_pid;
}

const char *collector_ringlog_socket(void)
{
	return sock;
}

static int setup(struct collector *c, char *why, size_t len)
{
	if (access(c->job, X_OK) || !daemon_path || access(daemon_path, X_OK)) {
		snprintf(why, len, "%s or ringlogd is not built", c->job);
		return -1;
	}
	{
		struct statvfs fs;

		if (statvfs("/tmp", &fs) == 0 &&
		    (uint64_t)fs.f_bavail * fs.f_frsize < (8ull << 30))
			fprintf(stderr, "bench-emit: less than 8 GiB free in /tmp: the full-speed "
				"runs may hit the disk budget and show retention as loss\n");
	}
	/* Rings big enough for a burst while the daemon catches up. */
	setenv("RINGLOG_RING_SIZE", "64M", 1);
	return 0;
}

static void teardown(struct collector *c)
{
	(void)c;
}

static int start(struct collector *c)
{
	(void)c;
	snprintf(dir, sizeof(dir), "/tmp/ringlog-bench-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(store, sizeof(store), "%s/store", dir);
	snprintf(sock, sizeof(sock), "%s/sock", dir);
	snprintf(conf, sizeof(conf), "%s/ringlogd.json", dir);
	setenv("RINGLOG_SOCKET", sock, 1);
	/* A full-speed run stores gigabytes: a budget that holds it all, or
	 * retention would delete the oldest and they would count as lost. */
	{
		FILE *f = fopen(conf, "w");

		if (!f)
			return -1;
		fputs("{ \"max_disk\": \"16G\", \"min_free\": \"1G\" }\n", f);
		fclose(f);
	}
	daemon_cpu = 0;
	daemon_pid = fork();
	if (daemon_pid == 0) {
		if (!freopen("/dev/null", "w", stderr))
			_exit(126);
		execl(daemon_path, "ringlogd", "--config", conf, "--storage", store, "--socket", sock,
		      (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 200; i++) {
		struct stat st;

		if (stat(sock, &st) == 0)
			return 0;
		usleep(10000);
	}
	fprintf(stderr, "bench-emit: ringlogd did not start\n");
	return -1;
}

static void stop(struct collector *c)
{
	(void)c;
	usleep(200000); /* the last chunk reaches the disk */
	struct rusage ru;

	kill(daemon_pid, SIGTERM);
	/* The final drain counts too: take the exited daemon's own usage. */
	if (wait4(daemon_pid, NULL, 0, &ru) == daemon_pid)
		daemon_cpu = (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000ull +
			     (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000ull;
	daemon_pid = 0;
}

static uint64_t cpu_ns(struct collector *c)
{
	(void)c;
	return daemon_pid ? coll_proc_cpu_ns(daemon_pid) : daemon_cpu;
}

static int count_event(void *ctx, const struct ringlog_dec_event *e)
{
	(void)e;
	++*(uint64_t *)ctx;
	return 0;
}

static void count(struct collector *c, uint64_t *events, uint64_t *bytes)
{
	struct ringlog_dedup dd = { 0 };
	struct dirent **names;
	int n = scandir(store, &names, NULL, alphasort);

	(void)c;
	*events = *bytes = 0;
	for (int i = 0; i < n; i++) {
		char path[700];
		struct ringlog_seg_file f;
		struct ringlog_decoder d;
		struct ringlog_seg_clock clk;
		const char *why;

		snprintf(path, sizeof(path), "%s/%s", store, names[i]->d_name);
		free(names[i]);
		if (!strstr(path, ".rlseg") || ringlog_seg_open(&f, path, &why) < 0)
			continue;
		*bytes += f.size;
		ringlog_seg_clock_of(&f.hdr, &clk);
		ringlog_dec_init(&d, &clk);
		d.dedup = &dd;
		d.ctx = events;
		d.on_event = count_event;
		while (ringlog_seg_next(&f, false) == 1)
			ringlog_dec_records(&d, f.body, f.chunk.body_len);
		ringlog_dec_free(&d);
		ringlog_seg_close(&f);
	}
	free(names);
	ringlog_dedup_free(&dd);
	if (*events)
		--*events; /* job-ringlog's Start event */
	coll_rm_rf(dir);
}

struct collector collector_ringlog = {
	.name = "ringlog",
	.full_events = 100000000, /* ~70 M/s: 1.4 s; the rings hold ~1 M */
	.full_events_quick = 20000000,
	.setup = setup,
	.teardown = teardown,
	.start = start,
	.stop = stop,
	.cpu_ns = cpu_ns,
	.count = count,
};
