/* daemon/ingest/operate.c - what an operator changes or asks at run time over the
 * tool channel (proto/ctl.h): enablement rules (`ringlog enable` and
 * `disable`), the providers and events running programs declared
 * (`ringlog list`), deleting old segments now (`ringlog vacuum`; the
 * store expires max_retention itself). Every frame here needs read access
 * (ctl.c's frame_needs()): a non-reader is refused with the group named.
 *
 * A run-time rule is a provider glob with a level (0: off) and keywords.
 * It comes before the configuration's rules (registry.c's rule_kw()), the
 * newest first; a rule for the same glob replaces the older one. Rules
 * last until SIGHUP (the configuration is read again and applies alone) or
 * a restart: what `lttng enable-event` does for a session, not an edit of
 * the file.
 */
#define _GNU_SOURCE
#include "daemon.h"
#include "clock.h"
#include "log.h"
#include "ingest/client.h"
#include "ingest/operate.h"
#include "ingest/registry.h"

#include <errno.h>
#ifdef _WIN32
#include "compat-win.h" /* fnmatch */
#else
#include <fnmatch.h>
#endif
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define OP_RULES_MAX 256

struct op_rule {
	struct op_rule *next;
	char *pattern;
	unsigned level;      /* 0: disabled */
	unsigned flight_level; /* kept in the flight buffer up to it; 0: as configured */
	uint64_t keywords;
	uint64_t set_ns;     /* CLOCK_REALTIME */
	uint32_t uid, pid;   /* who set it */
};

static void rule_free(struct op_rule *r)
{
	free(r->pattern);
	free(r);
}

bool op_rule_kw(const struct daemon *d, const char *name, uint64_t kw[8])
{
	for (const struct op_rule *r = d->op_rules; r; r = r->next) {
		if (fnmatch(r->pattern, name, 0))
			continue;
		for (unsigned l = 0; l < 8; l++)
			kw[l] = l >= 1 && l <= r->level ? r->keywords : 0;
		return true;
	}
	return false;
}

unsigned op_rule_flight(const struct daemon *d, const char *name, unsigned *level, uint64_t *keywords)
{
	for (const struct op_rule *r = d->op_rules; r; r = r->next) {
		if (fnmatch(r->pattern, name, 0))
			continue;
		*level = r->level;
		*keywords = r->keywords;
		return r->flight_level;
	}
	return 0;
}

json_t *op_status(const struct daemon *d)
{
	json_t *a = json_array();
	char kw[24];

	for (const struct op_rule *r = d->op_rules; r; r = r->next) {
		snprintf(kw, sizeof(kw), "0x%llx", (unsigned long long)r->keywords);
		json_array_append_new(a, json_pack("{s:s,s:i,s:s,s:I,s:I,s:I}", "provider", r->pattern,
			"level", (int)r->level, "keywords", kw, "set_ns", (json_int_t)r->set_ns,
			"uid", (json_int_t)r->uid, "pid", (json_int_t)r->pid));
		if (r->flight_level)
			json_object_set_new(json_array_get(a, json_array_size(a) - 1), "flight_level",
					    json_integer(r->flight_level));
	}
	return a;
}

void op_reset(struct daemon *d)
{
	unsigned n = 0;

	while (d->op_rules) {
		struct op_rule *r = d->op_rules;

		d->op_rules = r->next;
		rule_free(r);
		n++;
	}
	if (n)
		d_log(LOG_NOTICE, "%u run-time enablement rule%s dropped: the configuration applies "
		      "alone again", n, n == 1 ? "" : "s");
}

void op_free(struct daemon *d)
{
	while (d->op_rules) {
		struct op_rule *r = d->op_rules;

		d->op_rules = r->next;
		rule_free(r);
	}
}

/* The request as one JSON object, or NULL with the tool told why. */
static json_t *request(struct client *c, const uint8_t *p, uint32_t len, const char *what)
{
	json_error_t jerr;
	json_t *j = json_loadb((const char *)p, len, 0, &jerr);
	char why[160];

	c->tool = true;
	if (j && json_is_object(j))
		return j;
	json_decref(j);
	snprintf(why, sizeof(why), "%s request must be one JSON object", what);
	tool_error(c, why);
	return NULL;
}

