/* client/cli/emit.c - `ringlog emit PROVIDER EVENT [name=value ...]`: an
 * event from a shell script, through libringlog like any program. */
#define _GNU_SOURCE
#include "cli.h"

/* How long `ringlog emit` waits for the event to be stored (a restarting
 * daemon included). */
#define EMIT_TIMEOUT_MS 5000

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "compat-win.h"
#include "ringlog.h"

static const struct { const char *name; uint8_t type, format; } types[] = {
	{ "i8", RINGLOG_T_I8, 0 }, { "i16", RINGLOG_T_I16, 0 }, { "i32", RINGLOG_T_I32, 0 },
	{ "i64", RINGLOG_T_I64, 0 }, { "u8", RINGLOG_T_U8, 0 }, { "u16", RINGLOG_T_U16, 0 },
	{ "u32", RINGLOG_T_U32, 0 }, { "u64", RINGLOG_T_U64, 0 }, { "f64", RINGLOG_T_F64, 0 },
	{ "double", RINGLOG_T_F64, 0 }, { "bool", RINGLOG_T_BOOL, 0 }, { "str", RINGLOG_T_STR, 0 },
	{ "hex", RINGLOG_T_U64, RINGLOG_F_HEX }, { "pid", RINGLOG_T_I32, RINGLOG_F_PID },
	{ "errno", RINGLOG_T_I32, RINGLOG_F_ERRNO }, { "time", RINGLOG_T_U64, RINGLOG_F_TIME },
	{ "blob", RINGLOG_T_BLOB, 0 },
};

/* A blob given as hex digits ("00ff10"), into a buffer the caller frees. */
static int parse_blob(const char *arg, const char *v, struct ringlog_arg *a, uint8_t **buf)
{
	size_t n = strlen(v);

	if (n % 2 || strspn(v, "0123456789abcdefABCDEF") != n) {
		fprintf(stderr, "ringlog emit: \"%s\": a blob is an even number of hex digits "
			"(e.g. data:blob=00ff10)\n", arg);
		return -EINVAL;
	}
	if (!(*buf = malloc(n / 2 + 1)))
		return -ENOMEM;
	for (size_t i = 0; i < n / 2; i++) {
		char h[3] = { v[2 * i], v[2 * i + 1], 0 };

		(*buf)[i] = (uint8_t)strtoul(h, NULL, 16);
	}
	a->v.bytes.ptr = *buf;
	a->v.bytes.len = n / 2;
	return 0;
}

static int range_ok(uint8_t t, long long v, unsigned long long u, bool neg)
{
	switch (t) {
	case RINGLOG_T_I8: return v >= -128 && v <= 127;
	case RINGLOG_T_I16: return v >= -32768 && v <= 32767;
	case RINGLOG_T_I32: return v >= INT32_MIN && v <= INT32_MAX;
	case RINGLOG_T_U8: return !neg && u <= 0xff;
	case RINGLOG_T_U16: return !neg && u <= 0xffff;
	case RINGLOG_T_U32: return !neg && u <= 0xffffffffu;
	case RINGLOG_T_U64: return !neg;
	default: return 1;
	}
}

