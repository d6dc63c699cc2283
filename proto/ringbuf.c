/* proto/ringbuf.c - slow paths of the producer, and the hostile-input
 * consumer. The ABI and the reasoning behind it are in ring.h.
 */
#include "ringbuf.h"

#include <errno.h>
#include <string.h>

/* ------------------------------------------------------------------------
 * Producer
 */

static bool is_valid_data_size(uint64_t size)
{
	return size >= RINGLOG_RING_MIN_DATA && size <= RINGLOG_RING_MAX_DATA &&
	       (size & (size - 1)) == 0;
}

static bool loss_pending(const struct ringlog_producer *p)
{
	return p->lost_records != p->reported_records;
}

/* Recompute the fast path's bound from p->pos. Valid until p->pos moves
 * past it, which sends the next reservation back here. */
static void set_limit(struct ringlog_producer *p)
{
	uint64_t lap_end = (p->pos | p->mask) + 1;
	/* The shed reserve comes off the fast path's room, so that the fast
	 * path stays one compare: only the slow path looks at levels. */
	uint64_t room_end = p->cached_cons + p->size - p->reserve;
	uint64_t lim = lap_end < room_end ? lap_end : room_end;

	if (loss_pending(p))
		p->limit = p->pos;
	else
		p->limit = lim < p->wake_check ? lim : p->wake_check;
}

/* Pairs with the release store of cons_pos in publish(). A value that is
 * behind what we already saw, or ahead of what we wrote, is a consumer bug;
 * ignoring it keeps us from overwriting data that was never consumed. */
static void refresh_cons(struct ringlog_producer *p)
{
	uint64_t c = __atomic_load_n(&p->hdr->cons_pos, __ATOMIC_ACQUIRE);

	if (c >= p->cached_cons && c <= p->pos)
		p->cached_cons = c;
}

/* The consumer's shedding parameters (ring.h), with the wake check, about
 * once per wake_bytes written (and so before the ring can first be half
 * full): a daemon's reload reaches running rings without a load of the
 * consumer's line on every drop. The reserve is clamped to half the ring
 * so that a bogus value cannot starve every level. */
static void load_shed(struct ringlog_producer *p)
{
	uint64_t r = __atomic_load_n(&p->hdr->shed_reserve, __ATOMIC_RELAXED);

	p->reserve = r < p->size / 2 ? r & ~(uint64_t)(RINGLOG_REC_ALIGN - 1) : p->size / 2;
	p->shed_level = __atomic_load_n(&p->hdr->shed_level, __ATOMIC_RELAXED);
}

/* The high-water wakeup (ring.h: consumer_flags, wake_bytes). Reached from
 * the slow path about once per wake_bytes written, so the fast path never
 * reads the consumer's cache line: with the consumer at least that far
 * behind and asleep, ask the caller to wake it. Then look again wake_bytes
 * later, whether it woke or not. */
static void check_wake(struct ringlog_producer *p)
{
	uint32_t wb = __atomic_load_n(&p->hdr->wake_bytes, __ATOMIC_RELAXED);
	uint64_t step = wb && wb <= p->size ? wb : p->size / 2;

	refresh_cons(p);
	load_shed(p);
	if (wb && p->pos - p->cached_cons >= wb &&
	    (__atomic_load_n(&p->hdr->consumer_flags, __ATOMIC_ACQUIRE) & RINGLOG_CONS_SLEEPING))
		p->wake = 1;
	p->wake_check = (p->cached_cons + step > p->pos ? p->cached_cons : p->pos) + step;
}

/* Bytes a record of total bytes needs at p->pos: itself, plus the PAD up to
 * the end of the data area when it would cross it. */
static uint64_t need_at(const struct ringlog_producer *p, uint64_t total)
{
	uint64_t tail = p->size - (p->pos & p->mask);

	return total <= tail ? total : tail + total;
}

/* Whether need bytes fit at p->pos with keep bytes left free after them. */
static bool fits(struct ringlog_producer *p, uint64_t need, uint64_t keep)
{
	if (p->pos + need + keep - p->cached_cons > p->size) {
		refresh_cons(p);
		if (p->pos + need + keep - p->cached_cons > p->size)
			return false;
	}
	return true;
}

/* Make room for a record of total bytes at p->pos: if it would cross the end
 * of the data area, publish a PAD record up to the end first. Returns false,
 * writing nothing, when the ring cannot take PAD + record now. */
