/* daemon/sink/forward/fwd-etw.c - forwarding to ETW (Windows), as TraceLogging events.
 *
 * One ETW provider per ringlog provider name, registered with the GUID
 * TraceLogging derives from that name (daemon/sink/forward/tracelogging.h), so that a
 * session started with `wpr`, `tracelog` or `logman` for "Acme.Net" (or
 * its GUID) sees the events with their field names and types, without a
 * manifest. Two names with one GUID (names differing only in case, which
 * ETW does not distinguish) would be one provider to a session: the second
 * is refused (forward.h's refuse), not registered. Each event is written
 * with EventWriteTransfer and three data
 * descriptors: the provider traits, the event's metadata (built once, when
 * the writer defines the event) and the payload.
 *
 * Enablement comes from ETW's enable callback, which records level and
 * keywords per provider; event_enabled() is then a load of what it
 * recorded, as EventEnabled() would compute it, so that a disabled event
 * costs no call. The callback runs on an ETW thread: it only stores and
 * flags, and the loop picks the change up in changed().
 */
#include "forward.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>
#include <evntprov.h>

#include "tracelogging.h"

struct etw_prov {
	struct etw_prov *next;
	struct etw *owner;
	REGHANDLE reg;
	GUID guid;
	char *name;
	uint8_t traits[RINGLOG_TLG_TRAITS_MAX];
	uint16_t traits_len;
	unsigned refs;           /* events that point here */
	/* written by the enable callback, read by the loop */
	volatile LONG enabled;
	volatile LONG level;     /* 0: every level */
	volatile LONG64 any, all;
};

struct etw {
	struct etw_prov *provs;
	unsigned nprov;
	volatile LONG changed;
	uint8_t buf[65536];      /* one payload at a time: the loop's thread */
};

struct etw_ev {
	struct etw_prov *p;
	const struct ringlog_event_desc *e;
	EVENT_DESCRIPTOR desc;
	uint16_t meta_len;
	uint8_t meta[];
};

static void NTAPI on_enable(LPCGUID source, ULONG is_enabled, UCHAR level, ULONGLONG any,
			    ULONGLONG all, PEVENT_FILTER_DESCRIPTOR filter, PVOID ctx)
{
	struct etw_prov *p = ctx;

	(void)source;
	(void)filter;
	/* EVENT_CONTROL_CODE_CAPTURE_STATE (2) asks for a rundown: nothing
	 * changes for us. */
	if (is_enabled > 1)
		return;
	InterlockedExchange64(&p->any, (LONG64)any);
	InterlockedExchange64(&p->all, (LONG64)all);
	InterlockedExchange(&p->level, level);
	InterlockedExchange(&p->enabled, is_enabled ? 1 : 0);
	InterlockedExchange(&p->owner->changed, 1);
}

static int etw_open(struct fwd *f, char *why, size_t len)
{
	struct etw *t = calloc(1, sizeof(*t));

	if (!t) {
		snprintf(why, len, "out of memory");
		return -ENOMEM;
	}
	f->priv = t;
	return 0;
}

