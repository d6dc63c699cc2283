/* client/cli/output.c - output modes, colour rules and the pager. */
#define _GNU_SOURCE
#include "output.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifndef _WIN32
#include <sys/wait.h>
#endif

#include "compat-win.h"

#define NS 1000000000ull

/* A growing string; on allocation failure it keeps failing quietly and
 * sb_done() returns NULL. */
struct sb {
	char *p;
	size_t len, cap;
	bool failed;
};

static void sb_grow(struct sb *b, size_t n)
{
	size_t cap;
	char *p;

	if (b->failed || b->len + n + 1 <= b->cap)
		return;
	for (cap = b->cap ? b->cap : 256; cap < b->len + n + 1; cap *= 2)
		;
	if (!(p = realloc(b->p, cap))) {
		b->failed = true;
		return;
	}
	b->p = p;
	b->cap = cap;
}

static void sb_put(struct sb *b, const char *s, size_t n)
{
	sb_grow(b, n);
	if (b->failed)
		return;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = 0;
}

static void sb_puts(struct sb *b, const char *s)
{
	sb_put(b, s, strlen(s));
}

static void sb_putc(struct sb *b, char c)
{
	sb_put(b, &c, 1);
}

__attribute__((format(printf, 2, 3))) static void sb_printf(struct sb *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	/* one pass when it fits (the usual case), a second after growing */
	va_start(ap, fmt);
	n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len : 0, fmt, ap);
	va_end(ap);
	if (n < 0 || b->failed)
		return;
	if (b->p && b->len + (size_t)n < b->cap) {
		b->len += (size_t)n;
		return;
	}
	sb_grow(b, (size_t)n);
	if (b->failed)
		return;
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

static char *sb_done(struct sb *b)
{
	if (b->failed || !b->p) {
		free(b->p);
		return b->failed ? NULL : strdup("");
	}
	return b->p;
}

const char out_mode_names[] = "short, short-iso, short-precise, cat, verbose, json, json-pretty";

int out_parse_mode(const char *s, enum out_mode *m)
{
	static const char *const names[] = { "short", "short-iso", "short-precise", "cat",
					     "verbose", "json", "json-pretty" };

	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(s, names[i])) {
			*m = (enum out_mode)i;
			return 0;
		}
	return -EINVAL;
}

int out_parse_when(const char *s, enum out_when *w)
{
	if (!s || !strcmp(s, "always"))
		*w = OUT_ALWAYS; /* a bare --color means always, as ls and grep */
	else if (!strcmp(s, "auto"))
		*w = OUT_AUTO;
	else if (!strcmp(s, "never"))
		*w = OUT_NEVER;
	else
		return -EINVAL;
	return 0;
}

bool out_color(enum out_when w, int fd)
{
	const char *nc = getenv("NO_COLOR"), *term = getenv("TERM");

	if (w != OUT_AUTO)
		return w == OUT_ALWAYS;
	/* no-color.org: present and not empty disables; an empty one does not */
	if (nc && *nc)
		return false;
	if (term && !strcmp(term, "dumb"))
		return false;
	return isatty(fd);
}

