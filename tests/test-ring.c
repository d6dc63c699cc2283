/* tests/test-ring.c - single-thread semantics of the ring (proto/ringbuf.c):
 * wrap-around, exact drop counting, LOSS records at the gap, zero-length and
 * oversized records, resuming after a consumer restart. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "helpers.h"

TestSuite(ring, .fini = th_check_leaks);

#define TYPE_DATA RINGLOG_REC_USER_MIN

/* What a test's consumer callback saw. */
struct seen {
	const uint8_t *lo, *hi; /* the data area: every payload must lie inside */
	uint64_t next_seq;      /* sequence number expected next */
	uint64_t records, lost_records, lost_bytes, losses;
	uint64_t gap_expected;  /* set by a LOSS record, checked by the next seq */
	int stop_after;         /* > 0: ask the ring to stop after this many */
};

/* Payload layout used here: 8-byte sequence number then th_fill() bytes. */
static int check_record(void *ctx, uint16_t type, uint16_t aux,
			const uint8_t *payload, uint32_t len)
{
	struct seen *s = ctx;

	if (s->stop_after > 0 && s->records >= (uint64_t)s->stop_after)
		return 1;
	if (type == RINGLOG_REC_LOSS) {
		struct ringlog_rec_loss l;
		memcpy(&l, payload, sizeof(l));
		s->lost_records += l.records;
		s->lost_bytes += l.bytes;
		s->losses++;
		cr_assert_eq(l.total_records, s->lost_records, "LOSS totals must accumulate");
		s->next_seq += l.records; /* the gap is exactly here */
		return 0;
	}
	cr_assert_eq(type, TYPE_DATA);
	cr_assert(payload >= s->lo && payload + len <= s->hi,
		  "payload [%p,+%u) outside the data area", (const void *)payload, len);
	if (len >= 8) {
		uint64_t seq;
		memcpy(&seq, payload, 8);
		cr_assert_eq(seq, s->next_seq, "record %llu arrived where %llu was expected",
			     (unsigned long long)seq, (unsigned long long)s->next_seq);
		cr_assert_eq(aux, (uint16_t)seq, "aux travels with the record");
		cr_assert_eq(th_check_fill(payload + 8, len - 8, seq), 0,
			     "payload of record %llu damaged", (unsigned long long)seq);
	}
	s->next_seq++;
	s->records++;
	return 0;
}

static int write_seq(struct ringlog_producer *p, uint64_t seq, uint32_t len)
{
	uint8_t *dst = ringlog_prod_reserve(p, len, TYPE_DATA, (uint16_t)seq);

	if (!dst)
		return len > p->max_len ? -EMSGSIZE : -ENOBUFS;
	if (len >= 8) {
		memcpy(dst, &seq, 8);
		th_fill(dst + 8, len - 8, seq);
	}
	ringlog_prod_commit(p);
	return 0;
}

static void *new_ring(struct ringlog_producer *p, struct ringlog_consumer *c,
		      struct seen *s, uint64_t size)
{
	void *mem = th_ring_alloc(size);

	cr_assert_eq(ringlog_prod_init(p, mem, size, 1, 1, 0), 0);
	cr_assert_eq(ringlog_cons_attach(c, mem, RINGLOG_RING_HEADER_SIZE + size), 0);
	memset(s, 0, sizeof(*s));
	s->lo = c->data;
	s->hi = c->data + size;
	return mem;
}

