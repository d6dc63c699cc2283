/* client/cli/export.c - `ringlog export`: the stored events `ringlog read`
 * would select, written for other viewers through one of the writers of
 * export.h. The store is read as read reads it (segments oldest first,
 * chunk by chunk, the store's dedup), but streamed: nothing is sorted or
 * held, so memory does not grow with the store. Damage is reported as
 * read reports it, and exits 4 the same way.
 */
#define _GNU_SOURCE
#include "cli.h"
#include "count.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "export.h"
#include "query.h"

struct ex {
	const struct query *q;
	const struct export_ops *ops;
	struct export_writer *w;
	struct ringlog_dedup dedup;
	const char *path;
	int err;             /* the writer's first error: the export stops */
	bool damaged;
	uint64_t events, lost;
};

static int on_event(void *ctx, const struct ringlog_dec_event *e)
{
	struct ex *x = ctx;

	if (!sel_match(&x->q->sel, e))
		return 0;
	x->err = x->ops->event(x->w, e);
	x->events++;
	return x->err; /* non-zero stops the decoder */
}

static void on_loss(void *ctx, const struct ringlog_dec_loss *l)
{
	struct ex *x = ctx;

	if (x->err || !sel_match_loss(&x->q->sel, l))
		return;
	x->err = x->ops->loss(x->w, l);
	ringlog_count_add(&x->lost, l->records);
}

static void on_rec_damage(void *ctx, const char *what)
{
	struct ex *x = ctx;

	x->damaged = true;
	fprintf(stderr, "ringlog: %s: damaged record: %s\n", x->path, what);
}

static void on_file_damage(void *ctx, const char *path, uint64_t from, uint64_t to,
			   const char *why)
{
	struct ex *x = ctx;

	x->damaged = true;
	fprintf(stderr, "ringlog: %s: bytes %llu..%llu damaged (%s); skipped, exporting on\n",
		path, (unsigned long long)from, (unsigned long long)to, why);
}

static int open_seg(struct ex *x, struct ringlog_seg_file *f, const char *path)
{
	const char *why;
	int err = ringlog_seg_open(f, path, &why);

	x->path = path;
	f->ctx = x;
	f->on_damage = on_file_damage;
	if (err < 0) {
		fprintf(stderr, "ringlog: %s: %s; skipped\n", path, why ? why : strerror(-err));
		x->damaged = true;
		return err;
	}
	if (!f->hdr_ok) {
		fprintf(stderr, "ringlog: %s: header checksum mismatch; exporting its chunks anyway\n",
			path);
		x->damaged = true;
	}
	if (f->warning[0]) {
		fprintf(stderr, "ringlog: %s: %s\n", path, f->warning);
		x->damaged = true;
	}
	return 0;
}

static void export_file(struct ex *x, const char *path)
{
	struct ringlog_seg_file f;
	struct ringlog_decoder d;
	struct ringlog_seg_clock clk;
	int err;

	if (open_seg(x, &f, path) < 0)
		return;
	/* a closed segment outside --since/--until is skipped unread, unless
	 * it counted losses (they may lie outside the events' range) */
	if (f.hdr_ok && f.hdr.state == RINGLOG_SEG_CLOSED && f.hdr.events && !f.hdr.lost &&
	    !sel_time_overlaps(&x->q->sel, f.hdr.first_real_ns, f.hdr.last_real_ns)) {
		ringlog_seg_close(&f);
		return;
	}
	ringlog_seg_clock_of(&f.hdr, &clk);
	ringlog_dec_init(&d, &clk);
	d.ctx = x;
	d.dedup = &x->dedup;
	d.dedup_class = ringlog_seg_class_key(&f.hdr);
	d.on_event = on_event;
	d.on_loss = on_loss;
	d.on_damage = on_rec_damage;
	/* Every chunk is decoded, even one outside --since/--until: a chunk
	 * may describe the writers and streams of the chunks after it, which
	 * would otherwise read as damaged (what `read` skips by time, export
	 * filters event by event: slower on a narrow window, never wrong). */
	while (!x->err && (err = ringlog_seg_next(&f, false)) == 1) {
		d.unknown_time_ns = f.chunk.first_real_ns;
		ringlog_dec_records(&d, f.body, f.chunk.body_len);
	}
	if (!x->err && err < 0) {
		fprintf(stderr, "ringlog: %s: read error: %s\n", path, strerror(-err));
		x->damaged = true;
	}
	ringlog_dec_free(&d);
	ringlog_seg_close(&f);
}

