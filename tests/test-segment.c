/* tests/test-segment.c - chunks and segment files (daemon/store/segment.c),
 * in process: the store as the drain feeds it, read back with the
 * readers' decoder; and what the store publishes to its sinks. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "store-harness.h"
#include "decode.h"
#include "store/io-ops.h"
#include "clock.h"

static struct harness h;

static void small_segments(struct ringlog_config *c)
{
	c->max_segment_size = 256u << 10; /* chunks of 64 KiB: 3 to a segment */
}

Test(segment, fills_a_chunk_and_seals_it_on_demand)
{
	struct h_disk disk;

	h_start(&h, NULL);
	cr_assert_eq(h_emit(&h, 1000), 1000);
	h_pump(&h);
	/* In the open chunk, not yet on disk: stored counts sealed chunks. */
	cr_assert_eq(h.st->stored, 0);
	cr_assert(h.st->open && h.st->open->events == 1000);
	h_flush(&h);
	cr_assert_eq(h.st->stored, 1000);
	cr_assert_null(h.st->open);
	disk = h_read_disk(&h);
	cr_assert_eq(disk.segments, 1);
	cr_assert_eq(disk.chunks, 1);
	cr_assert_eq(disk.events, 1000);
	cr_assert_eq(disk.damaged, 0);
	h_cleanup(&h);
}

Test(segment, a_full_chunk_is_sealed_and_the_next_one_opened)
{
	struct h_disk disk;
	unsigned total;

	h_start(&h, small_segments);
	cr_assert_eq(h.st->budget.chunk_size, 64u << 10);
	/* 24-byte ring records pack to about 12 bytes: 20,000 events take
	 * several 64 KiB chunks. */
	total = h_fill(&h, 4, 5000);
	disk = h_read_disk(&h);
	cr_assert_eq(disk.events, total);
	cr_assert_gt(disk.chunks, 2, "%llu chunks", (unsigned long long)disk.chunks);
	cr_assert_eq(h.st->stored, total);
	h_cleanup(&h);
}

Test(segment, rotates_by_size_within_the_segment_limit)
{
	struct h_disk disk;
	unsigned total;

	h_start(&h, small_segments);
	total = h_fill(&h, 20, 10000);
	disk = h_read_disk(&h);
	cr_assert_gt(disk.segments, 2, "%u segments", disk.segments);
	cr_assert_eq(disk.events, total);
	for (struct segfile *s = h.st->segs; s; s = s->next)
		cr_assert_leq(s->bytes, h.st->budget.seg_max,
			      "segment %llu: %llu bytes over %llu", (unsigned long long)s->seq,
			      (unsigned long long)s->bytes,
			      (unsigned long long)h.st->budget.seg_max);
	h_cleanup(&h);
}

/* The backend's sync(), held until the test lets it go: the disk taking
 * its time to flush. */
static struct held_sync {
	int fd;
	io_done_fn done;
	void *arg;
} held[64];
static unsigned nheld;
static struct io_ops hold_ops;

static int hold_sync(struct io *io, int fd, io_done_fn done, void *arg)
{
	(void)io;
	cr_assert_lt(nheld, 64);
	held[nheld++] = (struct held_sync){ fd, done, arg };
	return 0;
}

static void hold_syncs(void)
{
	hold_ops = *h.io->ops;
	hold_ops.sync = hold_sync;
	h.io->ops = &hold_ops;
	nheld = 0;
}

/* Rounds only when a test asks for them (store_sync_round()), or when it
 * moves the last one an interval back (past_interval()). */
static void small_segments_rare_syncs(struct ringlog_config *c)
{
	small_segments(c);
	c->sync_interval_ns = 3600000000000ull;
}

static void past_interval(void)
{
	h.st->sync_round_ns -= h.st->budget.sync_interval_ns;
}

static unsigned sync_queue_len(void)
{
	unsigned n = 0;

	for (struct segfile *s = h.st->sync_queue; s; s = s->sync_next)
		n++;
	return n;
}

