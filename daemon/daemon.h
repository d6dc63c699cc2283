/* daemon/daemon.h - ringlogd's internal interfaces.
 *
 * lifecycle.c starts and stops it; main.c only parses the options.
 * One thread runs a libuv loop: the control channel's frames (ctl.c) over
 * its transport (unix/transport.c: a Unix socket; win/transport.c: a named pipe),
 * clients and their rings (registry.c), draining (drain.c), segment files
 * (segment.c, through unix/file.c / win/file.c), the disk budget
 * (retention.c), live tails (tail.c), status (status.c). Writes leave
 * through one I/O backend (io-ops.h: io_uring or a thread pool on Linux,
 * IOCP on Windows), whose completions come back into the loop.
 */
#ifndef RINGLOG_DAEMON_H
#define RINGLOG_DAEMON_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>
#ifdef _WIN32
#include "win/peer.h"
/* The daemon's log levels, as <syslog.h> numbers them. */
enum { LOG_ERR = 3, LOG_WARNING = 4, LOG_NOTICE = 5, LOG_INFO = 6, LOG_DEBUG = 7 };
typedef uint32_t uid_t;
typedef uint32_t gid_t;
#else
#include <syslog.h>
#endif
#include <jansson.h>

#include "config.h"
#include "ctl.h"
#include "event.h"
#include "meta.h"
#include "ringbuf.h"
#include "segment.h"
#include "decode.h"

#include "store/io-ops.h"
#include "store/store.h"
#include "store/file.h"
#include "sink/sink.h"

struct daemon;
struct client;

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

/* Enablement and counters of one provider name, across all writers. */
struct provider {
	struct provider *next;
	char *name;
	uint64_t kw[8];      /* effective: config rule, raised by tails */
	uint64_t stored;     /* events */
	uint64_t lost_ring;  /* ring overflow the program attributed to it (the
	                      * LOSS record's aux); other losses have no provider */
};

/* One ring of a writer: a stream in segment terms. */
struct ring {
	struct ring *next;
	struct client *c;
	uint32_t id;         /* stream id, daemon-unique */
	uint32_t tid;
	uint32_t clock;      /* RINGLOG_RING_CLOCK_TSC or 0 */
	uint64_t handle;     /* the client's name for it */
	uint64_t ring_id;    /* ring header created_ns, read once (STREAM) */
	void *mem;
	size_t map_size;
	struct ringlog_consumer cons;
	uint32_t seg_gen;    /* segment generation that has its STREAM record */
	uint64_t lost_disk_pending; /* to report in-stream when writing resumes */
	uint32_t held;       /* chunk entries (open or in flight) holding its
	                      * records: their ring space is given back only
	                      * once the chunk is written (segment.c) */
	bool dead;           /* corrupt: detached, mapping released */
	bool fd_stored;      /* a copy is in the service manager's fd store */
	bool handed_over;    /* adopted after a restart, then registered again
	                      * by its live program: the new ring drains it */
	bool finishing;      /* drained for good; released when held == 0 */
};

/* Bytes queued for a peer; the loop writes them when the socket allows. */
struct txbuf {
	uint8_t *buf;
	size_t len, cap, limit;
};

struct tail;

struct client {
	struct client *next;
	struct daemon *d;
	/* the connection: the transport's own (unix/transport.c,
	 * win/transport.c); NULL for a writer adopted from the fd store */
	struct ctl_conn *conn;
	bool tr_open;        /* the loop still holds the connection's handle */
	bool gone;           /* connection closed; rings may still hold data */
	uint32_t id;         /* writer id, daemon-unique */
	uint64_t seq;        /* order of connection: the newest is refused first */
	uint32_t pid, uid, gid; /* Windows: uid is the user SID's last part */
	char comm[16];
	char *exe;
	uint64_t start_real_ns;
	unsigned access;     /* ACCESS_* granted at connect (access.c) */
	bool writer;         /* sent HELLO */
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
	struct ring *rings;
	uint32_t nrings;
	uint64_t ring_bytes;
	uint32_t seg_gen;    /* segment generation that has WRITER + META[..] */
	uint32_t seg_nprov, seg_nev; /* metadata entries already in the segment */
	uint64_t stored, lost_ring, lost_disk, lost_corrupt;
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

struct daemon {
	uv_loop_t *loop;
	struct ringlog_config cfg;
	char config_path[RINGLOG_CONFIG_PATH_MAX];
	bool have_config_path;

	uv_timer_t drain_timer, flush_timer, watchdog_timer, stop_timer;
	/* the control channel: the transport's own (unix/transport.c,
	 * win/transport.c). Producers wake a sleeping daemon through its wake
	 * object (handed to each client with WELCOME) when a ring passes its
	 * high-water mark. */
	struct ctl_listener *lis;
	/* A stop asked from another thread (the Windows service control
	 * manager's): daemon_stop_async(). */
	uv_async_t stop_async;
	int stop_asked, loop_up;
	bool sleeping;       /* rings are flagged RINGLOG_CONS_SLEEPING */
	uint64_t wakeups;    /* times a producer woke us */
	uv_signal_t sig_term, sig_int, sig_hup;
	bool stopping;

