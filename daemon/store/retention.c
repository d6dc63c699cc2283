/* daemon/store/retention.c - the segment index and the global disk budget.
 *
 * All segments form one circular log: when the next chunk would not fit
 * under max_disk, or would leave less than min_free on the filesystem, the
 * oldest segments are deleted first. The segment being written counts, and
 * the check runs before every chunk write, so usage never exceeds the
 * budget by more than one chunk (in practice not at all). The index lives
 * in memory: status and tail never rescan the directory.
 *
 * The budget is here whole: store_configure() derives every size from the
 * configuration (the one place that reads its settings), store_seg_limit()
 * sizes a new segment, ret_make_room() enforces the rest per chunk.
 */
#define _GNU_SOURCE
#include "store/store.h"
#include "log.h"
#include "store/file.h"
#include "seg-summary.h"

#include <dirent.h>
#include <errno.h>
#ifdef _WIN32
#include "compat-win.h" /* fnmatch */
#else
#include <fnmatch.h>
#endif
#include <inttypes.h>
#include <time.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "decode.h"

void ret_add(struct store *st, struct segfile *s)
{
	struct segfile **pp = &st->segs;

	while (*pp && (*pp)->seq < s->seq)
		pp = &(*pp)->next;
	s->next = *pp;
	*pp = s;
	st->used_bytes += s->bytes;
}

/* Chunk buffers, and so the largest chunk: 2 MiB, one huge page each
 * where the system gives them (file_large()). Issue 23: storing 45 M
 * events from one thread at 45 M/s, the daemon took a median of 24.5 ticks
 * with 2 MiB chunks against 28 with 1 MiB, in 8 alternating runs (the
 * kernel's share halves: one write in two), and 26.5 with 4 MiB (a pool of
 * 32 MiB no longer stays in the cache). A chunk is written when full or
 * half a flush interval after it opened, whichever is first, so a larger
 * one keeps nothing longer at low rates; the cost is 8 MiB more memory. */
#define CHUNK_BUF_MAX (2u << 20)

/* Every size from the configuration, at start and at every reload: the
 * one place that reads the budget's settings. Chunks are no larger than
 * the buffers (chunk_alloc, fixed at start: CHUNK_BUF_MAX at most). */
void store_configure(struct store *st, const struct ringlog_config *cfg)
{
	struct store_budget *b = &st->budget;
	size_t max = b->chunk_alloc ? b->chunk_alloc : CHUNK_BUF_MAX;
	/* Each retention class writes a segment of its own beside the
	 * default's: sized from a share of the budget each, so that every
	 * lane's open segment together stays a quarter of it. Sized from the
	 * whole budget, 4 classes and the default at 5M could hold 6.25M
	 * open at once, over max_disk, and the budget closed other classes'
	 * segments early to delete them. */
	uint64_t lanes = (uint64_t)cfg->n_classes + 1;
	uint64_t cs;

	/* Flight recorder snapshots take their share of the one budget
	 * (config.c checks it leaves the segments room). */
	b->max_disk = cfg->max_disk - (cfg->flight.size ? cfg->flight.max_disk : 0);
	b->min_free_bytes = cfg->min_free_bytes;
	b->min_free_percent = cfg->min_free_percent;
	b->max_age_ns = cfg->max_segment_age_ns;
	/* Half the flush interval: a chunk sealed then is on disk within it. */
	b->seal_after_ns = cfg->flush_interval_ns / 2;
	b->sync_interval_ns = cfg->sync_interval_ns;
	b->max_retention_ns = cfg->max_retention_ns;
	cs = cfg->max_segment_size / 8;
	if (cs > b->max_disk / 16 / lanes)
		cs = b->max_disk / 16 / lanes;
	/* Chunks: large enough to amortise a write, small enough that a crash
	 * or a tight budget loses little. */
	if (cs > max)
		cs = max;
	if (cs < (64u << 10))
		cs = 64u << 10;
	b->chunk_size = ringlog_align_up(cs, RINGLOG_SEG_ALIGN);
	if (b->chunk_size > max)
		b->chunk_size = max;
	if (!b->chunk_alloc)
		b->chunk_alloc = b->chunk_size;
	/* Several segments under the budget, so the oldest can go while the
	 * newest fills: at most a quarter of max_disk each (of its share
	 * with classes). */
	b->seg_max = cfg->max_segment_size;
	if (b->seg_max > b->max_disk / 4 / lanes)
		b->seg_max = b->max_disk / 4 / lanes;
	if (b->seg_max < 2 * b->chunk_size + RINGLOG_SEG_HEADER_SIZE)
		b->seg_max = 2 * b->chunk_size + RINGLOG_SEG_HEADER_SIZE;
}