Test(ring, wraps_without_splitting_a_record_at_every_size)
{
	/* A 4 KiB ring takes every size 0..1016, a 64 KiB ring every size up to
	 * the global maximum; the position drifts through every offset. */
	static const uint64_t sizes[] = { 4096, 65536 };

	for (size_t r = 0; r < 2; r++) {
		struct ringlog_producer p;
		struct ringlog_consumer c;
		struct seen s;
		void *mem = new_ring(&p, &c, &s, sizes[r]);
		uint64_t seq = 0;

		for (uint32_t len = 8; len <= p.max_len; len++) {
			/* enough records of this size to go round the ring at
			 * least once in the small ring */
			uint32_t reps = sizes[r] == 4096 ? (uint32_t)(4096 / ringlog_rec_total(len)) + 2 : 2;

			for (uint32_t k = 0; k < reps; k++) {
				cr_assert_eq(write_seq(&p, seq++, len), 0, "len %u", len);
				cr_assert_eq(ringlog_cons_drain(&c, SIZE_MAX, check_record, &s), 1);
			}
		}
		cr_assert_eq(s.records, seq);
		cr_assert_eq(s.losses, 0);
		cr_assert_eq(p.max_len, sizes[r] == 4096 ? 1016u : RINGLOG_REC_MAX_LEN);
		free(mem);
	}
}

Test(ring, full_ring_drops_and_counts_exactly)
{
	struct ringlog_producer p;
	struct ringlog_consumer c;
	struct seen s;
	void *mem = new_ring(&p, &c, &s, 4096);
	uint64_t seq = 0, written = 0;
	const uint32_t len = 40; /* 48 bytes a record */

	while (write_seq(&p, seq, len) == 0) {
		seq++;
		written++;
	}
	cr_assert_eq(written, 4096 / 48, "a 4 KiB ring holds %d 48-byte records", 4096 / 48);
	cr_assert_eq(p.hdr->lost_records_total, 1);
	seq++; /* the one that failed above was dropped */
	for (int i = 0; i < 99; i++)
		cr_assert_eq(write_seq(&p, seq++, len), -ENOBUFS);
	cr_assert_eq(p.hdr->lost_records_total, 100);
	cr_assert_eq(p.hdr->lost_bytes_total, 100 * len);

	cr_assert_eq(ringlog_cons_drain(&c, SIZE_MAX, check_record, &s), (long)written);
	cr_assert_eq(s.losses, 0, "no LOSS record before space returns");
	cr_assert_eq(write_seq(&p, seq++, len), 0);
	cr_assert_eq(ringlog_cons_drain(&c, SIZE_MAX, check_record, &s), 2, "LOSS + record");
	cr_assert_eq(s.losses, 1);
	cr_assert_eq(s.lost_records, 100);
	cr_assert_eq(s.lost_bytes, 100 * len);
	cr_assert_eq(s.records + s.lost_records, seq);
	free(mem);
}

Test(ring, loss_record_marks_each_gap_at_its_place)
{
	struct ringlog_producer p;
	struct ringlog_consumer c;
	struct seen s;
	void *mem = new_ring(&p, &c, &s, 4096);
	uint64_t rnd = 42, seq = 0;

	/* Random bursts and partial drains: check_record() advances next_seq
	 * by each LOSS count, so any miscounted or misplaced gap fails the
	 * sequence check of the record that follows it. */
	for (int round = 0; round < 20000; round++) {
		uint32_t burst = (uint32_t)(th_rand(&rnd) % 64);
		for (uint32_t i = 0; i < burst; i++) {
			uint32_t len = 8 + (uint32_t)(th_rand(&rnd) % 200);
			write_seq(&p, seq++, len);
		}
		ringlog_cons_drain(&c, th_rand(&rnd) % 3000, check_record, &s);
	}
	cr_assert_eq(ringlog_prod_flush_loss(&p) == 0 ||
		     ringlog_cons_drain(&c, SIZE_MAX, check_record, &s) >= 0, 1);
	while (ringlog_prod_flush_loss(&p) != 0)
		ringlog_cons_drain(&c, SIZE_MAX, check_record, &s);
	cr_assert_geq(ringlog_cons_drain(&c, SIZE_MAX, check_record, &s), 0);
	cr_assert_gt(s.losses, 100, "the workload must actually lose (%llu losses)",
		     (unsigned long long)s.losses);
	cr_assert_eq(s.records + s.lost_records, seq, "stored %llu + lost %llu != produced %llu",
		     (unsigned long long)s.records, (unsigned long long)s.lost_records,
		     (unsigned long long)seq);
	cr_assert_eq(s.lost_records, p.hdr->lost_records_total);
	free(mem);
}

