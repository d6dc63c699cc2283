/* proto/decode.c - segment records and segment files back into events. */
#define _GNU_SOURCE
#include "decode.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "compat-win.h"
#include "count.h"

#include "event.h"
#include "pack.h"
#include "ring.h"

void ringlog_dec_init(struct ringlog_decoder *d, const struct ringlog_seg_clock *clock)
{
	memset(d, 0, sizeof(*d));
	if (clock)
		d->clock = *clock;
}

static void writer_free(struct ringlog_dec_writer *w)
{
	if (!w)
		return;
	ringlog_meta_free(&w->meta);
	free(w->exe);
	free(w);
}

void ringlog_dec_free(struct ringlog_decoder *d)
{
	for (uint32_t s = 0; s < d->nscopes; s++) {
		struct ringlog_dec_scope *sc = &d->scopes[s];

		for (uint32_t i = 0; i < sc->nwriters; i++)
			writer_free(sc->writers[i]);
		free(sc->writers);
		free(sc->streams);
	}
	free(d->scopes);
	memset(d, 0, sizeof(*d));
}

uint64_t ringlog_dec_real_ns(const struct ringlog_seg_clock *c, uint32_t stream_clock,
			     uint64_t ts)
{
	/* No calibration at all (a header rebuilt after its magic was hit:
	 * magic_hit() marks it): 0, the time unknown, and the caller shows its
	 * chunk's (monotonic times came out as 1970 plus the uptime). A
	 * real_ref of 0 is a valid calibration (tests write such segments). */
	if (c->real_ref == RINGLOG_SEG_CLOCK_UNKNOWN)
		return 0;
	if (stream_clock & RINGLOG_RING_CLOCK_TSC) {
		__int128 dt = (__int128)ts - (__int128)c->tsc_ref;

		if (!c->tsc_hz)
			return 0;
		return (uint64_t)((__int128)c->real_ref + dt * 1000000000 / (__int128)c->tsc_hz);
	}
	return c->real_ref + (ts - c->mono_ref);
}

/* When a gap began: the record's own time (first_ts, in st's clock) when
 * it has one, else the previous event of its stream, else the previous
 * event decoded: never another thread's event when its own is known. */
static void loss_time(struct ringlog_decoder *d, const struct ringlog_dec_stream *st,
		      uint64_t first_ts, struct ringlog_dec_loss *dl)
{
	uint64_t t = first_ts && st ? ringlog_dec_real_ns(&d->clock, st->s.clock, first_ts) : 0;

	dl->real_ns = t ? t : st && st->last_real_ns ? st->last_real_ns : d->last_real_ns;
}

static void damage(struct ringlog_decoder *d, const char *what)
{
	d->damaged++;
	if (d->on_damage)
		d->on_damage(d->ctx, what);
}

static struct ringlog_dec_scope *scope(struct ringlog_decoder *d)
{
	if (d->scope >= d->nscopes) {
		uint32_t n = d->scope + 1;
		struct ringlog_dec_scope *s = realloc(d->scopes, n * sizeof(*s));

		if (!s)
			return NULL;
		memset(s + d->nscopes, 0, (n - d->nscopes) * sizeof(*s));
		d->scopes = s;
		d->nscopes = n;
	}
	return &d->scopes[d->scope];
}

