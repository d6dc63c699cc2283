/* proto/seg-summary.h - what a segment holds, in a few numbers: from its
 * header when it was closed cleanly, else from its chunk headers (a crash
 * left it ONLINE). The daemon's index at startup (retention.c) and
 * `ringlog status` with the daemon down both take it from here. */
#ifndef RINGLOG_PROTO_SEG_SUMMARY_H
#define RINGLOG_PROTO_SEG_SUMMARY_H

#include <stdbool.h>
#include <stdint.h>

#include "decode.h"

struct ringlog_seg_summary {
	uint64_t first_real_ns, last_real_ns; /* of its events (0: none) */
	uint64_t events, lost, chunks;
	uint64_t end;       /* offset after the last readable chunk */
	bool from_header;   /* closed cleanly: the header's totals */
};

/* Summarise the segment open in f (ringlog_seg_open()); f is read through
 * (chunk headers only) when its header does not say. */
void ringlog_seg_summarize(struct ringlog_seg_file *f, struct ringlog_seg_summary *s);

#endif /* RINGLOG_PROTO_SEG_SUMMARY_H */