static int count_empty(void *ctx, uint16_t type, uint16_t aux, const uint8_t *payload,
		       uint32_t len)
{
	(void)payload;
	cr_assert_eq(type, TYPE_DATA + 1);
	cr_assert_eq(len, 0);
	cr_assert_eq(aux, 7);
	(*(int *)ctx)++;
	return 0;
}

Test(ring, zero_length_payloads_take_one_header_each)
{
	struct ringlog_producer p;
	struct ringlog_consumer c;
	struct seen s;
	void *mem = new_ring(&p, &c, &s, 4096);
	int n = 0;

	for (int i = 0; i < 512; i++)
		cr_assert_eq(ringlog_prod_write(&p, TYPE_DATA + 1, 7, NULL, 0), 0);
	cr_assert_eq(ringlog_prod_write(&p, TYPE_DATA + 1, 7, NULL, 0), -ENOBUFS,
		     "512 eight-byte headers fill a 4 KiB ring");
	cr_assert_eq(ringlog_cons_drain(&c, SIZE_MAX, count_empty, &n), 512);
	cr_assert_eq(n, 512);
	free(mem);
}

Test(ring, records_larger_than_the_ring_allows_are_refused_not_counted)
{
	struct ringlog_producer p;
	struct ringlog_consumer c;
	struct seen s;
	void *mem = new_ring(&p, &c, &s, 4096);
	static uint8_t big[RINGLOG_REC_MAX_LEN + 1];

	cr_assert_eq(ringlog_prod_write(&p, TYPE_DATA, 0, big, p.max_len + 1), -EMSGSIZE);
	cr_assert_eq(ringlog_prod_write(&p, TYPE_DATA, 0, big, RINGLOG_REC_MAX_LEN + 1), -EMSGSIZE);
	cr_assert_null(ringlog_prod_reserve(&p, UINT32_MAX, TYPE_DATA, 0));
	cr_assert_null(ringlog_prod_reserve(&p, UINT32_MAX - 7, TYPE_DATA, 0));
	cr_assert_eq(p.hdr->lost_records_total, 0);
	cr_assert_eq(write_seq(&p, 0, p.max_len), 0, "the largest allowed record fits");
	cr_assert_eq(ringlog_cons_drain(&c, SIZE_MAX, check_record, &s), 1);
	free(mem);
}

Test(ring, init_refuses_sizes_that_are_not_a_power_of_two_in_range)
{
	struct ringlog_producer p;
	void *mem = th_ring_alloc(8192);

	cr_assert_eq(ringlog_prod_init(&p, mem, 0, 0, 0, 0), -EINVAL);
	cr_assert_eq(ringlog_prod_init(&p, mem, 2048, 0, 0, 0), -EINVAL);
	cr_assert_eq(ringlog_prod_init(&p, mem, 6144, 0, 0, 0), -EINVAL);
	cr_assert_eq(ringlog_prod_init(&p, mem, (uint64_t)RINGLOG_RING_MAX_DATA * 2, 0, 0, 0), -EINVAL);
	cr_assert_eq(ringlog_prod_init(&p, mem, 8192, 0, 0, 0), 0);
	free(mem);
}

Test(ring, new_consumer_resumes_where_the_last_one_published)
{
	struct ringlog_producer p;
	struct ringlog_consumer c, c2;
	struct seen s;
	void *mem = new_ring(&p, &c, &s, 4096);

	for (uint64_t i = 0; i < 60; i++)
		cr_assert_eq(write_seq(&p, i, 24), 0);
	s.stop_after = 25;
	cr_assert_eq(ringlog_cons_drain(&c, SIZE_MAX, check_record, &s), 25);
	/* the "daemon" restarts: a fresh consumer on the same memory */
	cr_assert_eq(ringlog_cons_attach(&c2, mem, RINGLOG_RING_HEADER_SIZE + 4096), 0);
	s.stop_after = 0;
	cr_assert_eq(ringlog_cons_drain(&c2, SIZE_MAX, check_record, &s), 35);
	cr_assert_eq(s.next_seq, 60, "nothing duplicated, nothing skipped");
	free(mem);
}

