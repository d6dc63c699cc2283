/* config/config.c - JSON configuration for ringlogd (see config.h).
 *
 * jansson parses and reports syntax errors with their position, but keeps no
 * positions for values it parsed. To name the line and column of a key whose
 * value is wrong, scan_value() walks the (already valid) text once and
 * records where each key path starts. That costs one extra pass over a file
 * of a few hundred bytes, only at load time.
 */
#define _GNU_SOURCE /* getgrnam_r */
#include "config.h"
#include "segment.h" /* ringlog_seg_class_name_ok */
#include "ship-codec.h" /* RINGLOG_SHIP_ZSTD_LEVEL_MAX */

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#ifdef _WIN32
#include <windows.h>
#else
#include <grp.h>
#endif

#define MAX_ERRORS 16
#define KEY_PATH_MAX 400 /* "a/b/c/d/e": nesting in this schema is 5 deep */

/* A key's position in the text: path is "a/b/c" (jansson's decoded keys). */
struct loc {
	char path[KEY_PATH_MAX];
	size_t off;
};

struct ctx {
	const char *name, *text;
	size_t len;
	char *err;
	size_t errlen, used;
	int nerr;
	struct loc *locs;
	size_t nlocs, cap;
	struct ringlog_config *c;
	struct ringlog_config_provider *prov; /* entry being parsed in providers */
	bool ev; /* parsing prov's last "events" entry */
	struct ringlog_config_class *cls; /* entry being parsed in retention */
	bool host; /* also check names against this host (groups) */
};

/* ------------------------------------------------------------------------
 * Where keys are: a recursive walk over text jansson already accepted.
 */

static void skip_ws(const struct ctx *x, size_t *i)
{
	while (*i < x->len && strchr(" \t\r\n", x->text[*i]) && x->text[*i])
		(*i)++;
}

/* Skip a string starting at the opening quote; copy its raw contents (no
 * unescaping: keys with escapes then fall back to their parent's place). */
static void skip_string(const struct ctx *x, size_t *i, char *out, size_t outlen)
{
	size_t n = 0;

	for ((*i)++; *i < x->len && x->text[*i] != '"'; (*i)++) {
		if (x->text[*i] == '\\')
			(*i)++;
		else if (out && n + 1 < outlen)
			out[n++] = x->text[*i];
	}
	(*i)++;
	if (out)
		out[n] = '\0';
}

static void add_loc(struct ctx *x, const char *path, size_t off)
{
	if (x->nlocs == x->cap) {
		size_t cap = x->cap ? x->cap * 2 : 32;
		struct loc *l = realloc(x->locs, cap * sizeof(*l));
		if (!l)
			return; /* positions are a courtesy; errors still print */
		x->locs = l;
		x->cap = cap;
	}
	snprintf(x->locs[x->nlocs].path, sizeof(x->locs[0].path), "%s", path);
	x->locs[x->nlocs++].off = off;
}

/* Skip a whole container without recording anything, iteratively: jansson
 * accepts nesting far deeper than we want to recurse, and every step here
 * consumes input, so any text ends the loop. */
static void skip_container(const struct ctx *x, size_t *i)
{
	size_t depth = 0;

	do {
		char ch = x->text[*i];
		if (ch == '"') {
			skip_string(x, i, NULL, 0);
			continue;
		}
		if (ch == '{' || ch == '[')
			depth++;
		else if (ch == '}' || ch == ']')
			depth--;
		(*i)++;
	} while (*i < x->len && depth > 0);
}

static void scan_value(struct ctx *x, size_t *i, const char *path, int depth)
{
	char sub[KEY_PATH_MAX], key[128];

	skip_ws(x, i);
	if (*i >= x->len)
		return;
	switch (x->text[*i]) {
	case '{':
	case '[': {
		if (depth > 16) { /* no key of ours is that deep: no positions */
			skip_container(x, i);
			return;
		}
		char close = x->text[*i] == '{' ? '}' : ']';
		size_t n = 0;

		for ((*i)++;;) {
			size_t was;

			skip_ws(x, i);
			if (*i >= x->len || x->text[*i] == close) {
				(*i)++;
				return;
			}
			was = *i;
			if (close == '}') {
				size_t at = *i;
				skip_string(x, i, key, sizeof(key));
				if (snprintf(sub, sizeof(sub), "%s%s%s", path, *path ? "/" : "",
					     key) < (int)sizeof(sub))
					add_loc(x, sub, at);
				skip_ws(x, i);
				(*i)++; /* ':' */
			} else {
				/* an element is "path/N", as walk() names it */
				if (snprintf(sub, sizeof(sub), "%s/%zu", path, n++) < (int)sizeof(sub))
					add_loc(x, sub, *i);
				else
					snprintf(sub, sizeof(sub), "%s", path);
			}
			scan_value(x, i, sub, depth + 1);
			skip_ws(x, i);
			if (*i < x->len && x->text[*i] == ',')
				(*i)++;
			/* Every iteration consumes input, whatever the text: the
			 * fuzzer once hung here (the input was not kept), and a
			 * config that hangs this loop hangs the daemon at start
			 * or on SIGHUP. */
			if (*i == was)
				(*i)++;
		}
	}
	case '"':
		skip_string(x, i, NULL, 0);
		return;
	default:
		while (*i < x->len && !strchr(",}] \t\r\n", x->text[*i]))
			(*i)++;
		return;
	}
}

/* Line and column (1-based) of the key at path, or of its nearest parent. */
static void where(const struct ctx *x, const char *path, int *line, int *col)
{
	char p[KEY_PATH_MAX];
	size_t off = 0;
	bool found = false;

	snprintf(p, sizeof(p), "%s", path);
	while (!found && *p) {
		for (size_t k = 0; k < x->nlocs; k++)
			if (!strcmp(x->locs[k].path, p)) {
				off = x->locs[k].off;
				found = true;
				break;
			}
		char *slash = strrchr(p, '/');
		if (slash)
			*slash = '\0';
		else
			*p = '\0';
	}
	*line = 1;
	*col = 1;
	for (size_t k = 0; k < off && k < x->len; k++) {
		if (x->text[k] == '\n') {
			(*line)++;
			*col = 1;
		} else {
			(*col)++;
		}
	}
}

/* ------------------------------------------------------------------------
 * Errors
 */

static void report(struct ctx *x, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void report(struct ctx *x, const char *path, const char *fmt, ...)
{
	char msg[512], key[KEY_PATH_MAX];
	int line, col;
	va_list ap;

	if (x->nerr++ >= MAX_ERRORS)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(key, sizeof(key), "%s", path);
	for (char *s = key; *s; s++)
		if (*s == '/')
			*s = '.';
	where(x, path, &line, &col);
	if (x->used < x->errlen) {
		int n = snprintf(x->err + x->used, x->errlen - x->used,
				 "%sconfig: %s:%d:%d: \"%s\": %s", x->used ? "\n" : "",
				 x->name, line, col, key, msg);
		if (n > 0)
			x->used += (size_t)n;
	}
}

/* The value as JSON, shortened, for "got ..." in messages. */
static const char *repr(json_t *v, char *buf, size_t len)
{
	char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);

	snprintf(buf, len, "%s", s ? s : "?");
	if (s && strlen(s) >= len && len > 4)
		memcpy(buf + len - 4, "...", 4);
	free(s);
	return buf;
}

#define GOT(v) repr((v), (char[64]){ 0 }, 64)

/* ------------------------------------------------------------------------
 * Sizes and durations
 */

/* The leading decimal number of s; *end points past it. Rejects a sign,
 * spaces and overflow, which strtoull would quietly accept. */
static int leading_uint(const char *s, uint64_t *v, char **end)
{
	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	*v = strtoull(s, end, 10);
	return errno ? -EINVAL : 0;
}

int ringlog_parse_size(const char *s, uint64_t *out)
{
	static const char units[] = "KMGTP";
	char *end;
	uint64_t v, mul = 1;

	if (leading_uint(s, &v, &end) < 0)
		return -EINVAL;
	if (*end) {
		const char *u = strchr(units, end[0] & ~0x20);
		if (!u || !end[0])
			return -EINVAL;
		for (const char *k = units; k <= u; k++)
			mul *= 1024;
		end++;
		if ((end[0] == 'i' && (end[1] == 'B' || end[1] == 'b') && !end[2]) ||
		    ((end[0] == 'B' || end[0] == 'b') && !end[1]))
			end += strlen(end);
		if (*end)
			return -EINVAL;
	}
	if (v > UINT64_MAX / mul)
		return -EINVAL;
	*out = v * mul;
	return 0;
}

int ringlog_parse_duration(const char *s, uint64_t *out)
{
	static const struct { const char *unit; uint64_t ns; } units[] = {
		{ "ns", 1 }, { "us", 1000 }, { "ms", 1000000 }, { "s", 1000000000ull },
		{ "m", 60000000000ull }, { "h", 3600000000000ull }, { "d", 86400000000000ull },
	};
	char *end;
	uint64_t v;

	if (leading_uint(s, &v, &end) < 0)
		return -EINVAL;
	for (size_t k = 0; k < sizeof(units) / sizeof(units[0]); k++) {
		if (strcmp(end, units[k].unit))
			continue;
		if (v > UINT64_MAX / units[k].ns)
			return -EINVAL;
		*out = v * units[k].ns;
		return 0;
	}
	return -EINVAL;
}