static bool place(struct ringlog_producer *p, uint64_t total)
{
	uint64_t tail = p->size - (p->pos & p->mask);

	if (!fits(p, need_at(p, total), 0))
		return false;
	if (total > tail) {
		struct ringlog_rec_hdr pad = {
			.len = (uint32_t)(tail - RINGLOG_REC_HDR_SIZE),
			.type = RINGLOG_REC_PAD,
		};
		memcpy(p->data + (p->pos & p->mask), &pad, sizeof(pad));
		p->next = p->pos + tail;
		ringlog_prod_commit(p);
	}
	return true;
}

/* Write and publish the LOSS record for everything dropped since the last
 * one. Published on its own so that an abandoned reservation behind it can
 * never take the loss report with it. */
static bool write_loss(struct ringlog_producer *p)
{
	/* The long form only for a consumer that said it parses it (ring.h);
	 * read here, once per gap, never on the fast path. */
	uint32_t caps = __atomic_load_n(&p->hdr->consumer_caps, __ATOMIC_RELAXED);
	struct ringlog_rec_hdr h = {
		.len = caps & RINGLOG_CONS_LOSS_LVL ? sizeof(struct ringlog_rec_loss_lvl)
		     : caps & RINGLOG_CONS_LOSS_EXT ? sizeof(struct ringlog_rec_loss_ext)
		     : sizeof(struct ringlog_rec_loss),
		.type = RINGLOG_REC_LOSS,
		.aux = p->gap_aux,
	};
	struct ringlog_rec_loss_lvl loss;
	uint8_t *rec;

	/* Tried again at every drop while the ring is full: fail before
	 * building anything. */
	if (!place(p, ringlog_rec_total(h.len)))
		return false;
	loss.x.l.records = p->lost_records - p->reported_records;
	loss.x.l.bytes = p->lost_bytes - p->reported_bytes;
	loss.x.l.total_records = p->lost_records;
	loss.x.l.total_bytes = p->lost_bytes;
	loss.x.first_ts = p->gap_ts;
	for (unsigned i = 0; i < RINGLOG_LOSS_LEVELS; i++)
		loss.by_level[i] = p->lost_level[i] - p->reported_level[i];
	rec = p->data + (p->pos & p->mask);
	memcpy(rec, &h, sizeof(h));
	memcpy(rec + sizeof(h), &loss, h.len);
	p->next = p->pos + ringlog_rec_total(h.len);
	ringlog_prod_commit(p);
	p->reported_records = p->lost_records;
	p->reported_bytes = p->lost_bytes;
	memcpy(p->reported_level, p->lost_level, sizeof(p->lost_level));
	p->gap_ts = 0;
	p->gap_aux = 0;
	return true;
}

/* Inside the shed reserve, a record kept there goes first and the pending
 * LOSS record waits for room outside it: reporting the gap before each
 * kept record would spend the reserve on LOSS records (one per kept record
 * while a flood of shed ones lasts). The LOSS record still says when its
 * gap began (first_ts), which is where readers place it. */
static bool defer_loss(struct ringlog_producer *p, uint64_t total)
{
	/* The longest form: close enough, and no load of consumer_caps. */
	uint64_t lt = ringlog_rec_total(sizeof(struct ringlog_rec_loss_lvl));

	return p->reserve && !fits(p, need_at(p, lt) + total, p->reserve);
}

static inline void drop(struct ringlog_producer *p, uint32_t len)
{
	unsigned l = p->level & (RINGLOG_LOSS_LEVELS - 1);

	p->lost_records++;
	p->lost_bytes += len;
	p->lost_level[l]++; /* to the header when the ring finishes */
	/* Relaxed: the consumer reads the totals only after an acquire of
	 * state (ringlog_cons_done) or of prod_pos, both stored later. */
	__atomic_store_n(&p->hdr->lost_records_total, p->lost_records, __ATOMIC_RELAXED);
	__atomic_store_n(&p->hdr->lost_bytes_total, p->lost_bytes, __ATOMIC_RELAXED);
	set_limit(p);
}

void ringlog_prod_drop(struct ringlog_producer *p, uint32_t len)
{
	drop(p, len);
}

/* One function with the drop path below: the slow path runs at every
 * drop of a full ring, where a call more shows. */