	struct client *clients;
	uint32_t nclients;
	uint64_t client_seq;
	uint64_t rx_held;    /* bytes of unfinished frames, all connections */
	gid_t write_gid, read_gid; /* socket_group and read_group, resolved */
	bool have_write_gid, have_read_gid;
	void *write_sid, *read_sid; /* the same as SIDs (Windows: win/access.c) */
	bool socket_activated; /* the listening socket came from systemd */
	uv_timer_t accept_timer; /* accepting paused: out of file descriptors */
	uint32_t next_writer_id, next_stream_id;
	struct provider *providers;

	/* storage (store/store.h) */
	struct store st;

	/* clock calibration */
	struct ringlog_seg_clock clock;
	uint64_t cal_tsc0, cal_mono0;
	uint8_t boot_id[16];
	char host[64];

	/* counters */
	uint64_t lost_ring, lost_corrupt, lost_reader; /* the store counts its own */
	uint64_t rate_events, rate_bytes;     /* per second, smoothed */
	uint64_t rate_prev_events, rate_prev_bytes, rate_prev_ns;
	uint64_t start_real_ns;

	struct tail *tails;
	unsigned ntails;
	unsigned nsyncs;     /* SYNC requests waiting, all clients */
	bool notify;         /* $NOTIFY_SOCKET is set */
	bool fdstore;        /* rings go to the service manager's fd store */

	/* the sinks lifecycle.c hands the store, in the order they are told */
	struct sink fwd_sink, tail_sink, sync_sink;

