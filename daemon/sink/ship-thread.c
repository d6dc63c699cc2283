/* daemon/sink/ship-thread.c - the shipping thread (ship-int.h): connect,
 * read sealed chunks back from the segment files (ship-disk.c), keep the
 * window full, persist the acknowledged position, rewind after a failure,
 * give up what is over ship.max_backlog, take a reload's new section, and
 * at shutdown ship the last chunks for at most a moment.
 */
#define _GNU_SOURCE
#include "sink/ship-int.h"
#include "daemon.h"
#include "log.h"
#include "clock.h"
#include "count.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Wait on cv at most ms (with mu held). */
static void wait_ms(struct ship *s, unsigned ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_cond_timedwait(&s->cv, &s->mu, &ts);
}

/* Is there a chunk on disk past what the reader returned? (mu held) */
static bool more_on_disk(const struct ship *s, const struct ship_reader *r, int64_t last_chunk)
{
	if (!r->open)
		return true; /* look for a segment */
	if (r->seg < s->front_seg)
		return true;
	return (int64_t)last_chunk < s->front_chunk;
}

/* The reader's segment, as the loop sees it; a held segment the reader
 * left may now be settled (mu held). */
static void reading(struct ship *s, const struct ship_reader *r)
{
	s->reading_seg = r->open ? r->seg : UINT64_MAX;
	if (s->nheld)
		ship_held_settle(s, false);
}

/* Take the section a reload left in next (mu held; dropped meanwhile):
 * the connection goes, the window is the new one, empty (what was not
 * acknowledged goes again, from the acknowledged position). */
static void apply_reload(struct ship *s)
{
	struct pend *old = s->win;
	natsConnection *nc = s->nc;
	jsCtx *js = s->js;

	s->c = s->next;
	s->off = !s->c.servers[0];
	if (s->next_win) {
		s->win = s->next_win;
		s->cap = s->next_cap;
		s->next_win = NULL;
	} else {
		old = NULL; /* off: the old window stays, unused */
	}
	s->head = s->n = 0;
	s->failed = false;
	/* another stream or host: the old one cannot be asked; what was in
	 * doubt is counted at the next settle, as before probes */
	s->ndoubt = 0;
	s->good_since_ns = 0;
	for (size_t i = 0; i < s->nheld; i++)
		s->held[i].probing = false;
	/* another stream or host may take them: chosen again */
	s->carry.on = false;
	s->pub_any = false;
	s->reload = false;
	s->nc = NULL;
	s->js = NULL;
	s->refusal[0] = '\0';
	s->server[0] = '\0';
	s->error[0] = '\0';
	s->sandboxed = false;
	s->probe_ns = 0;
	s->max_payload = 0;
	snprintf(s->state, sizeof(s->state), "%s", s->off ? "off" : "connecting");
	/* libnats's callbacks take mu: not held while it closes */
	pthread_mutex_unlock(&s->mu);
	jsCtx_Destroy(js);
	natsConnection_Destroy(nc);
	free(old); /* an ack still coming finds the new window: ignored */
	pthread_mutex_lock(&s->mu);
}