static inline void *try_reserve(struct ringlog_producer *p, uint32_t len, uint16_t type,
				uint16_t aux)
{
	uint64_t total = ringlog_rec_total(len);
	uint8_t *rec;

	if (len > p->max_len)
		return NULL; /* refused: the caller bounds its payloads */
	if (p->pos + total > p->wake_check)
		check_wake(p);
	/* Shed: a record of a less important level may not take the last
	 * reserve bytes, which stay for those at or below shed_level. */
	if (p->reserve && p->level > p->shed_level && !fits(p, need_at(p, total), p->reserve))
		return NULL; /* the caller sets the limit (after counting the drop) */
	if (loss_pending(p)) {
		if (defer_loss(p, total)) {
			/* Only a record kept in the reserve goes before its gap's
			 * LOSS record. A sheddable one that fits outside the
			 * reserve alone but not with the LOSS record is shed:
			 * written first, it would stand before the report of a
			 * gap that began earlier and goes on after it (a reader
			 * then counts the gap's later drops in the wrong place). */
			if (p->level > p->shed_level)
				return NULL;
		} else if (!write_loss(p)) {
			return NULL;
		}
	}
	if (!place(p, total))
		return NULL;
	set_limit(p);
	rec = p->data + (p->pos & p->mask);
	struct ringlog_rec_hdr h = { .len = len, .type = type, .aux = aux };
	memcpy(rec, &h, sizeof(h));
	p->next = p->pos + total;
	return rec + RINGLOG_REC_HDR_SIZE;
}

void *ringlog_prod_try(struct ringlog_producer *p, uint32_t len, uint16_t type, uint16_t aux)
{
	void *rec = try_reserve(p, len, type, aux);

	if (!rec)
		set_limit(p);
	return rec;
}

void *ringlog__prod_slow(struct ringlog_producer *p, uint32_t len,
			 uint16_t type, uint16_t aux)
{
	void *rec = try_reserve(p, len, type, aux);

	if (!rec && len <= p->max_len)
		drop(p, len); /* and sets the limit */
	return rec;
}

int ringlog_prod_init(struct ringlog_producer *p, void *mem, uint64_t data_size,
		      uint32_t pid, uint32_t tid, uint64_t created_ns)
{
	struct ringlog_ring_hdr *hdr = mem;

	if (!is_valid_data_size(data_size))
		return -EINVAL;
	memset(hdr, 0, sizeof(*hdr));
	hdr->magic = RINGLOG_RING_MAGIC;
	hdr->version = RINGLOG_RING_VERSION;
	hdr->header_size = RINGLOG_RING_HEADER_SIZE;
	hdr->data_size = data_size;
	hdr->pid = pid;
	hdr->tid = tid;
	hdr->created_ns = created_ns;
	hdr->state = RINGLOG_RING_ACTIVE;

	memset(p, 0, sizeof(*p));
	p->hdr = hdr;
	p->data = (uint8_t *)mem + RINGLOG_RING_HEADER_SIZE;
	p->size = data_size;
	p->mask = data_size - 1;
	p->max_len = ringlog_ring_max_len(data_size);
	p->wake_check = data_size / 2;
	hdr->compat_flags = RINGLOG_RING_LOSS_LEVELS;
	set_limit(p);
	return 0;
}

int ringlog_prod_write(struct ringlog_producer *p, uint16_t type, uint16_t aux,
		       const void *payload, uint32_t len)
{
	void *dst = ringlog_prod_reserve(p, len, type, aux);

	if (!dst)
		return len > p->max_len ? -EMSGSIZE : -ENOBUFS;
	if (len) /* payload may be NULL for an empty record */
		memcpy(dst, payload, len);
	ringlog_prod_commit(p);
	return 0;
}

int ringlog_prod_flush_loss(struct ringlog_producer *p)
{
	if (loss_pending(p) && !write_loss(p))
		return -ENOBUFS;
	set_limit(p);
	return 0;
}

void ringlog_prod_finish(struct ringlog_producer *p)
{
	/* The split by level of the totals, once, here rather than at every
	 * drop (a full ring drops at every call): a ring whose process dies
	 * without finishing leaves them behind lost_records_total, and the
	 * consumer then reports the rest without levels. */
	for (unsigned i = 0; i < RINGLOG_LOSS_LEVELS; i++)
		__atomic_store_n(&p->hdr->lost_level_total[i], p->lost_level[i], __ATOMIC_RELAXED);
	/* Pairs with the acquire load of state in ringlog_cons_done(). */
	__atomic_store_n(&p->hdr->state, RINGLOG_RING_FINISHED, __ATOMIC_RELEASE);
}

