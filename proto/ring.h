/* proto/ring.h - the shared-memory ring ABI between libringlog and ringlogd.
 *
 * One ring per producing thread. The client library creates it (a sealed
 * memfd on Linux, a file mapping on Windows), writes records into it without
 * system calls or locks, and hands it to the daemon, which maps it and
 * drains it. Both sides include this header; nothing else is shared.
 *
 * Layout of one ring mapping (all integers little-endian, all offsets fixed):
 *
 *   0          128        256        384                     4096
 *   +----------+----------+----------+-----------------------+
 *   | identity | producer | consumer |   reserved (zero)     |   header page
 *   +----------+----------+----------+-----------------------+
 *   4096                                             4096 + data_size
 *   +-------------------------------------------------------+
 *   | data area: 2^k bytes of 8-byte aligned records         |
 *   +-------------------------------------------------------+
 *
 * Each block of the header sits on its own 128-byte span: two 64-byte cache
 * lines, because the adjacent-line prefetcher of current x86 cores pulls
 * lines in pairs and would otherwise make the producer's and the consumer's
 * lines share traffic.
 *
 * Positions (prod_pos, cons_pos) are 64-bit byte counts that only ever grow;
 * the offset into the data area is pos & (data_size - 1). They never wrap in
 * practice (2^64 bytes at 10 GB/s is 58 years), which keeps "how full" a
 * plain subtraction and lets the consumer detect a position that went
 * backwards.
 *
 * A record:
 *
 *   +--------+--------+--------+---------------------------+-----+
 *   | len:32 | type:16| aux:16 | payload (len bytes)       | pad |
 *   +--------+--------+--------+---------------------------+-----+
 *   |<----- 8-byte header ---->|                          to 8-byte boundary
 *
 * A record never straddles the end of the data area. When the next record
 * does not fit in the bytes left before the end, the producer fills them with
 * one PAD record (len = bytes left - 8) and writes the record at offset 0.
 * We chose the padding record over a double mapping of the data area: it
 * needs no address-space tricks (the same code runs on Windows file
 * mappings), the consumer can hand out plain pointers, and the price is at
 * most one maximum-size record of unusable tail per lap.
 *
 * Publication: the producer writes the record bytes, then stores prod_pos
 * with release semantics; the consumer loads prod_pos with acquire semantics
 * and may then read every byte below it. A record that is half written when
 * the process dies is therefore never visible: its bytes are above prod_pos.
 * Symmetrically the consumer publishes cons_pos with release once per batch
 * and the producer loads it with acquire only when its cached copy says the
 * ring is full.
 *
 * Loss: a producer that finds no room drops the record and adds it to the
 * running totals in its own block (lost_records_total/lost_bytes_total).
 * Before the next record that fits it writes one LOSS record carrying the
 * size of the gap and the totals. A reader thus sees each gap exactly where
 * it happened and how big it was. The consumer publishes the totals of the
 * last LOSS record it consumed (loss_seen_*), so whatever was dropped but
 * not yet reported in-stream when a ring ends is total - seen: no counter
 * is ever reset, so no crash can make a loss count twice or vanish.
 *
 * A LOSS record also says when its gap began (the stream's clock at the
 * first drop) and, in aux, whose records it holds, so that a reader shows
 * it at its own time rather than at some other thread's. The longer form
 * (struct ringlog_rec_loss_ext) is written only to a consumer that asked
 * for it by setting RINGLOG_CONS_LOSS_EXT in consumer_caps when it
 * attached: a daemon from before it would detach a ring whose LOSS record
 * it cannot parse.
 *
 * Trust: the daemon treats every byte of a ring as hostile. It reads the
 * identity block once at attach time, keeps private copies of the geometry
 * and of its own position, re-reads only prod_pos (and state), and checks
 * every record header (one 64-bit load, so it cannot change between check
 * and use) against the alignment, the producer position and the end of the
 * data area before touching the payload. See ringbuf.c.
 *
 * Who writes what:
 *   identity block  producer, once, before the ring is handed over; then
 *                   read-only for both sides.
 *   producer block  producer only; the consumer reads prod_pos, state and
 *                   the loss totals. Exception: ringlog_trigger() from any
 *                   thread of the process (trigger_count, trigger_reason),
 *                   and the exit handler (exit_flags).
 *   consumer block  consumer only; the producer reads cons_pos, past the
 *                   wake threshold consumer_flags, and once per gap
 *                   consumer_caps; trigger_seen is for the next consumer.
 */
