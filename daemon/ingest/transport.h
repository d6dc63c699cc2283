/* daemon/ingest/transport.h - what carries the control channel under
 * ctl.c, one file per system: unix/transport.c (a Unix socket, SCM_RIGHTS,
 * an eventfd to wake us) and win/transport.c (a named pipe, handle
 * duplication, an event). Each defines struct ctl_conn (a client's
 * connection) and struct ctl_listener (the listening side and the wake
 * object); the rest of the daemon holds only pointers to them. */
#ifndef RINGLOG_DAEMON_TRANSPORT_H
#define RINGLOG_DAEMON_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ingest/client.h"

struct daemon;
struct ctl_conn;
struct ctl_listener;

/* Listen on socket_path (or the socket systemd passed): 0 or -errno
 * (-EADDRINUSE: another daemon listens there; logged). */
int ctl_listen(struct daemon *d);
void ctl_close_listen(struct daemon *d);
/* The object producers wake us with; 0 or -errno. Calls drain_woken(). */
int ctl_wake_open(struct daemon *d);
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
/* A WAKE frame: the daemon's wake object again, for a program whose
 * WELCOME came without it (proto/ctl.h). */
int ctl_send_wake(struct client *c);
/* Whether the daemon has a wake object to give (WELCOME then offers WAKE). */
bool ctl_wake_ready(const struct client *c);

#endif /* RINGLOG_DAEMON_TRANSPORT_H */
