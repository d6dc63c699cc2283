/* proto/match.h - which events a reader asked for, judged the same way by
 * the daemon (the live `ringlog tail` stream, daemon/sink/tail.c) and by the
 * command (stored events, client/cli/select.c): provider and event globs,
 * a level range, keywords, the writer, and FIELD=VALUE matches compared by
 * the field's type. What only the command can judge (times, --grep on the
 * rendered line) stays in the command.
 */
#ifndef RINGLOG_PROTO_MATCH_H
#define RINGLOG_PROTO_MATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "meta.h"

/* FIELD=VALUE: ANDed across names, ORed among the values of one name
 * (journalctl's rule). */
struct ringlog_match_field {
	char *name;
	char **values;
	unsigned nvalues;
};

struct ringlog_match {
	char **providers;        /* globs, ORed; none: any */
	unsigned nproviders;
	char **events;           /* globs, ORed; none: any */
	unsigned nevents;
	unsigned level_min, level_max; /* 1 (critical) .. 5 (verbose) */
	uint64_t keyword;        /* 0: any; events without keywords pass */
	int64_t pid, uid;        /* -1: any */
	struct ringlog_match_field *fields;
	unsigned nfields;
};

/* Everything (levels 1..5, any writer). */
void ringlog_match_init(struct ringlog_match *m);
void ringlog_match_free(struct ringlog_match *m);

/* Append a copy of glob to a list; 0 or -ENOMEM. */
int ringlog_match_add_glob(char ***list, unsigned *n, const char *glob);
/* Add one value for the field name[0..name_len); 0 or -ENOMEM. */
int ringlog_match_add_field(struct ringlog_match *m, const char *name, size_t name_len,
			    const char *value);

/* Does value v of a decoded field equal the text t, by the field's type:
 * integers as numbers (decimal, or 0x... for any integer; a hex-shown
 * field also by its bits), doubles as numbers, true/false/1/0 for bools,
 * the exact bytes of a string, hex digits (0x optional) for a blob? */
bool ringlog_match_value(const struct ringlog_value *v, const char *t);
/* Is t one of those forms for a field of this type (RINGLOG_TYPE_*), so
 * that some value could match it? */
bool ringlog_match_fits(uint8_t type, const char *t);

/* Does the event pass? provider may be NULL (unknown); values are the
 * event's decoded fields, needed only when m->nfields (NULL otherwise). */
bool ringlog_match_event(const struct ringlog_match *m, const char *provider,
			 const struct ringlog_event_desc *d, uint64_t pid, uint64_t uid,
			 const struct ringlog_value *values);

/* A loss passes the filters it can be judged by: its writer (when known)
 * and the provider the program attributed it to (NULL: none, which fails
 * any provider glob). Levels, events, keywords and fields select events:
 * a loss is not known to be of any (ringlog(1) LOSSES). */
bool ringlog_match_loss(const struct ringlog_match *m, const char *provider, bool has_writer,
			uint64_t pid, uint64_t uid);

#endif /* RINGLOG_PROTO_MATCH_H */