/* ------------------------------------------------------------------------
 * Typed getters: each reports its own error and returns false.
 */

static bool get_string(struct ctx *x, const char *path, json_t *v, char *dst, size_t len,
		       const char *what)
{
	if (!json_is_string(v) || json_string_length(v) == 0) {
		report(x, path, "expected %s, got %s", what, GOT(v));
		return false;
	}
	if (json_string_length(v) >= len) {
		report(x, path, "too long (%zu bytes, at most %zu)", json_string_length(v), len - 1);
		return false;
	}
	memcpy(dst, json_string_value(v), json_string_length(v) + 1);
	return true;
}

static bool get_size(struct ctx *x, const char *path, json_t *v, uint64_t lo, uint64_t hi,
		     uint64_t *out)
{
	uint64_t n;

	if (json_is_integer(v) && json_integer_value(v) >= 0)
		n = (uint64_t)json_integer_value(v);
	else if (!json_is_string(v) || ringlog_parse_size(json_string_value(v), &n) < 0) {
		report(x, path, "expected a size like \"512M\", got %s", GOT(v));
		return false;
	}
	if (n < lo || n > hi) {
		report(x, path, "%s is out of range (%" PRIu64 " to %" PRIu64 " bytes)", GOT(v), lo, hi);
		return false;
	}
	*out = n;
	return true;
}

static bool get_duration(struct ctx *x, const char *path, json_t *v, uint64_t lo,
			 uint64_t hi, const char *range, uint64_t *out)
{
	uint64_t n;

	if (!json_is_string(v) || ringlog_parse_duration(json_string_value(v), &n) < 0) {
		report(x, path, "expected a duration like \"1s\" or \"500ms\" (%s), got %s", range,
		       GOT(v));
		return false;
	}
	if (n < lo || n > hi) {
		report(x, path, "%s is out of range (%s)", GOT(v), range);
		return false;
	}
	*out = n;
	return true;
}

static bool get_uint(struct ctx *x, const char *path, json_t *v, uint64_t lo, uint64_t hi,
		     uint32_t *out)
{
	if (!json_is_integer(v) || json_integer_value(v) < (json_int_t)lo ||
	    (uint64_t)json_integer_value(v) > hi) {
		report(x, path, "expected an integer from %" PRIu64 " to %" PRIu64 ", got %s",
		       lo, hi, GOT(v));
		return false;
	}
	*out = (uint32_t)json_integer_value(v);
	return true;
}

static bool get_bool(struct ctx *x, const char *path, json_t *v, bool *out)
{
	if (!json_is_boolean(v)) {
		report(x, path, "expected true or false, got %s", GOT(v));
		return false;
	}
	*out = json_is_true(v);
	return true;
}

