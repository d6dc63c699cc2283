/* bench/job-ringlog.c - the benchmark's emitting side through libringlog
 * (bench/job.h has the loop and the usage). */
#define _GNU_SOURCE /* pthread barriers (job.h) */
#include <ringlog.h>
#include <stdio.h>

RINGLOG_PROVIDER_DEFINE(bench_provider, "Bench.Emit");

#define JOB_EMIT(seq) \
	RINGLOG_EVENT(bench_provider, "Std", RINGLOG_LEVEL_INFO, 0x1, RINGLOG_U64("a", seq), \
		      RINGLOG_U64("b", seq), RINGLOG_U64("c", seq), \
		      RINGLOG_STR("s", "fifteen chars.."))
#define JOB_EMIT_48(seq) \
	RINGLOG_EVENT(bench_provider, "Small", RINGLOG_LEVEL_INFO, 0x1, RINGLOG_U64("a", seq), \
		      RINGLOG_U64("b", seq), RINGLOG_U64("c", seq), RINGLOG_U64("d", seq))
#define JOB_EMIT_WAIT(seq) \
	RINGLOG_EVENT_WAIT(bench_provider, 1000, "Std", RINGLOG_LEVEL_INFO, 0x1, RINGLOG_U64("a", seq), \
			   RINGLOG_U64("b", seq), RINGLOG_U64("c", seq), \
			   RINGLOG_STR("s", "fifteen chars.."))
#define JOB_EMIT_OFF(seq) \
	RINGLOG_EVENT(bench_provider, "Verbose", RINGLOG_LEVEL_VERBOSE, 0x1, RINGLOG_U64("a", seq), \
		      RINGLOG_U64("b", seq), RINGLOG_U64("c", seq), \
		      RINGLOG_STR("s", "fifteen chars.."))

/* The library connects in the background: be connected before timing, so
 * that the first events do not wait in a ring nobody drains. The Start
 * event is one more event in the store (the orchestrator subtracts it). */
static void job_connect(void)
{
	RINGLOG_EVENT(bench_provider, "Start", RINGLOG_LEVEL_INFO, 0x1, RINGLOG_U32("t", 0));
	ringlog_flush(2000);
}

static void job_flush(void)
{
	struct ringlog_overload_stats o;

	ringlog_flush(5000);
	ringlog_get_overload_stats(&o, sizeof(o));
	if (o.waits) /* KIND 4: what the waits cost, for bench-emit --emit-only */
		fprintf(stderr, "waits %llu mean_ns %llu max_ns %llu timeouts %llu\n",
			(unsigned long long)o.waits, (unsigned long long)(o.wait_ns / o.waits),
			(unsigned long long)o.wait_max_ns, (unsigned long long)o.wait_timeouts);
}

#include "job.h"

int main(int argc, char **argv)
{
	return job_main(argc, argv);
}
