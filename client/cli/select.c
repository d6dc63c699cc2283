/* client/cli/select.c - the selection shared by read, tail (and export):
 * time forms, priority ranges, FIELD=VALUE matches, globs, --grep. */
#define _GNU_SOURCE
#include "select.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "compat-win.h"
#include "output.h"

#define NS 1000000000ull

void sel_init(struct selection *s)
{
	memset(s, 0, sizeof(*s));
	ringlog_match_init(&s->m);
}

void sel_free(struct selection *s)
{
	ringlog_match_free(&s->m);
#ifndef _WIN32
	if (s->grep_given)
		regfree(&s->grep);
#endif
	free(s->grep_pattern);
	if (s->met)
		free(s->met->f);
	free(s->met);
	sel_init(s);
}

/* What the field filters meet in events of type d (once per run of one
 * type: runs are long). */
static void met_fields(struct sel_met *met, const struct ringlog_match *m,
		       const struct ringlog_event_desc *d)
{
	met->last_desc = d;
	for (unsigned i = 0; i < m->nfields && i < met->nfields; i++)
		for (unsigned k = 0; k < d->nfields; k++) {
			if (strcmp(d->fields[k].name, m->fields[i].name))
				continue;
			met->f[i].types |= 1u << (d->fields[k].type & 31);
			for (unsigned v = 0; v < m->fields[i].nvalues && !met->f[i].fits; v++)
				met->f[i].fits = ringlog_match_fits(d->fields[k].type,
								    m->fields[i].values[v]);
		}
}

void sel_explain(const struct selection *s, const char *cmd, bool following)
{
	const struct ringlog_match *m = &s->m;
	/* a follow goes on: live events meet the same filter (the daemon's) */
	const char *read = following ? "stored" : "read";
	const char *then = following ? "; still following (Ctrl-C ends)" : "";

	if (!s->met || !s->met->last_desc) /* no event read */
		return;
	for (unsigned i = 0; i < m->nfields && i < s->met->nfields; i++) {
		char types[120] = "";
		size_t used = 0;

		if (s->met->f[i].fits)
			continue;
		if (!s->met->f[i].types) {
			fprintf(stderr, "ringlog %s: %s=...: no event %s has a field named \"%s\"%s\n",
				cmd, m->fields[i].name, read, m->fields[i].name, then);
			continue;
		}
		for (unsigned t = 0; t < 32; t++)
			if (s->met->f[i].types & (1u << t))
				used += (size_t)snprintf(types + used, used < sizeof(types) ?
							 sizeof(types) - used : 0, "%s%s",
							 used ? ", " : "", ringlog_type_name(t));
		fprintf(stderr, "ringlog %s: %s=%s%s: the field is %s in the events %s, and no value "
			"given is one, so nothing matched (ringlog read --help: FIELD=VALUE)%s\n", cmd,
			m->fields[i].name, m->fields[i].values[0],
			m->fields[i].nvalues > 1 ? ",..." : "", types, read, then);
	}
}

/* "1795428000" or "1795428000.25" seconds into ns, exactly (a double
 * would round: ns since the epoch need 61 bits). Returns 0 or -EINVAL. */
static int parse_epoch(const char *s, uint64_t *out)
{
	uint64_t sec = 0, frac = 0, scale = NS / 10;
	const char *p = s;

	if (!isdigit((unsigned char)*p))
		return -EINVAL;
	for (; isdigit((unsigned char)*p); p++) {
		if (sec > UINT64_MAX / NS / 10)
			return -EINVAL;
		sec = sec * 10 + (uint64_t)(*p - '0');
	}
	if (*p == '.')
		for (p++; isdigit((unsigned char)*p); p++, scale /= 10)
			frac += (uint64_t)(*p - '0') * scale;
	if (*p || sec > UINT64_MAX / NS - 1)
		return -EINVAL;
	*out = sec * NS + frac;
	return 0;
}

uint64_t sel_now_ns(void)
{
	const char *e = getenv("RINGLOG_NOW");
	struct timespec ts;
	uint64_t v;

	if (e && *e && parse_epoch(e, &v) == 0)
		return v;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * NS + (uint64_t)ts.tv_nsec;
}

const char sel_time_forms[] =
	"2026-11-23T10:00:00Z, 2026-11-23T10:00:00+01:00, \"[Mon] 2026-11-23 10:00[:00]\" (local), "
	"2026-11-23, 10:00[:00] (today), today, yesterday, tomorrow, now, -1h30m, +5m, "
	"\"10 min ago\", @1763892000";

/* systemd.time(7) time spans: "1h30m", "10 min", "2 days 3h", a bare
 * number of seconds. Returns 0 or -EINVAL. */