static bool is_group_name(const char *s)
{
	for (; *s; s++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-", *s))
			return false;
	return true;
}

/* ------------------------------------------------------------------------
 * Keys. Each handler validates one key's value into x->c.
 */

typedef void (*key_fn)(struct ctx *x, const char *path, json_t *v);
struct key {
	const char *name;
	key_fn fn;
};

/* Walk an object, dispatching known keys and reporting unknown ones. */
static void walk(struct ctx *x, const char *path, json_t *obj, const struct key *keys,
		 size_t nkeys)
{
	const char *k;
	json_t *v;
	char sub[KEY_PATH_MAX], known[512];

	if (!json_is_object(obj)) {
		report(x, path, "expected an object { ... }, got %s", GOT(obj));
		return;
	}
	json_object_foreach(obj, k, v) {
		size_t i;

		if (snprintf(sub, sizeof(sub), "%s%s%s", path, *path ? "/" : "", k) >= (int)sizeof(sub)) {
			report(x, path, "a key in here is too long (%zu bytes)", strlen(k));
			continue;
		}
		for (i = 0; i < nkeys; i++)
			if (!strcmp(keys[i].name, k))
				break;
		if (i < nkeys) {
			keys[i].fn(x, sub, v);
			continue;
		}
		size_t n = 0;
		known[0] = '\0';
		for (size_t j = 0; j < nkeys && n < sizeof(known); j++)
			n += (size_t)snprintf(known + n, sizeof(known) - n, "%s%s", j ? ", " : "",
					      keys[j].name);
		report(x, sub, "unknown key; known keys here: %s", known);
	}
}

static void k_storage_dir(struct ctx *x, const char *p, json_t *v)
{
	get_string(x, p, v, x->c->storage_dir, sizeof(x->c->storage_dir), "a directory path");
}

static void k_socket_path(struct ctx *x, const char *p, json_t *v)
{
	get_string(x, p, v, x->c->socket_path, sizeof(x->c->socket_path), "a socket path");
}

/* Whether the group exists on this host. A lookup that fails for another
 * reason than "no such group" (NSS down) counts as existing: the daemon
 * then resolves it again at start and on SIGHUP, and a group it cannot
 * resolve grants nothing. */
static bool group_exists(const char *name)
{
#ifdef _WIN32
	BYTE sid[SECURITY_MAX_SID_SIZE];
	DWORD sid_len = sizeof(sid), dom_len;
	char domain[256];
	SID_NAME_USE use;

	dom_len = sizeof(domain);
	return LookupAccountNameA(NULL, name, sid, &sid_len, domain, &dom_len, &use) ||
	       GetLastError() != ERROR_NONE_MAPPED;
#else
	struct group g, *found = NULL;
	char buf[16384];
	int err = getgrnam_r(name, &g, buf, sizeof(buf), &found);

	return found || (err && err != ENOENT && err != ESRCH && err != EBADF && err != EPERM);
#endif
}

static void group(struct ctx *x, const char *p, json_t *v, char *dst, size_t len)
{
	char tmp[RINGLOG_CONFIG_NAME_MAX];

	if (!get_string(x, p, v, tmp, sizeof(tmp), "a group name"))
		return;
	if (!is_group_name(tmp) || strlen(tmp) > 32) {
		report(x, p, "%s is not a valid group name (letters, digits, _ . -; at most 32)", GOT(v));
		return;
	}
	/* A group that does not exist would grant nothing: with a typo in
	 * read_group nobody could read, silently. The packaged groups come
	 * from sysusers (ringlog.sysusers). */
	if (x->host && !group_exists(tmp)) {
		report(x, p, "no group %s on this host; create it (groupadd %s, or "
		       "systemd-sysusers for the packaged ones) or name an existing group",
		       GOT(v), tmp);
		return;
	}
	snprintf(dst, len, "%s", tmp);
}

static void k_socket_group(struct ctx *x, const char *p, json_t *v)
{
	group(x, p, v, x->c->socket_group, sizeof(x->c->socket_group));
}

static void k_read_group(struct ctx *x, const char *p, json_t *v)
{
	group(x, p, v, x->c->read_group, sizeof(x->c->read_group));
}

static void k_socket_mode(struct ctx *x, const char *p, json_t *v)
{
	char *end;
	unsigned long m;

	if (!json_is_string(v) || json_string_length(v) < 3 || json_string_length(v) > 4 ||
	    (m = strtoul(json_string_value(v), &end, 8), *end) || m > 0777) {
		report(x, p, "expected an octal mode string like \"0660\", got %s", GOT(v));
		return;
	}
	x->c->socket_mode = (uint32_t)m;
}

static void k_ring_size(struct ctx *x, const char *p, json_t *v)
{
	uint64_t n;

	if (!get_size(x, p, v, 4096, 1u << 30, &n))
		return;
	if (n & (n - 1)) {
		report(x, p, "%s is not a power of two; try \"256K\", \"1M\" or \"4M\"", GOT(v));
		return;
	}
	x->c->ring_size = n;
}

/* "ring_reserve": "25%": how much of each ring stays for events of
 * shed_level and above once it fills; 0..50 %. */
static void k_ring_reserve(struct ctx *x, const char *p, json_t *v)
{
	const char *s = json_string_value(v);
	char *end;
	unsigned long n;

	if (s && *s >= '0' && *s <= '9' && (n = strtoul(s, &end, 10), !strcmp(end, "%")) && n <= 50) {
		x->c->ring_reserve_percent = (uint32_t)n;
		return;
	}
	report(x, p, "expected a percentage of the ring from \"0%%\" (off) to \"50%%\", like "
		     "\"25%%\"; got %s", GOT(v));
}

static bool parse_level(json_t *v, uint8_t *out)
{
	static const char *names[] = { "critical", "error", "warning", "info", "verbose" };

	if (json_is_string(v)) {
		for (int i = 0; i < 5; i++)
			if (!strcmp(json_string_value(v), names[i])) {
				*out = (uint8_t)(i + 1);
				return true;
			}
	} else if (json_is_integer(v) && json_integer_value(v) >= 1 && json_integer_value(v) <= 5) {
		*out = (uint8_t)json_integer_value(v);
		return true;
	}
	return false;
}

/* "shed_level": events of a less important level than this are shed first. */
static void k_shed_level(struct ctx *x, const char *p, json_t *v)
{
	if (!parse_level(v, &x->c->shed_level))
		report(x, p, "expected the least important level kept in the ring's reserve: 1..5 or "
			     "critical, error, warning, info, verbose (verbose: shed nothing); got %s",
		       GOT(v));
}

static void k_flush_interval(struct ctx *x, const char *p, json_t *v)
{
	get_duration(x, p, v, 1000000ull, 3600000000000ull, "1ms to 1h", &x->c->flush_interval_ns);
}

static void k_sync_interval(struct ctx *x, const char *p, json_t *v)
{
	get_duration(x, p, v, 10000000ull, 3600000000000ull, "10ms to 1h", &x->c->sync_interval_ns);
}

static void k_max_segment_size(struct ctx *x, const char *p, json_t *v)
{
	get_size(x, p, v, 64 << 10, 1ull << 40, &x->c->max_segment_size);
}

static void k_max_segment_age(struct ctx *x, const char *p, json_t *v)
{
	get_duration(x, p, v, 1000000000ull, 366 * 86400000000000ull, "1s to 366d",
		     &x->c->max_segment_age_ns);
}

/* "off" (the default) or a duration: a segment whose newest event is older
 * goes on the daemon's tick, whatever room the budget leaves (as
 * journald's MaxRetentionSec=). */
static void k_max_retention(struct ctx *x, const char *p, json_t *v)
{
	if (json_is_string(v) && !strcmp(json_string_value(v), "off")) {
		x->c->max_retention_ns = 0;
		return;
	}
	if (!json_is_string(v) || ringlog_parse_duration(json_string_value(v), &(uint64_t){ 0 }) < 0) {
		report(x, p, "expected \"off\" or a duration like \"12h\" or \"30d\", got %s", GOT(v));
		return;
	}
	get_duration(x, p, v, 1000000000ull, 3660 * 86400000000000ull, "1s to 3660d",
		     &x->c->max_retention_ns);
}

/* The store keeps the segment being written and deletes whole segments,
 * oldest first, a chunk (at least 64 KiB) at a time: a segment is at least
 * two chunks and its header (~132 KiB), and the budget must hold the one
 * being written, one to delete and a chunk, with margin. Below this, the
 * segment being written was the whole budget: nothing could go, and new
 * data was dropped (counted) while the disk was nearly empty. */
static void k_max_disk(struct ctx *x, const char *p, json_t *v)
{
	uint64_t n = 0;

	if (!get_size(x, p, v, 0, UINT64_MAX, &n))
		return;
	if (n < RINGLOG_CONFIG_MAX_DISK_MIN) {
		report(x, p, "%s is too small: at least \"1M\" (the segment being written, "
			     "one to delete and a chunk)", GOT(v));
		return;
	}
	x->c->max_disk = n;
}

static void k_min_free(struct ctx *x, const char *p, json_t *v)
{
	const char *s = json_string_value(v);
	size_t n = s ? strlen(s) : 0;

	if (n > 1 && s[n - 1] == '%') {
		char *end;
		unsigned long pc = strtoul(s, &end, 10);
		if (*s < '0' || *s > '9' || end != s + n - 1 || pc > 99) {
			report(x, p, "expected a percentage from 0%% to 99%%, got %s", GOT(v));
			return;
		}
		x->c->min_free_percent = (uint32_t)pc;
		x->c->min_free_bytes = 0;
		return;
	}
	if (!json_is_string(v) && !json_is_integer(v)) {
		report(x, p, "expected a size like \"1G\" or a percentage like \"5%%\", got %s", GOT(v));
		return;
	}
	if (get_size(x, p, v, 0, UINT64_MAX, &x->c->min_free_bytes))
		x->c->min_free_percent = 0;
}

const char *const ringlog_io_backend_names[RINGLOG_IO_N_] = { "auto", "io_uring", "pool" };

int ringlog_io_backend_parse(const char *name)
{
	for (int i = 0; i < RINGLOG_IO_N_; i++)
		if (!strcmp(name, ringlog_io_backend_names[i]))
			return i;
	return -1;
}

static void k_io_backend(struct ctx *x, const char *p, json_t *v)
{
	int b = json_is_string(v) ? ringlog_io_backend_parse(json_string_value(v)) : -1;

	if (b >= 0) {
		x->c->io_backend = (enum ringlog_io_backend)b;
		return;
	}
	report(x, p, "expected \"auto\", \"io_uring\" or \"pool\", got %s", GOT(v));
}

/* providers: { "PATTERN": { "level": 1..5 | "critical".."verbose",
 *                           "keywords": "0xHEX" | integer } }
 * "*" sets the default for every provider no other pattern matches; a field
 * a pattern leaves out takes the built-in default (level 4, all keywords),
 * whatever the order of the entries. */

/* A level given as 1..5 or its name, reported when it is neither. */
static void get_level(struct ctx *x, const char *p, json_t *v, uint8_t *dst)
{
	uint32_t l;

	if (json_is_integer(v)) {
		if (get_uint(x, p, v, 1, 5, &l))
			*dst = (uint8_t)l;
		return;
	}
	if (!parse_level(v, dst))
		report(x, p, "expected a level 1..5 or critical, error, warning, info, verbose; got %s",
		       GOT(v));
}

static void k_level(struct ctx *x, const char *p, json_t *v)
{
	get_level(x, p, v, &x->prov->level);
}

/* Levels past "level" up to it go to the flight buffer only. */
static void k_flight_level(struct ctx *x, const char *p, json_t *v)
{
	get_level(x, p, v, &x->prov->flight_level);
}

static void k_keywords(struct ctx *x, const char *p, json_t *v)
{
	const char *s = json_string_value(v);
	char *end;

	if (json_is_integer(v) && json_integer_value(v) >= 0) {
		x->prov->keywords = (uint64_t)json_integer_value(v);
		return;
	}
	if (s && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && s[2] && strlen(s) <= 18) {
		errno = 0;
		uint64_t k = strtoull(s + 2, &end, 16);
		if (!*end && !errno) {
			x->prov->keywords = k;
			return;
		}
	}
	report(x, p, "expected a keyword mask like \"0xff\" (hex, up to 64 bits), got %s", GOT(v));
}

/* Overload policy keys, in a provider entry or one of its "events". */
static struct ringlog_config_policy *pol_of(struct ctx *x)
{
	return x->prov->n_events && x->ev ? &x->prov->events[x->prov->n_events - 1].pol
					  : &x->prov->pol;
}

int ringlog_parse_rate(const char *s, uint32_t *rate, uint32_t *period_ms)
{
	static const struct { const char *unit; uint32_t ms; } units[] = {
		{ "s", 1000 }, { "min", 60000 }, { "h", 3600000 },
	};
	char *end;
	unsigned long n;

	if (!s || *s < '1' || *s > '9')
		return -EINVAL;
	errno = 0;
	n = strtoul(s, &end, 10);
	if (errno || *end != '/' || n > 100000000ul)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(end + 1, units[i].unit)) {
			*rate = (uint32_t)n;
			*period_ms = units[i].ms;
			return 0;
		}
	return -EINVAL;
}

/* "rate": "1000/s", "50/min", "10/h" or "off". */
static void k_rate(struct ctx *x, const char *p, json_t *v)
{
	struct ringlog_config_policy *pol = pol_of(x);
	const char *s = json_string_value(v);

	if (s && !strcmp(s, "off")) {
		pol->rate = 0;
		return;
	}
	if (!ringlog_parse_rate(s, &pol->rate, &pol->period_ms)) {
		if (!pol->burst) /* a tenth of a period's worth */
			pol->burst = pol->rate / 10 ? pol->rate / 10 : 1;
		return;
	}
	report(x, p, "expected a rate like \"1000/s\", \"50/min\" or \"10/h\" (1 to 100000000 "
		     "events), or \"off\"; got %s", GOT(v));
}

static void k_burst(struct ctx *x, const char *p, json_t *v)
{
	get_uint(x, p, v, 1, 100000000, &pol_of(x)->burst);
}

/* "wait": true (1 ms), false, or a duration up to 100 ms. */
static void k_wait(struct ctx *x, const char *p, json_t *v)
{
	uint64_t ns;

	if (json_is_boolean(v)) {
		pol_of(x)->wait_us = json_is_true(v) ? 1000 : 0;
		return;
	}
	if (get_duration(x, p, v, 0, RINGLOG_CONFIG_WAIT_MAX_NS, "0 to 100ms; true means 1ms", &ns))
		pol_of(x)->wait_us = (uint32_t)(ns / 1000);
}

