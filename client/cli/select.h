/* client/cli/select.h - which events `ringlog read`, `tail` (and later
 * `export`) show: the options they share, parsed once, and one matcher
 * applied to stored events (read) and to the live stream (tail, read -f)
 * alike. The daemon pre-filters the live stream on the coarse part
 * (provider and event globs, priority range, keyword, pid, uid: the TAIL
 * request in proto/ctl.h); this matcher then applies everything, so both
 * paths show exactly the same events.
 */
#ifndef RINGLOG_CLI_SELECT_H
#define RINGLOG_CLI_SELECT_H

#ifndef _WIN32
#include <regex.h>
#endif
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "decode.h"
#include "match.h"

struct selection {
	struct ringlog_match m;  /* what the daemon can judge too (proto/match.h) */
	bool level_given;        /* -p/--level was given */
	uint64_t since_ns, until_ns; /* 0: open */
	bool grep_given;
	char *grep_pattern;
	/* What the FIELD=VALUE filters met, for sel_explain(): by field
	 * filter, the types its name had in the events read and whether a
	 * value of it fits one of them (allocated on first use; a pointer,
	 * since matching takes the selection const) */
	struct sel_met {
		const void *last_desc;    /* the events' type last looked at */
		unsigned nfields;
		struct { uint32_t types; bool fits; } *f;
	} *met;
#ifndef _WIN32
	regex_t grep;            /* on the event's short line, without colour */
#endif                           /* Windows (no POSIX regex in mingw-w64):
	                          * the pattern is a plain substring */
};

void sel_init(struct selection *s);
void sel_free(struct selection *s);

/* After a read: a FIELD=VALUE filter that could match nothing says why on
 * stderr (no event read had the field; its value is not of the field's
 * type, as "status=abc" for an integer). An outsider's test: a value of
 * the wrong type matched nothing, without a word. following: said by a
 * tail after the stored events it showed, which then waits on. */
void sel_explain(const struct selection *s, const char *cmd, bool following);

/* The clock the time forms are relative to: $RINGLOG_NOW (seconds since
 * the epoch, fraction allowed; for tests) or CLOCK_REALTIME. */
uint64_t sel_now_ns(void);

/* --since/--until: the forms of systemd.time(7) that apply. Returns 0 with
 * *out in ns since the epoch, or -EINVAL; then why (when not NULL) says
 * what is wrong with a date of the right form ("2026-02 has 28 days", a
 * weekday not the date's), or is empty. */
int sel_parse_time(const char *s, uint64_t now_ns, uint64_t *out, char *why, size_t len);
/* What sel_parse_time() accepts, for messages. */
extern const char sel_time_forms[];

/* -p: "warning" (that level and more severe), "err..info", "2..4", with
 * journalctl's names (emerg, alert, crit, err, notice, debug) mapped onto
 * our five. Returns 0 or -EINVAL. */
int sel_parse_priority(const char *s, unsigned *min, unsigned *max);
extern const char sel_priority_forms[];

/* Add one FIELD=VALUE argument. Returns 0, -EINVAL (no name) or -ENOMEM. */
int sel_add_field(struct selection *s, const char *arg);

/* Does the event pass? ringlog_match_event(), then the times and --grep
 * (on the short line, rendered only then). */
bool sel_match(const struct selection *s, const struct ringlog_dec_event *e);
/* A loss passes the filters it can be judged by (ringlog(1) LOSSES). */
bool sel_match_loss(const struct selection *s, const struct ringlog_dec_loss *l);

/* --grep: compile the pattern (POSIX extended; case-insensitive when it
 * has no capital, as journalctl's). Returns 0, or -EINVAL with the
 * regcomp message in err. */
int sel_set_grep(struct selection *s, const char *pattern, char *err, size_t len);

/* Does a segment's or a chunk's time range [first, last] overlap the
 * selection's? */
bool sel_time_overlaps(const struct selection *s, uint64_t first, uint64_t last);

#endif /* RINGLOG_CLI_SELECT_H */