void *ship_thread_main(void *arg)
{
	struct ship *s = arg;
	struct ship_reader *r = calloc(1, sizeof(*r));
	int64_t last = -1;        /* last chunk seq returned in r->seg */
	uint64_t min_chunk = 0;   /* ship chunks of r->seg from this seq */
	unsigned backoff = 250;
	bool connected = false, reposition = true;
	struct ship_saved saved = { .seg = UINT64_MAX };

	if (!r)
		return NULL;
	snprintf(r->dir, sizeof(r->dir), "%s", s->dir);
	pthread_mutex_lock(&s->mu);
	for (;;) {
		/* Shutdown: the last chunks go too while the cluster answers,
		 * for at most a moment; the rest goes after the next start. */
		if (s->stop_by_ns && (!connected || s->failed ||
				      d_now(CLOCK_MONOTONIC) >= s->stop_by_ns ||
				      (!s->n && !more_on_disk(s, r, last))))
			break;
		/* Persist the acknowledged position and what is counted not
		 * shipped, off the lock. */
		if (s->dirty) {
			struct ship_saved now = ship_saved_of(s);

			s->dirty = false;
			pthread_mutex_unlock(&s->mu);
			saved.gen = now.gen; /* the rest tells a change */
			if (memcmp(&now, &saved, sizeof(now))) {
				int err = ship_state_save(s, &now);

				if (err < 0) {
					pthread_mutex_lock(&s->mu);
					ship_say(s, LOG_WARNING, "ship: cannot write %s/ship.state: %s; a "
					    "restart would send again what the cluster discards",
					    s->dir, strerror(-err));
					pthread_mutex_unlock(&s->mu);
				}
				saved = now;
			}
			pthread_mutex_lock(&s->mu);
		}
		/* A reload changed the section: what is in flight comes back
		 * first (for at most a moment), so that what the old settings
		 * sent is acknowledged, never sent again under the new ones;
		 * then shipping goes on from the acknowledged position. */
		if (s->reload) {
			if (connected && ship_outstanding(s) &&
			    d_now(CLOCK_MONOTONIC) < s->reload_by_ns) {
				wait_ms(s, 100);
				continue;
			}
			apply_reload(s);
			connected = false;
			reposition = true;
			continue;
		}
		if (s->off) {
			wait_ms(s, 1000);
			continue;
		}
		if (!connected) {
			int err;

			pthread_mutex_unlock(&s->mu);
			if (!s->nc)
				err = ship_connect(s);
			else
				err = 0;
			if (!err)
				err = ship_check_stream(s);
			pthread_mutex_lock(&s->mu);
			if (err) {
				wait_ms(s, err == -EAGAIN ? 250 : 2000);
				continue;
			}
			connected = true;
			s->error[0] = '\0';
			snprintf(s->state, sizeof(s->state), "connected");
			ship_say(s, LOG_NOTICE, "ship: shipping to stream \"%s\" on %s as %s (subject %s)",
			    s->c.stream, s->server, s->c.host, s->c.subject);
		}
		/* After a failure: wait for everything ship_outstanding, then send
		 * again from the first unacknowledged message. */
		if (s->failed) {
			if (ship_outstanding(s)) {
				wait_ms(s, 100);
				continue;
			}
			reposition = true;
			s->failed = false;
			wait_ms(s, backoff);
			backoff = backoff < 2000 ? backoff * 2 : 2000;
			continue;
		}
		if (reposition) {
			struct ship_skips skip = s->skip;
			uint64_t seg;

			ship_resume_point(s, &seg, &min_chunk);
			/* what went out may be in the stream all the same: noted
			 * in case its segment goes before it is acknowledged */
			ship_doubt_keep(s);
			s->n = 0; /* the unacknowledged go again (the same carry) */
			pthread_mutex_unlock(&s->mu);
			last = -1;
			/* The segment held open may be gone from the directory
			 * (the budget deleted it during the outage, and did not
			 * count it: we held it): its descriptor still reads it.
			 * Closed and opened by name, its chunks not acknowledged
			 * were neither sent nor counted (an outsider's test:
			 * about one segment missing in 7 of 7 outages). */
			if (r->open && seg == r->seg) {
				shipr_rewind(r);
			} else {
				/* a held segment's unacknowledged chunks go again
				 * only through its descriptor: closed, they are
				 * counted (reading() below) */
				shipr_close(r);
				if (seg != UINT64_MAX && shipr_open(r, seg) < 0) {
					/* gone: counted when the store deleted it;
					 * never one given up for the backlog */
					uint64_t next = ship_next_kept(s->dir, &skip, seg);

					if (next != UINT64_MAX && shipr_open(r, next) == 0)
						min_chunk = 0;
				}
			}
			pthread_mutex_lock(&s->mu);
			reading(s, r);
			reposition = false;
			continue;
		}
		/* Chunks of deleted segments that went out unacknowledged: the
		 * stream is asked, now that it answers (ship-doubt.c) */
		if (ship_doubt_owed(s)) {
			if (ship_doubt_probe(s) < 0)
				wait_ms(s, 500);
			continue;
		}
		if (s->n >= s->c.max_pending) {
			wait_ms(s, 200);
			continue;
		}
		if (!more_on_disk(s, r, last)) {
			wait_ms(s, 200);
			continue;
		}
		{
			uint64_t front = s->front_seg, limit = s->max_payload ? s->max_payload : 1u << 20;
			uint64_t max_backlog = s->c.max_backlog;
			uint64_t aseg = s->ack_valid ? s->ack_seg : 0, achunk = s->ack_chunk;
			struct ship_skips skip = s->skip;
			bool ackv = s->ack_valid;
			struct ship_part msg;
			int got;

			pthread_mutex_unlock(&s->mu);
			if (!r->open) {
				/* the oldest segment not acknowledged in full, never
				 * one before the acknowledged position */
				uint64_t from = ackv && aseg ? aseg - 1 : UINT64_MAX;
				/* never one given up for the backlog */
				uint64_t seg = ship_next_kept(s->dir, &skip, from);

				if (seg != UINT64_MAX && seg <= front && shipr_open(r, seg) == 0) {
					last = -1;
					min_chunk = ackv && seg == aseg ? achunk + 1 : 0;
				}
				pthread_mutex_lock(&s->mu);
				reading(s, r);
				if (!r->open)
					wait_ms(s, 200);
				continue;
			}
			got = shipr_next(r);
			if (got <= 0) {
				/* the end of a finished segment: on to the next one,
				 * past any given up for the backlog */
				uint64_t next = r->seg < front ? shipr_next_seq(s->dir, r->seg) : UINT64_MAX;

				if (next != UINT64_MAX && next <= front) {
					uint64_t behind = shipr_bytes_from(s->dir, next);

					/* A segment given up is counted once and never
					 * sent: after a reconnection reading starts
					 * again at the acknowledged position, behind
					 * them, and they counted again each time (an
					 * outsider saw 10 times the events missing). */
					while ((behind > max_backlog || ship_skipped(&skip, next)) &&
					       next < front) {
						struct ringlog_seg_file f;
						const char *why;
						char path[1100];
						uint64_t ev = 0, after;

						snprintf(path, sizeof(path), "%s/%016" PRIx64 ".rlseg",
							 s->dir, next);
						if (!ship_skipped(&skip, next) &&
						    ringlog_seg_open(&f, path, &why) == 0) {
							ev = ringlog_count_sum(f.hdr.events, 0);
							ringlog_seg_close(&f);
						}
						pthread_mutex_lock(&s->mu);
						if (!ship_skipped(&s->skip, next)) {
							if (s->carry.on && s->carry.seg == next)
								s->carry.on = false;
							ship_skip_add(s, next);
							ship_doubt_forget(s, next); /* counted */
							skip = s->skip;
							ship_give_up(s, ev, RINGLOG_SHIP_LOST_BACKLOG);
							ship_say(s, LOG_WARNING, "ship: %" PRIu64 " bytes not "
							    "shipped are over ship.max_backlog (%" PRIu64 "): "
							    "segment %" PRIu64 " (%" PRIu64 " events) is not "
							    "shipped", behind, max_backlog, next, ev);
						}
						pthread_mutex_unlock(&s->mu);
						after = shipr_next_seq(s->dir, next);
						if (after == UINT64_MAX)
							break;
						next = after;
						behind = shipr_bytes_from(s->dir, next);
					}
					if (shipr_open(r, next) == 0) {
						last = -1;
						min_chunk = 0;
					}
				}
				pthread_mutex_lock(&s->mu);
				reading(s, r);
				if (next == UINT64_MAX)
					wait_ms(s, 200);
				continue;
			}
			last = (int64_t)r->f.chunk.seq;
			if (r->f.chunk.seq < min_chunk) {
				shipr_absorb(r);
				pthread_mutex_lock(&s->mu);
				continue;
			}
			shipr_absorb(r);
			if (shipr_build(r, s->c.host, &msg) < 0) {
				pthread_mutex_lock(&s->mu);
				wait_ms(s, 200);
				reposition = true;
				continue;
			}
			/* room for the headers within max_payload */
			if (ship_publish(s, r, &msg, limit > 8192 ? limit - 4096 : limit / 2) == 0)
				backoff = 250;
			pthread_mutex_lock(&s->mu);
		}
	}
	pthread_mutex_unlock(&s->mu);
	/* Outstanding acks: a moment for them, so that ship.state says as
	 * much as the cluster has. */
	if (s->js) {
		jsPubOptions po;

		jsPubOptions_Init(&po);
		po.MaxWait = 1000;
		js_PublishAsyncComplete(s->js, &po);
	}
	pthread_mutex_lock(&s->mu);
	/* the held segments the budget deleted: what no ack covered is gone
	 * with this process (the next opens them by name, and they are not
	 * there) */
	ship_held_settle(s, true);
	{
		struct ship_saved now = ship_saved_of(s);

		pthread_mutex_unlock(&s->mu);
		if (now.acked || now.skip.n || now.pending || now.nheld)
			ship_state_save(s, &now);
	}
	shipr_free(r);
	return NULL;
}
