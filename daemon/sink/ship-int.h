/* daemon/sink/ship-int.h - the shipping sink's state, shared by its files
 * (the sink's interface is shipping.h; message format proto/ship.h):
 *
 *   ship.c         the loop's entry points: start, reload, stop, sealed
 *                  chunks noted; the ship section as the thread uses it
 *   ship-thread.c  the shipping thread: reads chunks back (ship-disk.c),
 *                  keeps the window full, rewinds after a failure, takes
 *                  a reload's new section
 *   ship-window.c  the publish window: a chunk's messages and their
 *                  headers, the acks (libnats's thread), where to resume
 *   ship-conn.c    the connection and the stream: libnats's options,
 *                  connecting, checking or creating the stream, what a
 *                  refusal or the sandbox (ship-sandbox.c) says
 *   ship-status.c  what the loop shows and counts: STATUS, the log lines
 *                  of the thread, not-shipped accounting, what retention
 *                  keeps
 *   ship-state.c   ship.state, the acknowledged position on disk
 *   ship-doubt.c   chunks sent and never acknowledged of deleted
 *                  segments: asked of the stream before they are counted
 *
 * Three threads touch this state, under one mutex:
 *   the loop      notes sealed chunks (chunk op), deleted segments, STATUS;
 *                 never waits on the network or the disk here
 *   ours          connects, reads chunks back from the segment files
 *                 (ship-disk.c), publishes them asynchronously, writes
 *                 ship.state
 *   libnats's     acknowledgements (ship_on_ack)
 *
 * Exactly once: the message id is the chunk's name (host, boot id,
 * segment, chunk, part), so whatever is sent again (after a crash, an
 * outage, a lost ack) JetStream discards within the stream's duplicate
 * window; and what is acknowledged is never sent again, because the
 * acknowledged position (the longest run of acks from the start of the
 * window) is in ship.state. A failed publish or ack rewinds to the first
 * unacknowledged message once everything outstanding has come back (go-
 * back-N), so that the stream holds a host's chunks in order except
 * around a failure, where readers put them back in order by id.
 *
 * A reload (ship_reload(), on the loop) that changes more than live,
 * interval or max_backlog leaves the new section in next; the thread
 * sends nothing more, waits (5 s at most) for what is in flight, closes the
 * connection and goes on from the acknowledged position with the new
 * settings (apply_reload() in ship-thread.c): nothing acknowledged is sent
 * again, not even to other servers or under another host name.
 *
 * The state status shows: starting, connecting, connected, retrying,
 * disconnected, refused (a server or libnats said no), denied (the
 * service's sandbox), off (a reload emptied ship.servers).
 */
#ifndef RINGLOG_DAEMON_SHIP_INT_H
#define RINGLOG_DAEMON_SHIP_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <nats/nats.h>

#include "config.h"
#include "ship.h"
#include "ship-codec.h"
#include "sink/ship-disk.h"

struct daemon;

enum { P_SENT, P_ACKED, P_FAILED };

/* The ship section as the thread uses it (conf_from()). */
struct ship_conf {
	char host[RINGLOG_SHIP_HOST_MAX], subject[300], stream[64];
	char servers[RINGLOG_SHIP_SERVERS_MAX];
	char shown[RINGLOG_SHIP_SERVERS_MAX]; /* the same without "user:pass@" */
	struct ringlog_config cfg;            /* credentials, stream creation */
	unsigned max_pending;
	unsigned compress;                    /* zstd level, 0: none */
	uint64_t max_backlog, interval_ns;
	uint64_t files;                       /* the files named: inode, size, time */
};

/* The segments given up for ship.max_backlog, and those the budget deleted
 * unshipped: never sent, counted once. Ranges [lo, hi); not one number below
 * which all were: segments in the window or being read lie between two
 * give-ups, and were neither sent nor counted when one number said so (a
 * review found). */
struct ship_skips {
	struct { uint64_t lo, hi; } r[8];
	size_t n;
};
bool ship_skipped(const struct ship_skips *k, uint64_t seq);
/* The first segment after seq (UINT64_MAX: the oldest) in dir that was
 * not given up; UINT64_MAX: none. */
uint64_t ship_next_kept(const char *dir, const struct ship_skips *k, uint64_t seq);

/* A segment deleted while in use (struct ship's held). probing: only
 * chunks in doubt are left of it (events: theirs), ship-doubt.c asks the
 * stream of them. */
struct ship_held {
	uint64_t seg, events, acked;
	bool probing;
};
#define SHIP_HELD_MAX 8

/* A message that went out (or was to) and left the window without an ack
 * in order (ship-doubt.c). */