static void rec_writer(struct ringlog_decoder *d, struct ringlog_dec_scope *sc, uint32_t id,
		       const uint8_t *b, size_t blen)
{
	struct ringlog_dec_writer *w;
	struct ringlog_seg_writer sw;

	if (blen < sizeof(sw))
		return damage(d, "WRITER record too short");
	memcpy(&sw, b, sizeof(sw));
	if (sw.exe_len > blen - sizeof(sw) || sw.exe_len > 4096)
		return damage(d, "WRITER executable path runs past the record");
	if (ringlog_grow(&sc->writers, &sc->nwriters, id, sizeof(*sc->writers)))
		return damage(d, "WRITER id out of range");
	if (sc->writers[id])
		return; /* repeated (a new chunk after damage may repeat it) */
	if (!(w = calloc(1, sizeof(*w))))
		return damage(d, "out of memory");
	w->w = sw;
	memcpy(w->comm, sw.comm, 16);
	for (int i = 0; i < 16; i++)
		if (w->comm[i] && (unsigned char)w->comm[i] < 0x20)
			w->comm[i] = '?';
	w->exe = strndup((const char *)b + sizeof(sw), sw.exe_len);
	ringlog_meta_init(&w->meta);
	sc->writers[id] = w;
}

static struct ringlog_dec_writer *writer_of(struct ringlog_dec_scope *sc, uint32_t id)
{
	return id < sc->nwriters ? sc->writers[id] : NULL;
}

void ringlog_dedup_free(struct ringlog_dedup *x)
{
	free(x->slot);
	memset(x, 0, sizeof(*x));
}

static uint64_t mix(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	return h ^ (h >> 33);
}

/* The slot of one ring, created on first use; NULL when out of memory (the
 * records are then delivered without the check). */
static struct ringlog_dedup_slot *dedup_slot(struct ringlog_dedup *x,
					     const struct ringlog_dec_writer *w,
					     const struct ringlog_dec_stream *st, uint64_t cls)
{
	uint64_t a = w->w.start_real_ns, b = st->s.ring_id;

	if (2 * (x->n + 1) > x->cap) {
		size_t cap = x->cap ? 2 * x->cap : 64;
		struct ringlog_dedup_slot *ns = calloc(cap, sizeof(*ns)), *old = x->slot;

		if (!ns)
			return NULL;
		for (size_t i = 0; i < x->cap; i++) {
			if (!old[i].used)
				continue;
			size_t j = mix(old[i].pid_start ^ old[i].ring_id ^ old[i].tid ^ old[i].cls) &
				   (cap - 1);

			while (ns[j].used)
				j = (j + 1) & (cap - 1);
			ns[j] = old[i];
		}
		free(old);
		x->slot = ns;
		x->cap = cap;
	}
	uint64_t ps = a ^ ((uint64_t)w->w.pid << 32);
	size_t j = mix(ps ^ b ^ st->s.tid ^ cls) & (x->cap - 1);

	for (;; j = (j + 1) & (x->cap - 1)) {
		struct ringlog_dedup_slot *s = &x->slot[j];

		if (!s->used) {
			*s = (struct ringlog_dedup_slot){ .pid_start = ps, .ring_id = b,
				.tid = st->s.tid, .used = 1, .cls = cls };
			x->n++;
			return s;
		}
		if (s->pid_start == ps && s->ring_id == b && s->tid == st->s.tid && s->cls == cls)
			return s;
	}
}

/* New: at or past the mark (unsigned distance), or inside a range a jump
 * forward skipped, which shrinks; what a jump skips becomes such a range,
 * the oldest given up when all are in use (its records are then taken as
 * seen, as before there were ranges). */