static void put_json_str(struct sb *b, const uint8_t *s, size_t n)
{
	sb_putc(b, '"');
	for (size_t i = 0; i < n; i++) {
		unsigned char c = s[i];

		if (c == '"' || c == '\\')
			sb_printf(b, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			sb_printf(b, "\\u%04x", c);
		else
			sb_putc(b, (char)c);
	}
	sb_putc(b, '"');
}

static void put_json_cstr(struct sb *b, const char *s)
{
	put_json_str(b, (const uint8_t *)(s ? s : ""), s ? strlen(s) : 0);
}

static void put_text_str(struct sb *b, const uint8_t *s, size_t n, bool quote)
{
	if (quote)
		sb_putc(b, '"');
	for (size_t i = 0; i < n; i++) {
		unsigned char c = s[i];

		if (quote && (c == '"' || c == '\\'))
			sb_printf(b, "\\%c", c);
		else if (c == '\n')
			sb_puts(b, "\\n");
		else if (c < 0x20 || c == 0x7f)
			sb_printf(b, "\\x%02x", c);
		else
			sb_putc(b, (char)c);
	}
	if (quote)
		sb_putc(b, '"');
}

static void put_double(struct sb *b, double d, bool json)
{
	if (isnan(d))
		sb_puts(b, json ? "\"nan\"" : "nan");
	else if (isinf(d))
		sb_puts(b, d > 0 ? (json ? "\"inf\"" : "inf") : (json ? "\"-inf\"" : "-inf"));
	else
		sb_printf(b, "%.17g", d);
}

/* quote: strings in double quotes (short); verbose shows them bare. */
static void put_value(struct sb *b, const struct ringlog_value *v, bool json, bool quote)
{
	const struct ringlog_field_desc *f = v->field;
	bool sign = f->type >= RINGLOG_TYPE_I8 && f->type <= RINGLOG_TYPE_I64;

	switch (f->type) {
	case RINGLOG_TYPE_F64:
		put_double(b, v->d, json);
		return;
	case RINGLOG_TYPE_BOOL:
		sb_puts(b, v->b ? "true" : "false");
		return;
	case RINGLOG_TYPE_STR:
		if (json)
			put_json_str(b, v->data, v->len);
		else
			put_text_str(b, v->data, v->len, quote);
		if (v->truncated && !json)
			sb_puts(b, "...(truncated)");
		return;
	case RINGLOG_TYPE_BLOB:
		if (quote || json)
			sb_putc(b, '"');
		for (uint32_t i = 0; i < v->len; i++)
			sb_printf(b, "%02x", v->data[i]);
		if (quote || json)
			sb_putc(b, '"');
		return;
	default:
		break;
	}
	switch (f->format) {
	case RINGLOG_FMT_HEX:
		sb_printf(b, json ? "\"0x%llx\"" : "0x%llx", (unsigned long long)v->u);
		return;
	case RINGLOG_FMT_ERRNO:
		if (json)
			sb_printf(b, "%lld", (long long)v->i);
		else
			sb_printf(b, "%lld(%s)", (long long)v->i,
				  v->i > 0 && v->i < 4096 ? strerrorname_np((int)v->i) ?: "?" : "?");
		return;
	case RINGLOG_FMT_TIME: {
		time_t t = (time_t)(v->u / NS);
		struct tm tm;
		char s[64];

		gmtime_r(&t, &tm);
		strftime(s, sizeof(s), "%Y-%m-%dT%H:%M:%S", &tm);
		sb_printf(b, json ? "\"%s.%09lluZ\"" : "%s.%09lluZ", s,
			  (unsigned long long)(v->u % NS));
		return;
	}
	default:
		break;
	}
	if (sign)
		sb_printf(b, "%lld", (long long)v->i);
	else
		sb_printf(b, "%llu", (unsigned long long)v->u);
}

static struct tm *tm_of(const struct output *o, uint64_t ns, struct tm *tm)
{
	time_t t = (time_t)(ns / NS);

	return o->utc ? gmtime_r(&t, tm) : localtime_r(&t, tm);
}

void out_time(const struct output *o, uint64_t ns, char *buf, size_t len)
{
	struct tm tm;

	tm_of(o, ns, &tm);
	strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm);
}

/* Seconds east of UTC of a local time. */
static long gmtoff(const struct tm *tm, time_t t)
{
#ifdef _WIN32
	struct tm c = *tm;

	return (long)(_mkgmtime(&c) - t);
#else
	(void)t;
	return tm->tm_gmtoff;
#endif
}

static const char *zone_name(const struct tm *tm)
{
#ifdef _WIN32
	(void)tm;
	return _tzname[0];
#else
	return tm->tm_zone;
#endif
}