Test(ring, drain_stops_near_max_bytes_and_when_asked)
{
	struct ringlog_producer p;
	struct ringlog_consumer c;
	struct seen s;
	void *mem = new_ring(&p, &c, &s, 4096);

	for (uint64_t i = 0; i < 50; i++)
		cr_assert_eq(write_seq(&p, i, 24), 0); /* 32 bytes each */
	cr_assert_eq(ringlog_cons_drain(&c, 320, check_record, &s), 10);
	cr_assert_eq(ringlog_cons_pending(&c), 40 * 32);
	s.stop_after = 15;
	cr_assert_eq(ringlog_cons_drain(&c, SIZE_MAX, check_record, &s), 5);
	s.stop_after = 0;
	cr_assert_eq(ringlog_cons_drain(&c, SIZE_MAX, check_record, &s), 35);
	cr_assert_eq(ringlog_cons_pending(&c), 0);
	free(mem);
}

Test(ring, finished_ring_reports_loss_not_yet_in_the_stream)
{
	struct ringlog_producer p;
	struct ringlog_consumer c;
	struct seen s;
	void *mem = new_ring(&p, &c, &s, 4096);
	uint64_t seq = 0;

	while (write_seq(&p, seq, 40) == 0)
		seq++;
	for (int i = 0; i < 9; i++)
		write_seq(&p, ++seq, 40);
	ringlog_prod_finish(&p);
	cr_assert_not(ringlog_cons_done(&c), "records are still unread");
	ringlog_cons_drain(&c, SIZE_MAX, check_record, &s);
	cr_assert(ringlog_cons_done(&c));
	struct ringlog_rec_loss l = ringlog_cons_pending_loss(&c);
	cr_assert_eq(l.records, 10);
	cr_assert_eq(l.bytes, 400);
	cr_assert_eq(s.records + l.records, seq + 1);
	free(mem);
}

struct loss_seen {
	uint32_t len;
	uint16_t aux;
	struct ringlog_rec_loss_ext l;
	uint64_t by_level[RINGLOG_LOSS_LEVELS];
};

static int keep_loss(void *ctx, uint16_t type, uint16_t aux, const uint8_t *payload,
		     uint32_t len)
{
	struct loss_seen *s = ctx;

	if (type == RINGLOG_REC_LOSS) {
		s->len = len;
		s->aux = aux;
		/* the consumer's copy: always the per-level form */
		memcpy(&s->l, payload, sizeof(s->l));
		memcpy(s->by_level, payload + offsetof(struct ringlog_rec_loss_lvl, by_level),
		       sizeof(s->by_level));
	}
	return 0;
}

/* A ring nobody has attached to gets the 32-byte LOSS record a consumer
 * from before the long form parses; a consumer that asked for the long
 * form only (an older ringlogd) the 40-byte one with where the gap began
 * and the tag the caller gave it; ours, which asks for levels too, the
 * 104-byte one that also splits the gap by level. A consumer reads all. */
