/* tests/flight-prog.c - a real program for the flight recorder's tests
 * (test-flight.c).
 *
 * usage: test-flight-prog [--rate N] [--count N] [--error-at K]
 *                         [--trigger-at K] [--segv-at K] [--progress FILE]
 *
 * Emits Test.Flight Verbose{seq} (level 5) N times a second (default 1000),
 * seq from 1, with Info{seq} (level 4) every 10th, until --count events (0:
 * until killed). At seq K: --error-at emits Error{seq} (level 2),
 * --trigger-at calls ringlog_trigger("flight-prog trigger"), --segv-at
 * dies of SIGSEGV, its handler calling ringlog_trigger() first as a crash
 * handler would. It first emits Start (info) and waits until ringlogd
 * enables verbose, so that seq 1 is the first event the daemon sees.
 * --progress keeps the last seq emitted in FILE (a u64 in a
 * shared mapping), so that a test that kills it knows what was committed.
 * Prints "emitted N" at a normal exit. */
#define _GNU_SOURCE
#include <ringlog.h>

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

RINGLOG_PROVIDER_DEFINE(flight_provider, "Test.Flight");

static void on_segv(int sig)
{
	/* what a crash handler does: ask for the snapshot, then die */
	ringlog_trigger("SIGSEGV in test-flight-prog");
	signal(sig, SIG_DFL);
	raise(sig);
}

int main(int argc, char **argv)
{
	long rate = 1000, count = 0, error_at = -1, trigger_at = -1, segv_at = -1;
	uint64_t *progress = NULL;
	struct timespec gap;
	/* a page that faults on any access: a real SIGSEGV, which the
	 * sanitizers do not intercept as they would a null pointer */
	volatile int *bad = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	for (int i = 1; i + 1 < argc; i += 2) {
		long v = strtol(argv[i + 1], NULL, 10);

		if (!strcmp(argv[i], "--rate"))
			rate = v > 0 ? v : 1;
		else if (!strcmp(argv[i], "--count"))
			count = v;
		else if (!strcmp(argv[i], "--error-at"))
			error_at = v;
		else if (!strcmp(argv[i], "--trigger-at"))
			trigger_at = v;
		else if (!strcmp(argv[i], "--segv-at"))
			segv_at = v;
		else if (!strcmp(argv[i], "--progress")) {
			int fd = open(argv[i + 1], O_RDWR | O_CREAT, 0600);

			if (fd < 0 || ftruncate(fd, 4096) < 0 ||
			    (progress = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) ==
				    MAP_FAILED) {
				perror("progress");
				return 1;
			}
			close(fd);
		} else {
			fprintf(stderr, "test-flight-prog: unknown option %s\n", argv[i]);
			return 2;
		}
	}
	signal(SIGSEGV, on_segv);
	/* Start comes first whatever the daemon has enabled: the tests count
	 * it among the events before seq 1. (It was emitted inside the wait
	 * below, so a daemon that had enabled Verbose before main() got here
	 * saw no Start, and a test counted one event too many as lost.) */
	RINGLOG_EVENT(flight_provider, "Start", RINGLOG_LEVEL_INFO, 0x1, RINGLOG_U64("seq", 0));
	/* Verbose is the daemon's to enable (flight_level): wait for it, so
	 * that seq 1 is the first event it sees (bounded: 10 s). */
	for (int i = 0; i < 10000 && !RINGLOG_ENABLED(flight_provider, RINGLOG_LEVEL_VERBOSE, 0x1); i++) {
		struct timespec ms = { 0, 1000000 };

		nanosleep(&ms, NULL);
	}
	gap.tv_sec = 0;
	gap.tv_nsec = 1000000000L / rate;
	for (long seq = 1; !count || seq <= count; seq++) {
		RINGLOG_EVENT(flight_provider, "Verbose", RINGLOG_LEVEL_VERBOSE, 0x1,
			      RINGLOG_U64("seq", (uint64_t)seq));
		if (seq % 10 == 0)
			RINGLOG_EVENT(flight_provider, "Info", RINGLOG_LEVEL_INFO, 0x1,
				      RINGLOG_U64("seq", (uint64_t)seq));
		if (seq == error_at)
			RINGLOG_EVENT(flight_provider, "Error", RINGLOG_LEVEL_ERROR, 0x1,
				      RINGLOG_U64("seq", (uint64_t)seq));
		if (progress)
			__atomic_store_n(progress, (uint64_t)seq, __ATOMIC_RELEASE);
		if (seq == trigger_at && ringlog_trigger("flight-prog trigger") < 0)
			fprintf(stderr, "test-flight-prog: ringlog_trigger() found no ring\n");
		if (seq == segv_at)
			*bad = 1; /* SIGSEGV */
		nanosleep(&gap, NULL);
	}
	printf("emitted %ld\n", count);
	return 0;
}
