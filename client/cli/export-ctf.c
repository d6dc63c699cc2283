/* client/cli/export-ctf.c - `ringlog export --format ctf`: a CTF 1.8 trace
 * (diamon.org/ctf/v1.8.3) that babeltrace2 and Trace Compass open.
 *
 *   OUTPUT/metadata                 TSDL text, written last: it declares
 *                                   every event class the export met
 *   OUTPUT/stream-PID-TID[-N]       one binary stream per writer thread
 *                                   (ring); N > 0 only when that thread's
 *                                   clock went backwards in the store (a
 *                                   new calibration), since a CTF stream
 *                                   must not
 *
 * Time: one clock, `ringlog_real`, 1 GHz with offset 0 from the Unix epoch:
 * event timestamps are ringlog's real_ns, so every time a viewer prints is
 * `ringlog read`'s to the nanosecond. Everything is little-endian and
 * byte-aligned (packed: no padding to pay for on disk).
 *
 *   packet: header  magic u32 | stream_id u32 (0: one stream class) |
 *                   stream_instance_id u64
 *           context timestamp_begin, timestamp_end, content_size,
 *                   packet_size (bits), packet_seq_num, events_discarded
 *                   (u64 each) | pid, tid, uid u32 | comm u8[16] (text)
 *   event:  header  id u32 | timestamp u64
 *           context opcode (enum u8: info, start, stop) | activity (string:
 *                   32 hex digits, "" when the event has none)
 *           fields  the event's, in order, each named "_" + its name (CTF
 *                   readers drop one leading underscore: this is how TSDL
 *                   keywords such as "event" stay usable as names)
 *
 * Losses: events_discarded is the stream's running count of lost events.
 * babeltrace2 reports the difference between consecutive packets as
 * "Tracer discarded N events between [end of the previous packet] and
 * [end of this one]". So at a loss the open packet ends (before the loss),
 * and the packet after it ends with its first event: the report names the
 * last event before the gap and the first after it. A stream whose first
 * record is a loss starts with an empty packet counting 0, since readers
 * take the first packet's count as the origin.
 *
 * Memory: one packet buffer per stream (at most PKT_MAX), all of them
 * flushed and freed when together they pass BUF_BUDGET (many threads);
 * the event classes and streams seen. Descriptors at most 256 open.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "count.h"
#include "export.h"
#include "meta.h"

#ifndef O_BINARY
#define O_BINARY 0
#endif

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "export-ctf.c writes integers with memcpy as a little-endian trace"
#endif

#define CTF_MAGIC 0xC1FC1FC1u
#define PKT_HDR (4 + 4 + 8 + 6 * 8 + 3 * 4 + 16)
#define PKT_MAX (64u * 1024)
#define BUF_BUDGET (32u * 1024 * 1024)
#define MAX_OPEN 256

struct cclass {
	char *provider, *name;
	uint8_t level, opcode;
	uint16_t nfields;
	uint8_t *types, *formats;
	char **fnames;       /* TSDL names, "_" + sanitized, unique */
	char *sig;           /* the hash key */
	size_t sig_len;
};

struct cstream {
	uint32_t pid, tid, uid;
	uint64_t start, ring;    /* with pid and tid: the ring's identity */
	char comm[16];
	unsigned gen;            /* the file's -N */
	uint64_t instance;
	int fd;
	uint8_t *buf;
	size_t len, cap;
	uint32_t nev;
	uint64_t t_begin, t_end;
	uint64_t floor;          /* the latest time in the stream so far */
	uint64_t discarded;      /* lost events counted so far */
	uint64_t written_disc;   /* the count the last packet carried */
	uint64_t seq;            /* packets written */
	bool end_after_next;     /* the event after a loss closes its packet */
};

struct cache_slot {
	const void *desc;
	uint8_t *raw;
	uint32_t raw_len;
	uint32_t cls;
};

