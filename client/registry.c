/* client/registry.c - providers and events in the metadata region.
 *
 * The region is shared memory (os-*.c; proto/event.h) the daemon maps
 * read-only.
 * Entries are appended under lib.lock and published by a release store of
 * `used`; an event's id becomes visible to emitting threads only after its
 * entry is published, so the daemon can always resolve an id it reads from
 * a ring.
 */
#define _GNU_SOURCE
#include "lib.h"

#include <errno.h>
#include <string.h>

int lib_meta_create(void)
{
	void *m;
	int err = lib_shm_create("ringlog-meta", LIB_META_SIZE, false, &lib.meta_obj, &m);

	if (err < 0)
		return err;
	lib.meta = m;
	lib.meta->magic = RINGLOG_META_MAGIC;
	lib.meta->version = RINGLOG_META_VERSION;
	lib.meta->header_size = RINGLOG_META_HEADER_SIZE;
	lib.meta->size = LIB_META_SIZE;
	return 0;
}

#ifndef _WIN32
/* The child of fork() shares the parent's region (MAP_SHARED): give it a
 * private copy so that its new events do not land in the parent's. */
int lib_meta_reopen_after_fork(void)
{
	struct ringlog_meta_hdr *old = lib.meta;
	lib_obj_t old_obj = lib.meta_obj;
	void *m;
	int err;

	if (!old)
		return 0;
	if ((err = lib_shm_create("ringlog-meta", LIB_META_SIZE, false, &lib.meta_obj, &m)) < 0) {
		lib.meta_obj = old_obj;
		return err;
	}
	lib.meta = m;
	memcpy(lib.meta, old, RINGLOG_META_HEADER_SIZE + old->used);
	lib_shm_destroy(old_obj, old, LIB_META_SIZE);
	return 0;
}
#endif