static void k_events(struct ctx *x, const char *p, json_t *v)
{
	static const struct key keys[] = { { "rate", k_rate }, { "burst", k_burst },
					   { "wait", k_wait } };
	const char *name;
	json_t *ev;
	char sub[KEY_PATH_MAX];

	if (!json_is_object(v)) {
		report(x, p, "expected an object of event name patterns, got %s", GOT(v));
		return;
	}
	x->prov->n_events = 0;
	json_object_foreach(v, name, ev) {
		struct ringlog_config_event *e;

		snprintf(sub, sizeof(sub), "%s/%s", p, name);
		if (!*name || strlen(name) >= RINGLOG_EVENT_PATTERN_MAX) {
			report(x, sub, "not an event name or pattern (1 to %d bytes)",
			       RINGLOG_EVENT_PATTERN_MAX - 1);
			continue;
		}
		if (x->prov->n_events == RINGLOG_CONFIG_EVENTS) {
			report(x, sub, "too many event patterns in one provider entry (at most %d)",
			       RINGLOG_CONFIG_EVENTS);
			continue;
		}
		e = &x->prov->events[x->prov->n_events++];
		memset(e, 0, sizeof(*e));
		snprintf(e->pattern, sizeof(e->pattern), "%s", name);
		x->ev = true;
		walk(x, sub, ev, keys, 3);
		x->ev = false;
	}
}

static void k_providers(struct ctx *x, const char *p, json_t *v)
{
	static const struct key keys[] = { { "level", k_level }, { "keywords", k_keywords },
					   { "rate", k_rate }, { "burst", k_burst },
					   { "wait", k_wait }, { "events", k_events },
					   { "flight_level", k_flight_level } };
	const char *name;
	json_t *pv;
	char sub[KEY_PATH_MAX];

	if (!json_is_object(v)) {
		report(x, p, "expected an object of provider patterns, got %s", GOT(v));
		return;
	}
	x->c->n_providers = 0;
	json_object_foreach(v, name, pv) {
		struct ringlog_config_provider *dst;
		snprintf(sub, sizeof(sub), "%s/%s", p, name);
		if (!*name || strlen(name) >= RINGLOG_PROVIDER_NAME_MAX ||
		    strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-*?") !=
			    strlen(name)) {
			report(x, sub, "not a provider name or pattern (letters, digits, _ . - and the "
				       "wildcards * ?; at most %d)", RINGLOG_PROVIDER_NAME_MAX - 1);
			continue;
		}
		if (!strcmp(name, "*")) {
			dst = &x->c->default_provider;
		} else if (x->c->n_providers == RINGLOG_CONFIG_PROVIDERS) {
			report(x, sub, "too many provider patterns (at most %d)", RINGLOG_CONFIG_PROVIDERS);
			continue;
		} else {
			dst = &x->c->providers[x->c->n_providers++];
			memset(dst, 0, sizeof(*dst));
			dst->level = 4;
			dst->keywords = UINT64_MAX;
		}
		snprintf(dst->pattern, sizeof(dst->pattern), "%s", name);
		x->prov = dst;
		walk(x, sub, pv, keys, 7);
	}
}

/* retention: [ { "name": "errors", "providers": ["*"], "levels": "error",
 *                "min_share": "10%", "min_age": "30d" }, ... ]
 * levels: "critical..error" (a range, most important first) or one name
 * meaning that level and every more important one ("error" is
 * critical..error, as a provider's "level"). */
static_assert(RINGLOG_CLASS_NAME_MAX == RINGLOG_SEG_CLASS_NAME_SIZE, "class_name");

static bool class_name_ok(const char *s)
{
	return ringlog_seg_class_name_ok(s, strlen(s)) && strcmp(s, "default");
}

static void k_cl_name(struct ctx *x, const char *p, json_t *v)
{
	if (!json_is_string(v) || !class_name_ok(json_string_value(v))) {
		report(x, p, "expected a class name of 1 to %d bytes of a-z, 0-9, _ and - (not "
			     "\"default\", the class of what no other takes), got %s",
		       RINGLOG_CLASS_NAME_MAX - 1, GOT(v));
		return;
	}
	snprintf(x->cls->name, sizeof(x->cls->name), "%s", json_string_value(v));
}

static bool provider_glob_ok(const char *s)
{
	size_t n = strlen(s);

	return n && n < RINGLOG_PROVIDER_NAME_MAX &&
	       strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-*?") == n;
}

static void k_cl_providers(struct ctx *x, const char *p, json_t *v)
{
	size_t i;
	json_t *g;

	if (json_is_string(v)) { /* one glob */
		if (!provider_glob_ok(json_string_value(v))) {
			report(x, p, "not a provider name or glob (letters, digits, _ . - and the "
				     "wildcards * ?; at most %d bytes): %s", RINGLOG_PROVIDER_NAME_MAX - 1, GOT(v));
			return;
		}
		snprintf(x->cls->providers[0], RINGLOG_PROVIDER_NAME_MAX, "%s", json_string_value(v));
		x->cls->n_providers = 1;
		return;
	}
	if (!json_is_array(v) || !json_array_size(v) || json_array_size(v) > RINGLOG_CLASS_PROVIDERS) {
		report(x, p, "expected a provider glob or an array of 1 to %d of them, like "
			     "[\"Acme.*\"], got %s", RINGLOG_CLASS_PROVIDERS, GOT(v));
		return;
	}
	json_array_foreach(v, i, g) {
		if (!json_is_string(g) || !provider_glob_ok(json_string_value(g))) {
			report(x, p, "entry %zu is not a provider name or glob (letters, digits, _ . - "
				     "and the wildcards * ?; at most %d bytes): %s", i,
			       RINGLOG_PROVIDER_NAME_MAX - 1, GOT(g));
			return;
		}
		snprintf(x->cls->providers[i], RINGLOG_PROVIDER_NAME_MAX, "%s", json_string_value(g));
	}
	x->cls->n_providers = (unsigned)json_array_size(v);
}

static void k_cl_levels(struct ctx *x, const char *p, json_t *v)
{
	const char *s = json_string_value(v), *dots = s ? strstr(s, "..") : NULL;
	uint8_t lo = 1, hi = 0;
	bool ok;

	if (dots) {
		char a[16] = "";
		json_t *ja, *jb;

		if ((size_t)(dots - s) < sizeof(a))
			memcpy(a, s, (size_t)(dots - s));
		ja = json_string(a);
		jb = json_string(dots + 2);
		ok = ja && jb && parse_level(ja, &lo) && parse_level(jb, &hi) && lo <= hi;
		json_decref(ja);
		json_decref(jb);
	} else {
		ok = parse_level(v, &hi);
	}
	if (!ok) {
		report(x, p, "expected a level (that level and every more important one, like "
			     "\"error\") or a range most important first, like \"critical..warning\", "
			     "of critical, error, warning, info, verbose; got %s", GOT(v));
		return;
	}
	x->cls->level_min = lo;
	x->cls->level_max = hi;
}

static void k_cl_min_share(struct ctx *x, const char *p, json_t *v)
{
	const char *s = json_string_value(v);
	size_t n = s ? strlen(s) : 0;
	char *end;
	unsigned long pc = n > 1 ? strtoul(s, &end, 10) : 0;

	if (n < 2 || s[n - 1] != '%' || *s < '0' || *s > '9' || end != s + n - 1 || pc > 100) {
		report(x, p, "expected a share of the disk budget from \"0%%\" to \"100%%\", like "
			     "\"10%%\", got %s", GOT(v));
		return;
	}
	x->cls->min_share_percent = (uint32_t)pc;
}

static void k_cl_min_age(struct ctx *x, const char *p, json_t *v)
{
	get_duration(x, p, v, 1000000000ull, 3660 * 86400000000000ull, "1s to 3660d",
		     &x->cls->min_age_ns);
}

static void k_retention(struct ctx *x, const char *p, json_t *v)
{
	static const struct key keys[] = {
		{ "name", k_cl_name }, { "providers", k_cl_providers }, { "levels", k_cl_levels },
		{ "min_share", k_cl_min_share }, { "min_age", k_cl_min_age },
	};
	char sub[KEY_PATH_MAX];
	unsigned share = 0;
	size_t i;
	json_t *cv;

	if (!json_is_array(v) || json_array_size(v) > RINGLOG_CONFIG_CLASSES) {
		report(x, p, "expected an array of at most %d retention classes like [{ \"name\": "
			     "\"errors\", \"levels\": \"error\", \"min_share\": \"10%%\" }], got %s",
		       RINGLOG_CONFIG_CLASSES, GOT(v));
		return;
	}
	x->c->n_classes = 0;
	json_array_foreach(v, i, cv) {
		struct ringlog_config_class *c = &x->c->classes[x->c->n_classes++];

		snprintf(sub, sizeof(sub), "%s/%zu", p, i);
		memset(c, 0, sizeof(*c));
		c->level_min = 1;
		c->level_max = 5;
		x->cls = c;
		walk(x, sub, cv, keys, sizeof(keys) / sizeof(keys[0]));
		x->cls = NULL;
		if (json_is_object(cv) && !json_object_get(cv, "name"))
			report(x, sub, "a retention class needs a \"name\" (a-z, 0-9, _ and -): it names "
				       "the class's segments and its line in ringlog status");
		for (unsigned k = 0; c->name[0] && k + 1 < x->c->n_classes; k++)
			if (!strcmp(x->c->classes[k].name, c->name))
				report(x, sub, "class name \"%s\" is used twice; give each class its own",
				       c->name);
		share += c->min_share_percent;
	}
	if (share > 100)
		report(x, p, "the classes' min_share add up to %u%%, more than the whole budget; "
			     "lower them to 100%% or less in total", share);
}