/* The host and boot id of the first segment that has a sound header. */
static void store_info(char **files, size_t nf, struct export_info *info)
{
	uint64_t max_size = info->max_size;

	memset(info, 0, sizeof(*info));
	info->max_size = max_size;
	info->version = RINGLOG_VERSION_STRING;
	for (size_t i = 0; i < nf; i++) {
		struct ringlog_seg_file f;
		const char *why;

		if (ringlog_seg_open(&f, files[i], &why) < 0)
			continue;
		if (f.hdr_ok) {
			memcpy(info->host, f.hdr.host, sizeof(f.hdr.host));
			info->host[sizeof(f.hdr.host)] = 0;
			for (int k = 0; k < 16; k++)
				snprintf(info->boot_id + 2 * k, 3, "%02x", f.hdr.boot_id[k]);
			info->mono_ref = f.hdr.mono_ref;
			info->real_ref = f.hdr.real_ref;
			ringlog_seg_close(&f);
			return;
		}
		ringlog_seg_close(&f);
	}
}

static void export_help(void)
{
	printf("usage: ringlog export --format FORMAT --output PATH [OPTIONS] [FILE...] [FIELD=VALUE...]\n"
	       "Write the stored events `ringlog read` would select for other viewers. The\n"
	       "store is streamed (memory does not grow with it); damaged ranges are\n"
	       "reported on stderr and skipped, exit code 4 when damage was found.\n"
	       "\n"
	       "  -F, --format FORMAT    ctf: a CTF 1.8 directory (babeltrace2, Trace Compass);\n"
	       "                         perfetto: a trace file of TracePackets (ui.perfetto.dev,\n"
	       "                         trace_processor); json: read --json's objects, one\n"
	       "                         per line, in store order\n"
	       "  -O, --output PATH      ctf: a directory, created (an existing one must be\n"
	       "                         empty); perfetto, json: a file, \"-\" for stdout\n"
	       "      --max-size SIZE    perfetto: split the output into files of at most SIZE\n"
	       "                         (512M, 2G; at least 64K), each one whole by itself,\n"
	       "                         named PATH with -001, -002... before its extension\n"
	       "                         (t.pftrace: t-001.pftrace, t-002.pftrace, ...)\n"
	       "  -D, --dir DIR          the store (default: storage_dir of /etc/ringlog/ringlogd.json)\n"
	       "      --since T, --until T, -p P, --provider GLOB, --event GLOB, --keyword MASK,\n"
	       "      --pid PID, --uid UID, -g REGEX, FIELD=VALUE\n"
	       "                         select as `ringlog read` does (ringlog read --help)\n");
}

/* Take --format and --output out of argv (read's -o is its output mode,
 * which export has no use for), and refuse read's display options. */
static int split_args(int argc, char **argv, const char **format, const char **output,
		      const char **max_size, int *nargc)
{
	static const char *const display[] = { "-o", "--output-mode", "--json", "--utc", "--color",
		"--colour", "--no-pager", "-n", "--lines", "-r", "--reverse", "-f", "--follow",
		"--socket" };
	int n = 1;
	bool rest = false;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char **slot = NULL;
		size_t l = 0;

		if (!rest && !strcmp(a, "--")) {
			rest = true;
		} else if (!rest && (!strcmp(a, "--format") || !strcmp(a, "-F"))) {
			slot = format;
		} else if (!rest && (!strcmp(a, "--output") || !strcmp(a, "-O"))) {
			slot = output;
		} else if (!rest && !strcmp(a, "--max-size")) {
			slot = max_size;
		} else if (!rest && !strncmp(a, "--max-size=", (l = 11))) {
			*max_size = a + l;
			continue;
		} else if (!rest && !strncmp(a, "--format=", (l = 9))) {
			*format = a + l;
			continue;
		} else if (!rest && !strncmp(a, "--output=", (l = 9))) {
			*output = a + l;
			continue;
		} else if (!rest) {
			for (size_t k = 0; k < sizeof(display) / sizeof(*display); k++) {
				size_t dl = strlen(display[k]);

				if (!strncmp(a, display[k], dl) && (a[dl] == 0 || a[dl] == '=' ||
								   (dl == 2 && a[1] != '-'))) {
					fprintf(stderr, "ringlog export: %s is a read option for showing "
						"events; export writes --format to --output "
						"(ringlog export --help)\n", a);
					return EXIT_USAGE;
				}
			}
		}
		if (slot) {
			if (i + 1 >= argc) {
				fprintf(stderr, "ringlog export: %s needs a value\n", a);
				return EXIT_USAGE;
			}
			*slot = argv[++i];
			continue;
		}
		argv[n++] = argv[i];
	}
	argv[n] = NULL;
	*nargc = n;
	return 0;
}