/* Each rotated segment's CLOSED header lands, then it waits for its round. */
static void settle_seals(void)
{
	for (int i = 0; i < 10000 && h.st->finalizing != sync_queue_len(); i++) {
		uv_run(h.loop, UV_RUN_NOWAIT);
		usleep(1000);
	}
	cr_assert_eq(h.st->finalizing, sync_queue_len(), "%u seals in flight, %u waiting for a round",
		     h.st->finalizing, sync_queue_len());
}

static bool held_fd(int fd)
{
	for (unsigned i = 0; i < nheld; i++)
		if (held[i].fd == fd)
			return true;
	return false;
}

/* A rotated segment is sealed (CLOSED header, fdatasync, close) through
 * the backend, off the loop, and its sync waits for the next round: a sync
 * takes ~40 ms on a virtual disk and every write queued behind it waits as
 * long, so at 10 M events/s a sync per rotation (every 150 ms) made rings
 * overflow (issue 23). Meanwhile the store goes on storing into the next
 * segment; the seal counts as a write in flight (which retention waits
 * for, as for a chunk's); the round syncs every rotated segment and the
 * one being written; a sync that fails leaves its events readable. */
Test(segment, rotated_segments_are_synced_together_in_the_next_round)
{
	struct h_disk disk;
	unsigned total = 0, waiting;
	struct segfile *first;
	char failed_path[200];
	uint64_t gone;

	h_start(&h, small_segments_rare_syncs);
	hold_syncs();
	for (int i = 0; i < 20; i++) {
		total += h_emit(&h, 10000);
		h_pump_chunks(&h);
	}
	store_seal(h.st);
	h_pump_chunks(&h);
	settle_seals();
	waiting = sync_queue_len();
	cr_assert_geq(waiting, 2, "%u rotated segments", waiting);
	cr_assert_eq(nheld, 0, "%u syncs before the interval passed", nheld);
	/* Stored meanwhile, every record: nothing waited for the disk. */
	cr_assert_eq(h.st->stored, total);
	first = h.st->segs;
	cr_assert(first && !first->current && !first->closed && first->inflight == 1,
		  "the first segment: its seal counts as a write in flight");
	cr_assert_geq(first->fd, 0);
	/* Deleted (vacuum, retention) while it waits, it goes without its
	 * sync: a deleted file needs none. */
	gone = first->events;
	cr_assert_eq(ret_vacuum(h.st, h.st->used_bytes - first->bytes, 0, NULL, NULL), 1);
	cr_assert_neq(h.st->segs, first);
	cr_assert_eq(sync_queue_len(), waiting - 1);
	cr_assert_eq(h.st->finalizing, waiting - 1);
	cr_assert_eq(nheld, 0);
	/* The round: every rotated segment, and the one being written. */
	store_sync_round(h.st);
	cr_assert_eq(nheld, waiting, "%u syncs for %u rotated segments and the current",
		     nheld, waiting - 1);
	cr_assert(held_fd(h.st->cur->fd), "the segment being written was not synced");
	cr_assert_eq(h.st->syncing, 1);
	cr_assert_null(h.st->sync_queue);
	store_sync_round(h.st); /* nothing new to sync */
	cr_assert_eq(nheld, waiting);
	/* The disk answers: the first sync fails, the others succeed. */
	snprintf(failed_path, sizeof(failed_path), "%s", ((struct segfile *)held[0].arg)->path);
	for (unsigned i = 0; i < nheld; i++)
		held[i].done(held[i].arg, i == 0 ? -EIO : 0);
	cr_assert_eq(h.st->finalizing, 0);
	cr_assert_eq(h.st->syncing, 0);
	cr_assert_eq(h.st->sync_failures, 1, "status: the failed sync");
	cr_assert(strstr(h.st->sync_error, failed_path) &&
		  strstr(h.st->sync_error, strerror(EIO)), "status: %s", h.st->sync_error);
	for (struct segfile *s = h.st->segs; s; s = s->next)
		cr_assert(s->current || (s->closed && s->fd < 0 && s->inflight == 0),
			  "segment %llu: not sealed", (unsigned long long)s->seq);
	h.io->ops = &io_pool_ops; /* the real sync for what follows */
	h_flush(&h);
	disk = h_read_disk(&h);
	cr_assert_eq(disk.events, total - gone);
	cr_assert_eq(disk.damaged, 0);
	h_cleanup(&h);
}

