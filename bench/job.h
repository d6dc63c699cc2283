/* bench/job.h - the emitting side of the end-to-end benchmark, the same
 * code for every collector compared (job-ringlog.c, job-lttng.c): threads
 * emit the standard event (three u64 and a 15-character string), timed in
 * batches of 64 calls with the TSC, at full speed or held to a pace.
 *
 * The includer defines, before including this file:
 *   JOB_EMIT(seq)       emit the standard event (enabled)
 *   JOB_EMIT_OFF(seq)   emit the same event at a level nobody enabled
 *   JOB_EMIT_48(seq)    emit the 48-byte event of the daemon's goal (four
 *                       u64; 48 bytes with its header and timestamp)
 *   JOB_EMIT_WAIT(seq)  optional: the standard event, waiting up to 1 ms
 *                       for room when the ring is full (KIND 4; without
 *                       it, KIND 4 is the standard event)
 *   job_connect()       before timing (e.g. wait for the daemon)
 *   job_flush()         after emitting (e.g. hand the rings over)
 *
 * usage: JOB THREADS EVENTS PACE KIND TIMED TICKS_PER_NS [QUANTILES]
 *   PACE: events per millisecond per thread, 0 = full speed
 *   KIND: 0 the standard event, 1 disabled, 2 the 48-byte event,
 *         3 disabled in one untimed loop of EVENTS calls (the figure is
 *         the loop's time / EVENTS: batches of 64 cannot resolve it)
 *         4 the standard event allowed to wait (JOB_EMIT_WAIT; timed
 *         call by call, not in batches, and never paced)
 *   prints "p50 p99 p999 max total_events elapsed_ns" (ns per call);
 *   QUANTILES: a file to write 500 quantiles of the per-call cost to
 *   (percentile and ns per line), for the plot
 * Each run is a fresh process, so that nothing warm carries over.
 */
#ifndef RINGLOG_BENCH_JOB_H
#define RINGLOG_BENCH_JOB_H

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench-util.h"

#define JOB_BATCH 64
/* KIND 5's stand-in for one call: a chain of dependent multiply-adds
 * (about 4 cycles each: ~10 ns at 2 GHz, what an emit costs), each step hidden from the
 * compiler so that it cannot fold them into one. */
#define JOB_BARE_STEPS 10
#ifndef JOB_EMIT_WAIT
#define JOB_EMIT_WAIT(seq) JOB_EMIT(seq)
#endif

/* Every thread sets up before any starts the clock: a thread still
 * creating its ring while the others emit would stretch the elapsed time
 * and read as a pace not held. */
static pthread_barrier_t job_ready;

struct job {
	pthread_t th;
	int cpu;
	uint64_t events;
	uint64_t pace;     /* events per millisecond, 0: full speed */
	int disabled;      /* the KIND argument */
	uint64_t *samples; /* per-call cost in ticks, one per batch */
	size_t nsamples;
	uint64_t t0, t1;   /* ns */
};

