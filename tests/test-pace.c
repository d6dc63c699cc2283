/* tests/test-pace.c - the drain's timing policy (daemon/ingest/pace.h):
 * how long it waits between passes, and which idle rings a pass skips.
 * What the policy buys is measured by bench/bench-scale.c, not here. */
#include <criterion/criterion.h>

#include "bell.h"
#include "ingest/pace.h"

/* The waits after n passes that all found the same thing. */
static uint64_t settle(uint64_t ms, int n, bool moved, uint64_t records, unsigned fill, bool tail)
{
	while (n--)
		ms = pace_next_wait(ms, moved, records, fill, tail, false);
	return ms;
}

Test(pace, dense_flow_is_drained_every_millisecond)
{
	cr_expect_eq(settle(DRAIN_IDLE_MAX_MS, 1, true, DRAIN_DENSE_RECORDS, 0, false), DRAIN_BUSY_MS);
	/* few records, but one ring at 1/16 of its threshold in one wait */
	cr_expect_eq(settle(DRAIN_SPARSE_MAX_MS, 1, true, 4, 1024 / 16, false), DRAIN_BUSY_MS);
	/* and it stays there: no wait doubles */
	cr_expect_eq(settle(DRAIN_BUSY_MS, 20, true, 100000, 1, false), DRAIN_BUSY_MS);
}

/* However many rings the records come from: 1,000 writers' bursts of 50
 * are ~1,000 records a millisecond, 50 a ring, each far from its
 * threshold. */
Test(pace, a_trickle_or_small_bursts_wait_longer_each_pass_up_to_its_cap)
{
	cr_expect_eq(settle(DRAIN_BUSY_MS, 1, true, 16, 0, false), 2 * DRAIN_BUSY_MS);
	cr_expect_eq(settle(DRAIN_BUSY_MS, 1, true, DRAIN_DENSE_RECORDS - 1, 10, false),
		     2 * DRAIN_BUSY_MS);
	cr_expect_eq(settle(DRAIN_BUSY_MS, 20, true, 20 * 50, 10, false), DRAIN_SPARSE_MAX_MS);
}

Test(pace, nothing_moving_backs_off_to_the_idle_cap)
{
	cr_expect_eq(settle(DRAIN_BUSY_MS, 1, false, 0, 0, false), DRAIN_IDLE_MS);
	cr_expect_eq(settle(DRAIN_BUSY_MS, 2, false, 0, 0, false), 2 * DRAIN_IDLE_MS);
	cr_expect_eq(settle(DRAIN_BUSY_MS, 20, false, 0, 0, false), DRAIN_IDLE_MAX_MS);
}

Test(pace, a_tail_caps_every_wait)
{
	cr_expect_eq(settle(DRAIN_BUSY_MS, 20, false, 0, 0, true), DRAIN_TAIL_MAX_MS);
	cr_expect_eq(settle(DRAIN_BUSY_MS, 20, true, 16, 0, true), DRAIN_TAIL_MAX_MS);
	cr_expect_eq(settle(DRAIN_IDLE_MAX_MS, 1, true, DRAIN_DENSE_RECORDS, 0, true), DRAIN_BUSY_MS);
}

Test(pace, an_idle_ring_is_visited_after_a_quarter_of_its_silence_up_to_a_cap)
{
	cr_expect_eq(pace_idle_wait(0, false), 0, "a ring with data is visited every pass");
	cr_expect_eq(pace_idle_wait(40, false), 10);
	cr_expect_eq(pace_idle_wait(60000, false), IDLE_VISIT_MAX_MS);
	cr_expect_eq(pace_idle_wait(60000, true), IDLE_VISIT_TAIL_MS,
		     "with a tail, a long-idle ring's first event waits at most %d ms",
		     IDLE_VISIT_TAIL_MS);
}

/* A writer in bursts: 50 events every 50 ms leaves its ring silent 50 ms at
 * a time. With a tail attached it must not wait a quarter of that (its
 * events reached the tail ~12 ms late), and once silent for long it backs
 * off again, so that many idle rings cost little even while tailing. */
Test(pace, with_a_tail_a_ring_active_in_the_last_second_is_visited_every_pass)
{
	for (uint64_t idle = 0; idle < IDLE_VISIT_RECENT_MS; idle += 7)
		cr_assert_eq(pace_idle_wait(idle, true), 0, "idle %llu ms", (unsigned long long)idle);
	cr_expect_eq(pace_idle_wait(IDLE_VISIT_RECENT_MS, true), IDLE_VISIT_TAIL_MS);
	cr_expect_eq(pace_idle_wait(50, false), 12, "without a tail, the quarter as before");
}