uint64_t ringlog_prod_free(struct ringlog_producer *p)
{
	refresh_cons(p);
	return p->size - (p->pos - p->cached_cons);
}

/* ------------------------------------------------------------------------
 * Consumer. Every value read from the ring is checked before it is used;
 * each record header is read with a single 64-bit load so that the producer
 * cannot change it between the check and the use.
 */

/* A per-level LOSS record's levels sum to its records, without overflow. */
static bool levels_add_up(const struct ringlog_rec_loss_lvl *l)
{
	uint64_t sum = 0;

	for (unsigned i = 0; i < RINGLOG_LOSS_LEVELS; i++) {
		if (l->by_level[i] > l->x.l.records - sum)
			return false;
		sum += l->by_level[i];
	}
	return sum == l->x.l.records;
}

static int fail(struct ringlog_consumer *c, int err, const char *why, uint64_t pos)
{
	if (!c->error) {
		c->error = err;
		c->why = why;
		c->bad_pos = pos;
	}
	return c->error;
}

/* Positions are valid when cons <= prod, at most one lap apart, and
 * record-aligned. */
static const char *check_positions(uint64_t cons, uint64_t prod, uint64_t size)
{
	if (prod < cons)
		return "producer position is behind the consumer position";
	if (prod - cons > size)
		return "producer position is more than one lap ahead";
	if ((prod | cons) & (RINGLOG_REC_ALIGN - 1))
		return "position is not 8-byte aligned";
	return NULL;
}

int ringlog_cons_attach(struct ringlog_consumer *c, void *mem, uint64_t map_size)
{
	struct ringlog_ring_hdr *hdr = mem;
	uint64_t size, cons, prod;
	const char *why;

	memset(c, 0, sizeof(*c));
	if (map_size < RINGLOG_RING_HEADER_SIZE)
		return fail(c, -EBADMSG, "mapping is smaller than the ring header", 0);
	/* Each identity field is read once into a private copy. */
	if (__atomic_load_n(&hdr->magic, __ATOMIC_RELAXED) != RINGLOG_RING_MAGIC)
		return fail(c, -EPROTO, "bad ring magic", 0);
	if (__atomic_load_n(&hdr->version, __ATOMIC_RELAXED) != RINGLOG_RING_VERSION)
		return fail(c, -EPROTO, "unknown ring version", 0);
	if (__atomic_load_n(&hdr->header_size, __ATOMIC_RELAXED) != RINGLOG_RING_HEADER_SIZE)
		return fail(c, -EPROTO, "unknown ring header size", 0);
	if (__atomic_load_n(&hdr->incompat_flags, __ATOMIC_RELAXED) != 0)
		return fail(c, -EPROTO, "unknown incompatible ring flags", 0);
	size = __atomic_load_n(&hdr->data_size, __ATOMIC_RELAXED);
	if (!is_valid_data_size(size))
		return fail(c, -EBADMSG, "data size is not a power of two within limits", 0);
	if (map_size - RINGLOG_RING_HEADER_SIZE != size)
		return fail(c, -EBADMSG, "data size does not match the mapping size", 0);

	cons = __atomic_load_n(&hdr->cons_pos, __ATOMIC_RELAXED);
	prod = __atomic_load_n(&hdr->prod_pos, __ATOMIC_ACQUIRE);
	why = check_positions(cons, prod, size);
	if (why)
		return fail(c, -EBADMSG, why, cons);

	c->hdr = hdr;
	c->data = (const uint8_t *)mem + RINGLOG_RING_HEADER_SIZE;
	c->size = size;
	c->mask = size - 1;
	c->pos = cons;
	c->published = cons;
	c->max_len = ringlog_ring_max_len(size);
	c->seen.total_records = __atomic_load_n(&hdr->loss_seen_records, __ATOMIC_RELAXED);
	c->seen.total_bytes = __atomic_load_n(&hdr->loss_seen_bytes, __ATOMIC_RELAXED);
	/* Loss reported before we came (a restarted daemon) was not split by
	 * level for us: the rest of this ring's loss cannot be either. */
	c->levels_unknown = c->seen.total_records != 0;
	__atomic_store_n(&hdr->consumer_caps, RINGLOG_CONS_LOSS_EXT | RINGLOG_CONS_LOSS_LVL,
			 __ATOMIC_RELAXED);
	return 0;
}