struct export_writer {
	char *dir;
	struct export_info info;
	struct cclass *cls;
	uint32_t ncls, capcls;
	uint32_t *cls_ix;         /* open addressing over cls, by signature */
	uint32_t cls_ixcap;
	struct cstream **st;
	uint32_t nst, capst;
	uint32_t *st_ix;
	uint32_t st_ixcap;
	struct cstream *last;     /* most events follow one of the same stream */
	struct cache_slot cache[256];
	size_t buffered;
	int nopen;
	uint64_t bytes;
	int err;
	char *sig;                /* scratch */
	size_t sig_cap;
};

/* ------------------------------------------------------------------------
 * Streams and packets.
 */
static void close_all_fds(struct export_writer *w, struct cstream *keep)
{
	for (uint32_t i = 0; i < w->nst; i++)
		if (w->st[i] != keep && w->st[i]->fd >= 0) {
			close(w->st[i]->fd);
			w->st[i]->fd = -1;
			w->nopen--;
		}
}

static int stream_open(struct export_writer *w, struct cstream *s)
{
	char *path;

	if (s->fd >= 0)
		return 0;
	if (w->nopen >= MAX_OPEN)
		close_all_fds(w, s); /* O(streams), once per MAX_OPEN opens */
	if (s->gen ? asprintf(&path, "%s/stream-%u-%u-%u", w->dir, s->pid, s->tid, s->gen) < 0
		   : asprintf(&path, "%s/stream-%u-%u", w->dir, s->pid, s->tid) < 0)
		return -ENOMEM;
	/* a thread id reused by another ring of the same pid: its own file */
	s->fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_BINARY, 0644);
	free(path);
	if (s->fd < 0)
		return -errno;
	w->nopen++;
	return 0;
}

static void put_u32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static void put_u64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

/* Write the open packet (possibly without events: a loss marker) and start
 * the next one. */
static int packet_flush(struct export_writer *w, struct cstream *s, uint64_t empty_time)
{
	uint8_t hdr[PKT_HDR];
	uint8_t *p;
	size_t len = s->nev ? s->len : PKT_HDR;
	int err;

	if (!s->nev) {
		s->t_begin = s->t_end = empty_time;
		if (!s->buf) /* the header alone */
			p = hdr;
		else
			p = s->buf;
	} else {
		p = s->buf;
	}
	put_u32(p, CTF_MAGIC);
	put_u32(p + 4, 0);
	put_u64(p + 8, s->instance);
	put_u64(p + 16, s->t_begin);
	put_u64(p + 24, s->t_end);
	put_u64(p + 32, (uint64_t)len * 8);
	put_u64(p + 40, (uint64_t)len * 8);
	put_u64(p + 48, s->seq);
	put_u64(p + 56, s->discarded);
	put_u32(p + 64, s->pid);
	put_u32(p + 68, s->tid);
	put_u32(p + 72, s->uid);
	memcpy(p + 76, s->comm, 16);
	err = stream_open(w, s);
	if (!err)
		err = export_write_all(s->fd, p, len);
	if (err)
		return err;
	w->bytes += len;
	s->seq++;
	s->written_disc = s->discarded;
	if (s->buf)
		w->buffered -= s->len - PKT_HDR;
	s->len = PKT_HDR;
	s->nev = 0;
	return 0;
}

/* Free every packet buffer after writing it: many streams at once. */
static int flush_all(struct export_writer *w)
{
	for (uint32_t i = 0; i < w->nst; i++) {
		struct cstream *s = w->st[i];
		int err = s->nev ? packet_flush(w, s, 0) : 0;

		if (err)
			return err;
		free(s->buf);
		s->buf = NULL;
		s->cap = 0;
		s->len = PKT_HDR;
	}
	w->buffered = 0;
	return 0;
}

/* The end of one instance of a stream: its last events, and a last empty
 * packet when losses came after them. */
static int stream_finish(struct export_writer *w, struct cstream *s)
{
	int err = s->nev ? packet_flush(w, s, 0) : 0;

	if (!err && s->discarded != s->written_disc)
		err = packet_flush(w, s, s->floor);
	return err;
}

static uint64_t stream_key_hash(uint32_t pid, uint32_t tid, uint64_t start, uint64_t ring)
{
	uint64_t k[3] = { ((uint64_t)pid << 32) | tid, start, ring };

	return export_fnv(k, sizeof(k), EXPORT_FNV_START);
}

