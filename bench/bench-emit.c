/* bench/bench-emit.c - the whole path, the same workload through ringlog
 * (libringlog -> ringlogd -> segment files) and through LTTng-UST
 * (tracepoint -> lttng-consumerd -> CTF), side by side. The standard event:
 * three u64 and a 15-character string. Each figure is the median of --runs
 * runs with min..max; each run is a fresh job process (bench/job.h) and a
 * freshly started collector (bench/collector.h).
 *
 *   emit cost p50/p99/p99.9/max   batches of 64 calls timed with the TSC,
 *                                 1 thread and one thread per core, paced
 *                                 at a rate the collector keeps up with
 *   disabled cost                 the same event at a level nobody enabled,
 *                                 10^8 calls in one loop, per call
 *   full speed, 1 and 2 threads   events/s emitted, events/s stored, loss %
 *                                 (stored = read back from disk and counted)
 *   lossless rate                 the highest paced rate (a ladder) stored
 *                                 with zero loss, 1 thread; also for the
 *                                 48-byte event (four u64) the daemon's
 *                                 goals are stated in, from 1 and from 2
 *                                 threads, with the CPU and bytes per event
 *                                 at that rate, and its full-speed rate
 *   collector CPU per event       utime+stime of ringlogd / lttng-consumerd
 *   bytes on disk per event       files of the run / events stored
 *   tail latency p50/p99          ringlog only: emit -> `ringlog tail` line
 *
 * usage: bench-emit RINGLOGD RINGLOG [--quick] [--runs R] [--out DIR] [--emit-only]
 *   --emit-only: only the emit cost rows of ringlog (1 thread, enabled and
 *   disabled), one line per run: for checking a change to the fast path
 *   --out DIR: also write table.md and the emit latency quantiles of each
 *   collector (DIR/latency-<name>.dat), for scripts/bench.sh's plot
 */
#define _GNU_SOURCE
#include <ringlog.h>

#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench-util.h"
#include "collector.h"

RINGLOG_PROVIDER_DEFINE(bench_provider, "Bench.Emit");

static const char *cli_path, *out_dir;
static double tpn;

struct run {
	double p50, p99, p999, max;    /* ns per call */
	double emitted_s, stored_s, loss_pct, cpu_ns_per_ev, bytes_per_ev;
	bool ok;
};

/* One run of a collector's job: THREADS x EVENTS at PACE (events/ms per
 * thread, 0 = full speed). Counts what was stored unless timed. */
static void run_job(struct collector *c, int threads, uint64_t events, uint64_t pace,
		    int disabled, int timed, const char *quantiles, struct run *out)
{
	uint64_t c0, c1, stored = 0, bytes = 0;
	unsigned long long total = 0, dt = 1;
	char cmd[5000];
	FILE *p;

	memset(out, 0, sizeof(*out));
	if (c->start(c) < 0)
		return;
	snprintf(cmd, sizeof(cmd), "'%s' %d %llu %llu %d %d %.6f %s", c->job, threads,
		 (unsigned long long)events, (unsigned long long)pace, disabled, timed, tpn,
		 quantiles ? quantiles : "");
	c0 = c->cpu_ns(c);
	if ((p = popen(cmd, "r"))) {
		out->ok = fscanf(p, "%lf %lf %lf %lf %llu %llu", &out->p50, &out->p99, &out->p999,
				 &out->max, &total, &dt) == 6;
		pclose(p);
	}
	if (!out->ok)
		fprintf(stderr, "bench-emit: %s job failed\n", c->name);
	c->stop(c);
	c1 = c->cpu_ns(c);
	c->count(c, &stored, &bytes);
	out->emitted_s = total * 1e9 / (double)dt;
	out->stored_s = stored * 1e9 / (double)dt;
	out->loss_pct = disabled == 1 || disabled == 3 || !total ? 0 : 100.0 * (double)(total - stored) / (double)total;
	if (out->loss_pct < 0)
		out->loss_pct = 0;
	out->cpu_ns_per_ev = stored ? (double)(c1 - c0) / (double)stored : 0;
	out->bytes_per_ev = stored ? (double)bytes / (double)stored : 0;
}