static void publish(struct ringlog_consumer *c, uint64_t pos, uint64_t seen_records,
		    uint64_t seen_bytes)
{
	struct ringlog_ring_hdr *hdr = c->hdr;

	c->published = pos;
	__atomic_store_n(&hdr->loss_seen_records, seen_records, __ATOMIC_RELAXED);
	__atomic_store_n(&hdr->loss_seen_bytes, seen_bytes, __ATOMIC_RELAXED);
	/* Pairs with the acquire load in refresh_cons() (producer). */
	__atomic_store_n(&hdr->cons_pos, pos, __ATOMIC_RELEASE);
}

void ringlog_cons_release(struct ringlog_consumer *c, uint64_t pos,
			  uint64_t seen_records, uint64_t seen_bytes)
{
	/* Unsigned distances: pos within [published, c->pos]. */
	if (pos - c->published <= c->pos - c->published && pos != c->published)
		publish(c, pos, seen_records, seen_bytes);
}

static bool is_known_type(uint16_t type)
{
	return type == RINGLOG_REC_LOSS ||
	       (type >= RINGLOG_REC_USER_MIN && type <= RINGLOG_REC_USER_MAX);
}

/* How many records after the one at pos (header word h, total bytes each)
 * carry the same header word, up to most: a run (ringlog_cons_run_fn).
 * Bounds were checked for the first; the caller passes in most how many
 * more fit before the data area's end, the producer position and
 * max_bytes, so only the header words are read. */
static uint32_t run_length(const struct ringlog_consumer *c, uint64_t pos, uint64_t h,
			   uint64_t total, uint64_t most)
{
	const uint8_t *p = c->data + (pos & c->mask) + total;
	uint32_t n = 0;

	while (n < most && __atomic_load_n((const uint64_t *)(const void *)p, __ATOMIC_RELAXED) == h) {
		p += total;
		n++;
	}
	return n;
}

static long drain(struct ringlog_consumer *c, size_t max_bytes, ringlog_cons_fn fn,
		  ringlog_cons_run_fn run, void *ctx)
{
	uint64_t prod, pos = c->pos;
	const char *why = NULL;
	long n = 0, ret = 0;

	if (c->error)
		return c->error;
	/* Pairs with the release store in ringlog_prod_commit(). */
	prod = __atomic_load_n(&c->hdr->prod_pos, __ATOMIC_ACQUIRE);
	if (prod == pos)
		return 0;
	why = check_positions(pos, prod, c->size);

	/* Each step advances pos by at least 8 and pos never passes prod,
	 * which is at most one lap ahead: at most size / 8 steps. */
	while (!why && pos != prod && pos - c->pos < max_bytes) {
		uint64_t off = pos & c->mask;
		uint64_t tail = c->size - off, left = prod - pos;
		uint64_t h = __atomic_load_n((const uint64_t *)(const void *)(c->data + off),
					     __ATOMIC_RELAXED);
		uint32_t len = (uint32_t)h;
		uint16_t type = (uint16_t)(h >> 32), aux = (uint16_t)(h >> 48);
		const uint8_t *payload = c->data + off + RINGLOG_REC_HDR_SIZE;
		uint64_t total;
		int r;

		/* The producer wrote these lines on another core: ask for the
		 * ones a few records ahead now, so that their transfer overlaps
		 * the work on this one. Never faults, even past prod. */
		__builtin_prefetch(c->data + ((pos + 1024) & c->mask));

		if (type == RINGLOG_REC_PAD) {
			if (len != tail - RINGLOG_REC_HDR_SIZE)
				why = "PAD record does not end at the end of the data area";
			else if (tail > left)
				why = "PAD record extends past the producer position";
			else
				pos += tail;
			continue;
		}
		total = ringlog_rec_total(len);
		if (!is_known_type(type))
			why = "unknown record type";
		else if (len > c->max_len)
			why = "record is longer than this ring allows";
		else if (total > tail)
			why = "record crosses the end of the data area";
		else if (total > left)
			why = "record extends past the producer position";
		if (why)
			break;

		if (type == RINGLOG_REC_LOSS) {
			struct ringlog_rec_loss_lvl loss = { 0 };

			if (len != sizeof(loss.x.l) && len != sizeof(loss.x) && len != sizeof(loss)) {
				why = "LOSS record has the wrong length";
				break;
			}
			memcpy(&loss, payload, len);
			if (loss.x.l.records == 0 || loss.x.l.total_records < loss.x.l.records ||
			    loss.x.l.total_bytes < loss.x.l.bytes) {
				why = "LOSS record counts are inconsistent";
				break;
			}
			if (len == sizeof(loss) && !levels_add_up(&loss)) {
				why = "LOSS record levels do not add up to its records";
				break;
			}
			c->rec_end = pos + total;
			r = fn(ctx, type, aux, (const uint8_t *)&loss, len);
			if (r == 0) {
				c->seen = loss.x.l;
				for (unsigned i = 0; i < RINGLOG_LOSS_LEVELS; i++)
					c->seen_level[i] += loss.by_level[i];
			}
		} else if (run) {
			/* The records after it with the same header word go with
			 * it: each is checked as the first was, by that compare
			 * (a ring holds at most data_size / 8 records, far below
			 * UINT32_MAX). */
			uint64_t room = tail < left ? tail : left;
			uint64_t budget = max_bytes - (pos - c->pos);
			uint64_t most = (room < budget ? room : budget) / total;
			uint32_t k = 1 + run_length(c, pos, h, total, most ? most - 1 : 0);
			long took;

			c->rec_end = pos + total;
			took = run(ctx, type, aux, payload, len, k);
			if (took < 0) {
				ret = took;
				break;
			}
			if ((uint64_t)took > k)
				took = k; /* a callback's bug must not skip records */
			pos += total * (uint64_t)took;
			n += took;
			if ((uint32_t)took < k)
				break;
			continue;
		} else {
			c->rec_end = pos + total;
			r = fn(ctx, type, aux, payload, len);
		}
		if (r != 0) {
			if (r < 0)
				ret = r;
			break;
		}
		pos += total;
		n++;
	}

	if (pos != c->pos) {
		c->pos = pos;
		if (!c->defer)
			publish(c, pos, c->seen.total_records, c->seen.total_bytes);
	}
	if (why)
		return fail(c, -EBADMSG, why, pos);
	return ret ? ret : n;
}

