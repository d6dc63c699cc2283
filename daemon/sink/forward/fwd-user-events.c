/* daemon/sink/forward/fwd-user-events.c - forward events to Linux user_events, in the
 * EventHeader encoding (daemon/sink/forward/eventheader.h).
 *
 * One tracepoint per provider x level x keyword, registered with
 * DIAG_IOCSREG on <tracefs>/user_events_data when a writer's metadata first
 * shows the combination. Registration hands the kernel the address of a
 * 32-bit word in this process; the kernel sets bit 0 of it while any
 * ftrace or perf session has the tracepoint enabled. So "is anyone
 * listening" is a load, and an event nobody listens to costs nothing more.
 *
 * Debian 12's kernel headers lack <linux/user_events.h>: the ABI structs
 * are defined here, from Documentation/trace/user_events.rst.
 */
#define _GNU_SOURCE
#include "log.h"
#include "eventheader.h"
#include "forward.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <mntent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

/* --- kernel ABI (include/uapi/linux/user_events.h, Linux 6.4+) --- */
struct ue_reg {
	uint32_t size;        /* of this struct */
	uint8_t enable_bit;   /* bit of the enable word the kernel sets */
	uint8_t enable_size;  /* 4 or 8 */
	uint16_t flags;
	uint64_t enable_addr; /* where the enable word is, in our memory */
	uint64_t name_args;   /* the command string */
	uint32_t write_index; /* out: first 4 bytes of every write */
} __attribute__((packed));
static_assert(sizeof(struct ue_reg) == 28, "struct user_reg");
static_assert(offsetof(struct ue_reg, enable_addr) == 8, "user_reg.enable_addr");
static_assert(offsetof(struct ue_reg, name_args) == 16, "user_reg.name_args");
static_assert(offsetof(struct ue_reg, write_index) == 24, "user_reg.write_index");

struct ue_unreg {
	uint32_t size;
	uint8_t disable_bit;
	uint8_t reserved;
	uint16_t reserved2;
	uint64_t disable_addr;
} __attribute__((packed));
static_assert(sizeof(struct ue_unreg) == 16, "struct user_unreg");

/* The kernel declares these with pointer types, so the size field of the
 * ioctl number is sizeof(void *), not the struct's. */
#define UE_IOC_MAGIC '*'
#define UE_IOCSREG _IOWR(UE_IOC_MAGIC, 0, struct ue_reg *)
#define UE_IOCSDEL _IOW(UE_IOC_MAGIC, 1, char *)
#define UE_IOCSUNREG _IOW(UE_IOC_MAGIC, 2, struct ue_unreg *)

/* A hostile writer could invent keywords without end; each tracepoint is
 * kernel memory. Past this, new combinations are not forwarded (logged). */
#define MAX_TRACEPOINTS 4096

struct tp {
	uint32_t enabled;     /* written by the kernel: bit 0 = listened to.
	                       * First member: 4-aligned as the ABI requires,
	                       * and never moves (each tp is its own allocation) */
	uint32_t write_index;
	bool was_enabled;     /* as of the last changed() */
	uint8_t level;
	uint64_t keyword;
	struct tp *next;
	char prov[RINGLOG_EH_NAME_MAX]; /* provider part of the name */
	char owner[RINGLOG_EH_NAME_MAX]; /* the provider, as its programs name it */
	char name[RINGLOG_EH_NAME_MAX];
};

struct ue {
	int fd;
	char path[PATH_MAX];
	struct tp *tps;
	unsigned ntp;
	bool full_logged;
	uint8_t *buf;         /* one encoded event */
	size_t cap;
};

struct ue_ev {
	struct tp *tp;
	const struct ringlog_event_desc *e; /* the writer's, outlives us */
	uint16_t meta_len;
	uint8_t meta[];
};

/* tracefs wherever it is mounted; the usual places as a fallback. */
static int find_data_file(char *out, size_t len)
{
	static const char *const usual[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };
	FILE *m = setmntent("/proc/mounts", "r");
	struct stat st;
	bool mounted = false;

	if (m) {
		for (struct mntent *e; (e = getmntent(m));) {
			if (strcmp(e->mnt_type, "tracefs"))
				continue;
			mounted = true;
			snprintf(out, len, "%s/user_events_data", e->mnt_dir);
			if (stat(out, &st) == 0) {
				endmntent(m);
				return 0;
			}
		}
		endmntent(m);
	}
	for (size_t i = 0; i < sizeof(usual) / sizeof(usual[0]); i++) {
		snprintf(out, len, "%s/user_events_data", usual[i]);
		if (stat(out, &st) == 0)
			return 0;
	}
	return mounted ? -ENOENT : -ENODEV;
}