/* ------------------------------------------------------------------------
 * Tail latency (ringlog): events carry their CLOCK_REALTIME emit time; a
 * `ringlog tail --json` child prints them; we read the lines and compare.
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
	struct collector *c = &collector_ringlog;
	char cmd[900], line[4096];
	uint64_t *lat = calloc((size_t)n, sizeof(*lat)), ev, by;
	int got = 0;
	FILE *t;
	pthread_t th;
	pid_t tp;

	if (c->start(c) < 0)
		return 0;
	snprintf(cmd, sizeof(cmd), "exec %s tail --json --event Probe 2>/dev/null", cli_path);
	if (!(t = bu_popen_pid(cmd, &tp))) {
		c->stop(c);
		free(lat);
		return 0;
	}
	usleep(300000); /* the tail is subscribed */
	pthread_create(&th, NULL, tail_emit, &n);
	while (got < n && fgets(line, sizeof(line), t)) {
		char *p = strstr(line, "\"sent_ns\":");
		uint64_t now = real_ns();

		if (p)
			lat[got++] = now - strtoull(p + 10, NULL, 10);
	}
	pthread_join(th, NULL);
	c->stop(c);
	kill(tp, SIGINT); /* the tail would wait for the next ringlogd */
	bu_pclose_pid(t, tp);
	c->count(c, &ev, &by);
	if (got) {
		bu_sort(lat, (size_t)got);
		*p50 = bu_quantile(lat, (size_t)got, 0.5) / 1e6;
		*p99 = bu_quantile(lat, (size_t)got, 0.99) / 1e6;
	}
	free(lat);
	return got;
}

/* ------------------------------------------------------------------------
 * The table
 */
static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* "median (min..max)" of v[0..n); the median in *med */
static const char *mmm(double *v, int n, int decimals, double *med, char *buf, size_t cap)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_d);
	*med = v[n / 2];
	if (n == 1)
		snprintf(buf, cap, "%.*f", decimals, v[0]);
	else
		snprintf(buf, cap, "%.*f (%.*f..%.*f)", decimals, v[n / 2], decimals, v[0], decimals,
			 v[n - 1]);
	return buf;
}

enum better { LOWER, HIGHER, NONE };

/* One row: the figure for ringlog and LTTng, how many times ringlog is
 * better, and the target it is held to. */
static void row(const char *label, const double *a, const double *b, bool have_b, int runs,
		int decimals, enum better better, const char *target)
{
	double va[16], vb[16], ma, mb;
	char sa[96], sb[96] = "-", ratio[32] = "-";

	memcpy(va, a, sizeof(double) * (size_t)runs);
	mmm(va, runs, decimals, &ma, sa, sizeof(sa));
	if (have_b) {
		memcpy(vb, b, sizeof(double) * (size_t)runs);
		mmm(vb, runs, decimals, &mb, sb, sizeof(sb));
		double x = better == LOWER && ma > 0 ? mb / ma : better == HIGHER && mb > 0 ? ma / mb : -1;

		if (x >= 0)
			snprintf(ratio, sizeof(ratio), x < 1 ? "%.2fx" : "%.1fx", x);
	}
	bu_out("| %s | %s | %s | %s | %s |\n", label, sa, sb, ratio, target);
}

/* The 48-byte event's highest lossless rate from THREADS ("1 thread"),
 * then the CPU and bytes per event of the run at that rate (labelled with
 * SUFFIX); the targets go with the rate and the CPU rows. */
