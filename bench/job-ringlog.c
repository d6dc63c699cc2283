/* bench/job-ringlog.c - the benchmark's emitting side through libringlog
 * (bench/job.h has the loop and the usage). */
#define _GNU_SOURCE /* pthread barriers (job.h) */
#include <ringlog.h>

RINGLOG_PROVIDER_DEFINE(bench_provider, "Bench.Emit");

#define JOB_EMIT(seq) \
	RINGLOG_EVENT(bench_provider, "Std", RINGLOG_LEVEL_INFO, 0x1, RINGLOG_U64("a", seq), \
		      RINGLOG_U64("b", seq), RINGLOG_U64("c", seq), \
		      RINGLOG_STR("s", "fifteen chars.."))
#define JOB_EMIT_48(seq) \
	RINGLOG_EVENT(bench_provider, "Small", RINGLOG_LEVEL_INFO, 0x1, RINGLOG_U64("a", seq), \
		      RINGLOG_U64("b", seq), RINGLOG_U64("c", seq), RINGLOG_U64("d", seq))
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
	ringlog_flush(5000);
}

#include "job.h"

int main(int argc, char **argv)
{
	return job_main(argc, argv);
}