static int ue_open(struct fwd *f, char *why, size_t len)
{
	struct ue *u = calloc(1, sizeof(*u));
	int err;

	if (!u)
		return -ENOMEM;
	err = find_data_file(u->path, sizeof(u->path));
	if (err == -ENODEV) {
		snprintf(why, len, "tracefs is not mounted (mount -t tracefs nodev /sys/kernel/tracing)");
	} else if (err) {
		snprintf(why, len, "this kernel has no user_events (CONFIG_USER_EVENTS): "
			 "no user_events_data in tracefs");
	} else if ((u->fd = open(u->path, O_RDWR | O_CLOEXEC)) < 0) {
		err = -errno;
		snprintf(why, len, "cannot open %s: %s%s", u->path, strerror(errno),
			 err == -EACCES ? " (run ringlogd as root, or give its user write access "
					  "to that file)" : "");
	}
	if (err) {
		free(u);
		return err;
	}
	f->priv = u;
	return 0;
}

static void ue_close(struct fwd *f)
{
	struct ue *u = f->priv;

	if (!u)
		return;
	for (struct tp *t = u->tps, *n; t; t = n) {
		struct ue_unreg r = { .size = sizeof(r), .disable_bit = 0,
				      .disable_addr = (uint64_t)(uintptr_t)&t->enabled };

		n = t->next;
		/* The kernel must stop writing into memory we free; then the
		 * tracepoint goes too, unless a tracer still holds it (EBUSY). */
		ioctl(u->fd, UE_IOCSUNREG, &r);
		ioctl(u->fd, UE_IOCSDEL, t->name);
		free(t);
	}
	close(u->fd);
	free(u->buf);
	free(u);
	f->priv = NULL;
}

static struct tp *tracepoint(struct fwd *f, const char *provider, uint8_t level, uint64_t keyword)
{
	struct ue *u = f->priv;
	char name[RINGLOG_EH_NAME_MAX], prov[RINGLOG_EH_NAME_MAX], cmd[RINGLOG_EH_COMMAND_MAX];
	struct ue_reg r = { .size = sizeof(r), .enable_bit = 0, .enable_size = 4 };
	struct tp *t;
	int n = ringlog_eh_name(name, sizeof(name), provider, level, keyword);

	if (n < 0) {
		d_log(LOG_WARNING, "user_events: provider \"%s\": name too long for a tracepoint; "
		      "its events are not forwarded", provider);
		return NULL;
	}
	/* the provider part: the name without "_L<level>K<keyword>" */
	memcpy(prov, name, (size_t)n + 1);
	*strrchr(prov, '_') = 0;
	/* Names are reduced to [A-Za-z0-9_] (eventheader.h), so "Acme.Net" and
	 * "Acme_Net" would write into the same tracepoints, and a decoder
	 * (which takes the provider from the tracepoint name) would show them
	 * as one provider: the first to come owns the name, the other is not
	 * forwarded. */
	for (t = u->tps; t; t = t->next)
		if (!strcmp(t->prov, prov) && strcmp(t->owner, provider)) {
			char what[RINGLOG_EH_NAME_MAX + 32];

			snprintf(what, sizeof(what), "tracepoints %s_L*K*", prov);
			if (f->refuse)
				f->refuse(f, provider, t->owner, what);
			return NULL;
		}
	for (t = u->tps; t; t = t->next)
		if (!strcmp(t->name, name))
			return t;
	if (u->ntp >= MAX_TRACEPOINTS) {
		if (!u->full_logged)
			d_log(LOG_WARNING, "user_events: %u tracepoints registered, the most ringlogd "
			      "registers; %s and later combinations are not forwarded",
			      u->ntp, name);
		u->full_logged = true;
		return NULL;
	}
	if (!(t = calloc(1, sizeof(*t))))
		return NULL;
	memcpy(t->name, name, (size_t)n + 1);
	memcpy(t->prov, prov, strlen(prov) + 1);
	/* as long as the reduced name: the reduction maps byte to byte */
	snprintf(t->owner, sizeof(t->owner), "%s", provider);
	t->level = level;
	t->keyword = keyword;
	ringlog_eh_command(cmd, sizeof(cmd), name);
	r.enable_addr = (uint64_t)(uintptr_t)&t->enabled;
	r.name_args = (uint64_t)(uintptr_t)cmd;
	if (ioctl(u->fd, UE_IOCSREG, &r) < 0) {
		d_log(LOG_WARNING, "user_events: registering \"%s\" failed: %s; its events are not "
		      "forwarded", cmd, strerror(errno));
		free(t);
		return NULL;
	}
	t->write_index = r.write_index;
	t->next = u->tps;
	u->tps = t;
	u->ntp++;
	d_log(LOG_DEBUG, "user_events: registered %s", name);
	return t;
}