static void lossless_rows(const char *threads, const char *suffix, const char *rate_target,
			  const char *cpu_target, const double *rate_a, const double *rate_b,
			  const struct run *at_a, const struct run *at_b, bool have_b, int runs)
{
	double cpu[2][16], bytes[2][16];
	char l[160];

	for (int i = 0; i < runs; i++) {
		cpu[0][i] = at_a[i].cpu_ns_per_ev;
		cpu[1][i] = at_b[i].cpu_ns_per_ev;
		bytes[0][i] = at_a[i].bytes_per_ev;
		bytes[1][i] = at_b[i].bytes_per_ev;
	}
	snprintf(l, sizeof(l), "48-byte event: highest lossless paced rate, %s (M events/s)",
		 threads);
	row(l, rate_a, rate_b, have_b, runs, 1, HIGHER, rate_target);
	snprintf(l, sizeof(l), "48-byte event: collector CPU per stored event at that rate%s (ns)",
		 suffix);
	row(l, cpu[0], cpu[1], have_b, runs, 2, LOWER, cpu_target);
	snprintf(l, sizeof(l), "48-byte event: bytes on disk per event at that rate%s", suffix);
	row(l, bytes[0], bytes[1], have_b, runs, 1, LOWER, "");
}

#define COL(res, field) \
	({ static double v_[16]; for (int r_ = 0; r_ < runs; r_++) v_[r_] = (res)[r_].field; v_; })

struct results {
	struct run lat1[16], latn[16], dis[16], full1[16], full2[16], small1[16];
	struct run bare1[16], baren[16]; /* KIND 5: no emit, the machine's own tail */
	double lossless[16], lossless48[16], lossless48_2[16];
	struct run at48[16], at48_2[16]; /* the runs at those rates */
	double steal[16]; /* % of the machine's time stolen during run i */
	double gaps[16], gaps_lost[16]; /* bu_hiccups() before run i */
	double line[16]; /* bu_line_transfer_ns() before run i */
};

/* The highest paced rate in all, from THREADS threads, stored with no
 * event missing: a ladder of 2.5 M/s steps of half a second each (far more
 * than either collector's buffers hold). KIND: the job's event. The run at
 * that rate goes to *at (its CPU and bytes per event). */
static double lossless_rate(struct collector *c, bool quick, int kind, int threads,
			    struct run *at)
{
	double best = 0;
	FILE *ladder = NULL;

	if (at)
		memset(at, 0, sizeof(*at));
	/* Each step of the 48-byte event's ladders, for the plot of CPU
	 * against rate (bench.sh): "threads rate cpu loss" lines, appended
	 * run after run, to ladder-<collector>.dat. */
	if (out_dir && kind == 2) {
		char path[4200];

		snprintf(path, sizeof(path), "%s/ladder-%s.dat", out_dir, c->name);
		ladder = fopen(path, "a");
	}
	for (uint64_t rate = 2500; rate <= 60000; rate += 2500) {
		uint64_t per = rate / (uint64_t)threads;
		struct run x;

		run_job(c, threads, quick ? per * 100 : per * 500, per, kind, 0, NULL, &x);
		/* a step whose pace the emitter could not hold is no rate */
		if (ladder && x.ok && x.emitted_s >= 0.95 * (double)rate * 1000)
			fprintf(ladder, "%d %.1f %.3f %.4f\n", threads, rate / 1000.0, x.cpu_ns_per_ev,
				x.loss_pct);
		/* A pace the emitter cannot hold is not a rate stored: the
		 * call itself is then the limit. */
		if (!x.ok || x.loss_pct > 0 || x.emitted_s < 0.95 * (double)rate * 1000)
			break;
		best = rate / 1000.0;
		if (at)
			*at = x;
	}
	if (ladder)
		fclose(ladder);
	return best;
}

/* A cache line slower than this between the two CPUs: the host has put
 * them apart (bu_line_transfer_ns() has the figures behind it) */
#define LINE_APART_NS 100

/* A run whose clock-reading thread lost more of its time than this in
 * gaps of 5 us or more: disturbed, though the hypervisor reported no
 * steal. The docs run of 2026-11-28 lost 0.9-3.6 %; one on 2026-11-29
 * lost 5.1-9.5 % in every run, and its emit p99 was 233 ns against 18.9,
 * its lossless paced rate of the standard event 2.5 M/s against 27.5. */
#define GAPS_DISTURBED_PCT 5.0

/* Steal time so far, and all time, in jiffies of every CPU (/proc/stat):
 * on a shared machine another guest's load shows as steal. */