#ifndef RINGLOG_PROTO_RING_H
#define RINGLOG_PROTO_RING_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "ringlog's ring ABI is little-endian; big-endian hosts are not supported"
#endif

#define RINGLOG_RING_MAGIC        0x474e5252u /* "RRNG" in memory order */
#define RINGLOG_RING_VERSION      1u
#define RINGLOG_RING_HEADER_SIZE  4096u
#define RINGLOG_RING_MIN_DATA     4096u          /* one page */
#define RINGLOG_RING_MAX_DATA     (1u << 30)     /* 1 GiB */
#define RINGLOG_RING_TRIGGER_REASON 88u          /* bytes of trigger_reason */

#define RINGLOG_REC_ALIGN         8u
#define RINGLOG_REC_HDR_SIZE      8u
/* The largest payload any record may carry (16 KiB with its header), so a
 * consumer's scratch buffers have a fixed size. A given ring allows less when
 * it is small: see ringlog_ring_max_len(). */
#define RINGLOG_REC_MAX_LEN       (16384u - RINGLOG_REC_HDR_SIZE)

/* Record types. 0 is never valid, so zeroed memory reads as corruption
 * rather than as an endless run of empty records. */
enum ringlog_rec_type {
	RINGLOG_REC_PAD      = 1,  /* filler up to the end of the data area */
	RINGLOG_REC_LOSS     = 2,  /* struct ringlog_rec_loss */
	RINGLOG_REC_USER_MIN = 16, /* 16..63: defined by proto/event.h */
	RINGLOG_REC_USER_MAX = 63,
};

/* Producer states (ringlog_ring_hdr.state). */
enum ringlog_ring_state {
	RINGLOG_RING_ACTIVE   = 1,
	RINGLOG_RING_FINISHED = 2, /* thread ended; nothing follows prod_pos */
};

/* exit_flags bits (producer block), and the compat flag saying the
 * library sets them. */
#define RINGLOG_RING_EXITING    0x1u
#define RINGLOG_RING_MARKS_EXIT 0x2u /* compat_flags (0x1 is event.h's CLOCK_TSC) */

/* consumer_flags bits. */
#define RINGLOG_CONS_SLEEPING 0x1u /* consumer wants a wakeup past wake_bytes */
/* consumer_caps bits: what the consumer parses, set when it attaches. */
#define RINGLOG_CONS_LOSS_EXT 0x1u /* LOSS records of either length (below) */

struct ringlog_rec_hdr {
	uint32_t len;  /* payload bytes, header excluded */
	uint16_t type; /* enum ringlog_rec_type */
	uint16_t aux;  /* meaning set by the type (e.g. event descriptor index) */
};

/* Payload of a RINGLOG_REC_LOSS record: what was dropped since the previous
 * LOSS record (or since the ring started), at this exact place, and the
 * running totals including this gap. The totals make the count crash-proof:
 * nothing is ever reset, so no crash between two stores can count a loss
 * twice or not at all. */
struct ringlog_rec_loss {
	uint64_t records;       /* records dropped in this gap */
	uint64_t bytes;         /* their payload bytes */
	uint64_t total_records; /* lost_records_total when this was written */
	uint64_t total_bytes;
};

/* The longer LOSS record, written only when the consumer set
 * RINGLOG_CONS_LOSS_EXT: the same counts, then where the gap began. A LOSS
 * record is either 32 or 40 bytes; its aux is the producer's tag for the
 * dropped records (libringlog: the provider id, meta.h, shared by every
 * record in the gap; 0 when they were of several providers or it cannot
 * say), in either form. */