static int parse_field(const char *arg, struct ringlog_field *f, struct ringlog_arg *a, char **name,
		       uint8_t **buf)
{
	const char *eq = strchr(arg, '='), *colon;
	const char *v;
	char *end;

	if (!eq || eq == arg) {
		fprintf(stderr, "ringlog emit: \"%s\": expected name=value or name:type=value\n", arg);
		return -EINVAL;
	}
	v = eq + 1;
	colon = memchr(arg, ':', (size_t)(eq - arg));
	*name = strndup(arg, (size_t)((colon ? colon : eq) - arg));
	f->name = *name;
	f->format = 0;
	memset(a, 0, sizeof(*a));
	if (colon) {
		size_t tl = (size_t)(eq - colon - 1);
		unsigned i;

		for (i = 0; i < sizeof(types) / sizeof(types[0]); i++)
			if (strlen(types[i].name) == tl && !strncmp(types[i].name, colon + 1, tl))
				break;
		if (i == sizeof(types) / sizeof(types[0])) {
			fprintf(stderr, "ringlog emit: \"%s\": unknown type \"%.*s\" (i8..i64, u8..u64, f64, "
				"bool, str, blob, hex, pid, errno, time)\n", arg, (int)tl, colon + 1);
			return -EINVAL;
		}
		f->type = types[i].type;
		f->format = types[i].format;
	} else {
		/* Inferred: integer (u64 past INT64_MAX, never rounded through
		 * a double), true or false, then double, else string. */
		errno = 0;
		strtoll(v, &end, 0);
		if (*v && !*end && !errno) {
			f->type = RINGLOG_T_I64;
		} else if (*v != '-' && (errno = 0, strtoull(v, &end, 0), *v && !*end && !errno)) {
			f->type = RINGLOG_T_U64;
		} else if (!strcmp(v, "true") || !strcmp(v, "false")) {
			f->type = RINGLOG_T_BOOL;
		} else if (strtod(v, &end), *v && !*end)
			f->type = RINGLOG_T_F64;
		else
			f->type = RINGLOG_T_STR;
	}
	errno = 0;
	switch (f->type) {
	case RINGLOG_T_STR:
		a->v.bytes.ptr = v;
		a->v.bytes.len = strlen(v);
		return 0;
	case RINGLOG_T_BLOB:
		return parse_blob(arg, v, a, buf);
	case RINGLOG_T_F64:
		a->v.d = strtod(v, &end);
		break;
	case RINGLOG_T_BOOL:
		if (!strcmp(v, "true") || !strcmp(v, "1"))
			a->v.b = 1;
		else if (strcmp(v, "false") && strcmp(v, "0")) {
			fprintf(stderr, "ringlog emit: \"%s\": expected true or false\n", arg);
			return -EINVAL;
		}
		return 0;
	case RINGLOG_T_U8: case RINGLOG_T_U16: case RINGLOG_T_U32: case RINGLOG_T_U64:
		a->v.u = strtoull(v, &end, 0);
		if (*v && !*end && !errno && !range_ok(f->type, 0, a->v.u, v[0] == '-'))
			errno = ERANGE;
		break;
	default:
		a->v.i = strtoll(v, &end, 0);
		if (*v && !*end && !errno && !range_ok(f->type, a->v.i, 0, false))
			errno = ERANGE;
		break;
	}
	if (!*v || *end || errno) {
		fprintf(stderr, "ringlog emit: \"%s\": \"%s\" is not a valid %s%s\n", arg, v,
			colon ? "value of that type" : "number",
			errno == ERANGE ? " (out of range)" : "");
		return -EINVAL;
	}
	return 0;
}

static volatile int refused;

/* Called from the library's thread. */
static void diag(void *ctx, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "ringlog emit: %s\n", msg);
	/* By the daemon (REFUSE) or by the socket's file: either way the
	 * message said why; waiting longer changes nothing. */
	if (strstr(msg, "refused this process") || strstr(msg, "access refused"))
		refused = 1;
}

