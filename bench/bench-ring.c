/* bench/bench-ring.c - producer cost of the bare ring (proto/ringbuf.h) for
 * a 48-byte record: 8-byte header, TSC timestamp, three 8-byte integers and
 * an 8-byte string, with a batching consumer draining on the other core.
 *
 * The producer's cost is measured over batches of 64 calls timed with the
 * TSC (timing single calls would cost more than the call); each batch
 * yields one per-record sample. Prints a Markdown table.
 *
 * usage: bench-ring [--records N] [--ring-size BYTES] [--runs R]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench-util.h"
#include "ringbuf.h"

#define BATCH 64
#define TYPE_EVENT RINGLOG_REC_USER_MIN

struct event48 { /* payload: 40 bytes, + 8-byte record header = 48 */
	uint64_t ts;
	uint64_t a, b, c;
	char s[8];
};

struct shared {
	struct ringlog_consumer c;
	volatile int done;
	uint64_t stored, lost;
	uint8_t *sink; /* the consumer copies records out, like the daemon */
	size_t sink_off;
};

static int consume(void *ctx, uint16_t type, uint16_t aux, const uint8_t *p, uint32_t len)
{
	struct shared *sh = ctx;
	(void)aux;

	if (type == RINGLOG_REC_LOSS) {
		struct ringlog_rec_loss l;
		memcpy(&l, p, sizeof(l));
		sh->lost += l.records;
		return 0;
	}
	if (sh->sink_off + len > (1u << 20))
		sh->sink_off = 0;
	memcpy(sh->sink + sh->sink_off, p, len);
	sh->sink_off += len;
	sh->stored++;
	return 0;
}

#if defined(__x86_64__) || defined(__i386__)
#define cpu_relax() __builtin_ia32_pause()
#else
#define cpu_relax() ((void)0)
#endif

/* Ticks the consumer waits between drains (set from the TSC's rate). */
static uint64_t pause_ticks;

/* The consumer lets records pile up between drains, as the daemon does
 * (it drains a ring every millisecond or so): a consumer polling right
 * behind the producer reads the producer's position and the lines it has
 * just written as soon as they change, so each of the producer's next
 * stores to them waits for the line to come back (cache-line ping-pong:
 * 32 ns per record instead of 10-15 on a quiet machine), which measures
 * the bench, not the ring. 20 us is ~600 records at 30 M/s, 1/36 of the
 * default ring, and the wait touches no shared line. */
static void *consumer_main(void *arg)
{
	struct shared *sh = arg;

	bu_pin_cpu(1);
	for (;;) {
		long n = ringlog_cons_drain(&sh->c, SIZE_MAX, consume, sh);
		if (n < 0) {
			fprintf(stderr, "bench-ring: ring corrupt: %s\n", sh->c.why);
			exit(1);
		}
		if (n == 0 && ringlog_cons_done(&sh->c))
			break;
		for (uint64_t t0 = bu_ticks(); bu_ticks() - t0 < pause_ticks;)
			cpu_relax();
	}
	sh->lost += ringlog_cons_pending_loss(&sh->c).records;
	return NULL;
}

struct result {
	double p50, p99, p999, max, mrec_s;
	uint64_t stored, lost;
};