/* The time column of the short modes. */
static void put_time(struct sb *b, const struct output *o, uint64_t ns)
{
	struct tm tm;
	char s[64];

	tm_of(o, ns, &tm);
	switch (o->mode) {
	case OUT_SHORT_ISO: {
		long off = o->utc ? 0 : gmtoff(&tm, (time_t)(ns / NS));

		strftime(s, sizeof(s), "%Y-%m-%dT%H:%M:%S", &tm);
		if (!off)
			sb_printf(b, "%sZ", s);
		else
			sb_printf(b, "%s%c%02ld:%02ld", s, off < 0 ? '-' : '+', labs(off) / 3600,
				  labs(off) % 3600 / 60);
		return;
	}
	case OUT_SHORT_PRECISE:
		strftime(s, sizeof(s), "%Y-%m-%d %H:%M:%S", &tm);
		sb_printf(b, "%s.%09llu", s, (unsigned long long)(ns % NS));
		return;
	default:
		strftime(s, sizeof(s), "%Y-%m-%d %H:%M:%S", &tm);
		sb_printf(b, "%s.%06llu", s, (unsigned long long)(ns % NS / 1000u));
		return;
	}
}

static const char *level_color(unsigned l)
{
	static const char *const c[] = { "", "\033[1;31m", "\033[31m", "\033[33m", "\033[32m", "\033[2m" };

	return l <= 5 ? c[l] : "";
}

static void put_json_event(struct sb *b, const struct ringlog_dec_event *e)
{
	const struct ringlog_event_desc *d = e->desc;
	unsigned ntrunc = 0;

	sb_printf(b, "{\"type\":\"event\",\"time_ns\":%llu,\"level\":%u,\"provider\":",
		  (unsigned long long)e->real_ns, d->level);
	put_json_cstr(b, e->provider);
	sb_puts(b, ",\"event\":");
	put_json_cstr(b, d->name);
	sb_printf(b, ",\"keyword\":\"0x%llx\",\"opcode\":\"%s\",\"pid\":%u,\"tid\":%u,\"uid\":%u,\"comm\":",
		  (unsigned long long)d->keyword, ringlog_opcode_name(d->opcode),
		  e->writer->w.pid, e->stream->s.tid, e->writer->w.uid);
	put_json_cstr(b, e->writer->comm);
	if (e->activity) {
		sb_puts(b, ",\"activity\":\"");
		for (int i = 0; i < 16; i++)
			sb_printf(b, "%02x", e->activity[i]);
		sb_putc(b, '"');
	}
	sb_puts(b, ",\"fields\":{");
	for (unsigned i = 0; i < d->nfields; i++) {
		if (i)
			sb_putc(b, ',');
		put_json_cstr(b, d->fields[i].name);
		sb_putc(b, ':');
		put_value(b, &e->values[i], true, true);
	}
	sb_putc(b, '}');
	/* Which strings lost their tail at the source, by name. */
	for (unsigned i = 0; i < d->nfields; i++)
		if (e->values[i].truncated) {
			sb_puts(b, ntrunc++ ? "," : ",\"truncated\":[");
			put_json_cstr(b, d->fields[i].name);
		}
	sb_puts(b, ntrunc ? "]}" : "}");
}

/* Indent one compact JSON object (our own output: no whitespace outside
 * strings). Done on the text rather than through jansson, which would
 * refuse u64 values above INT64_MAX. */
static char *pretty(const char *j)
{
	struct sb b = { 0 };
	int depth = 0;
	bool in_str = false;

	for (const char *p = j; *p; p++) {
		char c = *p;

		if (in_str) {
			sb_putc(&b, c);
			if (c == '\\' && p[1])
				sb_putc(&b, *++p);
			else if (c == '"')
				in_str = false;
			continue;
		}
		switch (c) {
		case '"':
			in_str = true;
			sb_putc(&b, c);
			break;
		case '{':
		case '[':
			if ((p[1] == '}' || p[1] == ']')) {
				sb_putc(&b, c);
				sb_putc(&b, *++p);
				break;
			}
			sb_printf(&b, "%c\n%*s", c, 2 * ++depth, "");
			break;
		case '}':
		case ']':
			sb_printf(&b, "\n%*s%c", 2 * --depth, "", c);
			break;
		case ',':
			sb_printf(&b, ",\n%*s", 2 * depth, "");
			break;
		case ':':
			sb_puts(&b, ": ");
			break;
		default:
			sb_putc(&b, c);
		}
	}
	sb_putc(&b, '\n');
	return sb_done(&b);
}

