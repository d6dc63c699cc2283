/* client/cli/status.c - `ringlog status`: retention and health, from the
 * daemon, or from the storage directory when the daemon is down. */
#define _GNU_SOURCE
#include "cli.h"
#include "count.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#ifndef _WIN32
#include <sys/statvfs.h>
#endif
#include <time.h>
#include <unistd.h>
#ifdef _WIN32
#include <windows.h>
#endif

#include "compat-win.h"
#include "seg-summary.h"
#include "config.h"
#include "ctl.h"

const char *cli_bytes(double b, char *buf, size_t n)
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

/* Two units at most, the way people say it: "3 d 4 h", "1 min 7 s". */
const char *cli_span(uint64_t s, char *buf, size_t n)
{
	if (s >= 365ull * 86400)
		snprintf(buf, n, "%llu y %llu d", (unsigned long long)(s / (365ull * 86400)),
			 (unsigned long long)(s % (365ull * 86400) / 86400));
	else if (s >= 86400)
		snprintf(buf, n, "%llu d %llu h", (unsigned long long)(s / 86400),
			 (unsigned long long)(s % 86400 / 3600));
	else if (s >= 3600)
		snprintf(buf, n, "%llu h %llu min", (unsigned long long)(s / 3600),
			 (unsigned long long)(s % 3600 / 60));
	else if (s >= 60)
		snprintf(buf, n, "%llu min %llu s", (unsigned long long)(s / 60),
			 (unsigned long long)(s % 60));
	else
		snprintf(buf, n, "%llu s", (unsigned long long)s);
	return buf;
}

static const char *human(double b, char *buf, size_t n)
{
	return cli_bytes(b, buf, n);
}

static const char *ago(uint64_t then, uint64_t now, char *buf, size_t n)
{
	uint64_t s = then && now > then ? (now - then) / 1000000000u : 0;

	if (!then) {
		snprintf(buf, n, "-");
		return buf;
	}
	cli_span(s, buf, n);
	strncat(buf, " ago", n - strlen(buf) - 1);
	return buf;
}

const char *cli_when(uint64_t ns, char *buf, size_t n)
{
	time_t t = (time_t)(ns / 1000000000u);
	struct tm tm;

	if (!ns)
		return "-";
	localtime_r(&t, &tm);
	strftime(buf, n, "%Y-%m-%d %H:%M:%S", &tm);
	return buf;
}

static const char *when(uint64_t ns, char *buf, size_t n)
{
	return cli_when(ns, buf, n);
}

#define I(o, k) ((uint64_t)json_integer_value(json_object_get(o, k)))
#define S(o, k) (json_string_value(json_object_get(o, k)) ?: "")

/* Shipping to a NATS JetStream stream (daemon/sink/ship.c): where to, how
 * far behind, what was sent again, discarded as a duplicate or given up. */
static void print_ship(json_t *v, uint64_t now)
{
	char a[64], b[64], c[80];

	printf("%-22s %s: stream %s, subject %s, as host %s%s%s\n", "shipping", S(v, "state"),
	       S(v, "stream"), S(v, "subject"), S(v, "host"), *S(v, "server") ? ", server " : "",
	       S(v, "server"));
	if (*S(v, "error"))
		printf("%-22s %s\n", "", S(v, "error"));
	printf("%-22s %s in %llu chunks, %.1f s behind; last ack %s\n", "ship lag",
	       human((double)I(v, "lag_bytes"), a, sizeof(a)), (unsigned long long)I(v, "lag_chunks"),
	       json_real_value(json_object_get(v, "lag_seconds")),
	       I(v, "last_ack_ns") ? ago(I(v, "last_ack_ns"), now, b, sizeof(b)) : "never");
	/* compression: what was sent, and what it was before (a daemon
	 * without it shows none) */
	if (*S(v, "compress") && strcmp(S(v, "compress"), "none"))
		snprintf(c, sizeof(c), " as %s of %s", S(v, "compress"),
			 human((double)I(v, "shipped_chunk_bytes"), b, sizeof(b)));
	else
		c[0] = '\0';
	printf("%-22s %llu events (%s%s) acknowledged, %llu messages sent again, %llu de-duplicated "
	       "by the stream, %llu events not shipped\n", "", (unsigned long long)I(v, "shipped_events"),
	       human((double)I(v, "shipped_bytes"), a, sizeof(a)), c, (unsigned long long)I(v, "resent"),
	       (unsigned long long)I(v, "deduplicated"), (unsigned long long)I(v, "not_shipped"));
	/* sent, never acknowledged, their segments deleted: asked of the
	 * stream (daemon/sink/ship-doubt.c); absent from an older daemon */
	if (I(v, "in_doubt") || I(v, "found_in_stream"))
		printf("%-22s %llu events sent unacknowledged, then deleted, found in the stream; "
		       "%llu still to ask it about\n", "", (unsigned long long)I(v, "found_in_stream"),
		       (unsigned long long)I(v, "in_doubt"));
}

