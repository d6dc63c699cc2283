/* client/cli/common.c - filters, event printing, the daemon's error frames. */
#define _GNU_SOURCE
#include "cli.h"

#include <errno.h>
#ifndef _WIN32
#include <fnmatch.h>
#endif
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "compat-win.h"
#include "config.h"
#include "ctl.h"

void filter_init(struct filter *f)
{
	memset(f, 0, sizeof(*f));
	f->pid = f->uid = -1;
}

int parse_level(const char *s, unsigned *out)
{
	static const char *const names[] = { "", "critical", "error", "warning", "info", "verbose" };
	char *end;
	unsigned long v = strtoul(s, &end, 10);

	if (*s && !*end && v >= 1 && v <= 5) {
		*out = (unsigned)v;
		return 0;
	}
	for (unsigned i = 1; i <= 5; i++)
		if (!strcasecmp(s, names[i]) || !strcasecmp(s, ringlog_level_name(i))) {
			*out = i;
			return 0;
		}
	return -EINVAL;
}

/* "2026-11-21T10:00:00Z", "2026-11-21 10:00:00" (local), "-10m", "now". */
int parse_time(const char *s, uint64_t *out)
{
	uint64_t now, d;
	struct timespec ts;
	struct tm tm = { 0 };
	const char *end;

	clock_gettime(CLOCK_REALTIME, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	if (!strcmp(s, "now")) {
		*out = now;
		return 0;
	}
	if (s[0] == '-' && ringlog_parse_duration(s + 1, &d) == 0) {
		*out = d > now ? 0 : now - d;
		return 0;
	}
	if ((end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm)) ||
	    (end = strptime(s, "%Y-%m-%d %H:%M:%S", &tm)) ||
	    (end = strptime(s, "%Y-%m-%d", &tm))) {
		time_t t;

		if (*end == 'Z' && !end[1]) {
			t = timegm(&tm);
		} else if (!*end) {
			tm.tm_isdst = -1;
			t = mktime(&tm);
		} else {
			return -EINVAL;
		}
		*out = (uint64_t)t * 1000000000u;
		return 0;
	}
	return -EINVAL;
}

int filter_option(struct filter *f, int argc, char **argv, int *i)
{
	const char *o = argv[*i], *v = *i + 1 < argc ? argv[*i + 1] : NULL;
	char *end;

	if (strcmp(o, "--provider") && strcmp(o, "--event") && strcmp(o, "--level") &&
	    strcmp(o, "--keyword") && strcmp(o, "--pid") && strcmp(o, "--uid") &&
	    strcmp(o, "--since") && strcmp(o, "--until"))
		return 0;
	if (!v) {
		fprintf(stderr, "ringlog: %s needs a value\n", o);
		return -1;
	}
	(*i)++;
	if (!strcmp(o, "--provider"))
		f->provider = v;
	else if (!strcmp(o, "--event"))
		f->event = v;
	else if (!strcmp(o, "--level")) {
		if (parse_level(v, &f->level)) {
			fprintf(stderr, "ringlog: --level \"%s\": expected 1..5 or critical, error, warning, info, verbose\n", v);
			return -1;
		}
	} else if (!strcmp(o, "--keyword")) {
		errno = 0;
		f->keyword = strtoull(v, &end, 0);
		if (errno || *end) {
			fprintf(stderr, "ringlog: --keyword \"%s\": expected a mask like 0x10\n", v);
			return -1;
		}
	} else if (!strcmp(o, "--pid") || !strcmp(o, "--uid")) {
		long long n = strtoll(v, &end, 10);

		if (*end || n < 0) {
			fprintf(stderr, "ringlog: %s \"%s\": expected a number\n", o, v);
			return -1;
		}
		*(!strcmp(o, "--pid") ? &f->pid : &f->uid) = n;
	} else {
		if (parse_time(v, !strcmp(o, "--since") ? &f->since_ns : &f->until_ns)) {
			fprintf(stderr, "ringlog: %s \"%s\": expected ISO 8601 (2026-11-21T10:00:00Z) "
				"or relative (-10m)\n", o, v);
			return -1;
		}
	}
	return 1;
}

