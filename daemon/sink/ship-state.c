/* daemon/sink/ship-state.c - ship.state: "ringlog-ship 1 HOST SEG CHUNK
 * OFF acked=A skip=SEG pending=N reason=R", the acknowledged position (A
 * 0: none yet), the segment below which all were given up for
 * ship.max_backlog, and the
 * events counted not shipped that no message has carried yet, written to
 * a temporary file and renamed over the old one, so that a crash leaves
 * either (ship-int.h). The three named fields came later: a file without
 * them reads as 0, and an older ringlogd reads the first four only. A
 * restart kept the position alone: the count of what the budget deleted
 * unshipped during an outage was gone with the process, and no loss line
 * ever said it (an outsider's test: 155,000 events missing, none counted).
 */
#define _GNU_SOURCE
#include "sink/ship-int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <unistd.h>

static void state_path(const struct ship *s, char *buf, size_t len, const char *suffix)
{
	snprintf(buf, len, "%s/ship.state%s", s->dir, suffix);
}

void ship_state_load(struct ship *s)
{
	char path[1100], host[RINGLOG_SHIP_HOST_MAX + 1];
	uint64_t seg, chunk, off;
	FILE *f;

	state_path(s, path, sizeof(path), "");
	f = fopen(path, "r");
	if (!f)
		return;
	if (fscanf(f, "ringlog-ship 1 %64s %" SCNu64 " %" SCNu64 " %" SCNu64, host, &seg, &chunk,
		   &off) == 4) {
		uint64_t skip = 0, pending = 0;
		unsigned reason = 0;
		int acked = 1; /* a file from before the field: it had one */

		if (fscanf(f, " acked=%d skip=%" SCNu64 " pending=%" SCNu64 " reason=%u", &acked,
			   &skip, &pending, &reason) == 4) {
			s->skip_below = skip;
			if (pending)
				ship_give_up(s, pending, reason);
		}
		s->ack_valid = acked != 0;
		s->ack_seg = seg;
		s->ack_chunk = chunk;
		s->ack_off = off;
	}
	fclose(f);
}

struct ship_saved ship_saved_of(const struct ship *s)
{
	return (struct ship_saved){
		.acked = s->ack_valid, .seg = s->ack_valid ? s->ack_seg : 0,
		.chunk = s->ack_valid ? s->ack_chunk : 0, .off = s->ack_valid ? s->ack_off : 0,
		.skip = s->skip_below,
		.pending = s->not_shipped_pending, .reason = s->ns_reason,
	};
}

/* Called without mu: the values are passed in. */
int ship_state_save(const struct ship *s, const struct ship_saved *v)
{
	char tmp[1100], path[1100];
	FILE *f;
	int err = 0;

	state_path(s, tmp, sizeof(tmp), ".tmp");
	state_path(s, path, sizeof(path), "");
	f = fopen(tmp, "w");
	if (!f)
		return -errno;
	fprintf(f, "ringlog-ship 1 %s %" PRIu64 " %" PRIu64 " %" PRIu64 " acked=%d skip=%" PRIu64
		" pending=%" PRIu64 " reason=%u\n", s->c.host, v->seg, v->chunk, v->off, v->acked ? 1 : 0,
		v->skip, v->pending, (unsigned)v->reason);
	if (fflush(f) != 0 || fsync(fileno(f)) < 0)
		err = -errno;
	if (fclose(f) != 0 && !err)
		err = -errno;
	if (!err && rename(tmp, path) < 0)
		err = -errno;
	return err;
}
