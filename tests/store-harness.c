/* tests/store-harness.c - see store-harness.h. */
#define _GNU_SOURCE
#include "store-harness.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <sys/mman.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "decode.h"
#include "ingest/drain.h"
#include "store/file.h"
#include "store/io-ops.h"

#define RING_DATA (1u << 20)
#define EVENT_ID 1
#define ALARM_ID 2
#define PROVIDER_ID 1

static void (*h_cfg)(struct ringlog_config *c);

/* Event id with one u64 field "n" at level, named name (4 bytes). */
static uint32_t event_entry(uint8_t *e, uint16_t id, uint8_t level, const char *name)
{
	struct ringlog_meta_entry *h = (void *)e;
	struct ringlog_meta_event *ev = (void *)(e + sizeof(*h));
	struct ringlog_meta_field *f;
	size_t off = sizeof(*h) + sizeof(*ev);

	*h = (struct ringlog_meta_entry){ .kind = RINGLOG_META_EVENT, .id = id };
	*ev = (struct ringlog_meta_event){ .keyword = 1, .provider = PROVIDER_ID, .level = level,
					   .nfields = 1, .name_len = 4 };
	memcpy(e + off, name, 4);
	off += 4;
	f = (void *)(e + off);
	*f = (struct ringlog_meta_field){ .type = RINGLOG_TYPE_U64, .name_len = 1 };
	off += sizeof(*f);
	e[off++] = 'n';
	h->len = (uint32_t)ringlog_align_up8(off);
	return h->len;
}

/* The writer's metadata: provider "Test.Store", events "Tick" (info) and
 * "Alrm" (error) with one u64 field "n", as a program's library would have
 * declared them. */
static void add_meta(struct client *c)
{
	uint8_t e[128] = { 0 }, p[RINGLOG_META_PROVIDER_ENTRY_MAX];
	const char *why = NULL;
	uint32_t plen = ringlog_meta_provider_entry(p, PROVIDER_ID, "Test.Store"), len;

	ringlog_meta_init(&c->meta);
	cr_assert_gt(ringlog_meta_add(&c->meta, p, plen, &why), 0, "provider entry: %s", why);
	len = event_entry(e, EVENT_ID, 4, "Tick");
	cr_assert_gt(ringlog_meta_add(&c->meta, e, len, &why), 0, "event entry: %s", why);
	memset(e, 0, sizeof(e));
	len = event_entry(e, ALARM_ID, 2, "Alrm");
	cr_assert_gt(ringlog_meta_add(&c->meta, e, len, &why), 0, "event entry: %s", why);
}

/* Room for its rings' RELEASED handles, as reg_ring_add() makes it. */
static void reserve_released(struct client *c)
{
	c->released_cap = c->nrings + 16;
	c->released = realloc(c->released, c->released_cap * sizeof(*c->released));
	cr_assert(c->released);
}

