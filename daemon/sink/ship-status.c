/* daemon/sink/ship-status.c - what shipping shows the loop and counts
 * (ship-int.h): STATUS's "ship" object with the lag taken from the store's
 * index, the lines the thread leaves for the loop to log, the events not
 * shipped, and which segments retention keeps for shipping.
 */
#define _GNU_SOURCE
#include "sink/ship-int.h"
#include "daemon.h"
#include "log.h"
#include "clock.h"
#include "count.h"
#include "sink/shipping.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void ship_say(struct ship *s, int level, const char *fmt, ...)
{
	unsigned i = s->note_gen % 8;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(s->notes[i].text, sizeof(s->notes[i].text), fmt, ap);
	va_end(ap);
	s->notes[i].level = level;
	s->note_gen++;
}

void ship_set_error(struct ship *s, const char *state, const char *fmt, ...)
{
	char was[sizeof(s->error)];
	va_list ap;

	memcpy(was, s->error, sizeof(was));
	va_start(ap, fmt);
	vsnprintf(s->error, sizeof(s->error), fmt, ap);
	va_end(ap);
	snprintf(s->state, sizeof(s->state), "%s", state);
	if (strcmp(was, s->error)) /* said once, not at each retry */
		ship_say(s, LOG_WARNING, "ship: %s", s->error);
}

/* Whether the window has a message of seg in flight (mu held). */
static bool in_window(struct ship *s, uint64_t seg)
{
	for (size_t i = 0; i < s->n; i++)
		if (ship_win_at(s, i)->seg == seg)
			return true;
	return false;
}

/* Of lost events not acknowledged, those neither found in the stream
 * (*found) nor in doubt (*doubt), each bounded by what is left. */
static uint64_t not_found(uint64_t lost, uint64_t *found, uint64_t *doubt)
{
	*found = *found < lost ? *found : lost;
	lost -= *found;
	*doubt = *doubt < lost ? *doubt : lost;
	return lost - *doubt;
}

void ship_held_settle(struct ship *s, bool all)
{
	size_t k = 0;

	for (size_t i = 0; i < s->nheld; i++) {
		struct ship_held *h = &s->held[i];
		uint64_t lost, found = 0, doubt = 0;

		if (!all && (h->probing || h->seg == s->reading_seg || in_window(s, h->seg))) {
			s->held[k++] = *h;
			continue;
		}
		lost = h->events > h->acked ? h->events - h->acked : 0;
		if (s->carry.on && s->carry.seg == h->seg)
			s->carry.on = false; /* its chunk will not go again */
		/* what went out unacknowledged may be in the stream: asked
		 * first (ship-doubt.c); letting go of all, counted */
		if (all)
			ship_doubt_forget(s, h->seg);
		else if (lost && !h->probing)
			doubt = ship_doubt_mark(s, h->seg, &found);
		lost = not_found(lost, &found, &doubt);
		if (lost || found || doubt)
			ship_say(s, LOG_WARNING, "ship: the disk budget deleted segment %" PRIu64 " while "
			    "it was being shipped: %" PRIu64 " events not shipped%s", h->seg, lost,
			    doubt ? "; some sent, not acknowledged: asking the stream" : "");
		if (lost)
			ship_give_up(s, lost, RINGLOG_SHIP_LOST_RETENTION);
		if (doubt)
			s->held[k++] = (struct ship_held){ h->seg, doubt, 0, true };
		s->dirty = true;
	}
	s->nheld = k;
}

bool ship_skipped(const struct ship_skips *k, uint64_t seq)
{
	for (size_t i = 0; i < k->n; i++)
		if (seq >= k->r[i].lo && seq < k->r[i].hi)
			return true;
	return false;
}

uint64_t ship_next_kept(const char *dir, const struct ship_skips *k, uint64_t seq)
{
	do
		seq = shipr_next_seq(dir, seq);
	while (seq != UINT64_MAX && ship_skipped(k, seq));
	return seq;
}