struct ship_doubt {
	uint64_t seg, chunk, events, created;
	uint8_t boot[8];
	uint32_t tag;
	uint16_t part, parts;
	uint8_t state;
};
#define SHIP_DOUBT_MAX 512

struct pend {
	uint64_t seg, chunk;
	uint16_t part, parts;
	uint32_t tag;          /* the cut's (ship_msg_id()), 0 whole */
	uint8_t state;
	bool out;              /* published: the server may have it */
	uint8_t boot[8];       /* its segment's, for its id */
	uint64_t created;
	uint64_t chunk_events; /* of its chunk (every part) */
	uint32_t events;
	uint64_t bytes;        /* message bytes, as sent (compressed) */
	uint64_t raw_bytes;    /* of the message before compression */
	uint64_t file_end;     /* offset past the chunk in its segment */
	uint64_t last_real_ns;
};

struct ship {
	struct daemon *d;
	pthread_t th;
	bool started;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint64_t stop_by_ns;   /* shutdown: ship what is on disk until then */

	/* configuration: the thread's own copy (it never reads d->cfg),
	 * replaced by the thread itself when a reload changed it (next) */
	char dir[1024];        /* storage_dir: fixed for the process's life */
	struct ship_conf c, next;
	struct pend *next_win; /* next's window, allocated by the loop */
	size_t next_cap;
	bool reload;           /* next is waiting */
	uint64_t reload_by_ns; /* wait for outstanding acks until then */
	bool off;              /* a reload emptied ship.servers */

	/* what the store has on disk: chunks up to front_chunk of front_seg,
	 * every chunk of the segments before it (loop -> thread) */
	uint64_t front_seg;
	int64_t front_chunk;   /* -1: none of front_seg yet */

	/* acknowledged: every chunk up to ack_chunk of ack_seg */
	bool ack_valid;
	uint64_t ack_seg, ack_chunk, ack_off, ack_real_ns;
	uint64_t acked_chunks, acked_msgs, acked_events, acked_bytes, acked_raw_bytes;
	uint64_t last_ack_real_ns;
	bool dirty;            /* ship.state is behind */
	uint64_t state_gen;    /* ship_saved_of()'s, in order */
	/* ship.state is written by the thread, and by the loop when the
	 * budget deletes a segment not shipped (ship_seg_deleting()): one at a
	 * time, never an older copy over a newer one (written_gen) */
	pthread_mutex_t save_mu;
	uint64_t written_gen;
	struct ship_skips skip; /* given up for ship.max_backlog */
	uint64_t reading_seg;  /* the segment the thread has open, UINT64_MAX none */
	uint64_t ack_seg_events; /* events acknowledged of ack_events_seg, in order */
	uint64_t ack_events_seg; /* UINT64_MAX: not known (a ship.state from
	                          * before the count) */
	uint64_t cut_events;     /* of the parts of a chunk acknowledged so
	                          * far (counted with its last part) */
	/* Segments the budget deleted while they were still in use: the
	 * thread held one open (its descriptor still reads it), or the window
	 * has its messages in flight. Not counted then, since they may yet be
	 * acknowledged; once neither holds (ship_held_settle()), what of each
	 * no acknowledgement covered is lost and counted. Kept in ship.state:
	 * a crash loses the descriptor, and the next start counts them. */
	struct ship_held held[SHIP_HELD_MAX];
	size_t nheld;
	/* sent, never acknowledged (ship-doubt.c); the stream acknowledging
	 * in order since then (0: not now) */
	struct ship_doubt doubt[SHIP_DOUBT_MAX];
	size_t ndoubt;
	uint64_t good_since_ns;
	uint64_t found_in_stream, probes;

	/* the window, oldest first */
	struct pend *win;
	size_t cap, head, n;
	bool failed;

	/* counters and state for STATUS and the log */
	uint64_t resent, dedup, not_shipped_total, not_shipped_pending;
	uint64_t ns_by_reason[3];
	uint32_t ns_reason;    /* of the pending count */
	/* The chunk whose messages carry the pending count (proto/ship.h's
	 * not_shipped): chosen once, among chunks this process never sent, so
	 * that every copy of it carries the same count. A copy the stream
	 * discards as a duplicate then discards nothing the stored one did
	 * not carry (a test: the count rode on a resent copy JetStream
	 * discarded, and never reached the stream). */
	struct {
		bool on;
		uint64_t seg, chunk, x;
		uint32_t reason;
	} carry;
	bool pub_any;          /* pub_seg, pub_chunk: the newest chunk sent */
	uint64_t pub_seg, pub_chunk;
	char state[64];        /* "connecting", "connected", "refused", ... */
	char error[512];       /* the last problem, for status */
	char server[256];      /* connected URL, without user info */
	char refusal[128];     /* a server refused our credentials: what it said */
	bool sandboxed;        /* the service's sandbox denies the network */
	uint64_t probe_ns;     /* when sandboxed() last looked */
	struct {               /* lines for the loop to log, oldest first */
		char text[600];
		int level;
	} notes[8];
	unsigned note_gen, note_seen;
	uint64_t max_payload;

