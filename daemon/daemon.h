/* daemon/daemon.h - ringlogd's internal interfaces.
 *
 * lifecycle.c starts and stops it; main.c only parses the options.
 * One thread runs a libuv loop: the control channel's frames (ctl.c) over
 * its transport (ctl-unix.c: a Unix socket; ctl-win.c: a named pipe),
 * clients and their rings (registry.c), draining (drain.c), segment files
 * (segment.c, through sys-unix.c / sys-win.c), the disk budget
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
#include "peer-win.h"
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

#include "io-ops.h"

struct daemon;
struct client;

/* An object a client hands over with a frame (proto/ctl.h): a descriptor
 * received through SCM_RIGHTS, or a handle value in the client's process
 * (Windows). ctl-unix.c / ctl-win.c take, map and drop them. */
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
	/* the connection (ctl-unix.c / ctl-win.c) */
#ifdef _WIN32
	uv_pipe_t pipe;
	struct peer_id peer; /* process handle, user SID, image */
	uv_write_t wreq;
	uint8_t *wbuf;       /* the bytes of the write in flight */
	bool writing;
#else
	int fd;
	uv_poll_t poll;
	int fds[16];         /* received through SCM_RIGHTS, in order */
	int nfds;
#endif
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

struct chunk;

/* A segment file known to the index (retention.c). */
struct segfile {
	struct segfile *next;  /* by seq, oldest first */
	uint64_t seq;
	char *path;
	uint64_t bytes;      /* file size we account for */
	uint64_t first_real_ns, last_real_ns;
	uint64_t events;
	uint64_t lost;       /* events its LOSS records count (chunk headers) */
	bool current;        /* being written */
	bool closed;
	bool orphan;         /* its file was deleted under us: out of the
	                      * index, freed once its last write lands */
	int inflight;        /* writes not completed */
	int fd;
	bool direct;
	uint64_t off;        /* next chunk offset (current) */
	uint64_t created_mono_ns;
	uint64_t chunks;
	uint64_t begun;      /* chunks started in it (room(), segment.c) */
	uint64_t limit;      /* rotate before passing it (seg_limit()) */
	struct ringlog_seg_hdr *hdr; /* aligned copy (current) */
};

struct chunk {
	uint8_t *mem;        /* RINGLOG_SEG_ALIGN-aligned: header + body */
	size_t cap;          /* bytes of mem */
	size_t len;          /* body bytes */
	uint32_t events;
	uint64_t lost;       /* events its LOSS records count */
	uint64_t first_real_ns, last_real_ns; /* set when sealed */
	uint64_t ts_min[2], ts_max[2]; /* raw event clocks: [0] monotonic, [1] TSC */
	uint64_t opened_mono_ns;
	struct segfile *seg;
	bool busy;           /* sealed: in flight, or written and waiting for
	                      * the chunks sealed before it */
	bool done;           /* the write completed (or failed and was counted) */
	uint64_t seal_no;    /* order of sealing: ring space is released in it */
	/* whose records it carries: to release their ring space once written,
	 * or to count them lost if the write fails */
	struct chunk_who {
		struct ring *r;
		uint32_t events;
		uint64_t loss;                   /* disk loss it reports in-stream:
		                                  * pending again if it is lost */
		uint64_t end;                    /* ring position after them */
		uint64_t seen_records, seen_bytes; /* loss totals as of end */
	} *who;
	uint32_t nwho, capwho;
	size_t span_off;     /* open PACK record, or SIZE_MAX */
	uint32_t span_stream;
	uint64_t span_next;  /* ring position the open PACK continues at */
	uint64_t span_ts;    /* its last timestamp: the next delta's base */
	struct daemon *d;
};

struct daemon {
	uv_loop_t *loop;
	struct ringlog_config cfg;
	char config_path[RINGLOG_CONFIG_PATH_MAX];
	bool have_config_path;