static int parse_span(const char *s, uint64_t *out)
{
	static const struct { const char *u; double ns; } units[] = {
		{ "usec", 1e3 }, { "us", 1e3 }, { "µs", 1e3 }, { "msec", 1e6 }, { "ms", 1e6 },
		{ "seconds", 1e9 }, { "second", 1e9 }, { "sec", 1e9 }, { "s", 1e9 },
		{ "minutes", 60e9 }, { "minute", 60e9 }, { "min", 60e9 },
		{ "hours", 3600e9 }, { "hour", 3600e9 }, { "hr", 3600e9 }, { "h", 3600e9 },
		{ "days", 86400e9 }, { "day", 86400e9 }, { "d", 86400e9 },
		{ "weeks", 604800e9 }, { "week", 604800e9 }, { "w", 604800e9 },
		{ "months", 2629800e9 }, { "month", 2629800e9 }, { "M", 2629800e9 },
		{ "years", 31557600e9 }, { "year", 31557600e9 }, { "y", 31557600e9 },
		{ "m", 60e9 },
	};
	double total = 0;
	bool any = false;

	while (*s) {
		char *end;
		double v;
		size_t best = 0;
		double mult = 1e9;

		while (*s == ' ')
			s++;
		if (!*s)
			break;
		if (!isdigit((unsigned char)*s) && *s != '.')
			return -EINVAL;
		v = strtod(s, &end);
		if (end == s || v < 0)
			return -EINVAL;
		s = end;
		while (*s == ' ')
			s++;
		/* the longest unit name that matches, followed by a non-letter */
		for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
			size_t l = strlen(units[i].u);

			if (l > best && !strncmp(s, units[i].u, l) && !isalpha((unsigned char)s[l])) {
				best = l;
				mult = units[i].ns;
			}
		}
		if (!best && *s && !isdigit((unsigned char)*s))
			return -EINVAL;
		s += best;
		total += v * mult;
		any = true;
	}
	if (!any || total > 1.8e19)
		return -EINVAL;
	*out = (uint64_t)total;
	return 0;
}

/* "Z", "UTC", "+01:00", "+0100", "-05" after a time; *off in seconds east.
 * Returns 1 when a zone was there, 0 when s is empty, -EINVAL otherwise. */
static int parse_zone(const char *s, long *off)
{
	int h, m = 0, n = 0;

	while (*s == ' ')
		s++;
	if (!*s)
		return 0;
	if (!strcmp(s, "Z") || !strcasecmp(s, "UTC") || !strcasecmp(s, "GMT")) {
		*off = 0;
		return 1;
	}
	if ((*s == '+' || *s == '-') &&
	    (sscanf(s + 1, "%2d:%2d%n", &h, &m, &n) == 2 || sscanf(s + 1, "%2d%2d%n", &h, &m, &n) == 2 ||
	     (m = 0, sscanf(s + 1, "%2d%n", &h, &n) == 1)) &&
	    !s[1 + n] && h <= 23 && m <= 59) {
		*off = (h * 3600L + m * 60L) * (*s == '-' ? -1 : 1);
		return 1;
	}
	return -EINVAL;
}

static uint64_t day_start(uint64_t now_ns, int add_days)
{
	time_t t = (time_t)(now_ns / NS);
	struct tm tm;

	localtime_r(&t, &tm);
	tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
	tm.tm_mday += add_days;
	tm.tm_isdst = -1;
	t = mktime(&tm);
	return t < 0 ? 0 : (uint64_t)t * NS;
}

static const char *const day_names[] = { "Sunday", "Monday", "Tuesday", "Wednesday",
					 "Thursday", "Friday", "Saturday" };

