/* daemon/sink/ship-disk.c - chunks read back from the segment files and
 * made into self-contained messages (ship-disk.h, proto/ship.h). Runs on
 * the shipping thread only. */
#define _GNU_SOURCE
#include "ship-disk.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void shipr_free(struct ship_reader *r)
{
	shipr_close(r);
	free(r->descs);
	free(r->want);
	free(r->msg);
	free(r);
}

void shipr_close(struct ship_reader *r)
{
	if (r->open)
		ringlog_seg_close(&r->f);
	r->open = false;
	for (size_t i = 0; i < r->ndesc; i++)
		free(r->descs[i].rec);
	r->ndesc = 0;
}

/* Back to the first chunk of the segment open, its descriptor kept: the
 * budget may have deleted the file, which the descriptor keeps readable
 * (ship-thread.c: after a failure, the chunks not acknowledged go again
 * from there). The descriptions are gathered again as the chunks are. */
void shipr_rewind(struct ship_reader *r)
{
	for (size_t i = 0; i < r->ndesc; i++)
		free(r->descs[i].rec);
	r->ndesc = 0;
	r->f.off = RINGLOG_SEG_HEADER_SIZE;
	r->chunk_end = r->f.off;
}

int shipr_open(struct ship_reader *r, uint64_t seq)
{
	const char *why;
	int err;

	shipr_close(r);
	snprintf(r->path, sizeof(r->path), "%s/%016" PRIx64 ".rlseg", r->dir, seq);
	err = ringlog_seg_open(&r->f, r->path, &why);
	if (err < 0)
		return err;
	r->open = true;
	r->seg = seq;
	r->chunk_end = r->f.off;
	return 0;
}

int shipr_next(struct ship_reader *r)
{
	struct stat st;
	int n;

	if (!r->open)
		return 0;
	if (fstat(r->f.fd, &st) == 0)
		r->f.size = (uint64_t)st.st_size;
	n = ringlog_seg_next(&r->f, false);
	if (n == 1)
		r->chunk_end = r->f.off;
	return n;
}

static bool desc_known(const struct ship_reader *r, const struct ringlog_seg_rec *h)
{
	for (size_t i = 0; i < r->ndesc; i++)
		if (r->descs[i].len == h->len && r->descs[i].type == h->type &&
		    r->descs[i].id == h->id && !memcmp(r->descs[i].rec, h, h->len))
			return true;
	return false;
}

/* Walk the chunk body's records: fn for each well-formed one. A malformed
 * length ends the walk (the decoder on the other side reports it). */
#define FOR_EACH_REC(B_, L_, H_)                                                      \
	for (size_t o_ = 0; o_ + sizeof(struct ringlog_seg_rec) <= (L_) &&               \
	     ((H_) = (const struct ringlog_seg_rec *)((B_) + o_))->len >=                  \
		     sizeof(struct ringlog_seg_rec) &&                                    \
	     (H_)->len % 8 == 0 && (H_)->len <= (L_) - o_;                                \
	     o_ += (H_)->len)

void shipr_absorb(struct ship_reader *r)
{
	const struct ringlog_seg_rec *h;

	FOR_EACH_REC(r->f.body, r->f.chunk.body_len, h) {
		struct ship_desc *d;

		if (h->type != RINGLOG_SEG_REC_WRITER && h->type != RINGLOG_SEG_REC_STREAM &&
		    h->type != RINGLOG_SEG_REC_META)
			continue;
		/* The daemon repeats descriptions every 4th chunk: keep one. A
		 * description is a few hundred bytes: the linear look is O(n)
		 * per record, n the segment's writers and events. */
		if (desc_known(r, h))
			continue;
		if (r->ndesc == r->cap) {
			size_t cap = r->cap ? r->cap * 2 : 64;
			struct ship_desc *x = realloc(r->descs, cap * sizeof(*x));

			if (!x)
				return;
			r->descs = x;
			r->cap = cap;
		}
		d = &r->descs[r->ndesc];
		d->rec = malloc(h->len);
		if (!d->rec)
			return;
		memcpy(d->rec, h, h->len);
		d->type = h->type;
		d->id = h->id;
		d->len = h->len;
		d->writer = UINT32_MAX;
		if (h->type == RINGLOG_SEG_REC_STREAM &&
		    h->len >= sizeof(*h) + sizeof(struct ringlog_seg_stream))
			memcpy(&d->writer, (const uint8_t *)h + sizeof(*h), sizeof(d->writer));
		r->ndesc++;
	}
}

/* Mark, in want[], the descriptions the records [from, to) of the body
 * need: the STREAM of each stream they name, its WRITER, its META. */