Test(ring, loss_record_says_when_its_gap_began_to_a_consumer_that_asked)
{
	struct ringlog_producer p;
	struct ringlog_consumer c;
	struct loss_seen s = { 0 };
	void *mem = th_ring_alloc(4096);
	uint64_t seq = 0;

	for (int round = 0; round < 3; round++) {
		ringlog_prod_init(&p, mem, 4096, 1, 1, 0);
		p.level = 4;
		if (round)
			cr_assert_eq(ringlog_cons_attach(&c, mem, RINGLOG_RING_HEADER_SIZE + 4096), 0);
		while (ringlog_prod_write(&p, TYPE_DATA, 0, &seq, 8) == 0)
			seq++;
		cr_assert(ringlog_prod_gap_opened(&p), "the first drop opens the gap");
		p.gap_ts = 12345;
		p.gap_aux = 7;
		cr_assert_eq(ringlog_prod_write(&p, TYPE_DATA, 0, &seq, 8), -ENOBUFS);
		cr_assert_not(ringlog_prod_gap_opened(&p), "a second drop is in the same gap");
		if (!round) {
			cr_assert_eq(ringlog_cons_attach(&c, mem, RINGLOG_RING_HEADER_SIZE + 4096), 0);
			/* what an older consumer would have left: no caps */
			((struct ringlog_ring_hdr *)mem)->consumer_caps = 0;
		} else if (round == 1) {
			/* an older consumer: the long form, no levels */
			((struct ringlog_ring_hdr *)mem)->consumer_caps = RINGLOG_CONS_LOSS_EXT;
		}
		ringlog_cons_drain(&c, SIZE_MAX, keep_loss, &s);
		cr_assert_eq(ringlog_prod_write(&p, TYPE_DATA, 0, &seq, 8), 0);
		memset(&s, 0, sizeof(s));
		ringlog_cons_drain(&c, SIZE_MAX, keep_loss, &s);
		cr_assert_eq(s.l.l.records, 2);
		cr_assert_eq(s.aux, 7, "the LOSS record carries the caller's tag");
		if (!round) {
			cr_assert_eq(s.len, sizeof(struct ringlog_rec_loss));
			cr_assert_eq(s.l.first_ts, 0, "the short form has no time");
		} else if (round == 1) {
			cr_assert_eq(s.len, sizeof(struct ringlog_rec_loss_ext));
			cr_assert_eq(s.l.first_ts, 12345);
			cr_assert_eq(s.by_level[4], 0, "no levels in the long form");
		} else {
			cr_assert_eq(s.len, sizeof(struct ringlog_rec_loss_lvl));
			cr_assert_eq(s.l.first_ts, 12345);
			cr_assert_eq(s.by_level[4], 2, "both drops were of level 4");
		}
		cr_assert_eq(p.gap_ts, 0, "written: the next gap starts unknown");
	}
	free(mem);
}

/* Level-aware shedding (ring.h: shed_reserve): past size - reserve only
 * records at or below shed_level go in; the others are dropped and counted
 * by level, in the LOSS record and in the header totals, and the fast path
 * never lets a record into the reserve. */
/* Records of one stream in ring order, for the test below: data records'
 * payload (a sequence number) or, for a LOSS record, UINT64_MAX - records. */
struct in_order {
	uint64_t v[1024];
	size_t n;
};

static int note_order(void *ctx, uint16_t type, uint16_t aux, const uint8_t *payload,
		      uint32_t len)
{
	struct in_order *o = ctx;
	uint64_t x;

	(void)aux;
	(void)len;
	memcpy(&x, payload, sizeof(x));
	if (o->n < 1024)
		o->v[o->n++] = type == RINGLOG_REC_LOSS ? UINT64_MAX - x : x;
	return 0;
}

/* A sheddable record that fits outside the reserve on its own, but not
 * with the LOSS record its gap is waiting to write, is shed too: written
 * first, it would stand before the report of a gap that began before it
 * and, still open, goes on after it. */
