/* client/cli/read.c - `ringlog read`: decode segments offline, merged in time
 * order, robust to damage (reported on stderr, exit code 4). */
#define _GNU_SOURCE
#include "cli.h"
#include "count.h"

#include <dirent.h>
#ifdef _WIN32
#include <io.h>
#endif
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "output.h"
#include "query.h"

/* Events are rendered to text as they are decoded (metadata lives in the
 * per-file decoder), then sorted by time: memory grows with the output,
 * which is what `read` prints anyway; with -n only the newest N are kept. */
struct line {
	uint64_t ns;
	uint64_t seq;
	char *text;
};

struct rd {
	const struct query *q;
	struct line *lines;
	size_t n, cap;
	uint64_t seq;
	size_t limit;          /* -n: keep the newest this many; 0: all */
	uint64_t threshold;    /* with limit lines held: the oldest one's time */
	bool damaged;
	bool quiet;            /* a second pass: damage was reported by the first */
	const char *path;
	struct ringlog_dedup dedup; /* across files: no duplicate after a crash */
	uint64_t first_ns, last_ns; /* of the store, from segment and chunk headers */
	const char *host;      /* of what is decoded now (--nats), or NULL */
	const struct seg_end *ends; /* read_history(): the files and where
	                             * they end, or NULL: all of each */
	size_t nends;
	hist_keep_fn keep;     /* read_history*(): what is shown */
	void *keep_ctx;
	struct ringlog_dedup *shared; /* instead of dedup: the caller's */
};

static void add_line(struct rd *r, uint64_t ns, char *text)
{
	if (!text)
		return;
	if (r->n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 1024;
		struct line *l = realloc(r->lines, cap * sizeof(*l));

		if (!l) {
			free(text);
			return;
		}
		r->lines = l;
		r->cap = cap;
	}
	r->lines[r->n++] = (struct line){ ns, r->seq++, text };
}

static void span(struct rd *r, uint64_t first, uint64_t last)
{
	if (first && (!r->first_ns || first < r->first_ns))
		r->first_ns = first;
	if (last > r->last_ns)
		r->last_ns = last;
}

static void trim(struct rd *r);

static int on_event(void *ctx, const struct ringlog_dec_event *e)
{
	struct rd *r = ctx;

	if (r->limit && r->n >= 2 * r->limit + 1024)
		trim(r); /* memory bounded by the N asked for */

	if (r->limit && r->n >= r->limit && e->real_ns < r->threshold)
		return 0; /* older than the newest N already held */
	if (!sel_match(&r->q->sel, e))
		return 0;
	if (r->keep && !r->keep(r->keep_ctx, e->writer, e->stream, e->ts, e->real_ns))
		return 0;
	if (r->host) {
		struct output o = r->q->out;

		o.host = r->host;
		add_line(r, e->real_ns, out_event(&o, e));
		return 0;
	}
	add_line(r, e->real_ns, out_event(&r->q->out, e));
	return 0;
}

static void on_loss(void *ctx, const struct ringlog_dec_loss *l)
{
	struct rd *r = ctx;

	if (!sel_match_loss(&r->q->sel, l))
		return;
	if (r->keep && !r->keep(r->keep_ctx, l->writer, l->stream, 0, l->real_ns))
		return;
	if (r->host) {
		struct output o = r->q->out;

		o.host = r->host;
		add_line(r, l->real_ns, out_loss(&o, l));
		return;
	}
	add_line(r, l->real_ns, out_loss(&r->q->out, l));
}

static void on_rec_damage(void *ctx, const char *what)
{
	struct rd *r = ctx;

	if (r->quiet)
		return;
	r->damaged = true;
	fprintf(stderr, "ringlog: %s: damaged record: %s\n", r->path, what);
}

static void on_file_damage(void *ctx, const char *path, uint64_t from, uint64_t to,
			   const char *why)
{
	struct rd *r = ctx;

	if (r->quiet)
		return;
	r->damaged = true;
	fprintf(stderr, "ringlog: %s: bytes %llu..%llu damaged (%s); skipped, reading on\n", path,
		(unsigned long long)from, (unsigned long long)to, why);
}

