/* client/cli/operate.c - `ringlog enable`, `disable`, `list` and `vacuum`:
 * what an operator changes or asks at run time, through ringlogd's tool
 * frames (proto/ctl.h: ENABLE_SET, LIST, VACUUM; daemon/ingest/operate.c). The
 * daemon checks who asks (read access) and names the group to join when
 * it refuses; these commands only print what it says. */
#define _GNU_SOURCE
#include "cli.h"
#include "count.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifndef _WIN32
#include <fcntl.h>
#include <sys/file.h>
#endif

#include "compat-win.h"
#include "config.h"
#include "ctl.h"

#define I(o, k) ((uint64_t)json_integer_value(json_object_get(o, k)))
#define S(o, k) (json_string_value(json_object_get(o, k)) ?: "")

/* Send req (consumed) as a frame of type and wait for the answer of the
 * same type: EXIT_OK with *out, or the exit code once the error is
 * printed (the daemon's ERROR, unreachable, a broken answer). With
 * quiet_down, an unreachable daemon is not reported (the caller has
 * another way). */
int cli_ask(const char *who, const char *sock, uint16_t type, void *reqp, void *outp,
	    bool quiet_down, int *conn_err)
{
	json_t *req = reqp, **out = outp;
	char *s = json_dumps(req, JSON_COMPACT);
	int fd = cli_connect(socket_path(sock), quiet_down), ret = EXIT_FAIL;
	uint16_t got = 0;
	uint8_t *p = NULL;
	long n;

	json_decref(req);
	*out = NULL;
	if (conn_err)
		*conn_err = fd < 0 ? fd : 0;
	if (fd < 0) {
		free(s);
		return EXIT_NODAEMON;
	}
	if (!s || cli_send(fd, type, s, (uint32_t)strlen(s)) < 0) {
		fprintf(stderr, "%s: cannot send the request to ringlogd at %s\n", who, socket_path(sock));
	} else if ((n = cli_recv(fd, &got, &p)) <= 0) {
		fprintf(stderr, "%s: ringlogd at %s closed the connection without an answer%s%s\n", who,
			socket_path(sock), n < 0 ? ": " : "", n < 0 ? strerror((int)-n) : "");
	} else if (got == RINGLOG_CTL_ERROR) {
		cli_print_error(who, p);
	} else if (got != type || !(*out = json_loads((const char *)p, 0, NULL))) {
		fprintf(stderr, "%s: unexpected answer from ringlogd (frame type %u); is it an older "
			"version? (ringlogd --version)\n", who, got);
	} else {
		ret = EXIT_OK;
	}
	free(p);
	free(s);
	close(fd);
	return ret;
}

/* How long a run-time rule lasts (Windows has no reload signal). */
#ifdef _WIN32
#define RULE_LASTS "until ringlogd restarts"
#else
#define RULE_LASTS "until ringlogd reloads (SIGHUP) or restarts"
#endif

static const char *level_word(unsigned l)
{
	static const char *const n[] = { "off", "critical", "error", "warning", "info", "verbose" };

	return l <= 5 ? n[l] : "?";
}

/* ------------------------------------------------------------------------
 * enable / disable
 */

