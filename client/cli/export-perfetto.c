/* client/cli/export-perfetto.c - `ringlog export --format perfetto`: a trace
 * file of TracePackets that ui.perfetto.dev and trace_processor open.
 *
 * The messages and field numbers are Perfetto's published ones (the source
 * file is named at each group of numbers below); proto/perfetto/
 * ringlog-perfetto-subset.proto declares exactly what we write. The encoder
 * is our own: varints and length-delimited fields written straight into
 * the output buffer, a nested message's length patched in when it closes.
 *
 * What goes where:
 *   sequence 1       the ClockSnapshot (first packet of every file) and the
 *                    track of losses no writer is known for
 *   sequence 2, 3..  one per writer thread (ring): its first packet in a
 *                    file clears incremental state (SEQ_INCREMENTAL_STATE_
 *                    CLEARED), sets the sequence's defaults (REALTIME clock,
 *                    its thread track) and describes the process track
 *                    (pid, comm, start time) when the file has not yet;
 *                    then the thread track (pid, tid); every later packet
 *                    says SEQ_NEEDS_INCREMENTAL_STATE
 *   events           TrackEvents: provider = interned category, event name
 *                    = interned name, fields = debug annotations with
 *                    interned names and typed values (ints int_value,
 *                    unsigned uint_value, hex pointer_value, f64
 *                    double_value, bool bool_value, strings string_value,
 *                    blobs string_value in hex as read --json, times
 *                    uint_value ns); "activity" (hex) when the event has one
 *   opcodes          info: TYPE_INSTANT. start without an activity id:
 *                    TYPE_SLICE_BEGIN on the thread track, closed by the
 *                    thread's next stop (innermost first; a stop with
 *                    nothing open on its thread in this file is an
 *                    instant); start or stop with one: an end of a slice
 *                    on a track of its own (uuid from process and id) under
 *                    the process track, paired by trace_processor, which
 *                    sorts by time first (the store may hold a stop from
 *                    one thread before the start from another). A slice's
 *                    end has no name or category (trace_processor would
 *                    close only a slice of the same name): the stop's
 *                    provider, name and fields are arguments "stop.provider",
 *                    "stop.event", "stop.NAME" (merged into the slice's).
 *   losses           an instant "N events lost: REASON" on the writer
 *                    thread's track (category "ringlog"), and a counter
 *                    track "lost events" under it: the export's running
 *                    count for that thread
 *
 * Time: packets carry ringlog's real_ns (`read --json`'s time_ns) in the
 * REALTIME clock, and the ClockSnapshot makes REALTIME the trace's clock
 * (primary_trace_clock), with MONOTONIC beside it as ringlog's calibration
 * relates them, so every time trace_processor shows is read's.
 *
 * --max-size N: the output is OUTPUT's name with -001, -002... before its
 * extension (trace.pftrace: trace-001.pftrace, ...), each file at most N
 * bytes and whole by itself: clock, tracks and interning start again in
 * each. Interning ids stay the same across files (Perfetto forbids reusing
 * an id for another value within a trace).
 *
 * Not exported: the level (no TrackEvent field for it) and which strings
 * the program truncated.
 *
 * Memory: the interned strings, one record per writer thread and process,
 * the activities whose ends do not balance yet in the current file, per
 * thread a bitmap of the interned ids its sequence has seen, the output
 * buffer (2 MiB, flushed past 1 MiB).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "count.h"
#include "export.h"
#include "meta.h"
#include "output.h"

#ifndef O_BINARY
#define O_BINARY 0
#endif

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "export-perfetto.c writes fixed64 doubles with memcpy (protobuf is little-endian)"
#endif

/* protos/perfetto/trace/trace.proto: Trace */
#define F_TRACE_PACKET 1
/* protos/perfetto/trace/trace_packet.proto: TracePacket */
#define F_PKT_TIMESTAMP 8
#define F_PKT_CLOCK_ID 58
#define F_PKT_TRACK_EVENT 11
#define F_PKT_TRACK_DESCRIPTOR 60
#define F_PKT_CLOCK_SNAPSHOT 6
#define F_PKT_SEQ_ID 10        /* trusted_packet_sequence_id */
#define F_PKT_INTERNED 12
#define F_PKT_SEQ_FLAGS 13
#define F_PKT_DEFAULTS 59      /* trace_packet_defaults */
#define SEQ_INCREMENTAL_STATE_CLEARED 1
#define SEQ_NEEDS_INCREMENTAL_STATE 2
/* protos/perfetto/trace/trace_packet_defaults.proto: TracePacketDefaults */
#define F_DEF_CLOCK_ID 58
#define F_DEF_TRACK_EVENT 11
/* protos/perfetto/trace/track_event/track_event.proto: TrackEventDefaults */
#define F_TEDEF_TRACK_UUID 11
/* protos/perfetto/trace/clock_snapshot.proto: ClockSnapshot, Clock */
#define F_CS_CLOCKS 1
#define F_CS_PRIMARY 2
#define F_CLK_ID 1
#define F_CLK_TIMESTAMP 2
/* protos/perfetto/common/builtin_clock.proto: BuiltinClock */
#define CLOCK_REALTIME_ID 1
#define CLOCK_MONOTONIC_ID 3
/* protos/perfetto/trace/track_event/track_event.proto: TrackEvent */
#define F_TE_CATEGORY_IIDS 3
#define F_TE_NAME_IID 10
#define F_TE_NAME 23
#define F_TE_TYPE 9
#define F_TE_TRACK_UUID 11
#define F_TE_COUNTER_VALUE 30
#define F_TE_ANNOTATIONS 4
#define TYPE_SLICE_BEGIN 1
#define TYPE_SLICE_END 2
#define TYPE_INSTANT 3
#define TYPE_COUNTER 4
/* protos/perfetto/trace/track_event/debug_annotation.proto: DebugAnnotation */
#define F_DA_NAME_IID 1
#define F_DA_BOOL 2
#define F_DA_UINT 3
#define F_DA_INT 4
#define F_DA_DOUBLE 5
#define F_DA_STRING 6
#define F_DA_POINTER 7
/* protos/perfetto/trace/interned_data/interned_data.proto: InternedData;
 * its entries (EventCategory, EventName in track_event.proto,
 * DebugAnnotationName in debug_annotation.proto) are all {iid = 1, name = 2} */