/* Open a segment, saying what is wrong with its header. */
static int open_seg(struct rd *r, struct ringlog_seg_file *f, const char *path)
{
	const char *why;
	int err = ringlog_seg_open(f, path, &why);

	r->path = path;
	f->ctx = r;
	f->on_damage = on_file_damage;
	if (r->quiet)
		return err;
	if (err < 0) {
		fprintf(stderr, "ringlog: %s: %s\n", path, why ? why : strerror(-err));
		r->damaged = true;
		return err;
	}
	if (!f->hdr_ok) {
		fprintf(stderr, "ringlog: %s: header checksum mismatch; reading its chunks anyway\n", path);
		r->damaged = true;
	}
	if (f->warning[0]) {
		fprintf(stderr, "ringlog: %s: %s\n", path, f->warning);
		r->damaged = true;
	}
	return 0;
}

static void dec_setup(struct rd *r, struct ringlog_decoder *d, const struct ringlog_seg_file *f,
		      struct ringlog_dedup *dedup)
{
	struct ringlog_seg_clock clk;

	ringlog_seg_clock_of(&f->hdr, &clk);
	ringlog_dec_init(d, &clk);
	d->ctx = r;
	d->dedup = dedup;
	d->dedup_class = ringlog_seg_class_key(&f->hdr);
	d->on_event = on_event;
	d->on_loss = on_loss;
	d->on_damage = on_rec_damage;
}

/* A closed segment whose header we trust: its time range without reading it. */
static bool closed_range(const struct ringlog_seg_file *f)
{
	return f->hdr_ok && f->hdr.state == RINGLOG_SEG_CLOSED && f->hdr.events;
}

/* A segment file's number: its name, in hex (segment.h). */
static uint64_t seg_seq(const char *path)
{
	const char *name = strrchr(path, '/');

	return strtoull(name ? name + 1 : path, NULL, 16);
}

/* Where a follow's history stops in segment seq (NULL: not one of ends). */
static const struct seg_end *end_of(const struct seg_end *ends, size_t n, uint64_t seq)
{
	for (size_t i = 0; i < n; i++)
		if (ends[i].seq == seq)
			return &ends[i];
	return NULL;
}

/* Decode a segment from its first chunk, or from the chunk at start. */
static void read_file(struct rd *r, const char *path, uint64_t start)
{
	struct ringlog_seg_file f;
	struct ringlog_decoder d;
	int err;

	if (open_seg(r, &f, path) < 0)
		return;
	if (start > f.off)
		f.off = start;
	{
		const struct seg_end *e = end_of(r->ends, r->nends, seg_seq(path));

		if (e && e->end < f.size)
			f.size = e->end; /* what is after is another's */
	}
	if (closed_range(&f)) {
		span(r, f.hdr.first_real_ns, f.hdr.last_real_ns);
		/* a loss may lie outside the events' range: only skip a file
		 * that counted none */
		if (!f.hdr.lost && !sel_time_overlaps(&r->q->sel, f.hdr.first_real_ns,
						      f.hdr.last_real_ns)) {
			ringlog_seg_close(&f);
			return;
		}
	}
	dec_setup(r, &d, &f, r->shared ? r->shared : &r->dedup);
	while ((err = ringlog_seg_next(&f, false)) == 1) {
		if (f.chunk.events)
			span(r, f.chunk.first_real_ns, f.chunk.last_real_ns);
		/* Every chunk of a segment in the window is decoded, even one
		 * outside it: it may hold the descriptions (WRITER, STREAM,
		 * META) of the chunks after it; the time window is applied per
		 * event. (Skipping such chunks lost events and reported false
		 * damage with --since in the middle of a segment.) */
		d.unknown_time_ns = f.chunk.first_real_ns;
		ringlog_dec_records(&d, f.body, f.chunk.body_len);
	}
	if (err < 0 && !r->quiet) {
		fprintf(stderr, "ringlog: %s: read error: %s\n", path, strerror(-err));
		r->damaged = true;
	}
	ringlog_dec_free(&d);
	ringlog_seg_close(&f);
}