static void put_short(struct sb *b, const struct output *o, const struct ringlog_dec_event *e,
		      bool color)
{
	const struct ringlog_event_desc *d = e->desc;

	put_time(b, o, e->real_ns);
	if (o->host)
		sb_printf(b, " %s", o->host);
	sb_printf(b, " %s%-7s%s %s %s", color ? level_color(d->level) : "",
		  ringlog_level_name(d->level), color ? "\033[0m" : "",
		  e->provider ? e->provider : "?", d->name);
	if (d->opcode)
		sb_printf(b, "/%s", ringlog_opcode_name(d->opcode));
	sb_printf(b, " [%u/%u]", e->writer->w.pid, e->stream->s.tid);
	for (unsigned i = 0; i < d->nfields; i++) {
		sb_printf(b, " %s=", d->fields[i].name);
		put_value(b, &e->values[i], false, true);
	}
}

char *out_short_plain(const struct ringlog_dec_event *e)
{
	struct output o = { .mode = OUT_SHORT };
	struct sb b = { 0 };

	put_short(&b, &o, e, false);
	return sb_done(&b);
}

static void put_verbose(struct sb *b, const struct output *o, const struct ringlog_dec_event *e)
{
	const struct ringlog_event_desc *d = e->desc;
	struct tm tm;
	char s[80];

	/* journalctl -o verbose: the full time, then one member a line */
	tm_of(o, e->real_ns, &tm);
	strftime(s, sizeof(s), "%a %Y-%m-%d %H:%M:%S", &tm);
	sb_printf(b, "%s.%09llu %s\n", s, (unsigned long long)(e->real_ns % NS),
		  o->utc ? "UTC" : zone_name(&tm));
	if (o->host) {
		sb_puts(b, "    HOST=");
		put_text_str(b, (const uint8_t *)o->host, strlen(o->host), false);
		sb_putc(b, '\n');
	}
	sb_puts(b, "    PROVIDER=");
	put_text_str(b, (const uint8_t *)(e->provider ? e->provider : "?"),
		     strlen(e->provider ? e->provider : "?"), false);
	sb_puts(b, "\n    EVENT=");
	put_text_str(b, (const uint8_t *)d->name, strlen(d->name), false);
	sb_printf(b, "\n    LEVEL=%s%u (%s)%s\n", o->color ? level_color(d->level) : "", d->level,
		  ringlog_level_name(d->level), o->color ? "\033[0m" : "");
	sb_printf(b, "    KEYWORD=0x%llx\n    OPCODE=%s\n    PID=%u\n    TID=%u\n    UID=%u\n"
		  "    COMM=", (unsigned long long)d->keyword, ringlog_opcode_name(d->opcode),
		  e->writer->w.pid, e->stream->s.tid, e->writer->w.uid);
	put_text_str(b, (const uint8_t *)e->writer->comm, strlen(e->writer->comm), false);
	sb_putc(b, '\n');
	if (e->writer->exe && *e->writer->exe) {
		sb_puts(b, "    EXE=");
		put_text_str(b, (const uint8_t *)e->writer->exe, strlen(e->writer->exe), false);
		sb_putc(b, '\n');
	}
	if (e->activity) {
		sb_puts(b, "    ACTIVITY=");
		for (int i = 0; i < 16; i++)
			sb_printf(b, "%02x", e->activity[i]);
		sb_putc(b, '\n');
	}
	for (unsigned i = 0; i < d->nfields; i++) {
		sb_printf(b, "    %s=", d->fields[i].name);
		put_value(b, &e->values[i], false, false);
		sb_putc(b, '\n');
	}
}

