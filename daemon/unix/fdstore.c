/* daemon/unix/fdstore.c - the service manager keeps our rings.
 *
 * A ring lives in a memfd that the writing program and ringlogd share. If
 * ringlogd dies (or restarts) while programs exit, their rings would die
 * with the last descriptor, and the events in them with it. Under systemd
 * we hand a copy of every ring's and metadata region's descriptor to the
 * service manager's file-descriptor store (sd_notify FDSTORE=1; the unit
 * sets FileDescriptorStoreMax= and FDSTORE=, which newer systemd sets by
 * itself); the next ringlogd receives them through LISTEN_FDS with their
 * names (LISTEN_FDNAMES), maps them again and drains them as "gone"
 * writers. Names carry what identifies the writer (the kernel's pid, uid,
 * gid, start time and command, taken at its connection; never from the
 * ring):
 *
 *   rlm-WID-PID-UID-GID-START-COMMHEX   its metadata region
 *   rlr-WID-HANDLE-TID                  one of its rings
 *
 * A ring leaves the store once drained for good (FDSTOREREMOVE). A program
 * still running when the new daemon starts registers its rings again:
 * the adopted ring is then handed over to the new connection, resuming at
 * the adopted consumer's position, so nothing is drained twice.
 */
#define _GNU_SOURCE
#include "daemon.h"
#include "log.h"
#include "notify.h"
#include "ingest/fdstore.h"
#include "ingest/transport.h"
#include "ingest/registry.h"
#include "ingest/drain.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void fdstore_init(struct daemon *d)
{
	const char *n = getenv("FDSTORE"), *s = getenv("NOTIFY_SOCKET");

	d->fdstore = n && strtoul(n, NULL, 10) > 0 && s && *s;
}

static void meta_name(const struct client *c, char *buf, size_t len)
{
	int k = snprintf(buf, len, "rlm-%u-%u-%u-%u-%" PRIu64 "-", c->fd_wid, c->pid, c->uid,
			 c->gid, c->start_real_ns);

	for (size_t i = 0; i < sizeof(c->comm) && c->comm[i] && k + 3 < (int)len; i++)
		k += snprintf(buf + k, len - (size_t)k, "%02x", (unsigned char)c->comm[i]);
}

static void ring_name(const struct ring *r, uint32_t wid, char *buf, size_t len)
{
	snprintf(buf, len, "rlr-%u-%" PRIu64 "-%u", wid, r->handle, r->tid);
}

static void keep(struct daemon *d, const char *name, int fd)
{
	char msg[300];
	int err;

	snprintf(msg, sizeof(msg), "FDSTORE=1\nFDNAME=%s", name);
	if ((err = sd_notify_fd(msg, fd)) < 0)
		d_log(LOG_WARNING, "cannot hand %s to the service manager's fd store: %s; a "
		      "restart loses the events of programs that exit meanwhile", name, strerror(-err));
	close(fd);
	(void)d;
}

static void forget(const char *name)
{
	char msg[300];

	snprintf(msg, sizeof(msg), "FDSTOREREMOVE=1\nFDNAME=%s", name);
	sd_notify_send(msg);
}

void fdstore_keep_meta(struct client *c, d_obj_t fd)
{
	char name[256];

	if (fd < 0)
		return;
	c->fd_wid = c->id;
	meta_name(c, name, sizeof(name));
	keep(c->d, name, fd);
	c->fd_stored = true;
}

void fdstore_keep_ring(struct ring *r, d_obj_t fd)
{
	char name[256];

	if (fd < 0)
		return;
	ring_name(r, r->c->fd_wid, name, sizeof(name));
	keep(r->c->d, name, fd);
	r->fd_stored = true;
}

void fdstore_forget_ring(struct ring *r)
{
	char name[256];

	if (!r->fd_stored)
		return;
	ring_name(r, r->c->fd_wid, name, sizeof(name));
	forget(name);
	r->fd_stored = false;
}

void fdstore_forget_meta(struct client *c)
{
	char name[256];

	if (!c->fd_stored)
		return;
	meta_name(c, name, sizeof(name));
	forget(name);
	c->fd_stored = false;
}

/* ------------------------------------------------------------------------
 * After a restart
 */

static struct client *ghost_new(struct daemon *d, const char *name)
{
	unsigned wid, pid, uid, gid;
	uint64_t start;
	int n = 0;
	struct client *c;
	const char *hex;