Test(ring, a_sheddable_record_never_goes_before_its_gaps_loss_record)
{
	struct ringlog_producer p;
	struct ringlog_consumer c;
	struct in_order o = { .n = 0 };
	void *mem = th_ring_alloc(4096);
	struct ringlog_ring_hdr *h = mem;
	uint64_t seq = 0, dropped = 0, last = 0;

	ringlog_prod_init(&p, mem, 4096, 1, 1, 0);
	cr_assert_eq(ringlog_cons_attach(&c, mem, RINGLOG_RING_HEADER_SIZE + 4096), 0);
	h->shed_reserve = 1024;
	h->shed_level = 3;
	p.level = 4;
	while (ringlog_prod_write(&p, TYPE_DATA, 0, &seq, 8) == 0)
		seq++;
	dropped++, seq++; /* the one refused: a gap is open */
	/* room for one 16-byte record outside the reserve, not for a LOSS
	 * record with it */
	ringlog_cons_drain(&c, 16, note_order, &o);
	cr_assert_eq(ringlog_prod_write(&p, TYPE_DATA, 0, &seq, 8), -ENOBUFS,
		     "a sheddable record went in before its gap's LOSS record");
	dropped++, seq++;
	/* room for both: the LOSS record, then the record */
	ringlog_cons_drain(&c, SIZE_MAX, note_order, &o);
	cr_assert_eq(ringlog_prod_write(&p, TYPE_DATA, 0, &seq, 8), 0);
	ringlog_cons_drain(&c, SIZE_MAX, note_order, &o);
	cr_assert_geq(o.n, 3);
	/* in ring order: data up to the gap, its LOSS record counting both
	 * drops, then the record after the gap */
	for (size_t i = 0; i + 2 < o.n; i++) {
		cr_assert_eq(o.v[i], last + (i ? 1 : 0), "record %zu is %llu", i,
			     (unsigned long long)o.v[i]);
		last = o.v[i];
	}
	cr_assert_eq(UINT64_MAX - o.v[o.n - 2], dropped, "the LOSS record counts %llu, not %llu",
		     (unsigned long long)(UINT64_MAX - o.v[o.n - 2]), (unsigned long long)dropped);
	cr_assert_eq(o.v[o.n - 1], seq);
	free(mem);
}

Test(ring, a_ring_in_its_reserve_sheds_less_important_levels_first)
{
	struct ringlog_producer p;
	struct ringlog_consumer c;
	struct loss_seen s = { 0 };
	void *mem = th_ring_alloc(4096);
	struct ringlog_ring_hdr *h = mem;
	uint64_t seq = 0, info = 0, warn = 0, lv[RINGLOG_LOSS_LEVELS];

	ringlog_prod_init(&p, mem, 4096, 1, 1, 0);
	cr_assert_eq(ringlog_cons_attach(&c, mem, RINGLOG_RING_HEADER_SIZE + 4096), 0);
	h->shed_reserve = 1024;
	h->shed_level = 3;
	p.level = 4;
	while (ringlog_prod_write(&p, TYPE_DATA, 0, &seq, 8) == 0)
		info++;
	cr_assert_geq(ringlog_prod_free(&p), 1024 - 16, "info went into the reserve");
	cr_assert_leq(ringlog_prod_free(&p), 1024 + 16, "info stopped before the reserve");
	cr_assert_eq(ringlog_prod_write(&p, TYPE_DATA, 0, &seq, 8), -ENOBUFS);
	p.level = 3;
	while (ringlog_prod_write(&p, TYPE_DATA, 0, &seq, 8) == 0)
		warn++;
	cr_assert_geq(warn, 1024 / 16 - 8, "warnings did not get the reserve");
	cr_assert_eq(p.limit <= p.pos + 16, true, "the fast path would write into the reserve");
	cr_assert_eq(p.lost_level[4], 2);
	cr_assert_eq(p.lost_level[3], 1);
	ringlog_cons_pending_levels(&c, lv);
	cr_assert_eq(lv[3] + lv[4], 0, "the header has the split only once the ring finishes");
	/* drained: the LOSS record says which levels the gap lost */
	ringlog_cons_drain(&c, SIZE_MAX, keep_loss, &s);
	cr_assert_eq(ringlog_prod_write(&p, TYPE_DATA, 0, &seq, 8), 0);
	ringlog_cons_drain(&c, SIZE_MAX, keep_loss, &s);
	cr_assert_eq(s.l.l.records, 3);
	cr_assert_eq(s.by_level[4], 2);
	cr_assert_eq(s.by_level[3], 1);
	ringlog_cons_pending_levels(&c, lv);
	cr_assert_eq(lv[3] + lv[4], 0, "all reported in-stream");
	/* A gap still open when the ring finishes: its split is in the header */
	p.level = 4;
	while (ringlog_prod_write(&p, TYPE_DATA, 0, &seq, 8) == 0)
		;
	p.level = 5;
	cr_assert_eq(ringlog_prod_write(&p, TYPE_DATA, 0, &seq, 8), -ENOBUFS);
	ringlog_prod_finish(&p);
	cr_assert_eq(h->lost_level_total[4], 3);
	cr_assert_eq(h->lost_level_total[5], 1);
	ringlog_cons_pending_levels(&c, lv);
	cr_assert_eq(lv[4], 1);
	cr_assert_eq(lv[5], 1);
	cr_assert_eq(ringlog_cons_pending_loss(&c).records, 2);
	free(mem);
}

