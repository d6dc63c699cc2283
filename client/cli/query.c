/* client/cli/query.c - parse the options read and tail share. */
#define _GNU_SOURCE
#include "query.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

enum {
	O_PROVIDER = 256, O_EVENT, O_KEYWORD, O_PID, O_UID, O_SINCE, O_UNTIL, O_JSON, O_UTC,
	O_NO_PAGER, O_COLOR, O_SOCKET, O_NATS, O_STREAM, O_HOST, O_DURABLE,
};

static const struct option opts[] = {
	{ "lines", required_argument, NULL, 'n' },
	{ "priority", required_argument, NULL, 'p' },
	{ "level", required_argument, NULL, 'p' },
	{ "output", required_argument, NULL, 'o' },
	{ "grep", required_argument, NULL, 'g' },
	{ "reverse", no_argument, NULL, 'r' },
	{ "follow", no_argument, NULL, 'f' },
	{ "dir", required_argument, NULL, 'D' },
	{ "directory", required_argument, NULL, 'D' },
	{ "provider", required_argument, NULL, O_PROVIDER },
	{ "event", required_argument, NULL, O_EVENT },
	{ "keyword", required_argument, NULL, O_KEYWORD },
	{ "pid", required_argument, NULL, O_PID },
	{ "uid", required_argument, NULL, O_UID },
	{ "since", required_argument, NULL, O_SINCE },
	{ "until", required_argument, NULL, O_UNTIL },
	{ "json", no_argument, NULL, O_JSON },
	{ "utc", no_argument, NULL, O_UTC },
	{ "no-pager", no_argument, NULL, O_NO_PAGER },
	{ "color", optional_argument, NULL, O_COLOR },
	{ "colour", optional_argument, NULL, O_COLOR },
	{ "socket", required_argument, NULL, O_SOCKET },
	{ "nats", required_argument, NULL, O_NATS },
	{ "stream", required_argument, NULL, O_STREAM },
	{ "host", required_argument, NULL, O_HOST },
	{ "durable", required_argument, NULL, O_DURABLE },
	{ "help", no_argument, NULL, 'h' },
	{ 0 },
};

/* How the user spelled the option that getopt just returned. */
static const char *spelled(int idx, int c)
{
	static char b[64];

	if (idx >= 0)
		snprintf(b, sizeof(b), "--%s", opts[idx].name);
	else
		snprintf(b, sizeof(b), "-%c", c);
	return b;
}

static int bad(const struct query *q, const char *opt, const char *v, const char *want)
{
	fprintf(stderr, "ringlog %s: %s \"%s\": expected %s\n", q->cmd, opt, v, want);
	return EXIT_USAGE;
}

static int number(const char *v, long long max, long long *out)
{
	char *end;
	long long n;

	errno = 0;
	n = strtoll(v, &end, 10);
	if (errno || end == v || *end || n < 0 || n > max)
		return -EINVAL;
	*out = n;
	return 0;
}