static int run_once(uint64_t records, uint64_t ring_size, double tpn, struct result *res)
{
	struct ringlog_producer p;
	struct shared sh = { 0 };
	size_t nsamples = records / BATCH;
	uint64_t *samples = malloc(nsamples * sizeof(*samples));
	void *mem = aligned_alloc(4096, RINGLOG_RING_HEADER_SIZE + ring_size);
	pthread_t t;

	sh.sink = malloc(1u << 20);
	if (!samples || !mem || !sh.sink)
		return -ENOMEM;
	/* Fault every page in before timing: first touches inside the timed
	 * loop would measure the kernel, not the ring. */
	memset(mem, 0, RINGLOG_RING_HEADER_SIZE + ring_size);
	memset(samples, 0, nsamples * sizeof(*samples));
	memset(sh.sink, 0, 1u << 20);
	ringlog_prod_init(&p, mem, ring_size, 0, 0, 0);
	ringlog_cons_attach(&sh.c, mem, RINGLOG_RING_HEADER_SIZE + ring_size);
	pthread_create(&t, NULL, consumer_main, &sh);
	bu_pin_cpu(0);

	uint64_t start = bu_now_ns();
	for (size_t b = 0; b < nsamples; b++) {
		uint64_t t0 = bu_ticks();
		for (int i = 0; i < BATCH; i++) {
			struct event48 *e = ringlog_prod_reserve(&p, sizeof(*e), TYPE_EVENT, 1);
			if (e) {
				e->ts = bu_ticks();
				e->a = b;
				e->b = (uint64_t)i;
				e->c = b ^ (uint64_t)i;
				memcpy(e->s, "latency", 8);
				ringlog_prod_commit(&p);
			}
		}
		samples[b] = bu_ticks() - t0;
	}
	uint64_t elapsed = bu_now_ns() - start;
	while (ringlog_prod_flush_loss(&p) != 0)
		;
	ringlog_prod_finish(&p);
	pthread_join(t, NULL);

	bu_sort(samples, nsamples);
	double per = 1.0 / (tpn * BATCH); /* ticks per batch -> ns per record */
	res->p50 = (double)bu_quantile(samples, nsamples, 0.50) * per;
	res->p99 = (double)bu_quantile(samples, nsamples, 0.99) * per;
	res->p999 = (double)bu_quantile(samples, nsamples, 0.999) * per;
	res->max = (double)samples[nsamples - 1] * per;
	res->mrec_s = (double)(nsamples * BATCH) / ((double)elapsed / 1e9) / 1e6;
	res->stored = sh.stored;
	res->lost = sh.lost;
	free(samples);
	free(mem);
	free(sh.sink);
	return 0;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double med(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_d);
	return v[n / 2];
}

/* A row: the median of the runs, and their spread when there are several. */
static void row(const char *label, double *v, int n, const char *target)
{
	double m = med(v, n); /* sorts v */

	if (n > 1)
		printf("| %s | %.1f (%.1f..%.1f) | %s |\n", label, m, v[0], v[n - 1], target);
	else
		printf("| %s | %.1f | %s |\n", label, m, target);
}

int main(int argc, char **argv)
{
	uint64_t records = 20000000, ring_size = 1 << 20;
	int runs = 3;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--records") && i + 1 < argc)
			records = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--ring-size") && i + 1 < argc)
			ring_size = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
			runs = atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: %s [--records N] [--ring-size BYTES] [--runs R]\n", argv[0]);
			return argv[i][1] == 'h' || !strcmp(argv[i], "--help") ? 0 : 2;
		}
	}
	if (runs < 1 || runs > 99 || records < BATCH) {
		fprintf(stderr, "bench-ring: --runs must be 1..99 and --records at least %d\n", BATCH);
		return 2;
	}

	double tpn = bu_ticks_per_ns();

	pause_ticks = (uint64_t)(20000 * tpn);
	struct result warm;

	/* One discarded run: CPU frequency, caches and the allocator settle. */
	if (run_once(records / 4 < 1000000 ? records : records / 4, ring_size, tpn, &warm) < 0) {
		fprintf(stderr, "bench-ring: out of memory\n");
		return 1;
	}
	double p50[99], p99[99], p999[99], mx[99], rate[99], line[99];
	uint64_t stored = 0, lost = 0;

	for (int r = 0; r < runs; r++) {
		struct result res;
		if (run_once(records, ring_size, tpn, &res) < 0) {
			fprintf(stderr, "bench-ring: out of memory\n");
			return 1;
		}
		p50[r] = res.p50; p99[r] = res.p99; p999[r] = res.p999;
		mx[r] = res.max; rate[r] = res.mrec_s;
		stored += res.stored;
		lost += res.lost;
		line[r] = bu_line_transfer_ns(tpn);
	}
	printf("## Ring producer, 48-byte record, consumer on the other core\n\n");
	printf("%llu records x %d runs, ring %llu KiB, TSC %.3f GHz; "
	       "cost per record from batches of %d calls; after one discarded warm-up run;"
	       " median of runs (lowest..highest).\n\n",
	       (unsigned long long)records, runs, (unsigned long long)(ring_size >> 10),
	       tpn, BATCH);
	printf("| metric | measured | target |\n|---|---:|---:|\n");
	row("producer p50 (ns/record)", p50, runs, "<= 15");
	row("producer p99 (ns/record)", p99, runs, "<= 60");
	row("producer p99.9 (ns/record)", p999, runs, "");
	row("producer max (ns/record)", mx, runs, "");
	row("throughput (M records/s)", rate, runs, "");
	row("a cache line from one CPU to the other, after each run (ns, one way)", line, runs,
	    "");
	printf("| stored / lost (all runs) | %llu / %llu | |\n",
	       (unsigned long long)stored, (unsigned long long)lost);
	return 0;
}