static void k_fwd_user_events(struct ctx *x, const char *p, json_t *v)
{
	get_bool(x, p, v, &x->c->forward.user_events);
}

static void k_fwd_etw(struct ctx *x, const char *p, json_t *v)
{
	get_bool(x, p, v, &x->c->forward.etw);
}

static void k_forward(struct ctx *x, const char *p, json_t *v)
{
	static const struct key keys[] = { { "user_events", k_fwd_user_events },
					   { "etw", k_fwd_etw } };
	walk(x, p, v, keys, 2);
}

static void k_lim_rings(struct ctx *x, const char *p, json_t *v)
{
	get_uint(x, p, v, 1, 65536, &x->c->limits.rings_per_process);
}

static void k_lim_ring_bytes(struct ctx *x, const char *p, json_t *v)
{
	get_size(x, p, v, 4096 + 4096, UINT64_MAX, &x->c->limits.ring_bytes_per_uid);
}

static void k_lim_metadata(struct ctx *x, const char *p, json_t *v)
{
	get_size(x, p, v, 4096, 64 << 20, &x->c->limits.metadata_size);
}

static void k_lim_clients(struct ctx *x, const char *p, json_t *v)
{
	get_uint(x, p, v, 1, 65536, &x->c->limits.clients);
}

static void k_lim_clients_per_uid(struct ctx *x, const char *p, json_t *v)
{
	get_uint(x, p, v, 1, 65536, &x->c->limits.clients_per_uid);
}

static void k_lim_clients_reserved(struct ctx *x, const char *p, json_t *v)
{
	get_uint(x, p, v, 0, 65535, &x->c->limits.clients_reserved);
}

static void k_lim_buffered(struct ctx *x, const char *p, json_t *v)
{
	get_size(x, p, v, 1u << 20, UINT64_MAX, &x->c->limits.buffered_bytes);
}

static void k_limits(struct ctx *x, const char *p, json_t *v)
{
	static const struct key keys[] = {
		{ "rings_per_process", k_lim_rings },
		{ "ring_bytes_per_uid", k_lim_ring_bytes },
		{ "metadata_size", k_lim_metadata },
		{ "clients", k_lim_clients },
		{ "clients_per_uid", k_lim_clients_per_uid },
		{ "clients_reserved", k_lim_clients_reserved },
		{ "buffered_bytes", k_lim_buffered },
	};
	walk(x, p, v, keys, 7);
}

/* flight: { "size": "256M", "pre": "60s", "post": "5s", "max_snapshots": "10/h",
 *           "snapshot_dir": PATH, "max_disk": SIZE, "trigger_level": LEVEL,
 *           "trigger_providers": ["glob", ...] } */
static void k_fl_size(struct ctx *x, const char *p, json_t *v)
{
	/* 0 turns it off; otherwise at least a few chunks (flight.c) */
	if (get_size(x, p, v, 0, 64ull << 30, &x->c->flight.size) && x->c->flight.size &&
	    x->c->flight.size < (1u << 20)) {
		report(x, p, "%s is too small: 0 (off) or at least \"1M\"", GOT(v));
	}
}

static void k_fl_pre(struct ctx *x, const char *p, json_t *v)
{
	get_duration(x, p, v, 0, 86400000000000ull, "0 to 1d", &x->c->flight.pre_ns);
}

static void k_fl_post(struct ctx *x, const char *p, json_t *v)
{
	get_duration(x, p, v, 0, 3600000000000ull, "0 to 1h", &x->c->flight.post_ns);
}

/* "10/h": a count, then per s, m, h or d. */
static void k_fl_max_snapshots(struct ctx *x, const char *p, json_t *v)
{
	static const struct { char unit; uint64_t ns; } units[] = {
		{ 's', 1000000000ull }, { 'm', 60000000000ull }, { 'h', 3600000000000ull },
		{ 'd', 86400000000000ull },
	};
	const char *s = json_string_value(v);
	unsigned long n;
	char unit, extra;

	if (s && sscanf(s, "%lu/%c%c", &n, &unit, &extra) == 2 && n >= 1 && n <= 10000)
		for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
			if (units[i].unit == unit) {
				x->c->flight.max_snapshots = (uint32_t)n;
				x->c->flight.max_snapshots_per_ns = units[i].ns;
				return;
			}
	report(x, p, "expected a rate like \"10/h\" (1 to 10000 per s, m, h or d), got %s", GOT(v));
}

static void k_fl_dir(struct ctx *x, const char *p, json_t *v)
{
	get_string(x, p, v, x->c->flight.snapshot_dir, sizeof(x->c->flight.snapshot_dir),
		   "a directory path");
}

static void k_fl_max_disk(struct ctx *x, const char *p, json_t *v)
{
	get_size(x, p, v, 1u << 20, UINT64_MAX, &x->c->flight.max_disk);
}

static void k_fl_trigger_level(struct ctx *x, const char *p, json_t *v)
{
	get_level(x, p, v, &x->c->flight.trigger_level);
}

static void k_fl_trigger_providers(struct ctx *x, const char *p, json_t *v)
{
	size_t i;
	json_t *g;

	if (!json_is_array(v) || json_array_size(v) > RINGLOG_FLIGHT_TRIGGER_PROVIDERS) {
		report(x, p, "expected an array of at most %d provider globs, got %s",
		       RINGLOG_FLIGHT_TRIGGER_PROVIDERS, GOT(v));
		return;
	}
	x->c->flight.n_trigger_providers = 0;
	json_array_foreach(v, i, g) {
		if (!get_string(x, p, g, x->c->flight.trigger_providers[i], RINGLOG_PROVIDER_NAME_MAX,
				"a provider name or glob"))
			return;
		x->c->flight.n_trigger_providers = (unsigned)i + 1;
	}
}

static void k_flight(struct ctx *x, const char *p, json_t *v)
{
	static const struct key keys[] = {
		{ "size", k_fl_size }, { "pre", k_fl_pre }, { "post", k_fl_post },
		{ "max_snapshots", k_fl_max_snapshots }, { "snapshot_dir", k_fl_dir },
		{ "max_disk", k_fl_max_disk }, { "trigger_level", k_fl_trigger_level },
		{ "trigger_providers", k_fl_trigger_providers },
	};
	walk(x, p, v, keys, sizeof(keys) / sizeof(keys[0]));
}

/* ------------------------------------------------------------------------
 * ship: a NATS JetStream stream (daemon/sink/ship.c).
 */

/* "nats://host:port" or "tls://host:port" (host:port alone means nats://):
 * libnats would take a typo as a server that never answers. */
static bool ship_url_ok(const char *u)
{
	const char *h = strstr(u, "://");

	if (h && strncmp(u, "nats://", 7) && strncmp(u, "tls://", 6))
		return false;
	h = h ? h + 3 : u;
	if (!*h || strchr(u, ',') || strchr(u, ' '))
		return false;
	return true;
}

static void k_ship_servers(struct ctx *x, const char *p, json_t *v)
{
	char *dst = x->c->ship.servers, url[RINGLOG_SHIP_SERVERS_MAX];
	size_t used = 0, i;
	json_t *e;

	if (json_is_string(v)) {
		json_t *a = json_array();

		json_array_append(a, v);
		k_ship_servers(x, p, a);
		json_decref(a);
		return;
	}
	if (!json_is_array(v)) {
		report(x, p, "expected a list of server URLs like [\"nats://10.0.0.1:4222\"], got %s",
		       GOT(v));
		return;
	}
	dst[0] = '\0';
	json_array_foreach(v, i, e) {
		if (!get_string(x, p, e, url, sizeof(url), "a server URL like \"nats://host:4222\""))
			return;
		if (!ship_url_ok(url)) {
			report(x, p, "\"%s\" is not a NATS server URL; expected nats://HOST:PORT or "
			       "tls://HOST:PORT", url);
			return;
		}
		if (used + strlen(url) + 2 > RINGLOG_SHIP_SERVERS_MAX) {
			report(x, p, "too many servers (at most %u bytes of URLs)",
			       RINGLOG_SHIP_SERVERS_MAX - 1);
			return;
		}
		used += (size_t)snprintf(dst + used, RINGLOG_SHIP_SERVERS_MAX - used, "%s%s",
					 used ? "," : "", url);
	}
}

/* JetStream stream names: no spaces, dots, wildcards or path separators. */
static void k_ship_stream(struct ctx *x, const char *p, json_t *v)
{
	char *s = x->c->ship.stream;

	if (!get_string(x, p, v, s, sizeof(x->c->ship.stream), "a JetStream stream name"))
		return;
	if (strpbrk(s, " \t.*>/\\")) {
		report(x, p, "\"%s\" is not a JetStream stream name (no spaces, '.', '*', '>', '/' "
		       "or '\\')", s);
		s[0] = '\0';
	}
}