static void cpu_times(uint64_t *steal, uint64_t *all)
{
	unsigned long long v[8] = { 0 };
	FILE *f = fopen("/proc/stat", "r");

	*steal = *all = 0;
	if (!f)
		return;
	if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
		   &v[4], &v[5], &v[6], &v[7]) == 8) {
		for (int i = 0; i < 8; i++)
			*all += v[i];
		*steal = v[7];
	}
	fclose(f);
}

/* Run I of every figure for one collector; the share of the machine's
 * time stolen meanwhile goes to r->steal[i]. */
static void measure_run(struct collector *c, int i, int runs, bool quick, long ncpu,
			struct results *r)
{
	uint64_t n_lat = quick ? 1000000 : 10000000;
	uint64_t n_full = quick ? c->full_events_quick : c->full_events;
	uint64_t s0, a0, s1, a1;
	char q[600] = "";

	bu_hiccups(1.0, tpn, &r->gaps[i], &r->gaps_lost[i]);
	r->line[i] = bu_line_transfer_ns(tpn);
	cpu_times(&s0, &a0);
	if (i == 0 && out_dir)
		snprintf(q, sizeof(q), "%s/latency-%s.dat", out_dir, c->name);
	fprintf(stderr, "bench-emit: %s run %d/%d\n", c->name, i + 1, runs);
	/* Paced at 10 M/s in all, well inside what either collector
	 * stores: the cost of emitting, not of dropping. */
	run_job(c, 1, n_lat, 10000, 0, 1, q[0] ? q : NULL, &r->lat1[i]);
	run_job(c, (int)ncpu, n_lat, 10000 / (uint64_t)ncpu, 0, 1, NULL, &r->latn[i]);
	/* The same batches at the same pace with no emit in them: a tail
	 * here is the machine's, and the emit's tail is not below it. */
	run_job(c, 1, n_lat, 10000, 5, 1, NULL, &r->bare1[i]);
	run_job(c, (int)ncpu, n_lat, 10000 / (uint64_t)ncpu, 5, 1, NULL, &r->baren[i]);
	/* 10^8 disabled calls in one loop (10^7 quick): per call to 0.01 ns */
	run_job(c, 1, quick ? 10000000 : 100000000, 0, 3, 0, NULL, &r->dis[i]);
	run_job(c, 1, n_full, 0, 0, 0, NULL, &r->full1[i]);
	run_job(c, 2, n_full, 0, 0, 0, NULL, &r->full2[i]);
	run_job(c, 1, n_full, 0, 2, 0, NULL, &r->small1[i]);
	r->lossless[i] = lossless_rate(c, quick, 0, 1, NULL);
	r->lossless48[i] = lossless_rate(c, quick, 2, 1, &r->at48[i]);
	r->lossless48_2[i] = lossless_rate(c, quick, 2, 2, &r->at48_2[i]);
	cpu_times(&s1, &a1);
	r->steal[i] = a1 > a0 ? 100.0 * (double)(s1 - s0) / (double)(a1 - a0) : 0;
}

