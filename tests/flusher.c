/* tests/flusher.c - a program a test drives line by line, to show what
 * ringlog_flush() and ringlog_close() promise while the daemon comes and
 * goes. Commands on stdin, one answer line each on stdout:
 *   emit N       N events Seq{seq} (seq counts from 0 over the process)
 *   flush MS     ringlog_flush(MS): "flush RC unstored N ms T"
 *   close MS     ringlog_close(MS): "close RC unstored N ms T"
 *   exit         return from main: the library's at-exit path runs
 * RC is 0 or the negative errno; T the milliseconds the call took.
 */
#define _GNU_SOURCE
#include <ringlog.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

RINGLOG_PROVIDER_DEFINE(flusher_provider, "Test.Flusher");

static uint64_t seq;

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int main(void)
{
	char line[128];

	setvbuf(stdout, NULL, _IOLBF, 0);
	while (fgets(line, sizeof(line), stdin)) {
		struct ringlog_stats st;
		long n = 0;
		double t0 = now_ms();
		int rc;

		if (sscanf(line, "emit %ld", &n) == 1) {
			for (long i = 0; i < n; i++, seq++)
				RINGLOG_EVENT(flusher_provider, "Seq", RINGLOG_LEVEL_WARNING, 0x1,
					      RINGLOG_U64("seq", seq));
			printf("emitted %llu\n", (unsigned long long)seq);
			continue;
		}
		if (!strncmp(line, "exit", 4))
			return 0;
		if (sscanf(line, "flush %ld", &n) == 1)
			rc = ringlog_flush((int)n);
		else if (sscanf(line, "close %ld", &n) == 1)
			rc = ringlog_close((int)n);
		else
			return 2;
		ringlog_get_stats(&st);
		printf("%.5s %d unstored %llu ms %.0f\n", line, rc, (unsigned long long)st.unstored,
		       now_ms() - t0);
	}
	return 0;
}
