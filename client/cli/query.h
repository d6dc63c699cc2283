/* client/cli/query.h - the command line of `ringlog read` and `tail` (and
 * later `export`): one getopt_long table, every value checked, options
 * that do not apply to the command refused. */
#ifndef RINGLOG_CLI_QUERY_H
#define RINGLOG_CLI_QUERY_H

#include <stdbool.h>

#include "output.h"
#include "select.h"

/* Which options a command takes, beyond the selection and output ones. */
enum {
	Q_FILES = 1 << 0,   /* FILE arguments, --dir */
	Q_REVERSE = 1 << 1, /* -r */
	Q_FOLLOW = 1 << 2,  /* -f */
	Q_LIVE = 1 << 3,    /* the command follows: --until must be ahead */
	Q_NATS = 1 << 4,    /* --nats, --stream, --host, --durable */
};

struct query {
	const char *cmd;          /* "read", "tail": for messages */
	struct selection sel;
	struct output out;
	enum out_when color;
	bool no_pager;
	bool reverse, follow;
	long lines;               /* -n: -1 all */
	bool lines_given;
	const char *dir;
	const char *socket;
	char **files;             /* into argv */
	int nfiles;
	uint64_t now_ns;          /* the clock --since/--until were read with */
	/* a NATS JetStream cluster instead of the local store (nats.c) */
	const char *nats;         /* --nats URL[,URL...] */
	const char *stream;       /* --stream, default "ringlog" */
	char **hosts;             /* --host GLOB (repeat: alternatives) */
	unsigned nhosts;
	const char *durable;      /* --durable NAME: a named consumer */
};

/* Parse argv (argv[0] is the command name). allow: Q_* bits; lines_default:
 * -n when not given (-1: all). Returns 0 to go on, QUERY_HELPED after
 * --help (exit 0), or the exit code to leave with (EXIT_USAGE after a
 * message naming the option, the value and what is allowed). */
#define QUERY_HELPED (-1)
int query_parse(struct query *q, const char *cmd, unsigned allow, long lines_default,
		int argc, char **argv, void (*help)(void));
void query_free(struct query *q);

#endif /* RINGLOG_CLI_QUERY_H */