#define F_ID_CATEGORIES 1
#define F_ID_NAMES 2
#define F_ID_ANNOTATION_NAMES 3
#define F_ENTRY_IID 1
#define F_ENTRY_NAME 2
/* protos/perfetto/trace/track_event/track_descriptor.proto: TrackDescriptor */
#define F_TD_UUID 1
#define F_TD_PARENT 5
#define F_TD_NAME 2
#define F_TD_PROCESS 3
#define F_TD_THREAD 4
#define F_TD_COUNTER 8
/* protos/perfetto/trace/track_event/process_descriptor.proto */
#define F_PD_PID 1
#define F_PD_CMDLINE 2
#define F_PD_NAME 6
#define F_PD_START 7
/* protos/perfetto/trace/track_event/thread_descriptor.proto */
#define F_THD_PID 1
#define F_THD_TID 2
#define F_THD_NAME 5
/* protos/perfetto/trace/track_event/counter_descriptor.proto */
#define F_CD_UNIT 3
#define UNIT_COUNT 2

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2 };

#define BUF_FLUSH (1u << 20)
#define GLOBAL_TRACK 1u          /* losses of no known writer */
#define SEQ_GLOBAL 1u

/* ------------------------------------------------------------------------
 * The encoder: the caller reserves room first (an upper bound), then
 * writes through a pointer.
 */
