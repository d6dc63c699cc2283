/* bench/job-lttng.c - the benchmark's emitting side through LTTng-UST 2.13
 * (bench/job.h has the loop; bench/lttng-tp.h the tracepoints). Built only
 * when liblttng-ust-dev is installed; LTTng is the peer we measure against,
 * never a dependency of ringlog. */
#define _GNU_SOURCE /* pthread barriers (job.h) */
#define LTTNG_UST_TRACEPOINT_DEFINE
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#include "lttng-tp.h"

#define JOB_EMIT(seq) lttng_ust_tracepoint(bench, std, seq, seq, seq, "fifteen chars..")
#define JOB_EMIT_48(seq) lttng_ust_tracepoint(bench, small, seq, seq, seq, seq)
#define JOB_EMIT_OFF(seq) lttng_ust_tracepoint(bench, verbose, seq, seq, seq, "fifteen chars..")

/* liblttng-ust registers with the session daemon in its constructor and
 * waits for it (LTTNG_UST_REGISTER_TIMEOUT): enabled before main(). */
static void job_connect(void)
{
}

/* The consumer daemon drains the buffers; `lttng stop` waits for it. */
static void job_flush(void)
{
}

#include "job.h"

int main(int argc, char **argv)
{
	return job_main(argc, argv);
}