static int cmp_line(const void *a, const void *b)
{
	const struct line *x = a, *y = b;

	if (x->ns != y->ns)
		return x->ns < y->ns ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Keep the newest r->limit lines, in time order. */
static void trim(struct rd *r)
{
	size_t drop;

	if (r->n)
		qsort(r->lines, r->n, sizeof(*r->lines), cmp_line);
	if (!r->limit || r->n < r->limit)
		return;
	drop = r->n - r->limit;
	for (size_t i = 0; i < drop; i++)
		free(r->lines[i].text);
	memmove(r->lines, r->lines + drop, r->limit * sizeof(*r->lines));
	r->n = r->limit;
	r->threshold = r->lines[0].ns;
}

struct chunk_ix {
	uint64_t off, seq, first, last;
	uint32_t events;
	uint64_t lost;
};

/* -n, first pass: the newest events of one segment without decoding all
 * of it; returns the offset of the oldest chunk it decoded (0: none). The
 * chunk headers are the index (one 48-byte read per chunk); chunks are
 * decoded backwards in groups that begin where the daemon describes every
 * writer again (chunk seq % 4 == 3, proto/segment.h), so each group
 * decodes alone. A group entirely older than the newest N held so far is
 * skipped. Cost: the index, plus at most a group more than the N need.
 * Quiet: the second pass reports what it finds. */
static uint64_t read_file_last(struct rd *r, const char *path)
{
	struct ringlog_seg_file f;
	struct chunk_ix *ix = NULL;
	size_t n = 0, cap = 0, end;
	uint64_t earliest = 0;
	int err;

	if (open_seg(r, &f, path) < 0)
		return 0;
	if (closed_range(&f)) {
		span(r, f.hdr.first_real_ns, f.hdr.last_real_ns);
		if ((r->n >= r->limit && f.hdr.last_real_ns < r->threshold) ||
		    (!f.hdr.lost && !sel_time_overlaps(&r->q->sel, f.hdr.first_real_ns,
						       f.hdr.last_real_ns))) {
			ringlog_seg_close(&f);
			return 0;
		}
	}
	while ((err = ringlog_seg_next(&f, true)) == 1) {
		if (n == cap) {
			struct chunk_ix *x = realloc(ix, (cap = cap ? cap * 2 : 256) * sizeof(*x));

			if (!x)
				break;
			ix = x;
		}
		/* seg_next left off past the chunk, which starts aligned */
		ix[n++] = (struct chunk_ix){
			.off = f.off - ringlog_align_up(sizeof(f.chunk) + f.chunk.body_len, RINGLOG_SEG_ALIGN),
			.seq = f.chunk.seq, .first = f.chunk.first_real_ns, .last = f.chunk.last_real_ns,
			.events = f.chunk.events, .lost = f.chunk.lost };
		if (f.chunk.events)
			span(r, f.chunk.first_real_ns, f.chunk.last_real_ns);
	}
	for (end = n; end > 0;) {
		size_t g = end - 1;
		uint64_t first = UINT64_MAX, last = 0, lost = 0;
		struct ringlog_decoder d;

		/* back to a chunk that describes every writer (or a gap, after
		 * which the decoder reports what it cannot describe) */
		while (g > 0 && ix[g].seq % 4 != 3 && ix[g - 1].seq + 1 == ix[g].seq)
			g--;
		for (size_t i = g; i < end; i++) {
			if (ix[i].events) {
				first = ix[i].first < first ? ix[i].first : first;
				last = ix[i].last > last ? ix[i].last : last;
			}
			ringlog_count_add(&lost, ix[i].lost);
		}
		if ((r->limit && r->n >= r->limit && last < r->threshold) ||
		    (!lost && (last == 0 || !sel_time_overlaps(&r->q->sel, first, last)))) {
			end = g;
			continue;
		}
		dec_setup(r, &d, &f, NULL);
		for (size_t i = g; i < end; i++) {
			f.off = ix[i].off;
			if (ringlog_seg_next(&f, false) != 1)
				continue;
			d.unknown_time_ns = f.chunk.first_real_ns;
			ringlog_dec_records(&d, f.body, f.chunk.body_len);
		}
		ringlog_dec_free(&d);
		trim(r);
		earliest = ix[g].off;
		end = g;
	}
	free(ix);
	ringlog_seg_close(&f);
	return earliest;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int list_dir(const char *dir, char ***out, size_t *n)
{
	DIR *dp = opendir(dir);
	struct dirent *e;
	size_t cap = 0;

	*out = NULL;
	*n = 0;
	if (!dp) {
		int err = -errno;

		fprintf(stderr, "ringlog: cannot read directory %s: %s\n", dir, strerror(-err));
		return err;
	}
	while ((e = readdir(dp))) {
		size_t l = strlen(e->d_name);
		char *p;

		if (l != 22 || strcmp(e->d_name + 16, ".rlseg"))
			continue;
		if (*n == cap) {
			char **o = realloc(*out, (cap = cap ? cap * 2 : 64) * sizeof(char *));

			if (!o)
				break;
			*out = o;
		}
		if (asprintf(&p, "%s/%s", dir, e->d_name) < 0)
			break;
		(*out)[(*n)++] = p;
	}
	closedir(dp);
	if (*n)
		qsort(*out, *n, sizeof(char *), cmp_str);
	return 0;
}

static void free_files(char **files, size_t nf)
{
	for (size_t i = 0; i < nf; i++)
		free(files[i]);
	free(files);
}

/* Read files (oldest first) as the query says: everything in time order,
 * or with lines >= 0 the newest that many. */
static void collect(struct rd *r, char **files, size_t nf, long lines)
{
	size_t first = nf;
	uint64_t first_off = 0;

	if (lines < 0) {
		for (size_t i = 0; i < nf; i++)
			read_file(r, files[i], 0);
		trim(r);
		return;
	}
	if (lines == 0)
		return;
	r->limit = (size_t)lines;
	r->quiet = true;
	for (size_t i = nf; i-- > 0;) {
		uint64_t off = read_file_last(r, files[i]);

		if (off) {
			first = i;
			first_off = off;
		}
	}
	/* Second pass, forwards from the oldest chunk the first one needed,
	 * with the store's dedup: what a restarted daemon drained again
	 * (RINGLOG_SPAN_POS) shows once, as in a full read. The window is
	 * the N events and at most a chunk group more, decoded twice. */
	for (size_t i = 0; i < r->n; i++)
		free(r->lines[i].text);
	r->n = 0;
	r->threshold = 0;
	r->quiet = false;
	for (size_t i = first; i < nf; i++)
		read_file(r, files[i], i == first ? first_off : 0);
	/* the files older than the window were opened quietly: one that is
	 * missing or no segment is said all the same (exit 4), as a full
	 * read says it (it went unsaid, exit 0: an outsider's test) */
	for (size_t i = 0; i < first && i < nf; i++) {
		struct ringlog_seg_file f;

		if (open_seg(r, &f, files[i]) == 0)
			ringlog_seg_close(&f);
	}
	trim(r);
}

/* Print (newest first with -r), then free the lines and the dedup state.
 * tty: the header line and "-- No entries --", as journalctl on a terminal. */
static void print_lines(struct rd *r, bool tty)
{
	const struct output *o = &r->q->out;
	bool text = o->mode != OUT_JSON && o->mode != OUT_JSON_PRETTY && o->mode != OUT_CAT;

	if (tty && text && r->first_ns) {
		char a[64], b[64];

		out_time(o, r->first_ns, a, sizeof(a));
		out_time(o, r->last_ns, b, sizeof(b));
		printf("-- Stored events begin at %s, end at %s%s --\n", a, b, o->utc ? " UTC" : "");
	}
	for (size_t k = 0; k < r->n; k++) {
		size_t i = r->q->reverse ? r->n - 1 - k : k;

		fputs(r->lines[i].text, stdout);
		free(r->lines[i].text);
	}
	if (tty && !r->n && text)
		puts("-- No entries --");
	free(r->lines);
	r->lines = NULL;
	r->n = r->cap = 0;
	ringlog_dedup_free(&r->dedup);
}

/* The history before a follow (tail, read -f): lines < 0 all of it. */
int read_history(const struct query *q, const char *dir, long lines, const struct seg_end *ends,
		 size_t nends, const struct hist_opts *o)
{
	struct rd r = { .q = q, .ends = ends, .nends = nends, .keep = o ? o->keep : NULL,
			.keep_ctx = o ? o->ctx : NULL, .shared = o ? o->dedup : NULL };
	char **files;
	size_t nf, k = 0;

	if (list_dir(dir, &files, &nf) < 0)
		return -1;
	/* with ends, those segments alone (names are the number in hex) */
	for (size_t i = 0; i < nf; i++) {
		if (!ends || end_of(ends, nends, seg_seq(files[i])))
			files[k++] = files[i];
		else
			free(files[i]);
	}
	nf = k;
	collect(&r, files, nf, lines);
	print_lines(&r, false);
	free_files(files, nf);
	fflush(stdout);
	return 0;
}

int read_history_range(const struct query *q, const char *dir, uint64_t lo, uint64_t hi,
		       uint64_t bytes, const struct hist_opts *o)
{
	struct rd r = { .q = q, .keep = o->keep, .keep_ctx = o->ctx, .shared = o->dedup };
	char **files;
	size_t nf, k = 0, skip;
	uint64_t held = 0;

	if (list_dir(dir, &files, &nf) < 0)
		return -1;
	for (size_t i = 0; i < nf; i++) {
		uint64_t seq = seg_seq(files[i]);

		if (seq >= lo && seq < hi)
			files[k++] = files[i];
		else
			free(files[i]);
	}
	/* the newest of them that hold bytes (oldest first: list_dir() sorts) */
	for (skip = k; skip > 0 && held < bytes; skip--) {
		struct stat sb;

		if (stat(files[skip - 1], &sb) == 0)
			held += (uint64_t)sb.st_size;
	}
	for (size_t i = 0; i < skip; i++)
		free(files[i]);
	if (k)
		memmove(files, files + skip, (k - skip) * sizeof(*files));
	nf = k - skip;
	collect(&r, files, nf, -1);
	print_lines(&r, false);
	free_files(files, nf);
	fflush(stdout);
	return 0;
}

static void read_help(void)
{
	printf("usage: ringlog read [OPTIONS] [FILE...] [FIELD=VALUE...]\n"
	       "Decode stored events, merged in time order. Damaged ranges are reported on\n"
	       "stderr and skipped; exit code 4 when damage was found.\n"
	       "\n"
	       "  -D, --dir DIR          the store (default: storage_dir of /etc/ringlog/ringlogd.json)\n"
	       "  -n, --lines N          the newest N events (\"all\": every one)\n"
	       "  -r, --reverse          newest first\n"
	       "  -f, --follow           the stored events, then live ones from ringlogd\n"
	       "      --since T, --until T\n"
	       "                         T: 2026-11-23T10:00:00Z, 2026-11-23T11:00:00+01:00,\n"
	       "                         \"[Mon] 2026-11-23 11:00[:00]\" (local), 2026-11-23,\n"
	       "                         11:00[:00] (today), today, yesterday, tomorrow, now,\n"
	       "                         -1h30m, +5m, \"10 min ago\", \"in 2h\", @1795428000\n"
	       "  -p, --priority P       warning (and more severe), err..info, 1..5; our names\n"
	       "                         (critical error warning info verbose) and journalctl's\n"
	       "                         (emerg alert crit err notice debug)\n"
	       "      --provider GLOB    --event GLOB (repeat to give alternatives)\n"
	       "      --keyword MASK     --pid PID  --uid UID\n"
	       "  -g, --grep REGEX       on the short line (case-insensitive unless it has capitals)\n"
	       "  FIELD=VALUE            events whose field equals VALUE, compared by the field's type;\n"
	       "                         names ANDed, values of one name ORed\n"
	       "  -o, --output MODE      %s\n"
	       "      --json             -o json\n"
	       "      --utc              times in UTC\n"
	       "      --color[=WHEN]     auto (default: a terminal, NO_COLOR unset or empty, TERM not\n"
	       "                         dumb), always or never\n"
	       "      --no-pager         do not pipe into $RINGLOG_PAGER, $PAGER or less\n"
	       "      --socket PATH      ringlogd's socket (with -f)\n"
	       "      --nats URL[,URL...] read a NATS JetStream cluster that ringlogd ships to,\n"
	       "                         not the local store; each event shows its host\n"
	       "      --stream S         the stream (default: ringlog)\n"
	       "      --host GLOB        events of these hosts only (repeat: alternatives)\n"
	       "      --durable NAME     a named consumer: a job reading again resumes after what\n"
	       "                         it read (acknowledged) the last time\n",
	       out_mode_names);
}

/* The store --dir names, or the configured one. */
static const char *store_dir(const struct query *q, struct ringlog_config *c)
{
	ringlog_config_defaults(c);
	if (q->dir)
		return q->dir;
	if (access("/etc/ringlog/ringlogd.json", R_OK) == 0) {
		char err[1024];

		ringlog_config_load(c, "/etc/ringlog/ringlogd.json", err, sizeof(err));
	}
	return c->storage_dir;
}

int cmd_read(int argc, char **argv)
{
	struct query q;
	struct rd r = { .q = &q };
	struct ringlog_config c;
	char **files = NULL;
	size_t nf = 0;
	bool tty;
	int rc = query_parse(&q, "read", Q_FILES | Q_REVERSE | Q_FOLLOW | Q_NATS, -1, argc, argv,
			     read_help);

	if (rc) {
		query_free(&q);
		return rc == QUERY_HELPED ? EXIT_OK : rc;
	}
	if (q.nats) {
		q.out.color = out_color(q.color, 1);
		rc = nats_read(&q); /* with -f, then what comes next */
		query_free(&q);
		return rc;
	}
	if (q.follow) {
		rc = cli_follow(&q, q.dir); /* NULL: the daemon's own store */
		query_free(&q);
		return rc;
	}
	tty = isatty(1);
	q.out.color = out_color(q.color, 1);
	if (!q.nfiles) {
		if (list_dir(store_dir(&q, &c), &files, &nf) < 0) {
			query_free(&q);
			return EXIT_FAIL;
		}
		/* nothing to read is not an error, but is said: a wrong --dir
		 * looked like an empty result (an outsider's test) */
		if (!nf)
			fprintf(stderr, "ringlog read: %s holds no segment files (*.rlseg)\n",
				store_dir(&q, &c));
		collect(&r, files, nf, q.lines);
		free_files(files, nf);
	} else {
		read_order_files(q.files, (size_t)q.nfiles);
		collect(&r, q.files, (size_t)q.nfiles, q.lines);
	}
	if (tty && !q.no_pager)
		out_pager_start();
	print_lines(&r, tty);
	out_pager_end();
	sel_explain(&q.sel, "read", false);
	query_free(&q);
	return r.damaged ? EXIT_DAMAGED : EXIT_OK;
}

/* nats.c: records decoded from elsewhere (shipped chunks) go into the
 * same lines, sorting, -n and printing as a store's. */
struct rd *read_open(const struct query *q)
{
	struct rd *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->q = q;
	r->path = "cluster";
	if (q->lines >= 0)
		r->limit = (size_t)q->lines;
	return r;
}

void read_decode(struct rd *r, const char *host, const struct ringlog_seg_clock *clk,
		 struct ringlog_dedup *dedup, uint64_t chunk_ns, uint64_t first_ns,
		 uint64_t last_ns, const uint8_t *desc, size_t desc_len,
		 const uint8_t *body, size_t body_len)
{
	struct ringlog_decoder d;

	if (r->limit == 0 && r->q->lines == 0)
		return;
	r->host = host;
	ringlog_dec_init(&d, clk);
	d.ctx = r;
	d.dedup = dedup;
	d.on_event = on_event;
	d.on_loss = on_loss;
	d.on_damage = on_rec_damage;
	d.unknown_time_ns = chunk_ns;
	if (first_ns)
		span(r, first_ns, last_ns);
	if (desc_len)
		ringlog_dec_records(&d, desc, desc_len);
	ringlog_dec_records(&d, body, body_len);
	ringlog_dec_free(&d);
	if (r->limit && r->n >= 2 * r->limit + 1024)
		trim(r);
}

/* A loss line no record carries (a shipped message's "not shipped"). */
void read_loss(struct rd *r, const char *host, const struct ringlog_dec_loss *l)
{
	r->host = host;
	on_loss(r, l);
}

int read_close(struct rd *r, bool pager)
{
	bool tty = isatty(1);
	int rc;

	trim(r);
	if (tty && pager && !r->q->no_pager)
		out_pager_start();
	print_lines(r, tty && pager); /* a follow prints no header per message */
	out_pager_end();
	rc = r->damaged ? EXIT_DAMAGED : EXIT_OK;
	free(r);
	return rc;
}

/* export.c: the segments of the store --dir names (or the configured
 * one), oldest first, as read lists them. Returns 0 or -errno (printed). */
int read_store_files(const struct query *q, char ***files, size_t *nf)
{
	struct ringlog_config c;

	return list_dir(store_dir(q, &c), files, nf);
}

void read_free_files(char **files, size_t nf)
{
	free_files(files, nf);
}

/* FILE arguments in the order the daemon wrote them, whatever order they
 * were given in: by their header's creation time, then sequence number.
 * The dedup that drops what a restarted daemon stored twice keeps, per
 * ring, the positions already decoded; a newer file read first made every
 * event of an older one look like a copy, and they vanished without a
 * word (an outsider's test: 600,000 events read as 34,709, exit 0). A
 * file that is no segment sorts first (it is said, and read as nothing).
 * Creation times are wall-clock: a clock set back between two segments
 * orders them wrong (the sequence breaks ties only). */
struct file_key {
	char *path;
	uint64_t created, seq;
	size_t given;
};

static int cmp_file_key(const void *a, const void *b)
{
	const struct file_key *x = a, *y = b;

	if (x->created != y->created)
		return x->created < y->created ? -1 : 1;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	return x->given < y->given ? -1 : x->given > y->given;
}

void read_order_files(char **files, size_t nf)
{
	struct file_key *k = nf > 1 ? calloc(nf, sizeof(*k)) : NULL;

	if (!k)
		return;
	for (size_t i = 0; i < nf; i++) {
		struct ringlog_seg_file f;
		const char *why;

		k[i].path = files[i];
		k[i].given = i;
		if (ringlog_seg_open(&f, files[i], &why) == 0) {
			/* a header whose checksum fails is still the best
			 * guess; one rebuilt from nothing (magic_hit()) has
			 * its first chunk's time */
			k[i].created = f.hdr.created_real_ns;
			k[i].seq = f.hdr.seq;
			if (!k[i].created && ringlog_seg_next(&f, true) == 1)
				k[i].created = f.chunk.first_real_ns;
			ringlog_seg_close(&f);
		}
	}
	qsort(k, nf, sizeof(*k), cmp_file_key);
	for (size_t i = 0; i < nf; i++)
		files[i] = k[i].path;
	free(k);
}
