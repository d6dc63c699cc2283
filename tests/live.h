/* tests/live.h - run the real daemon and real client processes, and read
 * back what they stored, for the integration and fault tests. */
#ifndef RINGLOG_TESTS_LIVE_H
#define RINGLOG_TESTS_LIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "decode.h"

/* What the daemon's sandbox leaves of the network (live_daemon()). */
enum live_net {
	LIVE_NET_OPEN,
	LIVE_NET_NO_INET,    /* socket(AF_INET/AF_INET6): EAFNOSUPPORT, as
	                      * RestrictAddressFamilies=AF_UNIX */
	LIVE_NET_NO_CONNECT, /* connect(): EPERM, as IPAddressDeny=any */
};

/* A private directory with the store and the socket in it; RINGLOG_SOCKET
 * points at the socket, so client processes started later find it. */
struct live {
	char dir[256], store[300], sock[300];
	char log[300];       /* the daemon's stderr (appended) */
	bool deny_io_uring;  /* the daemon's io_uring_setup() fails with EPERM
	                      * (seccomp), as under a hardened kernel */
	enum live_net deny_net;
};

void live_init(struct live *e);
void live_cleanup(struct live *e);

/* Start ringlogd on e's store and socket with extra arguments (NULL-ended)
 * and wait until it listens. */
pid_t live_daemon(const struct live *e, ...);
/* The daemon's log so far, in buf (NUL-terminated, truncated to cap). */
void live_log(const struct live *e, char *buf, size_t cap);
/* SIGTERM it and expect exit status 0. */
void live_daemon_stop(pid_t pid);

/* Start a program with its stdout sent to out_path (NULL: inherited) and
 * env entries "NAME=value" added (NULL-ended list, may be NULL). */
pid_t live_spawn(const char *const argv[], const char *const env[], const char *out_path);
/* Wait for pid and expect exit status 0. */
void live_wait_ok(pid_t pid, const char *what);

/* Write text to path; the test fails if it cannot. */
void live_write_file(const char *path, const char *text);
/* How many descriptors pid has open, or -1 when it is gone. */
int live_fd_count(pid_t pid);

/* Run a shell command, capture at most cap-1 bytes of its stdout into out;
 * returns its exit status (or -1). */
int live_run(const char *cmd, char *out, size_t cap);

/* Overwrite the first 4 KiB of the second chunk (seq 1) of the store's
 * first segment with 'X's: a damaged chunk that is not the one describing
 * the writers (chunk 0, repeated every 4th), so that the events of every
 * other chunk still read. The test fails if that segment has one chunk. */
void live_damage_second_chunk(const struct live *e);

/* `ringlog status --json` against $RINGLOG_SOCKET, parsed (a json_t *, the
 * caller's to json_decref); NULL when it failed. void * keeps jansson out
 * of this header. */
void *live_status_json(void);
/* How many live readers the daemon has attached (status "tails"), -1 when
 * status failed; and a wait (the test fails after 30 s) until there are
 * more than before: a fixed sleep let a tail started on a loaded machine
 * (ASan, CI) subscribe after the events it was to see had gone by. */
long live_tails_attached(void);
void live_wait_tail_attached(long before);

/* Read every segment of a store in order, with dedup across segments (as
 * `ringlog read` does). Counts in the result; callbacks optional. */
struct live_read {
	void *ctx;
	int (*on_event)(void *ctx, const struct ringlog_dec_event *ev);
	void (*on_loss)(void *ctx, const struct ringlog_dec_loss *l);
	uint64_t events, lost, damaged_records, damaged_bytes;
	uint64_t dups_dropped;
	unsigned segments, closed, recovered; /* recovered: sealed after a crash */
	uint64_t damaged_closed; /* damaged bytes in segments sealed by their
	                          * own daemon: only a killed daemon's segment
	                          * (recovered) may end torn */
};
void live_read_store(const char *store, struct live_read *r);

/* Per-thread order of the emitter's Tick{thread, seq, text} events: a
 * live_read on_event callback (ctx: a calloc'ed struct live_order). Every
 * seq must follow the previous one of its (pid, thread) exactly. */
struct live_order {
	uint32_t pid[64];
	uint64_t next[64][256];
	int npid;
	uint64_t dups_or_gaps;
};
int live_order_event(void *ctx, const struct ringlog_dec_event *e);

#endif