int cmd_export(int argc, char **argv)
{
	static const struct export_ops *const writers[] = { &export_ctf_ops, &export_json_ops,
		&export_perfetto_ops };
	const char *format = NULL, *output = NULL, *max_size = NULL;
	const struct export_ops *ops = NULL;
	struct query q;
	struct ex x = { .q = &q };
	struct export_info info;
	char **files = NULL;
	size_t nf = 0;
	bool own_files = false;
	uint64_t bytes = 0;
	int nargc, rc, end_err;

	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			export_help();
			return EXIT_OK;
		}
	rc = split_args(argc, argv, &format, &output, &max_size, &nargc);
	if (rc)
		return rc;
	if (!format || !output) {
		fprintf(stderr, "ringlog export: %s is required: --format ctf|perfetto|json "
			"--output PATH (ringlog export --help)\n", !format ? "--format" : "--output");
		return EXIT_USAGE;
	}
	for (size_t i = 0; i < sizeof(writers) / sizeof(*writers); i++)
		if (!strcmp(format, writers[i]->name))
			ops = writers[i];
	if (!ops) {
		fprintf(stderr, "ringlog export: --format \"%s\": expected ctf, perfetto or json\n",
			format);
		return EXIT_USAGE;
	}
	info.max_size = 0;
	if (max_size && (ringlog_parse_size(max_size, &info.max_size) < 0 || !info.max_size)) {
		fprintf(stderr, "ringlog export: --max-size \"%s\": expected a size like 512M or "
			"2G\n", max_size);
		return EXIT_USAGE;
	}
	/* usage errors, caught before any file is made (the writer checks
	 * them too, as the place that needs them) */
	if (max_size && !strcmp(output, "-")) {
		fprintf(stderr, "ringlog export: --max-size writes several files: name one with "
			"--output, not \"-\"\n");
		return EXIT_USAGE;
	}
	if (max_size && info.max_size < EXPORT_MIN_MAX_SIZE) {
		fprintf(stderr, "ringlog export: --max-size \"%s\" (%llu bytes): too small for a file "
			"that stands alone; give at least 64K\n", max_size,
			(unsigned long long)info.max_size);
		return EXIT_USAGE;
	}
	if (max_size && ops != &export_perfetto_ops) {
		fprintf(stderr, "ringlog export: --max-size splits --format perfetto output; "
			"%s is written whole\n", format);
		return EXIT_USAGE;
	}
	rc = query_parse(&q, "export", Q_FILES, -1, nargc, argv, export_help);
	if (rc) {
		query_free(&q);
		return rc == QUERY_HELPED ? EXIT_OK : rc;
	}
	if (q.nfiles) {
		files = q.files;
		nf = (size_t)q.nfiles;
		read_order_files(files, nf);
	} else {
		if (read_store_files(&q, &files, &nf) < 0) {
			query_free(&q);
			return EXIT_FAIL;
		}
		own_files = true;
	}
	store_info(files, nf, &info);
	x.ops = ops;
	x.w = ops->begin(output, &info);
	if (!x.w) {
		rc = EXIT_FAIL;
		goto out;
	}
	for (size_t i = 0; i < nf && !x.err; i++)
		export_file(&x, files[i]);
	end_err = ops->end(x.w, &bytes);
	if (x.err || end_err) {
		fprintf(stderr, "ringlog export: writing %s failed: %s; the output is incomplete\n",
			output, strerror(-(x.err ? x.err : end_err)));
		rc = EXIT_FAIL;
		goto out;
	}
	/* what a user checks against read: the counts, and the damage above */
	fprintf(stderr, "ringlog export: %llu events, %llu lost events counted, %llu bytes to %s%s\n",
		(unsigned long long)x.events, (unsigned long long)x.lost,
		(unsigned long long)bytes, output,
		x.damaged ? " (damaged ranges skipped, see above)" : "");
	rc = x.damaged ? EXIT_DAMAGED : EXIT_OK;
	sel_explain(&q.sel, "export", false);
out:
	ringlog_dedup_free(&x.dedup);
	if (own_files)
		read_free_files(files, nf);
	query_free(&q);
	return rc;
}

int export_write_all(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n) {
		ssize_t k = write(fd, b, n);

		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		b += k;
		n -= (size_t)k;
	}
	return 0;
}

uint64_t export_fnv(const void *p, size_t n, uint64_t h)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}