	struct ringlog_ship_zbuf z; /* the compressed message (the thread's) */

	natsConnection *nc;
	jsCtx *js;
};

extern struct ship *ship_g; /* one daemon per process (ship.c) */

/* ship-status.c. ship_say(): a line for the loop to log (mu held).
 * ship_set_error(): the state and the problem for status, logged once
 * while it stays the same (mu held). ship_give_up(): count a segment's
 * events not shipped, for status and the next message (mu held). */
void ship_say(struct ship *s, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void ship_set_error(struct ship *s, const char *state, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void ship_give_up(struct ship *s, uint64_t events, uint32_t reason);
/* Segment seq given up for the backlog, into s->skip (mu held). */
void ship_skip_add(struct ship *s, uint64_t seq);

/* ship-status.c: count what no acknowledgement covered of each held
 * segment that neither the reader nor the window uses any more, or of
 * all of them (all: this process lets go of them) (mu held). */
void ship_held_settle(struct ship *s, bool all);

/* ship-state.c: ship.state read at start; written (without mu, from a
 * copy ship_saved_of() took under it): 0 or -errno; 0 without writing
 * when a newer copy was written already. */
struct ship_saved {
	bool acked;               /* seg, chunk, off: the acknowledged position */
	uint64_t seg, chunk, off;
	struct ship_skips skip;
	uint64_t pending;         /* not_shipped_pending, not yet in a message */
	uint32_t reason;          /* its ns_reason */
	uint64_t ev_seg, ev;      /* ack_events_seg, ack_seg_events */
	size_t nheld;
	struct ship_held held[SHIP_HELD_MAX];
	uint64_t gen;             /* taken in this order (ship_state_save()) */
};
void ship_state_load(struct ship *s);
struct ship_saved ship_saved_of(struct ship *s);
int ship_state_save(struct ship *s, const struct ship_saved *v);

/* ship-doubt.c (mu held; ship_doubt_probe() lets go of it while it
 * waits). keep: the window's messages, before a go-back-N drops them.
 * acked: a chunk acknowledged in order. forget: a segment counted in
 * full. mark: a segment settled: the events of its chunks found in the
 * stream (*found) and, returned, those in doubt (owed a probe). owed: a
 * probe is due. probe: send one (0, or -EAGAIN: not answered). */
void ship_doubt_keep(struct ship *s);
void ship_doubt_acked(struct ship *s, uint64_t seg, uint64_t chunk);
void ship_doubt_forget(struct ship *s, uint64_t seg);
uint64_t ship_doubt_mark(struct ship *s, uint64_t seg, uint64_t *found);
bool ship_doubt_owed(const struct ship *s);
int ship_doubt_probe(struct ship *s);

/* ship-window.c */
void ship_msg_id(char *buf, size_t len, const char *host, const uint8_t boot[8],
		 uint64_t created, uint64_t seg, uint64_t chunk, unsigned part, unsigned parts,
		 uint32_t tag);
struct pend *ship_win_at(struct ship *s, size_t i);
struct pend *ship_window_new(unsigned max_pending, size_t *cap);
bool ship_outstanding(struct ship *s);
void ship_resume_point(struct ship *s, uint64_t *seg, uint64_t *min_chunk);
int ship_publish(struct ship *s, struct ship_reader *r, struct ship_part *msg, size_t limit);
void ship_on_ack(jsCtx *js, natsMsg *msg, jsPubAck *pa, jsPubAckErr *pae, void *closure);

/* ship-conn.c: ship_options() builds libnats's options from a section
 * without connecting (0, or -EINVAL with why); ship_connect() and
 * ship_check_stream() run on the thread: 0, or -errno with the state set
 * (-EAGAIN: try again soon). ship_strip_userinfo(): nothing secret shown. */
int ship_options(struct ship *s, const struct ship_conf *sc, natsOptions **out, char *why,
		 size_t len);
int ship_connect(struct ship *s);
int ship_check_stream(struct ship *s);
void ship_strip_userinfo(char *url);

/* ship-thread.c */
void *ship_thread_main(void *arg);

#endif /* RINGLOG_DAEMON_SHIP_INT_H */