bool filter_match(const struct filter *f, const struct ringlog_dec_event *e)
{
	if (f->level && e->desc->level > f->level)
		return false;
	if (f->keyword && e->desc->keyword && !(e->desc->keyword & f->keyword))
		return false;
	if (f->pid >= 0 && e->writer->w.pid != (uint64_t)f->pid)
		return false;
	if (f->uid >= 0 && e->writer->w.uid != (uint64_t)f->uid)
		return false;
	if (f->provider && (!e->provider || fnmatch(f->provider, e->provider, 0)))
		return false;
	if (f->event && strcmp(f->event, e->desc->name))
		return false;
	if (f->since_ns && e->real_ns < f->since_ns)
		return false;
	if (f->until_ns && e->real_ns > f->until_ns)
		return false;
	return true;
}

static void put_json_str(const uint8_t *s, size_t n)
{
	putchar('"');
	for (size_t i = 0; i < n; i++) {
		unsigned char c = s[i];

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static void put_text_str(const uint8_t *s, size_t n)
{
	putchar('"');
	for (size_t i = 0; i < n; i++) {
		unsigned char c = s[i];

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c == '\n')
			fputs("\\n", stdout);
		else if (c < 0x20 || c == 0x7f)
			printf("\\x%02x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static void put_double(double d, bool json)
{
	if (isnan(d))
		fputs(json ? "\"nan\"" : "nan", stdout);
	else if (isinf(d))
		fputs(d > 0 ? (json ? "\"inf\"" : "inf") : (json ? "\"-inf\"" : "-inf"), stdout);
	else
		printf("%.17g", d);
}

static void put_value(const struct ringlog_value *v, bool json)
{
	const struct ringlog_field_desc *f = v->field;
	bool sign = f->type >= RINGLOG_TYPE_I8 && f->type <= RINGLOG_TYPE_I64;

	switch (f->type) {
	case RINGLOG_TYPE_F64:
		put_double(v->d, json);
		return;
	case RINGLOG_TYPE_BOOL:
		fputs(v->b ? "true" : "false", stdout);
		return;
	case RINGLOG_TYPE_STR:
		(json ? put_json_str : put_text_str)(v->data, v->len);
		if (v->truncated && !json)
			fputs("...(truncated)", stdout);
		return;
	case RINGLOG_TYPE_BLOB:
		putchar('"');
		for (uint32_t i = 0; i < v->len; i++)
			printf("%02x", v->data[i]);
		putchar('"');
		return;
	default:
		break;
	}
	switch (f->format) {
	case RINGLOG_FMT_HEX:
		printf(json ? "\"0x%llx\"" : "0x%llx", (unsigned long long)v->u);
		return;
	case RINGLOG_FMT_ERRNO:
		if (json)
			printf("%lld", (long long)v->i);
		else
			printf("%lld(%s)", (long long)v->i,
			       v->i > 0 && v->i < 4096 ? strerrorname_np((int)v->i) ?: "?" : "?");
		return;
	case RINGLOG_FMT_TIME: {
		time_t t = (time_t)(v->u / 1000000000u);
		struct tm tm;
		char b[64];

		gmtime_r(&t, &tm);
		strftime(b, sizeof(b), "%Y-%m-%dT%H:%M:%S", &tm);
		printf(json ? "\"%s.%09lluZ\"" : "%s.%09lluZ", b,
		       (unsigned long long)(v->u % 1000000000u));
		return;
	}
	default:
		break;
	}
	if (sign)
		printf("%lld", (long long)v->i);
	else
		printf("%llu", (unsigned long long)v->u);
}

static const char *level_color(unsigned l)
{
	static const char *const c[] = { "", "\033[1;31m", "\033[31m", "\033[33m", "\033[32m", "\033[2m" };

	return l <= 5 ? c[l] : "";
}

void print_event(const struct printer *p, const struct ringlog_dec_event *e)
{
	const struct ringlog_event_desc *d = e->desc;

	if (p->json) {
		printf("{\"type\":\"event\",\"time_ns\":%llu,\"level\":%u,\"provider\":",
		       (unsigned long long)e->real_ns, d->level);
		put_json_str((const uint8_t *)(e->provider ? e->provider : ""),
			     e->provider ? strlen(e->provider) : 0);
		printf(",\"event\":");
		put_json_str((const uint8_t *)d->name, strlen(d->name));
		printf(",\"keyword\":\"0x%llx\",\"opcode\":\"%s\",\"pid\":%u,\"tid\":%u,\"uid\":%u,\"comm\":",
		       (unsigned long long)d->keyword, ringlog_opcode_name(d->opcode),
		       e->writer->w.pid, e->stream->s.tid, e->writer->w.uid);
		put_json_str((const uint8_t *)e->writer->comm, strlen(e->writer->comm));
		if (e->activity) {
			printf(",\"activity\":\"");
			for (int i = 0; i < 16; i++)
				printf("%02x", e->activity[i]);
			putchar('"');
		}
		printf(",\"fields\":{");
		for (unsigned i = 0; i < d->nfields; i++) {
			if (i)
				putchar(',');
			put_json_str((const uint8_t *)d->fields[i].name, strlen(d->fields[i].name));
			putchar(':');
			put_value(&e->values[i], true);
		}
		printf("}");
		/* Which strings lost their tail at the source, by name. */
		unsigned ntrunc = 0;

		for (unsigned i = 0; i < d->nfields; i++)
			if (e->values[i].truncated) {
				fputs(ntrunc++ ? "," : ",\"truncated\":[", stdout);
				put_json_str((const uint8_t *)d->fields[i].name, strlen(d->fields[i].name));
			}
		printf("%s}\n", ntrunc ? "]" : "");
		return;
	}
	time_t t = (time_t)(e->real_ns / 1000000000u);
	struct tm tm;
	char b[64];

	localtime_r(&t, &tm);
	strftime(b, sizeof(b), "%Y-%m-%d %H:%M:%S", &tm);
	printf("%s.%06llu %s%-7s%s %s %s", b, (unsigned long long)(e->real_ns % 1000000000u / 1000u),
	       p->color ? level_color(d->level) : "", ringlog_level_name(d->level),
	       p->color ? "\033[0m" : "", e->provider ? e->provider : "?", d->name);
	if (d->opcode)
		printf("/%s", ringlog_opcode_name(d->opcode));
	printf(" [%u/%u]", e->writer->w.pid, e->stream->s.tid);
	for (unsigned i = 0; i < d->nfields; i++) {
		printf(" %s=", d->fields[i].name);
		put_value(&e->values[i], false);
	}
	putchar('\n');
}

/* A loss record passes the filters it can be judged by: its writer (pid,
 * uid), the provider the program attributed it to (none: it fails any
 * --provider) and its time. --event, --level and --keyword select events:
 * a loss is not known to be of any, so they leave it shown. A reader's own
 * loss (too slow) has no writer and always shows. Documented in ringlog(1). */
bool filter_loss(const struct filter *f, const struct ringlog_dec_loss *l)
{
	if (l->reason == RINGLOG_LOSS_READER && !l->writer)
		return true;
	if (f->pid >= 0 && (!l->writer || l->writer->w.pid != (uint64_t)f->pid))
		return false;
	if (f->uid >= 0 && (!l->writer || l->writer->w.uid != (uint64_t)f->uid))
		return false;
	if (f->provider && (!l->provider || fnmatch(f->provider, l->provider, 0)))
		return false;
	if (f->since_ns && l->real_ns && l->real_ns < f->since_ns)
		return false;
	if (f->until_ns && l->real_ns > f->until_ns)
		return false;
	return true;
}

void print_loss(const struct printer *p, const struct ringlog_dec_loss *l)
{
	static const char *const why[] = { "?", "ring overflow in the program",
		"disk full or write error in ringlogd", "this reader was too slow",
		"corrupt ring detached", "counted at exit" };
	static const char *const key[] = { "?", "ring", "disk", "reader", "corrupt", "exit" };
	const char *w = l->reason <= 5 ? why[l->reason] : "?";

	if (p->json) {
		/* The members an event has, where a loss has them, so that one
		 * jq filter reads both; "type" tells them apart. */
		printf("{\"type\":\"loss\",\"time_ns\":%llu,\"lost\":%llu,\"reason\":\"%s\","
		       "\"cause\":\"%s\"", (unsigned long long)l->real_ns, (unsigned long long)l->records,
		       w, l->reason <= 5 ? key[l->reason] : "?");
		if (l->provider) {
			printf(",\"provider\":");
			put_json_str((const uint8_t *)l->provider, strlen(l->provider));
		}
		printf(",\"pid\":%u,\"tid\":%u", l->writer ? l->writer->w.pid : 0,
		       l->stream ? l->stream->s.tid : 0);
		if (l->writer) {
			printf(",\"uid\":%u,\"comm\":", l->writer->w.uid);
			put_json_str((const uint8_t *)l->writer->comm, strlen(l->writer->comm));
		}
		printf("}\n");
		return;
	}
	if (l->real_ns) {
		time_t t = (time_t)(l->real_ns / 1000000000u);
		struct tm tm;
		char b[64];

		localtime_r(&t, &tm);
		strftime(b, sizeof(b), "%Y-%m-%d %H:%M:%S", &tm);
		printf("%s.%06llu ", b, (unsigned long long)(l->real_ns % 1000000000u / 1000u));
	}
	printf("-- %llu events lost: %s", (unsigned long long)l->records, w);
	if (l->writer)
		printf(" (pid %u %s, thread %u%s%s)", l->writer->w.pid, l->writer->comm,
		       l->stream ? l->stream->s.tid : 0, l->provider ? ", provider " : "",
		       l->provider ? l->provider : "");
	printf(" --\n");
}

void cli_print_error(const char *who, const uint8_t *payload)
{
	json_t *e = json_loads((const char *)payload, 0, NULL);
	const char *msg = json_string_value(json_object_get(e, "error"));

	fprintf(stderr, "%s: ringlogd says: %s\n", who, msg ? msg : (const char *)payload);
	json_decref(e);
}

const char *socket_path(const char *opt)
{
	const char *s = getenv("RINGLOG_SOCKET");

	if (opt)
		return opt;
	return s && *s ? s : RINGLOG_SOCKET_DEFAULT;
}

int cli_send(int fd, uint16_t type, const void *p, uint32_t len)
{
	struct ringlog_ctl_frame f = { .len = len, .type = type };

	if (cli_write_full(fd, &f, sizeof(f)) < 0 || (len && cli_write_full(fd, p, len) < 0))
		return -EPIPE;
	return 0;
}

long cli_recv(int fd, uint16_t *type, uint8_t **payload)
{
	struct ringlog_ctl_frame f;
	int r = cli_read_full(fd, &f, sizeof(f));

	*payload = NULL;
	if (r <= 0)
		return r;
	if (f.len > RINGLOG_CTL_MAX)
		return -EPROTO;
	*type = f.type;
	*payload = malloc(f.len + 1);
	if (!*payload)
		return -ENOMEM;
	(*payload)[f.len] = 0;
	if (f.len && (r = cli_read_full(fd, *payload, f.len)) <= 0) {
		free(*payload);
		*payload = NULL;
		return r ? r : -EPIPE;
	}
	return (long)f.len;
}