static void k_ship_subject(struct ctx *x, const char *p, json_t *v)
{
	char *s = x->c->ship.subject;
	size_t n;

	if (!get_string(x, p, v, s, sizeof(x->c->ship.subject), "a NATS subject like \"ringlog.web1\""))
		return;
	n = strlen(s);
	if (strpbrk(s, " \t*>") || s[0] == '.' || s[n - 1] == '.' || strstr(s, "..")) {
		report(x, p, "\"%s\" is not a subject to publish to (dot-separated tokens, no "
		       "spaces or wildcards)", s);
		s[0] = '\0';
	}
}

/* It goes into the default subject and the message ids. */
static void k_ship_host(struct ctx *x, const char *p, json_t *v)
{
	char *s = x->c->ship.host;

	if (!get_string(x, p, v, s, sizeof(x->c->ship.host), "a host name"))
		return;
	for (const char *c = s; *c; c++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-", *c)) {
			report(x, p, "\"%s\": a ship host name takes letters, digits, '_' and '-'", s);
			s[0] = '\0';
			return;
		}
}

/* A file the daemon reads when it connects: on this host (ringlogd), it
 * must be readable now, so that --check-config finds a typo. */
static void ship_file(struct ctx *x, const char *p, json_t *v, char *dst, size_t len)
{
	if (!get_string(x, p, v, dst, len, "a file path"))
		return;
	if (x->host && access(dst, R_OK) < 0) {
		report(x, p, "cannot read \"%s\": %s", dst, strerror(errno));
		dst[0] = '\0';
	}
}

static void k_ship_creds(struct ctx *x, const char *p, json_t *v)
{
	ship_file(x, p, v, x->c->ship.creds, sizeof(x->c->ship.creds));
}

static void k_ship_user(struct ctx *x, const char *p, json_t *v)
{
	get_string(x, p, v, x->c->ship.user, sizeof(x->c->ship.user), "a user name");
}

static void k_ship_password_file(struct ctx *x, const char *p, json_t *v)
{
	ship_file(x, p, v, x->c->ship.password_file, sizeof(x->c->ship.password_file));
}

static void k_ship_tls_ca(struct ctx *x, const char *p, json_t *v)
{
	ship_file(x, p, v, x->c->ship.tls_ca, sizeof(x->c->ship.tls_ca));
}

static void k_ship_tls_cert(struct ctx *x, const char *p, json_t *v)
{
	ship_file(x, p, v, x->c->ship.tls_cert, sizeof(x->c->ship.tls_cert));
}

static void k_ship_tls_key(struct ctx *x, const char *p, json_t *v)
{
	ship_file(x, p, v, x->c->ship.tls_key, sizeof(x->c->ship.tls_key));
}

static void k_ship_live(struct ctx *x, const char *p, json_t *v)
{
	get_bool(x, p, v, &x->c->ship.live);
}

static void k_ship_interval(struct ctx *x, const char *p, json_t *v)
{
	get_duration(x, p, v, 10000000ull, 60000000000ull, "10ms to 60s", &x->c->ship.interval_ns);
}

static void k_ship_max_backlog(struct ctx *x, const char *p, json_t *v)
{
	get_size(x, p, v, 1u << 20, UINT64_MAX, &x->c->ship.max_backlog);
}

static void k_ship_max_pending(struct ctx *x, const char *p, json_t *v)
{
	get_uint(x, p, v, 1, 4096, &x->c->ship.max_pending);
}

/* "zstd" (level 1), "zstd:N" (1..19) or "none". */
static void k_ship_compress(struct ctx *x, const char *p, json_t *v)
{
	const char *s = json_is_string(v) ? json_string_value(v) : NULL;
	char *end = NULL;
	long level;

	if (s && !strcmp(s, "none")) {
		x->c->ship.compress = 0;
		return;
	}
	if (s && !strcmp(s, "zstd")) {
		x->c->ship.compress = 1;
		return;
	}
	if (s && !strncmp(s, "zstd:", 5) && s[5] >= '1' && s[5] <= '9') {
		errno = 0;
		level = strtol(s + 5, &end, 10);
		if (!errno && !*end && level >= 1 && level <= RINGLOG_SHIP_ZSTD_LEVEL_MAX) {
			x->c->ship.compress = (uint32_t)level;
			return;
		}
	}
	if (s)
		report(x, p, "\"%s\" is not a compression: use \"zstd\", \"zstd:N\" with N "
		       "from 1 to %d (slower, smaller), or \"none\"", s, RINGLOG_SHIP_ZSTD_LEVEL_MAX);
	else
		report(x, p, "expected \"zstd\", \"zstd:N\" or \"none\"");
}

static void k_ship_create_stream(struct ctx *x, const char *p, json_t *v)
{
	get_bool(x, p, v, &x->c->ship.create_stream);
}

static void k_ship_replicas(struct ctx *x, const char *p, json_t *v)
{
	get_uint(x, p, v, 1, 5, &x->c->ship.replicas);
}

static void k_ship_max_age(struct ctx *x, const char *p, json_t *v)
{
	if (json_is_string(v) && !strcmp(json_string_value(v), "off")) {
		x->c->ship.max_age_ns = 0;
		return;
	}
	get_duration(x, p, v, 1000000000ull, 3660 * 86400000000000ull, "\"off\" or 1s to 3660d",
		     &x->c->ship.max_age_ns);
}

static void k_ship_max_bytes(struct ctx *x, const char *p, json_t *v)
{
	if (json_is_string(v) && !strcmp(json_string_value(v), "off")) {
		x->c->ship.max_bytes = 0;
		return;
	}
	get_size(x, p, v, 1u << 20, UINT64_MAX, &x->c->ship.max_bytes);
}

static void k_ship(struct ctx *x, const char *p, json_t *v)
{
	static const struct key keys[] = {
		{ "servers", k_ship_servers },
		{ "stream", k_ship_stream },
		{ "subject", k_ship_subject },
		{ "host", k_ship_host },
		{ "creds", k_ship_creds },
		{ "user", k_ship_user },
		{ "password_file", k_ship_password_file },
		{ "tls_ca", k_ship_tls_ca },
		{ "tls_cert", k_ship_tls_cert },
		{ "tls_key", k_ship_tls_key },
		{ "live", k_ship_live },
		{ "interval", k_ship_interval },
		{ "max_backlog", k_ship_max_backlog },
		{ "max_pending", k_ship_max_pending },
		{ "compress", k_ship_compress },
		{ "create_stream", k_ship_create_stream },
		{ "replicas", k_ship_replicas },
		{ "max_age", k_ship_max_age },
		{ "max_bytes", k_ship_max_bytes },
	};
	walk(x, p, v, keys, sizeof(keys) / sizeof(keys[0]));
}

/* What only the whole section can say. */
static void ship_check(struct ctx *x, const struct ringlog_config *c)
{
	if (!c->ship.servers[0])
		return;
	if (!c->ship.stream[0])
		report(x, "ship/stream", "shipping to %s needs a stream name; set ship.stream",
		       c->ship.servers);
	if (c->ship.creds[0] && (c->ship.user[0] || c->ship.password_file[0]))
		report(x, "ship/creds", "give either a creds file or user and password_file, not both");
	if (!c->ship.user[0] != !c->ship.password_file[0])
		report(x, c->ship.user[0] ? "ship/user" : "ship/password_file",
		       "user and password_file go together; set both or neither");
	if (!c->ship.tls_cert[0] != !c->ship.tls_key[0])
		report(x, c->ship.tls_cert[0] ? "ship/tls_cert" : "ship/tls_key",
		       "tls_cert and tls_key go together; set both or neither");
}

static const struct key top_keys[] = {
	{ "storage_dir", k_storage_dir },
	{ "socket_path", k_socket_path },
	{ "socket_group", k_socket_group },
	{ "read_group", k_read_group },
	{ "socket_mode", k_socket_mode },
	{ "ring_size", k_ring_size },
	{ "ring_reserve", k_ring_reserve },
	{ "shed_level", k_shed_level },
	{ "flush_interval", k_flush_interval },
	{ "sync_interval", k_sync_interval },
	{ "max_segment_size", k_max_segment_size },
	{ "max_segment_age", k_max_segment_age },
	{ "max_disk", k_max_disk },
	{ "min_free", k_min_free },
	{ "max_retention", k_max_retention },
	{ "retention", k_retention },
	{ "io_backend", k_io_backend },
	{ "providers", k_providers },
	{ "forward", k_forward },
	{ "limits", k_limits },
	{ "flight", k_flight },
	{ "ship", k_ship },
};

/* ------------------------------------------------------------------------
 * Entry points
 */

