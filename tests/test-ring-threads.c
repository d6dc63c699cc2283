/* tests/test-ring-threads.c - one producer and one consumer thread on
 * different cores, 50 million records each run, every record carrying a
 * sequence number and a checksum. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <criterion/criterion.h>

#include "helpers.h"

TestSuite(ring_threads, .fini = th_check_leaks);

#define RECORDS   50000000ull
#define TYPE_DATA RINGLOG_REC_USER_MIN

struct run {
	struct ringlog_producer p;
	struct ringlog_consumer c;
	void *mem;
	int keep_up;      /* producer waits for room instead of dropping */
	int slow_every;   /* consumer naps 20 us after each batch of this many */
	/* results, written by the consumer thread */
	uint64_t stored, lost, losses, bad;
	uint64_t next_seq;
};

/* Payload: seq (8), 0..31 filler bytes, checksum (8) of seq and filler. */
static uint64_t checksum(const uint8_t *b, uint32_t n, uint64_t seq)
{
	uint64_t h = seq ^ 0xcbf29ce484222325ull;

	for (uint32_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

static int consume(void *ctx, uint16_t type, uint16_t aux, const uint8_t *payload,
		   uint32_t len)
{
	struct run *r = ctx;
	uint64_t seq, sum;
	(void)aux;

	if (type == RINGLOG_REC_LOSS) {
		struct ringlog_rec_loss l;
		memcpy(&l, payload, sizeof(l));
		r->lost += l.records;
		r->losses++;
		r->next_seq += l.records;
		return 0;
	}
	memcpy(&seq, payload, 8);
	memcpy(&sum, payload + len - 8, 8);
	if (seq != r->next_seq || len < 16 || sum != checksum(payload + 8, len - 16, seq))
		r->bad++;
	r->next_seq = seq + 1;
	r->stored++;
	return 0;
}

static void *consumer_main(void *arg)
{
	struct run *r = arg;
	uint64_t batches = 0;

	th_pin_cpu(1);
	for (;;) {
		long n = ringlog_cons_drain(&r->c, SIZE_MAX, consume, r);
		cr_assert_geq(n, 0, "drain failed: %s", r->c.why ? r->c.why : "?");
		if (n == 0 && ringlog_cons_done(&r->c))
			break;
		if (r->slow_every && n > 0 && ++batches % 4 == 0) {
			struct timespec ts = { 0, 20000 };
			nanosleep(&ts, NULL);
		}
	}
	r->lost += ringlog_cons_pending_loss(&r->c).records;
	return NULL;
}

static void produce(struct run *r)
{
	struct ringlog_producer *p = &r->p;
	uint8_t filler[32];

	th_pin_cpu(0);
	for (uint64_t seq = 0; seq < RECORDS; seq++) {
		uint32_t n = (uint32_t)(seq % 32), len = 16 + n;

		if (r->keep_up && p->pos + ringlog_rec_total(len) > p->limit) {
			/* Flow control for the keep-up case: wait for room for
			 * the record and a worst-case PAD, so nothing drops. */
			while (ringlog_prod_free(p) < 2 * ringlog_rec_total(len))
				__builtin_ia32_pause();
		}
		uint8_t *dst = ringlog_prod_reserve(p, len, TYPE_DATA, 0);
		if (!dst)
			continue; /* dropped and counted by the ring */
		for (uint32_t i = 0; i < n; i++)
			filler[i] = (uint8_t)(seq >> (i & 7)) + (uint8_t)i;
		uint64_t sum = checksum(filler, n, seq);
		memcpy(dst, &seq, 8);
		memcpy(dst + 8, filler, n);
		memcpy(dst + 8 + n, &sum, 8);
		ringlog_prod_commit(p);
	}
	while (ringlog_prod_flush_loss(p) != 0)
		__builtin_ia32_pause();
	ringlog_prod_finish(p);
}

static void run_pair(struct run *r, uint64_t ring_size)
{
	pthread_t t;

	r->mem = th_ring_alloc(ring_size);
	cr_assert_eq(ringlog_prod_init(&r->p, r->mem, ring_size, 1, 1, 0), 0);
	cr_assert_eq(ringlog_cons_attach(&r->c, r->mem, RINGLOG_RING_HEADER_SIZE + ring_size), 0);
	cr_assert_eq(pthread_create(&t, NULL, consumer_main, r), 0);
	produce(r);
	pthread_join(t, NULL);
	free(r->mem);
}

Test(ring_threads, keeping_up_consumer_gets_all_50m_records_in_order, .timeout = 300)
{
	struct run r = { .keep_up = 1 };

	run_pair(&r, 1 << 20);
	cr_assert_eq(r.bad, 0, "%llu records out of order or damaged", (unsigned long long)r.bad);
	cr_assert_eq(r.lost, 0);
	cr_assert_eq(r.stored, RECORDS);
}

Test(ring_threads, slow_consumer_stored_plus_lost_equals_produced, .timeout = 300)
{
	struct run r = { .slow_every = 1 };

	run_pair(&r, 16 << 10);
	cr_log_info("slow consumer: %llu stored, %llu lost in %llu gaps",
		    (unsigned long long)r.stored, (unsigned long long)r.lost,
		    (unsigned long long)r.losses);
	cr_assert_eq(r.bad, 0, "%llu records out of order or damaged", (unsigned long long)r.bad);
	cr_assert_gt(r.lost, 0, "the consumer was meant to fall behind");
	cr_assert_gt(r.stored, 0);
	cr_assert_eq(r.stored + r.lost, RECORDS, "stored %llu + lost %llu != produced %llu",
		     (unsigned long long)r.stored, (unsigned long long)r.lost, RECORDS);
}
