/* daemon/access.h - who may write events and who may read them
 * (unix/access.c: SO_PEERCRED and SO_PEERGROUPS against socket_group and
 * read_group; win/access.c: the client's token against the same groups as
 * SIDs, which also make the pipe's security descriptor), and the group
 * of the storage directory the store creates (access_mkdir_store()). */
#ifndef RINGLOG_DAEMON_ACCESS_H
#define RINGLOG_DAEMON_ACCESS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef _WIN32
typedef uint32_t uid_t;
typedef uint32_t gid_t;
struct peer_id;
#endif

struct daemon;

enum { ACCESS_WRITE = 1, ACCESS_READ = 2 };

/* Resolve socket_group and read_group (again after a reload). */
void access_resolve(struct daemon *d);
#ifdef _WIN32
unsigned access_peer_win(const struct daemon *d, const struct peer_id *id);
/* The SIDs the pipe's security descriptor lets in, NULL-terminated. */
void access_pipe_sids(const struct daemon *d, const char **out);
#else
/* ACCESS_* for the peer of socket fd, of uid and primary gid. */
unsigned access_peer(const struct daemon *d, int fd, uid_t uid, gid_t gid);
#endif
/* Why uid may not do what need asks, and what to do about it. */
void access_explain(const struct daemon *d, uid_t uid, unsigned need, char *buf, size_t len);
/* Create storage_dir if missing; one we create belongs to read_group (on
 * Linux; access_resolve() first). 0 or -errno. */
int access_mkdir_store(const struct daemon *d);

#endif /* RINGLOG_DAEMON_ACCESS_H */