static void *job_thread(void *arg)
{
	struct job *j = arg;
	uint64_t seq = 0, start = bu_now_ns();
	uint64_t x = 1; /* KIND 5's chain, one across all calls: latency, not throughput */

	bu_pin_cpu(j->cpu);
	/* The thread's first event sets it up (libringlog creates and faults
	 * in its ring: ~1 ms for 64 MiB); LTTng did the same at
	 * registration. Untimed, so that max is the steady state. */
	JOB_EMIT(seq);
	seq++;
	pthread_barrier_wait(&job_ready);
	start = bu_now_ns();
	j->t0 = start;
	if (j->disabled == 3) {
		/* seq changes each call and the level test reads the
		 * library's state each time, so nothing can be hoisted out
		 * of the loop; the asm keeps seq live */
		for (uint64_t i = 0; i < j->events; i++, seq++) {
			JOB_EMIT_OFF(seq);
			__asm__ volatile("" : "+r"(seq));
		}
		j->t1 = bu_now_ns();
		return NULL;
	}
	for (uint64_t b = 0; b < j->events / JOB_BATCH; b++) {
		uint64_t t = bu_ticks();

		if (j->disabled == 1) {
			for (int i = 0; i < JOB_BATCH; i++, seq++)
				JOB_EMIT_OFF(seq);
		} else if (j->disabled == 2) {
			for (int i = 0; i < JOB_BATCH; i++, seq++)
				JOB_EMIT_48(seq);
		} else if (j->disabled == 5) {
			for (int i = 0; i < JOB_BATCH; i++, seq++) {
				for (int k = 0; k < JOB_BARE_STEPS; k++) {
					x = x * 6364136223846793005ull + 1442695040888963407ull;
					__asm__ volatile("" : "+r"(x)); /* one step at a time */
				}
			}
		} else if (j->disabled == 4) {
			/* Each call timed: the waits are single calls, which a
			 * batch's mean would hide (the TSC read is ~10 ns more
			 * per call; this row is about the waits). */
			for (int i = 0; i < JOB_BATCH; i++, seq++) {
				uint64_t c0 = bu_ticks();

				JOB_EMIT_WAIT(seq);
				if (j->samples)
					j->samples[j->nsamples++] = bu_ticks() - c0;
			}
			continue;
		} else {
			for (int i = 0; i < JOB_BATCH; i++, seq++)
				JOB_EMIT(seq);
		}
		if (j->samples)
			j->samples[j->nsamples++] = (bu_ticks() - t) / JOB_BATCH;
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

static void job_quantiles(const char *path, const uint64_t *sorted, size_t n, double tpn)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return;
	/* evenly spaced in "nines" (90, 99, 99.9, ...): the tail gets as many
	 * points as the body */
	for (int i = 0; i < 500; i++) {
		double q = 1 - pow(10, -i / 100.0);

		fprintf(f, "%.6f %.2f\n", q * 100, bu_quantile(sorted, n, q) / tpn);
	}
	fprintf(f, "100 %.2f\n", sorted[n - 1] / tpn);
	fclose(f);
}

static int job_main(int argc, char **argv)
{
	struct job j[16];
	uint64_t total = 0, t0 = UINT64_MAX, t1 = 0, *all = NULL, events, pace;
	size_t ns = 0;
	double q[4] = { 0, 0, 0, 0 }, tpn;
	int threads, disabled, timed;

	if (argc < 7) {
		fprintf(stderr, "usage: %s THREADS EVENTS PACE DISABLED TIMED TICKS_PER_NS [QUANTILES]\n",
			argv[0]);
		return 2;
	}
	threads = atoi(argv[1]);
	events = strtoull(argv[2], NULL, 10);
	pace = strtoull(argv[3], NULL, 10);
	disabled = atoi(argv[4]);
	timed = atoi(argv[5]);
	tpn = atof(argv[6]);
	if (threads < 1 || threads > 16 || tpn <= 0)
		return 2;
	job_connect();
	pthread_barrier_init(&job_ready, NULL, (unsigned)threads);
	for (int i = 0; i < threads; i++) {
		j[i] = (struct job){ .cpu = i, .events = events, .pace = pace, .disabled = disabled };
		if (timed)
			j[i].samples = calloc(disabled == 4 ? events + 1 : events / JOB_BATCH + 1,
					      sizeof(uint64_t));
		pthread_create(&j[i].th, NULL, job_thread, &j[i]);
	}
	for (int i = 0; i < threads; i++) {
		pthread_join(j[i].th, NULL);
		if (disabled == 3) {
			/* ns per call of the whole loop, in every quantile */
			double per = (double)(j[i].t1 - j[i].t0) / (double)j[i].events;

			q[0] = q[1] = q[2] = q[3] = per;
		}
		total += j[i].events / JOB_BATCH * JOB_BATCH + 1; /* + the first */
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
		if (argc > 7)
			job_quantiles(argv[7], all, ns, tpn);
		free(all);
	}
	for (int i = 0; i < threads; i++)
		free(j[i].samples);
	job_flush();
	printf("%.4f %.4f %.4f %.4f %llu %llu\n", q[0], q[1], q[2], q[3], (unsigned long long)total,
	       (unsigned long long)(t1 - t0));
	return 0;
}

#endif
