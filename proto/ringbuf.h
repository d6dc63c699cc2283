/* proto/ringbuf.h - producer and consumer of the ring described in ring.h.
 *
 * The producer side is inline: its fast path is one compare against a
 * precomputed limit, the caller's stores into the reserved bytes, and one
 * release store of the new position. Everything else (full ring, wrap
 * padding, pending LOSS records) lives in ringlog__prod_slow() in ringbuf.c.
 *
 * The consumer side (ringlog_cons_*) is what the daemon, the tests and the
 * fuzzers use to drain a ring they do not trust.
 *
 * Names with a double underscore are internal to the project; nothing here
 * is exported from libringlog.
 */
#ifndef RINGLOG_PROTO_RINGBUF_H
#define RINGLOG_PROTO_RINGBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ring.h"

#if defined(__GNUC__)
#define RINGLOG__LIKELY(x)   __builtin_expect(!!(x), 1)
#define RINGLOG__UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define RINGLOG__LIKELY(x)   (x)
#define RINGLOG__UNLIKELY(x) (x)
#endif

/* ------------------------------------------------------------------------
 * Producer. One per ring, owned by one thread; never shared.
 */
struct ringlog_producer {
	/* Hot: the fields libringlog's inline fast path reads through struct
	 * ringlog__hot (client/include/ringlog.h). Same order and types there;
	 * static_asserts in client/emit.c keep the two in step. */
	uint8_t *data;
	uint32_t *bell;       /* the caller's: the ring's slot in its bell page
	                       * (bell.h), or NULL; ringbuf.c never touches it.
	                       * The word commit publishes, hdr->prod_pos, is
	                       * found from data (ringlog_prod_pos_word()). */
	uint64_t mask;        /* data_size - 1 */
	uint64_t pos;         /* private copy of hdr->prod_pos */
	uint64_t next;        /* pos after the reservation in progress */
	uint64_t limit;       /* a record ending at or below this position fits
	                       * without any check: min(cached cons + size, end
	                       * of the current lap, wake_check); == pos while a
	                       * LOSS record is pending, to force the slow path */
	uint32_t max_len;     /* ringlog_ring_max_len(size) */
	uint32_t wake;        /* the slow path saw the consumer asleep beyond its
	                       * high-water mark: the caller signals it (the
	                       * producer itself never calls the kernel) and
	                       * clears this. Here, not with the cold fields,
	                       * because a caller without the inline path tests
	                       * it after every reservation: the line it reads
	                       * anyway. (ringlog__hot calls it reserved; the
	                       * inline path never touches it.) */
	uint64_t last_ts;     /* the caller's: its previous record's timestamp,
	                       * for the bell (bell.h); ringbuf.c never reads
	                       * it. With the fields above, one 64-byte line. */
	/* Cold: only the slow path. */
	struct ringlog_ring_hdr *hdr;
	uint64_t size;        /* data_size */
	uint64_t cached_cons; /* last cons_pos read from the consumer block */
	uint64_t wake_check;  /* past this position the slow path looks whether
	                       * the consumer sleeps beyond its high-water mark
	                       * (about once per wake_bytes written) */
	uint64_t lost_records;     /* private copies of the header totals */
	uint64_t lost_bytes;
	uint64_t reported_records; /* totals carried by the last LOSS record */
	uint64_t reported_bytes;
	/* The pending gap, for its LOSS record (ring.h): set by the caller,
	 * which owns the clock and knows what it dropped (see
	 * ringlog_prod_gap_opened()); the producer only carries them. */
	uint64_t gap_ts;           /* clock at the gap's first drop, 0: unknown */
	uint16_t gap_aux;          /* the LOSS record's aux */
	/* Level-aware shedding (ring.h: shed_reserve). level is the caller's
	 * for the reservation it is about to make (0: none, never shed); the
	 * rest is the slow path's. */
	uint8_t level;
	uint8_t shed_level;        /* copies of the consumer block's, */
	uint64_t reserve;          /*   re-read on the slow path */
	uint64_t lost_level[RINGLOG_LOSS_LEVELS];     /* by level, since creation */
	uint64_t reported_level[RINGLOG_LOSS_LEVELS]; /* as of the last LOSS record */
};