/* A per-level LOSS record whose levels do not add up to its records is
 * corruption: the ring is detached, nothing is delivered from it. */
Test(ring, a_loss_record_whose_levels_do_not_add_up_is_corrupt)
{
	struct ringlog_producer p;
	struct ringlog_consumer c;
	struct loss_seen s = { 0 };
	void *mem = th_ring_alloc(4096);
	struct ringlog_rec_loss_lvl l = { .x = { .l = { .records = 3, .bytes = 24,
		.total_records = 3, .total_bytes = 24 } } };

	l.by_level[4] = 2; /* one short */
	ringlog_prod_init(&p, mem, 4096, 1, 1, 0);
	cr_assert_eq(ringlog_cons_attach(&c, mem, RINGLOG_RING_HEADER_SIZE + 4096), 0);
	cr_assert_eq(ringlog_prod_write(&p, RINGLOG_REC_LOSS, 0, &l, sizeof(l)), 0);
	cr_assert_eq(ringlog_cons_drain(&c, SIZE_MAX, keep_loss, &s), -EBADMSG);
	cr_assert_str_eq(c.why, "LOSS record levels do not add up to its records");
	free(mem);
}

/* ringlog_cons_drain_runs(): what a per-record drain delivers, in the same
 * order, but in runs of one header word; a run is cut where the header
 * word changes, at the end of the data area, at the producer position and
 * at max_bytes; a callback taking fewer stops the drain there. Records
 * here: aux 7, the sequence number, then its byte repeated. */
struct runs {
	struct seen s;
	uint64_t runs, longest;
	uint64_t take;  /* > 0: the run callback takes at most this many more */
	const uint8_t *data_end;
};

static int check_one(void *ctx, uint16_t type, uint16_t aux, const uint8_t *payload,
		     uint32_t len)
{
	struct seen *s = ctx;
	uint64_t seq;

	if (type == RINGLOG_REC_LOSS) {
		struct ringlog_rec_loss l;

		memcpy(&l, payload, sizeof(l));
		s->lost_records += l.records;
		s->losses++;
		s->next_seq += l.records; /* the gap is exactly here */
		return 0;
	}
	cr_assert_eq(type, TYPE_DATA);
	cr_assert_eq(aux, 7);
	cr_assert_geq(len, 8u);
	memcpy(&seq, payload, 8);
	cr_assert_eq(seq, s->next_seq, "record %llu arrived where %llu was expected",
		     (unsigned long long)seq, (unsigned long long)s->next_seq);
	for (uint32_t b = 8; b < len; b++)
		cr_assert_eq(payload[b], (uint8_t)seq, "payload of record %llu damaged",
			     (unsigned long long)seq);
	s->next_seq++;
	s->records++;
	return 0;
}

static long check_run(void *ctx, uint16_t type, uint16_t aux, const uint8_t *payload,
		      uint32_t len, uint32_t n)
{
	struct runs *r = ctx;
	size_t total = ringlog_rec_total(len);
	uint32_t i;

	cr_assert_geq(n, 1u);
	cr_assert(payload - RINGLOG_REC_HDR_SIZE + n * total <= r->data_end,
		  "a run of %u records of %zu bytes crosses the end of the data area", n, total);
	for (i = 0; i < n; i++) {
		uint64_t h;

		if (r->take && i >= r->take)
			break;
		memcpy(&h, payload + i * total - RINGLOG_REC_HDR_SIZE, 8);
		cr_assert_eq((uint32_t)h, len, "record %u of the run has another length", i);
		cr_assert_eq((uint16_t)(h >> 32), type);
		cr_assert_eq((uint16_t)(h >> 48), aux);
		cr_assert_eq(check_one(&r->s, type, aux, payload + i * total, len), 0);
	}
	r->runs++;
	if (i > r->longest)
		r->longest = i;
	return i;
}

