/* client/cli/status.c - `ringlog status`: retention and health, from the
 * daemon, or from the storage directory when the daemon is down. */
#define _GNU_SOURCE
#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#ifndef _WIN32
#include <sys/statvfs.h>
#endif
#include <time.h>
#include <unistd.h>

#include "compat-win.h"
#include "seg-summary.h"
#include "config.h"
#include "ctl.h"

static const char *human(double b, char *buf, size_t n)
{
	static const char *const u[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	int i = 0;

	while (b >= 1024 && i < 4) {
		b /= 1024;
		i++;
	}
	snprintf(buf, n, i ? "%.1f %s" : "%.0f %s", b, u[i]);
	return buf;
}

static const char *ago(uint64_t then, uint64_t now, char *buf, size_t n)
{
	uint64_t s = then && now > then ? (now - then) / 1000000000u : 0;

	if (!then)
		snprintf(buf, n, "-");
	else if (s >= 86400)
		snprintf(buf, n, "%llu d %llu h ago", (unsigned long long)(s / 86400),
			 (unsigned long long)(s % 86400 / 3600));
	else if (s >= 3600)
		snprintf(buf, n, "%llu h %llu min ago", (unsigned long long)(s / 3600),
			 (unsigned long long)(s % 3600 / 60));
	else if (s >= 60)
		snprintf(buf, n, "%llu min %llu s ago", (unsigned long long)(s / 60),
			 (unsigned long long)(s % 60));
	else
		snprintf(buf, n, "%llu s ago", (unsigned long long)s);
	return buf;
}

static const char *when(uint64_t ns, char *buf, size_t n)
{
	time_t t = (time_t)(ns / 1000000000u);
	struct tm tm;

	if (!ns)
		return "-";
	localtime_r(&t, &tm);
	strftime(buf, n, "%Y-%m-%d %H:%M:%S", &tm);
	return buf;
}

#define I(o, k) ((uint64_t)json_integer_value(json_object_get(o, k)))
#define S(o, k) (json_string_value(json_object_get(o, k)) ?: "")

static void print_human(json_t *j, bool down)
{
	char a[64], b[64], c[64];
	uint64_t now = I(j, "now_ns");
	json_t *v;
	size_t i;

	if (down && !strcmp(S(j, "daemon"), "refused"))
		printf("ringlogd refused this user at its socket (access refused, see above; it may "
		       "well be running): figures read from the storage directory\n\n");
	else if (down)
		printf("ringlogd is not running: figures read from the storage directory\n\n");
	printf("%-22s %s\n", "storage", S(j, "storage_dir"));
	printf("%-22s %s used of max_disk %s; %s free on the filesystem (min_free %s)\n", "disk",
	       human((double)I(j, "used_bytes"), a, sizeof(a)), human((double)I(j, "max_disk"), b, sizeof(b)),
	       human((double)I(j, "fs_free_bytes"), c, sizeof(c)),
	       human((double)I(j, "min_free"), c + 32, 32));
	printf("%-22s %llu\n", "segments", (unsigned long long)I(j, "segment_count"));
	v = json_object_get(j, "store");
	if (v)
		printf("%-22s %llu events stored, %llu counted lost (all retained segments, across "
		       "daemon restarts)\n", "store holds", (unsigned long long)I(v, "events"),
		       (unsigned long long)I(v, "lost"));
	printf("%-22s %s (%s)\n", "oldest event", when(I(j, "oldest_event_ns"), a, sizeof(a)),
	       ago(I(j, "oldest_event_ns"), now, b, sizeof(b)));
	printf("%-22s %s (%s)\n", "newest event", when(I(j, "newest_event_ns"), a, sizeof(a)),
	       ago(I(j, "newest_event_ns"), now, b, sizeof(b)));
	if (!down) {
		double left = json_real_value(json_object_get(j, "seconds_until_oldest_deleted"));

		printf("%-22s %llu events/s, %s/s\n", "write rate",
		       (unsigned long long)I(j, "rate_events_per_s"),
		       human((double)I(j, "rate_bytes_per_s"), a, sizeof(a)));
		if (left >= 0)
			printf("%-22s %.0f s at this rate\n", "oldest data deleted in", left);
		else
			printf("%-22s never at this rate (nothing is being written)\n", "oldest data deleted in");
		printf("%-22s %s (%s)\n", "write backend", S(j, "backend"), S(j, "backend_note"));
		v = json_object_get(j, "forwarding");
		printf("%-22s user_events: %s, etw: %s\n", "forwarding", S(v, "user_events"), S(v, "etw"));
		if (!strcmp(S(v, "user_events"), "on"))
			printf("%-22s %llu tracepoints, %llu traced now; %llu events forwarded, lost %llu "
			       "(tracepoint gone %llu, tracer full %llu, other %llu)\n", "",
			       (unsigned long long)I(v, "targets"), (unsigned long long)I(v, "enabled"),
			       (unsigned long long)I(v, "forwarded"),
			       (unsigned long long)(I(v, "lost_disabled") + I(v, "lost_tracer") +
						    I(v, "lost_other")),
			       (unsigned long long)I(v, "lost_disabled"),
			       (unsigned long long)I(v, "lost_tracer"), (unsigned long long)I(v, "lost_other"));
		/* providers the tracer would mistake for another (issue 21) */
		for (size_t k = 0; k < json_array_size(json_object_get(v, "refused")); k++) {
			json_t *r = json_array_get(json_object_get(v, "refused"), k);

			printf("%-22s provider \"%s\" is not forwarded: it would share %s with provider "
			       "\"%s\" (rename one of them)\n", "", S(r, "provider"), S(r, "target"),
			       S(r, "owner"));
		}
		v = json_object_get(j, "lost");
		/* The daemon's counters start at 0 with it: say so, and since when. */
		printf("%-22s %llu since ringlogd started %s (%s): ring overflow %llu, disk %llu, "
		       "corrupt rings %llu; slow tail readers %llu\n",
		       "events lost", (unsigned long long)I(v, "total"), when(I(v, "since_ns"), a, sizeof(a)),
		       ago(I(v, "since_ns"), now, b, sizeof(b)), (unsigned long long)I(v, "ring"),
		       (unsigned long long)I(v, "disk"), (unsigned long long)I(v, "corrupt"),
		       (unsigned long long)I(v, "reader"));
		if (I(v, "deleted"))
			printf("%-22s %llu events stored, then deleted with storage_dir (not by the budget)\n",
			       "", (unsigned long long)I(v, "deleted"));
		if (json_is_true(json_object_get(j, "disk_blocked")))
			printf("%-22s %s\n", "DISK PROBLEM", S(j, "disk_error"));
		printf("\n%-8s %-16s %-6s %5s %12s %10s %10s %8s\n", "PID", "COMMAND", "UID", "RINGS",
		       "STORED", "LOST-RING", "LOST-DISK", "CORRUPT");
		json_array_foreach(json_object_get(j, "clients"), i, v)
			printf("%-8llu %-16s %-6llu %5llu %12llu %10llu %10llu %8llu%s\n",
			       (unsigned long long)I(v, "pid"), S(v, "comm"), (unsigned long long)I(v, "uid"),
			       (unsigned long long)I(v, "rings"), (unsigned long long)I(v, "stored"),
			       (unsigned long long)I(v, "lost_ring"), (unsigned long long)I(v, "lost_disk"),
			       (unsigned long long)I(v, "lost_corrupt"),
			       json_is_true(json_object_get(v, "connected")) ? "" : " (exited)");
		/* LOST-RING: the overflow each program attributed to the provider
		 * (proto/ring.h); what no program could attribute gets its own row. */
		printf("\n%-32s %12s %10s %8s\n", "PROVIDER", "STORED", "LOST-RING", "LEVEL");
		json_array_foreach(json_object_get(j, "providers"), i, v)
			printf("%-32s %12llu %10llu %8s\n", S(v, "name"), (unsigned long long)I(v, "stored"),
			       (unsigned long long)I(v, "lost_ring"),
			       I(v, "enabled_level") ? ringlog_level_name((unsigned)I(v, "enabled_level")) : "off");
		v = json_object_get(j, "lost");
		if (I(v, "ring_unattributed"))
			printf("%-32s %12s %10llu\n", "(ring overflow, no provider)", "-",
			       (unsigned long long)I(v, "ring_unattributed"));
	}
	printf("\n%-18s %10s %10s %8s  %-19s  %-19s\n", "SEGMENT", "SIZE", "EVENTS", "LOST", "FIRST",
	       "LAST");
	json_array_foreach(json_object_get(j, "segments"), i, v) {
		const char *p = strrchr(S(v, "path"), '/');

		printf("%-18s %10s %10llu %8llu  %-19s  %-19s%s\n", p ? p + 1 : S(v, "path"),
		       human((double)I(v, "bytes"), a, sizeof(a)), (unsigned long long)I(v, "events"),
		       (unsigned long long)I(v, "lost"),
		       when(I(v, "first_ns"), b, sizeof(b)), when(I(v, "last_ns"), c, sizeof(c)),
		       json_is_true(json_object_get(v, "current")) ? "  (writing)" : "");
	}
}

/* The daemon is down: the same figures, from segment headers. */
static json_t *offline(const char *dir)
{
	json_t *j = json_object(), *segs = json_array();
	uint64_t used = 0, oldest = 0, newest = 0, n = 0, all_events = 0, all_lost = 0;
	struct ringlog_config c;
	struct dirent **names;
	struct statvfs v;
	struct timespec ts;
	int k = scandir(dir, &names, NULL, alphasort);

	ringlog_config_defaults(&c);
	for (int i = 0; i < k; i++) {
		char path[4400];
		struct ringlog_seg_file f;
		const char *why;
		uint64_t first = 0, last = 0, events = 0, lost = 0;

		if (strlen(names[i]->d_name) == 22 && !strcmp(names[i]->d_name + 16, ".rlseg")) {
			snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
			if (ringlog_seg_open(&f, path, &why) == 0) {
				struct ringlog_seg_summary sum;

				ringlog_seg_summarize(&f, &sum);
				first = sum.first_real_ns;
				last = sum.last_real_ns;
				events = sum.events;
				lost = sum.lost;
				json_array_append_new(segs, json_pack("{s:s,s:I,s:I,s:I,s:I,s:I,s:b}", "path", path,
					"bytes", (json_int_t)f.size, "events", (json_int_t)events,
					"lost", (json_int_t)lost,
					"first_ns", (json_int_t)first, "last_ns", (json_int_t)last, "current", 0));
				used += f.size;
				all_events += events;
				all_lost += lost;
				n++;
				if (events && (!oldest || first < oldest))
					oldest = first;
				if (last > newest)
					newest = last;
				ringlog_seg_close(&f);
			}
		}
		free(names[i]);
	}
	if (k >= 0)
		free(names);
	clock_gettime(CLOCK_REALTIME, &ts);
	json_object_set_new(j, "daemon", json_string("down"));
	json_object_set_new(j, "storage_dir", json_string(dir));
	json_object_set_new(j, "used_bytes", json_integer((json_int_t)used));
	json_object_set_new(j, "max_disk", json_integer((json_int_t)c.max_disk));
	json_object_set_new(j, "min_free", json_integer((json_int_t)c.min_free_bytes));
	json_object_set_new(j, "fs_free_bytes", json_integer(statvfs(dir, &v) == 0 ?
		(json_int_t)((uint64_t)v.f_bavail * v.f_frsize) : 0));
	json_object_set_new(j, "segment_count", json_integer((json_int_t)n));
	json_object_set_new(j, "oldest_event_ns", json_integer((json_int_t)oldest));
	json_object_set_new(j, "newest_event_ns", json_integer((json_int_t)newest));
	json_object_set_new(j, "now_ns", json_integer((json_int_t)((uint64_t)ts.tv_sec * 1000000000u +
								    (uint64_t)ts.tv_nsec)));
	json_object_set_new(j, "segments", segs);
	json_object_set_new(j, "store", json_pack("{s:I,s:I,s:I}", "segments", (json_int_t)n,
		"events", (json_int_t)all_events, "lost", (json_int_t)all_lost));
	return j;
}

int cmd_status(int argc, char **argv)
{
	const char *sock = NULL, *dir = NULL;
	bool json = false, down = false;
	json_t *j = NULL;
	char refused[1024] = "";
	int fd;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = true;
		else if (!strcmp(argv[i], "--socket") && i + 1 < argc)
			sock = argv[++i];
		else if (!strcmp(argv[i], "--dir") && i + 1 < argc)
			dir = argv[++i];
		else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			puts("usage: ringlog status [--json] [--socket PATH] [--dir DIR]\n"
			     "Retention and health from ringlogd: budget, used and free bytes, segments,\n"
			     "the oldest retained event, write rate, backend, forwarding, per-client and\n"
			     "per-provider counts and losses. With the daemon down, reads DIR (default:\n"
			     "the configured storage_dir) and says so (exit code 3).");
			return 0;
		} else {
			fprintf(stderr, "ringlog status: unknown option %s (see ringlog status --help)\n", argv[i]);
			return EXIT_USAGE;
		}
	}
	fd = cli_connect(socket_path(sock), true);
	/* Refused by the socket's file: whether ringlogd runs is unknown (it
	 * may well), so never say it is down. */
	if (fd == -EACCES || fd == -EPERM)
		cli_refusal(socket_path(sock), refused, sizeof(refused));
	if (fd >= 0) {
		uint16_t type = 0;
		uint8_t *p = NULL;

		if (cli_send(fd, RINGLOG_CTL_STATUS, "{}", 2) == 0 && cli_recv(fd, &type, &p) > 0) {
			if (type == RINGLOG_CTL_STATUS) {
				j = json_loads((const char *)p, 0, NULL);
			} else if (type == RINGLOG_CTL_ERROR) {
				cli_print_error("ringlog status", p);
				free(p);
				close(fd);
				return EXIT_FAIL;
			}
		}
		free(p);
		close(fd);
	}
	if (!j) {
		struct ringlog_config c;

		ringlog_config_defaults(&c);
		if (!dir && access("/etc/ringlog/ringlogd.json", R_OK) == 0) {
			char err[1024];

			ringlog_config_load(&c, "/etc/ringlog/ringlogd.json", err, sizeof(err));
		}
		down = true;
		if (refused[0]) {
			const char *d = dir ? dir : c.storage_dir;

			fprintf(stderr, "ringlog status: cannot ask ringlogd at %s: %s\n",
				socket_path(sock), refused);
			if (access(d, R_OK | X_OK) < 0) {
				fprintf(stderr, "ringlog status: nor may this user read the storage "
					"directory %s\n", d);
				return EXIT_NODAEMON;
			}
			j = offline(d);
			json_object_set_new(j, "daemon", json_string("refused"));
			json_object_set_new(j, "error", json_string(refused));
		} else {
			j = offline(dir ? dir : c.storage_dir);
			if (!json)
				fprintf(stderr, "ringlog: cannot reach ringlogd at %s; showing the "
					"storage directory\n", socket_path(sock));
		}
	}
	if (json) {
		char *s = json_dumps(j, JSON_INDENT(2));

		puts(s);
		free(s);
	} else {
		print_human(j, down);
	}
	json_decref(j);
	return down ? EXIT_NODAEMON : EXIT_OK;
}