int cmd_emit(int argc, char **argv)
{
	struct ringlog_field fields[32];
	struct ringlog_arg args[32];
	char *names[32] = { 0 };
	uint8_t *blobs[32] = { 0 };
	struct ringlog_provider prov = { RINGLOG__DEFAULT_KW, NULL, 0, 0, 0, NULL };
	struct ringlog_event ev = { 0 };
	unsigned level = 4, n = 0;
	uint64_t kw = 0;
	const char *pname = NULL, *ename = NULL;
	int rc = EXIT_OK, err;

	static const struct option opts[] = {
		{ "level", required_argument, NULL, 'l' },
		{ "priority", required_argument, NULL, 'l' },
		{ "keyword", required_argument, NULL, 'k' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c, idx;

	/* getopt_long as read and tail: --level=warning, -p3, -- */
	optind = 0;
	opterr = 0;
	while ((idx = -1, c = getopt_long(argc, argv, ":p:k:h", opts, &idx)) != -1) {
		const char *o = idx >= 0 ? opts[idx].name : NULL;
		char *end;

		switch (c) {
		case 'h':
			puts("usage: ringlog emit PROVIDER EVENT [--level L] [--keyword K] [name=value ...]\n"
			     "Types are inferred (n=5 integer, x=1.5 double, b=true bool, s=hi string)\n"
			     "or given:\n"
			     "n:u32=5 (i8..i64, u8..u64, f64, bool, str, hex, pid, errno, time), and\n"
			     "data:blob=00ff10 (hex digits). Strings over 4096 bytes are truncated and\n"
			     "flagged, blobs over 8192 bytes truncated.\n"
			     "The event goes through libringlog; exit 3 when ringlogd did not take it.");
			return 0;
		case 'p':
		case 'l':
			if (parse_level(optarg, &level)) {
				fprintf(stderr, "ringlog emit: %s%s \"%s\": expected 1..5 or a level name "
					"(critical, error, warning, info, verbose)\n", o ? "--" : "-p",
					o ? o : "", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'k':
			errno = 0;
			kw = strtoull(optarg, &end, 0);
			if (errno || end == optarg || *end || optarg[0] == '-') {
				fprintf(stderr, "ringlog emit: --keyword \"%s\": expected a mask like 0x10\n",
					optarg);
				return EXIT_USAGE;
			}
			break;
		case ':':
			fprintf(stderr, "ringlog emit: %s needs a value (see ringlog emit --help)\n",
				argv[optind - 1]);
			return EXIT_USAGE;
		default:
			if (optopt)
				fprintf(stderr, "ringlog emit: unknown option -%c (see ringlog emit --help)\n",
					optopt);
			else
				fprintf(stderr, "ringlog emit: unknown option %s (see ringlog emit --help)\n",
					argv[optind - 1]);
			return EXIT_USAGE;
		}
	}
	for (int i = optind; i < argc; i++) {
		if (!pname) {
			pname = argv[i];
		} else if (!ename) {
			ename = argv[i];
		} else if (n == 32) {
			fprintf(stderr, "ringlog emit: at most 32 fields\n");
			return EXIT_USAGE;
		} else {
			if (parse_field(argv[i], &fields[n], &args[n], &names[n], &blobs[n]) < 0) {
				rc = EXIT_USAGE;
				goto out;
			}
			n++;
		}
	}
	if (!pname || !ename) {
		fprintf(stderr, "ringlog emit: PROVIDER and EVENT are required (see ringlog emit --help)\n");
		rc = EXIT_USAGE;
		goto out;
	}
	ringlog_set_diag(diag, NULL);
	prov.name = pname;
	ev.provider = &prov;
	ev.name = ename;
	ev.fields = fields;
	ev.nfields = (uint16_t)n;
	ev.level = (uint8_t)level;
	ev.keyword = kw;
	if ((err = ringlog_provider_register(&prov)) < 0 || (err = ringlog_event_register(&ev)) < 0) {
		fprintf(stderr, "ringlog emit: invalid provider or event name (1..255 printable bytes)\n");
		rc = EXIT_USAGE;
		goto out;
	}
	/* The daemon's enablement arrives after connecting: an explicit emit
	 * is a request to store, so write it whatever the level. */
	for (int l = 0; l < 8; l++)
		prov.kw[l] = ~0ull;
	err = ringlog_emit(&ev, NULL, args);
	if (err < 0) {
		fprintf(stderr, "ringlog emit: %s\n", strerror(-err));
		rc = EXIT_FAIL;
	}
	/* Until it is written (ringlog_flush()), waiting for a daemon that
	 * restarts, but not for one that is not there: with no socket at all,
	 * at once (a shell script must not hang for want of a daemon). */
#ifndef _WIN32 /* a pipe's name is no file to look for */
	if (!refused && access(socket_path(NULL), F_OK) < 0 && errno == ENOENT)
		err = -ENOENT;
	else
#endif
	if (!refused)
		err = ringlog_flush(EMIT_TIMEOUT_MS);
	if (refused) {
		fprintf(stderr, "ringlog emit: the event was not stored\n");
		rc = EXIT_FAIL;
	} else if (err < 0) {
		char why[1024];
		int fd = cli_connect(socket_path(NULL), true);

		/* The library does not say why it could not connect: ask the
		 * socket once more, for the reason. */
		if (fd >= 0) {
			close(fd);
			snprintf(why, sizeof(why), "it accepts connections but did not take the event "
				 "in time; see its log (journalctl -u ringlogd)");
		} else if (fd == -EACCES || fd == -EPERM) {
			cli_refusal(socket_path(NULL), why, sizeof(why));
		} else {
			snprintf(why, sizeof(why), "%s; is the service running? (systemctl status "
				 "ringlogd)", strerror(-fd));
		}
		/* A daemon that answers but is slow (stopped, overloaded) may
		 * hold the ring already and store the event later: "not
		 * stored" made scripts that retry on exit 3 store it twice (an
		 * outsider's test, 3 of 3) */
		fprintf(stderr, "ringlog emit: cannot reach ringlogd at %s: %s; %s\n",
			socket_path(NULL), why,
			fd >= 0 ? "the event may yet be stored (it waits in a ring the daemon may hold): "
				  "look with ringlog read before emitting it again"
				: "the event was not stored");
		rc = EXIT_NODAEMON;
	}
	ringlog_close(0);
out:
	for (unsigned i = 0; i < 32; i++) {
		free(names[i]);
		free(blobs[i]);
	}
	return rc;
}