static void add_writer(struct harness *h)
{
	struct client *c = calloc(1, sizeof(*c));
	struct ring *r = calloc(1, sizeof(*r));

	cr_assert(c && r);
	c->d = h->d;
	c->writer = true;
	c->id = ++h->d->next_writer_id;
	c->pid = (uint32_t)getpid();
	snprintf(c->comm, sizeof(c->comm), "test-store");
	add_meta(c);
	h->mem_size = RINGLOG_RING_HEADER_SIZE + RING_DATA;
	/* mapped as the daemon maps a ring: the drain unmaps a finished one */
	h->mem = mmap(NULL, h->mem_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert(h->mem != MAP_FAILED);
	cr_assert_eq(ringlog_prod_init(&h->p, h->mem, RING_DATA, c->pid, (uint32_t)gettid(),
				       d_now(CLOCK_MONOTONIC)), 0);
	cr_assert_eq(ringlog_cons_attach(&r->cons, h->mem, h->mem_size), 0);
	r->cons.defer = true; /* space goes back once stored, as registry.c sets */
	r->c = c;
	r->id = ++h->d->next_stream_id;
	r->tid = (uint32_t)gettid();
	r->ring_id = r->cons.hdr->created_ns;
	r->mem = h->mem;
	r->map_size = h->mem_size;
	c->rings = r;
	c->nrings = 1;
	reserve_released(c);
	h->d->clients = c;
	h->d->nclients = 1;
	h->c = c;
	h->r = r;
}

void h_add_ring(struct harness *h, struct h_ring *x)
{
	struct ring *r = calloc(1, sizeof(*r));
	size_t size = RINGLOG_RING_HEADER_SIZE + RING_DATA;
	void *mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	cr_assert(r && mem != MAP_FAILED);
	cr_assert_eq(ringlog_prod_init(&x->p, mem, RING_DATA, h->c->pid, (uint32_t)gettid() + 1,
				       d_now(CLOCK_MONOTONIC)), 0);
	cr_assert_eq(ringlog_cons_attach(&r->cons, mem, size), 0);
	r->cons.defer = true;
	r->c = h->c;
	r->id = ++h->d->next_stream_id;
	r->tid = (uint32_t)gettid() + 1;
	r->ring_id = r->cons.hdr->created_ns;
	r->mem = mem;
	r->map_size = size;
	r->next = h->c->rings;
	h->c->rings = r;
	h->c->nrings++;
	reserve_released(h->c);
	x->r = r;
}

/* The store is opened as lifecycle.c opens it, with nothing of a daemon;
 * the daemon struct is only the drain's (its clients and their rings). */
static void start_store(struct harness *h)
{
	struct daemon *d = calloc(1, sizeof(*d));
	struct store_params p = { .dir = h->dir, .io_name = io_pool_ops.name, .clock = &h->clock,
				  .sinks = &h->sinks };

	cr_assert(d);
	h->d = d;
	ringlog_config_defaults(&h->cfg);
	snprintf(h->cfg.storage_dir, sizeof(h->cfg.storage_dir), "%s", h->dir);
	h->cfg.max_disk = 64u << 20;
	h->cfg.max_segment_size = 1u << 20;
	h->cfg.min_free_bytes = 0;
	h->cfg.min_free_percent = 0;
	/* sync rounds (durable.c) come with the loop's turns below, as the
	 * daemon's flush timer brings them */
	h->cfg.sync_interval_ns = 10000000;
	if (h_cfg)
		h_cfg(&h->cfg);
	h->loop = calloc(1, sizeof(*h->loop));
	cr_assert(h->loop && uv_loop_init(h->loop) == 0);
	d->loop = h->loop; /* the drain's clock (uv_now) for idle rings */
	clock_calibrate_start(&h->clock);
	h->io = p.io = io_pool_ops.open(h->loop);
	cr_assert(h->io, "thread pool backend: %s", strerror(errno));
	h->st = store_open(&p, &h->cfg);
	cr_assert(h->st, "store_open on %s: %s", h->dir, strerror(errno));
	d->st = h->st;
	add_writer(h);
}

void h_start(struct harness *h, void (*cfg)(struct ringlog_config *c))
{
	memset(h, 0, sizeof(*h));
	snprintf(h->dir, sizeof(h->dir), "/tmp/ringlog-store-XXXXXX");
	cr_assert(mkdtemp(h->dir));
	h_cfg = cfg;
	start_store(h);
}

/* Chunk writes, and (seals) a rotated segment's seal (its header and sync
 * go through the backend too) and the sync rounds' syncs */
static bool writes_in_flight(const struct store *st, bool seals)
{
	for (unsigned i = 0; i < st->nchunks; i++)
		if (st->chunks[i].busy)
			return true;
	return seals && (st->finalizing != 0 || st->syncing != 0);
}

static void run_loop_until(struct harness *h, bool drain, bool seals)
{
	/* Settled twice in a row, a drain between: a completion handled by the
	 * last uv_run may have made the room a pass retries into (a pending
	 * report, ovl_retry()) */
	int quiet = 0;

	for (int i = 0; i < 20000; i++) {
		if (drain)
			drain_all(h->d);
		store_sync_tick(h->st);
		/* waiting for every seal, as the daemon's shutdown does: a
		 * segment rotated meanwhile is not left for a round an
		 * interval away */
		if (seals)
			store_sync_soon(h->st);
		uv_run(h->loop, UV_RUN_NOWAIT);
		if ((!drain || !h->r || !ringlog_cons_pending(&h->r->cons)) &&
		    !writes_in_flight(h->st, seals)) {
			if (!drain || ++quiet == 2)
				return;
			continue;
		}
		quiet = 0;
		usleep(500);
	}
	cr_assert_fail("the store did not settle in 10 s");
}

static void run_loop(struct harness *h, bool drain)
{
	run_loop_until(h, drain, true);
}

void h_pump_chunks(struct harness *h)
{
	run_loop_until(h, true, false);
}

void h_pump(struct harness *h)
{
	run_loop(h, true);
}

void h_flush(struct harness *h)
{
	run_loop(h, true);
	store_seal(h->st);
	run_loop(h, false);
}

static unsigned emit(struct harness *h, uint16_t id, unsigned n)
{
	unsigned took = 0;

	for (unsigned i = 0; i < n; i++) {
		uint64_t payload[2] = { d_now(CLOCK_MONOTONIC), h->next_value };

		if (ringlog_prod_write(&h->p, RINGLOG_REC_EVENT, id, payload, sizeof(payload)))
			break;
		h->next_value++;
		took++;
	}
	return took;
}

unsigned h_emit(struct harness *h, unsigned n)
{
	return emit(h, EVENT_ID, n);
}

unsigned h_emit_alarm(struct harness *h, unsigned n)
{
	return emit(h, ALARM_ID, n);
}

void h_finish_ring(struct harness *h)
{
	ringlog_prod_finish(&h->p);
	for (int i = 0; i < 20000 && h->c->rings; i++) {
		drain_all(h->d);
		uv_run(h->loop, UV_RUN_NOWAIT);
		if (h->c->rings)
			usleep(500);
	}
	cr_assert_null(h->c->rings, "the finished ring was not released in 10 s");
	h->r = NULL;
}

unsigned h_fill(struct harness *h, unsigned rounds, unsigned per_round)
{
	unsigned total = 0;

	for (unsigned i = 0; i < rounds; i++) {
		total += h_emit(h, per_round);
		h_pump(h);
	}
	h_flush(h);
	return total;
}

void h_stop(struct harness *h)
{
	struct daemon *d = h->d;

	if (!d)
		return;
	h_flush(h);
	store_stop(h->st); /* as lifecycle.c stops: seals in place */
	h->io->ops->close(h->io);
	uv_run(h->loop, UV_RUN_DEFAULT);
	store_close(h->st);
	h->st = NULL;
	if (h->c) { /* else freed by the drain, gone */
		/* h_add_ring()'s not released by the drain */
		for (struct ring *r = h->c->rings, *n; r; r = n) {
			n = r->next;
			if (r == h->r)
				continue;
			free(r->store.pend);
			if (r->mem)
				munmap(r->mem, r->map_size);
			free(r);
		}
		ringlog_meta_free(&h->c->meta);
		free(h->c->store.route);
		free(h->c->spent);
		free(h->c->ovl_pending);
		free(h->c->released);
		free(h->c->tx.buf); /* frames for a writer with no connection */
		free(h->c);
	}
	if (h->r) { /* else released by the drain (h_finish_ring()) */
		free(h->r->store.pend);
		free(h->r);
		munmap(h->mem, h->mem_size);
	}
	cr_assert_eq(uv_loop_close(h->loop), 0);
	free(h->loop);
	drain_free(d); /* what its passes kept */
	free(d);
	h->d = NULL;
}

void h_restart(struct harness *h)
{
	h_stop(h);
	h->next_value = 0;
	start_store(h);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)flag;
	(void)f;
	return remove(path);
}