/* The segment being written is synced at most once per sync_interval, and
 * only when a write completed in it since its last sync: a power loss
 * takes at most an interval of what was written, at any rate (before, a
 * segment was synced only when it rotated: an hour at a trickle). */
Test(segment, the_segment_being_written_is_synced_once_per_interval_when_written)
{
	int fd;

	h_start(&h, small_segments_rare_syncs);
	hold_syncs();
	fd = h.st->cur->fd;
	h_emit(&h, 100);
	h_flush(&h);
	store_sync_tick(h.st);
	cr_assert_eq(nheld, 0, "a sync before the interval passed");
	past_interval();
	store_sync_tick(h.st);
	cr_assert_eq(nheld, 1, "no sync of the written segment after its interval");
	cr_assert_eq(held[0].fd, fd);
	past_interval();
	store_sync_tick(h.st);
	cr_assert_eq(nheld, 1, "a second sync while the first is in flight");
	held[0].done(held[0].arg, 0);
	past_interval();
	store_sync_tick(h.st);
	cr_assert_eq(nheld, 1, "a sync with nothing written since the last");
	h_emit(&h, 100);
	h_flush(&h);
	past_interval();
	store_sync_tick(h.st);
	cr_assert_eq(nheld, 2, "no sync of what was written since");
	held[1].done(held[1].arg, 0);
	h.io->ops = &io_pool_ops;
	cr_assert_eq(h_read_disk(&h).events, 200);
	h_cleanup(&h);
}

static void tight_budget_rare_syncs(struct ringlog_config *c)
{
	small_segments_rare_syncs(c);
	c->max_disk = 2u << 20; /* 8 segments of 256 KiB */
}

/* Over budget, retention must delete the oldest segment, whose sync waits
 * for a round an hour away: it goes without it (a deleted file needs no
 * sync), or the round starts at once for a seal still in flight, and
 * storing goes on. Waiting for the round, the store would stall for the
 * hour, the rings filling. */
Test(segment, a_tight_budget_never_waits_for_the_sync_interval)
{
	unsigned total = 0;
	struct h_disk disk;

	h_start(&h, tight_budget_rare_syncs);
	for (int i = 0; i < 40; i++) {
		total += h_emit(&h, 10000);
		/* 10 s at most: fails if the store waits for the round */
		h_pump_chunks(&h);
	}
	store_sync_round(h.st); /* for what rotated last */
	h_flush(&h);
	disk = h_read_disk(&h);
	cr_assert_gt(total, 2 * (h.st->budget.max_disk / 16), "the budget was never filled");
	cr_assert_lt(disk.events, total, "nothing was deleted: the budget was never reached");
	cr_assert_eq(h.st->stored, total, "stored %llu of %llu", (unsigned long long)h.st->stored,
		     (unsigned long long)total);
	cr_assert_leq(h.st->used_bytes, h.st->budget.max_disk + h.st->budget.chunk_size);
	cr_assert_eq(disk.damaged, 0);
	h_cleanup(&h);
}

static void hour_old_segments(struct ringlog_config *c)
{
	c->max_segment_age_ns = 3600000000000ull;
}

/* The segment's age is moved, not waited for: with a 50 ms age and a real
 * sleep, CI's ASan run under load once took longer than that from
 * store_open() to the first tick, and the segment rotated "before its
 * age". */