static int reply(struct client *c, uint16_t type, json_t *j)
{
	char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
	int err;

	json_decref(j);
	if (!s)
		return -ENOMEM;
	if (strlen(s) > RINGLOG_CTL_MAX) {
		/* A reader refuses frames past the limit: say so instead. */
		tool_error(c, "the answer is larger than a control frame (1 MiB); narrow it with a "
			   "provider glob");
		free(s);
		return 0;
	}
	err = client_send(c, type, s, (uint32_t)strlen(s));
	free(s);
	return err;
}

/* ENABLE_SET {"provider":GLOB, "level":0..5, "keywords":"0xHEX"} or
 * {"provider":GLOB, "reset":true}: answered with the rule and the running
 * providers it reaches now. */
int op_enable_set(struct client *c, const uint8_t *p, uint32_t len)
{
	struct daemon *d = c->d;
	json_t *j = request(c, p, len, "ENABLE_SET"), *v, *matched;
	const char *pattern;
	struct op_rule *r, **pp;
	uint64_t keywords = UINT64_MAX;
	json_int_t level = 5, flight = 0;
	bool reset;
	unsigned n = 0, dropped = 0;
	char *end;

	if (!j)
		return 0;
	pattern = json_string_value(json_object_get(j, "provider"));
	reset = json_is_true(json_object_get(j, "reset"));
	if (!pattern || !*pattern || strlen(pattern) >= RINGLOG_PROVIDER_NAME_MAX) {
		tool_error(c, "ENABLE_SET: \"provider\" must be a provider name or glob of 1 to 127 "
			   "bytes");
		goto out;
	}
	if ((v = json_object_get(j, "level"))) {
		level = json_is_integer(v) ? json_integer_value(v) : -1;
		if (level < 0 || level > 5) {
			tool_error(c, "ENABLE_SET: \"level\" must be 0 (off) to 5 (verbose)");
			goto out;
		}
	}
	if ((v = json_object_get(j, "flight_level"))) {
		flight = json_is_integer(v) ? json_integer_value(v) : -1;
		if (flight < 0 || flight > 5) {
			tool_error(c, "ENABLE_SET: \"flight_level\" must be 0 (as configured) to 5 (verbose)");
			goto out;
		}
	}
	if ((v = json_object_get(j, "keywords"))) {
		const char *s = json_string_value(v);

		errno = 0;
		keywords = s ? strtoull(s, &end, 0) : 0;
		if (!s || !*s || *end || errno) {
			tool_error(c, "ENABLE_SET: \"keywords\" must be a mask as a string, like \"0x3\"");
			goto out;
		}
	}
	for (pp = &d->op_rules; *pp;) {
		r = *pp;
		if (!strcmp(r->pattern, pattern)) {
			*pp = r->next;
			rule_free(r);
			dropped++;
			continue;
		}
		pp = &r->next;
		n++;
	}
	if (!reset) {
		if (n >= OP_RULES_MAX) {
			tool_error(c, "ENABLE_SET: 256 run-time rules are in force already; drop some "
				   "(ringlog enable --reset GLOB) or put them in the configuration");
			goto out;
		}
		if (!(r = calloc(1, sizeof(*r))) || !(r->pattern = strdup(pattern))) {
			free(r);
			json_decref(j);
			return -ENOMEM;
		}
		r->level = (unsigned)level;
		r->flight_level = (unsigned)flight;
		r->keywords = keywords;
		r->set_ns = d_now(CLOCK_REALTIME);
		r->uid = c->uid;
		r->pid = c->pid;
		r->next = d->op_rules;
		d->op_rules = r;
	}
	d_log(LOG_NOTICE, "pid %u (%s, uid %u): %s provider %s%s%s", c->pid, c->comm, c->uid,
	      reset ? "run-time rule dropped for" : level ? "enabled" : "disabled", pattern,
	      !reset && level ? " up to level " : "", !reset && level ? ringlog_level_name((unsigned)level) : "");
	/* Providers' masks, tails and tracers on top, then ENABLE to every
	 * running program whose masks changed (registry.c's send_enable()). */
	reg_enable_recompute(d);
	matched = json_array();
	for (struct provider *q = d->providers; q; q = q->next)
		if (!fnmatch(pattern, q->name, 0))
			json_array_append_new(matched, json_string(q->name));
	{
		char kw[24];

		json_t *ans;

		snprintf(kw, sizeof(kw), "0x%llx", (unsigned long long)keywords);
		/* pattern lives in j: pack first */
		ans = json_pack("{s:s,s:b,s:i,s:s,s:o,s:i}", "provider", pattern, "reset", reset, "level",
				(int)level, "keywords", kw, "matched", matched, "replaced", (int)dropped);
		json_decref(j);
		return reply(c, RINGLOG_CTL_ENABLE_SET, ans);
	}
out:
	json_decref(j);
	return 0;
}

