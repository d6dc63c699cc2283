/* client/cli/export-json.c - `ringlog export --format json`: the objects
 * `ringlog read --json` prints (output.c renders them), one per line, in
 * store order rather than sorted: sorting would hold the whole export in
 * memory (`ringlog read --json` does that when order matters). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "output.h"

struct export_writer {
	FILE *f;
	bool own;
	uint64_t bytes;
	struct output out;
};

static struct export_writer *json_begin(const char *path, const struct export_info *info)
{
	struct export_writer *w = calloc(1, sizeof(*w));

	(void)info;
	if (!w)
		return NULL;
	w->out.mode = OUT_JSON;
	w->out.utc = true;
	if (!strcmp(path, "-")) {
		w->f = stdout;
	} else {
		w->f = fopen(path, "wb");
		w->own = true;
	}
	if (!w->f) {
		int err = errno;

		fprintf(stderr, "ringlog export: cannot create %s: %s; name a writable file or "
			"\"-\" for stdout\n", path, strerror(err));
		free(w);
		errno = err;
		return NULL;
	}
	return w;
}

static int put(struct export_writer *w, char *s)
{
	size_t n;

	if (!s)
		return -ENOMEM;
	n = strlen(s);
	w->bytes += n;
	n = fwrite(s, 1, n, w->f) == n ? 0 : 1;
	free(s);
	return n ? -EIO : 0;
}

static int json_event(struct export_writer *w, const struct ringlog_dec_event *e)
{
	return put(w, out_event(&w->out, e));
}

static int json_loss(struct export_writer *w, const struct ringlog_dec_loss *l)
{
	return put(w, out_loss(&w->out, l));
}

static int json_end(struct export_writer *w, uint64_t *bytes)
{
	int err = fflush(w->f) ? -errno : 0;

	if (ferror(w->f) && !err)
		err = -EIO;
	if (w->own && fclose(w->f) && !err)
		err = -errno;
	if (bytes)
		*bytes = w->bytes;
	free(w);
	return err;
}

const struct export_ops export_json_ops = {
	.name = "json",
	.begin = json_begin,
	.event = json_event,
	.loss = json_loss,
	.end = json_end,
};