static void prov_put(struct etw_prov *p)
{
	struct etw *t = p->owner;

	if (--p->refs)
		return;
	for (struct etw_prov **pp = &t->provs; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	t->nprov--;
	EventUnregister(p->reg);
	free(p->name);
	free(p);
}

static struct etw_prov *prov_get(struct fwd *f, const char *name)
{
	struct etw *t = f->priv;
	struct etw_prov *p;
	GUID g;
	long n;

	ringlog_tlg_provider_guid((uint8_t *)&g, name);
	for (p = t->provs; p; p = p->next) {
		if (memcmp(&p->guid, &g, sizeof(g)))
			continue;
		if (!strcmp(p->name, name)) {
			p->refs++;
			return p;
		}
		/* ETW names are case-insensitive: "Acme.Net" and "acme.net"
		 * have one GUID, and a session could not tell them apart. The
		 * first keeps it. */
		if (f->refuse) {
			char what[64] = "GUID ";

			ringlog_tlg_guid_string(what + 5, (const uint8_t *)&g);
			f->refuse(f, name, p->name, what);
		}
		return NULL;
	}
	if (!(p = calloc(1, sizeof(*p))) || !(p->name = strdup(name))) {
		free(p);
		return NULL;
	}
	n = ringlog_tlg_traits(p->traits, sizeof(p->traits), name);
	p->guid = g;
	p->owner = t;
	if (n < 0 || EventRegister(&g, on_enable, p, &p->reg) != ERROR_SUCCESS) {
		free(p->name);
		free(p);
		return NULL;
	}
	p->traits_len = (uint16_t)n;
	/* Tools that read traits from the provider rather than from each
	 * event (and Windows' own provider list) learn the name here. */
	EventSetInformation(p->reg, (EVENT_INFO_CLASS)RINGLOG_TLG_INFO_SET_TRAITS, p->traits,
			    (ULONG)n);
	p->refs = 1;
	p->next = t->provs;
	t->provs = p;
	t->nprov++;
	return p;
}

static void etw_close(struct fwd *f)
{
	struct etw *t = f->priv;

	/* every event was freed first (forward.c): no provider is left */
	free(t);
	f->priv = NULL;
}

static void *etw_event_new(struct fwd *f, const char *provider, const struct ringlog_event_desc *e)
{
	uint8_t meta[RINGLOG_TLG_META_MAX];
	long n = ringlog_tlg_metadata(meta, sizeof(meta), e);
	struct etw_ev *ev;

	if (n < 0 || !(ev = malloc(sizeof(*ev) + (size_t)n)))
		return NULL;
	if (!(ev->p = prov_get(f, provider))) {
		free(ev);
		return NULL;
	}
	ev->e = e;
	memset(&ev->desc, 0, sizeof(ev->desc));
	ev->desc.Channel = RINGLOG_TLG_CHANNEL;
	ev->desc.Level = e->level;
	ev->desc.Opcode = e->opcode;
	ev->desc.Keyword = e->keyword;
	ev->meta_len = (uint16_t)n;
	memcpy(ev->meta, meta, (size_t)n);
	return ev;
}

static void etw_event_free(void *v)
{
	struct etw_ev *ev = v;

	prov_put(ev->p);
	free(ev);
}

/* EventEnabled()'s rule, on what the callback recorded. */
static bool etw_event_enabled(const void *v)
{
	const struct etw_ev *ev = v;
	const struct etw_prov *p = ev->p;
	uint64_t kw = ev->desc.Keyword, all = (uint64_t)p->all;

	if (!p->enabled)
		return false;
	if (p->level && ev->desc.Level > (UCHAR)p->level)
		return false;
	return kw == 0 || ((kw & (uint64_t)p->any) && (kw & all) == all);
}

static int etw_event_write(struct fwd *f, void *v, const uint8_t *act, uint64_t emit_real_ns,
			   const uint8_t *fields, size_t len, enum fwd_loss *why)
{
	struct etw *t = f->priv;
	struct etw_ev *ev = v;
	EVENT_DATA_DESCRIPTOR d[3];
	GUID activity;
	long n = ringlog_tlg_payload(t->buf, sizeof(t->buf), ev->e, emit_real_ns, fields, len);
	ULONG st;

	if (n < 0) {
		*why = FWD_LOST_OTHER;
		return (int)n;
	}
	EventDataDescCreate(&d[0], ev->p->traits, ev->p->traits_len);
	d[0].Reserved = RINGLOG_TLG_DESC_PROVIDER_METADATA;
	EventDataDescCreate(&d[1], ev->meta, ev->meta_len);
	d[1].Reserved = RINGLOG_TLG_DESC_EVENT_METADATA;
	EventDataDescCreate(&d[2], t->buf, (ULONG)n);
	if (act)
		memcpy(&activity, act, sizeof(activity));
	st = EventWriteTransfer(ev->p->reg, &ev->desc, act ? &activity : NULL, NULL, 3, d);
	if (st == ERROR_SUCCESS)
		return 0;
	/* ERROR_MORE_DATA: the event is larger than the session's buffers;
	 * ERROR_NOT_ENOUGH_MEMORY: they are full */
	*why = st == ERROR_NOT_ENOUGH_MEMORY ? FWD_LOST_TRACER : FWD_LOST_OTHER;
	return st == ERROR_NOT_ENOUGH_MEMORY ? -ENOSPC : -EIO;
}

static bool etw_changed(struct fwd *f)
{
	struct etw *t = f->priv;

	return InterlockedExchange(&t->changed, 0) != 0;
}

/* A session enabled at level L with keywords K wants every level up to L
 * (all of them when L is 0) for those keywords; K = 0 means all. */
static void etw_raise(struct fwd *f, const char *provider, uint64_t kw[8])
{
	struct etw *t = f->priv;

	for (struct etw_prov *p = t->provs; p; p = p->next) {
		unsigned top = p->level && p->level < 8 ? (unsigned)p->level : 7;
		uint64_t k = p->any ? (uint64_t)p->any : ~0ull;

		if (!p->enabled || strcmp(p->name, provider))
			continue;
		for (unsigned l = 1; l <= top; l++)
			kw[l] |= k;
	}
}

static void etw_count(struct fwd *f, unsigned *targets, unsigned *enabled)
{
	struct etw *t = f->priv;

	*targets = t->nprov;
	*enabled = 0;
	for (struct etw_prov *p = t->provs; p; p = p->next)
		*enabled += p->enabled != 0;
}

const struct fwd_ops fwd_etw_ops = {
	.name = "etw",
	.open = etw_open,
	.close = etw_close,
	.event_new = etw_event_new,
	.event_free = etw_event_free,
	.event_enabled = etw_event_enabled,
	.event_write = etw_event_write,
	.changed = etw_changed,
	.raise = etw_raise,
	.count = etw_count,
};