int sel_parse_time(const char *s, uint64_t now_ns, uint64_t *out, char *why, size_t len)
{
	struct tm tm = { 0 };
	uint64_t span, frac = 0;
	const char *p;
	size_t l = strlen(s);
	int y, mo, d, h = 0, mi = 0, sec = 0, n = 0;
	long off = 0;
	int zone, wday = -1;
	time_t t;

	if (why && len)
		why[0] = '\0';
	while (*s == ' ')
		s++;
	if (!strcmp(s, "now")) {
		*out = now_ns;
		return 0;
	}
	if (!strcmp(s, "today") || !strcmp(s, "yesterday") || !strcmp(s, "tomorrow")) {
		*out = day_start(now_ns, s[0] == 'y' ? -1 : s[1] == 'o' && s[2] == 'm' ? 1 : 0);
		return 0;
	}
	if (*s == '@')
		return parse_epoch(s + 1, out);
	if ((*s == '-' || *s == '+') && parse_span(s + 1, &span) == 0) {
		*out = *s == '+' ? now_ns + span : span > now_ns ? 0 : now_ns - span;
		return 0;
	}
	if (l > 4 && !strcmp(s + l - 4, " ago")) {
		char *b = strndup(s, l - 4);
		int r = b ? parse_span(b, &span) : -ENOMEM;

		free(b);
		if (r)
			return -EINVAL;
		*out = span > now_ns ? 0 : now_ns - span;
		return 0;
	}
	if (!strncmp(s, "in ", 3) && parse_span(s + 3, &span) == 0) {
		*out = now_ns + span;
		return 0;
	}
	/* systemd's optional weekday ("Mon 2026-11-23 ..."), checked below */
	for (int i = 0; i < 7; i++) {
		size_t wl = strcspn(s, " ");

		if (wl >= 3 && s[wl] == ' ' && !strncasecmp(s, day_names[i], wl) &&
		    (wl == 3 || wl == strlen(day_names[i]))) {
			wday = i;
			for (s += wl; *s == ' '; s++)
				;
			break;
		}
	}
	/* YYYY-MM-DD[(T| )HH:MM[:SS[.frac]]][zone] */
	if (sscanf(s, "%4d-%2d-%2d%n", &y, &mo, &d, &n) == 3 && n == 10) {
		p = s + n;
		tm.tm_year = y - 1900;
		tm.tm_mon = mo - 1;
		tm.tm_mday = d;
		if ((*p == 'T' || *p == ' ') && isdigit((unsigned char)p[1])) {
			p++;
			goto clock_time;
		}
		goto zone;
	}
	/* HH:MM[:SS] today */
	if (isdigit((unsigned char)s[0]) && wday < 0) {
		time_t nt = (time_t)(now_ns / NS);

		localtime_r(&nt, &tm);
		p = s;
		goto clock_time;
	}
	return -EINVAL;

clock_time:
	n = 0;
	if (sscanf(p, "%2d:%2d%n", &h, &mi, &n) != 2 || n != 5)
		return -EINVAL;
	p += n;
	if (*p == ':') {
		if (sscanf(p + 1, "%2d%n", &sec, &n) != 1 || n != 2)
			return -EINVAL;
		p += 3;
		if (*p == '.') {
			uint64_t scale = NS / 10;

			for (p++; isdigit((unsigned char)*p); p++, scale /= 10)
				frac += (uint64_t)(*p - '0') * scale;
		}
	}
	if (h > 23 || mi > 59 || sec > 60)
		return -EINVAL;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec;
zone:
	if ((zone = parse_zone(p, &off)) < 0)
		return -EINVAL;
	if (tm.tm_mon < 0 || tm.tm_mon > 11 || tm.tm_mday < 1 || tm.tm_mday > 31)
		return -EINVAL;
	{
		/* a day the month does not have (2026-02-30) is refused, not
		 * rolled into the next month as mktime() would */
		static const int mdays[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
		int yr = tm.tm_year + 1900;
		bool leap = (yr % 4 == 0 && yr % 100 != 0) || yr % 400 == 0;

		if (tm.tm_mday > mdays[tm.tm_mon] + (tm.tm_mon == 1 && leap)) {
			if (why)
				snprintf(why, len, "%04d-%02d has %d days", yr, tm.tm_mon + 1,
					 mdays[tm.tm_mon] + (tm.tm_mon == 1 && leap));
			return -EINVAL;
		}
	}
	if (zone) {
		t = timegm(&tm) - off;
	} else {
		tm.tm_isdst = -1;
		t = mktime(&tm);
	}
	if (t < 0)
		return -EINVAL;
	if (wday >= 0) { /* the weekday must be that date's, as systemd checks */
		struct tm c;
		time_t ct = t + (zone ? off : 0);

		if ((zone ? gmtime_r(&ct, &c) : localtime_r(&t, &c)) == NULL)
			return -EINVAL;
		if (c.tm_wday != wday) {
			if (why)
				snprintf(why, len, "%04d-%02d-%02d is a %s, not a %s", c.tm_year + 1900,
					 c.tm_mon + 1, c.tm_mday, day_names[c.tm_wday], day_names[wday]);
			return -EINVAL;
		}
	}
	*out = (uint64_t)t * NS + frac;
	return 0;
}

const char sel_priority_forms[] =
	"a level (critical, error, warning, info, verbose, 1..5, or journalctl's emerg, alert, "
	"crit, err, notice, debug) or a range like err..info";

static int level_of(const char *s, size_t n, unsigned *out)
{
	static const struct { const char *name; unsigned level; } names[] = {
		{ "emerg", 1 }, { "alert", 1 }, { "crit", 1 }, { "critical", 1 },
		{ "err", 2 }, { "error", 2 }, { "warning", 3 }, { "warn", 3 },
		{ "notice", 4 }, { "info", 4 }, { "debug", 5 }, { "verbose", 5 },
	};

	if (n == 1 && s[0] >= '1' && s[0] <= '5') {
		*out = (unsigned)(s[0] - '0');
		return 0;
	}
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strlen(names[i].name) == n && !strncasecmp(s, names[i].name, n)) {
			*out = names[i].level;
			return 0;
		}
	return -EINVAL;
}