char *out_event(const struct output *o, const struct ringlog_dec_event *e)
{
	const struct ringlog_event_desc *d = e->desc;
	struct sb b = { 0 };

	switch (o->mode) {
	case OUT_JSON:
	case OUT_JSON_PRETTY:
		put_json_event(&b, e);
		if (o->host && b.len && b.p && b.p[b.len - 1] == '}') {
			/* the host, where a local store has none */
			b.len--;
			sb_puts(&b, ",\"host\":");
			put_json_cstr(&b, o->host);
			sb_putc(&b, '}');
		}
		if (o->mode == OUT_JSON_PRETTY) {
			char *c = sb_done(&b), *p = c ? pretty(c) : NULL;

			free(c);
			return p;
		}
		sb_putc(&b, '\n');
		break;
	case OUT_CAT:
		/* journalctl's cat shows MESSAGE; an event's message is its
		 * fields, bare (its name when it has none) */
		for (unsigned i = 0; i < d->nfields; i++) {
			sb_printf(&b, "%s%s=", i ? " " : "", d->fields[i].name);
			put_value(&b, &e->values[i], false, false);
		}
		if (!d->nfields)
			sb_puts(&b, d->name);
		sb_putc(&b, '\n');
		break;
	case OUT_VERBOSE:
		put_verbose(&b, o, e);
		break;
	default:
		put_short(&b, o, e, o->color);
		sb_putc(&b, '\n');
		break;
	}
	return sb_done(&b);
}

const char *out_loss_why(unsigned reason, const char **cause)
{
	static const char *const why[] = { "?", "ring overflow in the program",
		"disk full or write error in ringlogd", "this reader was too slow",
		"corrupt ring detached", "counted at exit",
		"overwritten in the flight buffer before this snapshot",
		"suppressed by its rate limit",
		"not shipped: the disk budget deleted them first",
		"not shipped: over ship.max_backlog" };
	static const char *const key[] = { "?", "ring", "disk", "reader", "corrupt", "exit",
					   "overwritten", "rate", "ship_retention", "ship_backlog" };

	if (reason == RINGLOG_LOSS_NO_RING) {
		if (cause)
			*cause = "no_ring";
		return "no ring could take it in the program (none could be made, or the event "
		       "could not be registered)";
	}
	if (cause)
		*cause = reason <= 9 ? key[reason] : "?";
	return reason <= 9 ? why[reason] : "?";
}

