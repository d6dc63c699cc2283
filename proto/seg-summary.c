/* proto/seg-summary.c - see seg-summary.h. */
#include "seg-summary.h"
#include "count.h"

#include <string.h>

void ringlog_seg_summarize(struct ringlog_seg_file *f, struct ringlog_seg_summary *s)
{
	memset(s, 0, sizeof(*s));
	s->end = RINGLOG_SEG_HEADER_SIZE;
	if (f->hdr_ok && f->hdr.state == RINGLOG_SEG_CLOSED) {
		s->first_real_ns = f->hdr.first_real_ns;
		s->last_real_ns = f->hdr.last_real_ns;
		s->events = ringlog_count_sum(f->hdr.events, 0); /* a file's say */
		s->lost = ringlog_count_sum(f->hdr.lost, 0);
		s->chunks = f->hdr.chunks;
		s->end = f->hdr.end;
		s->from_header = true;
		return;
	}
	while (ringlog_seg_next(f, true) == 1) {
		s->end = f->off;
		if (f->chunk.events) {
			if (!s->first_real_ns || f->chunk.first_real_ns < s->first_real_ns)
				s->first_real_ns = f->chunk.first_real_ns;
			if (f->chunk.last_real_ns > s->last_real_ns)
				s->last_real_ns = f->chunk.last_real_ns;
		}
		ringlog_count_add(&s->events, f->chunk.events);
		ringlog_count_add(&s->lost, f->chunk.lost);
		s->chunks++;
	}
}