struct ringlog_rec_loss_ext {
	struct ringlog_rec_loss l;
	uint64_t first_ts;      /* the stream's clock (event.h) at the first drop
	                         * of the gap; 0: unknown */
};

struct ringlog_ring_hdr {
	/* identity block: written once by the producer before hand-over */
	uint32_t magic;          /* RINGLOG_RING_MAGIC */
	uint16_t version;        /* RINGLOG_RING_VERSION */
	uint16_t header_size;    /* RINGLOG_RING_HEADER_SIZE; data follows */
	uint64_t data_size;      /* power of two, MIN_DATA..MAX_DATA */
	uint32_t incompat_flags; /* a reader refuses any bit it does not know */
	uint32_t compat_flags;   /* a reader ignores bits it does not know */
	uint32_t pid;            /* hints only: the daemon takes identity */
	uint32_t tid;            /*   from the kernel, never from here */
	uint64_t created_ns;     /* CLOCK_REALTIME at creation, a hint */
	uint8_t  _pad0[128 - 40];

	/* producer block: written by the producer only */
	uint64_t prod_pos;           /* release-stored after each commit */
	uint64_t lost_records_total; /* records dropped since creation; only grows */
	uint64_t lost_bytes_total;   /*   and their payload bytes */
	uint32_t state;              /* enum ringlog_ring_state */
	uint32_t _pad1;
	/* ringlog_trigger(): any thread of the process (a signal handler
	 * too) writes the reason, then adds 1 to trigger_count with release;
	 * the consumer loads the count with acquire and, when it moved,
	 * copies the reason (text, NUL-padded, validated: a race between two
	 * triggers may tear it, never the count). Zero from a library older
	 * than the fields, which the daemon reads as "never triggered". */
	uint32_t trigger_count;
	/* RINGLOG_RING_EXITING: the process ran its exit handlers (exit(), a
	 * return from main), so a connection that closes afterwards is not a
	 * crash. Judged only on rings whose compat_flags carry
	 * RINGLOG_RING_MARKS_EXIT, so that a library from before the field
	 * never looks crashed. */
	uint32_t exit_flags;
	char     trigger_reason[RINGLOG_RING_TRIGGER_REASON];

	/* consumer block: written by the consumer only */
	uint64_t cons_pos;          /* release-stored once per drained batch */
	uint64_t loss_seen_records; /* total_records of the last LOSS record */
	uint64_t loss_seen_bytes;   /*   consumed (stored before cons_pos) */
	uint32_t consumer_flags;    /* RINGLOG_CONS_* */
	uint32_t wake_bytes;        /* fill level past which a sleeping consumer
	                             * wants to be woken (0: never) */
	uint32_t consumer_caps;     /* RINGLOG_CONS_LOSS_EXT...; zero from a
	                             * consumer older than the field */
	uint32_t trigger_seen;      /* the trigger_count a consumer acted on,
	                             * so that the next (a restarted daemon)
	                             * does not take the same trigger again */
	uint8_t  _pad3[128 - 40];

	uint8_t  reserved[RINGLOG_RING_HEADER_SIZE - 384]; /* zero */
};

/* Every size and offset below is ABI: changing one is a new version. */
static_assert(sizeof(struct ringlog_rec_hdr) == 8, "record header size");
static_assert(offsetof(struct ringlog_rec_hdr, len) == 0, "rec len");
static_assert(offsetof(struct ringlog_rec_hdr, type) == 4, "rec type");
static_assert(offsetof(struct ringlog_rec_hdr, aux) == 6, "rec aux");
static_assert(sizeof(struct ringlog_rec_loss) == 32, "loss record size");
static_assert(offsetof(struct ringlog_rec_loss, records) == 0, "loss records");
static_assert(offsetof(struct ringlog_rec_loss, bytes) == 8, "loss bytes");
static_assert(offsetof(struct ringlog_rec_loss, total_records) == 16, "loss total_records");
static_assert(offsetof(struct ringlog_rec_loss, total_bytes) == 24, "loss total_bytes");
static_assert(sizeof(struct ringlog_rec_loss_ext) == 40, "extended loss record size");
static_assert(offsetof(struct ringlog_rec_loss_ext, first_ts) == 32, "loss first_ts");