/* Finished rings a pass left to release (at most 16 a pass): the next
 * pass comes at once, whatever the flow. */
Test(pace, rings_left_to_release_bring_the_next_pass_at_once)
{
	cr_expect_eq(pace_next_wait(DRAIN_IDLE_MAX_MS, false, 0, 0, false, true), DRAIN_BUSY_MS);
	cr_expect_eq(pace_next_wait(DRAIN_SPARSE_MAX_MS, true, 4, 0, true, true), DRAIN_BUSY_MS);
}

/* A ring with a bell (proto/bell.h) sleeps once it has had nothing for
 * longer than the producer's gap could blur (1.05 ms of ns at most, the
 * loop's ms clock, a pass's length), and not before: until then it is
 * visited on every pass, so that an event within the gap of the last one
 * (which does not ring) is still found. */
Test(pace, a_ring_with_a_bell_sleeps_only_after_a_quiet_time_well_over_the_gap)
{
	cr_expect(!pace_bell_sleeps(0));
	cr_expect(!pace_bell_sleeps(BELL_QUIET_MS - 1));
	cr_expect(pace_bell_sleeps(BELL_QUIET_MS));
	cr_expect_geq(BELL_QUIET_MS, (RINGLOG_BELL_GAP + 999999) / 1000000 + 4,
		      "the quiet time must exceed the gap (in ns, the slowest clock) by 4 ms");
	cr_expect_eq(pace_bell_sweep(true), BELL_SWEEP_TAIL_MS,
		     "with a tail a missed bell costs at most %d ms", BELL_SWEEP_TAIL_MS);
	cr_expect_eq(pace_bell_sweep(false), IDLE_VISIT_MAX_MS,
		     "without, what an idle ring waits anyway");
}

/* A ring may sleep at once by its own timestamps (pace.h): when the
 * newest event it gave us is two gaps old by a clock read before the
 * visit, and the event that last rang its bell is among those drained. */
Test(pace, a_ring_sleeps_at_once_when_its_last_event_is_two_gaps_old)
{
	uint64_t last = 5000000000ull, gap = RINGLOG_BELL_GAP;

	cr_expect(pace_bell_quiet_ts(last + 2 * gap, last, last - 100));
	cr_expect(pace_bell_quiet_ts(last + 2 * gap, last, last), "the ringing event was the last");
	cr_expect(!pace_bell_quiet_ts(last + 2 * gap - 1, last, last - 100),
		  "an event within the gap of the last one does not ring: look again");
	cr_expect(!pace_bell_quiet_ts(last + gap, last, last - 100));
	cr_expect(!pace_bell_quiet_ts(last + 3 * gap, last, last + gap),
		  "the event that rang has not been drained yet (rung, not published)");
	cr_expect(!pace_bell_quiet_ts(last + 3 * gap, 0, 0), "no event seen yet");
	cr_expect(!pace_bell_quiet_ts(0, last, last - 100), "a clock this build cannot read");
	cr_expect(!pace_bell_quiet_ts(last - 1, last, last - 100),
		  "a timestamp ahead of the clock (a writer's lie) keeps its ring awake");
}

Test(pace, a_bell_s_full_timestamp_is_the_latest_with_its_low_half)
{
	uint64_t now = 0x1234567890ull;

	cr_expect_eq(pace_bell_ts(now, (uint32_t)now), now);
	cr_expect_eq(pace_bell_ts(now, (uint32_t)(now - 5)), now - 5);
	cr_expect_eq(pace_bell_ts(now, (uint32_t)(now - 0xffffffffull)), now - 0xffffffffull);
	cr_expect_eq(pace_bell_ts(now, (uint32_t)(now + 1)), now + 1 - (1ull << 32),
		     "a low half ahead of now's is from the lap before");
	cr_expect_eq(pace_bell_ts(0x90ull, 0xffffff00u), 0x90ull - 0x190ull,
		     "near zero it wraps, so the ring stays awake (ts > last_ts)");
}

/* The timestamp rule is used only once a visit showed the ring's clock and
 * ours in step: its newest event within a gap of a clock read after it. */
Test(pace, a_ring_s_clock_agrees_with_ours_only_when_shown_within_a_gap)
{
	uint64_t gap = RINGLOG_BELL_GAP, t = 7000000000ull;

	cr_expect(pace_clock_agrees(t, t));
	cr_expect(pace_clock_agrees(t + gap, t));
	cr_expect(!pace_clock_agrees(t + gap + 1, t),
		  "ours may be that far ahead, or the event that old: not shown");
	cr_expect(!pace_clock_agrees(t - 1, t), "an event stamped after our read: not in step");
	cr_expect(!pace_clock_agrees(t, 0), "no event");
}