static const char *level_word(unsigned l)
{
	static const char *const n[] = { "off", "critical", "error", "warning", "info", "verbose" };

	return l <= 5 ? n[l] : "?";
}

/* The per-program table is empty for one of two reasons: say which
 * (daemon/ingest/status.c sends "clients_detail" false to a peer outside
 * read_group). Never a header without rows. */
/* Overload (issue 28): what sheds first, ring loss by level, what rate
 * limits suppressed. Absent from a daemon before it: nothing printed. */
static void print_overload(json_t *j)
{
	static const char *const lv[] = { "critical", "error", "warning", "info", "verbose" };
	json_t *o = json_object_get(j, "overload"), *by = json_object_get(o, "ring_lost_by_level");
	unsigned shed = (unsigned)I(o, "shed_level");

	if (!o)
		return;
	if (I(o, "ring_reserve_percent") && shed >= 1 && shed < 5)
		printf("%-22s the last %llu%% of each ring is kept for %s and above", "overload",
		       (unsigned long long)I(o, "ring_reserve_percent"), lv[shed - 1]);
	else
		printf("%-22s no level is shed first (ring_reserve or shed_level)", "overload");
	printf("; ring loss by level:");
	for (unsigned l = 0; l < 5; l++)
		printf("%s %s %llu", l ? "," : "", lv[l], (unsigned long long)I(by, lv[l]));
	printf("; suppressed by rate limits %llu\n", (unsigned long long)I(o, "suppressed"));
}

static void print_clients(json_t *j)
{
	json_t *v, *cl = json_object_get(j, "clients");
	size_t i;

	printf("\n%-8s %-16s %-6s %5s %12s %10s %10s %8s\n", "PID", "COMMAND", "UID", "RINGS",
	       "STORED", "LOST-RING", "LOST-DISK", "CORRUPT");
	json_array_foreach(cl, i, v)
		printf("%-8llu %-16s %-6llu %5llu %12llu %10llu %10llu %8llu%s\n",
		       (unsigned long long)I(v, "pid"), S(v, "comm"), (unsigned long long)I(v, "uid"),
		       (unsigned long long)I(v, "rings"), (unsigned long long)I(v, "stored"),
		       (unsigned long long)I(v, "lost_ring"), (unsigned long long)I(v, "lost_disk"),
		       (unsigned long long)I(v, "lost_corrupt"),
		       json_is_true(json_object_get(v, "connected")) ? "" : " (exited)");
	if (json_array_size(cl))
		return;
	if (json_is_false(json_object_get(j, "clients_detail")))
		printf("(hidden: per-program detail is for root and members of group \"%s\" "
		       "(read_group); join it to see which programs write)\n", S(j, "read_group"));
	else
		printf("(no program is connected now: a program appears here from its first event "
		       "until its rings are drained after it exits)\n");
}