void ringlog_config_defaults(struct ringlog_config *c)
{
	memset(c, 0, sizeof(*c));
#ifdef _WIN32
	snprintf(c->storage_dir, sizeof(c->storage_dir), "C:\\ProgramData\\ringlog");
	snprintf(c->socket_path, sizeof(c->socket_path), "\\\\.\\pipe\\ringlog");
#else
	snprintf(c->storage_dir, sizeof(c->storage_dir), "/var/lib/ringlog");
	snprintf(c->socket_path, sizeof(c->socket_path), "/run/ringlog/ringlog.sock");
#endif
	snprintf(c->socket_group, sizeof(c->socket_group), "ringlog");
	snprintf(c->read_group, sizeof(c->read_group), "ringlog-read");
	/* Anyone may connect; the daemon decides from the peer's groups
	 * (daemon/access.c) and names the group to join when it refuses. With
	 * 0660 the socket itself turned away every reader not also in
	 * socket_group, without a word about groups. As ringlogd.socket. */
	c->socket_mode = 0666;
	/* rate x worst drain delay: 1 M events/s x 64 B x ~16 ms of daemon
	 * stall (a flush plus a scheduling hiccup) = 1 MiB per thread. */
	c->ring_size = 1u << 20;
	/* Overload: the last quarter of a ring is for warnings and worse. */
	c->ring_reserve_percent = 25;
	c->shed_level = 3;
	c->flush_interval_ns = 1000000000ull;
	c->sync_interval_ns = 5000000000ull;
	c->max_segment_size = 64ull << 20;
	c->max_segment_age_ns = 3600ull * 1000000000ull;
	c->max_disk = 1ull << 30;
	c->min_free_percent = 5;
	c->io_backend = RINGLOG_IO_AUTO;
	snprintf(c->default_provider.pattern, sizeof(c->default_provider.pattern), "*");
	c->default_provider.level = 4;
	c->default_provider.keywords = UINT64_MAX;
	c->forward.user_events = true;
	c->forward.etw = true;
	c->limits.rings_per_process = 1024;
	c->limits.ring_bytes_per_uid = 1ull << 30;
	c->limits.metadata_size = 1u << 20;
	c->limits.clients = 4096;
	c->limits.clients_per_uid = 1024;
	c->limits.clients_reserved = 64;
	c->limits.buffered_bytes = 64u << 20;
	/* Off until configured: the buffer is memory the operator gives. */
	c->flight.pre_ns = 60000000000ull;
	c->flight.post_ns = 5000000000ull;
	c->flight.max_snapshots = 10;
	c->flight.max_snapshots_per_ns = 3600000000000ull;
	c->flight.max_disk = 256ull << 20;
	snprintf(c->ship.stream, sizeof(c->ship.stream), "ringlog");
	c->ship.interval_ns = 200000000ull;
	c->ship.max_backlog = 256ull << 20;
	c->ship.max_pending = 64;
	c->ship.compress = 1;
	c->ship.replicas = 3;
}

static int parse(struct ringlog_config *c, const char *text, size_t len, const char *name,
		 bool host, char *err, size_t errlen)
{
	struct ringlog_config *tmp = calloc(1, sizeof(*tmp));
	struct ctx x = { .name = name, .text = text, .len = len, .err = err, .errlen = errlen,
			 .host = host };
	json_error_t je;
	json_t *root;
	size_t i = 0;

	if (errlen)
		err[0] = '\0';
	if (!tmp) {
		snprintf(err, errlen, "config: %s: out of memory", name);
		return -ENOMEM;
	}
	root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!root) {
		snprintf(err, errlen, "config: %s:%d:%d: %s", name, je.line, je.column, je.text);
		free(tmp);
		return -EINVAL;
	}
	/* memcpy, not assignment: callers may memcmp configs, padding included */
	memcpy(tmp, c, sizeof(*tmp));
	x.c = tmp;
	scan_value(&x, &i, "", 0);
	walk(&x, "", root, top_keys, sizeof(top_keys) / sizeof(top_keys[0]));
	if (!x.nerr && tmp->max_disk < tmp->max_segment_size)
		report(&x, "max_disk", "%" PRIu64 " bytes is less than max_segment_size (%" PRIu64
		       "); raise max_disk or lower max_segment_size", tmp->max_disk,
		       tmp->max_segment_size);
	/* Snapshots live inside the global budget: the segments get the rest. */
	if (!x.nerr && tmp->flight.size && tmp->max_disk < tmp->flight.max_disk + tmp->max_segment_size)
		report(&x, "flight/max_disk", "%" PRIu64 " bytes for snapshots leaves less than "
		       "max_segment_size (%" PRIu64 ") of max_disk (%" PRIu64 ") to the segments; lower "
		       "flight.max_disk or raise max_disk", tmp->flight.max_disk, tmp->max_segment_size,
		       tmp->max_disk);
	/* The segments' share (max_disk less the snapshots'): 1M at least,
	 * and 1M for each class, which writes segments of its own beside the
	 * default class's. */
	if (!x.nerr) {
		uint64_t fl = tmp->flight.size ? tmp->flight.max_disk : 0;
		uint64_t segs = tmp->max_disk > fl ? tmp->max_disk - fl : 0;
		uint64_t least = (tmp->n_classes + 1) * RINGLOG_CONFIG_MAX_DISK_MIN;

		if (segs < least)
			report(&x, "max_disk", "%" PRIu64 " bytes leaves the segments %" PRIu64 " (after "
			       "flight.max_disk), less than %" PRIu64 ": 1M for the default class and "
			       "1M for each of %u retention classes; raise max_disk", tmp->max_disk,
			       segs, least, tmp->n_classes);
	}
	/* a snapshot holds at most the whole buffer: the newest, which is
	 * kept, and the next must fit the snapshots' share */
	if (!x.nerr && tmp->flight.size && tmp->flight.max_disk < 2 * tmp->flight.size)
		report(&x, "flight/max_disk", "%" PRIu64 " bytes for snapshots is less than twice "
		       "flight.size (%" PRIu64 "): the newest snapshot and the next may each take "
		       "flight.size; raise flight.max_disk or lower flight.size", tmp->flight.max_disk,
		       tmp->flight.size);
	if (!x.nerr)
		ship_check(&x, tmp);
	/* Shipping reads the segments in seq order, one at a time, and keeps
	 * "acknowledged up to (segment, chunk)": with a segment per class open
	 * side by side, that order is not the order they are written in. */
	if (!x.nerr && tmp->n_classes && tmp->ship.servers[0])
		report(&x, "retention", "retention classes and ship cannot be used together yet "
		       "(shipping reads one segment stream in order); remove \"retention\" or "
		       "\"ship.servers\"");
	if (x.nerr > MAX_ERRORS && x.used < x.errlen)
		snprintf(err + x.used, errlen - x.used, "\nconfig: %s: %d more errors not shown",
			 name, x.nerr - MAX_ERRORS);
	if (!x.nerr)
		memcpy(c, tmp, sizeof(*c));
	json_decref(root);
	free(x.locs);
	free(tmp);
	return x.nerr ? -EINVAL : 0;
}

int ringlog_config_parse(struct ringlog_config *c, const char *text, size_t len,
			 const char *name, char *err, size_t errlen)
{
	return parse(c, text, len, name, false, err, errlen);
}

static int load(struct ringlog_config *c, const char *path, bool host, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t len = 0, cap = 0;
	int ret;

	if (!f) {
		ret = -errno;
		snprintf(err, errlen, "config: %s: cannot open: %s", path, strerror(errno));
		return ret;
	}
	for (;;) {
		if (len == cap) {
			char *nb;
			if (cap >= (1u << 20)) {
				snprintf(err, errlen, "config: %s: larger than 1 MiB; is this the "
					 "right file?", path);
				ret = -EFBIG;
				goto out;
			}
			cap = cap ? cap * 2 : 4096;
			nb = realloc(buf, cap);
			if (!nb) {
				ret = -ENOMEM;
				snprintf(err, errlen, "config: %s: out of memory", path);
				goto out;
			}
			buf = nb;
		}
		size_t n = fread(buf + len, 1, cap - len, f);
		len += n;
		if (n == 0)
			break;
	}
	if (ferror(f)) {
		ret = -EIO;
		snprintf(err, errlen, "config: %s: read error", path);
		goto out;
	}
	ret = parse(c, buf, len, path, host, err, errlen);
out:
	free(buf);
	fclose(f);
	return ret;
}

int ringlog_config_load(struct ringlog_config *c, const char *path, char *err, size_t errlen)
{
	return load(c, path, false, err, errlen);
}

int ringlog_config_load_host(struct ringlog_config *c, const char *path, char *err,
			     size_t errlen)
{
	return load(c, path, true, err, errlen);
}

/* "64M" for 64 MiB: the largest unit that divides exactly. */
static json_t *size_json(uint64_t n)
{
	static const char units[] = "KMGTP";
	char buf[32];
	int u = -1;

	while (u < 4 && n && n % 1024 == 0) {
		n /= 1024;
		u++;
	}
	if (u < 0)
		snprintf(buf, sizeof(buf), "%" PRIu64, n);
	else
		snprintf(buf, sizeof(buf), "%" PRIu64 "%c", n, units[u]);
	return json_string(buf);
}