static const struct option sock_opts[] = {
	{ "socket", required_argument, NULL, 'S' },
	{ "reset", no_argument, NULL, 'R' },
	{ "rate", required_argument, NULL, 'r' },
	{ "burst", required_argument, NULL, 'b' },
	{ "wait", required_argument, NULL, 'w' },
	{ "event", required_argument, NULL, 'e' },
	{ "flight-level", required_argument, NULL, 'F' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static int enable_usage(bool disable, FILE *f, int code)
{
	if (disable)
		fputs("usage: ringlog disable [--socket PATH] PROVIDER\n"
		      "Stops the events of PROVIDER (a name or a glob like 'Acme.*') in every running\n"
		      "program that declared it, and in programs that declare it later, until ringlogd\n"
		      "reloads its configuration (SIGHUP) or restarts. A live tail or a tracer still\n"
		      "raises what it asks for. Needs read access (group read_group).\n", f);
	else
		fputs("usage: ringlog enable [--socket PATH] [--rate N/s|N/min|N/h] [--burst N]\n"
		      "                      [--wait DURATION] [--event GLOB] [--flight-level LEVEL]\n"
		      "                      PROVIDER [LEVEL [KEYWORDS]]\n"
		      "       ringlog enable --reset PROVIDER\n"
		      "Records PROVIDER's events (a name or a glob like 'Acme.*') up to LEVEL\n"
		      "(critical, error, warning, info, verbose or 1..5; default verbose) with\n"
		      "KEYWORDS (a mask like 0x3; default all) in every running program that declared\n"
		      "it, and in programs that declare it later, whatever the configuration says,\n"
		      "until ringlogd reloads it (SIGHUP) or restarts. A newer rule for the same\n"
		      "PROVIDER replaces the older; --reset drops it (the configuration applies\n"
		      "again). `ringlog status` lists the rules in force. Needs read access (group\n"
		      "read_group).\n"
		      "--rate limits each matching event (or those matching --event GLOB) to N per\n"
		      "second, minute or hour with --burst at once (default a tenth of N): running\n"
		      "programs apply it themselves and report what they suppressed. --wait (up to\n"
		      "100ms) lets them wait that long for room when a ring is full instead of\n"
		      "dropping. These ride on the same rule, so give LEVEL too if verbose is not\n"
		      "what you want.\n"
		      "--flight-level keeps the levels past LEVEL up to it in the flight recorder's\n"
		      "memory only (ringlogd.json \"flight\"): `ringlog enable --flight-level verbose\n"
		      "'Acme.*' info`.\n", f);
	return code;
}

static int enable_common(int argc, char **argv, bool disable)
{
	const char *who = disable ? "ringlog disable" : "ringlog enable";
	const char *sock = NULL, *provider;
	unsigned level = disable ? 0 : 5, flight = 0;
	uint64_t keywords = UINT64_MAX;
	bool reset = false;
	json_t *req, *ans, *m;
	char kw[24];
	int o, ret;
	const char *rate = NULL, *event = NULL;
	long burst = 0, wait_us = -1;
	uint32_t rate_n = 0;

	optind = 1;
	opterr = 0;
	while ((o = getopt_long(argc, argv, "h", sock_opts, NULL)) != -1) {
		if (o == 'S')
			sock = optarg;
		else if (o == 'R' && !disable)
			reset = true;
		else if (o == 'r' && !disable) {
			uint32_t n, ms;

			if (ringlog_parse_rate(optarg, &n, &ms)) {
				fprintf(stderr, "%s: --rate \"%s\": expected N/s, N/min or N/h with N from 1 "
					"to 100000000, like 1000/s\n", who, optarg);
				return EXIT_USAGE;
			}
			rate = optarg;
			rate_n = n;
		} else if (o == 'b' && !disable) {
			char *end;

			burst = strtol(optarg, &end, 10);
			if (*end || burst < 1 || burst > 100000000) {
				fprintf(stderr, "%s: --burst \"%s\": expected 1 to 100000000 events\n", who,
					optarg);
				return EXIT_USAGE;
			}
		} else if (o == 'w' && !disable) {
			uint64_t ns;

			if (ringlog_parse_duration(optarg, &ns) || ns > RINGLOG_CONFIG_WAIT_MAX_NS) {
				fprintf(stderr, "%s: --wait \"%s\": expected a duration up to 100ms, like "
					"1ms\n", who, optarg);
				return EXIT_USAGE;
			}
			wait_us = (long)(ns / 1000);
		} else if (o == 'e' && !disable) {
			if (!*optarg || strlen(optarg) >= RINGLOG_EVENT_PATTERN_MAX) {
				fprintf(stderr, "%s: --event \"%s\": expected 1 to %d bytes\n", who, optarg,
					RINGLOG_EVENT_PATTERN_MAX - 1);
				return EXIT_USAGE;
			}
			event = optarg;
		} else if (o == 'F' && !disable) {
			if (parse_level(optarg, &flight)) {
				fprintf(stderr, "%s: --flight-level \"%s\": expected critical, error, warning, "
					"info, verbose or 1..5\n", who, optarg);
				return EXIT_USAGE;
			}
		}
		else if (o == 'h')
			return enable_usage(disable, stdout, EXIT_OK);
		else {
			fprintf(stderr, "%s: unknown option %s (see %s --help)\n", who, argv[optind - 1], who);
			return EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "%s: which provider? Give a name or a glob (ringlog list shows those "
			"running programs declared)\n", who);
		return enable_usage(disable, stderr, EXIT_USAGE);
	}
	provider = argv[optind++];
	if (!*provider || strlen(provider) >= RINGLOG_PROVIDER_NAME_MAX) {
		fprintf(stderr, "%s: provider \"%s\": expected 1 to %d bytes\n", who, provider,
			RINGLOG_PROVIDER_NAME_MAX - 1);
		return EXIT_USAGE;
	}
	if (!disable && !reset && optind < argc) {
		const char *l = argv[optind++];

		if (!strcasecmp(l, "off") || !strcmp(l, "0"))
			level = 0;
		else if (parse_level(l, &level)) {
			fprintf(stderr, "%s: level \"%s\": expected critical, error, warning, info, verbose, "
				"1..5 or off\n", who, l);
			return EXIT_USAGE;
		}
	}
	if (!disable && !reset && optind < argc) {
		const char *k = argv[optind++];
		char *end;

		errno = 0;
		keywords = strtoull(k, &end, 0);
		if (!*k || *end || errno || *k == '-') {
			fprintf(stderr, "%s: keywords \"%s\": expected a mask like 0x3 or 0xffffffffffffffff\n",
				who, k);
			return EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument \"%s\" (see %s --help)\n", who, argv[optind], who);
		return EXIT_USAGE;
	}
	snprintf(kw, sizeof(kw), "0x%llx", (unsigned long long)keywords);
	req = reset ? json_pack("{s:s,s:b}", "provider", provider, "reset", 1) :
		      json_pack("{s:s,s:i,s:s}", "provider", provider, "level", (int)level, "keywords", kw);
	if (!reset && rate)
		json_object_set_new(req, "rate", json_string(rate));
	if (!reset && burst)
		json_object_set_new(req, "burst", json_integer(burst));
	if (!reset && wait_us >= 0)
		json_object_set_new(req, "wait_us", json_integer(wait_us));
	if (!reset && event)
		json_object_set_new(req, "event", json_string(event));
	if (flight && !reset)
		json_object_set_new(req, "flight_level", json_integer(flight));
	if ((ret = cli_ask(who, sock, RINGLOG_CTL_ENABLE_SET, req, &ans, false, NULL)) != EXIT_OK)
		return ret;
	if (reset) {
		if (I(ans, "replaced"))
			printf("%s: run-time rule dropped; the configuration applies again\n", provider);
		else
			printf("%s: no run-time rule for exactly this name or glob (ringlog status lists "
			       "them); nothing changed\n", provider);
		json_decref(ans);
		return EXIT_OK;
	} else if (level)
		printf("%s: enabled up to %s, keywords %s%s%s, " RULE_LASTS "\n", provider,
		       level_word(level), kw, flight > level ? "; in the flight buffer only up to " : "",
		       flight > level ? level_word(flight) : "");
	else
		printf("%s: disabled " RULE_LASTS "\n", provider);
	if (rate || wait_us >= 0 || burst || event)
		printf("%s events %s: rate %s, burst %ld, wait %ld us (running programs apply it "
		       "now)\n", provider, event ? event : "*", rate ? rate : "unlimited",
		       burst ? burst : rate_n / 10 ? (long)rate_n / 10 : 1, wait_us > 0 ? wait_us : 0);
	m = json_object_get(ans, "matched");
	if (!json_array_size(m)) {
		printf("no running program has declared a provider matching \"%s\" yet; the rule applies "
		       "when one does\n", provider);
	} else {
		size_t i;
		json_t *v;

		printf("applies to %zu provider%s now:", json_array_size(m),
		       json_array_size(m) == 1 ? "" : "s");
		json_array_foreach(m, i, v)
			printf("%s %s", i ? "," : "", json_string_value(v));
		putchar('\n');
	}
	json_decref(ans);
	return EXIT_OK;
}

int cmd_enable(int argc, char **argv)
{
	return enable_common(argc, argv, false);
}

int cmd_disable(int argc, char **argv)
{
	return enable_common(argc, argv, true);
}

/* ------------------------------------------------------------------------
 * list
 */

static void print_fields(json_t *fields)
{
	size_t i;
	json_t *f;

	json_array_foreach(fields, i, f) {
		printf("%s%s:%s", i ? " " : "", S(f, "name"), S(f, "type"));
		if (*S(f, "format"))
			printf("(%s)", S(f, "format"));
	}
}

/* Names only, one a line, each once: for shell completion. */
static void print_names(json_t *providers, bool events)
{
	size_t i, k;
	json_t *p, *e;

	if (!events) {
		json_array_foreach(providers, i, p)
			puts(S(p, "name"));
		return;
	}
	json_array_foreach(providers, i, p)
		json_array_foreach(json_object_get(p, "events"), k, e) {
			bool dup = false;

			/* an event declared differently by two programs is listed twice */
			for (size_t j = 0; j < k && !dup; j++)
				dup = !strcmp(S(json_array_get(json_object_get(p, "events"), j), "name"),
					      S(e, "name"));
			if (!dup)
				puts(S(e, "name"));
		}
}

int cmd_list(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 'S' },
		{ "json", no_argument, NULL, 'j' },
		{ "providers", no_argument, NULL, 'P' },
		{ "events", no_argument, NULL, 'E' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *sock = NULL, *glob = NULL;
	bool json = false, names = false, events = false;
	json_t *req, *ans, *provs, *p, *e;
	size_t i, k;
	int o, ret;

	optind = 1;
	opterr = 0;
	while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (o) {
		case 'S': sock = optarg; break;
		case 'j': json = true; break;
		case 'P': names = true; break;
		case 'E': names = events = true; break;
		case 'h':
			puts("usage: ringlog list [--json | --providers | --events] [--socket PATH] [PROVIDER]\n"
			     "The providers and events that running programs have declared, with their\n"
			     "fields and types, the level each provider is recorded at now and the\n"
			     "programs (pid, command) that declared it; PROVIDER (a name or a glob)\n"
			     "narrows it. --providers and --events print the names only, one a line.\n"
			     "Needs read access (group read_group).");
			return EXIT_OK;
		default:
			fprintf(stderr, "ringlog list: unknown option %s (see ringlog list --help)\n",
				argv[optind - 1]);
			return EXIT_USAGE;
		}
	}
	if (optind < argc)
		glob = argv[optind++];
	if (optind < argc) {
		fprintf(stderr, "ringlog list: one PROVIDER glob at most, got \"%s\" too\n", argv[optind]);
		return EXIT_USAGE;
	}
	req = glob ? json_pack("{s:s}", "provider", glob) : json_object();
	/* Completion asks quietly: nothing on the terminal while typing. */
	if ((ret = cli_ask("ringlog list", sock, RINGLOG_CTL_LIST, req, &ans, names, NULL)) != EXIT_OK)
		return ret;
	provs = json_object_get(ans, "providers");
	if (json) {
		char *s = json_dumps(ans, JSON_INDENT(2));

		puts(s);
		free(s);
	} else if (names) {
		print_names(provs, events);
	} else if (!json_array_size(provs)) {
		printf(glob ? "no running program has declared a provider matching \"%s\"\n" :
			      "no running program has declared a provider%s\n", glob ? glob : "");
	} else {
		json_array_foreach(provs, i, p) {
			json_t *progs = json_object_get(p, "programs"), *x;
			size_t j;

			printf("%s  (recorded up to %s; declared by", S(p, "name"),
			       level_word((unsigned)I(p, "enabled_level")));
			json_array_foreach(progs, j, x) {
				if (j == 4) {
					printf(" and %zu more", json_array_size(progs) - 4);
					break;
				}
				printf("%s pid %llu (%s)", j ? "," : "", (unsigned long long)I(x, "pid"),
				       S(x, "comm"));
			}
			printf(")\n");
			json_array_foreach(json_object_get(p, "events"), k, e) {
				printf("    %-24s %-7s %-18s %-5s ", S(e, "name"), S(e, "level"), S(e, "keyword"),
				       S(e, "opcode"));
				print_fields(json_object_get(e, "fields"));
				putchar('\n');
			}
			if (!json_array_size(json_object_get(p, "events")))
				printf("    (no event declared yet: events are declared when first emitted)\n");
		}
	}
	json_decref(ans);
	return EXIT_OK;
}

/* ------------------------------------------------------------------------
 * vacuum
 */

static void print_deleted(json_t *seg)
{
	char a[32], b[32], c[32];

	printf("Deleted segment %s (%s, %llu events, %s .. %s).\n", S(seg, "path"),
	       cli_bytes((double)I(seg, "bytes"), a, sizeof(a)), (unsigned long long)I(seg, "events"),
	       cli_when(I(seg, "first_ns"), b, sizeof(b)), cli_when(I(seg, "last_ns"), c, sizeof(c)));
}

#ifndef _WIN32
static int is_segment(const struct dirent *e)
{
	return strlen(e->d_name) == 22 && !strcmp(e->d_name + 16, ".rlseg");
}

/* ringlogd is down: delete from the directory itself, holding the lock the
 * daemon takes (ringlogd.lock), so that none starts meanwhile; refused
 * when a daemon holds it (then the socket given is not that daemon's). */
static int vacuum_offline(const char *dir, bool by_size, uint64_t keep, bool by_age,
			  uint64_t before)
{
	char path[4400];
	struct dirent **names;
	int lock, n, ret = EXIT_OK;
	uint64_t used = 0, freed = 0;
	unsigned left = 0;
	struct {
		uint64_t bytes, last, first, events;
		bool gone;
	} *seg;

	snprintf(path, sizeof(path), "%s/ringlogd.lock", dir);
	lock = open(path, O_RDWR | O_CLOEXEC);
	if (lock >= 0 && flock(lock, LOCK_EX | LOCK_NB) < 0) {
		fprintf(stderr, "ringlog vacuum: a ringlogd holds %s (%s) but is not the one at the "
			"socket given: vacuum through it (--socket or $RINGLOG_SOCKET)\n", dir, path);
		close(lock);
		return EXIT_FAIL;
	}
	n = scandir(dir, &names, is_segment, alphasort);
	if (n < 0) {
		fprintf(stderr, "ringlog vacuum: cannot read %s: %s\n", dir, strerror(errno));
		if (lock >= 0)
			close(lock);
		return EXIT_FAIL;
	}
	seg = calloc((size_t)n + 1, sizeof(*seg));
	for (int i = 0; seg && i < n; i++) {
		struct ringlog_seg_file f;
		const char *why;

		snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
		if (ringlog_seg_open(&f, path, &why) < 0)
			continue;
		seg[i].bytes = f.size;
		if (f.hdr_ok && f.hdr.state == RINGLOG_SEG_CLOSED) {
			seg[i].first = f.hdr.first_real_ns;
			seg[i].last = f.hdr.last_real_ns;
			seg[i].events = ringlog_count_sum(f.hdr.events, 0);
		} else {
			while (ringlog_seg_next(&f, true) == 1) {
				if (f.chunk.events && (!seg[i].first || f.chunk.first_real_ns < seg[i].first))
					seg[i].first = f.chunk.first_real_ns;
				if (f.chunk.last_real_ns > seg[i].last)
					seg[i].last = f.chunk.last_real_ns;
				ringlog_count_add(&seg[i].events, f.chunk.events);
			}
		}
		used += f.size;
		ringlog_seg_close(&f);
	}
	for (int pass = 0; seg && pass < 2; pass++)
		for (int i = 0; i < n; i++) {
			json_t *j;

			if (seg[i].gone || (pass == 0 && (!by_size || used <= keep)) ||
			    (pass == 1 && (!by_age || seg[i].last >= before)))
				continue;
			snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
			if (unlink(path) < 0) {
				fprintf(stderr, "ringlog vacuum: cannot delete %s: %s\n", path, strerror(errno));
				ret = EXIT_FAIL;
				continue;
			}
			seg[i].gone = true;
			used -= seg[i].bytes;
			freed += seg[i].bytes;
			j = json_pack("{s:s,s:I,s:I,s:I,s:I}", "path", path, "bytes", (json_int_t)seg[i].bytes,
				      "events", (json_int_t)seg[i].events, "first_ns", (json_int_t)seg[i].first,
				      "last_ns", (json_int_t)seg[i].last);
			print_deleted(j);
			json_decref(j);
		}
	for (int i = 0; i < n; i++) {
		if (seg && !seg[i].gone)
			left++;
		free(names[i]);
	}
	free(names);
	free(seg);
	if (lock >= 0)
		close(lock);
	{
		char a[32], b[32];

		printf("Vacuuming done, freed %s of segments from %s (ringlogd not running); %u "
		       "segment%s (%s) left.\n", cli_bytes((double)freed, a, sizeof(a)), dir, left,
		       left == 1 ? "" : "s", cli_bytes((double)used, b, sizeof(b)));
	}
	return ret;
}
#endif

int cmd_vacuum(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "size", required_argument, NULL, 's' },
		{ "vacuum-size", required_argument, NULL, 's' },
		{ "time", required_argument, NULL, 't' },
		{ "vacuum-time", required_argument, NULL, 't' },
		{ "socket", required_argument, NULL, 'S' },
		{ "dir", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *sock = NULL, *dir = NULL;
	bool by_size = false, by_age = false;
	uint64_t keep = 0, age = 0;
	json_t *req, *ans, *v;
	size_t i;
	int o, ret, conn;

	optind = 1;
	opterr = 0;
	while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (o) {
		case 's':
			if (ringlog_parse_size(optarg, &keep) < 0) {
				fprintf(stderr, "ringlog vacuum: --size \"%s\": expected a size like 100M, 2G "
					"or 4096 (bytes)\n", optarg);
				return EXIT_USAGE;
			}
			by_size = true;
			break;
		case 't':
			if (ringlog_parse_duration(optarg, &age) < 0) {
				fprintf(stderr, "ringlog vacuum: --time \"%s\": expected a duration like 2d, 12h "
					"or 30m\n", optarg);
				return EXIT_USAGE;
			}
			by_age = true;
			break;
		case 'S': sock = optarg; break;
		case 'd': dir = optarg; break;
		case 'h':
			puts("usage: ringlog vacuum --size SIZE | --time AGE [--socket PATH] [--dir DIR]\n"
			     "Deletes the oldest sealed segments now, as journalctl --vacuum-size and\n"
			     "--vacuum-time do: --size 100M until the store (the segment being written\n"
			     "included) takes at most SIZE, --time 2d every segment whose newest event\n"
			     "is older than AGE; both may be given. The segment being written is never\n"
			     "deleted. Through ringlogd when it runs (read access needed: group\n"
			     "read_group), so that its index and status stay right; with the daemon\n"
			     "down, in DIR (default: the configured storage_dir) itself.");
			return EXIT_OK;
		default:
			fprintf(stderr, "ringlog vacuum: unknown option or missing value: %s (see ringlog "
				"vacuum --help)\n", argv[optind - 1]);
			return EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "ringlog vacuum: unexpected argument \"%s\" (see ringlog vacuum --help)\n",
			argv[optind]);
		return EXIT_USAGE;
	}
	if (!by_size && !by_age) {
		fprintf(stderr, "ringlog vacuum: say what to keep: --size SIZE (like 100M) or --time AGE "
			"(like 2d)\n");
		return EXIT_USAGE;
	}
#ifndef _WIN32
	/* --dir names a store: the daemon at the socket vacuums only its own.
	 * It used to take the request whatever --dir said, and deleted from
	 * its store what the user meant to delete from another (an outsider's
	 * test). Another store is vacuumed from its files, which refuses when
	 * a daemon other than this one holds it. */
	if (dir) {
		json_t *st = NULL;
		const char *theirs;

		if (cli_ask("ringlog vacuum", sock, RINGLOG_CTL_STATUS, json_object(), &st, true,
			    &conn) == EXIT_OK &&
		    (theirs = json_string_value(json_object_get(st, "storage_dir"))) &&
		    !cli_same_dir(dir, theirs)) {
			struct timespec ts;
			uint64_t now;

			fprintf(stderr, "ringlog vacuum: ringlogd at %s stores in %s, not %s: deleting "
				"in %s itself\n", socket_path(sock), theirs, dir, dir);
			json_decref(st);
			clock_gettime(CLOCK_REALTIME, &ts);
			now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
			return vacuum_offline(dir, by_size, keep, by_age, age < now ? now - age : 1);
		}
		json_decref(st);
	}
#endif
	req = json_object();
	if (by_size)
		json_object_set_new(req, "size", json_integer((json_int_t)(keep > INT64_MAX ? INT64_MAX : keep)));
	if (by_age)
		json_object_set_new(req, "age_ns", json_integer((json_int_t)(age > INT64_MAX ? INT64_MAX : age)));
	ret = cli_ask("ringlog vacuum", sock, RINGLOG_CTL_VACUUM, req, &ans, true, &conn);
	if (ret == EXIT_NODAEMON && (conn == -EACCES || conn == -EPERM)) {
		char why[1024];

		cli_refusal(socket_path(sock), why, sizeof(why));
		fprintf(stderr, "ringlog vacuum: cannot ask ringlogd at %s: %s\n", socket_path(sock), why);
		return EXIT_NODAEMON;
	}
	if (ret == EXIT_NODAEMON) {
		struct ringlog_config c;
		char err[1024];

		ringlog_config_defaults(&c);
		if (!dir && access("/etc/ringlog/ringlogd.json", R_OK) == 0)
			ringlog_config_load(&c, "/etc/ringlog/ringlogd.json", err, sizeof(err));
#ifdef _WIN32
		fprintf(stderr, "ringlog vacuum: cannot reach ringlogd at %s; with it stopped, delete the "
			"oldest .rlseg files of %s by hand\n", socket_path(sock), dir ? dir : c.storage_dir);
		return EXIT_NODAEMON;
#else
		fprintf(stderr, "ringlog vacuum: cannot reach ringlogd at %s; deleting in %s itself\n",
			socket_path(sock), dir ? dir : c.storage_dir);
		{
			struct timespec ts;
			uint64_t now;

			clock_gettime(CLOCK_REALTIME, &ts);
			now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
			return vacuum_offline(dir ? dir : c.storage_dir, by_size, keep, by_age,
					      age < now ? now - age : 1);
		}
#endif
	}
	if (ret != EXIT_OK)
		return ret;
	json_array_foreach(json_object_get(ans, "deleted"), i, v)
		print_deleted(v);
	{
		char a[32], b[32];
		uint64_t left = I(ans, "segments");

		printf("Vacuuming done, freed %s of sealed segments from %s; %llu segment%s (%s) left, "
		       "the one being written included.\n",
		       cli_bytes((double)I(ans, "freed_bytes"), a, sizeof(a)), S(ans, "storage_dir"),
		       (unsigned long long)left, left == 1 ? "" : "s",
		       cli_bytes((double)I(ans, "used_bytes"), b, sizeof(b)));
	}
	json_decref(ans);
	return EXIT_OK;
}
