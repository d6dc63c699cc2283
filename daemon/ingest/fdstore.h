/* daemon/ingest/fdstore.h - rings and metadata regions kept in systemd's
 * fd store (unix/fdstore.c), so that a restart does not free the rings of
 * programs that exit meanwhile; taken back from LISTEN_FDS. None on
 * Windows: no-ops. */
#ifndef RINGLOG_DAEMON_FDSTORE_H
#define RINGLOG_DAEMON_FDSTORE_H

#include "ingest/client.h"

struct daemon;
struct ring;

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

#endif /* RINGLOG_DAEMON_FDSTORE_H */