static json_t *duration_json(uint64_t ns)
{
	static const struct { const char *unit; uint64_t ns; } units[] = {
		{ "d", 86400000000000ull }, { "h", 3600000000000ull }, { "m", 60000000000ull },
		{ "s", 1000000000ull }, { "ms", 1000000 }, { "us", 1000 }, { "ns", 1 },
	};
	char buf[32];

	for (size_t k = 0; k < sizeof(units) / sizeof(units[0]); k++)
		if (ns % units[k].ns == 0 && (ns || units[k].ns == 1)) {
			snprintf(buf, sizeof(buf), "%" PRIu64 "%s", ns / units[k].ns, units[k].unit);
			break;
		}
	return json_string(buf);
}

static json_t *duration_json(uint64_t ns);

static void policy_json(json_t *o, const struct ringlog_config_policy *pol)
{
	char rate[32];

	if (pol->rate) {
		snprintf(rate, sizeof(rate), "%u/%s", pol->rate,
			 pol->period_ms == 1000 ? "s" : pol->period_ms == 60000 ? "min" : "h");
		json_object_set_new(o, "rate", json_string(rate));
		json_object_set_new(o, "burst", json_integer(pol->burst));
	}
	if (pol->wait_us)
		json_object_set_new(o, "wait", duration_json((uint64_t)pol->wait_us * 1000));
}

static json_t *provider_json(const struct ringlog_config_provider *p)
{
	char kw[24];
	json_t *o, *ev;

	snprintf(kw, sizeof(kw), "0x%" PRIx64, p->keywords);
	o = json_pack("{s:i, s:s}", "level", p->level, "keywords", kw);
	policy_json(o, &p->pol);
	if (p->n_events) {
		ev = json_object();
		for (unsigned i = 0; i < p->n_events; i++) {
			json_t *e = json_object();

			policy_json(e, &p->events[i].pol);
			json_object_set_new(ev, p->events[i].pattern, e);
		}
		json_object_set_new(o, "events", ev);
	}
	if (p->flight_level)
		json_object_set_new(o, "flight_level", json_integer(p->flight_level));
	return o;
}

static json_t *flight_json(const struct ringlog_config_flight *f)
{
	static const char units[] = "smhd";
	static const uint64_t unit_ns[] = { 1000000000ull, 60000000000ull, 3600000000000ull,
					    86400000000000ull };
	json_t *j = json_object(), *tp = json_array();
	char rate[32] = "";

	for (int i = 0; i < 4; i++)
		if (f->max_snapshots_per_ns == unit_ns[i])
			snprintf(rate, sizeof(rate), "%u/%c", f->max_snapshots, units[i]);
	json_object_set_new(j, "size", size_json(f->size));
	json_object_set_new(j, "pre", duration_json(f->pre_ns));
	json_object_set_new(j, "post", duration_json(f->post_ns));
	json_object_set_new(j, "max_snapshots", json_string(rate));
	if (f->snapshot_dir[0])
		json_object_set_new(j, "snapshot_dir", json_string(f->snapshot_dir));
	json_object_set_new(j, "max_disk", size_json(f->max_disk));
	if (f->trigger_level)
		json_object_set_new(j, "trigger_level", json_integer(f->trigger_level));
	for (unsigned i = 0; i < f->n_trigger_providers; i++)
		json_array_append_new(tp, json_string(f->trigger_providers[i]));
	if (f->n_trigger_providers)
		json_object_set_new(j, "trigger_providers", tp);
	else
		json_decref(tp);
	return j;
}

static json_t *classes_json(const struct ringlog_config *c)
{
	static const char *lv[] = { "", "critical", "error", "warning", "info", "verbose" };
	json_t *a = json_array();

	for (unsigned i = 0; i < c->n_classes; i++) {
		const struct ringlog_config_class *k = &c->classes[i];
		json_t *o = json_object(), *pv = json_array();
		char levels[32], share[8];

		snprintf(levels, sizeof(levels), "%s..%s", lv[k->level_min], lv[k->level_max]);
		snprintf(share, sizeof(share), "%u%%", k->min_share_percent);
		json_object_set_new(o, "name", json_string(k->name));
		for (unsigned j = 0; j < k->n_providers; j++)
			json_array_append_new(pv, json_string(k->providers[j]));
		if (k->n_providers)
			json_object_set_new(o, "providers", pv);
		else
			json_decref(pv);
		json_object_set_new(o, "levels", json_string(levels));
		json_object_set_new(o, "min_share", json_string(share));
		if (k->min_age_ns)
			json_object_set_new(o, "min_age", duration_json(k->min_age_ns));
		json_array_append_new(a, o);
	}
	return a;
}

/* The ship section; strings only when set (the parser refuses ""). */
static json_t *ship_json(const struct ringlog_config *c)
{
	json_t *o = json_object(), *servers = json_array();
	const char *strs[][2] = {
		{ "stream", c->ship.stream }, { "subject", c->ship.subject },
		{ "host", c->ship.host }, { "creds", c->ship.creds }, { "user", c->ship.user },
		{ "password_file", c->ship.password_file }, { "tls_ca", c->ship.tls_ca },
		{ "tls_cert", c->ship.tls_cert }, { "tls_key", c->ship.tls_key },
	};
	char url[RINGLOG_SHIP_SERVERS_MAX];

	snprintf(url, sizeof(url), "%s", c->ship.servers);
	for (char *save = NULL, *u = strtok_r(url, ",", &save); u; u = strtok_r(NULL, ",", &save))
		json_array_append_new(servers, json_string(u));
	json_object_set_new(o, "servers", servers);
	for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
		if (strs[i][1][0])
			json_object_set_new(o, strs[i][0], json_string(strs[i][1]));
	json_object_set_new(o, "live", json_boolean(c->ship.live));
	json_object_set_new(o, "interval", duration_json(c->ship.interval_ns));
	json_object_set_new(o, "max_backlog", size_json(c->ship.max_backlog));
	json_object_set_new(o, "max_pending", json_integer(c->ship.max_pending));
	snprintf(url, sizeof(url), "zstd:%u", c->ship.compress);
	json_object_set_new(o, "compress", json_string(c->ship.compress ? url : "none"));
	json_object_set_new(o, "create_stream", json_boolean(c->ship.create_stream));
	json_object_set_new(o, "replicas", json_integer(c->ship.replicas));
	json_object_set_new(o, "max_age", c->ship.max_age_ns ? duration_json(c->ship.max_age_ns) :
			    json_string("off"));
	json_object_set_new(o, "max_bytes", c->ship.max_bytes ? size_json(c->ship.max_bytes) :
			    json_string("off"));
	return o;
}

int ringlog_config_dump(const struct ringlog_config *c, FILE *f)
{
	char mode[8], pct[8];
	json_t *providers = json_object(), *root;
	int ret;

	snprintf(mode, sizeof(mode), "0%o", c->socket_mode);
	snprintf(pct, sizeof(pct), "%u%%", c->min_free_percent);
	json_object_set_new(providers, "*", provider_json(&c->default_provider));
	for (unsigned i = 0; i < c->n_providers; i++)
		json_object_set_new(providers, c->providers[i].pattern,
				    provider_json(&c->providers[i]));
	root = json_pack("{s:s, s:s, s:s, s:s, s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:s, s:o,"
			 " s:{s:b, s:b}, s:{s:i, s:o, s:o, s:i, s:i, s:i, s:o}}",
			 "storage_dir", c->storage_dir, "socket_path", c->socket_path,
			 "socket_group", c->socket_group, "read_group", c->read_group,
			 "socket_mode", mode, "ring_size", size_json(c->ring_size),
			 "flush_interval", duration_json(c->flush_interval_ns),
			 "sync_interval", duration_json(c->sync_interval_ns),
			 "max_segment_size", size_json(c->max_segment_size),
			 "max_segment_age", duration_json(c->max_segment_age_ns),
			 "max_disk", size_json(c->max_disk),
			 "min_free", c->min_free_bytes ? size_json(c->min_free_bytes) : json_string(pct),
			 "max_retention", c->max_retention_ns ? duration_json(c->max_retention_ns) :
				json_string("off"),
			 "io_backend", ringlog_io_backend_names[c->io_backend], "providers", providers,
			 "forward", "user_events", c->forward.user_events, "etw", c->forward.etw,
			 "limits", "rings_per_process", (json_int_t)c->limits.rings_per_process,
			 "ring_bytes_per_uid", size_json(c->limits.ring_bytes_per_uid),
			 "metadata_size", size_json(c->limits.metadata_size),
			 "clients", (json_int_t)c->limits.clients,
			 "clients_per_uid", (json_int_t)c->limits.clients_per_uid,
			 "clients_reserved", (json_int_t)c->limits.clients_reserved,
			 "buffered_bytes", size_json(c->limits.buffered_bytes));
	if (!root)
		return -ENOMEM;
	snprintf(pct, sizeof(pct), "%u%%", c->ring_reserve_percent);
	json_object_set_new(root, "ring_reserve", json_string(pct));
	json_object_set_new(root, "shed_level", json_integer(c->shed_level));
	json_object_set_new(root, "retention", classes_json(c));
	json_object_set_new(root, "flight", flight_json(&c->flight));
	json_object_set_new(root, "ship", ship_json(c));
	ret = json_dumpf(root, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER) < 0 ? -EIO : 0;
	fputc('\n', f);
	json_decref(root);
	return ret;
}