static void print_rules(json_t *j, uint64_t now)
{
	json_t *rules = json_object_get(j, "enable_rules"), *v;
	char a[64];
	size_t i;

	if (!json_array_size(rules))
		return;
	printf("\n%-32s %-8s %-18s %s\n", "RUN-TIME RULE (ringlog enable)", "LEVEL", "KEYWORDS",
	       "SET (kept until SIGHUP or restart)");
	json_array_foreach(rules, i, v)
		printf("%-32s %-8s %-18s %s by uid %llu\n", S(v, "provider"),
		       level_word((unsigned)I(v, "level")), I(v, "level") ? S(v, "keywords") : "-",
		       ago(I(v, "set_ns"), now, a, sizeof(a)), (unsigned long long)I(v, "uid"));
}

/* Retention classes: one line per class, then the last evictions with
 * why (the daemon's "retention" object); without classes, how many
 * segments the budget deleted. */
static void print_retention(json_t *r, uint64_t now)
{
	json_t *classes = json_object_get(r, "classes"), *ev = json_object_get(r, "evictions"), *v;
	char a[64], b[64], c[64];
	size_t i;

	if (json_array_size(classes) < 2) { /* no classes: one line */
		if (I(r, "evictions_total"))
			printf("%-22s %llu by the budget since start, the oldest first\n",
			       "segments evicted", (unsigned long long)I(r, "evictions_total"));
		return;
	}
	printf("\n%-16s %10s %7s %9s %5s %-24s %s\n", "CLASS", "USED", "SHARE", "MIN_SHARE", "SEGS",
	       "HORIZON (oldest kept)", "EVICTED: LAST WHY");
	json_array_foreach(classes, i, v) {
		snprintf(c, sizeof(c), "%.1f%%", json_real_value(json_object_get(v, "share")) * 100);
		printf("%-16s %10s %7s %9s %5llu %-24s %llu (%s): %s\n", S(v, "name"),
		       human((double)I(v, "bytes"), a, sizeof(a)), c,
		       human((double)I(v, "min_share_bytes"), b, sizeof(b)),
		       (unsigned long long)I(v, "segments"), ago(I(v, "horizon_ns"), now, b + 32, 32),
		       (unsigned long long)I(v, "evicted_segments"),
		       human((double)I(v, "evicted_bytes"), a + 32, 32),
		       *S(v, "last_eviction") ? S(v, "last_eviction") : "none");
	}
	if (!json_array_size(ev))
		return;
	printf("%-22s %llu in all; the last:\n", "segments evicted",
	       (unsigned long long)I(r, "evictions_total"));
	json_array_foreach(ev, i, v)
		printf("  segment %016llx (%s, %s) %s: %s\n", (unsigned long long)I(v, "seq"),
		       S(v, "class"), human((double)I(v, "bytes"), a, sizeof(a)),
		       ago(I(v, "at_ns"), now, b, sizeof(b)), S(v, "why"));
}

/* The sync rounds (a daemon before them: nothing printed). */
/* What the flight recorder's snapshots take (flight.snapshots.bytes, from
 * the daemon or the offline scan): under max_disk beside the segments,
 * which used_bytes counts alone. */
static uint64_t snap_bytes(json_t *j)
{
	return I(json_object_get(json_object_get(j, "flight"), "snapshots"), "bytes");
}

/* The disk line: everything under max_disk against it, the segments and
 * the snapshots each when there are snapshots. */
static void print_disk(json_t *j)
{
	char a[64], b[64], c[64], m[64], s[64], p[64];
	uint64_t snaps = snap_bytes(j);

	printf("%-22s %s used of max_disk %s", "disk",
	       human((double)(I(j, "used_bytes") + snaps), a, sizeof(a)),
	       human((double)I(j, "max_disk"), b, sizeof(b)));
	if (snaps)
		printf(" (segments %s, snapshots %s)", human((double)I(j, "used_bytes"), s, sizeof(s)),
		       human((double)snaps, p, sizeof(p)));
	printf("; %s free on the filesystem (min_free %s)\n",
	       human((double)I(j, "fs_free_bytes"), c, sizeof(c)),
	       human((double)I(j, "min_free"), m, sizeof(m)));
}

