/* daemon/unix/access.c - who may write events and who may read them.
 *
 * Events of every user are sensitive, so reading (tail, read through the
 * daemon, status with per-program detail) and writing are separate rights:
 *
 *   root, and the daemon's own user          write and read
 *   members of socket_group ("ringlog")      write
 *   members of read_group ("ringlog-read")   read
 *
 * Membership comes from the kernel: SO_PEERCRED's gid and SO_PEERGROUPS'
 * supplementary groups, taken when the peer connected. The socket's file
 * mode is only a first gate (the packaged socket is 0666); this is the one
 * that counts. A group that does not exist (ringlogd tried out in a local
 * directory, without a config file) grants nothing, leaving root and the
 * daemon's user; a config file that names one is refused at load.
 *
 * A storage_dir the daemon creates belongs to read_group, as the packaged
 * one does, so that readers may also `ringlog read --dir` the segments.
 */
#define _GNU_SOURCE
#include "daemon.h"
#include "log.h"
#include "access.h"
#include "store/file.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef SO_PEERGROUPS
#define SO_PEERGROUPS 59 /* Linux 4.13 */
#endif

static void resolve(const char *name, gid_t *gid, bool *have)
{
	struct group *g = getgrnam(name);

	*have = g != NULL;
	*gid = g ? g->gr_gid : (gid_t)-1;
}

void access_resolve(struct daemon *d)
{
	resolve(d->cfg.socket_group, &d->write_gid, &d->have_write_gid);
	resolve(d->cfg.read_group, &d->read_gid, &d->have_read_gid);
}

/* The peer's supplementary groups (NULL, *n = 0 when the kernel cannot
 * say: then only the primary gid counts). */
static gid_t *peer_groups(int fd, unsigned *n)
{
	socklen_t len = 64 * sizeof(gid_t);
	gid_t *g = malloc(len), *bigger;

	*n = 0;
	if (!g)
		return NULL;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, g, &len) < 0) {
		/* ERANGE: len now says how much is needed. */
		if (errno != ERANGE || !(bigger = realloc(g, len))) {
			free(g);
			return NULL;
		}
		g = bigger;
		if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, g, &len) < 0) {
			free(g);
			return NULL;
		}
	}
	*n = len / sizeof(gid_t);
	return g;
}

static bool in_group(gid_t want, gid_t primary, const gid_t *g, unsigned n)
{
	if (primary == want)
		return true;
	for (unsigned i = 0; i < n; i++)
		if (g[i] == want)
			return true;
	return false;
}

unsigned access_peer(const struct daemon *d, int fd, uid_t uid, gid_t gid)
{
	unsigned n, a = 0;
	gid_t *g;

	if (uid == 0 || uid == geteuid())
		return ACCESS_WRITE | ACCESS_READ;
	g = peer_groups(fd, &n);
	if (d->have_write_gid && in_group(d->write_gid, gid, g, n))
		a |= ACCESS_WRITE;
	if (d->have_read_gid && in_group(d->read_gid, gid, g, n))
		a |= ACCESS_READ;
	free(g);
	return a;
}

void access_explain(const struct daemon *d, uid_t uid, unsigned need, char *buf, size_t len)
{
	const struct passwd *pw = getpwuid(uid);
	const char *group = need & ACCESS_WRITE ? d->cfg.socket_group : d->cfg.read_group;
	bool have = need & ACCESS_WRITE ? d->have_write_gid : d->have_read_gid;

	snprintf(buf, len,
		 "access refused: uid %u (%s) may not %s: ringlogd allows root, its own user and "
		 "members of group \"%s\" (config key %s)%s; join that group (usermod -aG %s %s) "
		 "and log in again",
		 (unsigned)uid, pw ? pw->pw_name : "?", need & ACCESS_WRITE ? "write events" : "read events",
		 group, need & ACCESS_WRITE ? "socket_group" : "read_group",
		 have ? "" : ", which does not exist on this host", group, pw ? pw->pw_name : "USER");
}

int access_mkdir_store(const struct daemon *d)
{
	const char *dir = d->cfg.storage_dir;
	struct stat st;
	int err = file_mkdir(dir);

	if (err <= 0 || !d->have_read_gid || stat(dir, &st) < 0 || st.st_gid == d->read_gid)
		return err < 0 ? err : 0;
	/* We made it, with our own group (root's, run by hand): give it to
	 * read_group as tmpfiles and StateDirectory= give the packaged one,
	 * with the setgid bit so that segments (0640) and the lock created
	 * in it get that group too whatever our primary group is. The
	 * packaged daemon's primary group is read_group already: it never
	 * gets here, so RestrictSUIDSGID= in the unit does not refuse it. */
	if (chown(dir, (uid_t)-1, d->read_gid) < 0 || chmod(dir, 02750) < 0) {
		/* Not root, not a member: a trial run in a private directory,
		 * which keeps our group. */
		d_log(geteuid() == 0 ? LOG_WARNING : LOG_INFO, "storage_dir %s: cannot give it to "
		      "read_group \"%s\" (%s): its members cannot `ringlog read --dir` it", dir,
		      d->cfg.read_group, strerror(errno));
	}
	return 0;
}