Test(segment, rotates_by_age_on_the_tick)
{
	uint64_t first, age;

	h_start(&h, hour_old_segments);
	age = h.st->budget.max_age_ns;
	first = h.st->cur->seq;
	h_emit(&h, 100);
	h_flush(&h);
	store_tick(h.st);
	cr_assert_not_null(h.st->cur, "closed before its age");
	cr_assert_eq(h.st->cur->seq, first, "rotated before its age");
	h.st->cur->created_mono_ns -= age - 1000000000ull; /* a second short of it */
	store_tick(h.st);
	cr_assert_not_null(h.st->cur, "closed a second before its age");
	h.st->cur->created_mono_ns -= 1000000000ull;
	store_tick(h.st);
	cr_assert_null(h.st->cur, "not closed at its age");
	h_emit(&h, 100);
	h_flush(&h);
	cr_assert_gt(h.st->cur->seq, first);
	cr_assert_eq(h_read_disk(&h).events, 200);
	h_cleanup(&h);
}

/* A segment left ONLINE by a crash, its last chunk damaged: the next
 * store seals it from what reads back, RECOVERED, and keeps the rest. */
Test(segment, a_crashed_segment_is_recovered_up_to_its_damaged_chunk)
{
	char from[128], to[128];
	uint64_t seq, chunks;
	struct h_disk disk;
	struct ringlog_seg_file f;
	const char *why;
	int in, out;
	char buf[65536];
	ssize_t n;

	h_start(&h, small_segments);
	for (int i = 0; i < 3; i++) {
		h_emit(&h, 3000);
		h_flush(&h); /* one chunk each */
	}
	seq = h.st->cur->seq;
	chunks = h.st->cur->chunks;
	cr_assert_eq(chunks, 3);
	/* The file as a crash leaves it (header still ONLINE), under the next
	 * name the store would not use for a while. */
	snprintf(from, sizeof(from), "%s/%016llx.rlseg", h.dir, (unsigned long long)seq);
	snprintf(to, sizeof(to), "%s/%016llx.rlseg", h.dir, (unsigned long long)seq + 100);
	cr_assert((in = open(from, O_RDONLY)) >= 0);
	cr_assert((out = open(to, O_WRONLY | O_CREAT | O_EXCL, 0640)) >= 0);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		cr_assert_eq(write(out, buf, (size_t)n), n);
	close(out);
	close(in);
	/* The last chunk's header torn, as a crash mid-write leaves it (the
	 * startup scan reads headers only; a body's damage is the readers' to
	 * find, through its CRC). */
	{
		uint64_t last = 0, at;
		uint8_t b;

		cr_assert_eq(ringlog_seg_open(&f, to, &why), 0);
		for (at = f.off; ringlog_seg_next(&f, true) == 1; at = f.off)
			last = at;
		ringlog_seg_close(&f);
		cr_assert_gt(last, 0);
		cr_assert((out = open(to, O_RDWR)) >= 0);
		at = last; /* its magic */
		cr_assert_eq(pread(out, &b, 1, (off_t)at), 1);
		b ^= 0x5a;
		cr_assert_eq(pwrite(out, &b, 1, (off_t)at), 1);
		close(out);
	}
	h_restart(&h);
	for (struct segfile *s = h.st->segs; s; s = s->next)
		if (s->seq == seq + 100)
			cr_assert_eq(s->chunks, chunks - 1, "recovered %llu chunks",
				     (unsigned long long)s->chunks);
	cr_assert_eq(ringlog_seg_open(&f, to, &why), 0);
	cr_assert_eq(f.hdr.state, RINGLOG_SEG_CLOSED);
	cr_assert(f.hdr.compat_flags & RINGLOG_SEG_RECOVERED);
	cr_assert_eq(f.hdr.chunks, chunks - 1);
	ringlog_seg_close(&f);
	disk = h_read_disk(&h);
	cr_assert_geq(disk.damaged, 1);
	h_cleanup(&h);
}

/* A sink: what the store publishes once each sealed chunk is done. */
struct seen {
	uint64_t chunks, events, next_seal, bytes_ok;
	uint64_t records;
};