/* Lay out a new ring in mem (RINGLOG_RING_HEADER_SIZE + data_size bytes,
 * zeroed or not) and attach a producer to it.
 * Returns 0, or -EINVAL if data_size is not a power of two within
 * RINGLOG_RING_MIN_DATA..RINGLOG_RING_MAX_DATA. */
int ringlog_prod_init(struct ringlog_producer *p, void *mem, uint64_t data_size,
		      uint32_t pid, uint32_t tid, uint64_t created_ns);

/* Slow path of ringlog_prod_reserve(); see there. */
void *ringlog__prod_slow(struct ringlog_producer *p, uint32_t len,
			 uint16_t type, uint16_t aux);

/* The slow path without the accounting: reserve a record of len payload
 * bytes, or return NULL leaving the drop uncounted, for a caller that may
 * try again (opt-in blocking); ringlog_prod_drop() counts it when it gives
 * up. Records of a level above shed_level are refused once the ring is
 * more than size - shed_reserve full. */
void *ringlog_prod_try(struct ringlog_producer *p, uint32_t len, uint16_t type, uint16_t aux);
/* Count one dropped record of len payload bytes (level p->level). */
void ringlog_prod_drop(struct ringlog_producer *p, uint32_t len);

/* Reserve a record of len payload bytes. Returns a pointer to the payload,
 * to be filled and then published with ringlog_prod_commit(); or NULL when
 * the ring is full (the record is dropped and counted, and a LOSS record will
 * precede the next record that fits) or when len exceeds p->max_len (the
 * record is refused and not counted: that is the caller's bug, errno-free by
 * design; callers bound their payloads). Never blocks, never calls the
 * kernel. A reservation that is never committed simply vanishes. */
static inline void *ringlog_prod_reserve(struct ringlog_producer *p, uint32_t len,
					 uint16_t type, uint16_t aux)
{
	uint64_t total = ringlog_rec_total(len);

	/* Bitwise | on purpose: one predictable branch for both conditions. */
	if (RINGLOG__UNLIKELY((len > p->max_len) | (p->pos + total > p->limit)))
		return ringlog__prod_slow(p, len, type, aux);

	uint8_t *rec = p->data + (p->pos & p->mask);
	struct ringlog_rec_hdr h = { .len = len, .type = type, .aux = aux };
	__builtin_memcpy(rec, &h, sizeof(h));
	p->next = p->pos + total;
	return rec + RINGLOG_REC_HDR_SIZE;
}

/* Publish everything reserved so far (including any PAD or LOSS record the
 * slow path wrote). Pairs with the acquire load of prod_pos in
 * ringlog_cons_drain(). */
/* hdr->prod_pos sits at a fixed distance before the data area (ring.h):
 * reached from data, it needs no pointer of its own in the hot line. */
#define RINGLOG_PROD_POS_FROM_DATA \
	((ptrdiff_t)offsetof(struct ringlog_ring_hdr, prod_pos) - (ptrdiff_t)RINGLOG_RING_HEADER_SIZE)

static inline uint64_t *ringlog_prod_pos_word(const struct ringlog_producer *p)
{
	return (uint64_t *)(void *)(p->data + RINGLOG_PROD_POS_FROM_DATA);
}

static inline void ringlog_prod_commit(struct ringlog_producer *p)
{
	__atomic_store_n(ringlog_prod_pos_word(p), p->next, __ATOMIC_RELEASE);
	p->pos = p->next;
}

/* Reserve, copy and commit in one call. Returns 0, or -ENOBUFS when the
 * record was dropped (ring full; counted), -EMSGSIZE when it was refused. */
int ringlog_prod_write(struct ringlog_producer *p, uint16_t type, uint16_t aux,
		       const void *payload, uint32_t len);

/* True right after the reservation that opened a gap was dropped (the
 * first record counted lost since the last LOSS record): the caller then
 * stamps p->gap_ts with its clock and p->gap_aux with its tag for the
 * record, and on later drops of the same gap clears gap_aux when the tag
 * differs. One clock read per gap, none per dropped record. */
static inline bool ringlog_prod_gap_opened(const struct ringlog_producer *p)
{
	return p->lost_records - p->reported_records == 1;
}

