/* bench/ship-latency.c - the delay from emit to `ringlog tail --nats`:
 * reads tail's JSON lines on stdin, takes each event's time_ns (its emit
 * time, wall clock) from the time the line arrives here, and after COUNT
 * events (or at the end of input) prints
 *   events N p50_ms X p99_ms Y max_ms Z
 * usage: ship-latency COUNT */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	size_t want = argc > 1 ? strtoul(argv[1], NULL, 10) : 0, n = 0, cap = 1 << 16;
	int64_t *lat = malloc(cap * sizeof(*lat));
	char line[8192];

	if (argc != 2 || !want || !lat) {
		fprintf(stderr, "usage: ship-latency COUNT\n");
		return 2;
	}
	while (n < want && fgets(line, sizeof(line), stdin)) {
		const char *t = strstr(line, "\"time_ns\":");
		struct timespec now;

		if (!t || !strstr(line, "\"type\":\"event\""))
			continue;
		clock_gettime(CLOCK_REALTIME, &now);
		if (n == cap) {
			int64_t *x = realloc(lat, (cap *= 2) * sizeof(*lat));

			if (!x)
				break;
			lat = x;
		}
		lat[n++] = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec -
			   strtoll(t + strlen("\"time_ns\":"), NULL, 10);
	}
	if (!n) {
		printf("events 0\n");
		return 1;
	}
	qsort(lat, n, sizeof(*lat), cmp);
	printf("events %zu p50_ms %.1f p99_ms %.1f max_ms %.1f\n", n, lat[n / 2] / 1e6,
	       lat[(size_t)((double)n * 0.99)] / 1e6, lat[n - 1] / 1e6);
	free(lat);
	return 0;
}
