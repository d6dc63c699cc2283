/* client/cli/cli.h - the `ringlog` command's shared pieces. */
#ifndef RINGLOG_CLI_H
#define RINGLOG_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "decode.h"

/* Exit codes (documented in ringlog --help). */
enum {
	EXIT_OK = 0,
	EXIT_FAIL = 1,     /* runtime error */
	EXIT_USAGE = 2,    /* bad command line */
	EXIT_NODAEMON = 3, /* cannot reach ringlogd */
	EXIT_DAMAGED = 4,  /* read: input had damage (everything else was read) */
};

/* "3", "warning", "warn": 1..5; 0 or -EINVAL (emit; -p is select.c's). */
int parse_level(const char *s, unsigned *out);

const char *socket_path(const char *opt);
/* The connected descriptor, or -errno; unless quiet, a refusal is printed
 * with its reason (cli_refusal) and anything else with the service hint. */
int cli_connect(const char *path, bool quiet);
/* connect-unix.c / connect-win.c: why the socket at path refused us
 * (cli_connect() gave -EACCES or -EPERM): "access refused by ...", with the
 * group to join. */
void cli_refusal(const char *path, char *buf, size_t len);
/* Ctrl-C (SIGINT, SIGTERM; on Windows the console's Ctrl-C and Ctrl-Break)
 * sets a flag and makes a read blocked on the watched connection return,
 * which a flag alone cannot: landing between a check and the read, it
 * would leave the read blocked for good. */
void cli_catch_interrupt(void);
bool cli_interrupted(void);
/* Interrupt as Ctrl-C would, ms milliseconds from now (--until). */
void cli_interrupt_after(uint64_t ms);
void cli_watch(int fd); /* -1: none */
/* common.c: sleep, cut short by Ctrl-C (the caller checks). */
void cli_sleep_ms(unsigned ms);
int cli_send(int fd, uint16_t type, const void *p, uint32_t len);
/* connect-unix.c / connect-win.c: whole writes and reads on a connection;
 * read: 1, 0 at end of stream, -EINTR when interrupted, -errno. */
int cli_write_full(int fd, const void *b, size_t n);
int cli_read_full(int fd, void *b, size_t n);
/* Read one frame; returns payload length (buffer malloc'ed) or -errno, 0 on EOF. */
long cli_recv(int fd, uint16_t *type, uint8_t **payload);
/* A REFUSE frame (n bytes at p) as one line: "ringlogd refused this
 * connection: <its reason>" (a limit, or access). */
void cli_refuse_text(const uint8_t *p, long n, char *buf, size_t len);
/* Print the daemon's ERROR frame {"error": "..."} as "WHO: ringlogd says: ...". */
void cli_print_error(const char *who, const uint8_t *payload);

struct query;
/* tail.c: follow the daemon's live stream after the stored history (the
 * newest q->lines of dir, or of the daemon's store when dir is NULL). */
int cli_follow(struct query *q, const char *dir);
/* read.c: print the stored history before a follow (lines < 0: all): of
 * every segment, or (ends not NULL) of those named there, each up to its
 * end. Returns 0, or -1 when dir cannot be read. */
struct seg_end {
	uint64_t seq, end;
};
/* What a follow's history shows (tail.c's marks): keep() after the
 * selection, with the event's own stamp (0 for a loss) and its time; and a
 * dedup shared by the reads of one reconnection (what a killed ringlogd
 * stored and the next one drained again shows once). NULL: all. */
typedef bool (*hist_keep_fn)(void *ctx, const struct ringlog_dec_writer *w,
			     const struct ringlog_dec_stream *s, uint64_t ts, uint64_t real_ns);
struct hist_opts {
	hist_keep_fn keep;
	void *ctx;
	struct ringlog_dedup *dedup;
};
int read_history(const struct query *q, const char *dir, long lines, const struct seg_end *ends,
		 size_t nends, const struct hist_opts *o);
/* read.c: the stored events and losses of segments [lo, hi), of the newest
 * of those files that hold `bytes` in all: for a tail, what a ringlogd
 * killed before it sent them stored (tail.c). 0, or -1 when dir cannot be
 * read. */
int read_history_range(const struct query *q, const char *dir, uint64_t lo, uint64_t hi,
		       uint64_t bytes, const struct hist_opts *o);
/* read.c: the store's segment paths, oldest first (q->dir, else the
 * configured store); 0 or -errno after a message. */
int read_store_files(const struct query *q, char ***files, size_t *nf);
void read_free_files(char **files, size_t nf);
/* common.c: whether two paths name the same directory (the same file
 * when both exist; the same text otherwise). */
bool cli_same_dir(const char *a, const char *b);
/* read.c: FILE arguments put in the order their daemon wrote them (the
 * dedup across files needs the older first). */
void read_order_files(char **files, size_t nf);
/* read.c, for nats.c: decode records from elsewhere (a shipped chunk's
 * descriptions, then its records) into the lines `read` sorts and prints,
 * each with its host. read_close() prints (through the pager when pager)
 * and returns the exit code. */
struct rd;
struct ringlog_seg_clock;
struct ringlog_dedup;
struct ringlog_dec_loss;
struct rd *read_open(const struct query *q);
void read_decode(struct rd *r, const char *host, const struct ringlog_seg_clock *clk,
		 struct ringlog_dedup *dedup, uint64_t chunk_ns, uint64_t first_ns,
		 uint64_t last_ns, const uint8_t *desc, size_t desc_len,
		 const uint8_t *body, size_t body_len);
void read_loss(struct rd *r, const char *host, const struct ringlog_dec_loss *l);
int read_close(struct rd *r, bool pager);
/* nats.c: `read --nats` and `tail --nats` (nats-none.c without libnats:
 * a message saying so, EXIT_FAIL). */
int nats_read(struct query *q);
int nats_tail(struct query *q);

int cmd_read(int argc, char **argv);
int cmd_tail(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_emit(int argc, char **argv);
int cmd_export(int argc, char **argv); /* export.c: CTF 1.8, Perfetto, JSON lines */
/* operate.c: run-time enablement, declared events, deleting old segments */
int cmd_enable(int argc, char **argv);
int cmd_disable(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_vacuum(int argc, char **argv);
int cmd_snapshot(int argc, char **argv); /* snapshot.c: the flight recorder */
/* status-flight.c: status's flight recorder lines (j: the STATUS object, a
 * json_t *), and its figures from the storage directory (daemon down). */
void status_print_flight(void *j);
void *status_offline_flight(const char *store);
/* operate.c: send req (a json_t *, consumed) as a frame of type and wait
 * for the answer of the same type: EXIT_OK with *out (a json_t *), or the
 * exit code once the error is printed; quiet_down: an unreachable daemon
 * is not reported; *conn_err (may be NULL): the connection's -errno. */
int cli_ask(const char *who, const char *sock, uint16_t type, void *req, void *out,
	    bool quiet_down, int *conn_err);
/* status.c: figures for people: "1.5 GiB", "2026-11-23 12:00:00" (local; "-"
 * for 0), "3 d 4 h" (seconds, two units at most) */
const char *cli_bytes(double b, char *buf, size_t n);
const char *cli_when(uint64_t ns, char *buf, size_t n);
const char *cli_span(uint64_t s, char *buf, size_t n);

#endif /* RINGLOG_CLI_H */