static json_t *fields_json(const struct ringlog_event_desc *e)
{
	json_t *a = json_array();

	for (unsigned i = 0; i < e->nfields; i++) {
		const struct ringlog_field_desc *f = &e->fields[i];

		json_array_append_new(a, json_pack("{s:s,s:s,s:s}", "name", f->name, "type",
			ringlog_type_name(f->type), "format", ringlog_format_name(f->format)));
	}
	return a;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(json_string_value(json_object_get(*(json_t *const *)a, "name")),
		      json_string_value(json_object_get(*(json_t *const *)b, "name")));
}

/* LIST {"provider":GLOB (optional)}: {"providers":[{"name", "enabled_level",
 * "programs":[{"pid","comm"}], "events":[{"name","level","keyword","opcode",
 * "fields":[{"name","type","format"}]}]}]}, by name. An event declared alike
 * by several programs is listed once. */
int op_list(struct client *c, const uint8_t *p, uint32_t len)
{
	struct daemon *d = c->d;
	json_t *j = request(c, p, len, "LIST"), *byname, *v, *out;
	const char *glob, *key;
	json_t **sorted;
	size_t n = 0, i;

	if (!j)
		return 0;
	glob = json_string_value(json_object_get(j, "provider"));
	byname = json_object();
	for (struct client *x = d->clients; x; x = x->next) {
		if (!x->writer || x->gone)
			continue;
		for (uint32_t id = 1; id < x->meta.nprov; id++) {
			const char *name = x->meta.providers[id];
			json_t *pr;

			if (!name || (glob && fnmatch(glob, name, 0)))
				continue;
			if (!(pr = json_object_get(byname, name))) {
				struct provider *q = id < x->nprov ? x->prov[id] : NULL;
				unsigned lvl = 0;

				for (unsigned l = 1; q && l <= 5; l++)
					if (q->kw[l])
						lvl = l;
				pr = json_pack("{s:s,s:i,s:[],s:[]}", "name", name, "enabled_level", (int)lvl,
					       "programs", "events");
				json_object_set_new(byname, name, pr);
			}
			json_array_append_new(json_object_get(pr, "programs"), json_pack("{s:I,s:s}",
				"pid", (json_int_t)x->pid, "comm", x->comm));
		}
		for (uint32_t id = 1; id < x->meta.nev; id++) {
			const struct ringlog_event_desc *e = x->meta.events[id];
			const char *pname = e ? ringlog_meta_provider(&x->meta, e->provider) : NULL;
			json_t *evs, *ev, *w;
			char kw[24];
			bool seen = false;

			if (!pname || !(evs = json_object_get(json_object_get(byname, pname), "events")))
				continue;
			snprintf(kw, sizeof(kw), "0x%llx", (unsigned long long)e->keyword);
			ev = json_pack("{s:s,s:s,s:s,s:s,s:o}", "name", e->name, "level",
				       ringlog_level_name(e->level), "keyword", kw, "opcode",
				       ringlog_opcode_name(e->opcode), "fields", fields_json(e));
			/* O(events of the provider): lists are read by people. */
			json_array_foreach(evs, i, w)
				if (json_equal(w, ev)) {
					seen = true;
					break;
				}
			if (seen)
				json_decref(ev);
			else
				json_array_append_new(evs, ev);
		}
	}
	sorted = calloc(json_object_size(byname) + 1, sizeof(*sorted));
	if (!sorted) {
		json_decref(byname);
		json_decref(j);
		return -ENOMEM;
	}
	json_object_foreach(byname, key, v)
		sorted[n++] = v;
	qsort(sorted, n, sizeof(*sorted), by_name);
	out = json_array();
	for (i = 0; i < n; i++) {
		json_t *evs = json_object_get(sorted[i], "events");
		size_t ne = json_array_size(evs);
		json_t **e = calloc(ne + 1, sizeof(*e));

		if (e) {
			for (size_t k = 0; k < ne; k++)
				e[k] = json_incref(json_array_get(evs, k));
			qsort(e, ne, sizeof(*e), by_name);
			json_array_clear(evs);
			for (size_t k = 0; k < ne; k++)
				json_array_append_new(evs, e[k]);
			free(e);
		}
		json_array_append(out, sorted[i]);
	}
	free(sorted);
	json_decref(byname);
	json_decref(j);
	return reply(c, RINGLOG_CTL_LIST, json_pack("{s:o}", "providers", out));
}

