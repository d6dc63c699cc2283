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

/* The thread let go of the segment the budget deleted under it (or
 * another took its place): what of it no acknowledgement covers will not
 * be sent, and is counted now (mu held). */
void ship_held_let_go(struct ship *s)
{
	uint64_t lost;

	if (!s->held_gone_valid)
		return;
	lost = s->held_gone_events > s->held_gone_acked ? s->held_gone_events - s->held_gone_acked : 0;
	if (lost) {
		ship_give_up(s, lost, RINGLOG_SHIP_LOST_RETENTION);
		ship_say(s, LOG_WARNING, "ship: the disk budget deleted segment %" PRIu64 " while it was "
		    "being shipped: %" PRIu64 " events not shipped", s->held_gone, lost);
	}
	s->held_gone_valid = false;
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

	(void)d;
	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	/* Shipped already, or open in the thread (its descriptor keeps it
	 * readable: it goes out all the same)? */
	if ((!s->ack_valid || seg->seq > s->ack_seg) && seg->seq >= s->skip_below &&
	    seg->seq != s->reading_seg) {
		ship_give_up(s, seg->events, RINGLOG_SHIP_LOST_RETENTION);
		ship_say(s, LOG_WARNING, "ship: the disk budget deleted segment %" PRIu64 " before it was "
		    "shipped: %" PRIu64 " events not shipped", seg->seq, seg->events);
	} else if (seg->seq == s->reading_seg && seg->seq >= s->skip_below &&
		   (!s->ack_valid || seg->seq >= s->ack_seg)) {
		/* held open: it may go out all the same (ship_held_let_go()) */
		ship_held_let_go(s); /* one at a time: an earlier one is settled */
		s->held_gone_valid = true;
		s->held_gone = seg->seq;
		s->held_gone_events = seg->events;
		s->held_gone_acked = s->ack_valid && s->ack_seg == seg->seq ? s->ack_seg_events : 0;
	}
	pthread_mutex_unlock(&s->mu);
}

bool ship_seg_keep(struct daemon *d, const struct segfile *seg)
{
	struct ship *s = ship_g;
	uint64_t unshipped = 0;
	bool keep;

	if (!s)
		return false;
	pthread_mutex_lock(&s->mu);
	keep = !s->off && seg->seq >= s->skip_below && (!s->ack_valid || seg->seq > s->ack_seg ||
	       (seg->seq == s->ack_seg && s->ack_off < seg->bytes));
	if (keep) {
		for (struct segfile *f = d->st->segs; f; f = f->next)
			if (!s->ack_valid || f->seq >= s->ack_seg)
				unshipped += f->bytes;
		keep = unshipped <= s->c.max_backlog;
	}
	pthread_mutex_unlock(&s->mu);
	return keep;
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
		if (f->seq < s->skip_below)
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
		      "s:{s:I,s:I},s:s,s:I,s:I}",
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
		"acked_chunks", (json_int_t)s->acked_chunks);
	pthread_mutex_unlock(&s->mu);
	return j;
}