/* Try to write the pending LOSS record now, without a record behind it.
 * Returns 0 when nothing is pending any more, -ENOBUFS while the ring is
 * still too full. Used before a ring is finished. */
int ringlog_prod_flush_loss(struct ringlog_producer *p);

/* Mark the ring finished: nothing will follow prod_pos. Release-ordered after
 * the last commit. */
void ringlog_prod_finish(struct ringlog_producer *p);

/* Bytes the producer could still write before the ring is full, as of the
 * consumer position it loads now (acquire). For flow control in tests and
 * the optional blocking mode; not on the hot path. */
uint64_t ringlog_prod_free(struct ringlog_producer *p);

/* ------------------------------------------------------------------------
 * Consumer. Owned by the daemon; the ring behind it is untrusted.
 */
struct ringlog_consumer {
	struct ringlog_ring_hdr *hdr;
	const uint8_t *data;
	uint64_t size;    /* private copy of data_size, validated at attach */
	uint64_t mask;
	uint64_t pos;     /* how far records were delivered (private) */
	uint64_t published; /* cons_pos as last stored in the header */
	uint64_t rec_end; /* while fn runs: position just past its record */
	bool defer;       /* publish only through ringlog_cons_release() */
	uint32_t max_len; /* ringlog_ring_max_len(size) */
	struct ringlog_rec_loss seen; /* totals of the last LOSS record consumed */
	uint64_t seen_level[RINGLOG_LOSS_LEVELS]; /* by level, this consumer's */
	bool levels_unknown; /* attached to a ring another consumer had reported
	                      * loss from: its split by level is not known */
	int error;        /* sticky: the first corruption found, or 0 */
	const char *why;  /* what was wrong, for the daemon's log line */
	uint64_t bad_pos; /*   and where */
};

/* Called once per record, in ring order. payload points into the shared
 * data area: the producer can still change those bytes, so parse from a
 * copy. For RINGLOG_REC_LOSS the payload is a validated private copy of a
 * struct ringlog_rec_loss_lvl (first_ts 0 when the record is the short
 * form, by_level all 0 unless it is the per-level form), len the record's own length (32 or 40: a packer must keep it, so
 * that ring positions advance as in the ring). Return 0 to go on, > 0 to
 * stop before this record
 * (it stays in the ring for the next drain), < 0 to stop and fail the drain
 * with that value (the record also stays). */
typedef int (*ringlog_cons_fn)(void *ctx, uint16_t type, uint16_t aux,
			       const uint8_t *payload, uint32_t len);

/* Validate a mapped ring of map_size bytes and attach a consumer to it,
 * starting at the cons_pos found in the header (so a restarted daemon
 * resumes where the previous one stopped). Sets RINGLOG_CONS_LOSS_EXT in
 * consumer_caps: this consumer parses both forms of LOSS record.
 * Returns 0, or -EPROTO for an unknown magic/version/flag, -EBADMSG for a
 * header whose geometry or positions are inconsistent (c->why says which). */
int ringlog_cons_attach(struct ringlog_consumer *c, void *mem, uint64_t map_size);

/* Deliver the records between the consumer position and the producer
 * position read once at entry, at most about max_bytes of them, then publish
 * the new consumer position once.
 * Returns the number of records delivered (PAD records are not delivered),
 * or -EBADMSG when the ring is corrupt: records before the damage were
 * delivered and consumed, c->error/why/bad_pos describe it, and every later
 * call fails the same way (detach the ring). A negative value returned by fn
 * is passed through. Every call ends in at most data_size / 8 steps. */
long ringlog_cons_drain(struct ringlog_consumer *c, size_t max_bytes,
			ringlog_cons_fn fn, void *ctx);

/* Called once per run of event records (not LOSS) that share one header
 * word: n records of the same type, aux and len, each ringlog_rec_total(len)
 * bytes after the one before, the first payload at payload (in the shared
 * data area, as for ringlog_cons_fn). While it runs, c->rec_end is the
 * position just past the run's first record. Returns how many of the n
 * it took, in order (fewer stops the drain before the first one not
 * taken, which stays in the ring), or < 0 to fail the drain with that
 * value (the run stays). */