int sel_parse_priority(const char *s, unsigned *min, unsigned *max)
{
	const char *dots = strstr(s, "..");
	unsigned a, b;

	if (!dots) {
		if (level_of(s, strlen(s), &b))
			return -EINVAL;
		*min = 1; /* that level and everything more severe */
		*max = b;
		return 0;
	}
	/* an open end means the far end of the scale */
	if (dots == s)
		a = 1;
	else if (level_of(s, (size_t)(dots - s), &a))
		return -EINVAL;
	if (!dots[2])
		b = 5;
	else if (level_of(dots + 2, strlen(dots + 2), &b))
		return -EINVAL;
	*min = a < b ? a : b;
	*max = a < b ? b : a;
	return 0;
}

int sel_add_field(struct selection *s, const char *arg)
{
	const char *eq = strchr(arg, '=');

	int err;

	if (!eq || eq == arg)
		return -EINVAL;
	err = ringlog_match_add_field(&s->m, arg, (size_t)(eq - arg), eq + 1);
	if (err)
		return err;
	if (!s->met && !(s->met = calloc(1, sizeof(*s->met))))
		return -ENOMEM;
	if (s->met->nfields < s->m.nfields) {
		void *f = realloc(s->met->f, s->m.nfields * sizeof(*s->met->f));

		if (!f)
			return -ENOMEM;
		s->met->f = f;
		memset(&s->met->f[s->met->nfields], 0,
		       (s->m.nfields - s->met->nfields) * sizeof(*s->met->f));
		s->met->nfields = s->m.nfields;
	}
	return 0;
}

bool sel_match(const struct selection *s, const struct ringlog_dec_event *e)
{
	if (s->m.nfields && s->met && s->met->f && e->desc != s->met->last_desc)
		met_fields(s->met, &s->m, e->desc);
	if (!ringlog_match_event(&s->m, e->provider, e->desc, e->writer->w.pid, e->writer->w.uid,
				 e->values))
		return false;
	if (s->since_ns && e->real_ns < s->since_ns)
		return false;
	if (s->until_ns && e->real_ns > s->until_ns)
		return false;
	if (s->grep_given) {
		/* the line as `-o short` shows it, without colour or zone
		 * dependence beyond what the user sees */
		char *line = out_short_plain(e);
#ifdef _WIN32
		bool ok = line && strstr(line, s->grep_pattern);
#else
		bool ok = line && regexec(&s->grep, line, 0, NULL, 0) == 0;
#endif

		free(line);
		if (!ok)
			return false;
	}
	return true;
}

/* A loss passes the filters it can be judged by: its writer (pid, uid),
 * the provider the program attributed it to (none: it fails any
 * --provider) and its time. Event names, levels, keywords, fields and
 * --grep select events: a loss is not known to be of any, so they leave
 * it shown. A reader's own loss (too slow) has no writer and always shows. */
bool sel_match_loss(const struct selection *s, const struct ringlog_dec_loss *l)
{
	if (l->reason == RINGLOG_LOSS_READER && !l->writer)
		return true;
	if (!ringlog_match_loss(&s->m, l->provider, l->writer != NULL, l->writer ? l->writer->w.pid : 0,
				l->writer ? l->writer->w.uid : 0))
		return false;
	if (s->since_ns && l->real_ns && l->real_ns < s->since_ns)
		return false;
	if (s->until_ns && l->real_ns > s->until_ns)
		return false;
	return true;
}

int sel_set_grep(struct selection *s, const char *pattern, char *err, size_t len)
{
	bool caps = false;

	for (const char *p = pattern; *p; p++)
		caps |= isupper((unsigned char)*p) != 0;
	if (s->grep_given)
		return -EINVAL; /* one pattern: alternatives go in it with | */
	if (!(s->grep_pattern = strdup(pattern)))
		return -ENOMEM;
#ifndef _WIN32
	int r = regcomp(&s->grep, pattern, REG_EXTENDED | REG_NOSUB | (caps ? 0 : REG_ICASE));

	if (r) {
		regerror(r, &s->grep, err, len);
		regfree(&s->grep);
		free(s->grep_pattern);
		s->grep_pattern = NULL;
		return -EINVAL;
	}
#else
	(void)caps;
	(void)err;
	(void)len;
#endif
	s->grep_given = true;
	return 0;
}

bool sel_time_overlaps(const struct selection *s, uint64_t first, uint64_t last)
{
	if (s->since_ns && last < s->since_ns)
		return false;
	if (s->until_ns && first > s->until_ns)
		return false;
	return true;
}
