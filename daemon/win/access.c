/* daemon/win/access.c - who may write events and who may read them, on
 * Windows: the same rule as access.c, with the client's token where Linux
 * has SO_PEERCRED's groups.
 *
 *   SYSTEM, Administrators, the daemon's own user   write and read
 *   members of socket_group ("ringlog")             write
 *   members of read_group ("ringlog-read")          read
 *
 * The pipe's security descriptor (win/transport.c) is the first gate: only these
 * may open it at all. A group that does not exist grants nothing.
 */
#include "daemon.h"
#include "log.h"
#include "access.h"
#include "store/file.h"
#include "win/peer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char self_sid[192];

static void resolve(const char *name, void **sid, bool *have)
{
	char buf[192];

	free(*sid);
	*sid = NULL;
	*have = peer_lookup_sid(name, buf, sizeof(buf)) == 0 && (*sid = strdup(buf)) != NULL;
}

void access_resolve(struct daemon *d)
{
	if (!self_sid[0] && peer_self_sid(self_sid, sizeof(self_sid)) < 0)
		self_sid[0] = 0;
	resolve(d->cfg.socket_group, &d->write_sid, &d->have_write_gid);
	resolve(d->cfg.read_group, &d->read_sid, &d->have_read_gid);
}

/* The SIDs the pipe lets in besides SYSTEM and Administrators, NULL
 * terminated (out has room for 4). */
void access_pipe_sids(const struct daemon *d, const char **out)
{
	int n = 0;

	if (self_sid[0])
		out[n++] = self_sid;
	if (d->write_sid)
		out[n++] = d->write_sid;
	if (d->read_sid)
		out[n++] = d->read_sid;
	out[n] = NULL;
}

unsigned access_peer_win(const struct daemon *d, const struct peer_id *id)
{
	unsigned a = 0;

	if (!strcmp(id->user, "S-1-5-18") || (self_sid[0] && !strcmp(id->user, self_sid)) ||
	    peer_member(id, "S-1-5-32-544"))
		return ACCESS_WRITE | ACCESS_READ;
	if (d->write_sid && peer_member(id, d->write_sid))
		a |= ACCESS_WRITE;
	if (d->read_sid && peer_member(id, d->read_sid))
		a |= ACCESS_READ;
	return a;
}

void access_explain(const struct daemon *d, uid_t uid, unsigned need, char *buf, size_t len)
{
	const char *group = need & ACCESS_WRITE ? d->cfg.socket_group : d->cfg.read_group;
	bool have = need & ACCESS_WRITE ? d->have_write_gid : d->have_read_gid;

	snprintf(buf, len,
		 "access refused: the user whose SID ends in -%u may not %s: ringlogd allows SYSTEM, Administrators, its own user and "
		 "members of group \"%s\" (config key %s)%s; add the user to that group and sign in "
		 "again", (unsigned)uid, need & ACCESS_WRITE ? "write events" : "read events", group,
		 need & ACCESS_WRITE ? "socket_group" : "read_group",
		 have ? "" : ", which does not exist on this host");
}

/* Windows: the directory inherits ProgramData's ACL; read_group is not
 * added to it (ringlog read --dir needs an administrator there). */
int access_mkdir_store(const struct daemon *d)
{
	int err = file_mkdir(d->cfg.storage_dir);

	return err < 0 ? err : 0;
}
