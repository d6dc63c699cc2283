/* tests/emitter.c - a real client process for the integration tests.
 * usage: test-emitter THREADS EVENTS [--wait-daemon SECONDS]
 * Each thread emits EVENTS events {thread, seq, text}; with --wait-daemon
 * the process waits (bounded) until a daemon holds its rings before it
 * exits, so events emitted before the daemon started get stored. */
#define _GNU_SOURCE
#include <ringlog.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

RINGLOG_PROVIDER_DEFINE(test_provider, "Test.Emitter");

static long events;

static void *run(void *arg)
{
	uint32_t t = (uint32_t)(uintptr_t)arg;

	for (long i = 0; i < events; i++)
		RINGLOG_EVENT(test_provider, "Tick", RINGLOG_LEVEL_INFO, 0x1,
			      RINGLOG_U32("thread", t), RINGLOG_U64("seq", (uint64_t)i),
			      RINGLOG_STR("text", "fifteen chars.."));
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = argc > 2 ? atoi(argv[1]) : 1;
	double wait = argc > 4 && !strcmp(argv[3], "--wait-daemon") ? atof(argv[4]) : 0;
	pthread_t th[256];
	struct ringlog_stats st;

	events = argc > 2 ? atol(argv[2]) : 1000;
	if (threads < 1 || threads > 256)
		return 2;
	for (int i = 0; i < threads; i++)
		pthread_create(&th[i], NULL, run, (void *)(uintptr_t)i);
	for (int i = 0; i < threads; i++)
		pthread_join(th[i], NULL);
	for (double w = 0; w < wait; w += 0.05) {
		if (ringlog_flush(1000) == 0)
			break;
		struct timespec ts = { 0, 50000000 };
		nanosleep(&ts, NULL);
	}
	ringlog_get_stats(&st);
	printf("dropped_full=%llu dropped_other=%llu\n", (unsigned long long)st.dropped_full,
	       (unsigned long long)st.dropped_other);
	return ringlog_flush(5000) == 0 ? 0 : 3;
}
