/* bench/bench-emit.c - the whole path: libringlog in this process, a real
 * ringlogd draining into a temporary store, the standard event (three u64
 * and a 15-character string: 64 bytes in the ring, 8-byte aligned).
 *
 * Figures (each the median of --runs runs, min..max shown):
 *   emit cost p50/p99/p99.9/max   batches of 64 calls timed with the TSC,
 *                                 1 thread and one thread per core, at a
 *                                 pace the daemon keeps up with
 *   disabled cost                 a level-5 event nobody enabled
 *   full speed, 1 and 2 threads   events/s emitted, events/s stored, loss %
 *                                 (stored is counted by reading the store)
 *   lossless rate                 the highest paced rate (ladder) stored
 *                                 with zero loss, 1 thread
 *   daemon CPU per stored event   utime+stime of ringlogd / events stored
 *   bytes on disk per event       segment bytes / events stored
 *   tail latency p50/p99          emit -> line read from `ringlog tail`
 *
 * usage: bench-emit RINGLOGD RINGLOG [--quick] [--runs R]
 */
#define _GNU_SOURCE
#include <ringlog.h>

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench-util.h"
#include "decode.h"

#define BATCH 64

RINGLOG_PROVIDER_DEFINE(bench_provider, "Bench.Emit");

static const char *daemon_path, *cli_path;
static char dir[256], store[300], sock[300];
static double tpn;

/* ------------------------------------------------------------------------
 * The daemon
 */
static pid_t daemon_start(void)
{
	pid_t pid;

	snprintf(dir, sizeof(dir), "/tmp/ringlog-bench-XXXXXX");
	if (!mkdtemp(dir))
		exit(1);
	snprintf(store, sizeof(store), "%s/store", dir);
	snprintf(sock, sizeof(sock), "%s/sock", dir);
	pid = fork();
	if (pid == 0) {
		freopen("/dev/null", "w", stderr);
		execl(daemon_path, "ringlogd", "--storage", store, "--socket", sock, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 200; i++) {
		struct stat st;

		if (stat(sock, &st) == 0)
			return pid;
		usleep(10000);
	}
	fprintf(stderr, "bench-emit: ringlogd did not start\n");
	exit(1);
}

static uint64_t cpu_ns(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long ut = 0, st = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (!(f = fopen(path, "r")))
		return 0;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	p = strrchr(buf, ')');
	for (int i = 0; p && i < 12; i++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p + 1, "%llu %llu", &ut, &st) != 2)
		return 0;
	return (ut + st) * (1000000000ull / (unsigned long long)sysconf(_SC_CLK_TCK));
}

static void daemon_stop(pid_t pid)
{
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);
}

static int count_event(void *ctx, const struct ringlog_dec_event *e)
{
	(void)e;
	++*(uint64_t *)ctx;
	return 0;
}

/* Events and bytes in the store (with the reader's dedup). */
static void store_count(uint64_t *events, uint64_t *bytes)
{
	struct ringlog_dedup dd = { 0 };
	struct dirent **names;
	int n = scandir(store, &names, NULL, alphasort);

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
}

static void cleanup(void)
{
	char cmd[400];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "bench-emit: could not remove %s\n", dir);
}

/* ------------------------------------------------------------------------
 * Emitting
 */
struct job {
	pthread_t th;
	int cpu;
	uint64_t events;
	uint64_t pace;      /* events per millisecond, 0: full speed */
	int disabled;
	uint64_t *samples;  /* per-call cost in ticks, one per batch */
	size_t nsamples;
	uint64_t t0, t1;    /* ns */
};

static void *emit_main(void *arg)
{
	struct job *j = arg;
	uint64_t seq = 0;
	uint64_t start = bu_now_ns();

	bu_pin_cpu(j->cpu);
	j->t0 = start;
	for (uint64_t b = 0; b < j->events / BATCH; b++) {
		uint64_t t = bu_ticks();

		if (j->disabled) {
			for (int i = 0; i < BATCH; i++, seq++)
				RINGLOG_EVENT(bench_provider, "Verbose", RINGLOG_LEVEL_VERBOSE, 0x1,
					      RINGLOG_U64("a", seq), RINGLOG_U64("b", seq),
					      RINGLOG_U64("c", seq), RINGLOG_STR("s", "fifteen chars.."));
		} else {
			for (int i = 0; i < BATCH; i++, seq++)
				RINGLOG_EVENT(bench_provider, "Std", RINGLOG_LEVEL_INFO, 0x1,
					      RINGLOG_U64("a", seq), RINGLOG_U64("b", seq),
					      RINGLOG_U64("c", seq), RINGLOG_STR("s", "fifteen chars.."));
		}
		if (j->samples)
			j->samples[j->nsamples++] = (bu_ticks() - t) / BATCH;
		if (j->pace && b % 16 == 15) {
			/* Hold the pace: event seq is due at start + seq/pace ms. */
			uint64_t due = start + seq * 1000000ull / j->pace;

			while (bu_now_ns() < due)
				;
		}
	}
	j->t1 = bu_now_ns();
	return NULL;
}