static void seen_chunk(struct sink *s, const struct sink_chunk *c)
{
	struct seen *x = s->ctx;
	struct ringlog_chunk_hdr hdr;

	cr_assert_eq(c->seal_no, x->next_seal, "chunks out of sealing order");
	x->next_seal++;
	x->chunks++;
	x->events += c->events;
	cr_assert_not_null(c->bytes, "a chunk was lost");
	memcpy(&hdr, c->bytes, sizeof(hdr));
	if (hdr.magic == RINGLOG_CHUNK_MAGIC && hdr.events == c->events &&
	    ringlog_chunk_crc(&hdr, c->bytes + RINGLOG_CHUNK_HDR_SIZE) == hdr.crc)
		x->bytes_ok++;
}

static void seen_record(struct sink *s, const struct sink_record *rec)
{
	struct seen *x = s->ctx;

	cr_assert_eq(rec->len, 16);
	x->records++;
}

static const struct sink_ops seen_ops = {
	.name = "test", .record = seen_record, .chunk = seen_chunk,
};

Test(segment, a_sink_receives_exactly_the_sealed_chunks)
{
	struct seen x = { 0 };
	struct sink s = { .ops = &seen_ops, .ctx = &x, .want_records = true };
	struct h_disk disk;
	unsigned total;

	h_start(&h, small_segments);
	sink_link(&h.sinks, &s);
	total = h_fill(&h, 10, 7000);
	disk = h_read_disk(&h);
	cr_assert_eq(x.records, total);
	cr_assert_eq(x.chunks, disk.chunks, "told %llu chunks, %llu on disk",
		     (unsigned long long)x.chunks, (unsigned long long)disk.chunks);
	cr_assert_eq(x.events, disk.events);
	cr_assert_eq(x.bytes_ok, x.chunks, "a chunk's bytes were not the ones written");
	cr_assert_gt(disk.segments, 1);
	h_cleanup(&h);
}

/* The store tests one count per record (sink_list.wanting): a sink that
 * stops wanting records gets none, and still gets every sealed chunk. */
Test(segment, records_reach_only_the_sinks_that_want_them)
{
	struct seen a = { 0 }, b = { 0 };
	struct sink sa = { .ops = &seen_ops, .ctx = &a }, sb = { .ops = &seen_ops, .ctx = &b };
	unsigned first, second;

	h_start(&h, small_segments);
	sink_link(&h.sinks, &sa);
	sink_link(&h.sinks, &sb);
	cr_assert_eq(h.sinks.wanting, 0);
	first = h_fill(&h, 2, 5000);
	cr_assert_eq(a.records + b.records, 0, "records to sinks that did not want them");
	cr_assert_gt(a.chunks, 0);
	sink_want(&h.sinks, &sb, true);
	sink_want(&h.sinks, &sb, true); /* twice counts once */
	cr_assert_eq(h.sinks.wanting, 1);
	second = h_fill(&h, 2, 5000);
	cr_assert_eq(a.records, 0);
	cr_assert_eq(b.records, second);
	sink_want(&h.sinks, &sb, false);
	cr_assert_eq(h.sinks.wanting, 0);
	h_fill(&h, 1, 1000);
	cr_assert_eq(b.records, second);
	cr_assert_eq(a.chunks, b.chunks);
	cr_assert_eq(a.events, (uint64_t)first + second + 1000);
	h_cleanup(&h);
}

/* Each backend's sync(): done on the loop with 0 for a file written, and
 * with -EBADF for no file at all. */
static long sync_res[2];
static int sync_done;

static void on_sync(void *arg, long res)
{
	sync_res[(intptr_t)arg] = res;
	sync_done++;
}