	uv_timer_t drain_timer, flush_timer, watchdog_timer, stop_timer;
	/* the control channel (ctl-unix.c / ctl-win.c). Producers wake a
	 * sleeping daemon through the wake object (handed to each client with
	 * WELCOME) when a ring passes its high-water mark. */
#ifdef _WIN32
	struct pipe_listener *listener;
	PSECURITY_DESCRIPTOR pipe_sd;
	void *write_sid, *read_sid; /* socket_group, read_group (NULL: none) */
	HANDLE wake_event, wake_wait;
	uv_async_t wake_async, stop_async;
	bool wake_open;
#else
	int listen_fd;
	uv_poll_t listen_poll;
	int wake_efd;
	uv_poll_t wake_poll;
#endif
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
	bool socket_activated; /* the listening socket came from systemd */
	uv_timer_t accept_timer; /* accepting paused: out of file descriptors */
	uint32_t next_writer_id, next_stream_id;
	struct provider *providers;

	/* storage */
	struct io *io;
	const char *io_name;
	char io_note[160];   /* why the backend is what it is */
	struct segfile *segs; /* index, oldest first */
	struct segfile *cur;
	uint64_t next_seq;
	uint64_t used_bytes; /* sum of segfile.bytes */
	uint32_t seg_gen;
	struct chunk *chunks;
	unsigned nchunks;
	struct chunk *open;  /* being filled, or NULL */
	uint64_t seal_next;  /* seal_no of the next chunk sealed */
	uint64_t release_next; /* seal_no whose ring space is released next */
	size_t chunk_size;   /* of the chunks opened now (seg_sizes()) */
	size_t chunk_alloc;  /* of the buffers: chunk_size's ceiling */
	uint64_t seg_max;     /* effective max_segment_size */
	bool disk_blocked;   /* last write failed for lack of space */
	int dir_lock;        /* storage_dir's lock (file_lock_dir), or -1 */
	uint64_t dir_id[2];  /* storage_dir's device and inode when locked */
	char disk_error[4400];

	/* clock calibration */
	struct ringlog_seg_clock clock;
	uint64_t cal_tsc0, cal_mono0;
	uint8_t boot_id[16];
	char host[64];

	/* counters */
	uint64_t stored, stored_bytes, lost_disk, lost_ring, lost_corrupt, lost_reader;
	uint64_t lost_deleted; /* stored, then deleted under us (not by budget) */
	uint64_t rate_events, rate_bytes;     /* per second, smoothed */
	uint64_t rate_prev_events, rate_prev_bytes, rate_prev_ns;
	uint64_t start_real_ns;

	struct op_rule *op_rules; /* run-time enablement, newest first (operate.c) */
	uint64_t op_tick_ns;      /* last max_retention check (CLOCK_MONOTONIC) */

	struct tail *tails;
	unsigned ntails;
	unsigned nsyncs;     /* SYNC requests waiting, all clients */
	bool notify;         /* $NOTIFY_SOCKET is set */
	bool fdstore;        /* rings go to the service manager's fd store */

	/* forwarding to the OS tracer (forward.c) */
	struct fwd *fwd;     /* NULL: off or unavailable */
	char fwd_state[320]; /* "on", "off", "unavailable: why" */
	uint64_t fwd_forwarded, fwd_lost[3]; /* kept while fwd is NULL */
};

extern struct daemon *the_daemon;

/* log.c: the daemon's own diagnostics; level is LOG_ERR .. LOG_DEBUG
 * (<syslog.h>). Rate-limited per call site. */
void d_log_init(bool to_syslog, bool verbose);
void d_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* access.c (Linux: SO_PEERCRED, SO_PEERGROUPS) / ctl-win.c (the client's
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
 * service control manager is told by service-win.c instead) */
#ifdef _WIN32
static inline int sd_notify_send(const char *state) { (void)state; return 0; }
#else
int sd_notify_send(const char *state);
/* The same with a descriptor passed along (fd >= 0). */
int sd_notify_fd(const char *state, int fd);
#endif

/* fdstore-unix.c: rings and metadata regions kept in systemd's fd store,
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
/* Names and descriptors from LISTEN_FDS (ctl-unix.c): adopt them. */
void fdstore_adopt(struct daemon *d, char **names, int *fds, unsigned n);
/* The adopted ring that r (just registered by c) maps, or NULL. */
struct ring *fdstore_ghost_ring(struct daemon *d, const struct client *c, const struct ring *r);
#endif
/* Stop as SIGTERM does (lifecycle.c); from the loop thread. */
void daemon_stop(struct daemon *d, const char *why);

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