static void print_durability(json_t *j, uint64_t now)
{
	json_t *v = json_object_get(j, "durability");
	char a[64], b[64];

	if (!v)
		return;
	if (I(v, "sync_interval_ns") < 1000000000u)
		snprintf(a, sizeof(a), "%llu ms", (unsigned long long)(I(v, "sync_interval_ns") / 1000000u));
	else
		cli_span(I(v, "sync_interval_ns") / 1000000000u, a, sizeof(a));
	printf("%-22s segment files synced at most every %s, last %s; %llu closed segments "
	       "waiting; %llu syncs failed\n", "durability", a,
	       I(v, "last_round_ns") ? ago(I(v, "last_round_ns"), now, b, sizeof(b)) : "not yet",
	       (unsigned long long)I(v, "segments_waiting"), (unsigned long long)I(v, "sync_failures"));
	if (I(v, "sync_failures"))
		printf("%-22s %s\n", "SYNC PROBLEM", S(v, "last_error"));
}

static void print_human(json_t *j, bool down)
{
	char a[64], b[64], c[64];
	uint64_t now = I(j, "now_ns");
	json_t *v;
	size_t i;

	if (down && !json_object_get(j, "segments")) { /* the directory could not be read */
		printf("%-22s %s\n%-22s %s\n", "storage", S(j, "storage_dir"), "", S(j, "error"));
		return;
	}
	if (down && !strcmp(S(j, "daemon"), "refused"))
		printf("ringlogd refused this user at its socket (access refused, see above; it may "
		       "well be running): figures read from the storage directory\n\n");
	else if (down && !strcmp(S(j, "daemon"), "elsewhere"))
		printf("ringlogd at the socket stores elsewhere: figures read from this storage "
		       "directory\n\n");
	else if (down)
		printf("ringlogd is not running: figures read from the storage directory\n\n");
	printf("%-22s %s\n", "storage", S(j, "storage_dir"));
	print_disk(j);
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
			printf("%-22s %s at this rate\n", "oldest data deleted in",
			       cli_span((uint64_t)left, a, sizeof(a)));
		else
			printf("%-22s never at this rate (nothing is being written)\n", "oldest data deleted in");
		if (I(j, "max_retention_ns"))
			printf("%-22s %s: older segments are deleted whatever the budget\n", "max_retention",
			       cli_span(I(j, "max_retention_ns") / 1000000000u, a, sizeof(a)));
		if (json_object_get(j, "retention"))
			print_retention(json_object_get(j, "retention"), now);
		printf("%-22s %s (%s)\n", "write backend", S(j, "backend"), S(j, "backend_note"));
		v = json_object_get(j, "forwarding");
		printf("%-22s user_events: %s, etw: %s\n", "forwarding", S(v, "user_events"), S(v, "etw"));
		if (json_object_get(j, "ship"))
			print_ship(json_object_get(j, "ship"), now);
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
		       "corrupt rings %llu, no ring %llu; slow tail readers %llu\n",
		       "events lost", (unsigned long long)I(v, "total"), when(I(v, "since_ns"), a, sizeof(a)),
		       ago(I(v, "since_ns"), now, b, sizeof(b)), (unsigned long long)I(v, "ring"),
		       (unsigned long long)I(v, "disk"), (unsigned long long)I(v, "corrupt"),
		       (unsigned long long)I(v, "no_ring"), (unsigned long long)I(v, "reader"));
		print_overload(j);
		if (I(v, "deleted"))
			printf("%-22s %llu events stored, then deleted with storage_dir (not by the budget)\n",
			       "", (unsigned long long)I(v, "deleted"));
		if (json_is_true(json_object_get(j, "disk_blocked")))
			printf("%-22s %s\n", "DISK PROBLEM", S(j, "disk_error"));
		print_durability(j, now);
		status_print_flight(j);
		print_clients(j);
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
		else if (!json_array_size(json_object_get(j, "providers")))
			printf("(no provider declared since ringlogd started)\n");
		print_rules(j, now);
	} else {
		status_print_flight(j);
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
	if (!json_array_size(json_object_get(j, "segments")))
		printf("(no segment yet: the first is created with the first event stored)\n");
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

	/* a directory that cannot be read says so, not "0 B used" (an
	 * outsider's test: a storage directory that did not exist) */
	if (k < 0) {
		int err = errno;

		json_object_set_new(j, "daemon", json_string("down"));
		json_object_set_new(j, "storage_dir", json_string(dir));
		json_object_set_new(j, "error", json_sprintf("cannot read the storage directory %s: %s%s",
			dir, strerror(err), err == ENOENT ? " (ringlogd makes it when it starts; "
			"--dir names another)" : ""));
		json_decref(segs);
		return j;
	}
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
				ringlog_count_add(&all_events, events);
				ringlog_count_add(&all_lost, lost);
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
	json_object_set_new(j, "flight", status_offline_flight(dir));
	json_object_set_new(j, "store", json_pack("{s:I,s:I,s:I}", "segments", (json_int_t)n,
		"events", (json_int_t)all_events, "lost", (json_int_t)all_lost));
	return j;
}