static void check_sync(const struct io_ops *ops)
{
	char path[] = "/tmp/ringlog-sync-XXXXXX";
	int fd = mkstemp(path);
	uv_loop_t loop;
	struct io *io;

	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, "x", 1), 1);
	cr_assert_eq(uv_loop_init(&loop), 0);
	io = ops->open(&loop);
	if (!io) {
		close(fd);
		unlink(path);
		uv_loop_close(&loop);
		cr_skip_test("the %s backend is refused here: %s", ops->name, strerror(errno));
	}
	sync_done = 0;
	sync_res[0] = sync_res[1] = 1;
	cr_assert_eq(ops->sync(io, fd, on_sync, (void *)(intptr_t)0), 0);
	cr_assert_eq(ops->sync(io, -1, on_sync, (void *)(intptr_t)1), 0);
	for (int i = 0; i < 2000 && sync_done < 2; i++)
		uv_run(&loop, UV_RUN_ONCE);
	cr_assert_eq(sync_done, 2);
	cr_assert_eq(sync_res[0], 0, "%s: sync of a written file: %ld", ops->name, sync_res[0]);
	cr_assert_eq(sync_res[1], -EBADF, "%s: sync of no file: %ld", ops->name, sync_res[1]);
	ops->close(io);
	uv_run(&loop, UV_RUN_DEFAULT);
	cr_assert_eq(uv_loop_close(&loop), 0);
	close(fd);
	unlink(path);
}

Test(segment, the_io_uring_backend_syncs_off_the_loop)
{
	check_sync(&io_uring_ops);
}

Test(segment, the_thread_pool_backend_syncs_off_the_loop)
{
	check_sync(&io_pool_ops);
}

/* The readers' dedup by ring position (proto/decode.h): records already
 * delivered are dropped, in any order they come again; a chunk that comes
 * after a later one of its ring (a fleet's stream after a resend) is still
 * delivered, once, and so is each part of a range filled from its middle. */
Test(segment, dedup_drops_what_was_delivered_and_takes_a_chunk_that_comes_late)
{
	struct ringlog_dedup_slot s = { 0 };

	/* A: [0, 300) in three records, then C: [600, 900) before B */
	cr_expect(ringlog_dedup_new(&s, 0, 100));
	cr_expect(ringlog_dedup_new(&s, 100, 200));
	cr_expect(ringlog_dedup_new(&s, 200, 300));
	cr_expect(!ringlog_dedup_new(&s, 100, 200), "delivered twice");
	cr_expect(ringlog_dedup_new(&s, 600, 700));
	cr_expect(ringlog_dedup_new(&s, 700, 900));
	cr_expect(!ringlog_dedup_new(&s, 600, 700), "delivered twice");
	/* B, late: [300, 600) */
	cr_expect(ringlog_dedup_new(&s, 300, 400), "a late record is dropped");
	cr_expect(ringlog_dedup_new(&s, 400, 600), "a late record is dropped");
	/* ... and once only */
	cr_expect(!ringlog_dedup_new(&s, 300, 400));
	cr_expect(!ringlog_dedup_new(&s, 400, 600));
	cr_expect(!ringlog_dedup_new(&s, 0, 100));
	/* a range filled from its middle: both sides stay open */
	cr_expect(ringlog_dedup_new(&s, 1200, 1300));
	cr_expect(ringlog_dedup_new(&s, 1000, 1100));
	cr_expect(!ringlog_dedup_new(&s, 1000, 1100));
	cr_expect(ringlog_dedup_new(&s, 900, 1000));
	cr_expect(ringlog_dedup_new(&s, 1100, 1200));
	cr_expect(!ringlog_dedup_new(&s, 1100, 1200));
	cr_expect(!ringlog_dedup_new(&s, 900, 1000));
	/* more jumps than ranges kept: the oldest range is given up (taken
	 * as seen, as before), the newest still take their late records;
	 * ranges of chunks (M apart), not of a PAD */
	{
		const uint64_t M = 1000000, b = 10 * M;

		cr_expect(ringlog_dedup_new(&s, b, b + 100));
		for (uint64_t k = 1; k <= RINGLOG_DEDUP_HOLES + 1; k++)
			cr_expect(ringlog_dedup_new(&s, b + k * M, b + k * M + 100));
		cr_expect(!ringlog_dedup_new(&s, b + 100, b + 200), "the oldest range is kept");
		for (uint64_t k = 2; k <= RINGLOG_DEDUP_HOLES + 1; k++)
			cr_expect(ringlog_dedup_new(&s, (k - 1) * M + b + 100, (k - 1) * M + b + 200),
				  "range %llu of the newest is given up", (unsigned long long)k);
	}
	/* a PAD's jump at every lap uses a range, given up first: a chunk's
	 * range survives four laps (a review: it was the oldest, given up) */
	{
		struct ringlog_dedup_slot t = { 0 };
		const uint64_t M = 1000000;

		cr_expect(ringlog_dedup_new(&t, 0, 100));
		cr_expect(ringlog_dedup_new(&t, M, M + 100)); /* skips a chunk: [100, M) */
		for (uint64_t lap = 1; lap <= 2 * RINGLOG_DEDUP_HOLES; lap++)
			cr_expect(ringlog_dedup_new(&t, M + lap * 1000 + 500, M + lap * 1000 + 600));
		cr_expect(ringlog_dedup_new(&t, 100, 200), "the late chunk was given up for PADs");
	}
}