bool ringlog_dedup_new(struct ringlog_dedup_slot *s, uint64_t at, uint64_t end)
{
	const uint64_t half = UINT64_MAX >> 1;

	if (at - s->next <= half) {
		if (at != s->next && s->next) {
			unsigned k = 0;

			/* the one to give up: a free one, else one no record
			 * fits in (the PAD a ring's wrap leaves: every lap
			 * jumps over one, and those used up the ranges a late
			 * chunk needed: a review), else the oldest */
			for (unsigned i = 1; i < RINGLOG_DEDUP_HOLES; i++) {
				bool small = s->hole[i].hi - s->hole[i].lo <= RINGLOG_DEDUP_SMALL;
				bool ksmall = s->hole[k].hi - s->hole[k].lo <= RINGLOG_DEDUP_SMALL;

				if ((small && !ksmall) ||
				    (small == ksmall && s->hole[i].hi - s->hole[k].hi > half))
					k = i; /* smaller in kind, or older */
			}
			for (unsigned i = 0; i < RINGLOG_DEDUP_HOLES; i++)
				if (s->hole[i].lo == s->hole[i].hi)
					k = i;
			s->hole[k].lo = s->next;
			s->hole[k].hi = at;
		}
		s->next = end;
		return true;
	}
	for (unsigned i = 0; i < RINGLOG_DEDUP_HOLES; i++) {
		uint64_t lo = s->hole[i].lo, hi = s->hole[i].hi;

		if (lo == hi || at - lo > half || hi - end > half)
			continue; /* not inside [lo, hi) */
		/* late records come in order: the range shrinks from below;
		 * one from its middle splits it, the part above it kept while
		 * a range is free */
		s->hole[i].lo = end;
		if (at != lo) {
			s->hole[i].hi = at;
			s->hole[i].lo = lo;
			for (unsigned k = 0; k < RINGLOG_DEDUP_HOLES && end != hi; k++)
				if (s->hole[k].lo == s->hole[k].hi) {
					s->hole[k].lo = end;
					s->hole[k].hi = hi;
					break;
				}
		}
		return true;
	}
	return false;
}

/* Where a SPAN or PACK applies: its stream, writer and dedup mark. */
struct run_of {
	struct ringlog_dec_stream *st;
	struct ringlog_dec_writer *w;
	struct ringlog_dedup_slot *seen;
	uint32_t sid;
	uint64_t pos; /* ring position after the record at hand */
};

static int run_open(struct ringlog_decoder *d, struct ringlog_dec_scope *sc, uint32_t sid,
		    bool has_pos, const uint8_t *b, size_t blen, size_t *off, struct run_of *o)
{
	*o = (struct run_of){ .sid = sid,
			      .st = sid < sc->nstreams ? &sc->streams[sid] : NULL };
	*off = 0;
	if (!o->st || !o->st->known)
		return damage(d, "events of an undefined stream (its description is in a "
				 "damaged or missing chunk)"), -1;
	o->w = writer_of(sc, o->st->s.writer);
	if (!o->w)
		return damage(d, "events of a stream whose writer is undefined (its "
				 "description is in a damaged or missing chunk)"), -1;
	if (has_pos) {
		if (blen < sizeof(struct ringlog_seg_span))
			return damage(d, "SPAN or PACK too short for its position"), -1;
		memcpy(&o->pos, b, sizeof(o->pos));
		*off = sizeof(struct ringlog_seg_span);
		if (d->dedup)
			o->seen = dedup_slot(d->dedup, o->w, o->st, d->dedup_class);
	}
	return 0;
}