/* The daemon's STATUS, or the storage directory's figures when it cannot
 * be asked (*down; refused: the socket's file turned us away, and why).
 * NULL with *rc set when the daemon answered with an error. */
static json_t *fetch(const char *sock, const char *dir, bool json, bool quiet, bool *down, int *rc)
{
	json_t *j = NULL;
	char refused[1024] = "";
	int fd = cli_connect(socket_path(sock), true);

	*down = false;
	/* Refused by the socket's file: whether ringlogd runs is unknown (it
	 * may well), so never say it is down. */
	if (fd == -EACCES || fd == -EPERM)
		cli_refusal(socket_path(sock), refused, sizeof(refused));
	if (fd >= 0) {
		uint16_t type = 0;
		uint8_t *p = NULL;

		long n;

		/* A daemon at a limit says so with REFUSE, then closes: it runs,
		 * and this user learns why it may not ask (never "down"). The
		 * send may fail on the closed socket while the REFUSE waits. */
		cli_send(fd, RINGLOG_CTL_STATUS, "{}", 2);
		if ((n = cli_recv(fd, &type, &p)) > 0) {
			if (type == RINGLOG_CTL_REFUSE) {
				cli_refuse_text(p, n, refused, sizeof(refused));
			} else if (type == RINGLOG_CTL_STATUS) {
				j = json_loads((const char *)p, 0, NULL);
			} else if (type == RINGLOG_CTL_ERROR) {
				cli_print_error("ringlog status", p);
				free(p);
				close(fd);
				*rc = EXIT_FAIL;
				return NULL;
			}
		}
		free(p);
		close(fd);
	}
	/* --dir names another store than the daemon's: that store's files
	 * (it showed the daemon's own, saying nothing: an outsider's test) */
	if (j && dir && !cli_same_dir(dir, json_string_value(json_object_get(j, "storage_dir")))) {
		json_t *o = offline(dir);
		/* a directory that cannot be read is an error (exit 1), not
		 * figures (an outsider: exit 0, "figures read from" it) */
		bool unread = !json_object_get(o, "segments");

		if (!quiet)
			fprintf(stderr, "ringlog status: ringlogd at %s stores in %s, not %s%s\n",
				socket_path(sock), json_string_value(json_object_get(j, "storage_dir")),
				dir, unread ? "" : ": figures read from it");
		json_decref(j);
		*down = true;
		json_object_set_new(o, "daemon", json_string("elsewhere"));
		*rc = unread ? EXIT_FAIL : EXIT_OK;
		return o;
	}
	if (!j) {
		struct ringlog_config c;

		ringlog_config_defaults(&c);
		if (!dir && access("/etc/ringlog/ringlogd.json", R_OK) == 0) {
			char err[1024];

			ringlog_config_load(&c, "/etc/ringlog/ringlogd.json", err, sizeof(err));
		}
		*down = true;
		if (refused[0]) {
			const char *d = dir ? dir : c.storage_dir;

			if (!quiet)
				fprintf(stderr, "ringlog status: cannot ask ringlogd at %s: %s\n",
					socket_path(sock), refused);
			if (access(d, R_OK | X_OK) < 0) {
				if (!quiet)
					fprintf(stderr, "ringlog status: nor may this user read the storage "
						"directory %s\n", d);
				*rc = EXIT_NODAEMON;
				return NULL;
			}
			j = offline(d);
			json_object_set_new(j, "daemon", json_string("refused"));
			json_object_set_new(j, "error", json_string(refused));
		} else {
			j = offline(dir ? dir : c.storage_dir);
			if (!json && !quiet)
				fprintf(stderr, "ringlog: cannot reach ringlogd at %s; showing the "
					"storage directory\n", socket_path(sock));
		}
	}
	*rc = *down ? EXIT_NODAEMON : EXIT_OK;
	return j;
}