struct run {
	double p50, p99, p999, max;    /* ns per call */
	double emitted_s, stored_s, loss_pct, cpu_ns_per_ev, bytes_per_ev;
};

/* Child side (--job): emit, then print "p50 p99 p999 max total ns". A fresh
 * process per run, so that every run starts with a library that has never
 * seen another daemon. */
static int job_main(int threads, uint64_t events, uint64_t pace, int disabled, int timed)
{
	struct job j[16];
	uint64_t total = 0, t0 = UINT64_MAX, t1 = 0, *all = NULL;
	size_t ns = 0;
	double q[4] = { 0, 0, 0, 0 };

	/* Connect before timing: the library connects in the background. */
	RINGLOG_EVENT(bench_provider, "Start", RINGLOG_LEVEL_INFO, 0x1, RINGLOG_U32("t", 0));
	ringlog_flush(2000);
	for (int i = 0; i < threads; i++) {
		j[i] = (struct job){ .cpu = i, .events = events, .pace = pace, .disabled = disabled };
		if (timed)
			j[i].samples = calloc(events / BATCH + 1, sizeof(uint64_t));
		pthread_create(&j[i].th, NULL, emit_main, &j[i]);
	}
	for (int i = 0; i < threads; i++) {
		pthread_join(j[i].th, NULL);
		total += j[i].events / BATCH * BATCH;
		ns += j[i].nsamples;
		if (j[i].t0 < t0)
			t0 = j[i].t0;
		if (j[i].t1 > t1)
			t1 = j[i].t1;
	}
	if (timed && ns && (all = malloc(ns * sizeof(*all)))) {
		ns = 0;
		for (int i = 0; i < threads; i++) {
			memcpy(all + ns, j[i].samples, j[i].nsamples * sizeof(*all));
			ns += j[i].nsamples;
		}
		bu_sort(all, ns);
		q[0] = bu_quantile(all, ns, 0.50) / tpn;
		q[1] = bu_quantile(all, ns, 0.99) / tpn;
		q[2] = bu_quantile(all, ns, 0.999) / tpn;
		q[3] = all[ns - 1] / tpn;
		free(all);
	}
	for (int i = 0; i < threads; i++)
		free(j[i].samples);
	ringlog_flush(5000);
	printf("%f %f %f %f %llu %llu\n", q[0], q[1], q[2], q[3], (unsigned long long)total,
	       (unsigned long long)(t1 - t0));
	return 0;
}

static const char *self_path;

static void run_jobs(int threads, uint64_t events, uint64_t pace, int disabled, int timed,
		     struct run *out)
{
	pid_t d = daemon_start();
	uint64_t c0, c1, stored, bytes;
	unsigned long long total = 0, dt = 1;
	char cmd[1200];
	FILE *p;

	memset(out, 0, sizeof(*out));
	setenv("RINGLOG_SOCKET", sock, 1);
	snprintf(cmd, sizeof(cmd), "%s --job %d %llu %llu %d %d %.6f", self_path, threads,
		 (unsigned long long)events, (unsigned long long)pace, disabled, timed, tpn);
	c0 = cpu_ns(d);
	if ((p = popen(cmd, "r"))) {
		if (fscanf(p, "%lf %lf %lf %lf %llu %llu", &out->p50, &out->p99, &out->p999,
			   &out->max, &total, &dt) != 6)
			fprintf(stderr, "bench-emit: a job failed\n");
		pclose(p);
	}
	usleep(200000); /* the last chunk reaches the disk */
	c1 = cpu_ns(d);
	daemon_stop(d);
	store_count(&stored, &bytes);
	stored = stored > 0 ? stored - 1 : 0; /* the Start event */
	out->emitted_s = total * 1e9 / (double)dt;
	out->stored_s = stored * 1e9 / (double)dt;
	out->loss_pct = disabled || !total ? 0 : 100.0 * (double)(total - stored) / (double)total;
	out->cpu_ns_per_ev = stored ? (double)(c1 - c0) / (double)stored : 0;
	out->bytes_per_ev = stored ? (double)bytes / (double)stored : 0;
	cleanup();
}