static_assert(sizeof(struct ringlog_ring_hdr) == RINGLOG_RING_HEADER_SIZE, "ring header size");
static_assert(offsetof(struct ringlog_ring_hdr, magic) == 0, "magic");
static_assert(offsetof(struct ringlog_ring_hdr, version) == 4, "version");
static_assert(offsetof(struct ringlog_ring_hdr, header_size) == 6, "header_size");
static_assert(offsetof(struct ringlog_ring_hdr, data_size) == 8, "data_size");
static_assert(offsetof(struct ringlog_ring_hdr, incompat_flags) == 16, "incompat_flags");
static_assert(offsetof(struct ringlog_ring_hdr, compat_flags) == 20, "compat_flags");
static_assert(offsetof(struct ringlog_ring_hdr, pid) == 24, "pid");
static_assert(offsetof(struct ringlog_ring_hdr, tid) == 28, "tid");
static_assert(offsetof(struct ringlog_ring_hdr, created_ns) == 32, "created_ns");
static_assert(offsetof(struct ringlog_ring_hdr, prod_pos) == 128, "prod_pos");
static_assert(offsetof(struct ringlog_ring_hdr, lost_records_total) == 136, "lost_records_total");
static_assert(offsetof(struct ringlog_ring_hdr, lost_bytes_total) == 144, "lost_bytes_total");
static_assert(offsetof(struct ringlog_ring_hdr, state) == 152, "state");
static_assert(offsetof(struct ringlog_ring_hdr, trigger_count) == 160, "trigger_count");
static_assert(offsetof(struct ringlog_ring_hdr, exit_flags) == 164, "exit_flags");
static_assert(offsetof(struct ringlog_ring_hdr, trigger_reason) == 168, "trigger_reason");
static_assert(offsetof(struct ringlog_ring_hdr, cons_pos) == 256, "cons_pos");
static_assert(offsetof(struct ringlog_ring_hdr, loss_seen_records) == 264, "loss_seen_records");
static_assert(offsetof(struct ringlog_ring_hdr, loss_seen_bytes) == 272, "loss_seen_bytes");
static_assert(offsetof(struct ringlog_ring_hdr, consumer_flags) == 280, "consumer_flags");
static_assert(offsetof(struct ringlog_ring_hdr, wake_bytes) == 284, "wake_bytes");
static_assert(offsetof(struct ringlog_ring_hdr, consumer_caps) == 288, "consumer_caps");
static_assert(offsetof(struct ringlog_ring_hdr, trigger_seen) == 292, "trigger_seen");
static_assert(offsetof(struct ringlog_ring_hdr, reserved) == 384, "reserved");

/* Bytes a record with a payload of len bytes occupies in the data area.
 * Computed in 64 bits so that no len a producer can write wraps around. */
static inline uint64_t ringlog_rec_total(uint32_t len)
{
	return ((uint64_t)len + RINGLOG_REC_HDR_SIZE + RINGLOG_REC_ALIGN - 1) &
	       ~(uint64_t)(RINGLOG_REC_ALIGN - 1);
}

/* Largest payload a ring of data_size bytes accepts: a record (with its
 * header) may take at most a quarter of the data area, so that the padding
 * wasted at a wrap never costs more than a quarter of a lap. Both sides
 * compute it from data_size; a longer record in a ring is corruption. */
static inline uint32_t ringlog_ring_max_len(uint64_t data_size)
{
	uint64_t quarter = data_size / 4u - RINGLOG_REC_HDR_SIZE;
	return quarter < RINGLOG_REC_MAX_LEN ? (uint32_t)quarter : RINGLOG_REC_MAX_LEN;
}

#endif /* RINGLOG_PROTO_RING_H */