long ringlog_cons_drain(struct ringlog_consumer *c, size_t max_bytes,
			ringlog_cons_fn fn, void *ctx)
{
	return drain(c, max_bytes, fn, NULL, ctx);
}

long ringlog_cons_drain_runs(struct ringlog_consumer *c, size_t max_bytes,
			     ringlog_cons_fn fn, ringlog_cons_run_fn run, void *ctx)
{
	return drain(c, max_bytes, fn, run, ctx);
}

uint64_t ringlog_cons_pending(const struct ringlog_consumer *c)
{
	uint64_t prod = __atomic_load_n(&c->hdr->prod_pos, __ATOMIC_ACQUIRE);

	return check_positions(c->pos, prod, c->size) ? 0 : prod - c->pos;
}

bool ringlog_cons_done(const struct ringlog_consumer *c)
{
	/* Pairs with the release store in ringlog_prod_finish(): once we see
	 * FINISHED, prod_pos is final. */
	uint32_t state = __atomic_load_n(&c->hdr->state, __ATOMIC_ACQUIRE);

	return state == RINGLOG_RING_FINISHED &&
	       __atomic_load_n(&c->hdr->prod_pos, __ATOMIC_ACQUIRE) == c->pos;
}

struct ringlog_rec_loss ringlog_cons_pending_loss(const struct ringlog_consumer *c)
{
	struct ringlog_rec_loss l = {
		.total_records = __atomic_load_n(&c->hdr->lost_records_total, __ATOMIC_ACQUIRE),
		.total_bytes = __atomic_load_n(&c->hdr->lost_bytes_total, __ATOMIC_ACQUIRE),
	};

	if (l.total_records > c->seen.total_records)
		l.records = l.total_records - c->seen.total_records;
	if (l.total_bytes > c->seen.total_bytes)
		l.bytes = l.total_bytes - c->seen.total_bytes;
	return l;
}

void ringlog_cons_pending_levels(const struct ringlog_consumer *c,
				 uint64_t out[RINGLOG_LOSS_LEVELS])
{
	bool kept = __atomic_load_n(&c->hdr->compat_flags, __ATOMIC_RELAXED) &
		    RINGLOG_RING_LOSS_LEVELS;

	for (unsigned i = 0; i < RINGLOG_LOSS_LEVELS; i++) {
		uint64_t t = __atomic_load_n(&c->hdr->lost_level_total[i], __ATOMIC_ACQUIRE);

		out[i] = kept && !c->levels_unknown && t > c->seen_level[i] ? t - c->seen_level[i] : 0;
	}
}
