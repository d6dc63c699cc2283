/* proto/match.c - the event matcher the daemon and the command share. */
#define _GNU_SOURCE
#include "match.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#ifdef _WIN32
#include "compat-win.h" /* fnmatch */
#else
#include <fnmatch.h>
#endif

#include "event.h"

void ringlog_match_init(struct ringlog_match *m)
{
	memset(m, 0, sizeof(*m));
	m->level_min = 1;
	m->level_max = 5;
	m->pid = m->uid = -1;
}

static void free_list(char **l, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		free(l[i]);
	free(l);
}

void ringlog_match_free(struct ringlog_match *m)
{
	free_list(m->providers, m->nproviders);
	free_list(m->events, m->nevents);
	for (unsigned i = 0; i < m->nfields; i++) {
		free(m->fields[i].name);
		free_list(m->fields[i].values, m->fields[i].nvalues);
	}
	free(m->fields);
	ringlog_match_init(m);
}

int ringlog_match_add_glob(char ***list, unsigned *n, const char *glob)
{
	char **l = realloc(*list, (*n + 1) * sizeof(char *));

	if (!l)
		return -ENOMEM;
	*list = l;
	if (!(l[*n] = strdup(glob)))
		return -ENOMEM;
	(*n)++;
	return 0;
}

int ringlog_match_add_field(struct ringlog_match *m, const char *name, size_t name_len,
			    const char *value)
{
	struct ringlog_match_field *f;

	for (unsigned i = 0; i < m->nfields; i++)
		if (strlen(m->fields[i].name) == name_len && !strncmp(m->fields[i].name, name, name_len))
			return ringlog_match_add_glob(&m->fields[i].values, &m->fields[i].nvalues, value);
	f = realloc(m->fields, (m->nfields + 1) * sizeof(*f));
	if (!f)
		return -ENOMEM;
	m->fields = f;
	f += m->nfields;
	memset(f, 0, sizeof(*f));
	if (!(f->name = strndup(name, name_len)))
		return -ENOMEM;
	m->nfields++;
	return ringlog_match_add_glob(&f->values, &f->nvalues, value);
}

static bool glob_any(char *const *globs, unsigned n, const char *s)
{
	if (!n)
		return true;
	for (unsigned i = 0; s && i < n; i++)
		if (!fnmatch(globs[i], s, 0))
			return true;
	return false;
}

static int hexval(int c)
{
	return isdigit(c) ? c - '0' : isxdigit(c) ? (tolower(c) - 'a' + 10) : -1;
}

/* The text forms of ringlog_match_value(), parsed: false when v is not
 * one. */
static bool parse_int(const char *v, long long *x)
{
	char *end;

	errno = 0;
	/* base 0: decimal, or 0x... (a hex field shows its value so) */
	if (!strncasecmp(v, "0x", 2) || !strncasecmp(v, "-0x", 3)) {
		unsigned long long u = strtoull(v[0] == '-' ? v + 1 : v, &end, 16);

		*x = v[0] == '-' ? -(long long)u : (long long)u;
	} else {
		*x = strtoll(v, &end, 10);
	}
	return !errno && end != v && !*end;
}

static bool parse_uint(const char *v, unsigned long long *x)
{
	char *end;

	if (v[0] == '-')
		return false;
	errno = 0;
	*x = strtoull(v, &end, !strncasecmp(v, "0x", 2) ? 16 : 10);
	return !errno && end != v && !*end;
}

static bool parse_f64(const char *v, double *x)
{
	char *end;

	if (!strcasecmp(v, "nan")) {
		*x = NAN;
		return true;
	}
	*x = strtod(v, &end);
	return end != v && !*end;
}

/* 1 true, 0 false, -1 neither */
static int parse_bool(const char *v)
{
	if (!strcasecmp(v, "true") || !strcmp(v, "1") || !strcasecmp(v, "yes"))
		return 1;
	if (!strcasecmp(v, "false") || !strcmp(v, "0") || !strcasecmp(v, "no"))
		return 0;
	return -1;
}

/* hex digits, 0x optional: how many bytes, or -1 */
static long hex_len(const char *v)
{
	size_t n;

	if (!strncasecmp(v, "0x", 2))
		v += 2;
	n = strlen(v);
	for (size_t i = 0; i < n; i++)
		if (hexval((unsigned char)v[i]) < 0)
			return -1;
	return n % 2 ? -1 : (long)(n / 2);
}