static void *ue_event_new(struct fwd *f, const char *provider, const struct ringlog_event_desc *e)
{
	uint8_t meta[RINGLOG_EH_META_MAX];
	long n = ringlog_eh_metadata(meta, sizeof(meta), e);
	struct tp *t = tracepoint(f, provider, e->level, e->keyword);
	struct ue_ev *ev;

	if (!t || n < 0 || n > UINT16_MAX || !(ev = malloc(sizeof(*ev) + (size_t)n)))
		return NULL;
	ev->tp = t;
	ev->e = e;
	ev->meta_len = (uint16_t)n;
	memcpy(ev->meta, meta, (size_t)n);
	return ev;
}

static void ue_event_free(void *ev)
{
	free(ev);
}

static bool ue_event_enabled(const void *v)
{
	const struct ue_ev *ev = v;

	return __atomic_load_n(&ev->tp->enabled, __ATOMIC_RELAXED) & 1;
}

static int ue_event_write(struct fwd *f, void *v, const uint8_t *act, uint64_t emit_real_ns,
			  const uint8_t *fields, size_t len, enum fwd_loss *why)
{
	struct ue *u = f->priv;
	struct ue_ev *ev = v;
	/* header, two extension headers, activity, time: the payload is
	 * never longer than the record's fields */
	size_t need = 8 + 4 + ev->meta_len + 4 + 16 + 8 + len;
	struct iovec iov[2];
	long n;

	if (need > u->cap) {
		uint8_t *b = realloc(u->buf, need);

		if (!b) {
			*why = FWD_LOST_OTHER;
			return -ENOMEM;
		}
		u->buf = b;
		u->cap = need;
	}
	n = ringlog_eh_event(u->buf, u->cap, ev->e, ev->meta, ev->meta_len, act, emit_real_ns,
			     fields, len);
	if (n < 0) {
		*why = FWD_LOST_OTHER;
		return (int)n;
	}
	iov[0] = (struct iovec){ &ev->tp->write_index, sizeof(ev->tp->write_index) };
	iov[1] = (struct iovec){ u->buf, (size_t)n };
	if (writev(u->fd, iov, 2) >= 0)
		return 0;
	switch (errno) {
	case EBADF:
	case ENOENT:
		*why = FWD_LOST_DISABLED;
		break;
	case ENOSPC:
	case ENOMEM:
	case EAGAIN:
		*why = FWD_LOST_TRACER;
		break;
	default:
		*why = FWD_LOST_OTHER;
	}
	return -errno;
}

static bool ue_changed(struct fwd *f)
{
	struct ue *u = f->priv;
	bool changed = false;

	for (struct tp *t = u->tps; t; t = t->next) {
		bool on = __atomic_load_n(&t->enabled, __ATOMIC_RELAXED) & 1;

		if (on != t->was_enabled) {
			d_log(LOG_INFO, "user_events: %s %s", t->name,
			      on ? "enabled by a tracer: its events are raised at the source"
				 : "no longer traced");
			t->was_enabled = on;
			changed = true;
		}
	}
	return changed;
}

static void ue_raise(struct fwd *f, const char *provider, uint64_t kw[8])
{
	struct ue *u = f->priv;

	/* by the provider's own name: a provider refused for sharing another's
	 * tracepoints is not raised by a tracer of the other */
	for (struct tp *t = u->tps; t; t = t->next)
		if (t->was_enabled && t->level < 8 && !strcmp(t->owner, provider))
			/* keyword 0 means "any" to the library: no single bit
			 * stands for it, so a K0 tracepoint raises them all */
			kw[t->level] |= t->keyword ? t->keyword : ~0ull;
}

static void ue_count(struct fwd *f, unsigned *targets, unsigned *enabled)
{
	struct ue *u = f->priv;

	*targets = u->ntp;
	*enabled = 0;
	for (struct tp *t = u->tps; t; t = t->next)
		*enabled += t->was_enabled;
}

const struct fwd_ops fwd_user_events_ops = {
	.name = "user_events",
	.open = ue_open,
	.close = ue_close,
	.event_new = ue_event_new,
	.event_free = ue_event_free,
	.event_enabled = ue_event_enabled,
	.event_write = ue_event_write,
	.changed = ue_changed,
	.raise = ue_raise,
	.count = ue_count,
};