/* A figure's rate between two refreshes, per second. */
static double per_s(uint64_t now, uint64_t before, double dt)
{
	return dt > 0 && now >= before ? (double)(now - before) / dt : 0;
}

static json_t *client_by_pid(json_t *prev, uint64_t pid)
{
	json_t *v;
	size_t i;

	json_array_foreach(json_object_get(prev, "clients"), i, v)
		if (I(v, "pid") == pid)
			return v;
	return NULL;
}

/* One screen of `status --watch`: what moves (rates in and out, loss),
 * disk, the horizon, and the writers with their own rates. Rates are the
 * differences since the previous refresh (dt seconds); the first screen
 * shows the daemon's smoothed write rate. */
static void print_watch(json_t *j, json_t *prev, double dt, double every)
{
	char a[64], b[64], c[64], d[64];
	uint64_t now = I(j, "now_ns");
	json_t *lost = json_object_get(j, "lost"), *fw = json_object_get(j, "forwarding"), *v;
	double in_ev, in_b, out, loss, left;
	size_t i;

	if (prev) {
		in_ev = per_s(I(j, "stored_events"), I(prev, "stored_events"), dt);
		in_b = json_object_get(prev, "stored_bytes")
			       ? per_s(I(j, "stored_bytes"), I(prev, "stored_bytes"), dt)
			       : (double)I(j, "rate_bytes_per_s");
		out = per_s(I(fw, "forwarded"), I(json_object_get(prev, "forwarding"), "forwarded"), dt);
		loss = per_s(I(lost, "total") + I(lost, "reader"),
			     I(json_object_get(prev, "lost"), "total") +
			     I(json_object_get(prev, "lost"), "reader"), dt);
	} else {
		in_ev = (double)I(j, "rate_events_per_s");
		in_b = (double)I(j, "rate_bytes_per_s");
		out = loss = 0;
	}
	printf("ringlog status --watch: every %g s, %s (Ctrl-C quits)\n\n", every,
	       cli_when(now, a, sizeof(a)));
	printf("%-8s %.0f events/s stored, %s/s to disk; %llu events since ringlogd started\n", "in",
	       in_ev, cli_bytes(in_b, a, sizeof(a)), (unsigned long long)I(j, "stored_events"));
	printf("%-8s %.0f events/s forwarded to the OS tracer (user_events: %s, etw: %s)\n", "out",
	       out, S(fw, "user_events"), S(fw, "etw"));
	printf("%-8s %.0f events/s lost now; %llu since start (ring %llu, disk %llu, corrupt %llu, "
	       "slow readers %llu)\n", "loss", loss, (unsigned long long)I(lost, "total"),
	       (unsigned long long)I(lost, "ring"), (unsigned long long)I(lost, "disk"),
	       (unsigned long long)I(lost, "corrupt"), (unsigned long long)I(lost, "reader"));
	printf("%-8s %s of max_disk %s in %llu segments%s%s; %s free on the filesystem%s\n", "disk",
	       cli_bytes((double)(I(j, "used_bytes") + snap_bytes(j)), a, sizeof(a)),
	       cli_bytes((double)I(j, "max_disk"), b, sizeof(b)),
	       (unsigned long long)I(j, "segment_count"), snap_bytes(j) ? " and snapshots of " : "",
	       snap_bytes(j) ? cli_bytes((double)snap_bytes(j), d, sizeof(d)) : "",
	       cli_bytes((double)I(j, "fs_free_bytes"), c, sizeof(c)),
	       json_is_true(json_object_get(j, "disk_blocked")) ? " - DISK PROBLEM" : "");
	left = json_real_value(json_object_get(j, "seconds_until_oldest_deleted"));
	if (left >= 0)
		printf("%-8s oldest event %s; oldest data deleted in %s at this rate\n", "horizon",
		       ago(I(j, "oldest_event_ns"), now, a, sizeof(a)),
		       cli_span((uint64_t)left, b, sizeof(b)));
	else
		printf("%-8s oldest event %s; never deleted at this rate (nothing is being written)\n",
		       "horizon", ago(I(j, "oldest_event_ns"), now, a, sizeof(a)));
	printf("\n%-8s %-16s %5s %10s %12s %10s %10s\n", "PID", "COMMAND", "RINGS", "EVENTS/S",
	       "STORED", "LOST-RING", "LOST-DISK");
	json_array_foreach(json_object_get(j, "clients"), i, v) {
		json_t *p = prev ? client_by_pid(prev, I(v, "pid")) : NULL;

		printf("%-8llu %-16s %5llu %10.0f %12llu %10llu %10llu%s\n",
		       (unsigned long long)I(v, "pid"), S(v, "comm"), (unsigned long long)I(v, "rings"),
		       p ? per_s(I(v, "stored"), I(p, "stored"), dt) : 0.0,
		       (unsigned long long)I(v, "stored"), (unsigned long long)I(v, "lost_ring"),
		       (unsigned long long)I(v, "lost_disk"),
		       json_is_true(json_object_get(v, "connected")) ? "" : " (exited)");
	}
	if (!json_array_size(json_object_get(j, "clients"))) {
		if (json_is_false(json_object_get(j, "clients_detail")))
			printf("(hidden: per-program detail is for root and members of group \"%s\")\n",
			       S(j, "read_group"));
		else
			printf("(no program is connected now)\n");
	}
}