bool ringlog_match_value(const struct ringlog_value *val, const char *v)
{
	const struct ringlog_field_desc *f = val->field;

	switch (f->type) {
	case RINGLOG_TYPE_I8: case RINGLOG_TYPE_I16: case RINGLOG_TYPE_I32: case RINGLOG_TYPE_I64: {
		long long x;

		if (!parse_int(v, &x))
			return false;
		/* a hex-shown field carries the bits: 0xff is -1 for an i8 */
		if (f->format == RINGLOG_FMT_HEX)
			return (uint64_t)x == val->u || x == val->i;
		return x == val->i;
	}
	case RINGLOG_TYPE_U8: case RINGLOG_TYPE_U16: case RINGLOG_TYPE_U32: case RINGLOG_TYPE_U64: {
		unsigned long long x;

		return parse_uint(v, &x) && x == val->u;
	}
	case RINGLOG_TYPE_F64: {
		double x;

		if (!parse_f64(v, &x))
			return false;
		return isnan(x) ? isnan(val->d) : x == val->d;
	}
	case RINGLOG_TYPE_BOOL: {
		int b = parse_bool(v);

		return b >= 0 && (bool)b == val->b;
	}
	case RINGLOG_TYPE_STR:
		return strlen(v) == val->len && !memcmp(v, val->data, val->len);
	case RINGLOG_TYPE_BLOB:
		if (hex_len(v) != (long)val->len)
			return false;
		if (!strncasecmp(v, "0x", 2))
			v += 2;
		for (uint32_t i = 0; i < val->len; i++)
			if ((unsigned)(hexval((unsigned char)v[2 * i]) * 16 +
				       hexval((unsigned char)v[2 * i + 1])) != val->data[i])
				return false;
		return true;
	default:
		return false;
	}
}

bool ringlog_match_fits(uint8_t type, const char *v)
{
	long long i;
	unsigned long long u;
	double d;

	switch (type) {
	case RINGLOG_TYPE_I8: case RINGLOG_TYPE_I16: case RINGLOG_TYPE_I32: case RINGLOG_TYPE_I64:
		return parse_int(v, &i);
	case RINGLOG_TYPE_U8: case RINGLOG_TYPE_U16: case RINGLOG_TYPE_U32: case RINGLOG_TYPE_U64:
		return parse_uint(v, &u);
	case RINGLOG_TYPE_F64:
		return parse_f64(v, &d);
	case RINGLOG_TYPE_BOOL:
		return parse_bool(v) >= 0;
	case RINGLOG_TYPE_STR:
		return true;
	case RINGLOG_TYPE_BLOB:
		return hex_len(v) >= 0;
	default:
		return false;
	}
}

static bool fields_match(const struct ringlog_match *m, const struct ringlog_event_desc *d,
			 const struct ringlog_value *values)
{
	for (unsigned i = 0; i < m->nfields; i++) {
		const struct ringlog_match_field *f = &m->fields[i];
		bool ok = false;

		for (unsigned k = 0; k < d->nfields && !ok; k++) {
			if (strcmp(d->fields[k].name, f->name))
				continue;
			for (unsigned v = 0; v < f->nvalues && !ok; v++)
				ok = ringlog_match_value(&values[k], f->values[v]);
		}
		if (!ok) /* an event without the field does not match it */
			return false;
	}
	return true;
}

bool ringlog_match_event(const struct ringlog_match *m, const char *provider,
			 const struct ringlog_event_desc *d, uint64_t pid, uint64_t uid,
			 const struct ringlog_value *values)
{
	if (d->level < m->level_min || d->level > m->level_max)
		return false;
	if (m->keyword && d->keyword && !(d->keyword & m->keyword))
		return false;
	if (m->pid >= 0 && pid != (uint64_t)m->pid)
		return false;
	if (m->uid >= 0 && uid != (uint64_t)m->uid)
		return false;
	if (!glob_any(m->providers, m->nproviders, provider) || !glob_any(m->events, m->nevents, d->name))
		return false;
	return !m->nfields || (values && fields_match(m, d, values));
}

bool ringlog_match_loss(const struct ringlog_match *m, const char *provider, bool has_writer,
			uint64_t pid, uint64_t uid)
{
	if (m->pid >= 0 && (!has_writer || pid != (uint64_t)m->pid))
		return false;
	if (m->uid >= 0 && (!has_writer || uid != (uint64_t)m->uid))
		return false;
	return !m->nproviders || glob_any(m->providers, m->nproviders, provider);
}