static inline uint8_t *pb_varint(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

static inline uint8_t *pb_tag(uint8_t *p, uint32_t field, unsigned wt)
{
	return pb_varint(p, (uint64_t)field << 3 | wt);
}

static inline uint8_t *pb_uint(uint8_t *p, uint32_t field, uint64_t v)
{
	return pb_varint(pb_tag(p, field, WT_VARINT), v);
}

static inline uint8_t *pb_bytes(uint8_t *p, uint32_t field, const void *s, size_t n)
{
	p = pb_varint(pb_tag(p, field, WT_LEN), n);
	memcpy(p, s, n);
	return p + n;
}

static inline uint8_t *pb_str(uint8_t *p, uint32_t field, const char *s)
{
	return pb_bytes(p, field, s, strlen(s));
}

/* Open a nested message: its tag and one byte for its length. Returns
 * where the length goes, for pb_close(). */
static inline uint8_t *pb_open(uint8_t **p, uint32_t field)
{
	uint8_t *at = pb_tag(*p, field, WT_LEN);

	*p = at + 1;
	return at;
}

/* Write the length of the message opened at `at` and ending at p: one byte
 * mostly; a longer one moves the message up (it is small: a packet). */
static inline uint8_t *pb_close(uint8_t *at, uint8_t *p)
{
	size_t len = (size_t)(p - at - 1);
	size_t k = 1;

	if (len < 0x80) {
		*at = (uint8_t)len;
		return p;
	}
	for (size_t v = len; v >= 0x80; v >>= 7)
		k++;
	memmove(at + k, at + 1, len);
	pb_varint(at, len);
	return at + k + len;
}

/* ------------------------------------------------------------------------
 * Tables: byte strings to ids (interned strings, class signatures, writer
 * keys), open addressing.
 */
struct stab {
	struct sslot { uint64_t h; uint32_t off, len, val; } *s;
	uint32_t cap, n;
	char *arena;
	size_t alen, acap;
};

/* The value of key, or UINT32_MAX when absent and add is false; with add,
 * an absent key gets val. Returns UINT32_MAX - 1 when out of memory. */
static uint32_t stab_get(struct stab *t, const void *key, uint32_t len, bool add, uint32_t val)
{
	uint64_t h = export_fnv(key, len, EXPORT_FNV_START);
	uint32_t i;

	if (t->cap) {
		for (i = (uint32_t)h & (t->cap - 1); t->s[i].len != UINT32_MAX; i = (i + 1) & (t->cap - 1))
			if (t->s[i].h == h && t->s[i].len == len &&
			    !memcmp(t->arena + t->s[i].off, key, len))
				return t->s[i].val;
	}
	if (!add)
		return UINT32_MAX;
	if ((uint64_t)(t->n + 1) * 2 > t->cap) {
		uint32_t cap = t->cap ? t->cap * 2 : 256;
		struct sslot *s = malloc(cap * sizeof(*s));

		if (!s)
			return UINT32_MAX - 1;
		for (uint32_t k = 0; k < cap; k++)
			s[k].len = UINT32_MAX;
		for (uint32_t k = 0; k < t->cap; k++)
			if (t->s[k].len != UINT32_MAX) {
				uint32_t j = (uint32_t)t->s[k].h & (cap - 1);

				while (s[j].len != UINT32_MAX)
					j = (j + 1) & (cap - 1);
				s[j] = t->s[k];
			}
		free(t->s);
		t->s = s;
		t->cap = cap;
	}
	if (t->alen + len > t->acap) {
		size_t cap = t->acap ? t->acap * 2 : 4096;
		char *a;

		while (cap < t->alen + len)
			cap *= 2;
		a = realloc(t->arena, cap);
		if (!a)
			return UINT32_MAX - 1;
		t->arena = a;
		t->acap = cap;
	}
	memcpy(t->arena + t->alen, key, len);
	for (i = (uint32_t)h & (t->cap - 1); t->s[i].len != UINT32_MAX; i = (i + 1) & (t->cap - 1))
		;
	t->s[i] = (struct sslot){ h, (uint32_t)t->alen, len, val };
	t->alen += len;
	t->n++;
	return val;
}

static void stab_free(struct stab *t)
{
	free(t->s);
	free(t->arena);
}

/* A growable bitmap. */
struct bits {
	uint64_t *w;
	uint32_t nw;
};

static inline bool bit_get(const struct bits *b, uint32_t i)
{
	return i / 64 < b->nw && (b->w[i / 64] >> (i % 64) & 1);
}

static int bit_set(struct bits *b, uint32_t i)
{
	if (i / 64 >= b->nw) {
		uint32_t nw = b->nw ? b->nw : 4;
		uint64_t *w;

		while (nw <= i / 64)
			nw *= 2;
		w = realloc(b->w, nw * sizeof(*w));
		if (!w)
			return -ENOMEM;
		memset(w + b->nw, 0, (nw - b->nw) * sizeof(*w));
		b->w = w;
		b->nw = nw;
	}
	b->w[i / 64] |= 1ull << (i % 64);
	return 0;
}

static void bits_clear(struct bits *b)
{
	if (b->w)
		memset(b->w, 0, b->nw * sizeof(*b->w));
}

/* ------------------------------------------------------------------------
 * Writer state.
 */
enum { K_CAT, K_NAME, K_ANN, K_N }; /* the interning indexes we use */

struct pclass {
	uint32_t cat, name;      /* iids */
	uint16_t nfields;
	uint32_t *ann;           /* [nfields]: iids of the field names */
	uint32_t *stop_ann;      /* [nfields]: of "stop." + the names */
	uint32_t raw_len;
};

struct pproc {
	uint32_t pid;
	uint64_t start;
	char comm[17];
	char *exe;
	uint64_t uuid;
	bool live;               /* described in the current file */
};

struct pseq {
	uint32_t pid, tid;
	uint64_t start, ring;
	uint32_t id;             /* trusted_packet_sequence_id */
	int32_t proc;            /* index, -1: no writer known */
	bool thread;             /* its stream is known: a thread track */
	uint64_t track;          /* its default track */
	bool live;               /* incremental state cleared in this file */
	bool counter_live;
	uint32_t depth;          /* open slices on its thread track */
	uint64_t first_ts;       /* its first packet in this file */
	uint64_t lost;           /* the export's running count */
	struct bits cls;         /* class ids (2 per class) interned here */
	struct bits iid[K_N];
};

struct cache_slot {
	const void *desc;
	char *provider;          /* a copy: the decoder's goes with its segment */
	uint8_t *raw;
	uint32_t raw_len;
	uint32_t cls;
};

/* An activity whose starts and stops in this file do not balance yet:
 * (process, id) -> starts - stops. Its track is described once while it
 * stays here. */
enum { A_FREE, A_USED, A_DELETED, A_NEW };
struct pact {
	uint32_t proc;
	uint8_t id[16];          /* proc and id: the key, 20 bytes */
	int32_t balance;
	uint8_t state;
};

struct export_writer {
	struct export_info info;
	char *path;              /* as given */
	char *cur;               /* the current file's name */
	unsigned fileno;         /* of the current file, from 1 (--max-size) */
	int fd;
	uint8_t *buf;
	size_t len, cap;
	uint64_t file_bytes;     /* written to the current file */
	uint64_t file_events;
	uint64_t bytes;          /* all files */
	uint64_t last_ts;
	int err;

	struct stab str[K_N];    /* interned strings -> iid */
	uint32_t next_iid[K_N];
	struct sref { uint32_t off, len; } *byid[K_N]; /* iid -> its string */
	uint32_t capid[K_N];
	struct stab sig;         /* class signature -> class index */
	struct pclass *cls;
	uint32_t ncls, capcls;
	struct cache_slot cache[256];
	char *scratch;
	size_t scratch_cap;

	struct stab seq_ix, proc_ix;
	struct pseq **seq;
	uint32_t nseq, capseq;
	struct pproc *proc;
	uint32_t nproc, capproc;
	struct pseq *last;
	bool global_live;

	struct pact *act;
	uint32_t actcap, actused;

	uint32_t ann_activity, ann_lost, ann_cause, ann_provider, ann_bytes;
	uint32_t ann_stop_provider, ann_stop_event;
	uint32_t cat_ringlog;
};

static int flush(struct export_writer *w)
{
	int err = w->len ? export_write_all(w->fd, w->buf, w->len) : 0;

	if (err)
		return err;
	w->file_bytes += w->len;
	w->bytes += w->len;
	w->len = 0;
	return 0;
}

/* Room for n more bytes in the buffer. */
static int reserve(struct export_writer *w, size_t n)
{
	if (w->len + n <= w->cap)
		return 0;
	if (w->len >= BUF_FLUSH) {
		int err = flush(w);

		if (err)
			return err;
		if (n <= w->cap)
			return 0;
	}
	size_t cap = w->cap ? w->cap : 2 * BUF_FLUSH;
	uint8_t *b;

	while (cap < w->len + n)
		cap *= 2;
	b = realloc(w->buf, cap);
	if (!b)
		return -ENOMEM;
	w->buf = b;
	w->cap = cap;
	return 0;
}

/* The iid of a string of kind (K_*), or 0 when out of memory (w->err). */
static uint32_t intern(struct export_writer *w, int kind, const char *s, size_t n)
{
	uint32_t v = stab_get(&w->str[kind], s, (uint32_t)n, true, w->next_iid[kind]);

	if (v == UINT32_MAX - 1 || w->next_iid[kind] >= UINT32_MAX - 2)
		goto nomem;
	if (v == w->next_iid[kind]) {
		if (v >= w->capid[kind]) {
			uint32_t cap = w->capid[kind] ? w->capid[kind] * 2 : 256;
			struct sref *b = realloc(w->byid[kind], cap * sizeof(*b));

			if (!b)
				goto nomem;
			w->byid[kind] = b;
			w->capid[kind] = cap;
		}
		w->byid[kind][v] = (struct sref){ (uint32_t)(w->str[kind].alen - n), (uint32_t)n };
		w->next_iid[kind]++;
	}
	return v;
nomem:
	w->err = -ENOMEM;
	return 0;
}

/* ------------------------------------------------------------------------
 * Files.
 */
static char *file_name(const char *path, unsigned n)
{
	const char *base = strrchr(path, '/'), *dot;
	char *s;

	base = base ? base + 1 : path;
	dot = strrchr(base, '.');
	if (!dot || dot == base)
		dot = base + strlen(base);
	if (asprintf(&s, "%.*s-%03u%s", (int)(dot - path), path, n, dot) < 0)
		return NULL;
	return s;
}

static int file_open(struct export_writer *w)
{
	free(w->cur);
	w->cur = w->info.max_size ? file_name(w->path, ++w->fileno) : strdup(w->path);
	if (!w->cur)
		return -ENOMEM;
	if (!strcmp(w->cur, "-")) {
		w->fd = STDOUT_FILENO;
		return 0;
	}
	w->fd = open(w->cur, O_WRONLY | O_CREAT | O_TRUNC | O_BINARY, 0644);
	return w->fd < 0 ? -errno : 0;
}

/* The first packet of every file: the clocks. */
static int file_preamble(struct export_writer *w)
{
	uint8_t *p, *pk, *cs, *c;
	int err = reserve(w, 128);

	if (err)
		return err;
	p = w->buf + w->len;
	pk = pb_open(&p, F_TRACE_PACKET);
	p = pb_uint(p, F_PKT_SEQ_ID, SEQ_GLOBAL);
	cs = pb_open(&p, F_PKT_CLOCK_SNAPSHOT);
	if (w->info.real_ref) {
		c = pb_open(&p, F_CS_CLOCKS);
		p = pb_uint(p, F_CLK_ID, CLOCK_MONOTONIC_ID);
		p = pb_uint(p, F_CLK_TIMESTAMP, w->info.mono_ref);
		p = pb_close(c, p);
	}
	c = pb_open(&p, F_CS_CLOCKS);
	p = pb_uint(p, F_CLK_ID, CLOCK_REALTIME_ID);
	p = pb_uint(p, F_CLK_TIMESTAMP, w->info.real_ref);
	p = pb_close(c, p);
	p = pb_uint(p, F_CS_PRIMARY, CLOCK_REALTIME_ID);
	p = pb_close(cs, p);
	p = pb_close(pk, p);
	w->len = (size_t)(p - w->buf);
	return 0;
}

/* Close the current file and start the next: every sequence, track and
 * interning starts again, so that each file stands alone. */
static int file_rotate(struct export_writer *w)
{
	int err = flush(w);

	if (err)
		return err;
	if (close(w->fd) < 0)
		return -errno;
	w->fd = -1;
	for (uint32_t i = 0; i < w->nseq; i++) {
		struct pseq *s = w->seq[i];

		s->live = s->counter_live = false;
		s->depth = 0;
		bits_clear(&s->cls);
		for (int k = 0; k < K_N; k++)
			bits_clear(&s->iid[k]);
	}
	for (uint32_t i = 0; i < w->nproc; i++)
		w->proc[i].live = false;
	if (w->act)
		memset(w->act, 0, w->actcap * sizeof(*w->act));
	w->actused = 0;
	w->global_live = false;
	w->file_bytes = w->file_events = 0;
	err = file_open(w);
	return err ? err : file_preamble(w);
}

/* Before a packet of at most need bytes: a new file when it would pass
 * --max-size (never before the file's first event). */
static int room_for(struct export_writer *w, size_t need)
{
	int err;

	if (w->info.max_size && w->file_events &&
	    w->file_bytes + w->len + need > w->info.max_size && (err = file_rotate(w)))
		return err;
	return reserve(w, need);
}

/* ------------------------------------------------------------------------
 * Sequences, processes, tracks.
 */
static struct pseq *seq_get(struct export_writer *w, const struct ringlog_dec_writer *wr,
			    const struct ringlog_dec_stream *ds)
{
	struct {
		uint32_t pid, tid;
		uint64_t start, ring;
	} key = { wr ? wr->w.pid : 0, ds ? ds->s.tid : 0, wr ? wr->w.start_real_ns : 0,
		  ds ? ds->s.ring_id : 0 };
	struct pseq *s = w->last;
	uint32_t i;

	if (s && s->pid == key.pid && s->tid == key.tid && s->start == key.start &&
	    s->ring == key.ring)
		return s;
	i = stab_get(&w->seq_ix, &key, sizeof(key), true, w->nseq);
	if (i == UINT32_MAX - 1)
		return NULL;
	if (i < w->nseq)
		return w->last = w->seq[i];
	if (w->nseq == w->capseq) {
		struct pseq **n = realloc(w->seq, (w->capseq = w->capseq ? w->capseq * 2 : 64) *
						      sizeof(*n));
		if (!n)
			return NULL;
		w->seq = n;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->pid = key.pid;
	s->tid = key.tid;
	s->start = key.start;
	s->ring = key.ring;
	s->id = SEQ_GLOBAL + 1 + w->nseq;
	s->proc = -1;
	s->thread = wr && ds;
	s->track = GLOBAL_TRACK;
	if (wr) {
		uint64_t pk[2] = { wr->w.pid, wr->w.start_real_ns }; /* no padding to hash */
		uint32_t pi = stab_get(&w->proc_ix, &pk, sizeof(pk), true, w->nproc);

		if (pi == UINT32_MAX - 1) {
			free(s);
			return NULL;
		}
		if (pi == w->nproc) {
			struct pproc *np;

			if (w->nproc == w->capproc) {
				np = realloc(w->proc, (w->capproc = w->capproc ? w->capproc * 2 : 32) *
							      sizeof(*np));
				if (!np) {
					free(s);
					return NULL;
				}
				w->proc = np;
			}
			np = &w->proc[w->nproc++];
			memset(np, 0, sizeof(*np));
			np->pid = wr->w.pid;
			np->start = wr->w.start_real_ns;
			memcpy(np->comm, wr->comm, sizeof(np->comm));
			np->comm[16] = 0;
			np->exe = wr->exe ? strdup(wr->exe) : NULL;
			np->uuid = (uint64_t)w->nproc << 32;
		}
		s->proc = (int32_t)pi;
		s->track = s->thread ? (1ull << 62) | s->id : w->proc[pi].uuid;
	}
	w->seq[w->nseq++] = s;
	return w->last = s;
}

static uint8_t *pkt_head(uint8_t **p, uint64_t ts, uint32_t seq, unsigned flags)
{
	uint8_t *at = pb_open(p, F_TRACE_PACKET);

	if (ts)
		*p = pb_uint(*p, F_PKT_TIMESTAMP, ts);
	*p = pb_uint(*p, F_PKT_SEQ_ID, seq);
	if (flags)
		*p = pb_uint(*p, F_PKT_SEQ_FLAGS, flags);
	return at;
}

static uint8_t *put_process(uint8_t *p, const struct pproc *pr)
{
	uint8_t *td = pb_open(&p, F_PKT_TRACK_DESCRIPTOR), *pd;

	p = pb_uint(p, F_TD_UUID, pr->uuid);
	pd = pb_open(&p, F_TD_PROCESS);
	p = pb_uint(p, F_PD_PID, pr->pid);
	if (pr->exe && *pr->exe)
		p = pb_str(p, F_PD_CMDLINE, pr->exe);
	p = pb_str(p, F_PD_NAME, pr->comm);
	if (pr->start && pr->start <= INT64_MAX)
		p = pb_uint(p, F_PD_START, pr->start);
	p = pb_close(pd, p);
	return pb_close(td, p);
}

/* Room a sequence's first packets take (seq_begin), counted even when it
 * is live: room_for() may start a new file, where it is not. */
static size_t seq_need(const struct export_writer *w, const struct pseq *s)
{
	const struct pproc *pr = s->proc >= 0 ? &w->proc[s->proc] : NULL;

	return 320 + (pr && pr->exe ? strlen(pr->exe) : 0);
}

/* A sequence's first packets in this file: cleared state, its defaults,
 * and the tracks it stands for (the caller made room: seq_need). */
static void seq_begin(struct export_writer *w, struct pseq *s, uint64_t ts)
{
	struct pproc *pr = s->proc >= 0 ? &w->proc[s->proc] : NULL;
	uint8_t *p = w->buf + w->len, *pk, *d, *te, *td, *th;
	bool full = false; /* the first packet describes a track already */

	pk = pkt_head(&p, ts, s->id, SEQ_INCREMENTAL_STATE_CLEARED);
	p = pb_uint(p, F_PKT_CLOCK_ID, CLOCK_REALTIME_ID);
	d = pb_open(&p, F_PKT_DEFAULTS);
	p = pb_uint(p, F_DEF_CLOCK_ID, CLOCK_REALTIME_ID);
	te = pb_open(&p, F_DEF_TRACK_EVENT);
	p = pb_uint(p, F_TEDEF_TRACK_UUID, s->track);
	p = pb_close(te, p);
	p = pb_close(d, p);
	if (pr && !pr->live) {
		p = put_process(p, pr);
		pr->live = full = true;
	} else if (!pr && !w->global_live) {
		td = pb_open(&p, F_PKT_TRACK_DESCRIPTOR);
		p = pb_uint(p, F_TD_UUID, GLOBAL_TRACK);
		p = pb_str(p, F_TD_NAME, "ringlog: losses of unknown writers");
		p = pb_close(td, p);
		w->global_live = full = true;
	}
	if (s->thread) {
		if (full) { /* one descriptor a packet (a oneof): the next */
			p = pb_close(pk, p);
			pk = pkt_head(&p, ts, s->id, SEQ_NEEDS_INCREMENTAL_STATE);
		}
		td = pb_open(&p, F_PKT_TRACK_DESCRIPTOR);
		p = pb_uint(p, F_TD_UUID, s->track);
		p = pb_uint(p, F_TD_PARENT, pr->uuid);
		th = pb_open(&p, F_TD_THREAD);
		p = pb_uint(p, F_THD_PID, s->pid);
		p = pb_uint(p, F_THD_TID, s->tid);
		if (s->tid == s->pid) /* other threads' names are not stored */
			p = pb_str(p, F_THD_NAME, pr->comm);
		p = pb_close(th, p);
		p = pb_close(td, p);
	}
	p = pb_close(pk, p);
	w->len = (size_t)(p - w->buf);
	s->live = true;
	s->first_ts = ts;
	bits_clear(&s->cls);
	for (int k = 0; k < K_N; k++)
		bits_clear(&s->iid[k]);
}

/* ------------------------------------------------------------------------
 * Event classes: the iids of an event's category, name and field names.
 */
static int scratch_fit(struct export_writer *w, size_t n)
{
	if (n <= w->scratch_cap)
		return 0;
	char *s = realloc(w->scratch, n * 2);

	if (!s)
		return -ENOMEM;
	w->scratch = s;
	w->scratch_cap = n * 2;
	return 0;
}

static long class_new(struct export_writer *w, const char *provider,
		      const struct ringlog_event_desc *d)
{
	struct pclass *c;
	size_t n = strlen(provider) + strlen(d->name) + 2, at;
	uint32_t v;

	for (unsigned i = 0; i < d->nfields; i++)
		n += strlen(d->fields[i].name) + 1;
	if (scratch_fit(w, n + 8))
		return -ENOMEM;
	at = (size_t)sprintf(w->scratch, "%s%c%s", provider, 0, d->name) + 1;
	for (unsigned i = 0; i < d->nfields; i++)
		at += (size_t)sprintf(w->scratch + at, "%s", d->fields[i].name) + 1;
	v = stab_get(&w->sig, w->scratch, (uint32_t)at, true, w->ncls);
	if (v == UINT32_MAX - 1)
		return -ENOMEM;
	if (v < w->ncls)
		return v;
	if (w->ncls == w->capcls) {
		struct pclass *nc = realloc(w->cls, (w->capcls = w->capcls ? w->capcls * 2 : 64) *
						    sizeof(*nc));
		if (!nc)
			return -ENOMEM;
		w->cls = nc;
	}
	c = &w->cls[w->ncls];
	memset(c, 0, sizeof(*c));
	c->nfields = d->nfields;
	c->ann = calloc(d->nfields + 1u, sizeof(*c->ann));
	c->stop_ann = calloc(d->nfields + 1u, sizeof(*c->stop_ann));
	if (!c->ann || !c->stop_ann) {
		free(c->ann);
		free(c->stop_ann);
		return -ENOMEM;
	}
	w->ncls++;
	c->cat = intern(w, K_CAT, provider, strlen(provider));
	c->name = intern(w, K_NAME, d->name, strlen(d->name));
	for (unsigned i = 0; i < d->nfields; i++) {
		const char *f = d->fields[i].name;
		size_t l = strlen(f);

		c->ann[i] = intern(w, K_ANN, f, l);
		if (scratch_fit(w, l + 6))
			return -ENOMEM;
		memcpy(w->scratch, "stop.", 5);
		memcpy(w->scratch + 5, f, l);
		c->stop_ann[i] = intern(w, K_ANN, w->scratch, l + 5);
	}
	return w->err ? w->err : (long)w->ncls - 1;
}

static long class_of(struct export_writer *w, const struct ringlog_dec_event *e)
{
	const struct ringlog_event_desc *d = e->desc;
	const char *provider = e->provider ? e->provider : "?";
	struct cache_slot *cs = &w->cache[((uintptr_t)d >> 4) & 255];
	long c;

	/* a descriptor's memory may be reused by the next segment's decoder
	 * for another event: the slot keeps the bytes it was made from */
	if (cs->desc == d && d->raw && cs->raw_len == d->raw_len &&
	    !strcmp(cs->provider, provider) &&
	    !memcmp(cs->raw, d->raw, d->raw_len))
		return cs->cls;
	c = class_new(w, provider, d);
	if (c >= 0 && d->raw) {
		uint8_t *r = realloc(cs->raw, d->raw_len ? d->raw_len : 1);
		char *pv = strdup(provider);

		if (r && pv) {
			memcpy(r, d->raw, d->raw_len);
			free(cs->provider);
			*cs = (struct cache_slot){ d, pv, r, d->raw_len, (uint32_t)c };
		} else {
			free(pv);
			cs->raw = r;
			cs->desc = NULL; /* unusable */
		}
	}
	return c;
}

/* The interned entries of kind k a packet needs and its sequence lacks:
 * opens InternedData when *id is NULL. */
static uint8_t *put_interned(struct export_writer *w, struct pseq *s, uint8_t *p, uint8_t **id,
			     int kind, uint32_t iid)
{
	static const uint32_t field[K_N] = { F_ID_CATEGORIES, F_ID_NAMES, F_ID_ANNOTATION_NAMES };
	const struct sref *r;
	uint8_t *e;

	if (!iid || bit_get(&s->iid[kind], iid))
		return p;
	if (bit_set(&s->iid[kind], iid)) {
		w->err = -ENOMEM;
		return p;
	}
	r = &w->byid[kind][iid];
	if (!*id)
		*id = pb_open(&p, F_PKT_INTERNED);
	e = pb_open(&p, field[kind]);
	p = pb_uint(p, F_ENTRY_IID, iid);
	p = pb_bytes(p, F_ENTRY_NAME, w->str[kind].arena + r->off, r->len);
	return pb_close(e, p);
}

/* ------------------------------------------------------------------------
 * Events.
 */
static uint8_t *put_value(uint8_t *p, const struct ringlog_value *v, unsigned type,
			  unsigned format)
{
	static const char hex[] = "0123456789abcdef";

	switch (type) {
	case RINGLOG_TYPE_F64:
		p = pb_tag(p, F_DA_DOUBLE, WT_I64);
		memcpy(p, &v->d, 8);
		return p + 8;
	case RINGLOG_TYPE_BOOL:
		return pb_uint(p, F_DA_BOOL, v->b);
	case RINGLOG_TYPE_STR:
		return pb_bytes(p, F_DA_STRING, v->data, v->len);
	case RINGLOG_TYPE_BLOB:
		p = pb_varint(pb_tag(p, F_DA_STRING, WT_LEN), 2u * v->len);
		for (uint32_t i = 0; i < v->len; i++) {
			*p++ = (uint8_t)hex[v->data[i] >> 4];
			*p++ = (uint8_t)hex[v->data[i] & 15];
		}
		return p;
	default:
		break;
	}
	if (format == RINGLOG_FMT_HEX)
		return pb_uint(p, F_DA_POINTER, v->u);
	if (type >= RINGLOG_TYPE_I8 && type <= RINGLOG_TYPE_I64)
		return pb_uint(p, F_DA_INT, (uint64_t)v->i); /* int64: two's complement */
	return pb_uint(p, F_DA_UINT, v->u);
}

/* The slot of an activity with unbalanced ends in this file; a new one
 * (state A_NEW) when there is none; NULL when out of memory. */
static struct pact *act_find(struct export_writer *w, uint32_t proc, const uint8_t *id)
{
	struct pact key = { .proc = proc }, *tomb = NULL;

	if ((w->actused + 1) * 2 > w->actcap) { /* rebuild, without the deleted */
		uint32_t cap = w->actcap ? w->actcap : 64;
		struct pact *old = w->act, *n;

		while ((w->actused + 1) * 4 > cap)
			cap *= 2;
		n = calloc(cap, sizeof(*n));
		if (!n)
			return NULL;
		w->act = n;
		w->actused = 0;
		for (uint32_t i = 0; old && i < w->actcap; i++)
			if (old[i].state == A_USED) {
				uint32_t j = (uint32_t)export_fnv(&old[i].proc, 20, EXPORT_FNV_START) & (cap - 1);

				while (n[j].state)
					j = (j + 1) & (cap - 1);
				n[j] = old[i];
				w->actused++;
			}
		w->actcap = cap;
		free(old);
	}
	memcpy(key.id, id, 16);
	for (uint32_t i = (uint32_t)export_fnv(&key.proc, 20, EXPORT_FNV_START) & (w->actcap - 1);;
	     i = (i + 1) & (w->actcap - 1)) {
		struct pact *a = &w->act[i];

		if (a->state == A_FREE) {
			if (!tomb)
				w->actused++;
			a = tomb ? tomb : a;
			*a = key;
			a->state = A_NEW;
			return a;
		}
		if (a->state == A_DELETED) {
			if (!tomb)
				tomb = a;
		} else if (a->proc == proc && !memcmp(a->id, id, 16)) {
			return a;
		}
	}
}

static uint64_t act_uuid(const struct pact *a)
{
	return export_fnv(&a->proc, 20, EXPORT_FNV_START) | (1ull << 63);
}

static int pf_event(struct export_writer *w, const struct ringlog_dec_event *e)
{
	const struct ringlog_event_desc *d = e->desc;
	struct pseq *s;
	struct pclass *c;
	struct pact *act = NULL;
	size_t need = 256 + 64;
	long ci;
	unsigned type = TYPE_INSTANT, bit;
	uint64_t track = 0; /* 0: the sequence's */
	bool stop;
	uint8_t *p, *pk, *id = NULL, *te, *a;
	int err;

	if (w->err)
		return w->err;
	s = seq_get(w, e->writer, e->stream);
	ci = class_of(w, e);
	if (!s || ci < 0)
		return w->err = -ENOMEM;
	c = &w->cls[ci];
	for (unsigned i = 0; i < d->nfields; i++)
		need += 24 + 2u * e->values[i].len;
	/* interned strings this sequence may lack (names up to 255 bytes),
	 * an activity's track, the sequence's first packets */
	need += (size_t)(3 + d->nfields) * (256 + 16) + seq_need(w, s);
	if ((err = room_for(w, need)))
		return w->err = err;
	if (!s->live)
		seq_begin(w, s, e->real_ns);
	/* The opcode: a slice's ends, or an instant. A thread's slices nest
	 * in its ring's order, which is time order. An activity's ends may
	 * come from two threads, whose rings the store interleaves in any
	 * order: its stop may come first. trace_processor sorts by time
	 * before it pairs them, so both ends go out as they come. */
	if (d->opcode == RINGLOG_OP_START || d->opcode == RINGLOG_OP_STOP) {
		bool start = d->opcode == RINGLOG_OP_START;

		if (e->activity && s->proc >= 0) {
			act = act_find(w, (uint32_t)s->proc, e->activity);
			if (!act)
				return w->err = -ENOMEM;
			type = start ? TYPE_SLICE_BEGIN : TYPE_SLICE_END;
			track = act_uuid(act);
		} else if (start) {
			type = TYPE_SLICE_BEGIN;
			s->depth++;
		} else if (s->depth) {
			type = TYPE_SLICE_END;
			s->depth--;
		}
	}
	stop = type == TYPE_SLICE_END;
	p = w->buf + w->len;
	if (act && act->state == A_NEW) {
		/* the activity's own track, under its process */
		uint8_t *td;

		pk = pkt_head(&p, e->real_ns, s->id, SEQ_NEEDS_INCREMENTAL_STATE);
		td = pb_open(&p, F_PKT_TRACK_DESCRIPTOR);
		p = pb_uint(p, F_TD_UUID, track);
		p = pb_uint(p, F_TD_PARENT, w->proc[s->proc].uuid);
		p = pb_str(p, F_TD_NAME, d->name);
		p = pb_close(td, p);
		p = pb_close(pk, p);
		act->state = A_USED;
	}
	if (act && !(act->balance += stop ? -1 : 1))
		act->state = A_DELETED; /* balanced: forget it */
	pk = pkt_head(&p, e->real_ns, s->id, SEQ_NEEDS_INCREMENTAL_STATE);
	bit = 2 * (uint32_t)ci + stop;
	if (!bit_get(&s->cls, bit)) {
		if (stop) {
			p = put_interned(w, s, p, &id, K_ANN, w->ann_stop_provider);
			p = put_interned(w, s, p, &id, K_ANN, w->ann_stop_event);
		} else {
			p = put_interned(w, s, p, &id, K_CAT, c->cat);
			p = put_interned(w, s, p, &id, K_NAME, c->name);
		}
		for (unsigned i = 0; i < c->nfields; i++)
			p = put_interned(w, s, p, &id, K_ANN, stop ? c->stop_ann[i] : c->ann[i]);
		if (e->activity && !stop)
			p = put_interned(w, s, p, &id, K_ANN, w->ann_activity);
		if (id)
			p = pb_close(id, p);
		/* the activity's name is not in every event of the class */
		if (!e->activity && bit_set(&s->cls, bit))
			w->err = -ENOMEM;
	}
	te = pb_open(&p, F_PKT_TRACK_EVENT);
	p = pb_uint(p, F_TE_TYPE, type);
	if (track)
		p = pb_uint(p, F_TE_TRACK_UUID, track);
	if (stop) {
		/* An end with a name or category closes only a slice of the same
		 * (trace_processor matches both): a stop named otherwise than its
		 * start would close nothing. Without them it closes the innermost
		 * slice of its track; its own name and provider are arguments. */
		a = pb_open(&p, F_TE_ANNOTATIONS);
		p = pb_uint(p, F_DA_NAME_IID, w->ann_stop_provider);
		p = pb_str(p, F_DA_STRING, e->provider ? e->provider : "?");
		p = pb_close(a, p);
		a = pb_open(&p, F_TE_ANNOTATIONS);
		p = pb_uint(p, F_DA_NAME_IID, w->ann_stop_event);
		p = pb_str(p, F_DA_STRING, d->name);
		p = pb_close(a, p);
	} else {
		p = pb_uint(p, F_TE_CATEGORY_IIDS, c->cat);
		p = pb_uint(p, F_TE_NAME_IID, c->name);
	}
	for (unsigned i = 0; i < d->nfields; i++) {
		a = pb_open(&p, F_TE_ANNOTATIONS);
		p = pb_uint(p, F_DA_NAME_IID, stop ? c->stop_ann[i] : c->ann[i]);
		p = put_value(p, &e->values[i], d->fields[i].type, d->fields[i].format);
		p = pb_close(a, p);
	}
	if (e->activity && !stop) {
		static const char hex[] = "0123456789abcdef";

		a = pb_open(&p, F_TE_ANNOTATIONS);
		p = pb_uint(p, F_DA_NAME_IID, w->ann_activity);
		p = pb_varint(pb_tag(p, F_DA_STRING, WT_LEN), 32);
		for (int i = 0; i < 16; i++) {
			*p++ = (uint8_t)hex[e->activity[i] >> 4];
			*p++ = (uint8_t)hex[e->activity[i] & 15];
		}
		p = pb_close(a, p);
	}
	p = pb_close(te, p);
	p = pb_close(pk, p);
	w->len = (size_t)(p - w->buf);
	w->file_events++;
	if (e->real_ns > w->last_ts)
		w->last_ts = e->real_ns;
	return w->err;
}

static uint8_t *put_counter(uint8_t *p, const struct pseq *s, uint64_t ts, uint64_t value)
{
	uint8_t *pk = pkt_head(&p, ts, s->id, SEQ_NEEDS_INCREMENTAL_STATE), *te;

	te = pb_open(&p, F_PKT_TRACK_EVENT);
	p = pb_uint(p, F_TE_TYPE, TYPE_COUNTER);
	p = pb_uint(p, F_TE_TRACK_UUID, s->track | (1ull << 61));
	p = pb_uint(p, F_TE_COUNTER_VALUE, value);
	p = pb_close(te, p);
	return pb_close(pk, p);
}

static int pf_loss(struct export_writer *w, const struct ringlog_dec_loss *l)
{
	struct pseq *s;
	const char *cause, *why = out_loss_why(l->reason, &cause);
	/* read says 0 when nothing tells when: the last event's time, or the
	 * store's calibration (a packet needs one) */
	uint64_t ts = l->real_ns ? l->real_ns : w->last_ts ? w->last_ts :
		      w->info.real_ref ? w->info.real_ref : 1;
	uint8_t *p, *pk, *id = NULL, *te, *a;
	char name[160];
	int n, err;

	if (w->err)
		return w->err;
	s = seq_get(w, l->writer, l->stream);
	if (!s)
		return w->err = -ENOMEM;
	if ((err = room_for(w, 2048 + seq_need(w, s))))
		return w->err = err;
	if (!s->live)
		seq_begin(w, s, ts);
	n = snprintf(name, sizeof(name), "%llu events lost: %s", (unsigned long long)l->records,
		     why);
	p = w->buf + w->len;
	pk = pkt_head(&p, ts, s->id, SEQ_NEEDS_INCREMENTAL_STATE);
	p = put_interned(w, s, p, &id, K_CAT, w->cat_ringlog);
	p = put_interned(w, s, p, &id, K_ANN, w->ann_lost);
	p = put_interned(w, s, p, &id, K_ANN, w->ann_cause);
	p = put_interned(w, s, p, &id, K_ANN, w->ann_bytes);
	if (l->provider)
		p = put_interned(w, s, p, &id, K_ANN, w->ann_provider);
	if (id)
		p = pb_close(id, p);
	te = pb_open(&p, F_PKT_TRACK_EVENT);
	p = pb_uint(p, F_TE_TYPE, TYPE_INSTANT);
	p = pb_uint(p, F_TE_CATEGORY_IIDS, w->cat_ringlog);
	/* not interned: the count makes nearly every name new */
	p = pb_bytes(p, F_TE_NAME, name, (size_t)n);
	a = pb_open(&p, F_TE_ANNOTATIONS);
	p = pb_uint(p, F_DA_NAME_IID, w->ann_lost);
	p = pb_uint(p, F_DA_UINT, l->records);
	p = pb_close(a, p);
	a = pb_open(&p, F_TE_ANNOTATIONS);
	p = pb_uint(p, F_DA_NAME_IID, w->ann_cause);
	p = pb_str(p, F_DA_STRING, cause);
	p = pb_close(a, p);
	a = pb_open(&p, F_TE_ANNOTATIONS);
	p = pb_uint(p, F_DA_NAME_IID, w->ann_bytes);
	p = pb_uint(p, F_DA_UINT, l->bytes);
	p = pb_close(a, p);
	if (l->provider) {
		a = pb_open(&p, F_TE_ANNOTATIONS);
		p = pb_uint(p, F_DA_NAME_IID, w->ann_provider);
		p = pb_bytes(p, F_DA_STRING, l->provider, strnlen(l->provider, 256));
		p = pb_close(a, p);
	}
	p = pb_close(te, p);
	p = pb_close(pk, p);
	/* the running count: its track under the writer's, from the first
	 * packet of the sequence in this file */
	if (!s->counter_live) {
		uint8_t *td, *cd;

		pk = pkt_head(&p, 0, s->id, SEQ_NEEDS_INCREMENTAL_STATE);
		td = pb_open(&p, F_PKT_TRACK_DESCRIPTOR);
		p = pb_uint(p, F_TD_UUID, s->track | (1ull << 61));
		p = pb_uint(p, F_TD_PARENT, s->track);
		p = pb_str(p, F_TD_NAME, "lost events");
		cd = pb_open(&p, F_TD_COUNTER);
		p = pb_uint(p, F_CD_UNIT, UNIT_COUNT);
		p = pb_close(cd, p);
		p = pb_close(td, p);
		p = pb_close(pk, p);
		p = put_counter(p, s, s->first_ts < ts ? s->first_ts : ts, s->lost);
		s->counter_live = true;
	}
	ringlog_count_add(&s->lost, l->records);
	p = put_counter(p, s, ts, s->lost);
	w->len = (size_t)(p - w->buf);
	return w->err;
}

/* ------------------------------------------------------------------------
 * The writer.
 */
static void pf_free(struct export_writer *w)
{
	for (int k = 0; k < K_N; k++) {
		stab_free(&w->str[k]);
		free(w->byid[k]);
	}
	stab_free(&w->sig);
	stab_free(&w->seq_ix);
	stab_free(&w->proc_ix);
	for (uint32_t i = 0; i < w->ncls; i++) {
		free(w->cls[i].ann);
		free(w->cls[i].stop_ann);
	}
	for (uint32_t i = 0; i < w->nseq; i++) {
		free(w->seq[i]->cls.w);
		for (int k = 0; k < K_N; k++)
			free(w->seq[i]->iid[k].w);
		free(w->seq[i]);
	}
	for (uint32_t i = 0; i < w->nproc; i++)
		free(w->proc[i].exe);
	for (unsigned i = 0; i < 256; i++) {
		free(w->cache[i].raw);
		free(w->cache[i].provider);
	}
	free(w->cls), free(w->seq), free(w->proc), free(w->act), free(w->scratch);
	free(w->buf), free(w->path), free(w->cur);
	free(w);
}

static struct export_writer *pf_begin(const char *path, const struct export_info *info)
{
	struct export_writer *w = calloc(1, sizeof(*w));
	int err;

	if (!w)
		return NULL;
	w->info = *info;
	w->fd = -1;
	w->path = strdup(path);
	for (int k = 0; k < K_N; k++)
		w->next_iid[k] = 1; /* iid 0 is "not set" */
	if (!w->path) {
		pf_free(w);
		errno = ENOMEM;
		return NULL;
	}
	if (info->max_size && info->max_size < EXPORT_MIN_MAX_SIZE) {
		fprintf(stderr, "ringlog export: --max-size %llu: too small for a file that stands "
			"alone; give at least 64K\n", (unsigned long long)info->max_size);
		pf_free(w);
		errno = EINVAL;
		return NULL;
	}
	if (info->max_size && !strcmp(path, "-")) {
		fprintf(stderr, "ringlog export: --max-size writes several files: name one "
			"with --output, not \"-\"\n");
		pf_free(w);
		errno = EINVAL;
		return NULL;
	}
	w->ann_activity = intern(w, K_ANN, "activity", 8);
	w->ann_stop_provider = intern(w, K_ANN, "stop.provider", 13);
	w->ann_stop_event = intern(w, K_ANN, "stop.event", 10);
	w->ann_lost = intern(w, K_ANN, "lost", 4);
	w->ann_cause = intern(w, K_ANN, "cause", 5);
	w->ann_bytes = intern(w, K_ANN, "bytes", 5);
	w->ann_provider = intern(w, K_ANN, "provider", 8);
	w->cat_ringlog = intern(w, K_CAT, "ringlog", 7);
	err = file_open(w);
	if (err) {
		fprintf(stderr, "ringlog export: cannot create %s: %s; name a writable file\n",
			w->cur ? w->cur : path, strerror(-err));
		pf_free(w);
		errno = -err;
		return NULL;
	}
	if (file_preamble(w) < 0) {
		close(w->fd);
		pf_free(w);
		errno = ENOMEM;
		return NULL;
	}
	return w;
}

static int pf_end(struct export_writer *w, uint64_t *bytes)
{
	int err = w->err;

	if (!err)
		err = flush(w);
	if (w->fd >= 0 && w->fd != STDOUT_FILENO && close(w->fd) < 0 && !err)
		err = -errno;
	if (!err && w->info.max_size) {
		char *first = file_name(w->path, 1);

		fprintf(stderr, "ringlog export: %u file%s: %s%s%s\n", w->fileno,
			w->fileno > 1 ? "s" : "", first ? first : "", w->fileno > 1 ? " to " : "",
			w->fileno > 1 ? w->cur : "");
		free(first);
	}
	if (bytes)
		*bytes = w->bytes;
	pf_free(w);
	return err;
}

const struct export_ops export_perfetto_ops = {
	.name = "perfetto",
	.begin = pf_begin,
	.event = pf_event,
	.loss = pf_loss,
	.end = pf_end,
};