/* A ring of size bytes for the run tests, the consumer's data end noted. */
static void *runs_ring(struct ringlog_producer *p, struct ringlog_consumer *c, struct runs *r,
		       uint64_t size)
{
	void *mem = new_ring(p, c, &r->s, size);

	r->data_end = c->data + size;
	return mem;
}

/* One record of len bytes carrying seq, its bytes check_one() verifies;
 * false when the ring is full. */
static bool put_seq(struct ringlog_producer *p, uint32_t len, uint64_t seq)
{
	uint8_t *dst = ringlog_prod_reserve(p, len, TYPE_DATA, 7);

	if (!dst)
		return false;
	memcpy(dst, &seq, 8);
	memset(dst + 8, (int)(seq & 0xff), len - 8);
	ringlog_prod_commit(p);
	return true;
}

Test(ring, a_drain_in_runs_delivers_every_record_once_in_order)
{
	const uint64_t size = 4096;
	struct ringlog_producer p;
	struct ringlog_consumer c;
	struct runs r = { 0 };
	void *mem = runs_ring(&p, &c, &r, size);
	uint64_t seq = 0, lost = 0;

	for (int round = 0; round < 600; round++) {
		/* bursts of one length, the length changing within some */
		uint32_t burst = 1 + (uint32_t)(round * 7 % 90);

		for (uint32_t i = 0; i < burst; i++, seq++)
			if (!put_seq(&p, 8 + (uint32_t)((round + (i > burst / 2)) % 5) * 8, seq))
				lost++;
		/* some rounds take a few records only, some a few bytes */
		r.take = round % 4 == 1 ? 3 : 0;
		cr_assert_geq(ringlog_cons_drain_runs(&c, round % 3 ? SIZE_MAX : 100, check_one,
						      check_run, &r), 0);
	}
	r.take = 0;
	while (ringlog_prod_flush_loss(&p) != 0)
		cr_assert_geq(ringlog_cons_drain_runs(&c, SIZE_MAX, check_one, check_run, &r), 0);
	while (ringlog_cons_drain_runs(&c, SIZE_MAX, check_one, check_run, &r) > 0)
		;
	cr_expect_eq(r.s.records + r.s.lost_records, seq, "every record delivered once or counted");
	cr_expect_eq(r.s.lost_records, lost);
	cr_expect_gt(lost, 0, "the ring overflowed at times (its LOSS records went to fn)");
	cr_expect_gt(r.longest, 10, "records of one kind come in runs (longest %llu)",
		     (unsigned long long)r.longest);
	cr_expect_lt(r.runs, r.s.records / 4, "%llu runs for %llu records",
		     (unsigned long long)r.runs, (unsigned long long)r.s.records);
	free(mem);
}

/* A corrupt header inside what would be a run ends it there: the records
 * before are delivered, the drain fails at the bad one. */
Test(ring, a_corrupt_record_cuts_a_run_and_fails_the_drain_there)
{
	const uint64_t size = 4096;
	struct ringlog_producer p;
	struct ringlog_consumer c;
	struct runs r = { 0 };
	void *mem = runs_ring(&p, &c, &r, size);

	for (uint64_t seq = 0; seq < 20; seq++)
		cr_assert(put_seq(&p, 40, seq));
	/* record 12's header: a length past the producer position */
	{
		uint8_t *h = (uint8_t *)c.data + 12 * 48;
		uint32_t bad = 4000;

		memcpy(h, &bad, 4);
	}
	cr_assert_eq(ringlog_cons_drain_runs(&c, SIZE_MAX, check_one, check_run, &r), -EBADMSG);
	cr_expect_eq(r.s.records, 12, "the 12 records before the damage were delivered");
	cr_expect_eq(r.runs, 1);
	cr_expect_eq(c.bad_pos, 12 * 48);
	free(mem);
}