/* The room the store really has: max_disk, or less when the filesystem's
 * free space above min_free and what the store takes are less. */
static uint64_t real_room(const struct store *st)
{
	uint64_t fs_free, floor, room = st->budget.max_disk;

	ret_fs_room(st, &fs_free, &floor);
	if (fs_free != UINT64_MAX) {
		/* at or below the floor, the room is what the store takes */
		uint64_t fs_room = st->used_bytes + fs_free > floor ? st->used_bytes + fs_free - floor : 0;

		if (fs_room < room)
			room = fs_room;
	}
	return room;
}

/* Lanes that may each hold an open chunk and segment (store_configure()). */
static uint64_t lanes_of(const struct store *st)
{
	return st->nlanes ? st->nlanes : 1;
}

/* A new chunk's size: the budget's, or an eighth of the real room (of a
 * lane's share of it) when that is less (at least 64 KiB), so that a
 * segment of two chunks is a quarter of it. With the budget's 2 MiB
 * chunks on a filesystem with ~400 KB to spare, no chunk could ever be
 * written: every event was dropped (counted), however old segments were
 * deleted (an outsider's test on a small tmpfs). */
static size_t chunk_limit_in(const struct store *st, uint64_t room)
{
	uint64_t cap = room / 8 / lanes_of(st) & ~(uint64_t)(RINGLOG_SEG_ALIGN - 1);

	if (cap < (64u << 10))
		cap = 64u << 10;
	return cap < st->budget.chunk_size ? (size_t)cap : st->budget.chunk_size;
}

size_t store_chunk_limit(const struct store *st)
{
	return chunk_limit_in(st, real_room(st));
}

/* How large the segment opened now may grow: seg_max, and at most a
 * quarter of a lane's share of the space the store may really take
 * (max_disk, or what the filesystem has above min_free, whichever is
 * less). A min_free that
 * leaves less than max_segment_size would otherwise let one segment take
 * all the room, with nothing older to delete to make more. One look at the
 * filesystem serves both limits. */
uint64_t store_seg_limit(const struct store *st)
{
	const struct store_budget *b = &st->budget;
	uint64_t room = real_room(st);
	uint64_t lim = b->seg_max, least = 2 * chunk_limit_in(st, room) + RINGLOG_SEG_HEADER_SIZE;

	if (room / 4 / lanes_of(st) < lim)
		lim = room / 4 / lanes_of(st);
	return lim < least ? least : lim;
}

/* One look at the filesystem gives both figures: a statvfs per chunk
 * sealed, not one for each. */
void ret_fs_room(const struct store *st, uint64_t *fs_free, uint64_t *floor)
{
	const struct store_budget *b = &st->budget;
	uint64_t avail = 0, total = 0;
	bool known = st->space(st->dir, &avail, &total) == 0;

	/* what the writes in flight will take is not free any more, though the
	 * filesystem may not count it yet: a small one filled while several
	 * chunks were on their way ("short write", an outsider's test) */
	*fs_free = !known ? UINT64_MAX : avail > st->inflight_bytes ? avail - st->inflight_bytes : 0;
	if (b->min_free_bytes || !b->min_free_percent)
		*floor = b->min_free_bytes;
	else
		*floor = known ? total / 100 * b->min_free_percent : 0;
}

uint64_t ret_fs_free(const struct store *st)
{
	uint64_t fs_free, floor;

	ret_fs_room(st, &fs_free, &floor);
	return fs_free;
}

uint64_t ret_min_free(const struct store *st)
{
	uint64_t fs_free, floor;

	ret_fs_room(st, &fs_free, &floor);
	return floor;
}