/* One ring record of a SPAN or PACK, as the producer wrote it. */
static int ring_record(struct ringlog_decoder *d, struct run_of *o,
		       const struct ringlog_rec_hdr *h, const uint8_t *p)
{
	struct ringlog_value vals[RINGLOG_FIELDS_MAX];
	uint64_t total = ringlog_rec_total(h->len);

	o->pos += total;
	if (o->seen && !ringlog_dedup_new(o->seen, o->pos - total, o->pos)) {
		d->dedup->dropped++;
		return 0;
	}
	if (h->type == RINGLOG_REC_LOSS) {
		/* first_ts 0 in the short form, by_level 0 but in the per-level one */
		struct ringlog_rec_loss_lvl l = { 0 };
		struct ringlog_dec_loss dl = { .writer = o->w, .stream = o->st,
			.reason = RINGLOG_LOSS_RING };

		if (h->len != sizeof(l.x.l) && h->len != sizeof(l.x) && h->len != sizeof(l)) {
			damage(d, "LOSS record of the wrong size");
			return 0;
		}
		memcpy(&l, p, h->len);
		dl.records = l.x.l.records;
		dl.bytes = l.x.l.bytes;
		memcpy(dl.by_level, l.by_level, sizeof(dl.by_level));
		dl.provider = h->aux ? ringlog_meta_provider(&o->w->meta, h->aux) : NULL;
		loss_time(d, o->st, l.x.first_ts, &dl);
		if (d->on_loss)
			d->on_loss(d->ctx, &dl);
		return 0;
	}
	if (h->type != RINGLOG_REC_EVENT && h->type != RINGLOG_REC_EVENT_ACT) {
		damage(d, "unknown ring record type in a SPAN");
		return 0;
	}
	const struct ringlog_event_desc *e = ringlog_meta_event(&o->w->meta, h->aux);
	uint32_t head = RINGLOG_EVENT_HDR_SIZE +
			(h->type == RINGLOG_REC_EVENT_ACT ? RINGLOG_ACTIVITY_SIZE : 0);
	uint64_t ts;

	if (!e) {
		damage(d, "event id without metadata");
		return 0;
	}
	if (h->len < head || ringlog_event_decode(e, p + head, h->len - head, vals)) {
		damage(d, "event payload does not match its metadata");
		return 0;
	}
	memcpy(&ts, p, 8);
	struct ringlog_dec_event ev = {
		.writer = o->w,
		.stream = o->st,
		.desc = e,
		.provider = ringlog_meta_provider(&o->w->meta, e->provider),
		.real_ns = ringlog_dec_real_ns(&d->clock, o->st->s.clock, ts),
		.activity = head > RINGLOG_EVENT_HDR_SIZE ? p + 8 : NULL,
		.values = vals,
		.stream_id = o->sid,
		.ts = ts,
	};
	if (!ev.real_ns)
		ev.real_ns = d->unknown_time_ns;
	d->last_real_ns = ev.real_ns;
	o->st->last_real_ns = ev.real_ns;
	return d->on_event ? d->on_event(d->ctx, &ev) : 0;
}

static int span(struct ringlog_decoder *d, struct ringlog_dec_scope *sc, uint32_t sid,
		uint16_t flags, const uint8_t *b, size_t blen)
{
	struct run_of o;
	size_t off;
	int r;

	if (run_open(d, sc, sid, flags & RINGLOG_SPAN_POS, b, blen, &off, &o))
		return 0;
	while (off + RINGLOG_REC_HDR_SIZE <= blen) {
		struct ringlog_rec_hdr h;
		uint64_t total;

		memcpy(&h, b + off, sizeof(h));
		total = ringlog_rec_total(h.len);
		if (total > blen - off)
			return damage(d, "ring record runs past its SPAN"), 0;
		if ((r = ring_record(d, &o, &h, b + off + RINGLOG_REC_HDR_SIZE)))
			return r;
		off += total;
	}
	if (off != blen)
		damage(d, "SPAN ends inside a ring record header");
	return 0;
}

/* A PACK (pack.h): the same ring records, unpacked one at a time into a
 * private copy. A record that cannot be unpacked ends the PACK: without
 * its length nothing after it can be found. */
static int pack(struct ringlog_decoder *d, struct ringlog_dec_scope *sc, uint32_t sid,
		const uint8_t *b, size_t blen)
{
	/* 8-aligned, as a ring record's payload is */
	uint64_t payload[RINGLOG_REC_MAX_LEN / 8 + 1];
	const uint8_t *p, *end = b + blen;
	struct ringlog_rec_hdr h;
	const char *why = NULL;
	uint64_t prev = 0;
	struct run_of o;
	size_t off;
	int r;

	if (run_open(d, sc, sid, true, b, blen, &off, &o))
		return 0;
	for (p = b + off; (r = ringlog_unpack_rec(&p, end, &prev, &h, (uint8_t *)payload, &why)) > 0;)
		if ((r = ring_record(d, &o, &h, (const uint8_t *)payload)))
			return r;
	if (r < 0)
		damage(d, why);
	return 0;
}