void ship_skip_add(struct ship *s, uint64_t seq)
{
	struct ship_skips *k = &s->skip;
	size_t j = 0;

	for (size_t i = 0; i < k->n; i++) {
		if (seq >= k->r[i].lo && seq < k->r[i].hi)
			return;
		if (k->r[i].hi == seq || k->r[i].lo == seq + 1) {
			/* next to a range: it grows (the budget deletes in
			 * order, the thread gives up in order) */
			if (k->r[i].hi == seq)
				k->r[i].hi++;
			else
				k->r[i].lo--;
			return;
		}
	}
	/* ranges the acknowledged position has passed are never looked at
	 * again: reading resumes after it */
	for (size_t i = 0; i < k->n; i++)
		if (!s->ack_valid || k->r[i].hi > s->ack_seg)
			k->r[j++] = k->r[i];
	k->n = j;
	if (k->n == sizeof(k->r) / sizeof(k->r[0])) {
		/* never seen: the oldest range is forgotten, and should one of
		 * its segments still be on disk behind the acknowledged
		 * position, it is sent, and counted both ways */
		memmove(&k->r[0], &k->r[1], (k->n - 1) * sizeof(k->r[0]));
		k->n--;
	}
	k->r[k->n].lo = seq;
	k->r[k->n].hi = seq + 1;
	k->n++;
}

/* Count a segment given up (mu held). */
void ship_give_up(struct ship *s, uint64_t events, uint32_t reason)
{
	if (!events)
		return;
	ringlog_count_add(&s->not_shipped_total, events);
	ringlog_count_add(&s->not_shipped_pending, events);
	s->ns_reason = reason;
	s->dirty = true; /* ship.state keeps it until a message carries it */
	if (reason < 3)
		ringlog_count_add(&s->ns_by_reason[reason], events);
}

bool ship_tick(struct daemon *d)
{
	struct ship *s = ship_g;
	char lines[8][sizeof(s->notes[0].text)];
	int levels[8], n = 0;
	uint64_t interval;
	bool seal = false;

	if (!s)
		return false;
	pthread_mutex_lock(&s->mu);
	if (s->note_gen - s->note_seen > 8)
		s->note_seen = s->note_gen - 8; /* more than 8 a tick: the newest */
	for (; s->note_seen != s->note_gen; s->note_seen++, n++) {
		unsigned i = s->note_seen % 8;

		memcpy(lines[n], s->notes[i].text, sizeof(lines[n]));
		levels[n] = s->notes[i].level;
	}
	interval = s->c.interval_ns;
	pthread_mutex_unlock(&s->mu);
	for (int i = 0; i < n; i++)
		d_log(levels[i], "%s", lines[i]);
	/* ship.live: the open chunk goes at least every interval */
	if (d->cfg.ship.live && d->st->open && d->st->open->events &&
	    d_now(CLOCK_MONOTONIC) - d->st->open->opened_mono_ns >= interval)
		seal = true;
	return seal;
}