int query_parse(struct query *q, const char *cmd, unsigned allow, long lines_default,
		int argc, char **argv, void (*help)(void))
{
	const char *since = NULL, *until = NULL;
	int c, idx;
	long long n;

	memset(q, 0, sizeof(*q));
	q->cmd = cmd;
	q->lines = lines_default;
	q->color = OUT_AUTO;
	q->now_ns = sel_now_ns();
	sel_init(&q->sel);
	q->files = calloc((size_t)argc + 1, sizeof(char *));
	if (!q->files)
		return EXIT_FAIL;
	optind = 0; /* glibc: a full re-initialisation */
	opterr = 0;
	while ((idx = -1, c = getopt_long(argc, argv, ":n:p:o:g:rfD:h", opts, &idx)) != -1) {
		const char *o = spelled(idx, c), *v = optarg;
		char err[256];

		switch (c) {
		case 'n':
			if (!strcmp(v, "all")) {
				q->lines = -1;
			} else if (number(v, 1000000000, &n)) {
				return bad(q, o, v, "a number of events, 0 to 1000000000, or \"all\"");
			} else {
				q->lines = (long)n;
			}
			q->lines_given = true;
			break;
		case 'p':
			if (sel_parse_priority(v, &q->sel.m.level_min, &q->sel.m.level_max))
				return bad(q, o, v, sel_priority_forms);
			q->sel.level_given = true;
			break;
		case 'o':
			if (out_parse_mode(v, &q->out.mode))
				return bad(q, o, v, out_mode_names);
			break;
		case 'g':
			if (q->sel.grep_given) {
				fprintf(stderr, "ringlog %s: %s given twice: give one pattern, with "
					"alternatives as A|B\n", cmd, o);
				return EXIT_USAGE;
			}
			if (sel_set_grep(&q->sel, v, err, sizeof(err))) {
				fprintf(stderr, "ringlog %s: %s \"%s\": not a POSIX extended regular "
					"expression: %s\n", cmd, o, v, err);
				return EXIT_USAGE;
			}
			break;
		case 'r':
			if (!(allow & Q_REVERSE))
				goto not_here;
			q->reverse = true;
			break;
		case 'f':
			if (!(allow & Q_FOLLOW))
				goto not_here;
			q->follow = true;
			break;
		case 'D':
			if (!(allow & Q_FILES))
				goto not_here;
			q->dir = v;
			break;
		case O_PROVIDER:
			if (ringlog_match_add_glob(&q->sel.m.providers, &q->sel.m.nproviders, v))
				return EXIT_FAIL;
			break;
		case O_EVENT:
			if (ringlog_match_add_glob(&q->sel.m.events, &q->sel.m.nevents, v))
				return EXIT_FAIL;
			break;
		case O_KEYWORD: {
			char *end;

			errno = 0;
			q->sel.m.keyword = strtoull(v, &end, 0);
			if (errno || end == v || *end || v[0] == '-')
				return bad(q, o, v, "a keyword mask like 0x10");
			break;
		}
		case O_PID:
		case O_UID:
			if (number(v, 0xffffffffll, &n))
				return bad(q, o, v, c == O_PID ? "a process id, 0 or more" :
					   "a numeric user id, 0 or more");
			*(c == O_PID ? &q->sel.m.pid : &q->sel.m.uid) = n;
			break;
		case O_SINCE:
		case O_UNTIL:
		{
			char why[100];

			if (sel_parse_time(v, q->now_ns, c == O_SINCE ? &q->sel.since_ns :
					   &q->sel.until_ns, why, sizeof(why))) {
				if (!why[0])
					return bad(q, o, v, sel_time_forms);
				fprintf(stderr, "ringlog %s: %s \"%s\": %s\n", q->cmd, o, v, why);
				return EXIT_USAGE;
			}
		}
			*(c == O_SINCE ? &since : &until) = v;
			break;
		case O_JSON:
			q->out.mode = OUT_JSON;
			break;
		case O_UTC:
			q->out.utc = true;
			break;
		case O_NO_PAGER:
			q->no_pager = true;
			break;
		case O_COLOR:
			if (out_parse_when(v, &q->color))
				return bad(q, o, v, "auto, always or never");
			break;
		case O_SOCKET:
			q->socket = v;
			break;
		case O_NATS:
		case O_STREAM:
		case O_DURABLE:
			if (!(allow & Q_NATS))
				goto not_here;
			if (!*v)
				return bad(q, o, v, c == O_NATS ? "server URLs like nats://host:4222" :
					   "a name");
			*(c == O_NATS ? &q->nats : c == O_STREAM ? &q->stream : &q->durable) = v;
			break;
		case O_HOST:
			if (!(allow & Q_NATS))
				goto not_here;
			if (ringlog_match_add_glob(&q->hosts, &q->nhosts, v))
				return EXIT_FAIL;
			break;
		case 'h':
			help();
			return QUERY_HELPED;
		case ':':
			fprintf(stderr, "ringlog %s: %s needs a value (see ringlog %s --help)\n", cmd,
				argv[optind - 1], cmd);
			return EXIT_USAGE;
		default:
			if (optopt)
				fprintf(stderr, "ringlog %s: unknown option -%c (see ringlog %s --help)\n",
					cmd, optopt, cmd);
			else
				fprintf(stderr, "ringlog %s: unknown option %s (see ringlog %s --help)\n",
					cmd, argv[optind - 1], cmd);
			return EXIT_USAGE;
		}
		continue;
not_here:
		fprintf(stderr, "ringlog %s: %s does not apply to %s%s\n", cmd, o, cmd,
			c == 'r' || c == 'D' ? " (it is an option of ringlog read)" :
			c == 'f' ? " (ringlog tail follows already)" : "");
		return EXIT_USAGE;
	}
	/* FIELD=VALUE matches; anything else is a file (read only). */
	for (int i = optind; i < argc; i++) {
		const char *a = argv[i], *eq = strchr(a, '=');

		if (eq && eq != a && !memchr(a, '/', (size_t)(eq - a))) {
			if (sel_add_field(&q->sel, a))
				return EXIT_FAIL;
		} else if (eq == a) { /* taken for a file, it said "--dir and FILE" */
			fprintf(stderr, "ringlog %s: \"%s\": a FIELD=VALUE filter needs the field's "
				"name before the =\n", cmd, a);
			return EXIT_USAGE;
		} else if (allow & Q_FILES) {
			q->files[q->nfiles++] = argv[i];
		} else {
			fprintf(stderr, "ringlog %s: unexpected argument \"%s\": expected FIELD=VALUE "
				"(segment files are for ringlog read)\n", cmd, a);
			return EXIT_USAGE;
		}
	}
	if (q->dir && q->nfiles) {
		fprintf(stderr, "ringlog %s: --dir and FILE arguments both given: give one\n", cmd);
		return EXIT_USAGE;
	}
	if (q->sel.since_ns && q->sel.until_ns && q->sel.since_ns > q->sel.until_ns) {
		fprintf(stderr, "ringlog %s: --since \"%s\" is after --until \"%s\": nothing can "
			"match\n", cmd, since, until);
		return EXIT_USAGE;
	}
	if (((allow & Q_LIVE) || q->follow) && until && q->sel.until_ns <= q->now_ns) {
		fprintf(stderr, "ringlog %s: --until \"%s\" is not in the future: following would "
			"never show an event; use ringlog read --until\n", cmd, until);
		return EXIT_USAGE;
	}
	if (!q->nats && (q->stream || q->durable || q->nhosts)) {
		fprintf(stderr, "ringlog %s: --stream, --host and --durable read a cluster: give "
			"--nats URL too\n", cmd);
		return EXIT_USAGE;
	}
	if (q->nats && (q->nfiles || q->dir)) {
		fprintf(stderr, "ringlog %s: --nats reads a cluster, not a store: drop --dir and "
			"FILE arguments\n", cmd);
		return EXIT_USAGE;
	}
	if (q->follow && q->nfiles) {
		fprintf(stderr, "ringlog %s: --follow reads the daemon's store, not FILE arguments\n",
			cmd);
		return EXIT_USAGE;
	}
	return 0;
}

void query_free(struct query *q)
{
	for (unsigned i = 0; i < q->nhosts; i++)
		free(q->hosts[i]);
	free(q->hosts);
	q->hosts = NULL;
	q->nhosts = 0;
	sel_free(&q->sel);
	free(q->files);
	q->files = NULL;
}