static int index_grow(uint32_t **ix, uint32_t *cap, uint32_t n)
{
	if ((uint64_t)n * 2 < *cap)
		return 0;
	free(*ix);
	*cap = *cap ? *cap * 2 : 256;
	*ix = malloc(*cap * sizeof(**ix));
	if (!*ix)
		return -ENOMEM;
	memset(*ix, 0xff, *cap * sizeof(**ix));
	return 1; /* rebuild */
}

static struct cstream *stream_get(struct export_writer *w, const struct ringlog_dec_writer *wr,
				  const struct ringlog_dec_stream *ds)
{
	uint32_t pid = wr ? wr->w.pid : 0, tid = ds ? ds->s.tid : 0;
	uint64_t start = wr ? wr->w.start_real_ns : 0, ring = ds ? ds->s.ring_id : 0;
	struct cstream *s = w->last;
	uint64_t h;
	int g;

	if (s && s->pid == pid && s->tid == tid && s->start == start && s->ring == ring)
		return s;
	h = stream_key_hash(pid, tid, start, ring);
	if (w->st_ix) {
		for (uint32_t i = h & (w->st_ixcap - 1); w->st_ix[i] != UINT32_MAX;
		     i = (i + 1) & (w->st_ixcap - 1)) {
			s = w->st[w->st_ix[i]];
			if (s->pid == pid && s->tid == tid && s->start == start && s->ring == ring)
				return w->last = s;
		}
	}
	if (w->nst == w->capst) {
		struct cstream **n = realloc(w->st, (w->capst = w->capst ? w->capst * 2 : 64) *
						    sizeof(*n));
		if (!n)
			return NULL;
		w->st = n;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	*s = (struct cstream){ .pid = pid, .tid = tid, .start = start, .ring = ring,
			       .uid = wr ? wr->w.uid : 0, .fd = -1, .len = PKT_HDR,
			       .instance = w->nst };
	if (wr)
		memcpy(s->comm, wr->comm, 16);
	/* pid and tid name the file; a second ring of the same thread (a
	 * restarted process reusing the pid, a new ring) takes the next -N */
	for (uint32_t i = 0; i < w->nst; i++)
		if (w->st[i]->pid == pid && w->st[i]->tid == tid && w->st[i]->gen >= s->gen)
			s->gen = w->st[i]->gen + 1;
	w->st[w->nst++] = s;
	g = index_grow(&w->st_ix, &w->st_ixcap, w->nst);
	if (g < 0)
		return NULL;
	for (uint32_t k = g ? 0 : w->nst - 1; k < w->nst; k++) {
		struct cstream *t = w->st[k];
		uint32_t i = stream_key_hash(t->pid, t->tid, t->start, t->ring) & (w->st_ixcap - 1);

		while (w->st_ix[i] != UINT32_MAX)
			i = (i + 1) & (w->st_ixcap - 1);
		w->st_ix[i] = k;
	}
	return w->last = s;
}

/* A stream's clock went backwards (a new calibration after a daemon
 * restart): CTF streams must not, so the thread goes on in a new stream
 * instance and file, each keeping ringlog's exact times. */
static int stream_rotate(struct export_writer *w, struct cstream *s)
{
	int err = stream_finish(w, s);
	unsigned gen = s->gen;

	if (err)
		return err;
	for (uint32_t i = 0; i < w->nst; i++)
		if (w->st[i]->pid == s->pid && w->st[i]->tid == s->tid && w->st[i]->gen > gen)
			gen = w->st[i]->gen;
	if (s->fd >= 0) {
		close(s->fd);
		s->fd = -1;
		w->nopen--;
	}
	s->gen = gen + 1;
	s->instance = w->nst + (uint64_t)s->gen * 0x100000000ull;
	s->floor = s->discarded = s->written_disc = s->seq = 0;
	return 0;
}

static int reserve(struct cstream *s, size_t n)
{
	if (s->len + n > s->cap) {
		size_t cap = s->cap ? s->cap : 4096;
		uint8_t *b;

		while (cap < s->len + n)
			cap *= 2;
		b = realloc(s->buf, cap);
		if (!b)
			return -ENOMEM;
		s->buf = b;
		s->cap = cap;
	}
	return 0;
}

/* ------------------------------------------------------------------------
 * Event classes.
 */
static int sig_put(struct export_writer *w, size_t *at, const void *p, size_t n)
{
	if (*at + n > w->sig_cap) {
		size_t cap = w->sig_cap ? w->sig_cap * 2 : 512;
		char *s;

		while (cap < *at + n)
			cap *= 2;
		s = realloc(w->sig, cap);
		if (!s)
			return -ENOMEM;
		w->sig = s;
		w->sig_cap = cap;
	}
	memcpy(w->sig + *at, p, n);
	*at += n;
	return 0;
}

/* The class's identity: everything the metadata says about it, but not the
 * writer's event id (two programs declaring the same event share a class). */
static long signature(struct export_writer *w, const char *provider,
		      const struct ringlog_event_desc *d)
{
	size_t at = 0;
	int err = sig_put(w, &at, provider, strlen(provider) + 1);

	err = err ? err : sig_put(w, &at, d->name, strlen(d->name) + 1);
	err = err ? err : sig_put(w, &at, &d->level, 1);
	err = err ? err : sig_put(w, &at, &d->opcode, 1);
	err = err ? err : sig_put(w, &at, &d->nfields, 2);
	for (unsigned i = 0; !err && i < d->nfields; i++) {
		err = sig_put(w, &at, &d->fields[i].type, 1);
		err = err ? err : sig_put(w, &at, &d->fields[i].format, 1);
		err = err ? err : sig_put(w, &at, d->fields[i].name, strlen(d->fields[i].name) + 1);
	}
	return err ? err : (long)at;
}

/* "_" + the name with every byte TSDL does not take in an identifier as
 * "_"; a clash with an earlier field gets "_2", "_3"... */
static char *tsdl_name(char **prev, unsigned nprev, const char *name, const char *suffix)
{
	size_t l = strlen(name), sl = strlen(suffix);
	char *s = malloc(l + sl + 16);

	if (!s)
		return NULL;
	s[0] = '_';
	for (size_t i = 0; i < l; i++) {
		char c = name[i];

		s[i + 1] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			   (c >= '0' && c <= '9') ? c : '_';
	}
	memcpy(s + l + 1, suffix, sl + 1);
	for (unsigned n = 2;; n++) {
		bool clash = false;

		for (unsigned i = 0; i < nprev && !clash; i++)
			clash = prev[i] && !strcmp(prev[i], s);
		if (!clash)
			return s;
		snprintf(s + l + 1, sl + 15, "%s_%u", suffix, n);
	}
}

static int class_new(struct export_writer *w, const char *provider,
		     const struct ringlog_event_desc *d, size_t sig_len)
{
	struct cclass *c;
	unsigned nnames = 0;

	if (w->ncls == w->capcls) {
		struct cclass *n = realloc(w->cls, (w->capcls = w->capcls ? w->capcls * 2 : 64) *
						   sizeof(*n));
		if (!n)
			return -ENOMEM;
		w->cls = n;
	}
	c = &w->cls[w->ncls];
	memset(c, 0, sizeof(*c));
	c->provider = strdup(provider);
	c->name = strdup(d->name);
	c->level = d->level;
	c->opcode = d->opcode;
	c->nfields = d->nfields;
	c->types = malloc(d->nfields + 1u);
	c->formats = malloc(d->nfields + 1u);
	/* a blob takes two names: its length and its bytes */
	c->fnames = calloc(2u * d->nfields + 1u, sizeof(char *));
	c->sig = malloc(sig_len);
	if (!c->provider || !c->name || !c->types || !c->formats || !c->fnames || !c->sig)
		goto nomem;
	memcpy(c->sig, w->sig, sig_len);
	c->sig_len = sig_len;
	for (unsigned i = 0; i < d->nfields; i++) {
		c->types[i] = d->fields[i].type;
		c->formats[i] = d->fields[i].format;
		c->fnames[2 * i] = tsdl_name(c->fnames, nnames, d->fields[i].name, "");
		if (!c->fnames[2 * i])
			goto nomem;
		nnames = 2 * i + 1;
		if (c->types[i] == RINGLOG_TYPE_BLOB) {
			c->fnames[2 * i + 1] = tsdl_name(c->fnames, nnames, d->fields[i].name, "_len");
			if (!c->fnames[2 * i + 1])
				goto nomem;
		}
		nnames = 2 * i + 2;
	}
	w->ncls++;
	return 0;
nomem:
	for (unsigned i = 0; c->fnames && i < 2u * d->nfields; i++)
		free(c->fnames[i]);
	free(c->provider), free(c->name), free(c->types), free(c->formats), free(c->fnames);
	free(c->sig);
	return -ENOMEM;
}

static long class_of(struct export_writer *w, const struct ringlog_dec_event *e)
{
	const struct ringlog_event_desc *d = e->desc;
	const char *provider = e->provider ? e->provider : "?";
	struct cache_slot *cs = &w->cache[((uintptr_t)d >> 4) & 255];
	long n;
	uint64_t h;
	uint32_t i;
	int g;

	/* a descriptor's memory may be reused by the next segment's decoder
	 * for another event: the cache holds the bytes it was made from */
	if (cs->desc == d && d->raw && cs->raw_len == d->raw_len &&
	    !memcmp(cs->raw, d->raw, d->raw_len) && !strcmp(w->cls[cs->cls].provider, provider))
		return cs->cls;
	n = signature(w, provider, d);
	if (n < 0)
		return n;
	h = export_fnv(w->sig, (size_t)n, EXPORT_FNV_START);
	for (i = w->cls_ix ? h & (w->cls_ixcap - 1) : 0; w->cls_ix && w->cls_ix[i] != UINT32_MAX;
	     i = (i + 1) & (w->cls_ixcap - 1)) {
		struct cclass *c = &w->cls[w->cls_ix[i]];

		if (c->sig_len == (size_t)n && !memcmp(c->sig, w->sig, (size_t)n))
			goto found;
	}
	if ((g = class_new(w, provider, d, (size_t)n)) < 0)
		return g;
	g = index_grow(&w->cls_ix, &w->cls_ixcap, w->ncls);
	if (g < 0)
		return g;
	for (uint32_t k = g ? 0 : w->ncls - 1; k < w->ncls; k++) {
		const struct cclass *c = &w->cls[k];

		i = export_fnv(c->sig, c->sig_len, EXPORT_FNV_START) & (w->cls_ixcap - 1);
		while (w->cls_ix[i] != UINT32_MAX)
			i = (i + 1) & (w->cls_ixcap - 1);
		w->cls_ix[i] = k;
	}
	i = UINT32_MAX;
	for (uint32_t k = export_fnv(w->sig, (size_t)n, EXPORT_FNV_START) & (w->cls_ixcap - 1);;
	     k = (k + 1) & (w->cls_ixcap - 1))
		if (w->cls_ix[k] == w->ncls - 1) {
			i = k;
			break;
		}
found:
	if (d->raw) {
		uint8_t *r = realloc(cs->raw, d->raw_len ? d->raw_len : 1);

		if (r) {
			memcpy(r, d->raw, d->raw_len);
			*cs = (struct cache_slot){ d, r, d->raw_len, w->cls_ix[i] };
		}
	}
	return w->cls_ix[i];
}

/* ------------------------------------------------------------------------
 * The writer.
 */
static struct export_writer *ctf_begin(const char *path, const struct export_info *info)
{
	struct export_writer *w = calloc(1, sizeof(*w));
	int err;

	if (!w)
		return NULL;
#ifdef _WIN32
	err = mkdir(path);
#else
	err = mkdir(path, 0755);
#endif
	if (err && errno == EEXIST) {
		DIR *dp = opendir(path);
		struct dirent *de;

		err = dp ? 0 : -1;
		while (dp && (de = readdir(dp)))
			if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
				fprintf(stderr, "ringlog export: %s is not empty (it holds %s); "
					"name a new directory or empty it\n", path, de->d_name);
				closedir(dp);
				free(w);
				errno = EEXIST;
				return NULL;
			}
		if (dp)
			closedir(dp);
	}
	if (err) {
		int e = errno;

		fprintf(stderr, "ringlog export: cannot create the directory %s: %s\n", path,
			strerror(e));
		free(w);
		errno = e;
		return NULL;
	}
	w->dir = strdup(path);
	w->info = *info;
	if (!w->dir) {
		free(w);
		errno = ENOMEM;
		return NULL;
	}
	return w;
}