void h_cleanup(struct harness *h)
{
	h_stop(h);
	nftw(h->dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void count_damage(void *ctx, const char *path, uint64_t from, uint64_t to, const char *why)
{
	(void)path;
	(void)from;
	(void)to;
	(void)why;
	(*(uint64_t *)ctx)++;
}

static void count_loss(void *ctx, const struct ringlog_dec_loss *l)
{
	struct h_disk *r = ctx;

	if (l->reason == RINGLOG_LOSS_RATE && l->event && !strcmp(l->event, "Tick"))
		r->rate_lost_tick += l->records;
	else
		r->lost_other += l->records;
}

struct h_disk h_read_disk(const struct harness *h)
{
	struct h_disk r = { .first_seq = UINT64_MAX };
	DIR *dir = opendir(h->dir);
	struct dirent *e;

	cr_assert(dir);
	while ((e = readdir(dir))) {
		struct ringlog_seg_file f;
		struct ringlog_decoder dec;
		struct ringlog_seg_clock clk;
		unsigned long long seq;
		char path[sizeof(h->dir) + 300];
		const char *why;

		if (sscanf(e->d_name, "%16llx.rlseg", &seq) != 1)
			continue;
		snprintf(path, sizeof(path), "%s/%s", h->dir, e->d_name);
		cr_assert_eq(ringlog_seg_open(&f, path, &why), 0, "%s: %s", path, why);
		f.ctx = &r.damaged;
		f.on_damage = count_damage;
		if (f.hdr_ok && f.hdr.class_name[0])
			r.class_segments++;
		ringlog_seg_clock_of(&f.hdr, &clk);
		ringlog_dec_init(&dec, &clk);
		dec.ctx = &r;
		dec.on_loss = count_loss;
		while (ringlog_seg_next(&f, false) == 1) {
			ringlog_dec_records(&dec, f.body, f.chunk.body_len);
			r.chunks++;
			r.events += f.chunk.events;
			if (f.hdr_ok && f.hdr.class_name[0])
				r.class_events += f.chunk.events;
		}
		ringlog_dec_free(&dec);
		ringlog_seg_close(&f);
		r.segments++;
		if (seq < r.first_seq)
			r.first_seq = seq;
		if (seq > r.last_seq)
			r.last_seq = seq;
	}
	closedir(dir);
	return r;
}
