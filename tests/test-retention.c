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

/* Every retention class writes its own segment beside the default's, so
 * the sizes come from a share of the budget each: with every lane's
 * segment open at once, they hold a quarter of max_disk at most, and
 * older segments stay to be deleted. Sized from the whole budget, 4
 * classes and the default at 5M held 6.25M open (a review's finding). */
Test(retention, every_class_s_open_segment_together_fit_a_quarter_of_the_budget)
{
	static const uint64_t mib = 1u << 20;
	const uint64_t budgets[] = { 1 * mib, 5 * mib, 8 * mib, 64 * mib, 1024 * mib };
	const uint64_t seg_sizes[] = { 256u << 10, 64 * mib, 1024 * mib };

	h_start(&h, NULL);
	for (unsigned k = 0; k <= 7; k++)
		for (size_t i = 0; i < sizeof(budgets) / sizeof(budgets[0]); i++)
			for (size_t j = 0; j < sizeof(seg_sizes) / sizeof(seg_sizes[0]); j++) {
				struct ringlog_config c = h.cfg;
				const struct store_budget *b = &h.st->budget;
				uint64_t lanes = k + 1;

				if (budgets[i] < lanes * RINGLOG_CONFIG_MAX_DISK_MIN)
					continue; /* the config refuses it */
				c.n_classes = k;
				c.max_disk = budgets[i];
				c.max_segment_size = seg_sizes[j];
				store_configure(h.st, &c);
				cr_expect_leq(lanes * b->seg_max, b->max_disk / 4,
					      "%u classes, max_disk %llu, max_segment_size %llu: "
					      "segments of %llu", k, (unsigned long long)b->max_disk,
					      (unsigned long long)seg_sizes[j],
					      (unsigned long long)b->seg_max);
				cr_expect_leq(2 * b->chunk_size + RINGLOG_SEG_HEADER_SIZE, b->seg_max);
			}
	store_configure(h.st, &h.cfg);
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

/* ------------------------------------------------------------------------
 * Retention classes (issue 28.4): errors in a class of their own with a
 * share of a 2 MiB budget (the least the config takes for one class: 1M
 * for each lane); info events flood the default class.
 */
static void error_class(struct ringlog_config *c)
{
	one_mib_budget(c);
	c->max_disk = 2u << 20;
	c->n_classes = 1;
	memset(&c->classes[0], 0, sizeof(c->classes[0]));
	snprintf(c->classes[0].name, sizeof(c->classes[0].name), "errors");
	c->classes[0].level_min = 1;
	c->classes[0].level_max = 2;
	c->classes[0].min_share_percent = 30;
}

static uint64_t class_bytes(const struct store *st, unsigned lane)
{
	uint64_t n = 0;

	for (const struct segfile *s = st->segs; s; s = s->next)
		n += s->lane == lane ? s->bytes : 0;
	return n;
}

Test(retention, a_flood_of_the_default_class_evicts_its_own_oldest_never_the_class_within_its_share)
{
	unsigned alarms = 0;
	uint64_t peak = 0;
	struct h_disk disk;

	h_start(&h, error_class);
	cr_assert_eq(h.st->nlanes, 2);
	cr_assert_eq(ret_classify(h.st, "Test.Store", 2), 1, "error: the class");
	cr_assert_eq(ret_classify(h.st, "Test.Store", 4), 0, "info: the default");
	cr_assert_eq(ret_classify(h.st, NULL, 0), 1, "level 0 (log always) counts as critical");
	for (unsigned i = 0; i < 60; i++) {
		h_emit(&h, 5000);
		alarms += h_emit_alarm(&h, 5);
		h_emit(&h, 5000);
		h_pump(&h);
		if (h.st->used_bytes > peak)
			peak = h.st->used_bytes;
	}
	h_flush(&h);
	disk = h_read_disk(&h);
	cr_assert_gt(h.st->lanes[0].evicted, 0, "the default class was never evicted: no test");
	cr_assert_eq(h.st->lanes[1].evicted, 0, "the error class lost a segment within its share");
	cr_assert_eq(disk.class_events, alarms, "%llu of %u errors on disk",
		     (unsigned long long)disk.class_events, alarms);
	cr_assert_geq(disk.class_segments, 1);
	cr_assert_leq(peak, h.st->budget.max_disk + h.st->budget.chunk_size,
		      "%llu bytes used at the peak", (unsigned long long)peak);
	cr_assert(strstr(h.st->lanes[0].last_why, "class default was the most over its min_share"),
		  "why: %s", h.st->lanes[0].last_why);
	cr_assert_gt(h.st->nevictions, 0);
	cr_assert_eq(h.st->evictions[0].lane, 0);
	h_cleanup(&h);
}

Test(retention, a_class_over_its_share_loses_its_own_oldest_first)
{
	h_start(&h, error_class);
	h_fill(&h, 2, 5000); /* a little default data, within any budget */
	/* Errors alone far past the budget: the class is the one over its
	 * share, so its oldest go and the default's data stays. */
	for (unsigned i = 0; i < 40; i++) {
		h_emit_alarm(&h, 10000);
		h_pump(&h);
	}
	h_flush(&h);
	cr_assert_gt(h.st->lanes[1].evicted, 0);
	cr_assert_eq(h.st->lanes[0].evicted, 0, "the default class lost data the class overran");
	cr_assert_gt(class_bytes(h.st, 0), 0);
	cr_assert_eq(h.st->lanes[1].forced, 0);
	cr_assert_leq(h.st->used_bytes, h.st->budget.max_disk + h.st->budget.chunk_size);
	h_cleanup(&h);
}

static void young_class(struct ringlog_config *c)
{
	error_class(c);
	c->classes[0].min_share_percent = 0;
	c->classes[0].min_age_ns = 3600000000000ull; /* an hour: all of this test */
}

Test(retention, min_age_protects_a_class_until_nothing_else_can_go_then_forced_says_so)
{
	h_start(&h, young_class);
	/* Errors first, then info past the budget: the errors are younger
	 * than min_age, so the default class's own data goes. */
	h_emit_alarm(&h, 5000);
	h_pump(&h);
	for (unsigned i = 0; i < 30; i++) {
		h_emit(&h, 10000);
		h_pump(&h);
	}
	h_flush(&h);
	cr_assert_gt(h.st->lanes[0].evicted, 0);
	cr_assert_eq(h.st->lanes[1].evicted, 0, "a class younger than min_age lost data");
	/* Errors alone past the budget: nothing but the protected class is
	 * left, and the budget is hard: forced, and said. */
	for (unsigned i = 0; i < 40; i++) {
		h_emit_alarm(&h, 10000);
		h_pump(&h);
	}
	h_flush(&h);
	cr_assert_gt(h.st->lanes[1].forced, 0);
	cr_assert(strstr(h.st->lanes[1].last_why, "forced"), "why: %s", h.st->lanes[1].last_why);
	cr_assert_leq(h.st->used_bytes, h.st->budget.max_disk + h.st->budget.chunk_size);
	h_cleanup(&h);
}

Test(retention, classes_survive_a_restart_and_a_reload_that_removes_them)
{
	unsigned alarms;

	h_start(&h, error_class);
	h_fill(&h, 1, 1000);
	alarms = h_emit_alarm(&h, 100);
	h_pump(&h);
	h_flush(&h);
	h_restart(&h); /* the scan assigns segments to classes by header */
	cr_assert_eq(class_bytes(h.st, 1) > 0, true, "the restarted store lost the class");
	cr_assert_eq(h_read_disk(&h).class_events, alarms);
	/* The class removed by a reload: its segments count as the default's */
	h.cfg.n_classes = 0;
	store_reload(h.st, &h.cfg);
	cr_assert_eq(h.st->nlanes, 1);
	cr_assert_eq(class_bytes(h.st, 1), 0);
	cr_assert_eq(h_read_disk(&h).class_events, alarms, "still on disk, still readable");
	h_emit_alarm(&h, 10);
	h_pump(&h);
	h_flush(&h);
	cr_assert_eq(h_read_disk(&h).class_events, alarms, "no class now: errors go to the default");
	h_cleanup(&h);
}

static void short_retention_class(struct ringlog_config *c)
{
	short_retention(c);
	c->n_classes = 1;
	memset(&c->classes[0], 0, sizeof(c->classes[0]));
	snprintf(c->classes[0].name, sizeof(c->classes[0].name), "errors");
	c->classes[0].level_min = 1;
	c->classes[0].level_max = 2;
}

/* Each class's segment being written, not only the one filled last, is
 * closed by age and by max_retention. */
Test(retention, max_retention_expires_every_class_s_segment_being_written)
{
	h_start(&h, short_retention_class);
	h_emit_alarm(&h, 100);
	h_emit(&h, 1000); /* the default class is the one filled last */
	h_pump(&h);
	h_flush(&h);
	cr_assert_geq(h_read_disk(&h).class_segments, 1);
	usleep(100000);
	store_tick(h.st);
	h_flush(&h);
	h.st->expire_tick_ns = 0;
	store_tick(h.st);
	cr_assert_eq(h_read_disk(&h).segments, 0, "a class's segment outlived max_retention");
	h_cleanup(&h);
}
