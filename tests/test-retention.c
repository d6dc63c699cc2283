/* tests/test-retention.c - the segment index and the disk budget
 * (daemon/store/retention.c) and the sizes store_configure() derives from
 * the configuration, in process, with the filesystem's free space as the
 * test says it is. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "store-harness.h"
#include "ingest/drain.h"

static struct harness h;

/* The filesystem as the store sees it: st->space (file_space() otherwise). */
static uint64_t fake_avail, fake_total;

static int fake_space(const char *dir, uint64_t *avail, uint64_t *total)
{
	(void)dir;
	*avail = fake_avail;
	*total = fake_total;
	return 0;
}

static void one_mib_budget(struct ringlog_config *c)
{
	c->max_disk = 1u << 20;
	c->max_segment_size = 256u << 10;
}

Test(retention, configure_derives_every_size_from_the_budget)
{
	const struct store_budget *b;

	h_start(&h, one_mib_budget);
	b = &h.st->budget;
	/* chunks: an eighth of a segment, a sixteenth of max_disk, 64 KiB at
	 * least; segments: at most a quarter of max_disk. */
	cr_assert_eq(b->chunk_size, 64u << 10);
	cr_assert_eq(b->seg_max, 256u << 10);
	cr_assert_eq(b->max_disk, 1u << 20);
	cr_assert_eq(b->seal_after_ns, h.cfg.flush_interval_ns / 2);
	cr_assert_eq(b->max_age_ns, h.cfg.max_segment_age_ns);
	h_cleanup(&h);
}

Test(retention, the_oldest_segments_go_to_keep_max_disk)
{
	struct h_disk disk;

	h_start(&h, one_mib_budget);
	h_fill(&h, 40, 10000);
	disk = h_read_disk(&h);
	cr_assert_gt(disk.first_seq, 0, "nothing was deleted");
	cr_assert_leq(h.st->used_bytes, h.st->budget.max_disk + h.st->budget.chunk_size,
		      "%llu bytes used", (unsigned long long)h.st->used_bytes);
	cr_assert_eq(h.st->lost_disk, 0);
	/* The index and the directory agree. */
	{
		unsigned n = 0;

		for (struct segfile *s = h.st->segs; s; s = s->next)
			n++;
		cr_assert_eq(n, disk.segments);
	}
	h_cleanup(&h);
}

Test(retention, make_room_says_rotate_wait_or_full_instead_of_an_errno)
{
	h_start(&h, one_mib_budget);
	h.st->space = fake_space;
	fake_total = 100u << 20;
	fake_avail = 50u << 20;
	cr_assert_eq(ret_make_room(h.st, 4096), ROOM_OK);
	/* Only the segment being written, and it has no chunk yet: full. */
	cr_assert_eq(ret_make_room(h.st, 2u << 20), ROOM_FULL);
	h_emit(&h, 3000);
	h_flush(&h);
	/* Now it has one: the chunk may go there, then the segment closes. */
	cr_assert_eq(ret_make_room(h.st, 2u << 20), ROOM_ROTATE);
	h_cleanup(&h);
}

static void min_free_floor(struct ringlog_config *c)
{
	c->max_disk = 64u << 20;
	c->max_segment_size = 1u << 20;
	c->min_free_bytes = 10u << 20;
}

Test(retention, min_free_is_a_floor_with_the_filesystem_figure_injected)
{
	h_start(&h, min_free_floor);
	h.st->space = fake_space;
	fake_total = 100u << 20;
	fake_avail = 40u << 20; /* plenty above the floor */
	cr_assert_eq(h_emit(&h, 1000), 1000);
	h_flush(&h);
	cr_assert_eq(h.st->stored, 1000);
	/* The filesystem at the floor, only the segment being written to
	 * delete: the chunk is counted lost, never written into min_free, and
	 * the segment closes so that the next room comes from deleting it. */
	fake_avail = 10u << 20;
	cr_assert_eq(h_emit(&h, 1000), 1000);
	drain_all(h.d);
	store_seal(h.st);
	cr_assert_eq(h.st->lost_disk, 1000);
	cr_assert_eq(h.st->stored, 1000);
	cr_assert(h.st->disk_blocked);
	cr_assert_null(h.st->cur);
	/* Still at the floor, no segment can be opened: the rings go on
	 * draining into a chunk that is counted lost at its seal, not left to
	 * overflow as the programs' loss. */
	cr_assert_eq(h_emit(&h, 1000), 1000);
	h_flush(&h);
	cr_assert_eq(ringlog_cons_pending(&h.r->cons), 0);
	cr_assert_eq(h.st->lost_disk, 2000);
	/* Room again: storing resumes, and the gap is reported in-stream. */
	fake_avail = 40u << 20;
	cr_assert_eq(h_emit(&h, 1000), 1000);
	h_flush(&h);
	cr_assert_eq(h.st->stored, 2000);
	cr_assert_not(h.st->disk_blocked);
	cr_assert_eq(h.r->store.lost_disk_pending, 0);
	h_cleanup(&h);
}

Test(retention, a_reload_resizes_chunks_and_segments_and_trims_at_once)
{
	size_t chunk_before;

	h_start(&h, NULL); /* 64 MiB, segments of 1 MiB */
	h_fill(&h, 10, 10000);
	chunk_before = h.st->budget.chunk_size;
	cr_assert_eq(chunk_before, 128u << 10);
	h.cfg.max_disk = 1u << 20;
	store_reload(h.st, &h.cfg);
	cr_assert_eq(h.st->budget.max_disk, 1u << 20);
	cr_assert_eq(h.st->budget.chunk_size, 64u << 10);
	cr_assert_eq(h.st->budget.seg_max, 256u << 10);
	h_flush(&h);
	cr_assert_leq(h.st->used_bytes, (1u << 20) + chunk_before,
		      "%llu bytes used after the reload", (unsigned long long)h.st->used_bytes);
	/* And the next chunks take the new size. */
	h_fill(&h, 5, 10000);
	cr_assert_leq(h.st->used_bytes, (1u << 20) + h.st->budget.chunk_size);
	h_cleanup(&h);
}

/* max_retention is the store's own (store_tick()): nothing of the daemon
 * runs it. Events older than the limit go: the sealed segments at once,
 * the one being written once its last write has landed. */
static void short_retention(struct ringlog_config *c)
{
	c->max_segment_size = 256u << 10;
	c->max_retention_ns = 50000000; /* 50 ms: the config allows 1 s at least */
}

Test(retention, max_retention_expires_segments_on_the_store_tick)
{
	struct h_disk disk;

	h_start(&h, short_retention);
	cr_assert_eq(h.st->budget.max_retention_ns, 50000000);
	h_fill(&h, 10, 7000);
	disk = h_read_disk(&h);
	cr_assert_gt(disk.segments, 1);
	usleep(100000); /* every event stored is now older than the limit */
	store_tick(h.st);
	h_flush(&h);     /* the segment it closed has its last write land */
	h.st->expire_tick_ns = 0; /* the next tick checks again at once */
	store_tick(h.st);
	disk = h_read_disk(&h);
	cr_assert_eq(disk.segments, 0, "%u segments outlived max_retention", disk.segments);
	cr_assert_null(h.st->segs);
	cr_assert_eq(h.st->used_bytes, 0);
	/* and storing goes on */
	h_fill(&h, 1, 1000);
	cr_assert_eq(h_read_disk(&h).events, 1000);
	h_cleanup(&h);
}
