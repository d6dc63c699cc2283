/* tests/test-ring-hostile.c - the consumer against rings a hostile or buggy
 * producer could write: random bytes, adversarial positions and lengths,
 * and a producer scribbling while the consumer drains. The rings sit in
 * exactly-sized heap blocks, so under AddressSanitizer any read outside
 * them aborts the test. Every outcome must be records or an error code,
 * within a bounded number of steps. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "helpers.h"

TestSuite(ring_hostile, .fini = th_check_leaks);

#define CASES 100000

struct bounds {
	const uint8_t *lo, *hi;
	uint64_t calls;
};

static int in_bounds(void *ctx, uint16_t type, uint16_t aux, const uint8_t *payload,
		     uint32_t len)
{
	struct bounds *b = ctx;
	(void)aux;

	b->calls++;
	if (type == RINGLOG_REC_LOSS) {
		cr_assert(len == sizeof(struct ringlog_rec_loss) ||
			  len == sizeof(struct ringlog_rec_loss_ext) ||
			  len == sizeof(struct ringlog_rec_loss_lvl), "LOSS of %u bytes", len);
		return 0;
	}
	cr_assert(payload >= b->lo && payload + len <= b->hi,
		  "payload [%p,+%u) escapes the data area", (const void *)payload, len);
	cr_assert_leq(len, RINGLOG_REC_MAX_LEN);
	/* touch every byte, as a real consumer copying it would */
	volatile uint8_t sink = 0;
	for (uint32_t i = 0; i < len; i++)
		sink ^= payload[i];
	(void)sink;
	return 0;
}

/* Write a plausible stream of records, so damage lands among real ones. */
static void fill_valid(void *mem, uint64_t size, uint64_t *rnd)
{
	struct ringlog_producer p;
	struct ringlog_consumer c;
	struct bounds b = { 0 };
	uint8_t buf[600] = { 0 };

	ringlog_prod_init(&p, mem, size, 1, 1, 0);
	ringlog_cons_attach(&c, mem, RINGLOG_RING_HEADER_SIZE + size);
	b.lo = c.data;
	b.hi = c.data + size;
	int n = (int)(th_rand(rnd) % 200);
	for (int i = 0; i < n; i++) {
		ringlog_prod_write(&p, RINGLOG_REC_USER_MIN + (uint16_t)(th_rand(rnd) % 8), 0,
				   buf, (uint32_t)(th_rand(rnd) % sizeof(buf)));
		if (th_rand(rnd) % 4 == 0)
			ringlog_cons_drain(&c, th_rand(rnd) % 4096, in_bounds, &b);
	}
}

static void put64(void *mem, size_t off, uint64_t v) { memcpy((uint8_t *)mem + off, &v, 8); }

/* Values a producer might store to confuse a consumer. */
static uint64_t nasty(uint64_t *rnd, uint64_t near, uint64_t size)
{
	switch (th_rand(rnd) % 8) {
	case 0: return near - 8 * (1 + th_rand(rnd) % 64);  /* backwards */
	case 1: return near + size + 8;                      /* past one lap */
	case 2: return near + 1 + th_rand(rnd) % 7;          /* misaligned */
	case 3: return UINT64_MAX - th_rand(rnd) % 64;       /* about to wrap */
	case 4: return near + size;                          /* exactly one lap */
	case 5: return th_rand(rnd);
	case 6: return near + 8 * (th_rand(rnd) % (size / 8 + 1));
	default: return 0;
	}
}

/* Record-header words designed to break bounds arithmetic. */
static uint64_t nasty_hdr(uint64_t *rnd, uint64_t size)
{
	static const uint32_t lens[] = { 0xffffffffu, 0xfffffff8u, 0x7fffffffu, 0x80000000u,
					 RINGLOG_REC_MAX_LEN + 1, 1016, 1017, 4088, 4096, 0 };
	uint32_t len = th_rand(rnd) % 2 ? lens[th_rand(rnd) % 10] : (uint32_t)(th_rand(rnd) % (size + 64));
	uint16_t type = (uint16_t)(th_rand(rnd) % 3 ? th_rand(rnd) % 70 : th_rand(rnd));
	return (uint64_t)len | (uint64_t)type << 32 | (th_rand(rnd) & 0xffff000000000000ull);
}