typedef long (*ringlog_cons_run_fn)(void *ctx, uint16_t type, uint16_t aux,
				    const uint8_t *payload, uint32_t len, uint32_t n);

/* ringlog_cons_drain() handing event records over in runs: a consumer
 * that does the same work for every record of one kind (the daemon's
 * store) looks the kind up once per run, not once per record. LOSS
 * records still go to fn, one at a time. A run is cut at the end of the
 * data area, at the producer position and at max_bytes. */
long ringlog_cons_drain_runs(struct ringlog_consumer *c, size_t max_bytes,
			     ringlog_cons_fn fn, ringlog_cons_run_fn run, void *ctx);

/* With c->defer set, ringlog_cons_drain() delivers records without giving
 * their space back to the producer: the daemon calls this once the records
 * up to pos are safely stored (or counted as lost), with the loss totals of
 * the last LOSS record before pos. A daemon killed in between therefore
 * resumes from pos after a restart: nothing delivered but unstored is
 * forgotten. pos must lie between the last published position and c->pos;
 * anything else is ignored. */
void ringlog_cons_release(struct ringlog_consumer *c, uint64_t pos,
			  uint64_t seen_records, uint64_t seen_bytes);

/* Bytes committed by the producer and not yet consumed (0 if the producer
 * position is bogus; the next drain will report that). */
uint64_t ringlog_cons_pending(const struct ringlog_consumer *c);

/* Ask for the lines of the records a drain of c would read now, ahead of
 * it, up to RINGLOG_CONS_PREFETCH bytes: each was last written by the
 * producer's core, so each is a miss; asked for while the caller drains
 * another ring, they arrive in parallel with that work instead of one
 * after another (a burst of 50 records is 44 lines, too few for the
 * CPU's own prefetcher to catch up with). Reads the producer's position,
 * which the caller should have loaded already (ringlog_cons_touch()). A
 * hint only: the position is not trusted (a bogus one asks for at most
 * the cap, inside the data area), and a prefetch never faults. */
#define RINGLOG_CONS_PREFETCH 4096u
static inline void ringlog_cons_prefetch(const struct ringlog_consumer *c)
{
#if defined(__GNUC__)
	uint64_t prod = __atomic_load_n(&c->hdr->prod_pos, __ATOMIC_RELAXED);
	uint64_t n = prod - c->pos, at = c->pos & ~(uint64_t)63;

	if (n > RINGLOG_CONS_PREFETCH)
		n = RINGLOG_CONS_PREFETCH;
	for (; at < c->pos + n; at += 64)
		__builtin_prefetch(c->data + (at & c->mask), 0, 3);
#else
	(void)c;
#endif
}

/* Load the lines a drain of c reads first (the producer's position, the
 * first record after ours) and return what was read, for the caller to
 * discard. A drain pass does this for all the rings it will visit before
 * it visits the first: the loads do not depend on each other, so they are
 * in flight together, where one drain after another waits for each in
 * turn. No value read here is trusted or kept: the drain reads them
 * again. */
static inline uint64_t ringlog_cons_touch(const struct ringlog_consumer *c)
{
	return __atomic_load_n(&c->hdr->prod_pos, __ATOMIC_RELAXED) +
	       __atomic_load_n((const uint64_t *)(const void *)(c->data + (c->pos & c->mask)),
			       __ATOMIC_RELAXED);
}

/* True when the producer has finished and everything it wrote is consumed:
 * the ring can be released. */
bool ringlog_cons_done(const struct ringlog_consumer *c);

/* Loss the producer counted but has not reported in-stream (header totals
 * minus the last LOSS record consumed; final once ringlog_cons_done()).
 * total_records/total_bytes hold the header totals. */
struct ringlog_rec_loss ringlog_cons_pending_loss(const struct ringlog_consumer *c);
/* The same loss by level (index level & 7), when the producer keeps it
 * (RINGLOG_RING_LOSS_LEVELS) and this consumer saw all of the ring's
 * reports; otherwise all zero. Each is at most what the header says. */
void ringlog_cons_pending_levels(const struct ringlog_consumer *c,
				 uint64_t out[RINGLOG_LOSS_LEVELS]);

#endif /* RINGLOG_PROTO_RINGBUF_H */