/* ------------------------------------------------------------------------
 * Retention classes (config "retention"; FORMAT.md "Retention classes")
 */

unsigned ret_lane_of(const struct store *st, const char *name)
{
	for (unsigned k = 1; name[0] && k < st->nlanes; k++)
		if (!strcmp(st->lanes[k].name, name))
			return k;
	return 0;
}

/* First match in config order. Level 0 (ETW's "log always") is taken as
 * critical: it is never less important than anything. */
unsigned ret_classify(const struct store *st, const char *prov, unsigned level)
{
	if (!level)
		level = 1;
	for (unsigned k = 1; k < st->nlanes; k++) {
		const struct ringlog_config_class *c = st->lanes[k].cls;
		bool any = !c->n_providers;

		if (level < c->level_min || level > c->level_max)
			continue;
		for (unsigned i = 0; !any && prov && i < c->n_providers; i++)
			any = !fnmatch(c->providers[i], prov, 0);
		if (any)
			return k;
	}
	return 0;
}

int ret_classes(struct store *st, const struct ringlog_config *cfg)
{
	bool same = st->nlanes == cfg->n_classes + 1;

	for (unsigned i = 0; same && i < cfg->n_classes; i++)
		same = !strcmp(st->lanes[i + 1].name, cfg->classes[i].name);
	/* a chunk built for a lane's segment still open: not now */
	if (!same && !store_idle_open(st))
		return -EAGAIN;
	if (!same && st->nlanes) {
		/* Closed in every lane: each reopens, under its new lane, on its
		 * next record. */
		for (unsigned k = 0; k < st->nlanes; k++)
			store_close_lane(st, k);
		st->cur = NULL;
		/* sealed by the caller: empty chunks left open go back */
		if (st->open)
			st->open->opened = false;
		st->open = NULL;
		st->active = 0;
		/* new generations, from the one counter: lane 0 must not take
		 * the old active lane's (lower) one, which writers' lane-0
		 * marks may hold from before */
		store_new_gen(st);
		for (unsigned k = 0; k < STORE_LANES; k++) {
			st->lanes[k].gen = ++st->gen_next;
			if (st->lanes[k].open)
				st->lanes[k].open->opened = false;
			st->lanes[k].open = NULL;
			st->lanes[k].cur = NULL;
			st->lanes[k].evicted = st->lanes[k].evicted_bytes = st->lanes[k].forced = 0;
			st->lanes[k].last_why[0] = 0;
		}
	}
	memcpy(st->classes, cfg->classes, sizeof(st->classes));
	st->nlanes = cfg->n_classes + 1;
	st->lanes[0].name[0] = 0;
	st->lanes[0].cls = NULL;
	st->lanes[0].share_bytes = 0;
	st->lanes[0].min_age_ns = 0;
	for (unsigned i = 0; i < cfg->n_classes; i++) {
		struct store_lane *l = &st->lanes[i + 1];

		snprintf(l->name, sizeof(l->name), "%s", cfg->classes[i].name);
		l->cls = &st->classes[i];
		l->share_bytes = st->budget.max_disk / 100 * cfg->classes[i].min_share_percent;
		l->min_age_ns = cfg->classes[i].min_age_ns;
	}
	st->route_gen++; /* globs and levels may have changed with the names */
	if (!same)
		for (struct segfile *s = st->segs; s; s = s->next)
			s->lane = ret_lane_of(st, s->cls);
	return !same && st->segs;
}

/* Remember why the budget took s: `ringlog status` shows it. */
static void note_eviction(struct store *st, const struct segfile *s, const char *why, bool forced)
{
	struct store_lane *l = &st->lanes[s->lane < st->nlanes ? s->lane : 0];
	struct store_eviction *e = &st->evictions[st->nevictions++ % STORE_EVICT_LOG];

	l->evicted++;
	l->evicted_bytes += s->bytes;
	l->forced += forced;
	snprintf(l->last_why, sizeof(l->last_why), "%s", why);
	*e = (struct store_eviction){ .seq = s->seq, .bytes = s->bytes, .lane = s->lane,
				      .first_real_ns = s->first_real_ns,
				      .last_real_ns = s->last_real_ns };
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	e->at_real_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	snprintf(e->why, sizeof(e->why), "%s", why);
}