	/* forwarding to the OS tracer (forward.c) */
	struct fwd *fwd;     /* NULL: off or unavailable */
	char fwd_state[320]; /* "on", "off", "unavailable: why" */
	uint64_t fwd_forwarded, fwd_lost[3]; /* kept while fwd is NULL */
};

/* log.c: the daemon's own diagnostics; level is LOG_ERR .. LOG_DEBUG
 * (<syslog.h>). Rate-limited per call site. */
void d_log_init(bool to_syslog, bool verbose);
void d_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* access.c (Linux: SO_PEERCRED, SO_PEERGROUPS) / win/transport.c (the client's
 * token): who may write and who may read */
enum { ACCESS_WRITE = 1, ACCESS_READ = 2 };
void access_resolve(struct daemon *d);
#ifdef _WIN32
unsigned access_peer_win(const struct daemon *d, const struct peer_id *id);
void access_pipe_sids(const struct daemon *d, const char **out);
#else
unsigned access_peer(const struct daemon *d, int fd, uid_t uid, gid_t gid);
#endif
void access_explain(const struct daemon *d, uid_t uid, unsigned need, char *buf, size_t len);
/* Create storage_dir if missing; one we create belongs to read_group (on
 * Linux; access_resolve() first). 0 or -errno. */
int access_mkdir_store(const struct daemon *d);

/* clock.c */
uint64_t d_now(int clock_id);

/* lifecycle.c: d->cfg is set; start everything the loop runs (0 or -1,
 * logged), and after the loop ends, close it all (d itself is the
 * caller's). */
int daemon_start(struct daemon *d);
void daemon_finish(struct daemon *d);
void d_status_notify(struct daemon *d);

/* notify.c: the sd_notify protocol, without libsystemd (Windows: the
 * service control manager is told by win/service.c instead) */
#ifdef _WIN32
static inline int sd_notify_send(const char *state) { (void)state; return 0; }
#else
int sd_notify_send(const char *state);
/* The same with a descriptor passed along (fd >= 0). */
int sd_notify_fd(const char *state, int fd);
#endif

/* unix/fdstore.c: rings and metadata regions kept in systemd's fd store,
 * so that a restart does not free the rings of programs that exit
 * meanwhile; taken back from LISTEN_FDS. None on Windows. */
#ifdef _WIN32
static inline void fdstore_init(struct daemon *d) { (void)d; }
static inline void fdstore_keep_meta(struct client *c, d_obj_t o) { (void)c; (void)o; }
static inline void fdstore_keep_ring(struct ring *r, d_obj_t o) { (void)r; (void)o; }
static inline void fdstore_forget_ring(struct ring *r) { (void)r; }
static inline void fdstore_forget_meta(struct client *c) { (void)c; }
static inline struct ring *fdstore_ghost_ring(struct daemon *d, const struct client *c,
					      const struct ring *r)
{ (void)d; (void)c; (void)r; return NULL; }
#else
void fdstore_init(struct daemon *d);
void fdstore_keep_meta(struct client *c, d_obj_t fd);  /* fd is consumed */
void fdstore_keep_ring(struct ring *r, d_obj_t fd);
void fdstore_forget_ring(struct ring *r);
void fdstore_forget_meta(struct client *c);
/* Names and descriptors from LISTEN_FDS (unix/transport.c): adopt them. */
void fdstore_adopt(struct daemon *d, char **names, int *fds, unsigned n);
/* The adopted ring that r (just registered by c) maps, or NULL. */
struct ring *fdstore_ghost_ring(struct daemon *d, const struct client *c, const struct ring *r);
#endif
/* Stop as SIGTERM does (lifecycle.c); from the loop thread. */
void daemon_stop(struct daemon *d, const char *why);
/* The same, from any other thread. */
void daemon_stop_async(struct daemon *d);

/* clock.c */
void clock_calibrate_start(struct daemon *d);
void clock_refresh(struct daemon *d);
uint64_t clock_real_ns(const struct daemon *d, uint32_t stream_clock, uint64_t ts);

/* ctl.c: frames, replies and the life of a connection, whatever carries it */
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

/* unix/transport.c (socket, SCM_RIGHTS, eventfd) / win/transport.c (named pipe,
 * handle duplication, event): the transport under ctl.c */
int ctl_listen(struct daemon *d);
void ctl_close_listen(struct daemon *d);
int ctl_wake_open(struct daemon *d);   /* calls drain_woken() */
void ctl_wake_close(struct daemon *d);
void ctl_flush(struct client *c);      /* write what c->tx holds, as it can */
void ctl_close(struct client *c);      /* close the connection's handle */
void ctl_free(struct client *c);       /* what the transport keeps till the end */
void ctl_fini(struct daemon *d);       /* after the loop closed its handles */
/* The object riding on a HELLO or RING frame whose struct is struct_len
 * bytes, now the caller's: map it (or drop it). */
d_obj_t ctl_take_obj(struct client *c, const uint8_t *p, uint32_t len, size_t struct_len);
/* A second reference to o for the fd store, or D_OBJ_NONE when there is
 * no store. */
d_obj_t ctl_dup_obj(struct client *c, d_obj_t o);
void ctl_drop_obj(struct client *c, d_obj_t o);
/* Map a region o names (and consume o): 0, -EPERM (not sealed against
 * shrinking, or not a section), -EFBIG (over max bytes: *size says how
 * big), -errno. Writable or read-only. */
int ctl_map(struct client *c, d_obj_t o, bool writable, uint64_t max, void **mem, size_t *size);
void ctl_unmap(void *mem, size_t size);
extern const char ctl_obj_kind[]; /* what ctl_map() wants, for refusals */
/* WELCOME, with the wake object when it can go along. */
int ctl_send_welcome(struct client *c, const void *w, uint32_t len);

/* registry.c */
int reg_hello(struct client *c, const uint8_t *p, uint32_t len, d_obj_t o);
int reg_ring(struct client *c, const uint8_t *p, uint32_t len, d_obj_t o);
/* Attach a mapped ring to c: the ring, or NULL with *why (the mapping is
 * then the caller's to drop). */
struct ring *reg_ring_add(struct client *c, uint64_t handle, uint32_t tid, void *mem, size_t size,
			  const char **why);
int reg_meta_sync(struct client *c);
void reg_refuse(struct client *c, uint64_t handle, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void reg_ring_release(struct ring *r);
void reg_enable_recompute(struct daemon *d);
struct provider *reg_provider(struct daemon *d, const char *name);

/* drain.c */
uint64_t drain_all(struct daemon *d);
void drain_start(struct daemon *d);
/* A producer passed its high-water mark and woke us (n times). */
void drain_woken(struct daemon *d, uint64_t n);

#ifdef _WIN32
#include "compat-win.h" /* fnmatch */
#else
#include <fnmatch.h>
#endif

/* tail.c */
int tail_start(struct client *c, const uint8_t *json, uint32_t len);
/* An ERROR frame {"error": msg} to a tool. */
void tool_error(struct client *c, const char *msg);
void tail_free(struct tail *t);
void tail_raise(struct daemon *d, struct provider *p);
/* Events dropped for slow readers: told and not yet told. */
uint64_t tail_lost_total(const struct daemon *d);
/* Periodic: answer the tails whose backlog write takes too long. */
void tail_tick(struct daemon *d);
extern const struct sink_ops tail_sink_ops;

/* forward.c: events to the OS tracer (forward.h) */
void fwd_apply(struct daemon *d);   /* start or stop as the config says */
void fwd_sync_client(struct client *c); /* new event definitions */
void fwd_client_free(struct client *c);
void fwd_tick(struct daemon *d);    /* tracers came or went: re-raise */
void fwd_raise(struct daemon *d, struct provider *p);
json_t *fwd_status(struct daemon *d);
extern const struct sink_ops fwd_sink_ops; /* its shutdown closes the backend */

/* sync.c: SYNC is answered once the rings' events are written */
int sync_request(struct client *c, const uint8_t *p, uint32_t len);
void sync_tick(struct daemon *d);
void sync_free(struct client *c);
extern const struct sink_ops sync_sink_ops;

/* status.c */
int status_reply(struct client *c, bool detail);

/* txbuf helpers (ctl.c) */
int tx_append(struct txbuf *t, const void *a, size_t alen, const void *b, size_t blen);

#endif /* RINGLOG_DAEMON_H */