void ship_seg_deleting(struct daemon *d, const struct segfile *seg)
{
	struct ship *s = ship_g;
	uint64_t acked;

	(void)d;
	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	/* Acknowledged in full, or given up for the backlog (counted then)? */
	if ((s->ack_valid && (seg->seq < s->ack_seg ||
			      (seg->seq == s->ack_seg && s->ack_off >= seg->bytes))) ||
	    ship_skipped(&s->skip, seg->seq)) {
		pthread_mutex_unlock(&s->mu);
		return;
	}
	/* What is acknowledged of it: in order, so none past ack_seg. The
	 * acknowledged segment's share was once taken as all (an outsider's
	 * test: a partly shipped segment the budget deleted during an outage,
	 * read past while the thread was on a later one, went uncounted). */
	if (s->ack_valid && seg->seq == s->ack_seg && s->ack_events_seg != seg->seq) {
		/* a message of a later segment acknowledged: all of it was */
		if (s->ack_events_seg != UINT64_MAX) {
			pthread_mutex_unlock(&s->mu);
			return;
		}
		ship_say(s, LOG_WARNING, "ship: the disk budget deleted segment %" PRIu64 ", shipped in "
		    "part; how many of its %" PRIu64 " events were not is not known (ship.state from an "
		    "older ringlogd)", seg->seq, seg->events);
		pthread_mutex_unlock(&s->mu);
		return;
	}
	acked = s->ack_events_seg == seg->seq ? s->ack_seg_events : 0;
	if (seg->seq == s->reading_seg || in_window(s, seg->seq)) {
		/* in use: it may go out all the same (ship_held_settle()) */
		if (s->nheld == SHIP_HELD_MAX)
			ship_held_settle(s, false);
		if (s->nheld == SHIP_HELD_MAX)
			ship_held_settle(s, true); /* never seen: 8 in flight at once */
		s->held[s->nheld++] = (struct ship_held){ seg->seq, seg->events, acked, false };
	} else if (seg->events > acked) {
		uint64_t lost = seg->events - acked, found = 0, doubt;

		if (s->carry.on && s->carry.seg == seg->seq)
			s->carry.on = false; /* its chunk will not go again */
		/* sent and not acknowledged: asked of the stream first */
		doubt = ship_doubt_mark(s, seg->seq, &found);
		if (doubt && s->nheld == SHIP_HELD_MAX)
			ship_held_settle(s, false);
		if (doubt && s->nheld == SHIP_HELD_MAX) {
			ship_doubt_forget(s, seg->seq); /* never seen: counted */
			doubt = 0;
		}
		lost = not_found(lost, &found, &doubt);
		if (doubt)
			s->held[s->nheld++] = (struct ship_held){ seg->seq, doubt, 0, true };
		if (lost)
			ship_give_up(s, lost, RINGLOG_SHIP_LOST_RETENTION);
		/* counted: the thread, which may have read its header before the
		 * file went, must not give it up for the backlog and count it
		 * again (a review found the race) */
		ship_skip_add(s, seg->seq);
		ship_say(s, LOG_WARNING, "ship: the disk budget deleted segment %" PRIu64 " before it was "
		    "shipped: %" PRIu64 " events not shipped%s", seg->seq, lost,
		    doubt ? "; some sent, not acknowledged: asking the stream" : "");
	} else {
		pthread_mutex_unlock(&s->mu);
		return;
	}
	/* On disk before the file goes: the thread writes ship.state on its
	 * next turn, seconds away while it waits on an unreachable cluster,
	 * and a kill -9 meanwhile lost the count (a review found). A segment
	 * a few a second at most while the cluster is away: one small write
	 * each. */
	{
		struct ship_saved now = ship_saved_of(s);
		int err;

		s->dirty = false;
		pthread_mutex_unlock(&s->mu);
		if ((err = ship_state_save(s, &now)) < 0)
			d_log(LOG_WARNING, "ship: cannot write %s/ship.state: %s; a crash now would not "
			      "count segment %" PRIu64 " as not shipped", s->dir, strerror(-err), seg->seq);
	}
}

bool ship_seg_keep(struct daemon *d, const struct segfile *seg)
{
	struct ship *s = ship_g;
	uint64_t unshipped = 0;
	bool keep;

	if (!s)
		return false;
	pthread_mutex_lock(&s->mu);
	keep = !s->off && !ship_skipped(&s->skip, seg->seq) && (!s->ack_valid || seg->seq > s->ack_seg ||
	       (seg->seq == s->ack_seg && s->ack_off < seg->bytes));
	if (keep) {
		for (struct segfile *f = d->st->segs; f; f = f->next)
			if ((!s->ack_valid || f->seq >= s->ack_seg) && !ship_skipped(&s->skip, f->seq))
				unshipped += f->bytes;
		keep = unshipped <= s->c.max_backlog;
	}
	pthread_mutex_unlock(&s->mu);
	return keep;
}

