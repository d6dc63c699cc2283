/* daemon/ingest/registry.c - writers, their metadata and rings, and enablement.
 *
 * Identity comes from the transport (unix/transport.c: SO_PEERCRED and /proc;
 * win/transport.c: the pipe and the client's token), never from a message.
 * ctl_map() maps only what no access can fault in (a memfd sealed against
 * shrinking; a section committed all through) and of a size within the
 * configured limits. Metadata is parsed from our own
 * read-only mapping; rings are attached through the validating consumer.
 */
#define _GNU_SOURCE
#include "daemon.h"
#include "ingest/operate.h"
#include "log.h"
#include "ingest/registry.h"
#include "ingest/bells.h"
#include "ingest/transport.h"
#include "ingest/drain.h"
#include "ingest/fdstore.h"
#include "ingest/pace.h"

#include <errno.h>
#ifdef _WIN32
#include "compat-win.h" /* fnmatch */
#else
#include <fnmatch.h>
#endif
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void reg_refuse(struct client *c, uint64_t handle, const char *fmt, ...)
{
	struct ringlog_ctl_refuse r = { .handle = handle };
	uint8_t buf[sizeof(r) + 256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf((char *)buf + sizeof(r), 256, fmt, ap);
	va_end(ap);
	if (n > 255)
		n = 255;
	memcpy(buf, &r, sizeof(r));
	/* A client that keeps asking gets every answer, but the log only the
	 * first few: a hostile loop must not flood the journal. */
	if (++c->refusals <= 5)
		d_log(LOG_WARNING, "client pid %u (%s, uid %u): refused %s: %s", c->pid, c->comm, c->uid,
		      handle ? "a ring" : "registration", (char *)buf + sizeof(r));
	else if (c->refusals == 6)
		d_log(LOG_WARNING, "client pid %u (%s): more refusals; not logged until it reconnects",
		      c->pid, c->comm);
	client_send(c, RINGLOG_CTL_REFUSE, buf, (uint32_t)(sizeof(r) + (size_t)n));
}

struct provider *reg_provider(struct daemon *d, const char *name)
{
	struct provider *p;

	for (p = d->providers; p; p = p->next)
		if (!strcmp(p->name, name))
			return p;
	if (!(p = calloc(1, sizeof(*p))) || !(p->name = strdup(name))) {
		free(p);
		return NULL;
	}
	p->next = d->providers;
	d->providers = p;
	return p;
}

static void rule_kw(const struct daemon *d, const char *name, uint64_t kw[8])
{
	const struct ringlog_config_provider *r = &d->cfg.default_provider;

	if (op_rule_kw(d, name, kw)) /* `ringlog enable/disable` (operate.c) first */
		return;
	for (unsigned i = 0; i < d->cfg.n_providers; i++)
		if (!fnmatch(d->cfg.providers[i].pattern, name, 0)) {
			r = &d->cfg.providers[i];
			break;
		}
	for (int l = 0; l < 8; l++)
		kw[l] = l >= 1 && l <= r->level ? r->keywords : 0;
}

static void send_enable(struct client *c)
{
	struct ringlog_ctl_enable batch[64];
	unsigned n = 0;

	for (uint32_t id = 1; id < c->nprov; id++) {
		struct provider *p = c->prov[id];

		if (!p || !memcmp(c->prov_sent[id], p->kw, sizeof(p->kw)))
			continue;
		memset(&batch[n], 0, sizeof(batch[n]));
		batch[n].provider = (uint16_t)id;
		memcpy(batch[n].kw, p->kw, sizeof(p->kw));
		memcpy(c->prov_sent[id], p->kw, sizeof(p->kw));
		if (++n == 64) {
			client_send(c, RINGLOG_CTL_ENABLE, batch, n * sizeof(batch[0]));
			n = 0;
		}
	}
	if (n)
		client_send(c, RINGLOG_CTL_ENABLE, batch, n * sizeof(batch[0]));
}

/* What goes to disk, then what memory-only sinks add (flight_level). */
static void provider_enable(struct daemon *d, struct provider *p)
{
	rule_kw(d, p->name, p->kw);
	p->flight_rule = op_rule_flight(d, p->name, &p->flight_rule_level, &p->flight_rule_kw);
	sink_publish_raise(&d->sinks, p->name, p->kw, false);
	memcpy(p->disk_kw, p->kw, sizeof(p->kw));
	sink_publish_raise(&d->sinks, p->name, p->kw, true);
}

void reg_enable_recompute(struct daemon *d)
{
	for (struct provider *p = d->providers; p; p = p->next)
		provider_enable(d, p);
	for (struct client *c = d->clients; c; c = c->next)
		if (c->writer && !c->gone)
			send_enable(c);
	ovl_reload(d);
}

static int map_provider(struct client *c, uint32_t id, const char *name)
{
	if (id >= c->nprov) {
		uint32_t n = c->nprov ? c->nprov : 8;
		struct provider **p;
		uint64_t(*s)[8];

		while (n <= id)
			n *= 2;
		p = realloc(c->prov, n * sizeof(*p));
		if (!p)
			return -ENOMEM;
		c->prov = p;
		s = realloc(c->prov_sent, n * sizeof(*s));
		if (!s)
			return -ENOMEM;
		c->prov_sent = s;
		memset(c->prov + c->nprov, 0, (n - c->nprov) * sizeof(*p));
		memset(c->prov_sent + c->nprov, 0, (n - c->nprov) * sizeof(*s));
		c->nprov = n;
	}
	if (!c->prov[id]) {
		struct provider *p = reg_provider(c->d, name);

		if (!p)
			return -ENOMEM;
		provider_enable(c->d, p);
		c->prov[id] = p;
		/* Force a first ENABLE: the client starts from the built-in
		 * default, not from what we think we sent. */
		memset(c->prov_sent[id], 0xff, sizeof(c->prov_sent[id]));
	}
	return 0;
}

/* Parse the entries the client appended since we last looked. A corrupt
 * region refuses the client: its events could not be decoded. */
int reg_meta_sync(struct client *c)
{
	const struct ringlog_meta_hdr *h = (const void *)c->meta_map;
	uint32_t used;
	bool new_prov = false;

	if (!h || c->refused)
		return 0;
	/* Pairs with the release store of `used` in the library's publish(). */
	used = __atomic_load_n(&h->used, __ATOMIC_ACQUIRE);
	if (used > c->meta_size - RINGLOG_META_HEADER_SIZE) {
		reg_refuse(c, 0, "metadata region: used=%u is past its size %u", used, c->meta_size);
		c->refused = true;
		return 0;
	}
	while (c->meta_read < used) {
		const uint8_t *p = c->meta_map + RINGLOG_META_HEADER_SIZE + c->meta_read;
		const char *why;
		long n = ringlog_meta_add(&c->meta, p, used - c->meta_read, &why);

		if (n < 0) {
			reg_refuse(c, 0, "metadata entry at offset %u: %s", c->meta_read,
				   why ? why : strerror((int)-n));
			c->refused = true;
			return 0;
		}
		if (c->meta.bytes > c->d->cfg.limits.metadata_size * 4) {
			reg_refuse(c, 0, "metadata exceeds limits.metadata_size");
			c->refused = true;
			return 0;
		}
		if (((const struct ringlog_meta_entry *)(const void *)p)->kind == RINGLOG_META_PROVIDER)
			new_prov = true;
		c->meta_read += (uint32_t)n;
	}
	if (new_prov) {
		for (uint32_t id = 1; id < c->meta.nprov; id++)
			if (c->meta.providers[id] && map_provider(c, id, c->meta.providers[id]) < 0)
				return -ENOMEM;
		send_enable(c);
	}
	sink_publish_described(&c->d->sinks, c);
	ovl_meta_synced(c);
	return 0;
}

int reg_hello(struct client *c, const uint8_t *p, uint32_t len, d_obj_t o)
{
	struct ringlog_ctl_hello h;
	struct ringlog_ctl_welcome w = { .version = RINGLOG_CTL_VERSION,
					 .flags = RINGLOG_WELCOME_OVERLOAD | RINGLOG_WELCOME_BELL |
						  RINGLOG_WELCOME_RELEASED,
					 .ring_size = c->d->cfg.ring_size };
	uint64_t max = c->d->cfg.limits.metadata_size;
	d_obj_t keep;
	void *mem;
	size_t size;
	int err;

	if (c->writer || len < sizeof(h) || o == D_OBJ_NONE) {
		ctl_drop_obj(c, o);
		return -EPROTO;
	}
	memcpy(&h, p, sizeof(h));
	c->hello_clock = h.clock & RINGLOG_RING_CLOCK_TSC;
	c->clock_agrees = pace_clock_agrees(clock_stream_now(c->hello_clock), h.tsc);
	if (ctl_wake_ready(c))
		w.flags |= RINGLOG_WELCOME_WAKE;
	c->writer = true;
	c->id = ++c->d->next_writer_id;
	keep = ctl_dup_obj(c, o);
	err = ctl_map(c, o, false, max < UINT32_MAX ? max : UINT32_MAX, &mem, &size);
	if (err == -EPERM) {
		reg_refuse(c, 0, "metadata region is not %s", ctl_obj_kind);
		goto refuse;
	}
	if (err == -EFBIG || (!err && size < RINGLOG_META_MIN_SIZE)) {
		if (!err)
			ctl_unmap(mem, size);
		reg_refuse(c, 0, "metadata region of %zu bytes: limits.metadata_size is %llu", size,
			   (unsigned long long)max);
		goto refuse;
	}
	if (err) {
		reg_refuse(c, 0, "cannot map the metadata region: %s", strerror(-err));
		goto refuse;
	}
	c->meta_map = mem;
	c->meta_size = (uint32_t)size;
	{
		const struct ringlog_meta_hdr *m = (const void *)c->meta_map;

		if (m->magic != RINGLOG_META_MAGIC || m->version != RINGLOG_META_VERSION ||
		    m->header_size != RINGLOG_META_HEADER_SIZE) {
			reg_refuse(c, 0, "metadata region: bad magic, version or header size");
			goto refuse;
		}
	}
	fdstore_keep_meta(c, keep);
	ctl_send_welcome(c, &w, sizeof(w));
	return reg_meta_sync(c);
refuse:
	ctl_drop_obj(c, keep);
	c->refused = true;
	return 0;
}

static uint64_t uid_ring_bytes(struct daemon *d, uint32_t uid)
{
	uint64_t sum = 0;

	for (struct client *c = d->clients; c; c = c->next)
		if (c->uid == uid)
			sum += c->ring_bytes;
	return sum;
}

/* Room in c->released for every ring c has and every handle not yet
 * told, this one's included: made here, where a failure refuses a ring
 * that holds nothing yet, so that a release never needs memory and never
 * loses the handle that lets the program free the ring. */
static int reserve_released(struct client *c)
{
	uint64_t need = (uint64_t)c->nrings + c->nreleased + 1;
	uint32_t cap = c->released_cap ? c->released_cap : 16;
	uint64_t *h;

	if (need <= c->released_cap)
		return 0;
	while (cap < need)
		cap *= 2;
	if (!(h = realloc(c->released, cap * sizeof(*h))))
		return -ENOMEM;
	c->released = h;
	c->released_cap = cap;
	return 0;
}

struct ring *reg_ring_add(struct client *c, uint64_t handle, uint32_t tid, void *mem, size_t size,
			  const char **why)
{
	struct daemon *d = c->d;
	struct ring *r = calloc(1, sizeof(*r));

	*why = NULL;
	if (!r || reserve_released(c) < 0) {
		free(r);
		return NULL;
	}
	if (ringlog_cons_attach(&r->cons, mem, (uint64_t)size) < 0) {
		*why = r->cons.why;
		free(r);
		return NULL;
	}
	if (r->cons.hdr->pid != c->pid)
		d_log(LOG_WARNING, "client pid %u: ring claims pid %u; the kernel's pid is recorded",
		      c->pid, r->cons.hdr->pid);
	r->c = c;
	r->id = ++d->next_stream_id;
	r->tid = tid;
	r->handle = handle;
	r->mem = mem;
	r->map_size = size;
	r->clock = r->cons.hdr->compat_flags & RINGLOG_RING_CLOCK_TSC;
	r->ring_id = r->cons.hdr->created_ns;
	r->cons.defer = true; /* space goes back once stored: segment.c */
	/* Half the ring: woken then, a sleeping daemon has the other half's
	 * worth of time before the producer drops. (Rings are at most 1 GiB,
	 * checked above, so this fits the u32.) */
	__atomic_store_n(&r->cons.hdr->wake_bytes, (uint32_t)(r->cons.size / 2), __ATOMIC_RELAXED);
	ovl_ring_attached(d, r);
	/* Flagged asleep for good: the drain's wait follows the flow (drain.c)
	 * and may be long, so a ring past its threshold must always wake us.
	 * Flipping the flag around every pass cost a store into every ring's
	 * consumer line twice per pass, whatever was in it. */
	__atomic_store_n(&r->cons.hdr->consumer_flags, RINGLOG_CONS_SLEEPING, __ATOMIC_RELEASE);
	r->next = c->rings;
	c->rings = r;
	bell_wake(r); /* visited on every pass until it may sleep */
	c->nrings++;
	c->ring_bytes += (uint64_t)size;
	drain_start(d);
	return r;
}

/* A program still running across a restart registers the ring the new
 * daemon adopted from the fd store: the new ring takes over where the
 * adopted one stopped (positions past the adopted consumer's are in its
 * chunks), and the adopted one only waits for those chunks to be written. */
static void take_over(struct ring *r, struct ring *g)
{
	struct ringlog_consumer k = g->cons;

	k.hdr = r->cons.hdr;
	k.data = r->cons.data;
	r->cons = k;
	g->finishing = true;
	g->handed_over = true;
	d_log(LOG_INFO, "pid %u: ring of tid %u taken back from the fd store by the program itself",
	      r->c->pid, r->tid);
}

int reg_ring(struct client *c, const uint8_t *p, uint32_t len, d_obj_t o)
{
	struct daemon *d = c->d;
	struct ringlog_ctl_ring m;
	struct ring *r, *g;
	const char *why;
	d_obj_t keep;
	size_t size;
	void *mem;
	int err;

	if (!c->writer || len < sizeof(m) || o == D_OBJ_NONE) {
		ctl_drop_obj(c, o);
		return -EPROTO;
	}
	memcpy(&m, p, sizeof(m));
	if (c->refused) {
		/* Not refused by its handle: a refused ring is never offered
		 * again, and this one goes to the next daemon (or this one after
		 * the program reconnects) like every ring it has. */
		ctl_drop_obj(c, o);
		return 0;
	}
	if (c->nrings >= d->cfg.limits.rings_per_process) {
		reg_refuse(c, m.handle, "limits.rings_per_process (%u) reached",
			   d->cfg.limits.rings_per_process);
		ctl_drop_obj(c, o);
		return 0;
	}
	keep = ctl_dup_obj(c, o);
	err = ctl_map(c, o, true, RINGLOG_RING_HEADER_SIZE + (uint64_t)RINGLOG_RING_MAX_DATA, &mem,
		      &size);
	if (err == -EPERM) {
		reg_refuse(c, m.handle, "ring is not %s", ctl_obj_kind);
		goto drop;
	}
	if (err == -EFBIG || (!err && size < RINGLOG_RING_HEADER_SIZE + RINGLOG_RING_MIN_DATA)) {
		if (!err)
			ctl_unmap(mem, size);
		reg_refuse(c, m.handle, "ring of %zu bytes is outside 8 KiB .. 1 GiB", size);
		goto drop;
	}
	if (err) {
		reg_refuse(c, m.handle, "cannot map the ring: %s", strerror(-err));
		goto drop;
	}
	if (uid_ring_bytes(d, c->uid) + (uint64_t)size > d->cfg.limits.ring_bytes_per_uid) {
		ctl_unmap(mem, size);
		reg_refuse(c, m.handle, "uid %u would exceed limits.ring_bytes_per_uid (%llu bytes)",
			   c->uid, (unsigned long long)d->cfg.limits.ring_bytes_per_uid);
		goto drop;
	}
	r = reg_ring_add(c, m.handle, m.tid, mem, size, &why);
	if (r) {
		bell_ring_added(r, m.bell);
		r->clock_agrees = c->clock_agrees && r->clock == c->hello_clock;
	}
	if (!r && why) {
		reg_refuse(c, m.handle, "ring header rejected: %s", why);
		ctl_unmap(mem, size);
		goto drop;
	}
	if (!r) {
		ctl_unmap(mem, size);
		ctl_drop_obj(c, keep);
		return -ENOMEM;
	}
	if ((g = fdstore_ghost_ring(d, c, r)))
		take_over(r, g);
	fdstore_keep_ring(r, keep);
	return 0;
drop:
	ctl_drop_obj(c, keep);
	return 0;
}

/* Queued for reg_send_released(), in the room reserve_released() made. */
static void say_released(struct client *c, uint64_t handle)
{
	if (c->nreleased < c->released_cap) {
		c->released[c->nreleased++] = handle;
		c->d->released_pending = true;
	}
}

/* At most this many a frame: the library reads frames of up to 64 KiB. */
#define RELEASED_PER_FRAME 4096u

/* One writer's queue. What its queue cannot take now (replies it has not
 * read up to client.c's limit, no memory) stays for the next pass: a
 * handle lost keeps a finished ring in the program until it reconnects.
 * Past REG_RELEASED_KEPT_MAX the newest are let go, with a warning: a
 * writer that reads nothing while its threads come and go must not grow
 * the list without bound. It is not disconnected: this runs inside a pass,
 * which a frame being handled may have started (sync.c). */
static void send_released(struct client *c)
{
	uint32_t i = 0, k;

	for (; i < c->nreleased; i += k) {
		k = c->nreleased - i < RELEASED_PER_FRAME ? c->nreleased - i : RELEASED_PER_FRAME;
		if (client_send(c, RINGLOG_CTL_RELEASED, c->released + i,
				k * (uint32_t)sizeof(*c->released)) < 0)
			break;
	}
	if (c->gone) {
		c->nreleased = 0; /* nobody to tell */
		return;
	}
	memmove(c->released, c->released + i, (c->nreleased - i) * sizeof(*c->released));
	c->nreleased -= i;
	if (c->nreleased > REG_RELEASED_KEPT_MAX) {
		if (!c->released_warned)
			d_log(LOG_WARNING, "client pid %u (%s): reads none of its replies; %u ended threads' "
			      "rings it was not told it may free stay in it until it reconnects "
			      "(logged once)", c->pid, c->comm, c->nreleased - REG_RELEASED_KEPT_MAX);
		c->released_warned = true;
		c->nreleased = REG_RELEASED_KEPT_MAX;
	}
	if (c->nreleased)
		c->d->released_pending = true;
}

void reg_send_released(struct daemon *d)
{
	d->released_pending = false;
	for (struct client *c = d->clients; c; c = c->next)
		if (c->nreleased)
			send_released(c);
}

void reg_ring_release(struct ring *r)
{
	struct client *c = r->c;

	bell_ring_released(r);
	for (struct ring **pp = &c->rings; *pp; pp = &(*pp)->next)
		if (*pp == r) {
			*pp = r->next;
			break;
		}
	c->nrings--;
	c->ring_bytes -= r->map_size;
	fdstore_forget_ring(r);
	if (r->mem) {
		ctl_unmap(r->mem, r->map_size);
		/* Unmapped first: the program's close of the ring is then the
		 * last reference and frees its pages, ~50 us for 512 KiB that
		 * were ours to spend when it had closed first (proto/ctl.h).
		 * A writer gone (or adopted from the fd store) has nobody to
		 * tell. */
		if (!c->gone)
			say_released(c, r->handle);
	}
	free(r->store.pend);
	/* No chunk holds it (retire()): what it may still be given is a
	 * LOSS record, which takes no ring space. */
	r->store.pend = NULL;
	r->store.pend_cap = 0;
	r->store.ticket_head = r->store.ticket_next = 0;
	r->mem = NULL;
	r->next = NULL;
	/* Kept, without its mapping, as the stream of reports that come
	 * later (struct client's spent). */
	free(c->spent);
	c->spent = r;
	client_maybe_free(c);
}