static int watch(const char *sock, const char *dir, bool json, double every)
{
	bool tty = isatty(1), down;
	json_t *prev = NULL, *j;
	double prev_t = 0;
	int rc;

	cli_catch_interrupt();
	for (unsigned n = 0; !cli_interrupted(); n++) {
		j = fetch(sock, dir, true, true, &down, &rc);
		if (json) {
			char *s;

			/* the rates between this refresh and the last, as the
			 * screen shows them (the daemon's rate_* are smoothed) */
			if (j && !down && prev) {
				double dt = (double)(I(j, "now_ns") - I(prev, "now_ns")) / 1e9;
				json_t *l = json_object_get(j, "lost"), *pl = json_object_get(prev, "lost");

				json_object_set_new(j, "watch", json_pack("{s:f,s:f,s:f,s:f}",
					"interval_s", dt,
					"events_per_s", per_s(I(j, "stored_events"), I(prev, "stored_events"), dt),
					"bytes_per_s", per_s(I(j, "stored_bytes"), I(prev, "stored_bytes"), dt),
					"lost_per_s", per_s(I(l, "total") + I(l, "reader"),
							    I(pl, "total") + I(pl, "reader"), dt)));
			}
			s = j ? json_dumps(j, JSON_COMPACT) : NULL;
			if (s)
				puts(s);
			free(s);
			if (j && !down) {
				json_decref(prev);
				prev = json_incref(j);
			}
		} else {
			/* A terminal is redrawn in place (home, clear); a pipe or a
			 * file gets one screen after another. */
			if (tty)
				fputs("\033[H\033[2J", stdout);
			else if (n)
				putchar('\n');
			if (!j || down) {
				printf("ringlog status --watch: every %g s: ringlogd at %s is not reachable; "
				       "trying again\n", every, socket_path(sock));
			} else {
				double t = (double)I(j, "now_ns") / 1e9;

				print_watch(j, prev, prev ? t - prev_t : 0, every);
				json_decref(prev);
				prev = json_incref(j);
				prev_t = t;
			}
		}
		fflush(stdout);
		json_decref(j);
		for (unsigned ms = 0; ms < (unsigned)(every * 1000) && !cli_interrupted(); ms += 100)
			cli_sleep_ms((unsigned)(every * 1000) - ms < 100 ? (unsigned)(every * 1000) - ms : 100);
	}
	json_decref(prev);
	return EXIT_OK;
}

