/* client/demo/demo.c - a program that emits events, as a service would.
 * usage: ringlog-demo [COUNT] [INTERVAL_MS] */
#define _GNU_SOURCE
#include <ringlog.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

RINGLOG_PROVIDER_DEFINE(demo_provider, "Acme.Demo");

int main(int argc, char **argv)
{
	long count = argc > 1 ? atol(argv[1]) : 10;
	long ms = argc > 2 ? atol(argv[2]) : 100;
	struct ringlog_activity act = { { 0x42 } };

	RINGLOG_EVENT_EX(demo_provider, RINGLOG_OPCODE_START, &act, "Run", RINGLOG_LEVEL_INFO, 0x1,
			 RINGLOG_I64("count", count));
	for (long i = 0; i < count; i++) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		RINGLOG_EVENT(demo_provider, "Request", RINGLOG_LEVEL_INFO, 0x2,
			      RINGLOG_U64("seq", (uint64_t)i), RINGLOG_STR("path", "/index.html"),
			      RINGLOG_U16("status", i % 7 ? 200 : 503), RINGLOG_F64("ms", 0.25 * (double)i),
			      RINGLOG_PID("pid", getpid()),
			      RINGLOG_TIME("at", (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec));
		if (i % 7 == 0)
			RINGLOG_EVENT(demo_provider, "Backend", RINGLOG_LEVEL_WARNING, 0x4,
				      RINGLOG_ERRNO("err", ECONNREFUSED), RINGLOG_HEX32("flags", 0xbeef),
				      RINGLOG_BOOL("retry", 1));
		RINGLOG_EVENT(demo_provider, "Detail", RINGLOG_LEVEL_VERBOSE, 0x8,
			      RINGLOG_U64("seq", (uint64_t)i));
		if (ms)
			usleep((useconds_t)ms * 1000);
	}
	RINGLOG_EVENT_EX(demo_provider, RINGLOG_OPCODE_STOP, &act, "Run", RINGLOG_LEVEL_INFO, 0x1,
			 RINGLOG_I64("count", count));
	return 0;
}