/* Each segment records a calibration measured again (daemon/clock.c); the
 * next one continues it: a stream's wall time never goes back where a
 * segment ends (the first estimate's rate error put a thread's events
 * drained into the next segment before its last ones in the one before,
 * and `read`, sorting by time, showed seq 15837 after 15839); a clock set
 * back by a second or more is followed. */
Test(segment, the_next_calibration_never_takes_a_stream_back_in_time)
{
	/* 1 GHz TSC measured as 0.99999 GHz at first: 10 s later the old
	 * mapping is 100 us ahead of the wall clock sampled then */
	struct ringlog_seg_clock old = { .tsc_ref = 1000000000, .mono_ref = 5000000000ull,
					 .real_ref = 1795000000000000000ull, .tsc_hz = 999990000 };
	struct ringlog_seg_clock next = { .tsc_ref = 11000000000ull, .mono_ref = 15000000000ull,
					  .real_ref = 1795000010000000000ull, .tsc_hz = 1000000000 };
	struct ringlog_seg_clock n = next;
	uint64_t last_old, first_new;

	clock_continue(&old, &n);
	/* the last event under the old calibration, the next one 10 ns later
	 * under the new: in order */
	last_old = ringlog_dec_real_ns(&old, RINGLOG_RING_CLOCK_TSC, 11000000000ull - 100);
	first_new = ringlog_dec_real_ns(&n, RINGLOG_RING_CLOCK_TSC, 11000000000ull - 90);
	cr_expect_leq(last_old, first_new, "back in time: %llu then %llu",
		      (unsigned long long)last_old, (unsigned long long)first_new);
	cr_expect_gt(ringlog_dec_real_ns(&old, RINGLOG_RING_CLOCK_TSC, 11000000000ull - 100),
		     ringlog_dec_real_ns(&next, RINGLOG_RING_CLOCK_TSC, 11000000000ull - 90),
		     "the case does not go back without clock_continue()");
	/* ... and for a stream of monotonic time alike */
	cr_expect_leq(ringlog_dec_real_ns(&old, 0, 15000000000ull - 100),
		      ringlog_dec_real_ns(&n, 0, 15000000000ull - 90));
	/* no later than needed: at most the old mapping's time there */
	cr_expect_eq(n.real_ref, ringlog_dec_real_ns(&old, RINGLOG_RING_CLOCK_TSC, next.tsc_ref));
	/* a wall clock ahead of the old mapping is taken as it is */
	n = next;
	n.real_ref += 1000000;
	clock_continue(&old, &n);
	cr_expect_eq(n.real_ref, next.real_ref + 1000000);
	/* a clock set back by an hour is followed */
	n = next;
	n.real_ref -= 3600ull * 1000000000ull;
	clock_continue(&old, &n);
	cr_expect_eq(n.real_ref, next.real_ref - 3600ull * 1000000000ull);
}