/* ------------------------------------------------------------------------
 * Tail latency: events carry their CLOCK_REALTIME emit time; a `ringlog
 * tail --json` child prints them; we read the lines and compare.
 */
static uint64_t real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *tail_emit(void *arg)
{
	int n = *(int *)arg;

	for (int i = 0; i < n; i++) {
		RINGLOG_EVENT(bench_provider, "Probe", RINGLOG_LEVEL_INFO, 0x2,
			      RINGLOG_U64("sent_ns", real_ns()));
		usleep(2000); /* 500 events/s: a live service, not a flood */
	}
	return NULL;
}

static int tail_latency(int n, double *p50, double *p99)
{
	pid_t d = daemon_start();
	char cmd[900], line[4096];
	uint64_t *lat = calloc((size_t)n, sizeof(*lat));
	int got = 0;
	FILE *t;
	pthread_t th;

	setenv("RINGLOG_SOCKET", sock, 1);
	snprintf(cmd, sizeof(cmd), "exec %s tail --json --event Probe", cli_path);
	t = popen(cmd, "r");
	usleep(300000); /* the tail is subscribed */
	pthread_create(&th, NULL, tail_emit, &n);
	while (got < n && fgets(line, sizeof(line), t)) {
		char *p = strstr(line, "\"sent_ns\":");
		uint64_t now = real_ns();

		if (p)
			lat[got++] = now - strtoull(p + 10, NULL, 10);
	}
	pthread_join(th, NULL);
	daemon_stop(d); /* the tail ends with it */
	pclose(t);
	if (got) {
		bu_sort(lat, (size_t)got);
		*p50 = bu_quantile(lat, (size_t)got, 0.5) / 1e6;
		*p99 = bu_quantile(lat, (size_t)got, 0.99) / 1e6;
	}
	free(lat);
	cleanup();
	return got;
}

/* ------------------------------------------------------------------------ */

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* "median (min..max)" of v[0..n) */
static const char *mmm(double *v, int n, int decimals, char *buf, size_t cap)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_d);
	if (n == 1)
		snprintf(buf, cap, "%.*f", decimals, v[0]);
	else
		snprintf(buf, cap, "%.*f (%.*f..%.*f)", decimals, v[n / 2], decimals, v[0], decimals,
			 v[n - 1]);
	return buf;
}

#define ROW(label, field, fmt, runs, res)                                       \
	do {                                                                    \
		double v_[16];                                                  \
		char b_[160];                                                    \
		for (int r_ = 0; r_ < (runs); r_++)                             \
			v_[r_] = (res)[r_].field;                               \
		printf("| %s | %s |\n", label, mmm(v_, (runs), fmt, b_, sizeof(b_))); \
	} while (0)

