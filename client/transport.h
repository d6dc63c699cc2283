/* client/transport.h - how the library's thread talks to ringlogd: one ops
 * table, one file per system (transport-unix.c: a Unix stream socket with
 * SCM_RIGHTS; transport-win.c: a named pipe with handle values the daemon
 * duplicates out of this process). connect.c, the protocol itself, never
 * knows which one runs.
 */
#ifndef RINGLOG_CLIENT_TRANSPORT_H
#define RINGLOG_CLIENT_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#include "lib.h"

struct transport;

/* What a wait saw. */
enum { TR_READABLE = 1, TR_WOKEN = 2 };

/* Open a connection to the daemon: NULL with *err = -errno when there is
 * none (ENOENT, ECONNREFUSED: not running; EACCES: not allowed). */
struct transport *tr_connect(int *err);
/* Why tr_connect() got -EACCES or -EPERM, one line for a person: "access
 * refused by" what, and the group to join. */
void tr_refusal(char *buf, size_t len);
void tr_close(struct transport *t);

/* One frame, with obj (a shared-memory object or LIB_OBJ_NONE) handed to
 * the daemon along with it. Blocking, bounded by a send timeout: a daemon
 * that does not read is a broken link. 0 or -errno. */
int tr_send(struct transport *t, uint16_t type, const void *payload, uint32_t len, lib_obj_t obj);

/* The same from an emitting thread, never waiting: all of the frame or
 * none of it, -EAGAIN when it cannot go at once (the library's thread
 * sends it later); -EOPNOTSUPP where the link cannot promise that. */
int tr_try_send(struct transport *t, uint16_t type, const void *payload, uint32_t len,
		lib_obj_t obj);

/* Read what has arrived into buf (cap bytes free), without blocking.
 * Returns the bytes read (0: nothing yet) or -errno (-EPIPE: closed). An
 * object that came with the bytes (the daemon's wake object, with
 * WELCOME) is stored in *obj, else *obj is LIB_OBJ_NONE. */
long tr_recv(struct transport *t, uint8_t *buf, size_t cap, lib_obj_t *obj);

/* Wait up to ms for the connection (t may be NULL: only the wake) to be
 * readable or lib_wake() to be called. Returns TR_* bits, 0 on timeout. */
int tr_wait(struct transport *t, int ms);

/* The object a frame of type-specific struct_len bytes brought (WELCOME:
 * the daemon's wake object): on Unix the one that rode beside it
 * (received), on Windows a handle value after the struct. */
lib_obj_t tr_frame_obj(const uint8_t *p, uint32_t len, size_t struct_len, lib_obj_t received);

/* Release an object nothing wanted (a descriptor that came beside a frame
 * that does not take one). */
void tr_close_obj(lib_obj_t obj);

/* Make obj the daemon's wake object for emitting threads (lib.daemon_wake),
 * replacing a previous daemon's without ever leaving it invalid. */
void tr_take_daemon_wake(lib_obj_t obj);

/* Signal the daemon's wake object: the one system call an emit may make.
 * True when it was signalled. */
bool tr_signal(lib_obj_t obj);

/* The library's own wake object, read by tr_wait: create once, signal,
 * and clear after a wait saw it. */
int tr_wake_init(void);
void tr_wake_signal(void);
void tr_wake_clear(void);
#ifndef _WIN32
/* In the child of fork(): a wake object of its own (the parent's is shared). */
void tr_wake_reset_after_fork(void);
#endif

#endif /* RINGLOG_CLIENT_TRANSPORT_H */