static void mutate(void *mem, uint64_t size, uint64_t *rnd)
{
	struct ringlog_ring_hdr *h = mem;
	uint8_t *data = (uint8_t *)mem + RINGLOG_RING_HEADER_SIZE;
	int kind = (int)(th_rand(rnd) % 7);

	switch (kind) {
	case 0: /* random bytes anywhere in the data area */
		for (int i = 0, n = 1 + (int)(th_rand(rnd) % 16); i < n; i++)
			data[th_rand(rnd) % size] = (uint8_t)th_rand(rnd);
		break;
	case 1: /* a hostile record header at a record-aligned offset */
		put64(data, (th_rand(rnd) % (size / 8)) * 8, nasty_hdr(rnd, size));
		break;
	case 2: /* producer position */
		h->prod_pos = nasty(rnd, h->prod_pos, size);
		break;
	case 3: /* consumer position, as a restarted daemon would find it */
		h->cons_pos = nasty(rnd, h->cons_pos, size);
		break;
	case 4: /* header identity fields */
		put64(mem, 8 * (th_rand(rnd) % 5), th_rand(rnd) % 2 ? th_rand(rnd) : size * 2);
		break;
	case 5: /* the whole data area random */
		for (uint64_t i = 0; i < size; i += 8)
			put64(data, i, th_rand(rnd));
		break;
	default: { /* a fake LOSS record with absurd counts */
		uint64_t off = h->cons_pos & (size - 1) & ~7ull;
		if (off > size - 16)
			off = size - 16;
		put64(data, off, (uint64_t)32 | (uint64_t)RINGLOG_REC_LOSS << 32);
		put64(data, off + 8, th_rand(rnd));
		break;
	}
	}
}

/* Drain until empty or an error. Each drain must end in size / 8 steps;
 * the whole case in a few of them, since at most one lap is pending. */
static long drain_all(void *mem, uint64_t size, uint64_t *rnd)
{
	struct ringlog_consumer c;
	struct bounds b;
	long r = ringlog_cons_attach(&c, mem, RINGLOG_RING_HEADER_SIZE + size);

	if (r < 0) {
		cr_assert(r == -EBADMSG || r == -EPROTO, "attach returned %ld", r);
		cr_assert_not_null(c.why);
		return r;
	}
	b.lo = c.data;
	b.hi = c.data + size;
	for (int i = 0; i < 8; i++) {
		b.calls = 0;
		r = ringlog_cons_drain(&c, 1 + th_rand(rnd) % (2 * size), in_bounds, &b);
		cr_assert_leq(b.calls, size / 8);
		if (r < 0) {
			cr_assert_eq(r, -EBADMSG, "drain returned %ld", r);
			cr_assert_not_null(c.why);
			cr_assert_eq(ringlog_cons_drain(&c, SIZE_MAX, in_bounds, &b), -EBADMSG,
				     "corruption is sticky");
			return r;
		}
		if (r == 0)
			break;
	}
	return 0;
}

Test(ring_hostile, hundred_thousand_damaged_rings_never_escape_or_hang, .timeout = 300)
{
	uint64_t rnd = 0x5eed0001, errors = 0, clean = 0;
	static const uint64_t sizes[] = { 4096, 8192 };

	for (int i = 0; i < CASES; i++) {
		uint64_t size = sizes[i & 1];
		void *mem = th_ring_alloc(size);

		memset(mem, 0, RINGLOG_RING_HEADER_SIZE + size);
		fill_valid(mem, size, &rnd);
		for (int m = 0, n = 1 + (int)(th_rand(&rnd) % 3); m < n; m++)
			mutate(mem, size, &rnd);
		if (drain_all(mem, size, &rnd) < 0)
			errors++;
		else
			clean++;
		free(mem);
	}
	cr_log_info("%d hostile rings: %llu detected as corrupt, %llu read cleanly", CASES,
		    (unsigned long long)errors, (unsigned long long)clean);
	cr_assert_gt(errors, CASES / 4, "most mutations must be detected");
}

Test(ring_hostile, pure_random_bytes_are_refused, .timeout = 120)
{
	uint64_t rnd = 0x5eed0002;

	for (int i = 0; i < 20000; i++) {
		uint64_t size = 4096;
		uint8_t *mem = th_ring_alloc(size);

		for (uint64_t k = 0; k < RINGLOG_RING_HEADER_SIZE + size; k += 8)
			put64(mem, k, th_rand(&rnd));
		if (i & 1) { /* make it through attach, then random data */
			struct ringlog_ring_hdr *h = (void *)mem;
			h->magic = RINGLOG_RING_MAGIC;
			h->version = RINGLOG_RING_VERSION;
			h->header_size = RINGLOG_RING_HEADER_SIZE;
			h->incompat_flags = 0;
			h->data_size = size;
			h->cons_pos = (th_rand(&rnd) % 1000) * 8;
			h->prod_pos = h->cons_pos + (th_rand(&rnd) % (size / 8 + 1)) * 8;
		}
		drain_all(mem, size, &rnd);
		free(mem);
	}
}

