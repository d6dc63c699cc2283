/* daemon/ingest/client.h - a peer of the control channel (ctl.c): its
 * identity, its frames in and replies out, and what it registered, for
 * writers (registry.h) and tools (tail, status) alike, whatever transport
 * carries it (transport.h). */
#ifndef RINGLOG_DAEMON_CLIENT_H
#define RINGLOG_DAEMON_CLIENT_H

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bell.h"
#include "ctl.h"
#include "meta.h"
#include "ingest/overload.h"
#include "store/stream.h"

struct daemon;
struct ring;
struct provider;
struct ctl_conn;

/* An object a client hands over with a frame (proto/ctl.h): a descriptor
 * received through SCM_RIGHTS, or a handle value in the client's process
 * (Windows). unix/transport.c / win/transport.c take, map and drop them. */
#ifdef _WIN32
typedef uint64_t d_obj_t;
#define D_OBJ_NONE 0
#else
typedef int d_obj_t;
#define D_OBJ_NONE (-1)
#endif

/* Bytes queued for a peer; the loop writes them when the socket allows.
 * They are buf[head .. head + len): a partial write moves head, not the
 * bytes, so a queue of megabytes (a slow tail's) is not copied again for
 * every write the socket half takes. */
struct txbuf {
	uint8_t *buf;
	size_t head, len, cap, limit;
};

struct tail;

struct client {
	/* What each drain pass reads of every writer, first and together,
	 * in the 80 bytes drain.c's gather_pass() prefetches (two lines
	 * however calloc() aligns it): its rings; those it visits on every
	 * pass, all but the ones that sleep until their bell rings; the bell
	 * page (ingest/bells.c, proto/bell.h), or NULL: then no ring of this
	 * writer sleeps; by slot, the counter's value when last looked at and
	 * the ring that has it. */
	struct client *next;
	struct ring *rings;
	struct ring *awake;
	/* its sleeping rings, the longest asleep first (ingest/bells.c):
	 * a pass sweeps those asleep for a sweep interval, only them */
	struct ring *asleep;
	/* at most the last_visit_ms of c->asleep's head, the queue's oldest:
	 * sweep_due() reads that ring (not otherwise touched, its line cold)
	 * only once this is a sweep interval old */
	uint64_t asleep_since_ms;
	const struct ringlog_bell_page *bell;
	uint32_t *bell_seen;
	struct ring **bell_ring;
	uint32_t bell_top;        /* slots in use are below it */
	uint32_t ovl_npending;    /* reports not stored yet (overload.h) */
	/* Handles of rings released and not yet said RELEASED (released[]):
	 * one frame per pass (reg_send_released()), not one per ring */
	uint32_t nreleased;
	bool gone;           /* connection closed; rings may still hold data */
	bool tr_open;        /* the loop still holds the connection's handle */

	struct daemon *d;
	/* the connection: the transport's own (unix/transport.c,
	 * win/transport.c); NULL for a writer adopted from the fd store */
	struct ctl_conn *conn;
	struct ring **asleep_tail;
	uint32_t nrings;
	bool bell_warned;         /* a bad slot was logged */
	uint32_t id;         /* writer id, daemon-unique */
	uint64_t seq;        /* order of connection: the newest is refused first */
	uint32_t pid, uid, gid; /* Windows: uid is the user SID's last part */
	char comm[16];
	char *exe;
	uint64_t start_real_ns;
	unsigned access;     /* ACCESS_* granted at connect (access.c) */
	bool writer;         /* sent HELLO */
	/* HELLO's clock sample was within a bell gap of ours when it came
	 * (pace_clock_agrees()), in this clock (RINGLOG_RING_CLOCK_TSC or 0):
	 * its rings may sleep by their timestamps from their first visit */
	bool clock_agrees;
	uint32_t hello_clock;
	bool tool;           /* sent STATUS/TAIL */

	uint8_t *rx;
	size_t rx_len;
	struct txbuf tx;

	/* writer */
	const uint8_t *meta_map;
	uint32_t meta_size;
	uint32_t meta_read;  /* bytes of entries parsed */
	struct ringlog_meta meta;
	struct provider **prov;   /* by metadata provider id */
	uint64_t (*prov_sent)[8]; /* enablement last sent, by id */
	uint32_t nprov;
	/* The last ring released, unmapped: the stream a rate limit's report
	 * that arrives after the writer's threads ended goes to (overload.c;
	 * its last report comes at exit, after they ended). */
	struct ring *spent;
	uint64_t *released;       /* nreleased of released_cap (above) */
	uint32_t released_cap;    /* >= nrings + nreleased: see say_released() */
	bool released_warned;     /* handles over REG_RELEASED_KEPT_MAX logged */
	uint64_t ring_bytes;
	struct store_writer store; /* the store's (store/stream.h) */
	uint64_t stored, lost_ring, lost_corrupt;
	uint64_t lost_no_ring;    /* its events no ring could take (overload.c) */
	struct ovl_counts ovl;    /* ingest/overload.c */
	struct ovl_pending *ovl_pending; /* reports not stored yet (overload.h) */
	bool ovl_unsealed;        /* a report stored in a chunk not sealed yet */
	uint64_t ovl_sealed_to;   /* its reports are in chunks of seal_no below */
	struct ringlog_config_policy *pol_sent; /* POLICY last sent, by event id */
	uint32_t npol_sent;
	bool refused;
	uint32_t refusals;   /* REFUSE frames sent: the log gets the first few */
	bool ghost;          /* adopted from the fd store: no connection */
	bool fd_stored;      /* its metadata region is in the fd store */
	uint32_t fd_wid;     /* the writer id in its fd store names */

	struct tail *tail;   /* tool running `ringlog tail` */
	struct sync_wait *syncs; /* SYNC requests not answered yet (sync.c) */

	/* forwarding (forward.c): a backend handle per event id */
	void **fwd_ev;
	uint32_t nfwd_ev;
	uint32_t fwd_next;   /* event ids below it were offered */
};

/* The pass's fields within the prefetched 80 bytes (see the top). */
static_assert(offsetof(struct client, tr_open) < 80, "client: pass fields past 80 bytes");

/* ctl.c: frames, replies and the life of a connection. client_send()
 * returns 0, -EPIPE (the peer is gone) or -ENOBUFS (its queue is over its
 * limit: the reply is dropped for it). */
struct client *client_new(struct daemon *d);
int client_send(struct client *c, uint16_t type, const void *payload, uint32_t len);
void client_close(struct client *c);
void client_maybe_free(struct client *c);
/* May a peer of uid with access connect now (self: its client, if made
 * already)? false with why (limits.clients and its reserve for root and
 * readers, limits.clients_per_uid). */
bool ctl_admit(struct daemon *d, const struct client *self, uint32_t uid, unsigned access,
	       char *why, size_t len);
/* The transport read n bytes into c->rx + c->rx_len: handle the frames. */
void client_received(struct client *c, size_t n);
#define CLIENT_RX_CAP (RINGLOG_CTL_MAX + sizeof(struct ringlog_ctl_frame))

/* Queue a then b on t: 0, -ENOBUFS (over t->limit) or -ENOMEM. */
int tx_append(struct txbuf *t, const void *a, size_t alen, const void *b, size_t blen);
/* n bytes of t went out. */
void tx_consumed(struct txbuf *t, size_t n);
/* An ERROR frame {"error": msg} to a tool. */
void tool_error(struct client *c, const char *msg);

#endif /* RINGLOG_DAEMON_CLIENT_H */
