/* client/cli/common.c - level names, the daemon's connection and error frames.
 * (Selection is select.c, output output.c, options query.c.) */
#define _GNU_SOURCE
#include "cli.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#ifdef _WIN32
#include <windows.h>
#endif

#include "compat-win.h"
#include "ctl.h"

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

void cli_sleep_ms(unsigned ms)
{
#ifdef _WIN32
	Sleep(ms);
#else
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL); /* Ctrl-C cuts it short: the loop checks */
#endif
}

bool cli_same_dir(const char *a, const char *b)
{
	struct stat x, y;

	if (!a || !b)
		return false;
#ifdef _WIN32
	/* no inode numbers: the text, as Windows compares names */
	(void)x;
	(void)y;
	return !strcasecmp(a, b);
#endif
	if (stat(a, &x) < 0 || stat(b, &y) < 0)
		return !strcmp(a, b);
	return x.st_dev == y.st_dev && x.st_ino == y.st_ino;
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

void cli_refuse_text(const uint8_t *p, long n, char *buf, size_t len)
{
	long k = n > (long)sizeof(struct ringlog_ctl_refuse) ? n - (long)sizeof(struct ringlog_ctl_refuse) : 0;

	snprintf(buf, len, "ringlogd refused this connection: %.*s", (int)(k > 600 ? 600 : k),
		 k ? (const char *)p + sizeof(struct ringlog_ctl_refuse) : "no reason given");
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
