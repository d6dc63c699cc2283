/* daemon/sink/ship-state.c - ship.state, one line:
 *
 *   ringlog-ship 1 HOST SEG CHUNK OFF acked=A skip=SEG pending=N reason=R
 *       [given_up=LO-HI,...] [acked_events=SEG:N] [held=SEG:EVENTS:ACKED]...
 *
 * the acknowledged position (A 0: none yet); the segments given up for
 * ship.max_backlog or deleted unshipped, as ranges [LO, HI) (skip=: their top, for
 * an older ringlogd, which took all below it as given up); the events
 * counted not shipped that no message has carried yet; how many events
 * of one segment are acknowledged in order; and the segments the budget
 * deleted while still in use (ship-int.h's held). Written to a temporary
 * file and renamed over the old one, so that a crash leaves either.
 * Fields came in turn: a file without the named ones reads them as 0
 * (none), an older ringlogd reads the fields it knows, and a field this
 * one does not know is skipped.
 *
 * Why each is kept: a restart kept the position alone, and the count of
 * what the budget deleted unshipped during an outage was gone with the
 * process, and no loss line ever said it (an outsider's test: 155,000
 * events missing, none counted); then a kill -9 while the thread held a
 * deleted segment open lost its descriptor and its count (14,198 events
 * missing, none counted).
 */
#define _GNU_SOURCE
#include "sink/ship-int.h"
#include "log.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void state_path(const struct ship *s, char *buf, size_t len, const char *suffix)
{
	snprintf(buf, len, "%s/ship.state%s", s->dir, suffix);
}

/* The held segments a crash let go: each one's file gone, what no
 * acknowledgement covered is counted now; one still there (the crash came
 * between the count and the unlink) is read again by name. */
static void held_from(struct ship *s, uint64_t seg, uint64_t events, uint64_t acked)
{
	char path[1100];

	snprintf(path, sizeof(path), "%s/%016" PRIx64 ".rlseg", s->dir, seg);
	if (access(path, F_OK) == 0 || errno != ENOENT || events <= acked)
		return;
	ship_give_up(s, events - acked, RINGLOG_SHIP_LOST_RETENTION);
	ship_say(s, LOG_WARNING, "ship: the disk budget deleted segment %" PRIu64 " while it was being "
	    "shipped, before the last stop: %" PRIu64 " events not shipped", seg, events - acked);
}

/* The fields after reason=, in any order; unknown ones skipped. */
static void load_more(struct ship *s, FILE *f)
{
	char tok[400];

	while (fscanf(f, " %399s", tok) == 1) {
		uint64_t a, b, c;

		if (!strncmp(tok, "given_up=", 9)) {
			const char *p = tok + 9;
			int n = 0;

			s->skip.n = 0;
			while (s->skip.n < sizeof(s->skip.r) / sizeof(s->skip.r[0]) &&
			       sscanf(p, "%" SCNu64 "-%" SCNu64 "%n", &a, &b, &n) == 2 && a < b) {
				s->skip.r[s->skip.n].lo = a;
				s->skip.r[s->skip.n].hi = b;
				s->skip.n++;
				p += n;
				if (*p != ',')
					break;
				p++;
			}
		} else if (sscanf(tok, "acked_events=%" SCNu64 ":%" SCNu64, &a, &b) == 2) {
			s->ack_events_seg = a;
			s->ack_seg_events = b;
		} else if (sscanf(tok, "held=%" SCNu64 ":%" SCNu64 ":%" SCNu64, &a, &b, &c) == 3) {
			held_from(s, a, b, c);
		}
	}
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
			/* an older file: all below it were given up */
			if (skip) {
				s->skip.r[0].lo = 0;
				s->skip.r[0].hi = skip;
				s->skip.n = 1;
			}
			if (pending)
				ship_give_up(s, pending, reason);
			load_more(s, f);
		}
		s->ack_valid = acked != 0;
		s->ack_seg = seg;
		s->ack_chunk = chunk;
		s->ack_off = off;
	}
	fclose(f);
}

struct ship_saved ship_saved_of(struct ship *s)
{
	struct ship_saved v;

	memset(&v, 0, sizeof(v)); /* compared whole with memcmp(): padding too */
	v.acked = s->ack_valid;
	v.seg = s->ack_valid ? s->ack_seg : 0;
	/* none acknowledged: chunk "-1", so that an older ringlogd, which
	 * reads the position alone, resumes at chunk 0 of segment 0 (with 0
	 * it took chunk 0 as shipped, a review found) */
	v.chunk = s->ack_valid ? s->ack_chunk : UINT64_MAX;
	v.off = s->ack_valid ? s->ack_off : 0;
	v.skip = s->skip;
	v.pending = s->not_shipped_pending;
	v.reason = s->ns_reason;
	v.ev_seg = s->ack_events_seg;
	v.ev = s->ack_seg_events;
	v.nheld = s->nheld;
	memcpy(v.held, s->held, s->nheld * sizeof(s->held[0]));
	v.gen = ++s->state_gen;
	return v;
}

/* Called without mu: the values are passed in. */
static int save(const struct ship *s, const struct ship_saved *v)
{
	uint64_t top = 0;
	char tmp[1100], path[1100];
	FILE *f;
	int err = 0;

	state_path(s, tmp, sizeof(tmp), ".tmp");
	state_path(s, path, sizeof(path), "");
	f = fopen(tmp, "w");
	if (!f)
		return -errno;
	/* skip=: the top of the ranges, what an older ringlogd reads */
	for (size_t i = 0; i < v->skip.n; i++)
		if (v->skip.r[i].hi > top)
			top = v->skip.r[i].hi;
	fprintf(f, "ringlog-ship 1 %s %" PRIu64 " %" PRIu64 " %" PRIu64 " acked=%d skip=%" PRIu64
		" pending=%" PRIu64 " reason=%u", s->c.host, v->seg, v->chunk, v->off, v->acked ? 1 : 0,
		top, v->pending, (unsigned)v->reason);
	for (size_t i = 0; i < v->skip.n; i++)
		fprintf(f, "%s%" PRIu64 "-%" PRIu64, i ? "," : " given_up=", v->skip.r[i].lo,
			v->skip.r[i].hi);
	if (v->ev_seg != UINT64_MAX)
		fprintf(f, " acked_events=%" PRIu64 ":%" PRIu64, v->ev_seg, v->ev);
	for (size_t i = 0; i < v->nheld; i++)
		fprintf(f, " held=%" PRIu64 ":%" PRIu64 ":%" PRIu64, v->held[i].seg,
			v->held[i].events, v->held[i].acked);
	fputc('\n', f);
	if (fflush(f) != 0 || fsync(fileno(f)) < 0)
		err = -errno;
	if (fclose(f) != 0 && !err)
		err = -errno;
	if (!err && rename(tmp, path) < 0)
		err = -errno;
	return err;
}

int ship_state_save(struct ship *s, const struct ship_saved *v)
{
	int err = 0;

	pthread_mutex_lock(&s->save_mu);
	if (v->gen > s->written_gen) {
		err = save(s, v);
		if (!err)
			s->written_gen = v->gen;
	}
	pthread_mutex_unlock(&s->save_mu);
	return err;
}
