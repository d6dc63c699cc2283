/* tests/test-report.c - a rate limit's report (SUPPRESSED) reaches the store
 * whatever the writer's state when it arrives: its threads ended and their
 * rings released, the store without room, the writer gone meanwhile.
 *
 * In CI (ASan, 2026-11-27) a run of overload::a_rate_limit_stores_... found
 * 75,035 suppressed events, one report, counted in status but in no LOSS
 * record: the daemon placed a report only in a live ring, dropped it when
 * the store refused with anything but STORE_FULL, and freed a writer that
 * left with one pending. The library sends its last report at exit, after
 * its threads ended. Here the daemon's own code (ingest/overload.c, the
 * drain, the store) is driven in process (store-harness.c), so that each of
 * those orders happens every run. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store-harness.h"
#include "ctl.h"
#include "ingest/client.h"
#include "ingest/drain.h"
#include "ingest/overload.h"
#include "sink/sync.h"
#include "store/io-ops.h"

static struct harness h;

#define TICK_ID 1 /* the harness's "Tick" (store-harness.c EVENT_ID) */

/* The frame's payload as the library sends it. */
static int report(uint16_t event, uint64_t count)
{
	struct ringlog_ctl_suppressed m = { .event = event, .count = count };

	return ovl_suppressed(h.c, (const uint8_t *)&m, sizeof(m));
}

/* Chunk writes held until the test lets them go: a slow disk, every chunk
 * in flight, the store without room. */
static struct held_write {
	struct io *io;
	int fd;
	const void *buf;
	size_t len;
	uint64_t off;
	io_done_fn done;
	void *arg;
} held[256];
static unsigned nheld;
static struct io_ops hold_ops;
static const struct io_ops *real_ops;

static int hold_write(struct io *io, int fd, const void *buf, size_t len, uint64_t off,
		      io_done_fn done, void *arg)
{
	cr_assert_lt(nheld, 256);
	held[nheld++] = (struct held_write){ io, fd, buf, len, off, done, arg };
	return 0;
}

static void hold_writes(void)
{
	real_ops = h.io->ops;
	hold_ops = *real_ops;
	hold_ops.write = hold_write;
	h.io->ops = &hold_ops;
	nheld = 0;
}

static void release_writes(void)
{
	h.io->ops = real_ops;
	for (unsigned i = 0; i < nheld; i++)
		cr_assert_eq(real_ops->write(held[i].io, held[i].fd, held[i].buf, held[i].len,
					     held[i].off, held[i].done, held[i].arg), 0);
	nheld = 0;
}

/* Fill the store with loss records of ring r (1 record each, reason
 * corrupt) until it has no room: every chunk written, none completes.
 * Returns how many it took. */
static uint64_t fill_store(struct ring *r)
{
	uint64_t n = 0;
	int rc;

	while ((rc = store_loss(h.st, r, 1, 0, RINGLOG_LOSS_CORRUPT)) == 0) {
		if (++n % 16 == 0)
			store_seal(h.st);
		cr_assert_lt(n, 10000000, "the store never ran out of room");
	}
	cr_assert_eq(rc, STORE_FULL, "store_loss: %d", rc);
	return n;
}

/* A store, and a writer whose one ring stored 100 events: how many. */
static unsigned start(void)
{
	unsigned total;

	h_start(&h, NULL);
	total = h_emit(&h, 100);
	h_pump(&h);
	return total;
}

/* What the store holds at the end: every event, the reports, the filler. */
static void check_disk(unsigned events, uint64_t rate_lost, uint64_t other)
{
	struct h_disk disk;

	h_flush(&h);
	disk = h_read_disk(&h);
	cr_assert_eq(disk.events, events);
	cr_assert_eq(disk.damaged, 0);
	cr_assert_eq(disk.rate_lost_tick, rate_lost, "the store's LOSS records: %llu",
		     (unsigned long long)disk.rate_lost_tick);
	cr_assert_eq(disk.lost_other, other);
	h_cleanup(&h);
}

