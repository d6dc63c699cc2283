/* tests/fuzz/fuzz-segment.c - the segment reader and record decoder on
 * arbitrary file bytes, as `ringlog read` meets a damaged or forged file:
 * open, walk every chunk, decode every record and every field value. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "decode.h"

static int on_event(void *ctx, const struct ringlog_dec_event *e)
{
	uint64_t *sum = ctx;

	for (unsigned i = 0; e->desc && i < e->desc->nfields; i++) {
		const struct ringlog_value *v = &e->values[i];

		*sum += v->u + v->len;
		for (uint32_t k = 0; v->data && k < v->len; k++)
			*sum += v->data[k];
	}
	*sum += e->provider ? (uint8_t)e->provider[0] : 0;
	return 0;
}

static void on_loss(void *ctx, const struct ringlog_dec_loss *l)
{
	*(uint64_t *)ctx += l->records;
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	static int fd = -1;
	char path[64];
	struct ringlog_seg_file f;
	struct ringlog_seg_clock clk;
	struct ringlog_decoder dec;
	struct ringlog_dedup dd = { 0 };
	const char *why;
	uint64_t sum = 0;

	if (fd < 0 && (fd = memfd_create("fuzz-segment", 0)) < 0)
		abort();
	if (ftruncate(fd, 0) < 0 || pwrite(fd, d, n, 0) != (ssize_t)n)
		abort();
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (ringlog_seg_open(&f, path, &why) < 0)
		return 0;
	ringlog_seg_clock_of(&f.hdr, &clk);
	ringlog_dec_init(&dec, &clk);
	dec.dedup = &dd;
	dec.ctx = &sum;
	dec.on_event = on_event;
	dec.on_loss = on_loss;
	while (ringlog_seg_next(&f, false) == 1)
		ringlog_dec_records(&dec, f.body, f.chunk.body_len);
	ringlog_dec_free(&dec);
	ringlog_dedup_free(&dd);
	ringlog_seg_close(&f);
	return 0;
}