int main(int argc, char **argv)
{
	int runs = 3, quick = 0;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	uint64_t n_lat, n_full;
	struct run lat1[16], latn[16], dis[16], full1[16], full2[16];
	double lossless[16];

	if (argc == 8 && !strcmp(argv[1], "--job")) {
		tpn = atof(argv[7]);
		return job_main(atoi(argv[2]), strtoull(argv[3], NULL, 10),
				strtoull(argv[4], NULL, 10), atoi(argv[5]), atoi(argv[6]));
	}
	if (argc < 3) {
		fprintf(stderr, "usage: bench-emit RINGLOGD RINGLOG [--quick] [--runs R]\n");
		return 2;
	}
	{
		static char self[4096];
		ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

		if (n <= 0)
			return 1;
		self[n] = 0;
		self_path = self;
	}
	daemon_path = argv[1];
	cli_path = argv[2];
	for (int i = 3; i < argc; i++) {
		if (!strcmp(argv[i], "--quick"))
			quick = 1;
		else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
			runs = atoi(argv[++i]);
	}
	if (runs < 1 || runs > 16)
		runs = 3;
	if (ncpu > 16)
		ncpu = 16;
	n_lat = quick ? 2000000 : 10000000;
	n_full = quick ? 5000000 : 20000000;
	tpn = bu_ticks_per_ns();
	/* Rings big enough for a burst while the daemon catches up. */
	setenv("RINGLOG_RING_SIZE", "64M", 1);

	for (int r = 0; r < runs; r++) {
		/* Paced at 10 M/s per thread, well inside what the daemon
		 * stores: the cost of emitting, not of dropping. */
		run_jobs(1, n_lat, 10000, 0, 1, &lat1[r]);
		run_jobs((int)ncpu, n_lat, 10000 / (uint64_t)ncpu, 0, 1, &latn[r]);
		run_jobs(1, n_lat, 0, 1, 1, &dis[r]);
		run_jobs(1, n_full, 0, 0, 0, &full1[r]);
		run_jobs(2, n_full, 0, 0, 0, &full2[r]);
		/* Lossless ladder, 1 thread: the highest paced rate with no
		 * event missing from the store. */
		lossless[r] = 0;
		for (uint64_t rate = 5000; rate <= 60000; rate += 5000) {
			struct run x;

			run_jobs(1, quick ? rate * 200 : rate * 1000, rate, 0, 0, &x);
			if (x.loss_pct > 0)
				break;
			lossless[r] = rate / 1000.0;
		}
	}

	printf("## ringlog end to end: libringlog -> ringlogd -> segment files\n\n");
	printf("Standard event: three u64 + a 15-character string (64 bytes in the ring). "
	       "Median of %d runs (min..max). TSC %.3f GHz, %ld CPUs. Emit cost per call from "
	       "batches of %d calls.\n\n",
	       runs, tpn, ncpu, BATCH);
	printf("| figure | value |\n|---|---|\n");
	ROW("emit p50, 1 thread, daemon draining (ns)", p50, 1, runs, lat1);
	ROW("emit p99, 1 thread (ns)", p99, 1, runs, lat1);
	ROW("emit p99.9, 1 thread (ns)", p999, 1, runs, lat1);
	ROW("emit max, 1 thread (ns, batch/64)", max, 0, runs, lat1);
	{
		char l[96];

		snprintf(l, sizeof(l), "emit p50, %ld threads (ns)", ncpu);
		ROW(l, p50, 1, runs, latn);
		snprintf(l, sizeof(l), "emit p99, %ld threads (ns)", ncpu);
		ROW(l, p99, 1, runs, latn);
		snprintf(l, sizeof(l), "emit p99.9, %ld threads (ns)", ncpu);
		ROW(l, p999, 1, runs, latn);
	}
	ROW("disabled event p50 (ns)", p50, 2, runs, dis);
	ROW("disabled event p99 (ns)", p99, 2, runs, dis);
	ROW("full speed, 1 thread: emitted (M events/s)", emitted_s / 1e6, 1, runs, full1);
	ROW("full speed, 1 thread: stored (M events/s)", stored_s / 1e6, 1, runs, full1);
	ROW("full speed, 1 thread: loss (%)", loss_pct, 1, runs, full1);
	ROW("full speed, 2 threads: emitted (M events/s)", emitted_s / 1e6, 1, runs, full2);
	ROW("full speed, 2 threads: stored (M events/s)", stored_s / 1e6, 1, runs, full2);
	ROW("full speed, 2 threads: loss (%)", loss_pct, 1, runs, full2);
	{
		double v[16];
		char b[96];

		memcpy(v, lossless, sizeof(double) * (size_t)runs);
		printf("| highest lossless paced rate, 1 thread (M events/s) | %s |\n",
		       mmm(v, runs, 0, b, sizeof(b)));
	}
	ROW("daemon CPU per stored event, 1 thread full speed (ns)", cpu_ns_per_ev, 2, runs,
	    full1);
	ROW("daemon CPU per stored event, 2 threads full speed (ns)", cpu_ns_per_ev, 2, runs,
	    full2);
	ROW("bytes on disk per event", bytes_per_ev, 1, runs, full1);
	{
		double p50, p99;
		int got = tail_latency(quick ? 300 : 1500, &p50, &p99);

		if (got)
			printf("| emit -> `ringlog tail` line, p50 / p99 (ms) | %.2f / %.2f (%d events) |\n",
			       p50, p99, got);
		else
			printf("| emit -> `ringlog tail` line | no line received |\n");
	}
	return 0;
}