static int ctf_event(struct export_writer *w, const struct ringlog_dec_event *e)
{
	const struct ringlog_event_desc *d = e->desc;
	struct cstream *s;
	size_t need = 12 + 2 + 32;
	long cls;
	uint8_t *p;
	int err;

	if (w->err)
		return w->err;
	s = stream_get(w, e->writer, e->stream);
	cls = class_of(w, e);
	if (!s || cls < 0)
		return w->err = -ENOMEM;
	if (e->real_ns < s->floor && (err = stream_rotate(w, s)))
		return w->err = err;
	for (unsigned i = 0; i < d->nfields; i++)
		need += e->values[i].data ? e->values[i].len + 3u : 8u;
	if (s->len - PKT_HDR + need > PKT_MAX && s->nev && (err = packet_flush(w, s, 0)))
		return w->err = err;
	if ((err = reserve(s, need)))
		return w->err = err;
	p = s->buf + s->len;
	put_u32(p, (uint32_t)cls);
	put_u64(p + 4, e->real_ns);
	p[12] = d->opcode;
	p += 13;
	if (e->activity) {
		static const char hex[] = "0123456789abcdef";

		for (int i = 0; i < 16; i++) {
			*p++ = (uint8_t)hex[e->activity[i] >> 4];
			*p++ = (uint8_t)hex[e->activity[i] & 15];
		}
	}
	*p++ = 0;
	for (unsigned i = 0; i < d->nfields; i++) {
		const struct ringlog_value *v = &e->values[i];

		switch (d->fields[i].type) {
		case RINGLOG_TYPE_I8: case RINGLOG_TYPE_U8: case RINGLOG_TYPE_BOOL:
			*p++ = d->fields[i].type == RINGLOG_TYPE_BOOL ? (uint8_t)v->b : (uint8_t)v->u;
			break;
		case RINGLOG_TYPE_I16: case RINGLOG_TYPE_U16:
			memcpy(p, &v->u, 2); /* little-endian: the low bytes first */
			p += 2;
			break;
		case RINGLOG_TYPE_I32: case RINGLOG_TYPE_U32:
			memcpy(p, &v->u, 4);
			p += 4;
			break;
		case RINGLOG_TYPE_STR: {
			/* a CTF string ends at its first NUL: so does ours here */
			const uint8_t *z = v->len ? memchr(v->data, 0, v->len) : NULL;
			size_t l = z ? (size_t)(z - v->data) : v->len;

			memcpy(p, v->data, l);
			p[l] = 0;
			p += l + 1;
			break;
		}
		case RINGLOG_TYPE_BLOB: {
			uint16_t l = (uint16_t)v->len;

			memcpy(p, &l, 2);
			memcpy(p + 2, v->data, l);
			p += 2 + l;
			break;
		}
		default: /* I64, U64, F64 */
			memcpy(p, &v->u, 8);
			p += 8;
			break;
		}
	}
	w->buffered += (size_t)(p - (s->buf + s->len));
	s->len = (size_t)(p - s->buf);
	if (!s->nev++)
		s->t_begin = e->real_ns;
	s->t_end = s->floor = e->real_ns;
	if (s->end_after_next) {
		s->end_after_next = false;
		if ((err = packet_flush(w, s, 0)))
			return w->err = err;
	}
	if (w->buffered > BUF_BUDGET && (err = flush_all(w)))
		return w->err = err;
	return 0;
}