int ringlog_dec_records(struct ringlog_decoder *d, const uint8_t *p, size_t len)
{
	size_t off = 0;

	while (off + sizeof(struct ringlog_seg_rec) <= len) {
		struct ringlog_seg_rec r;
		struct ringlog_dec_scope *sc;
		const uint8_t *b;
		size_t blen;
		const char *why;
		int ret;

		memcpy(&r, p + off, sizeof(r));
		if (r.len < sizeof(r) || r.len % 8 || r.len > len - off) {
			damage(d, "segment record length is invalid; rest of the chunk skipped");
			return 0;
		}
		b = p + off + sizeof(r);
		blen = r.len - sizeof(r);
		off += r.len;
		if (r.type == RINGLOG_SEG_REC_SCOPE) {
			d->scope = r.id < 4096 ? r.id : 0;
			continue;
		}
		if (!(sc = scope(d)))
			return -ENOMEM;
		switch (r.type) {
		case RINGLOG_SEG_REC_WRITER:
			rec_writer(d, sc, r.id, b, blen);
			break;
		case RINGLOG_SEG_REC_STREAM:
			if (blen < sizeof(struct ringlog_seg_stream) ||
			    ringlog_grow(&sc->streams, &sc->nstreams, r.id, sizeof(*sc->streams))) {
				damage(d, "STREAM record invalid");
				break;
			}
			memcpy(&sc->streams[r.id].s, b, sizeof(struct ringlog_seg_stream));
			sc->streams[r.id].known = true;
			break;
		case RINGLOG_SEG_REC_META: {
			struct ringlog_dec_writer *w = writer_of(sc, r.id);

			if (!w)
				damage(d, "META record of an undefined writer");
			else if (ringlog_meta_add(&w->meta, b, blen, &why) < 0)
				damage(d, why ? why : "META record rejected");
			break;
		}
		case RINGLOG_SEG_REC_SPAN:
			if ((ret = span(d, sc, r.id, r.flags, b, blen)))
				return ret;
			break;
		case RINGLOG_SEG_REC_PACK:
			if ((ret = pack(d, sc, r.id, b, blen)))
				return ret;
			break;
		case RINGLOG_SEG_REC_LOSS: {
			struct ringlog_seg_loss l = { 0 }; /* the short form: not said */
			struct ringlog_dec_stream *st = r.id < sc->nstreams && sc->streams[r.id].known
				? &sc->streams[r.id] : NULL;

			if (blen < RINGLOG_SEG_LOSS_V1_SIZE) {
				damage(d, "LOSS record too short");
				break;
			}
			memcpy(&l, b, blen < sizeof(l) ? blen : sizeof(l));
			struct ringlog_dec_loss dl = {
				.writer = st ? writer_of(sc, st->s.writer) : NULL,
				.stream = st, .records = l.records, .bytes = l.bytes,
				.reason = l.reason,
			};
			if (dl.writer && l.provider)
				dl.provider = ringlog_meta_provider(&dl.writer->meta, l.provider);
			if (dl.writer && l.event) {
				const struct ringlog_event_desc *e =
					ringlog_meta_event(&dl.writer->meta, l.event);

				dl.event = e ? e->name : NULL;
			}
			dl.level = l.level <= 5 ? l.level : 0;
			if (dl.level)
				dl.by_level[dl.level] = dl.records;
			loss_time(d, st, l.first_ts, &dl);
			if (d->on_loss)
				d->on_loss(d->ctx, &dl);
			break;
		}
		case RINGLOG_SEG_REC_CLOCK:
			if (blen >= sizeof(d->clock))
				memcpy(&d->clock, b, sizeof(d->clock));
			break;
		default:
			damage(d, "unknown segment record type");
			break;
		}
	}
	if (off != len)
		damage(d, "chunk body ends inside a record header");
	return 0;
}

/* ------------------------------------------------------------------------
 * Files
 */