int cmd_status(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "socket", required_argument, NULL, 'S' },
		{ "dir", required_argument, NULL, 'd' },
		{ "watch", optional_argument, NULL, 'w' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *sock = NULL, *dir = NULL;
	bool json = false, down = false, watching = false;
	double every = 2;
	json_t *j;
	int o, rc;

	optind = 1;
	opterr = 0;
	while ((o = getopt_long(argc, argv, "hw::", opts, NULL)) != -1) {
		switch (o) {
		case 'j': json = true; break;
		case 'S': sock = optarg; break;
		case 'd': dir = optarg; break;
		case 'w':
			watching = true;
			/* --watch 5 as well as --watch=5: a number right after it */
			if (!optarg && optind < argc && argv[optind][0] >= '0' && argv[optind][0] <= '9')
				optarg = argv[optind++];
			if (optarg) {
				char *end;

				every = strtod(optarg, &end);
				if (*end || !(every >= 0.1 && every <= 86400)) {
					fprintf(stderr, "ringlog status: --watch \"%s\": expected seconds between "
						"refreshes, 0.1 to 86400\n", optarg);
					return EXIT_USAGE;
				}
			}
			break;
		case 'h':
			puts("usage: ringlog status [--json] [--watch [SECONDS]] [--socket PATH] [--dir DIR]\n"
			     "Retention and health from ringlogd: budget, used and free bytes, segments,\n"
			     "the oldest retained event and when the oldest data goes, write rate, backend,\n"
			     "forwarding, per-program and per-provider counts and losses, the run-time\n"
			     "enablement rules (ringlog enable). With the daemon down, reads DIR (default:\n"
			     "the configured storage_dir) and says so (exit code 3).\n"
			     "--watch: a view refreshed every SECONDS (default 2): rates in and out, loss,\n"
			     "disk, horizon and each writer's rate; redrawn in place on a terminal, one\n"
			     "screen after another otherwise (--json: one document a line). Ctrl-C quits.");
			return EXIT_OK;
		default:
			fprintf(stderr, "ringlog status: unknown option or missing value: %s (see ringlog "
				"status --help)\n", argv[optind - 1]);
			return EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "ringlog status: unexpected argument \"%s\" (see ringlog status --help)\n",
			argv[optind]);
		return EXIT_USAGE;
	}
	if (watching)
		return watch(sock, dir, json, every);
	if (!(j = fetch(sock, dir, json, false, &down, &rc)))
		return rc;
	if (json) {
		char *s = json_dumps(j, JSON_INDENT(2));

		puts(s);
		free(s);
	} else {
		print_human(j, down);
	}
	json_decref(j);
	return rc;
}