static bool valid_name(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (n == 0 || n > RINGLOG_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return false;
	return true;
}

/* Append one entry of body_len bytes; returns a pointer to its body. */
static uint8_t *append(uint16_t kind, uint16_t id, size_t body_len)
{
	size_t len = ringlog_align_up8(sizeof(struct ringlog_meta_entry) + body_len);
	uint32_t used = lib.meta->used;
	struct ringlog_meta_entry *h;

	if (RINGLOG_META_HEADER_SIZE + used + len > lib.meta->size)
		return NULL;
	h = (struct ringlog_meta_entry *)((uint8_t *)lib.meta + RINGLOG_META_HEADER_SIZE + used);
	memset(h, 0, len);
	h->len = (uint32_t)len;
	h->kind = kind;
	h->id = id;
	return (uint8_t *)(h + 1);
}

static void publish(size_t body_len)
{
	uint32_t len = (uint32_t)ringlog_align_up8(sizeof(struct ringlog_meta_entry) + body_len);

	/* Pairs with the acquire load of `used` in the daemon's meta_sync(). */
	__atomic_store_n(&lib.meta->used, lib.meta->used + len, __ATOMIC_RELEASE);
	lib.meta_dirty = true;
}

static int provider_register_locked(struct ringlog_provider *p)
{
	size_t n;
	uint8_t *b;
	uint16_t nl;

	if (p->id)
		return 0;
	if (!valid_name(p->name)) {
		lib_diag("provider name \"%s\" is invalid: use 1..255 printable bytes",
			 p->name ? p->name : "(null)");
		return -EINVAL;
	}
	if (lib.meta->providers == UINT16_MAX)
		return -ENOSPC;
	n = strlen(p->name);
	b = append(RINGLOG_META_PROVIDER, (uint16_t)(lib.meta->providers + 1), 2 + n);
	if (!b) {
		lib_diag("metadata region full (%u bytes): provider %s not registered",
			 LIB_META_SIZE, p->name);
		return -ENOSPC;
	}
	nl = (uint16_t)n;
	memcpy(b, &nl, 2);
	memcpy(b + 2, p->name, n);
	publish(2 + n);
	p->id = ++lib.meta->providers;
	p->next = lib.providers;
	lib.providers = p;
	return 0;
}

int ringlog_provider_register(struct ringlog_provider *p)
{
	int err;

	if (!p)
		return -EINVAL;
	if ((err = lib_start()) < 0)
		return err;
	pthread_mutex_lock(&lib.lock);
	err = provider_register_locked(p);
	pthread_mutex_unlock(&lib.lock);
	lib_wake();
	return err;
}

int lib_event_register_locked(struct ringlog_event *e)
{
	struct ringlog_meta_event ev = { 0 };
	size_t n, len;
	uint8_t *b;
	int err;

	if (e->id)
		return 0;
	if (!valid_name(e->name) || e->level < 1 || e->level > 5 ||
	    e->opcode > RINGLOG_OP_MAX_ || e->nfields > RINGLOG_FIELDS_MAX ||
	    (e->nfields && !e->fields)) {
		lib_diag("event \"%s\": invalid name, level %u, opcode %u or %u fields",
			 e->name ? e->name : "(null)", e->level, e->opcode, e->nfields);
		return -EINVAL;
	}
	if ((err = provider_register_locked(e->provider)) < 0)
		return err;
	n = strlen(e->name);
	len = sizeof(ev) + n;
	for (unsigned i = 0; i < e->nfields; i++) {
		const struct ringlog_field *f = &e->fields[i];

		if (!valid_name(f->name) || f->type < 1 || f->type > RINGLOG_TYPE_MAX_ ||
		    f->format > RINGLOG_FMT_MAX_) {
			lib_diag("event \"%s\": field %u has a bad name, type or format",
				 e->name, i);
			return -EINVAL;
		}
		len += sizeof(struct ringlog_meta_field) + strlen(f->name);
	}
	if (lib.meta->events == UINT16_MAX || !(b = append(RINGLOG_META_EVENT,
						(uint16_t)(lib.meta->events + 1), len))) {
		lib_diag("metadata region full (%u bytes): event %s not registered",
			 LIB_META_SIZE, e->name);
		return -ENOSPC;
	}
	ev.keyword = e->keyword;
	ev.provider = e->provider->id;
	ev.level = e->level;
	ev.opcode = e->opcode;
	ev.nfields = e->nfields;
	ev.name_len = (uint16_t)n;
	memcpy(b, &ev, sizeof(ev));
	b += sizeof(ev);
	memcpy(b, e->name, n);
	b += n;
	for (unsigned i = 0; i < e->nfields; i++) {
		struct ringlog_meta_field f = {
			.type = e->fields[i].type,
			.format = e->fields[i].format,
			.name_len = (uint16_t)strlen(e->fields[i].name),
		};

		memcpy(b, &f, sizeof(f));
		memcpy(b + sizeof(f), e->fields[i].name, f.name_len);
		b += sizeof(f) + f.name_len;
	}
	publish(len);
	/* Pairs with the acquire load in ringlog__begin(). */
	__atomic_store_n(&e->id, ++lib.meta->events, __ATOMIC_RELEASE);
	lib_policy_event_locked(e);
	return 0;
}

int ringlog_event_register(struct ringlog_event *e)
{
	int err;

	if (!e || !e->provider)
		return -EINVAL;
	if ((err = lib_start()) < 0)
		return err;
	pthread_mutex_lock(&lib.lock);
	err = lib_event_register_locked(e);
	pthread_mutex_unlock(&lib.lock);
	lib_wake();
	return err;
}

/* Every event a link unit (program or shared library) declares with the
 * macros, registered when its provider is: a tracer can then enable an
 * event that has never been emitted, and the daemon knows what to raise. */
void ringlog__register_events(struct ringlog_provider *p, struct ringlog_event *const *begin,
			      struct ringlog_event *const *end)
{
	if (!p || !begin || !end || lib_start() < 0)
		return;
	pthread_mutex_lock(&lib.lock);
	for (struct ringlog_event *const *e = begin; e < end; e++)
		if (*e && (*e)->provider == p)
			lib_event_register_locked(*e);
	pthread_mutex_unlock(&lib.lock);
	lib_wake();
}