static void needed(const struct ship_reader *r, const uint8_t *p, size_t len, bool *want)
{
	const struct ringlog_seg_rec *h;

	FOR_EACH_REC(p, len, h) {
		if (h->type != RINGLOG_SEG_REC_PACK && h->type != RINGLOG_SEG_REC_SPAN &&
		    h->type != RINGLOG_SEG_REC_LOSS)
			continue;
		for (size_t i = 0; i < r->ndesc; i++) {
			const struct ship_desc *s = &r->descs[i];

			if (want[i] || s->type != RINGLOG_SEG_REC_STREAM || s->id != h->id)
				continue;
			want[i] = true;
			for (size_t j = 0; j < r->ndesc; j++)
				if (r->descs[j].type != RINGLOG_SEG_REC_STREAM &&
				    r->descs[j].id == s->writer)
					want[j] = true;
		}
	}
}

static size_t want_len(const struct ship_reader *r, const bool *want)
{
	size_t n = 0;

	for (size_t i = 0; i < r->ndesc; i++)
		if (want[i])
			n += r->descs[i].len;
	return n;
}

int shipr_build(struct ship_reader *r, const char *host, struct ship_part *out)
{
	struct ringlog_ship_hdr h = { .magic = RINGLOG_SHIP_MAGIC, .version = RINGLOG_SHIP_VERSION,
				      .header_size = RINGLOG_SHIP_HDR_SIZE };
	size_t len = r->f.chunk.body_len, dl;
	bool *want;
	uint8_t *p;

	/* Both buffers are kept for the next message: a fresh megabyte a
	 * message was a fresh mmap, faulted in page by page as it was
	 * filled, and unmapped again (a third of the thread's time). */
	if (r->want_cap < r->ndesc + 1) {
		want = realloc(r->want, (r->ndesc + 1) * sizeof(bool));
		if (!want)
			return -ENOMEM;
		r->want = want;
		r->want_cap = r->ndesc + 1;
	}
	want = r->want;
	memset(want, 0, (r->ndesc + 1) * sizeof(bool));
	needed(r, r->f.body, len, want);
	dl = want_len(r, want);
	out->len = RINGLOG_SHIP_HDR_SIZE + dl + len;
	if (r->msg_cap < out->len) {
		p = realloc(r->msg, out->len);
		if (!p)
			return -ENOMEM;
		r->msg = p;
		r->msg_cap = out->len;
	}
	out->data = p = r->msg;
	h.desc_len = (uint32_t)dl;
	h.body_len = (uint32_t)len;
	h.segment = r->seg;
	h.chunk = r->f.chunk.seq;
	memcpy(h.boot_id, r->f.hdr.boot_id, sizeof(h.boot_id));
	snprintf(h.host, sizeof(h.host), "%s", host);
	ringlog_seg_clock_of(&r->f.hdr, &h.clock);
	h.first_real_ns = r->f.chunk.first_real_ns;
	h.last_real_ns = r->f.chunk.last_real_ns;
	h.events = r->f.chunk.events;
	memcpy(p, &h, sizeof(h));
	p += sizeof(h);
	for (size_t i = 0; i < r->ndesc; i++)
		if (want[i]) {
			memcpy(p, r->descs[i].rec, r->descs[i].len);
			p += r->descs[i].len;
		}
	memcpy(p, r->f.body, len);
	return 0;
}

static bool seg_name(const char *name, uint64_t *seq)
{
	char *end;

	if (strlen(name) != 22 || strcmp(name + 16, ".rlseg"))
		return false;
	*seq = strtoull(name, &end, 16);
	return end == name + 16;
}

uint64_t shipr_next_seq(const char *dir, uint64_t after)
{
	DIR *dp = opendir(dir);
	struct dirent *e;
	uint64_t best = UINT64_MAX, seq;

	if (!dp)
		return UINT64_MAX;
	while ((e = readdir(dp)))
		if (seg_name(e->d_name, &seq) && (after == UINT64_MAX || seq > after) && seq < best)
			best = seq;
	closedir(dp);
	return best;
}

uint64_t shipr_bytes_from(const char *dir, uint64_t from)
{
	DIR *dp = opendir(dir);
	struct dirent *e;
	uint64_t sum = 0, seq;
	char path[1100];
	struct stat st;

	if (!dp)
		return 0;
	while ((e = readdir(dp)))
		if (seg_name(e->d_name, &seq) && seq >= from) {
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			if (stat(path, &st) == 0)
				sum += (uint64_t)st.st_size;
		}
	closedir(dp);
	return sum;
}
