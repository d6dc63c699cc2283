/* client/cli/read.c - `ringlog read`: decode segments offline, merged in time
 * order, robust to damage (reported on stderr, exit code 4). */
#define _GNU_SOURCE
#include "cli.h"

#include <dirent.h>
#ifdef _WIN32
#include <io.h>
#endif
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"

/* Events are rendered to text as they are decoded (metadata lives in the
 * per-file decoder), then sorted by time: memory grows with the output,
 * which is what `read` prints anyway. */
struct line {
	uint64_t ns;
	uint64_t seq;
	char *text;
};

struct rd {
	struct printer pr;
	struct filter f;
	struct line *lines;
	size_t n, cap;
	uint64_t seq;
	bool damaged;
	const char *path;
	struct ringlog_dedup dedup; /* across files: no duplicate after a crash */
};

static void add_line(struct rd *r, uint64_t ns, char *text)
{
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

/* print_event() writes to stdout; read renders into memory first to sort. */
struct capture {
	FILE *saved;
	int saved_fd; /* Windows */
	char *buf;
	size_t len;
};

#ifdef _WIN32
/* No open_memstream, and stdout cannot be assigned: fd 1 is pointed at one
 * temporary file for the duration of an event and read back. */
static int capture_fd = -1;

static void capture_begin(struct capture *c)
{
	c->buf = NULL;
	c->saved_fd = -1;
	if (capture_fd < 0) {
		FILE *t = tmpfile();

		capture_fd = t ? _fileno(t) : -1;
	}
	fflush(stdout);
	if (capture_fd < 0 || _lseek(capture_fd, 0, SEEK_SET) < 0)
		return;
	c->saved_fd = _dup(1);
	if (c->saved_fd >= 0 && _dup2(capture_fd, 1) < 0) {
		_close(c->saved_fd);
		c->saved_fd = -1;
	}
}

static char *capture_end(struct capture *c)
{
	long n;

	if (c->saved_fd < 0)
		return NULL;
	fflush(stdout);
	_dup2(c->saved_fd, 1);
	_close(c->saved_fd);
	n = _lseek(capture_fd, 0, SEEK_CUR);
	if (n < 0 || _lseek(capture_fd, 0, SEEK_SET) < 0 || !(c->buf = malloc((size_t)n + 1)))
		return NULL;
	n = _read(capture_fd, c->buf, (unsigned)n);
	c->len = n < 0 ? 0 : (size_t)n;
	c->buf[c->len] = 0;
	return c->buf;
}
#else
static void capture_begin(struct capture *c)
{
	FILE *m = open_memstream(&c->buf, &c->len);

	c->saved = stdout;
	if (m)
		stdout = m;
}

static char *capture_end(struct capture *c)
{
	if (stdout != c->saved) {
		fclose(stdout);
		stdout = c->saved;
	}
	return c->buf;
}
#endif

static int on_event(void *ctx, const struct ringlog_dec_event *e)
{
	struct rd *r = ctx;
	struct capture c = { 0 };

	if (!filter_match(&r->f, e))
		return 0;
	capture_begin(&c);
	print_event(&r->pr, e);
	add_line(r, e->real_ns, capture_end(&c));
	return 0;
}

static void on_loss(void *ctx, const struct ringlog_dec_loss *l)
{
	struct rd *r = ctx;
	struct capture c = { 0 };

	if (!filter_loss(&r->f, l))
		return;
	capture_begin(&c);
	print_loss(&r->pr, l);
	add_line(r, l->real_ns, capture_end(&c));
}

static void on_rec_damage(void *ctx, const char *what)
{
	struct rd *r = ctx;

	r->damaged = true;
	fprintf(stderr, "ringlog: %s: damaged record: %s\n", r->path, what);
}

static void on_file_damage(void *ctx, const char *path, uint64_t from, uint64_t to,
			   const char *why)
{
	struct rd *r = ctx;

	r->damaged = true;
	fprintf(stderr, "ringlog: %s: bytes %llu..%llu damaged (%s); skipped, reading on\n", path,
		(unsigned long long)from, (unsigned long long)to, why);
}

static int read_file(struct rd *r, const char *path)
{
	struct ringlog_seg_file f;
	struct ringlog_decoder d;
	struct ringlog_seg_clock clk;
	const char *why;
	int err = ringlog_seg_open(&f, path, &why);

	r->path = path;
	if (err < 0) {
		fprintf(stderr, "ringlog: %s: %s\n", path, why ? why : strerror(-err));
		r->damaged = true;
		return err;
	}
	if (!f.hdr_ok) {
		fprintf(stderr, "ringlog: %s: header checksum mismatch; reading its chunks anyway\n", path);
		r->damaged = true;
	}
	if (f.warning[0]) {
		fprintf(stderr, "ringlog: %s: %s\n", path, f.warning);
		r->damaged = true;
	}
	ringlog_seg_clock_of(&f.hdr, &clk);
	ringlog_dec_init(&d, &clk);
	d.ctx = r;
	d.dedup = &r->dedup;
	d.on_event = on_event;
	d.on_loss = on_loss;
	d.on_damage = on_rec_damage;
	f.ctx = r;
	f.on_damage = on_file_damage;
	while ((err = ringlog_seg_next(&f, false)) == 1) {
		if (r->f.since_ns && f.chunk.events && f.chunk.last_real_ns < r->f.since_ns)
			continue;
		if (r->f.until_ns && f.chunk.events && f.chunk.first_real_ns > r->f.until_ns)
			continue;
		d.unknown_time_ns = f.chunk.first_real_ns;
		ringlog_dec_records(&d, f.body, f.chunk.body_len);
	}
	if (err < 0) {
		fprintf(stderr, "ringlog: %s: read error: %s\n", path, strerror(-err));
		r->damaged = true;
	}
	ringlog_dec_free(&d);
	ringlog_seg_close(&f);
	return 0;
}

static int cmp_line(const void *a, const void *b)
{
	const struct line *x = a, *y = b;

	if (x->ns != y->ns)
		return x->ns < y->ns ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
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
		fprintf(stderr, "ringlog: cannot read directory %s: %s\n", dir, strerror(errno));
		return -errno;
	}
	while ((e = readdir(dp))) {
		size_t l = strlen(e->d_name);
		char *p;

		if (l != 22 || strcmp(e->d_name + 16, ".rlseg"))
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 64;
			*out = realloc(*out, cap * sizeof(char *));
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

/* Print the collected lines in time order (only the last `last` when it is
 * not 0), then free them, the reader's dedup state and the file list. */
static void print_and_free(struct rd *r, size_t last, char **files, size_t nf)
{
	if (r->n)
		qsort(r->lines, r->n, sizeof(*r->lines), cmp_line);
	for (size_t i = last && r->n > last ? r->n - last : 0; i < r->n; i++)
		fputs(r->lines[i].text, stdout);
	for (size_t i = 0; i < r->n; i++)
		free(r->lines[i].text);
	free(r->lines);
	ringlog_dedup_free(&r->dedup);
	for (size_t i = 0; i < nf; i++)
		free(files[i]);
	free(files);
}

/* Used by tail -n: the last n events of the newest segments. */
int read_backlog(const char *dir, const struct filter *f, const struct printer *pr, unsigned n);
int read_backlog(const char *dir, const struct filter *f, const struct printer *pr, unsigned n)
{
	struct rd r = { .pr = *pr, .f = *f };
	char **files;
	size_t nf;

	if (list_dir(dir, &files, &nf) < 0)
		return -1;
	/* Newest first until there are enough; then print in time order. */
	for (size_t i = nf; i-- > 0 && r.n < n;)
		read_file(&r, files[i]);
	print_and_free(&r, n, files, nf);
	fflush(stdout);
	return 0;
}

int cmd_read(int argc, char **argv)
{
	struct rd r = { 0 };
	const char *dir = NULL;
	char **files = NULL;
	size_t nf = 0;
	int nargs = 0;

	filter_init(&r.f);
	for (int i = 1; i < argc; i++) {
		int k = filter_option(&r.f, argc, argv, &i);

		if (k < 0)
			return EXIT_USAGE;
		if (k)
			continue;
		if (!strcmp(argv[i], "--json"))
			r.pr.json = true;
		else if (!strcmp(argv[i], "--dir") && i + 1 < argc)
			dir = argv[++i];
		else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			puts("usage: ringlog read [FILE...] [--dir DIR] [--since T] [--until T]\n"
			     "                    [--provider GLOB] [--event NAME] [--level L] [--keyword MASK]\n"
			     "                    [--pid PID] [--uid UID] [--json]\n"
			     "Decode segment files, merged in time order. Damaged ranges are reported\n"
			     "on stderr and skipped; exit code 4 when damage was found.\n"
			     "T: 2026-11-21T10:00:00Z, \"2026-11-21 10:00:00\" (local) or -10m.");
			return 0;
		} else if (argv[i][0] == '-') {
			fprintf(stderr, "ringlog read: unknown option %s (see ringlog read --help)\n", argv[i]);
			return EXIT_USAGE;
		} else {
			nargs++;
		}
	}
	if (!nargs) {
		struct ringlog_config c;

		ringlog_config_defaults(&c);
		if (!dir && access("/etc/ringlog/ringlogd.json", R_OK) == 0) {
			char err[1024];

			ringlog_config_load(&c, "/etc/ringlog/ringlogd.json", err, sizeof(err));
		}
		if (list_dir(dir ? dir : c.storage_dir, &files, &nf) < 0)
			return EXIT_FAIL;
		for (size_t i = 0; i < nf; i++)
			read_file(&r, files[i]);
	} else {
		for (int i = 1; i < argc; i++) {
			if (argv[i][0] == '-') {
				if (strcmp(argv[i], "--json"))
					i++;
				continue;
			}
			read_file(&r, argv[i]);
		}
	}
	print_and_free(&r, 0, files, nf);
	return r.damaged ? EXIT_DAMAGED : EXIT_OK;
}