int main(int argc, char **argv)
{
	static struct results rl, lt;
	static char self_dir[2048];
	int runs = 3, quick = 0, emit_only = 0;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	char why[300] = "", l[128];
	bool have_lt;

	if (argc < 3) {
		fprintf(stderr, "usage: bench-emit RINGLOGD RINGLOG [--quick] [--runs R] [--out DIR]\n");
		return 2;
	}
	{
		ssize_t n = readlink("/proc/self/exe", self_dir, sizeof(self_dir) - 1);

		if (n <= 0)
			return 1;
		self_dir[n] = 0;
		*strrchr(self_dir, '/') = 0;
	}
	cli_path = argv[2];
	for (int i = 3; i < argc; i++) {
		if (!strcmp(argv[i], "--quick"))
			quick = 1;
		else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
			runs = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--out") && i + 1 < argc)
			out_dir = argv[++i];
		else if (!strcmp(argv[i], "--emit-only"))
			emit_only = 1;
	}
	if (runs < 1 || runs > 16)
		runs = 3;
	if (ncpu > 16)
		ncpu = 16;
	tpn = bu_ticks_per_ns();
	collector_ringlog_paths(argv[1], self_dir);
	snprintf(collector_lttng.job, sizeof(collector_lttng.job), "%s/job-lttng", self_dir);
	if (out_dir) {
		char p[4200];

		mkdir(out_dir, 0755);
		snprintf(p, sizeof(p), "%s/table.md", out_dir);
		bu_table_open(p);
	}

	if (collector_ringlog.setup(&collector_ringlog, why, sizeof(why)) < 0) {
		fprintf(stderr, "bench-emit: %s\n", why);
		return 1;
	}
	if (emit_only) {
		for (int i = 0; i < runs; i++) {
			run_job(&collector_ringlog, 1, quick ? 1000000 : 10000000, 10000, 0, 1, NULL,
				&rl.lat1[i]);
			run_job(&collector_ringlog, 1, quick ? 1000000 : 10000000, 0, 1, 1, NULL,
				&rl.dis[i]);
			run_job(&collector_ringlog, 1, quick ? 1000000 : 10000000, 10000, 5, 1, NULL,
				&rl.bare1[i]);
			printf("run %d: emit p50 %.1f p99 %.1f p99.9 %.1f ns, disabled p50 %.2f ns; "
			       "bare loop p50 %.1f p99 %.1f p99.9 %.1f ns\n",
			       i + 1, rl.lat1[i].p50, rl.lat1[i].p99, rl.lat1[i].p999, rl.dis[i].p50,
			       rl.bare1[i].p50, rl.bare1[i].p99, rl.bare1[i].p999);
		}
		/* The opt-in wait (1 ms) at full speed, 1 thread: the cost of
		 * each call and the loss; the job prints its waits (count, mean,
		 * longest, timed out) on stderr. */
		for (int i = 0; i < runs; i++) {
			struct run w, s;

			run_job(&collector_ringlog, 1, collector_ringlog.full_events_quick, 0, 4, 1, NULL, &w);
			run_job(&collector_ringlog, 1, collector_ringlog.full_events_quick, 0, 4, 0, NULL, &s);
			printf("run %d: waiting emit (1 ms), full speed, each call timed: p50 %.1f p99 %.1f "
			       "p99.9 %.1f max %.0f ns; %.2f M events/s stored, loss %.3f %%\n", i + 1,
			       w.p50, w.p99, w.p999, w.max, s.stored_s / 1e6, s.loss_pct);
		}
		collector_ringlog.teardown(&collector_ringlog);
		return 0;
	}
	have_lt = collector_lttng.setup(&collector_lttng, why, sizeof(why)) == 0;
	/* Interleaved (ringlog, LTTng-UST, ringlog, ...): a burst of outside
	 * load then lands on both peers' runs, not on one peer's three. */
	for (int i = 0; i < runs; i++) {
		measure_run(&collector_ringlog, i, runs, quick, ncpu, &rl);
		if (have_lt)
			measure_run(&collector_lttng, i, runs, quick, ncpu, &lt);
	}
	if (have_lt)
		collector_lttng.teardown(&collector_lttng);

	bu_out("## End to end: ringlog vs LTTng-UST, same workload, same machine\n\n");
	bu_out("Standard event: three u64 + a 15-character string. Median of %d runs (min..max). "
	    "TSC %.3f GHz, %ld CPUs. Emit cost per call from batches of %d calls. "
	    "\"ringlog x\": how many times better ringlog is.%s%s\n\n",
	    runs, tpn, ncpu, 64, have_lt ? "" : " LTTng-UST left out: ", have_lt ? "" : why);
	bu_out("| figure | ringlog | LTTng-UST | ringlog x | target |\n|---|---|---|---|---|\n");
	row("emit p50, 1 thread (ns)", COL(rl.lat1, p50), COL(lt.lat1, p50), have_lt, runs, 1,
	    LOWER, "<= 15");
	row("emit p99, 1 thread (ns)", COL(rl.lat1, p99), COL(lt.lat1, p99), have_lt, runs, 1,
	    LOWER, "<= 60");
	row("emit p99.9, 1 thread (ns)", COL(rl.lat1, p999), COL(lt.lat1, p999), have_lt, runs, 1,
	    LOWER, "<= 500");
	row("emit max, 1 thread (ns, batch/64)", COL(rl.lat1, max), COL(lt.lat1, max), have_lt,
	    runs, 0, LOWER, "");
	snprintf(l, sizeof(l), "emit p50, %ld threads (ns)", ncpu);
	row(l, COL(rl.latn, p50), COL(lt.latn, p50), have_lt, runs, 1, LOWER, "<= 15");
	snprintf(l, sizeof(l), "emit p99, %ld threads (ns)", ncpu);
	row(l, COL(rl.latn, p99), COL(lt.latn, p99), have_lt, runs, 1, LOWER, "<= 60");
	snprintf(l, sizeof(l), "emit p99.9, %ld threads (ns)", ncpu);
	row(l, COL(rl.latn, p999), COL(lt.latn, p999), have_lt, runs, 1, LOWER, "<= 100");
	row("no emit: a bare loop of ~10 ns per call, the same batches and pace, 1 thread, "
	    "p99 (ns)", COL(rl.bare1, p99), COL(lt.bare1, p99), have_lt, runs, 1, NONE,
	    "the floor");
	row("the same bare loop, 1 thread, p99.9 (ns)", COL(rl.bare1, p999), COL(lt.bare1, p999),
	    have_lt, runs, 1, NONE, "the floor");
	snprintf(l, sizeof(l), "the same bare loop, %ld threads, p99.9 (ns)", ncpu);
	row(l, COL(rl.baren, p999), COL(lt.baren, p999), have_lt, runs, 1, NONE, "the floor");
	row(quick ? "disabled event, 10^7 calls in one loop (ns per call)" :
		    "disabled event, 10^8 calls in one loop (ns per call)",
	    COL(rl.dis, p50), COL(lt.dis, p50), have_lt, runs, 3, LOWER, "<= 1");
	row("full speed, 1 thread: emitted (M events/s)", COL(rl.full1, emitted_s / 1e6),
	    COL(lt.full1, emitted_s / 1e6), have_lt, runs, 1, HIGHER, "");
	row("full speed, 1 thread: stored (M events/s)", COL(rl.full1, stored_s / 1e6),
	    COL(lt.full1, stored_s / 1e6), have_lt, runs, 1, HIGHER, "");
	row("full speed, 1 thread: loss (%)", COL(rl.full1, loss_pct), COL(lt.full1, loss_pct),
	    have_lt, runs, 1, NONE, "");
	row("full speed, 2 threads: emitted (M events/s)", COL(rl.full2, emitted_s / 1e6),
	    COL(lt.full2, emitted_s / 1e6), have_lt, runs, 1, HIGHER, "");
	row("full speed, 2 threads: stored (M events/s)", COL(rl.full2, stored_s / 1e6),
	    COL(lt.full2, stored_s / 1e6), have_lt, runs, 1, HIGHER, "");
	row("full speed, 2 threads: loss (%)", COL(rl.full2, loss_pct), COL(lt.full2, loss_pct),
	    have_lt, runs, 1, NONE, "");
	row("highest lossless paced rate, 1 thread (M events/s)", rl.lossless, lt.lossless, have_lt,
	    runs, 1, HIGHER, "");
	/* issue 23's goals: <= 8 ns of collector CPU at the 1-thread lossless
	 * rate, >= 30 M/s lossless from 2 threads */
	lossless_rows("1 thread", "", "", "<= 8", rl.lossless48, lt.lossless48, rl.at48,
		      lt.at48, have_lt, runs);
	lossless_rows("2 threads in all", ", 2 threads", ">= 30", "", rl.lossless48_2,
		      lt.lossless48_2, rl.at48_2, lt.at48_2, have_lt, runs);
	row("48-byte event: full speed, 1 thread: stored (M events/s)", COL(rl.small1, stored_s / 1e6),
	    COL(lt.small1, stored_s / 1e6), have_lt, runs, 1, HIGHER, "");
	row("48-byte event: collector CPU per stored event, full speed (ns)",
	    COL(rl.small1, cpu_ns_per_ev), COL(lt.small1, cpu_ns_per_ev), have_lt, runs, 2, LOWER,
	    "");
	row("48-byte event: bytes on disk per event", COL(rl.small1, bytes_per_ev),
	    COL(lt.small1, bytes_per_ev), have_lt, runs, 1, LOWER, "");
	row("collector CPU per stored event, 1 thread full speed (ns)",
	    COL(rl.full1, cpu_ns_per_ev), COL(lt.full1, cpu_ns_per_ev), have_lt, runs, 2, LOWER,
	    "");
	row("collector CPU per stored event, 2 threads full speed (ns)",
	    COL(rl.full2, cpu_ns_per_ev), COL(lt.full2, cpu_ns_per_ev), have_lt, runs, 2, LOWER,
	    "");
	row("bytes on disk per event", COL(rl.full1, bytes_per_ev), COL(lt.full1, bytes_per_ev),
	    have_lt, runs, 1, LOWER, "");
	{
		double p50 = 0, p99 = 0;
		int got = tail_latency(quick ? 300 : 1500, &p50, &p99);

		if (got)
			bu_out("| emit -> `ringlog tail` line, p50 / p99 (ms) | %.2f / %.2f (%d events) | "
			    "- | - | p99 <= 50 |\n", p50, p99, got);
		else
			bu_out("| emit -> `ringlog tail` line | no line received | - | - | p99 <= 50 |\n");
	}
	bu_out("\nRuns, in the order they ran; steal: %% of the machine's CPU time taken by "
	    "other guests during the run (over 2%%: disturbed, its figures are suspect; the "
	    "spread of each row above says how much it mattered); gaps: in 1 s before the "
	    "run, how often a thread that only reads the clock lost 5 us or more, and the "
	    "share of its time lost so (a hypervisor that does not report steal still shows "
	    "here). A batch of 64 emits that such a gap lands in reads as gap / 64 ns per "
	    "call: with gaps taking a few %% of the time, that is what the p99.9 rows are "
	    "made of, for both collectors and for the bare loop alike; over 5%% lost is marked "
	    "disturbed: a paced job that loses its CPU for a while then catches up at full "
	    "speed, a burst its ring may not hold, so the lossless rates fall too. line: what one cache "
	    "line took to move from one CPU to the other just before the run, one way: the "
	    "host puts a VM's two CPUs near each other (tens of ns) or apart (150-250 ns here), "
	    "and every line between the emitting threads and the collector pays it; over "
	    "100 ns is marked (CPUs apart), 0 when the two threads could not be pinned "
	    "apart.\n\n");
	for (int i = 0; i < runs; i++) {
		bu_out("- run %d: ringlog steal %.1f%%%s, gaps %.0f/s (%.2f%% lost%s), line %.0f ns%s",
		    i + 1, rl.steal[i], rl.steal[i] > 2 ? " (disturbed)" : "", rl.gaps[i],
		    rl.gaps_lost[i], rl.gaps_lost[i] > GAPS_DISTURBED_PCT ? ": disturbed" : "",
		    rl.line[i], rl.line[i] > LINE_APART_NS ? " (CPUs apart)" : "");
		if (have_lt)
			bu_out(", LTTng-UST steal %.1f%%%s, gaps %.0f/s (%.2f%% lost%s), line %.0f ns%s",
			    lt.steal[i], lt.steal[i] > 2 ? " (disturbed)" : "", lt.gaps[i],
			    lt.gaps_lost[i], lt.gaps_lost[i] > GAPS_DISTURBED_PCT ? ": disturbed" : "",
			    lt.line[i], lt.line[i] > LINE_APART_NS ? " (CPUs apart)" : "");
		bu_out("\n");
	}
	bu_table_close();
	return 0;
}
