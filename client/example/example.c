/* client/example/example.c - a program built against an installed
 * libringlog, the way a user builds one:
 *
 *   cc example.c $(pkg-config --cflags --libs ringlog)
 *   cmake -S . -B build && cmake --build build      (find_package(ringlog))
 */
#include <ringlog.h>
#include <stdio.h>

RINGLOG_PROVIDER_DEFINE(example, "Example.Installed");

int main(int argc, char **argv)
{
	const char *how = argc > 1 ? argv[1] : "unknown";

	RINGLOG_EVENT(example, "Hello", RINGLOG_LEVEL_INFO, 0x1, RINGLOG_STR("built_with", how),
		      RINGLOG_U32("answer", 42));
	/* Wait (bounded) until ringlogd holds the ring, then exit: what the
	 * program emitted is stored even though it exits at once. */
	if (ringlog_flush(5000) < 0) {
		fprintf(stderr, "example: ringlogd did not answer; the event waits in memory only\n");
		return 1;
	}
	return 0;
}
