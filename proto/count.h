/* proto/count.h - adding up counts that come from outside: the losses a
 * writer reports in its ring (LOSS records, its header's totals, SUPPRESSED
 * frames) and the counts a segment file's headers state.
 *
 * Why: a writer may claim any 64-bit count, and a file may hold any bytes.
 * Added as they come, two large claims wrap to a small number (a loss
 * that vanishes), and a count past INT64_MAX turns negative wherever it
 * becomes a signed JSON integer (`ringlog status --json`, the export
 * formats): one lying writer would make the daemon's totals negative for
 * everybody. So such counts are added here, and stop at INT64_MAX: a liar
 * gets a huge number, never a wrong sign or a loss forgotten.
 */
#ifndef RINGLOG_PROTO_COUNT_H
#define RINGLOG_PROTO_COUNT_H

#include <stdint.h>

#define RINGLOG_COUNT_MAX ((uint64_t)INT64_MAX)

/* a + b, at most RINGLOG_COUNT_MAX (either past it counts as it) */
static inline uint64_t ringlog_count_sum(uint64_t a, uint64_t b)
{
	if (a > RINGLOG_COUNT_MAX)
		a = RINGLOG_COUNT_MAX;
	return b > RINGLOG_COUNT_MAX - a ? RINGLOG_COUNT_MAX : a + b;
}

static inline void ringlog_count_add(uint64_t *to, uint64_t n)
{
	*to = ringlog_count_sum(*to, n);
}

#endif /* RINGLOG_PROTO_COUNT_H */