static int ctf_loss(struct export_writer *w, const struct ringlog_dec_loss *l)
{
	struct cstream *s;
	uint64_t t;
	int err = 0;

	if (w->err)
		return w->err;
	s = stream_get(w, l->writer, l->stream);
	if (!s)
		return w->err = -ENOMEM;
	t = l->real_ns > s->floor ? l->real_ns : s->floor;
	/* the events before the gap end their packet; a stream that has
	 * written nothing yet gets an empty first packet: the origin */
	if (s->nev)
		err = packet_flush(w, s, 0);
	else if (!s->seq)
		err = packet_flush(w, s, t);
	if (err)
		return w->err = err;
	s->floor = t;
	ringlog_count_add(&s->discarded, l->records);
	s->end_after_next = true;
	return 0;
}

/* ------------------------------------------------------------------------
 * Metadata.
 */
static void tsdl_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', f);
		if ((unsigned char)*s < 0x20)
			fprintf(f, "\\x%02x", (unsigned char)*s);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

/* CTF log levels are syslog's and LTTng's (0 emergency .. 14 debug). */
static unsigned ctf_loglevel(unsigned level)
{
	static const unsigned map[] = { 6, 2, 3, 4, 6, 14 };

	return level <= 5 ? map[level] : 14;
}

static void field_decl(FILE *f, const struct cclass *c, unsigned i)
{
	unsigned t = c->types[i];
	const char *hex = c->formats[i] == RINGLOG_FMT_HEX ? " base = 16;" : "";
	static const unsigned bits[] = { 0, 8, 16, 32, 64, 8, 16, 32, 64 };

	if (t >= RINGLOG_TYPE_I8 && t <= RINGLOG_TYPE_U64) {
		fprintf(f, "\t\tinteger { size = %u; align = 8; signed = %s;%s } %s;\n", bits[t],
			t <= RINGLOG_TYPE_I64 ? "true" : "false", hex, c->fnames[2 * i]);
	} else if (t == RINGLOG_TYPE_F64) {
		fprintf(f, "\t\tfloating_point { exp_dig = 11; mant_dig = 53; align = 8; } %s;\n",
			c->fnames[2 * i]);
	} else if (t == RINGLOG_TYPE_BOOL) {
		fprintf(f, "\t\tenum : uint8_t { \"false\" = 0, \"true\" = 1 } %s;\n", c->fnames[2 * i]);
	} else if (t == RINGLOG_TYPE_STR) {
		fprintf(f, "\t\tstring { encoding = UTF8; } %s;\n", c->fnames[2 * i]);
	} else { /* BLOB: its length, then its bytes */
		fprintf(f, "\t\tuint16_t %s;\n\t\tuint8_t %s[%s];\n", c->fnames[2 * i + 1],
			c->fnames[2 * i], c->fnames[2 * i + 1]);
	}
}