/* ctl-unix.c (socket, SCM_RIGHTS, eventfd) / ctl-win.c (named pipe,
 * handle duplication, event): the transport under ctl.c */
int ctl_listen(struct daemon *d);
void ctl_close_listen(struct daemon *d);
int ctl_wake_open(struct daemon *d);   /* calls drain_woken() */
void ctl_wake_close(struct daemon *d);
void ctl_flush(struct client *c);      /* write what c->tx holds, as it can */
void ctl_close(struct client *c);      /* close the connection's handle */
void ctl_free(struct client *c);       /* what the transport keeps till the end */
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

/* segment.c */
int seg_init(struct daemon *d);
/* Take storage_dir's lock (again, once it was recreated): 0 or -errno,
 * logged with what to do. */
int seg_lock_dir(struct daemon *d);
/* The configuration was reloaded: size chunks and segments from the new
 * budget and trim the store to it. */
void seg_reload(struct daemon *d);
void seg_fini(struct daemon *d);
/* A LOSS record of ring r's stream (its events go by runs, below), len
 * bytes at l as in the ring (32 or 40, proto/ring.h). 0, -EAGAIN (no room
 * now: it stays in the ring) or -errno. */
int seg_append_ring_loss(struct daemon *d, struct ring *r, uint16_t aux,
			 const struct ringlog_rec_loss *l, uint32_t len);
int seg_append_loss(struct daemon *d, struct ring *r, uint64_t records, uint64_t bytes,
		    uint32_t reason);
/* A run of consecutive event records of one ring, packed straight into the
 * open chunk (the drain's fast path): ready the chunk for a first record
 * that packs into at most need bytes, at ring position at (0, -EAGAIN or
 * -errno; fills out, room and prev_ts), pack records while they fit in
 * room, then put the run. */
struct seg_run {
	const uint8_t *recs; /* first record header, in the ring */
	size_t bytes;        /* of ring records */
	uint32_t events;
	uint64_t ts_min, ts_max; /* raw clock */
	uint64_t end;        /* ring position after the last record */
	uint8_t *out;        /* where the run is packed, in the open chunk */
	size_t packed;       /* bytes packed at out */
	size_t room;         /* what the readied chunk can take at out */
	uint64_t prev_ts;    /* the PACK's last timestamp (pack.h) */
};
int seg_run_ready(struct daemon *d, struct ring *r, uint64_t at, size_t need,
		  struct seg_run *run);
void seg_run_put(struct daemon *d, struct ring *r, const struct seg_run *run);
/* Report r's pending disk loss in its stream now (a ring about to go);
 * 0, or -EAGAIN while the disk still refuses. */
int seg_settle_loss(struct daemon *d, struct ring *r);
void seg_seal(struct daemon *d);
void seg_tick(struct daemon *d);
/* Has storage_dir or the current segment been deleted under us? Then
 * count what they held as lost, recreate the directory and go on. */
void seg_check_store(struct daemon *d);
bool seg_idle(struct daemon *d);
void seg_close_current(struct daemon *d);

/* sys-unix.c / sys-win.c: segment files, free space, the boot's identity.
 * Files are the descriptors the I/O backend writes; 0 or -errno. */
void *file_aligned(size_t n);  /* zeroed, RINGLOG_SEG_ALIGN-aligned */
void file_aligned_free(void *p);
int file_create(const char *path, bool *direct); /* a new file, unbuffered if it can */
int file_open_existing(const char *path);
int file_pwrite(int fd, const void *buf, size_t len, uint64_t off);
int file_sync(int fd);
void file_close(int fd);
int file_remove(const char *path); /* gone already is fine */
int file_mkdir(const char *path);  /* 0: there already, 1: made (Linux) */
int file_space(const char *dir, uint64_t *avail, uint64_t *total);
/* Hold dir's lock (RINGLOG_LOCK_NAME in it) for the life of the process:
 * 0 (*lock is its descriptor, replacing any old one), -EBUSY (another
 * process holds it: *holder is its PID, or 0 if unknown) or -errno. */