static bool tsc_hz_allowed(uint64_t hz)
{
	return !hz || (hz >= RINGLOG_SEG_TSC_HZ_MIN && hz <= RINGLOG_SEG_TSC_HZ_MAX);
}

void ringlog_seg_clock_of(const struct ringlog_seg_hdr *h, struct ringlog_seg_clock *c)
{
	c->tsc_ref = h->tsc_ref;
	c->mono_ref = h->mono_ref;
	c->real_ref = h->real_ref;
	c->tsc_hz = tsc_hz_allowed(h->tsc_hz) ? h->tsc_hz : 0;
}

uint64_t ringlog_seg_class_key(const struct ringlog_seg_hdr *h)
{
	uint64_t k = 0xcbf29ce484222325ull;

	if (!h->class_name[0])
		return 0;
	for (size_t i = 0; i < sizeof(h->class_name) && h->class_name[i]; i++)
		k = (k ^ (uint8_t)h->class_name[i]) * 0x100000001b3ull;
	return k;
}

/* class_name: a class's name (ringlog_seg_class_name_ok), NUL-padded;
 * all zero is the default class. */
static bool class_name_allowed(const char *c)
{
	size_t n = strnlen(c, RINGLOG_SEG_CLASS_NAME_SIZE);

	if (n && !ringlog_seg_class_name_ok(c, n))
		return false;
	for (size_t i = n; i < RINGLOG_SEG_CLASS_NAME_SIZE; i++) /* NUL-padded */
		if (c[i])
			return false;
	return true;
}

/* Fields a checksum cannot vouch for (a forger recomputes it): each is
 * checked against what the format allows, and the reader says what it
 * does instead of trusting it. */
static void check_header(struct ringlog_seg_file *f)
{
	size_t n = 0;

	f->warning[0] = 0;
	if (f->hdr.header_size != RINGLOG_SEG_HEADER_SIZE)
		n += (size_t)snprintf(f->warning + n, sizeof(f->warning) - n,
				      "header_size is %u, but format version %u has a %u-byte header: "
				      "ignored, chunks read from byte %u (nothing skipped)",
				      f->hdr.header_size, RINGLOG_SEG_VERSION, RINGLOG_SEG_HEADER_SIZE,
				      RINGLOG_SEG_HEADER_SIZE);
	if (!tsc_hz_allowed(f->hdr.tsc_hz) && n < sizeof(f->warning))
		n += (size_t)snprintf(f->warning + n, sizeof(f->warning) - n,
			 "%stsc_hz is %llu, outside what the format allows (0, or %llu..%llu): "
			 "TSC timestamps cannot be converted; those events are shown at the time "
			 "of their chunk", n ? "; " : "", (unsigned long long)f->hdr.tsc_hz,
			 RINGLOG_SEG_TSC_HZ_MIN, RINGLOG_SEG_TSC_HZ_MAX);
	if (!class_name_allowed(f->hdr.class_name)) {
		if (n < sizeof(f->warning))
			snprintf(f->warning + n, sizeof(f->warning) - n,
				 "%sclass_name is not 1 to 31 characters of a-z, 0-9, _ and - ended "
				 "by a NUL: read as the default class", n ? "; " : "");
		/* daemon and readers then agree on the file's class */
		memset(f->hdr.class_name, 0, sizeof(f->hdr.class_name));
	}
}

static int chunk_at(struct ringlog_seg_file *f, uint64_t off, bool headers_only,
		    const char **why);

/* A header whose magic was hit (zeroed by a disk, a tool or a hand): the
 * file is still a segment when a valid chunk (its magic and CRC) starts at
 * byte 4096, and its events are read rather than refused with the file.
 * The header's other fields are trusted when its CRC holds with the magic
 * put back (only the magic was hit); otherwise none is: the header reads
 * as all zero (version 1, the default class, no TSC rate), and the note
 * says so; with no clock calibration, every event is shown at its chunk's
 * time (ringlog_dec_real_ns()). Returns 1 (read it, the header trusted), 2
 * (read it, the header rebuilt), 0 (not a segment), -errno. */