static int write_metadata(struct export_writer *w)
{
	char *path;
	FILE *f;
	int err = 0;
	unsigned maj = 0, min = 0, pat = 0;

	if (asprintf(&path, "%s/metadata", w->dir) < 0)
		return -ENOMEM;
	f = fopen(path, "wb");
	free(path);
	if (!f)
		return -errno;
	sscanf(w->info.version ? w->info.version : "0.0.0", "%u.%u.%u", &maj, &min, &pat);
	fputs("/* CTF 1.8 */\n\n"
	      "/* Written by `ringlog export --format ctf`: see ringlog(1), EXPORT. */\n\n"
	      "typealias integer { size = 8; align = 8; signed = false; } := uint8_t;\n"
	      "typealias integer { size = 16; align = 8; signed = false; } := uint16_t;\n"
	      "typealias integer { size = 32; align = 8; signed = false; } := uint32_t;\n"
	      "typealias integer { size = 64; align = 8; signed = false; } := uint64_t;\n\n"
	      "trace {\n"
	      "\tmajor = 1;\n"
	      "\tminor = 8;\n"
	      "\tbyte_order = le;\n"
	      "\tpacket.header := struct {\n"
	      "\t\tuint32_t magic;\n"
	      "\t\tuint32_t stream_id;\n"
	      "\t\tuint64_t stream_instance_id;\n"
	      "\t};\n"
	      "};\n\n"
	      "env {\n"
	      "\ttracer_name = \"ringlog\";\n", f);
	fprintf(f, "\ttracer_major = %u;\n\ttracer_minor = %u;\n\ttracer_patch = %u;\n", maj, min,
		pat);
	fputs("\tversion = ", f);
	tsdl_str(f, w->info.version ? w->info.version : "");
	fputs(";\n\thostname = ", f);
	tsdl_str(f, w->info.host);
	fputs(";\n\tboot_id = ", f);
	tsdl_str(f, w->info.boot_id);
	fputs(";\n};\n\n"
	      "clock {\n"
	      "\tname = \"ringlog_real\";\n"
	      "\tdescription = \"wall clock of the events: ns since the Unix epoch\";\n"
	      "\tfreq = 1000000000;\n"
	      "\tprecision = 1;\n"
	      "\toffset_s = 0;\n"
	      "\toffset = 0;\n"
	      "\tabsolute = true;\n"
	      "};\n\n"
	      "typealias integer { size = 64; align = 8; signed = false; "
	      "map = clock.ringlog_real.value; } := ringlog_time;\n\n"
	      "stream {\n"
	      "\tid = 0;\n"
	      "\tpacket.context := struct {\n"
	      "\t\tringlog_time timestamp_begin;\n"
	      "\t\tringlog_time timestamp_end;\n"
	      "\t\tuint64_t content_size;\n"
	      "\t\tuint64_t packet_size;\n"
	      "\t\tuint64_t packet_seq_num;\n"
	      "\t\tuint64_t events_discarded;\n"
	      "\t\tuint32_t pid;\n"
	      "\t\tuint32_t tid;\n"
	      "\t\tuint32_t uid;\n"
	      "\t\tinteger { size = 8; align = 8; signed = false; encoding = UTF8; } comm[16];\n"
	      "\t};\n"
	      "\tevent.header := struct {\n"
	      "\t\tuint32_t id;\n"
	      "\t\tringlog_time timestamp;\n"
	      "\t};\n"
	      "\tevent.context := struct {\n"
	      "\t\tenum : uint8_t { \"info\" = 0, \"start\" = 1, \"stop\" = 2 } opcode;\n"
	      "\t\tstring { encoding = UTF8; } activity;\n"
	      "\t};\n"
	      "};\n", f);
	for (uint32_t k = 0; k < w->ncls; k++) {
		const struct cclass *c = &w->cls[k];
		char *name;

		if (asprintf(&name, "%s:%s", c->provider, c->name) < 0) {
			err = -ENOMEM;
			break;
		}
		fputs("\nevent {\n\tname = ", f);
		tsdl_str(f, name);
		free(name);
		fprintf(f, ";\n\tid = %u;\n\tstream_id = 0;\n\tloglevel = %u;\n", k,
			ctf_loglevel(c->level));
		if (c->nfields) {
			fputs("\tfields := struct {\n", f);
			for (unsigned i = 0; i < c->nfields; i++)
				field_decl(f, c, i);
			fputs("\t};\n", f);
		}
		fputs("};\n", f);
	}
	if (ftell(f) > 0)
		w->bytes += (uint64_t)ftell(f);
	if (ferror(f) && !err)
		err = -EIO;
	if (fclose(f) && !err)
		err = -errno;
	return err;
}

static int ctf_end(struct export_writer *w, uint64_t *bytes)
{
	int err = w->err;

	for (uint32_t i = 0; i < w->nst; i++) {
		struct cstream *s = w->st[i];

		if (!err)
			err = stream_finish(w, s);
		if (s->fd >= 0)
			close(s->fd);
		free(s->buf);
		free(s);
	}
	if (!err)
		err = write_metadata(w);
	if (bytes)
		*bytes = w->bytes;
	for (uint32_t k = 0; k < w->ncls; k++) {
		struct cclass *c = &w->cls[k];

		for (unsigned i = 0; i < 2u * c->nfields; i++)
			free(c->fnames[i]);
		free(c->provider), free(c->name), free(c->types), free(c->formats);
		free(c->fnames), free(c->sig);
	}
	for (unsigned i = 0; i < 256; i++)
		free(w->cache[i].raw);
	free(w->cls), free(w->cls_ix), free(w->st), free(w->st_ix), free(w->sig), free(w->dir);
	free(w);
	return err;
}

const struct export_ops export_ctf_ops = {
	.name = "ctf",
	.begin = ctf_begin,
	.event = ctf_event,
	.loss = ctf_loss,
	.end = ctf_end,
};