#define RINGLOG_LOCK_NAME "ringlogd.lock"
int file_lock_dir(const char *dir, int *lock, long *holder);
/* What identifies dir now (device, inode), to notice it was replaced. */
int file_dir_id(const char *dir, uint64_t id[2]);
/* 1 if the open file fd has no name left (deleted), 0, or -errno. */
int file_unlinked(int fd);
void sys_identity(uint8_t boot_id[16], char *host, size_t host_len);
#ifdef _WIN32
#include "compat-win.h" /* fnmatch */
#else
#include <fnmatch.h>
#endif

/* retention.c */
int ret_scan(struct daemon *d);
void ret_add(struct daemon *d, struct segfile *s);
int ret_make_room(struct daemon *d, uint64_t bytes);
/* Delete sealed segments (never the one being written, nor one with writes
 * in flight), oldest first, until the store takes at most keep_bytes; then
 * those whose newest event is older than before_ns (0: no age limit). each
 * (may be NULL) sees each one before it goes. Returns how many went. */
unsigned ret_vacuum(struct daemon *d, uint64_t keep_bytes, uint64_t before_ns,
		    void (*each)(void *ctx, const struct segfile *s), void *ctx);
uint64_t ret_fs_free(const struct daemon *d);
uint64_t ret_min_free(const struct daemon *d);

/* tail.c */
int tail_start(struct client *c, const uint8_t *json, uint32_t len);
/* An ERROR frame {"error": msg} to a tool. */
void tool_error(struct client *c, const char *msg);
void tail_free(struct tail *t);
void tail_event(struct daemon *d, struct ring *r, uint16_t type, uint16_t aux,
		const uint8_t *payload, uint32_t len, const struct ringlog_event_desc *e);
void tail_loss(struct daemon *d, struct ring *r, const struct ringlog_seg_loss *l);
void tail_raise(struct daemon *d, struct provider *p);
/* Events dropped for slow readers: told and not yet told. */
uint64_t tail_lost_total(const struct daemon *d);
/* Answer the tails waiting for their backlog to reach the disk. */
void tail_flushed(struct daemon *d);

/* forward.c: events to the OS tracer (forward.h) */
void fwd_apply(struct daemon *d);   /* start or stop as the config says */
void fwd_stop(struct daemon *d);
void fwd_sync_client(struct client *c); /* new event definitions */
void fwd_client_free(struct client *c);
void fwd_record(struct daemon *d, struct ring *r, uint16_t type, const struct ringlog_event_desc *e,
		const uint8_t *payload, uint32_t len);
void fwd_tick(struct daemon *d);    /* tracers came or went: re-raise */
void fwd_raise(struct daemon *d, struct provider *p);
json_t *fwd_status(struct daemon *d);

/* sync.c: SYNC is answered once the rings' events are written */
int sync_request(struct client *c, const uint8_t *p, uint32_t len);
void sync_check(struct daemon *d);  /* chunks were released */
void sync_tick(struct daemon *d);
void sync_free(struct client *c);

/* status.c */
int status_reply(struct client *c, bool detail);

/* operate.c: what operators change at run time (proto/ctl.h's ENABLE_SET,
 * LIST, VACUUM frames) and max_retention. Run-time enablement rules come
 * before the configuration's and last until SIGHUP or a restart. */
int op_enable_set(struct client *c, const uint8_t *json, uint32_t len);
int op_list(struct client *c, const uint8_t *json, uint32_t len);
int op_vacuum(struct client *c, const uint8_t *json, uint32_t len);
/* The run-time rule for provider name, if one matches: true, kw filled. */
bool op_rule_kw(const struct daemon *d, const char *name, uint64_t kw[8]);
json_t *op_status(const struct daemon *d); /* the rules, for STATUS */
void op_reset(struct daemon *d);  /* SIGHUP: back to the configuration */
void op_tick(struct daemon *d);   /* max_retention */
void op_free(struct daemon *d);

/* txbuf helpers (ctl.c) */
int tx_append(struct txbuf *t, const void *a, size_t alen, const void *b, size_t blen);

#endif /* RINGLOG_DAEMON_H */