static int magic_hit(struct ringlog_seg_file *f, char *note, size_t size)
{
	uint64_t was = f->hdr.magic;
	const char *why;
	int r;

	if (f->size < RINGLOG_SEG_HEADER_SIZE + sizeof(struct ringlog_chunk_hdr))
		return 0;
	r = chunk_at(f, RINGLOG_SEG_HEADER_SIZE, false, &why);
	if (r <= 0)
		return r;
	f->hdr.magic = RINGLOG_SEG_MAGIC;
	if (ringlog_seg_hdr_crc(&f->hdr) == f->hdr.hdr_crc) {
		snprintf(note, size, "magic is 0x%016llx, not a segment's, but a valid chunk "
			 "starts at byte %u and the header's checksum holds with the magic put "
			 "back: read as a segment", (unsigned long long)was, RINGLOG_SEG_HEADER_SIZE);
		return 1;
	}
	memset(&f->hdr, 0, sizeof(f->hdr));
	f->hdr.magic = RINGLOG_SEG_MAGIC;
	f->hdr.version = RINGLOG_SEG_VERSION;
	f->hdr.header_size = RINGLOG_SEG_HEADER_SIZE;
	f->hdr.real_ref = RINGLOG_SEG_CLOCK_UNKNOWN;
	snprintf(note, size, "magic is 0x%016llx, not a segment's, but a valid chunk starts at "
		 "byte %u: its chunks are read, its header is not trusted (the default class; "
		 "events are shown at the time of their chunk)", (unsigned long long)was,
		 RINGLOG_SEG_HEADER_SIZE);
	return 2;
}

int ringlog_seg_open(struct ringlog_seg_file *f, const char *path, const char **why)
{
	char note[sizeof(f->warning)] = "";
	struct stat st;
	int hit = 0;
	ssize_t n;

	memset(f, 0, sizeof(*f));
	*why = NULL;
	f->path = path;
	f->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (f->fd < 0)
		return -errno;
	if (fstat(f->fd, &st) < 0)
		goto err;
	f->size = (uint64_t)st.st_size;
	n = pread(f->fd, &f->hdr, sizeof(f->hdr), 0);
	if (n < 0)
		goto err;
	if ((size_t)n < 256 || (f->hdr.magic != RINGLOG_SEG_MAGIC &&
				(hit = magic_hit(f, note, sizeof(note))) <= 0)) {
		if (!hit)
			*why = "not a ringlog segment (bad magic or shorter than a header, and no "
			       "valid chunk at byte 4096)";
		free(f->body);
		f->body = NULL;
		close(f->fd);
		f->fd = -1;
		return hit < 0 ? hit : -EBADMSG;
	}
	if (f->hdr.version != RINGLOG_SEG_VERSION ||
	    (f->hdr.incompat_flags & ~RINGLOG_SEG_INCOMPAT_KNOWN)) {
		*why = "segment version or incompatible flags not supported by this reader";
		free(f->body);
		f->body = NULL;
		close(f->fd);
		f->fd = -1;
		return -EPROTO;
	}
	/* a header rebuilt from nothing (magic_hit()) is never "ok" */
	f->hdr_ok = hit != 2 && ringlog_seg_hdr_crc(&f->hdr) == f->hdr.hdr_crc;
	/* Never from header_size: a forged one would skip chunks unseen. */
	f->off = RINGLOG_SEG_HEADER_SIZE;
	check_header(f);
	if (note[0]) {
		size_t w = strlen(f->warning);

		snprintf(f->warning + w, sizeof(f->warning) - w, "%s%s", w ? "; " : "", note);
	}
	return 0;
err:
	n = -errno;
	close(f->fd);
	f->fd = -1;
	return (int)n;
}

