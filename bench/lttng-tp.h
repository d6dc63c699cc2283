/* bench/lttng-tp.h - the LTTng-UST tracepoint provider for the benchmark:
 * the same standard event as ringlog's (three u64, a 15-character string),
 * plus the same event under a name nobody enables (the disabled cost), and
 * the 48-byte event (four u64). */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER bench

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "./lttng-tp.h"

#if !defined(RINGLOG_BENCH_LTTNG_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define RINGLOG_BENCH_LTTNG_TP_H

#include <lttng/tracepoint.h>
#include <stdint.h>

LTTNG_UST_TRACEPOINT_EVENT(bench, std,
	LTTNG_UST_TP_ARGS(uint64_t, a, uint64_t, b, uint64_t, c, const char *, s),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_integer(uint64_t, a, a)
		lttng_ust_field_integer(uint64_t, b, b)
		lttng_ust_field_integer(uint64_t, c, c)
		lttng_ust_field_string(s, s)))

LTTNG_UST_TRACEPOINT_EVENT(bench, small,
	LTTNG_UST_TP_ARGS(uint64_t, a, uint64_t, b, uint64_t, c, uint64_t, d),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_integer(uint64_t, a, a)
		lttng_ust_field_integer(uint64_t, b, b)
		lttng_ust_field_integer(uint64_t, c, c)
		lttng_ust_field_integer(uint64_t, d, d)))
LTTNG_UST_TRACEPOINT_EVENT(bench, verbose,
	LTTNG_UST_TP_ARGS(uint64_t, a, uint64_t, b, uint64_t, c, const char *, s),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_integer(uint64_t, a, a)
		lttng_ust_field_integer(uint64_t, b, b)
		lttng_ust_field_integer(uint64_t, c, c)
		lttng_ust_field_string(s, s)))

#endif

#include <lttng/tracepoint-event.h>