struct vac {
	json_t *deleted;
	uint64_t bytes;
};

static void vac_one(void *ctx, const struct segfile *s)
{
	struct vac *v = ctx;

	v->bytes += s->bytes;
	if (v->deleted)
		json_array_append_new(v->deleted, json_pack("{s:s,s:I,s:I,s:I,s:I}", "path", s->path,
			"bytes", (json_int_t)s->bytes, "events", (json_int_t)s->events,
			"first_ns", (json_int_t)s->first_real_ns, "last_ns", (json_int_t)s->last_real_ns));
}

/* VACUUM {"size":BYTES, "age_ns":NS} (either or both): delete sealed
 * segments now, as ret_vacuum() does; answered with what went and what
 * the store holds after. */
int op_vacuum(struct client *c, const uint8_t *p, uint32_t len)
{
	struct daemon *d = c->d;
	json_t *j = request(c, p, len, "VACUUM"), *size, *age;
	struct vac v = { 0 };
	uint64_t keep = UINT64_MAX, before = 0, now = d_now(CLOCK_REALTIME);
	unsigned n, left = 0;

	if (!j)
		return 0;
	size = json_object_get(j, "size");
	age = json_object_get(j, "age_ns");
	if ((size && (!json_is_integer(size) || json_integer_value(size) < 0)) ||
	    (age && (!json_is_integer(age) || json_integer_value(age) < 0)) || (!size && !age)) {
		tool_error(c, "VACUUM: give \"size\" (bytes to keep) or \"age_ns\" (nanoseconds), "
			   "non-negative integers");
		json_decref(j);
		return 0;
	}
	if (size)
		keep = (uint64_t)json_integer_value(size);
	if (age)
		before = (uint64_t)json_integer_value(age) < now ? now - (uint64_t)json_integer_value(age) : 1;
	json_decref(j);
	v.deleted = json_array();
	n = ret_vacuum(d->st, keep, before, vac_one, &v);
	for (struct segfile *s = d->st->segs; s; s = s->next)
		left++;
	if (n)
		d_log(LOG_NOTICE, "pid %u (%s, uid %u): vacuum deleted %u segments (%llu bytes); %u left, "
		      "%llu bytes", c->pid, c->comm, c->uid, n, (unsigned long long)v.bytes, left,
		      (unsigned long long)d->st->used_bytes);
	return reply(c, RINGLOG_CTL_VACUUM, json_pack("{s:o,s:I,s:I,s:I,s:s,s:I}", "deleted", v.deleted,
		"freed_bytes", (json_int_t)v.bytes, "used_bytes", (json_int_t)d->st->used_bytes,
		"segments", (json_int_t)left, "storage_dir", d->cfg.storage_dir,
		"current", (json_int_t)(d->st->cur ? d->st->cur->seq : 0)));
}