	if (sscanf(name, "rlm-%u-%u-%u-%u-%" SCNu64 "-%n", &wid, &pid, &uid, &gid, &start, &n) != 5 ||
	    !n)
		return NULL;
	if (!(c = calloc(1, sizeof(*c))))
		return NULL;
	c->d = d;
	c->gone = true;     /* no connection: drained, then let go */
	c->writer = true;
	c->ghost = true;
	c->id = ++d->next_writer_id;
	c->fd_wid = wid;
	c->fd_stored = true;
	c->pid = pid;
	c->uid = uid;
	c->gid = gid;
	c->start_real_ns = start;
	hex = name + n;
	for (size_t i = 0; i + 1 < sizeof(c->comm) && hex[2 * i] && hex[2 * i + 1]; i++) {
		unsigned v;

		if (sscanf(hex + 2 * i, "%2x", &v) != 1)
			break;
		c->comm[i] = (char)v;
	}
	c->next = d->clients;
	d->clients = c;
	d->nclients++;
	return c;
}

static int adopt_meta(struct daemon *d, const char *name, int fd)
{
	struct client *c = ghost_new(d, name);
	const struct ringlog_meta_hdr *m;
	uint64_t max = d->cfg.limits.metadata_size;
	void *mem;
	size_t size;
	int err;

	if (!c) {
		close(fd);
		return -EINVAL;
	}
	err = ctl_map(c, fd, false, max < UINT32_MAX ? max : UINT32_MAX, &mem, &size);
	if (err < 0 || size < RINGLOG_META_MIN_SIZE) {
		if (!err)
			ctl_unmap(mem, size);
		d_log(LOG_WARNING, "fd store: %s: metadata region refused (%s); its rings cannot be "
		      "decoded", name, err ? strerror(-err) : "too small");
		c->refused = true;
		return 0;
	}
	c->meta_map = mem;
	c->meta_size = (uint32_t)size;
	m = (const void *)mem;
	if (m->magic != RINGLOG_META_MAGIC || m->version != RINGLOG_META_VERSION ||
	    m->header_size != RINGLOG_META_HEADER_SIZE) {
		d_log(LOG_WARNING, "fd store: %s: metadata region: bad magic, version or header size",
		      name);
		c->refused = true;
		return 0;
	}
	return reg_meta_sync(c);
}

static int adopt_ring(struct daemon *d, const char *name, int fd)
{
	unsigned wid, tid;
	uint64_t handle;
	struct client *c = NULL;
	const char *why = NULL;
	struct ring *r;
	void *mem;
	size_t size;
	int err;

	if (sscanf(name, "rlr-%u-%" SCNu64 "-%u", &wid, &handle, &tid) != 3) {
		close(fd);
		return -EINVAL;
	}
	for (struct client *x = d->clients; x; x = x->next)
		if (x->ghost && x->fd_wid == wid)
			c = x;
	if (!c || c->refused) {
		d_log(LOG_WARNING, "fd store: ring %s has no usable metadata region: dropped", name);
		close(fd);
		forget(name);
		return 0;
	}
	err = ctl_map(c, fd, true, RINGLOG_RING_HEADER_SIZE + (uint64_t)RINGLOG_RING_MAX_DATA, &mem,
		      &size);
	if (err < 0) {
		d_log(LOG_WARNING, "fd store: ring %s: %s: dropped", name, strerror(-err));
		forget(name);
		return 0;
	}
	r = reg_ring_add(c, handle, tid, mem, size, &why);
	if (!r) {
		d_log(LOG_WARNING, "fd store: ring %s: %s: dropped", name, why ? why : "no memory");
		forget(name);
		return 0;
	}
	r->fd_stored = true;
	return 0;
}

void fdstore_adopt(struct daemon *d, char **names, int *fds, unsigned n)
{
	unsigned rings = 0, metas = 0;

	/* New writer ids above every adopted name's, so that no name given
	 * to the store from now on is one it already holds. */
	for (unsigned i = 0; i < n; i++) {
		unsigned wid;

		if (sscanf(names[i], "rl%*c-%u-", &wid) == 1 && wid >= d->next_writer_id)
			d->next_writer_id = wid;
	}
	for (int pass = 0; pass < 2; pass++)
		for (unsigned i = 0; i < n; i++) {
			if (pass == 0 && !strncmp(names[i], "rlm-", 4)) {
				adopt_meta(d, names[i], fds[i]);
				metas++;
			} else if (pass == 1 && !strncmp(names[i], "rlr-", 4)) {
				adopt_ring(d, names[i], fds[i]);
				rings++;
			}
		}
	if (n)
		d_log(LOG_NOTICE, "fd store: took back %u rings of %u programs from the previous "
		      "ringlogd; draining them", rings, metas);
	drain_start(d);
}

struct ring *fdstore_ghost_ring(struct daemon *d, const struct client *c, const struct ring *r)
{
	for (struct client *g = d->clients; g; g = g->next) {
		if (!g->ghost || g->pid != c->pid || g->start_real_ns != c->start_real_ns)
			continue;
		for (struct ring *x = g->rings; x; x = x->next)
			if (!x->dead && !x->finishing && x->tid == r->tid && x->ring_id == r->ring_id)
				return x;
	}
	return NULL;
}