void ringlog_seg_close(struct ringlog_seg_file *f)
{
	if (f->fd >= 0)
		close(f->fd);
	free(f->body);
	f->fd = -1;
	f->body = NULL;
}

static void report(struct ringlog_seg_file *f, uint64_t from, uint64_t to, const char *why)
{
	f->damaged_bytes += to - from;
	if (f->on_damage)
		f->on_damage(f->ctx, f->path, from, to, why);
}

/* Try to read a valid chunk at off. Returns 1 (valid), 0 (not a chunk
 * here, *why says why), -errno. */
static int chunk_at(struct ringlog_seg_file *f, uint64_t off, bool headers_only,
		    const char **why)
{
	struct ringlog_chunk_hdr h;
	ssize_t n = pread(f->fd, &h, sizeof(h), (off_t)off);

	if (n < 0)
		return -errno;
	if ((size_t)n < sizeof(h))
		return *why = "truncated chunk header", 0;
	if (h.magic != RINGLOG_CHUNK_MAGIC)
		return *why = "no chunk header (bad magic)", 0;
	if (h.body_len > RINGLOG_CHUNK_MAX)
		return *why = "chunk length beyond the format's limit", 0;
	/* framed: a failure from here on is its body's (its count is a claim) */
	f->chunk = h;
	f->chunk_off = off;
	if (off + sizeof(h) + h.body_len > f->size)
		return *why = "chunk extends past the end of the file (torn write)", 0;
	if (headers_only)
		return 1;
	if (f->cap < h.body_len) {
		uint8_t *b = realloc(f->body, h.body_len);

		if (!b)
			return -ENOMEM;
		f->body = b;
		f->cap = h.body_len;
	}
	n = pread(f->fd, f->body, h.body_len, (off_t)(off + sizeof(h)));
	if (n < 0)
		return -errno;
	if ((size_t)n != h.body_len)
		return *why = "truncated chunk body", 0;
	if (ringlog_chunk_crc(&h, f->body) != h.crc)
		return *why = "chunk checksum mismatch", 0;
	return 1;
}

/* A damaged range, with the events the chunk headers in it claim when any
 * was whole (a body that failed its checksum under an intact header): a
 * reader is told roughly what it lost, not only bytes. The claim is the
 * damaged headers' own, so it is said to be theirs. */
static void report_claimed(struct ringlog_seg_file *f, uint64_t from, uint64_t to,
			   const char *why, uint64_t claimed)
{
	if (claimed) {
		snprintf(f->damage_why, sizeof(f->damage_why),
			 "%s; its chunk headers claim %llu events", why,
			 (unsigned long long)claimed);
		why = f->damage_why;
	}
	report(f, from, to, why);
}

int ringlog_seg_next(struct ringlog_seg_file *f, bool headers_only)
{
	uint64_t bad_from = UINT64_MAX, claimed = 0;
	const char *first_why = NULL;

	f->chunk_off = UINT64_MAX;
	while (f->off + sizeof(struct ringlog_chunk_hdr) <= f->size) {
		const char *why = NULL;
		int r = chunk_at(f, f->off, headers_only, &why);

		if (r < 0)
			return r;
		if (r == 1) {
			if (bad_from != UINT64_MAX)
				report_claimed(f, bad_from, f->off, first_why, claimed);
			f->off = ringlog_align_up(f->off + sizeof(f->chunk) + f->chunk.body_len,
						  RINGLOG_SEG_ALIGN);
			return 1;
		}
		if (bad_from == UINT64_MAX) {
			bad_from = f->off;
			first_why = why;
		}
		if (f->chunk_off == f->off)
			ringlog_count_add(&claimed, f->chunk.events);
		f->off += RINGLOG_SEG_ALIGN; /* resynchronise at the next boundary */
	}
	if (bad_from != UINT64_MAX)
		report_claimed(f, bad_from, f->size, first_why, claimed);
	return 0;
}