char *out_loss(const struct output *o, const struct ringlog_dec_loss *l)
{
	static const char *const lvl[] = { "none", "critical", "error", "warning", "info", "verbose",
		"level6", "level7" };
	const char *cause, *w = out_loss_why(l->reason, &cause);
	struct sb b = { 0 };
	bool levels = false;

	for (unsigned i = 0; i < 8; i++)
		levels |= l->by_level[i] != 0;

	if (o->mode == OUT_JSON || o->mode == OUT_JSON_PRETTY) {
		/* The members an event has, where a loss has them, so that one
		 * jq filter reads both; "type" tells them apart. */
		sb_printf(&b, "{\"type\":\"loss\",\"time_ns\":%llu,\"lost\":%llu,\"reason\":\"%s\","
			  "\"cause\":\"%s\"", (unsigned long long)l->real_ns,
			  (unsigned long long)l->records, w, cause);
		if (l->provider) {
			sb_puts(&b, ",\"provider\":");
			put_json_cstr(&b, l->provider);
		}
		if (l->event) {
			sb_puts(&b, ",\"event\":");
			put_json_cstr(&b, l->event);
		}
		if (levels) {
			const char *sep = "";

			sb_puts(&b, ",\"by_level\":{");
			for (unsigned i = 0; i < 8; i++, sep = l->by_level[i - 1] ? "," : sep)
				if (l->by_level[i])
					sb_printf(&b, "%s\"%s\":%llu", sep, lvl[i],
						  (unsigned long long)l->by_level[i]);
			sb_putc(&b, '}');
		}
		if (o->host) {
			sb_puts(&b, ",\"host\":");
			put_json_cstr(&b, o->host);
		}
		sb_printf(&b, ",\"pid\":%u,\"tid\":%u", l->writer ? l->writer->w.pid : 0,
			  l->stream ? l->stream->s.tid : 0);
		if (l->writer) {
			sb_printf(&b, ",\"uid\":%u,\"comm\":", l->writer->w.uid);
			put_json_cstr(&b, l->writer->comm);
		}
		sb_putc(&b, '}');
		if (o->mode == OUT_JSON_PRETTY) {
			char *c = sb_done(&b), *p = c ? pretty(c) : NULL;

			free(c);
			return p;
		}
		sb_putc(&b, '\n');
		return sb_done(&b);
	}
	if (l->real_ns && o->mode != OUT_CAT) {
		struct output t = *o;

		if (t.mode == OUT_VERBOSE)
			t.mode = OUT_SHORT_PRECISE;
		put_time(&b, &t, l->real_ns);
		sb_putc(&b, ' ');
	}
	if (o->host && o->mode != OUT_CAT)
		sb_printf(&b, "%s ", o->host);
	sb_printf(&b, "-- %llu events lost: %s", (unsigned long long)l->records, w);
	if (l->writer)
		sb_printf(&b, " (pid %u %s, thread %u%s%s)", l->writer->w.pid, l->writer->comm,
			  l->stream ? l->stream->s.tid : 0, l->provider ? ", provider " : "",
			  l->provider ? l->provider : "");
	if (l->event)
		sb_printf(&b, " event %s", l->event);
	if (levels) {
		const char *sep = " [";

		for (unsigned i = 0; i < 8; i++)
			if (l->by_level[i]) {
				sb_printf(&b, "%s%s %llu", sep, lvl[i], (unsigned long long)l->by_level[i]);
				sep = ", ";
			}
		sb_putc(&b, ']');
	}
	sb_puts(&b, " --\n");
	return sb_done(&b);
}

#ifdef _WIN32
bool out_pager_start(void)
{
	return false; /* the console has no less; more.com cannot take colour */
}

void out_pager_end(void)
{
}
#else
static pid_t pager_pid = -1;

bool out_pager_start(void)
{
	const char *p = getenv("RINGLOG_PAGER");
	int fds[2];
	pid_t pid;

	if (!p)
		p = getenv("PAGER");
	if (!p)
		p = "less";
	if (!*p || !strcmp(p, "cat"))
		return false;
	fflush(stdout);
	if (pipe(fds) < 0)
		return false;
	if ((pid = fork()) < 0) {
		close(fds[0]);
		close(fds[1]);
		return false;
	}
	if (pid == 0) {
		dup2(fds[0], 0);
		close(fds[0]);
		close(fds[1]);
		/* F: quit when it fits one screen, R: colours, S: no wrap,
		 * X: leave the screen as it is, M: verbose prompt, K: Ctrl-C
		 * quits (journalctl's choice) */
		setenv("LESS", "FRSXMK", 0);
		execl("/bin/sh", "sh", "-c", p, (char *)NULL);
		fprintf(stderr, "ringlog: cannot start the pager \"%s\": %s\n", p, strerror(errno));
		_exit(127);
	}
	close(fds[0]);
	if (dup2(fds[1], 1) < 0) {
		close(fds[1]);
		return false;
	}
	close(fds[1]);
	pager_pid = pid;
	return true;
}

void out_pager_end(void)
{
	int st;

	if (pager_pid < 0)
		return;
	fflush(stdout);
	fclose(stdout);
	close(1);
	while (waitpid(pager_pid, &st, 0) < 0 && errno == EINTR)
		;
	pager_pid = -1;
}
#endif