/* Take s out of the index (wherever it is) and delete its file. */
static void delete_seg(struct store *st, struct segfile *s)
{
	int err;

	if (st->deleting)
		st->deleting(st->ctx, s);
	for (struct segfile **pp = &st->segs; *pp; pp = &(*pp)->next)
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	st->used_bytes -= s->bytes;
	if ((err = file_remove(s->path)) < 0)
		d_log(LOG_ERR, "cannot delete segment %s: %s", s->path, strerror(-err));
	free(s->path);
	file_aligned_free(s->hdr);
	free(s);
}

static void delete_oldest(struct store *st, const char *need)
{
	char why[200];

	snprintf(why, sizeof(why), "%s: the oldest segment (one class)", need);
	note_eviction(st, st->segs, why, false);
	delete_seg(st, st->segs);
}

/* With retention classes: delete the oldest segment of the class most
 * over its min_share, among classes over their share whose oldest
 * segment is older than their min_age; failing any, of the class most over
 * its share whatever protects it ("forced": the budget is hard). The
 * segment being written of the lane being filled is never taken here
 * (ret_make_room() rotates it); another lane's is closed first. Returns 1
 * when one went, 0 when nothing can go now (*wait: once writes complete). */
static int evict_by_class(struct store *st, const char *need, bool *wait, bool *rotate)
{
	uint64_t used[STORE_LANES] = { 0 }, now;
	struct segfile *old[STORE_LANES] = { NULL };
	struct timespec ts;
	int best = -1;
	int64_t best_over = 0;
	bool forced = false;
	char why[200];

	clock_gettime(CLOCK_REALTIME, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	/* O(segments) per segment deleted: only when over budget. */
	for (struct segfile *s = st->segs; s; s = s->next) {
		unsigned k = s->lane < st->nlanes ? s->lane : 0;

		used[k] += s->bytes;
		if (!old[k] && s != st->cur)
			old[k] = s;
	}
	*wait = *rotate = false;
	for (int pass = 0; pass < 2 && best < 0 && !*wait; pass++) {
		/* Before rotating or forcing: a class's oldest segment still
		 * being written (a protected class's rotated one, which pass 0
		 * skipped) is waited for, as one lane's always was; rotating
		 * beside it let each lane write a chunk over max_disk. */
		for (unsigned k = 0; pass == 1 && k < st->nlanes; k++)
			if (old[k] && old[k]->inflight) {
				*wait = true;
				return 0;
			}
		/* Before forcing a protected class: the segment being written,
		 * when its class is over its share, goes as the last chunk's
		 * rotation (the circular log eats its tail). */
		if (pass == 1 && st->cur && st->cur->chunks &&
		    used[st->active] > st->lanes[st->active].share_bytes) {
			*rotate = true;
			return 0;
		}
		for (unsigned k = 0; k < st->nlanes; k++) {
			const struct store_lane *l = &st->lanes[k];
			struct segfile *s = old[k];
			int64_t over = (int64_t)used[k] - (int64_t)l->share_bytes;
			bool young = l->min_age_ns && s && s->last_real_ns &&
				     s->last_real_ns + l->min_age_ns > now;

			if (!s || (pass == 0 && (over <= 0 || young)))
				continue;
			/* another lane's segment being written, with a chunk built
			 * for it still open: it goes once that is sealed (the tick) */
			if (s->current && l->open && l->open->len)
				continue;
			if (s->inflight) {
				*wait = true;
				continue;
			}
			if (best < 0 || over > best_over) {
				best = (int)k;
				best_over = over;
			}
		}
		forced = pass == 1;
	}
	if (best < 0)
		return 0;
	struct segfile *s = old[best];
	const struct store_lane *l = &st->lanes[best];

	if (forced)
		snprintf(why, sizeof(why), "%s, forced: every class is within its min_share or "
			 "min_age; class %s held %" PRIu64 " bytes (min_share %" PRIu64 ")", need,
			 l->name[0] ? l->name : "default", used[best], l->share_bytes);
	else
		snprintf(why, sizeof(why), "%s: class %s was the most over its min_share (%" PRIu64
			 " bytes held, %" PRIu64 " its share)", need, l->name[0] ? l->name : "default",
			 used[best], l->share_bytes);
	if (forced && !st->forced_logged)
		d_log(LOG_WARNING, "storage_dir %s: %s; raise max_disk or lower the classes' "
		      "min_share or min_age", st->dir, why);
	st->forced_logged = forced;
	if (s->current) {
		store_close_lane(st, (unsigned)best);
		if (s->inflight) { /* its last writes land first */
			*wait = true;
			return 0;
		}
	}
	note_eviction(st, s, why, forced);
	delete_seg(st, s);
	return 1;
}

/* May s (not being written), chosen to go, go now: sealed, nothing in
 * flight? One that only waits for its sync round goes without it. */
static bool settled(struct store *st, struct segfile *s)
{
	return (!s->inflight || store_sync_drop(st, s)) && s->closed;
}

/* `ringlog vacuum` and max_retention: only sealed segments go (closed:
 * seg_finalize() wrote their header and no write is in flight; one only
 * waiting for its sync round goes without it), never the
 * one being written, so the index and the files stay in step. Size first,
 * oldest first, counting the segment being written as the budget does;
 * then every sealed segment whose newest event is older than before_ns
 * (a segment without events, loss records only, has no time of its own:
 * its last_real_ns is 0, so any age limit takes it). */
unsigned ret_vacuum(struct store *st, uint64_t keep_bytes, uint64_t before_ns,
		    void (*each)(void *ctx, const struct segfile *s), void *ctx)
{
	unsigned n = 0;

	for (struct segfile *s = st->segs, *next; s && st->used_bytes > keep_bytes; s = next) {
		next = s->next;
		if (s->current || (st->keep && st->keep(st->ctx, s)) || !settled(st, s))
			continue;
		if (each)
			each(ctx, s);
		delete_seg(st, s);
		n++;
	}
	for (struct segfile *s = before_ns ? st->segs : NULL, *next; s; s = next) {
		next = s->next;
		if (s->current || s->last_real_ns >= before_ns ||
		    (st->keep && st->keep(st->ctx, s)) || !settled(st, s))
			continue;
		if (each)
			each(ctx, s);
		delete_seg(st, s);
		n++;
	}
	return n;
}

static bool disk_ok_with_one_chunk(const struct store *st, uint64_t fs_free, uint64_t min_free)
{
	/* The filesystem floor is hard: never write into the last min_free. */
	return fs_free >= st->budget.chunk_size && fs_free - st->budget.chunk_size >= min_free;
}

enum store_room ret_make_room(struct store *st, uint64_t bytes)
{
	for (;;) {
		struct segfile *s = st->segs;
		uint64_t fs_free, min_free;
		bool disk_ok, fs_ok;

		ret_fs_room(st, &fs_free, &min_free);
		disk_ok = st->used_bytes + bytes <= st->budget.max_disk;
		fs_ok = fs_free >= bytes && fs_free - bytes >= min_free;
		st->full_by_budget = !disk_ok && fs_ok; /* what a ROOM_FULL below is for */

		if (disk_ok && fs_ok)
			return ROOM_OK;
		if (!s)
			return ROOM_FULL;
		if (st->nlanes > 1) {
			bool wait, rotate;

			if (evict_by_class(st, disk_ok ? "min_free" : "max_disk", &wait, &rotate))
				continue;
			if (wait)
				return ROOM_WAIT;
			s = st->cur; /* all that is left: the segment being written */
			if (!s)
				return ROOM_FULL;
		}
		if (s->current) {
			/* Only the segment being written is left. The chunk
			 * at hand was built for it, so it goes there (one chunk
			 * over), and the caller closes the segment so that it
			 * is the next to go: the circular log eats its tail. */
			if (!s->chunks || !disk_ok_with_one_chunk(st, fs_free, min_free)) {
				st->full_by_budget = !s->chunks && st->full_by_budget;
				return ROOM_FULL;
			}
			return ROOM_ROTATE;
		}
		if (!settled(st, s))
			return ROOM_WAIT;
		delete_oldest(st, disk_ok ? "min_free" : "max_disk");
	}
}

/* Seal a crashed daemon's segment with the totals of the scan, so that
 * readers and the next startup see a closed segment (flagged RECOVERED)
 * instead of rescanning it every time. */
static void seal_recovered(const char *path, const struct ringlog_seg_hdr *old,
			   const struct segfile *s, uint64_t end)
{
	struct ringlog_seg_hdr h = *old;
	int fd = file_open_existing(path), err = fd < 0 ? fd : 0;

	h.state = RINGLOG_SEG_CLOSED;
	h.compat_flags |= RINGLOG_SEG_RECOVERED;
	h.first_real_ns = s->first_real_ns;
	h.last_real_ns = s->last_real_ns;
	h.events = s->events;
	h.lost = s->lost;
	h.chunks = s->chunks;
	h.end = end;
	h.hdr_crc = ringlog_seg_hdr_crc(&h);
	if (!err && !(err = file_pwrite(fd, &h, sizeof(h), 0)))
		err = file_sync(fd);
	if (err)
		d_log(LOG_ERR, "segment %s: could not seal it: %s (it stays readable)", path, strerror(-err));
	if (fd >= 0)
		file_close(fd);
}

/* A segment the index does not know yet (startup): read its header, and
 * walk the chunk headers of one that a crash left ONLINE. */
static void scan_one(struct store *st, const char *path, uint64_t seq)
{
	struct ringlog_seg_file f;
	struct ringlog_seg_summary sum;
	struct segfile *s;
	const char *why;
	int err = ringlog_seg_open(&f, path, &why);

	if (err < 0) {
		d_log(LOG_WARNING, "segment %s ignored: %s", path, why ? why : strerror(-err));
		return;
	}
	if (f.warning[0]) /* a forged or damaged header field, and what readers do */
		d_log(LOG_WARNING, "segment %s: %s", path, f.warning);
	s = calloc(1, sizeof(*s));
	if (!s || !(s->path = strdup(path))) {
		free(s);
		ringlog_seg_close(&f);
		return;
	}
	s->seq = seq;
	s->bytes = f.size;
	s->closed = true;
	/* ringlog_seg_open() read a name the format does not allow as the
	 * default class's (a forger recomputes hdr_crc); a name no class has:
	 * the default's too */
	if (f.hdr_ok)
		memcpy(s->cls, f.hdr.class_name, sizeof(s->cls) - 1);
	s->lane = ret_lane_of(st, s->cls);
	s->fd = -1;
	ringlog_seg_summarize(&f, &sum);
	s->first_real_ns = sum.first_real_ns;
	s->last_real_ns = sum.last_real_ns;
	s->events = sum.events;
	s->lost = sum.lost;
	s->chunks = sum.chunks;
	if (!sum.from_header) {
		d_log(LOG_WARNING, "segment %s was not closed cleanly (crash?): %llu chunks readable; sealed now",
		      path, (unsigned long long)s->chunks);
		if (f.hdr_ok)
			seal_recovered(path, &f.hdr, s, sum.end);
	}
	ringlog_seg_close(&f);
	ret_add(st, s);
	if (seq >= st->next_seq)
		st->next_seq = seq + 1;
}

int ret_scan(struct store *st)
{
	DIR *dir = opendir(st->dir);
	struct dirent *e;
	int err;

	if (!dir) {
		err = -errno;
		d_log(LOG_ERR, "cannot read storage_dir %s: %s", st->dir, strerror(errno));
		return err;
	}
	while ((e = readdir(dir))) {
		char path[RINGLOG_CONFIG_PATH_MAX + 300];
		unsigned long long seq;
		int n = 0;

		if (sscanf(e->d_name, "%16llx.rlseg%n", &seq, &n) != 1 ||
		    n != (int)strlen(e->d_name) || strlen(e->d_name) != 22)
			continue;
		snprintf(path, sizeof(path), "%s/%s", st->dir, e->d_name);
		scan_one(st, path, seq);
	}
	closedir(dir);
	/* A directory already over budget is trimmed before any event. */
	if (ret_make_room(st, 0) != ROOM_OK && st->segs)
		d_log(LOG_ERR, "storage_dir %s: still over budget after deleting old segments", st->dir);
	return 0;
}