static uint64_t in_doubt(const struct ship *s)
{
	uint64_t n = 0;

	for (size_t i = 0; i < s->nheld; i++)
		if (s->held[i].probing)
			n += s->held[i].events;
	return n;
}

json_t *ship_status(struct daemon *d)
{
	struct ship *s = ship_g;
	json_t *j;
	uint64_t lag_bytes = 0, lag_chunks, now = d_now(CLOCK_REALTIME);
	double lag_s = 0;
	char comp[16];

	if (!d->cfg.ship.servers[0])
		return NULL;
	if (!s || !s->started) /* the thread could not start (logged) */
		return json_pack("{s:s,s:s}", "state", "off",
				 "error", "the shipping thread could not start (see the log)");
	pthread_mutex_lock(&s->mu);
	/* lag from the index: the chunks after the acknowledged one, and
	 * their bytes (a segment's header is not shipped) */
	lag_chunks = 0;
	for (struct segfile *f = d->st->segs; f; f = f->next) {
		if (ship_skipped(&s->skip, f->seq))
			continue; /* given up: never sent */
		if (!s->ack_valid || f->seq > s->ack_seg) {
			lag_bytes += f->bytes > RINGLOG_SEG_HEADER_SIZE ? f->bytes - RINGLOG_SEG_HEADER_SIZE : 0;
			lag_chunks += f->chunks;
		} else if (f->seq == s->ack_seg) {
			lag_bytes += f->bytes > s->ack_off ? f->bytes - s->ack_off : 0;
			lag_chunks += f->chunks > s->ack_chunk + 1 ? f->chunks - s->ack_chunk - 1 : 0;
		}
	}
	if (lag_chunks && s->ack_real_ns && now > s->ack_real_ns)
		lag_s = (double)(now - s->ack_real_ns) / 1e9;
	if (s->c.compress)
		snprintf(comp, sizeof(comp), "zstd:%u", s->c.compress);
	else
		snprintf(comp, sizeof(comp), "none");
	j = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:I,s:I,s:f,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,"
		      "s:{s:I,s:I},s:s,s:I,s:I,s:I,s:I,s:I}",
		"state", s->state, "error", s->error, "server", s->server, "stream", s->c.stream,
		"subject", s->c.subject, "host", s->c.host,
		"lag_bytes", (json_int_t)lag_bytes, "lag_chunks", (json_int_t)lag_chunks,
		"lag_seconds", lag_s, "last_ack_ns", (json_int_t)s->last_ack_real_ns,
		"acked_messages", (json_int_t)s->acked_msgs, "shipped_events", (json_int_t)s->acked_events,
		"shipped_bytes", (json_int_t)s->acked_bytes, "resent", (json_int_t)s->resent,
		"deduplicated", (json_int_t)s->dedup, "not_shipped", (json_int_t)s->not_shipped_total,
		"max_payload", (json_int_t)s->max_payload,
		"not_shipped_by", "retention", (json_int_t)s->ns_by_reason[RINGLOG_SHIP_LOST_RETENTION],
		"backlog", (json_int_t)s->ns_by_reason[RINGLOG_SHIP_LOST_BACKLOG],
		"compress", comp, "shipped_chunk_bytes", (json_int_t)s->acked_raw_bytes,
		"acked_chunks", (json_int_t)s->acked_chunks,
		/* sent unacknowledged, their segment deleted: found in the
		 * stream by a probe, probes sent, events still in doubt */
		"found_in_stream", (json_int_t)s->found_in_stream, "probes", (json_int_t)s->probes,
		"in_doubt", (json_int_t)in_doubt(s));
	pthread_mutex_unlock(&s->mu);
	return j;
}