Test(report, a_report_after_the_writers_threads_ended_goes_into_its_stream)
{
	unsigned total;

	total = start();
	h_finish_ring(&h); /* the program's only thread ended; its ring went */
	cr_assert_eq(report(TICK_ID, 12345), 0);
	cr_assert_eq(h.c->ovl_npending, 0, "not stored at once");
	cr_assert_eq(h.d->ovl.suppressed, 12345, "status");
	check_disk(total, 12345, 0);
}

Test(report, a_report_the_store_has_no_room_for_is_kept_and_stored_once_it_has)
{
	unsigned total;
	uint64_t filler;

	total = start();
	hold_writes();
	filler = fill_store(h.r);
	cr_assert_eq(report(TICK_ID, 500), 0);
	cr_assert_eq(h.c->ovl_npending, 1, "kept for later");
	cr_assert_eq(report(TICK_ID, 250), 0);
	cr_assert_eq(h.c->ovl_npending, 1, "added to the one kept");
	/* the disk answers; the program's thread ends meanwhile */
	release_writes();
	h_finish_ring(&h);
	cr_assert_eq(h.c->ovl_npending, 0, "still pending with room");
	check_disk(total, 750, filler);
}

/* The program exits: its last report arrives, the store has no room, then
 * the connection closes. The writer is kept until its report is stored. */
Test(report, a_writer_that_left_with_a_report_pending_is_kept_until_it_is_stored)
{
	unsigned total;
	uint64_t filler;

	total = start();
	h_finish_ring(&h);
	hold_writes();
	filler = fill_store(h.c->spent);
	cr_assert_eq(report(TICK_ID, 777), 0);
	cr_assert_eq(h.c->ovl_npending, 1);
	h.c->gone = true; /* its connection closed (client_close()) */
	client_maybe_free(h.c);
	cr_assert_eq(h.d->clients, h.c, "the writer was freed with a report pending");
	release_writes();
	for (int i = 0; i < 20000 && h.d->clients; i++) {
		drain_all(h.d);
		uv_run(h.loop, UV_RUN_NOWAIT);
		usleep(500);
	}
	cr_assert_null(h.d->clients, "the writer stayed after its report was stored");
	h.c = NULL; /* freed by the drain */
	check_disk(total, 777, filler);
}

/* ringlog_flush() sends the reports, then SYNC: its answer waits until
 * they are on disk, not merely in a chunk (the answer's sink, sync.c,
 * learns of written chunks as the daemon's does). */
Test(report, a_flush_waits_until_the_report_is_written)
{
	static struct sink sync_sink;
	unsigned total;
	uint64_t filler;

	total = start();
	sync_sink = (struct sink){ .ops = &sync_sink_ops, .ctx = h.d };
	sink_link(&h.sinks, &sync_sink);
	cr_assert_not(ovl_flush_pending(h.c));
	/* stored on arrival, in the open chunk */
	cr_assert_eq(report(TICK_ID, 42), 0);
	cr_assert(ovl_flush_pending(h.c), "a report in an open chunk");
	hold_writes();
	store_seal(h.st); /* as the SYNC frame does (ctl.c), then tells */
	ovl_sealed(h.d);
	cr_assert(ovl_flush_pending(h.c), "a report in a chunk being written");
	/* kept for room, stored once there is */
	filler = fill_store(h.r);
	cr_assert_eq(report(TICK_ID, 8), 0);
	cr_assert_eq(h.c->ovl_npending, 1);
	release_writes();
	h_pump_chunks(&h);
	cr_assert_eq(h.c->ovl_npending, 0);
	cr_assert(ovl_flush_pending(h.c), "the second report is not even sealed");
	store_seal(h.st);
	ovl_sealed(h.d);
	h_pump_chunks(&h);
	cr_assert_not(ovl_flush_pending(h.c), "both written, the flush still waits");
	check_disk(total, 50, filler);
}
