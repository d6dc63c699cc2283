/* client/cli/output.h - how `ringlog read` and `tail` show events: the
 * output modes (-o), colour (--color, NO_COLOR, TERM=dumb) and the pager.
 * Events render into strings, so that read can sort them and --grep can
 * match the line a user sees. */
#ifndef RINGLOG_CLI_OUTPUT_H
#define RINGLOG_CLI_OUTPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "decode.h"

enum out_mode {
	OUT_SHORT,         /* local time with µs, level, provider, event, [pid/tid], fields */
	OUT_SHORT_ISO,     /* ISO 8601 time with the zone offset, to the second */
	OUT_SHORT_PRECISE, /* time to the nanosecond */
	OUT_CAT,           /* the fields only */
	OUT_VERBOSE,       /* every member on its own line */
	OUT_JSON,          /* one object per line */
	OUT_JSON_PRETTY,   /* one indented object per event */
};

struct output {
	enum out_mode mode;
	bool color;
	bool utc;          /* times in UTC rather than local time */
	const char *host;  /* events read from a cluster (--nats): their host,
	                    * shown after the time; NULL: a local store */
};

/* -o NAME. Returns 0 or -EINVAL. */
int out_parse_mode(const char *s, enum out_mode *m);
extern const char out_mode_names[];

enum out_when { OUT_AUTO, OUT_ALWAYS, OUT_NEVER };
/* --color[=WHEN]. Returns 0 or -EINVAL. */
int out_parse_when(const char *s, enum out_when *w);
/* Colour for fd under no-color.org's rules: always/never as told; auto
 * when fd is a terminal, NO_COLOR is unset or empty and TERM is not
 * "dumb". */
bool out_color(enum out_when w, int fd);

/* One event or loss as the mode shows it, newline included; malloc'ed
 * (NULL when out of memory). */
char *out_event(const struct output *o, const struct ringlog_dec_event *e);
char *out_loss(const struct output *o, const struct ringlog_dec_loss *l);
/* Why a loss happened, as read shows it ("ring overflow in the program"),
 * and *cause (when not NULL) its one-word key ("ring"). */
const char *out_loss_why(unsigned reason, const char **cause);
/* The short line without colour, no newline: what --grep matches. */
char *out_short_plain(const struct ringlog_dec_event *e);
/* "2026-11-23 10:00:00" in the output's zone, for header lines. */
void out_time(const struct output *o, uint64_t ns, char *buf, size_t len);

/* The pager: on a terminal unless told not to, $RINGLOG_PAGER, then
 * $PAGER, then less (with LESS=FRSXMK unless LESS is set); "" or "cat"
 * means none. stdout goes to it until out_pager_end(), which waits for it.
 * Returns true when a pager was started. */
bool out_pager_start(void);
void out_pager_end(void);

#endif /* RINGLOG_CLI_OUTPUT_H */