Test(ring_hostile, each_adversarial_case_gets_its_error)
{
	uint64_t size = 4096;
	struct ringlog_producer p;
	struct ringlog_consumer c;
	struct bounds b = { 0 };
	uint8_t *mem = th_ring_alloc(size), *data = mem + RINGLOG_RING_HEADER_SIZE;
	struct ringlog_ring_hdr *h = (void *)mem;
	const struct { uint64_t prod, hdr; const char *why; } cases[] = {
		{ 0, 0, NULL },
		{ 16, (uint64_t)0xfffffff8u | (uint64_t)16 << 32, "record is longer than this ring allows" },
		{ 16, (uint64_t)16 | (uint64_t)16 << 32, "record extends past the producer position" },
		{ 16, (uint64_t)8 | (uint64_t)0 << 32, "unknown record type" },
		{ 16, (uint64_t)8 | (uint64_t)1 << 32, "PAD record does not end at the end of the data area" },
		{ 4096, (uint64_t)4088 | (uint64_t)1 << 32, NULL }, /* a full-lap PAD is fine */
		{ 16, (uint64_t)8 | (uint64_t)2 << 32, "LOSS record has the wrong length" },
		{ 12, (uint64_t)0 | (uint64_t)16 << 32, "position is not 8-byte aligned" },
		{ 4104, (uint64_t)0 | (uint64_t)16 << 32, "producer position is more than one lap ahead" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ringlog_prod_init(&p, mem, size, 0, 0, 0);
		memcpy(data, &cases[i].hdr, 8);
		h->prod_pos = cases[i].prod;
		/* bad positions are caught at attach already */
		int bad_pos = cases[i].prod % 8 || cases[i].prod > size;
		cr_assert_eq(ringlog_cons_attach(&c, mem, RINGLOG_RING_HEADER_SIZE + size),
			     bad_pos ? -EBADMSG : 0, "case %zu attach", i);
		if (bad_pos) {
			cr_assert_str_eq(c.why, cases[i].why, "case %zu", i);
			continue;
		}
		b.lo = c.data;
		b.hi = c.data + size;
		long r = ringlog_cons_drain(&c, SIZE_MAX, in_bounds, &b);
		if (cases[i].why) {
			cr_assert_eq(r, -EBADMSG, "case %zu", i);
			cr_assert_str_eq(c.why, cases[i].why, "case %zu", i);
		} else {
			cr_assert_geq(r, 0, "case %zu: %s", i, c.why ? c.why : "");
		}
	}
	/* a position that goes backwards after attach */
	ringlog_prod_init(&p, mem, size, 0, 0, 0);
	ringlog_cons_attach(&c, mem, RINGLOG_RING_HEADER_SIZE + size);
	ringlog_prod_write(&p, 16, 0, "abcdefgh", 8);
	cr_assert_eq(ringlog_cons_drain(&c, SIZE_MAX, in_bounds, &b), 1);
	h->prod_pos = 0;
	cr_assert_eq(ringlog_cons_drain(&c, SIZE_MAX, in_bounds, &b), -EBADMSG);
	cr_assert_str_eq(c.why, "producer position is behind the consumer position");
	/* attach refuses a foreign layout */
	ringlog_prod_init(&p, mem, size, 0, 0, 0);
	h->version = 99;
	cr_assert_eq(ringlog_cons_attach(&c, mem, RINGLOG_RING_HEADER_SIZE + size), -EPROTO);
	ringlog_prod_init(&p, mem, size, 0, 0, 0);
	cr_assert_eq(ringlog_cons_attach(&c, mem, RINGLOG_RING_HEADER_SIZE + size / 2), -EBADMSG);
	cr_assert_str_eq(c.why, "data size does not match the mapping size");
	free(mem);
}

struct scribble {
	uint8_t *mem;
	uint64_t size;
	volatile int stop;
};

static void *scribbler(void *arg)
{
	struct scribble *s = arg;
	uint64_t rnd = 0x5eed0003;

	th_pin_cpu(0);
	while (!s->stop) {
		uint64_t off = th_rand(&rnd) % (RINGLOG_RING_HEADER_SIZE + s->size - 8);
		__atomic_store_n((uint64_t *)(void *)(s->mem + (off & ~7ull)), th_rand(&rnd),
				 __ATOMIC_RELAXED);
	}
	return NULL;
}

Test(ring_hostile, producer_scribbling_while_the_consumer_drains, .timeout = 120)
{
	struct scribble s = { .size = 4096 };
	uint64_t rnd = 0x5eed0004;
	pthread_t t;

	s.mem = th_ring_alloc(s.size);
	memset(s.mem, 0, RINGLOG_RING_HEADER_SIZE + s.size);
	cr_assert_eq(pthread_create(&t, NULL, scribbler, &s), 0);
	th_pin_cpu(1);
	for (int i = 0; i < 100000; i++) {
		struct ringlog_producer p;
		/* not atomic with the scribbler, on purpose: a torn header is
		 * exactly what a hostile producer can present */
		ringlog_prod_init(&p, s.mem, s.size, 0, 0, 0);
		__atomic_store_n(&((struct ringlog_ring_hdr *)(void *)s.mem)->prod_pos,
				 (th_rand(&rnd) % (s.size / 8 + 1)) * 8, __ATOMIC_RELAXED);
		drain_all(s.mem, s.size, &rnd);
	}
	s.stop = 1;
	pthread_join(t, NULL);
	free(s.mem);
}
