/* tests/win/emit-win.c - a Windows program linked with ringlog.dll through
 * ringlog.lib, as a user's would be: THREADS threads each emit EVENTS
 * events "Tick" {thread: u32, seq: u64} of provider "Win.Test", then it
 * flushes and prints the library's counters.
 *
 * usage: emit-win.exe THREADS EVENTS [PAUSE_MS [EVERY]]: PAUSE_MS (default
 * 1) after each EVERY (default 1,000) events of a thread, to make a long
 * run, or (EVERY 1) a sparse one.
 */
#include <ringlog.h>

#include <stdio.h>
#include <stdlib.h>
#include <windows.h>

RINGLOG_PROVIDER_DEFINE(win_test, "Win.Test");

static long events, pause_ms = 1, every = 1000;

static DWORD WINAPI emitter(void *arg)
{
	uint32_t t = (uint32_t)(uintptr_t)arg;

	for (long i = 0; i < events; i++) {
		RINGLOG_EVENT(win_test, "Tick", RINGLOG_LEVEL_INFO, 0x1, RINGLOG_U32("thread", t),
			      RINGLOG_U64("seq", (uint64_t)i));
		/* now and then, room for a reader that drains on a timer */
		if (i % every == every - 1)
			Sleep((DWORD)pause_ms);
	}
	return 0;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 4;
	HANDLE th[64];
	struct ringlog_stats s;
	int flushed;

	events = argc > 2 ? atol(argv[2]) : 10000;
	pause_ms = argc > 3 ? atol(argv[3]) : 1;
	every = argc > 4 ? atol(argv[4]) : 1000;
	if (threads < 1 || threads > 64 || events < 0 || pause_ms < 0 || every < 1) {
		fprintf(stderr, "usage: emit-win.exe THREADS(1..64) EVENTS [PAUSE_MS [EVERY]]\n");
		return 2;
	}
	if (ringlog_open() < 0) {
		fprintf(stderr, "emit-win: ringlog_open failed\n");
		return 1;
	}
	for (int i = 0; i < threads; i++)
		th[i] = CreateThread(NULL, 0, emitter, (void *)(uintptr_t)i, 0, NULL);
	WaitForMultipleObjects((DWORD)threads, th, TRUE, INFINITE);
	flushed = ringlog_flush(10000);
	ringlog_get_stats(&s);
	printf("emit-win: flush %d, rings %llu, connects %llu, dropped %llu\n", flushed,
	       (unsigned long long)s.rings_created, (unsigned long long)s.connects,
	       (unsigned long long)(s.dropped_full + s.dropped_other));
	return flushed == 0 ? 0 : 1;
}
