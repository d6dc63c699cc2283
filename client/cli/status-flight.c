/* client/cli/status-flight.c - the flight recorder's lines of `ringlog
 * status`: the buffer (from the daemon's STATUS "flight") and the
 * snapshots, also with the daemon down (read from the snapshot directory:
 * their headers, proto/segment.h compat flag SNAPSHOT). */
#define _GNU_SOURCE
#include "cli.h"
#include "decode.h"

#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "compat-win.h" /* scandir, alphasort */

#define I(o, k) ((uint64_t)json_integer_value(json_object_get(o, k)))
#define S(o, k) (json_string_value(json_object_get(o, k)) ?: "")

void status_print_flight(void *jp)
{
	json_t *j = jp, *f = json_object_get(j, "flight"), *s = json_object_get(f, "snapshots");
	char a[64], b[64], c[64], d[64];

	if (!f || (!json_is_true(json_object_get(f, "enabled")) && !I(s, "count")))
		return;
	if (json_is_true(json_object_get(f, "enabled"))) {
		uint64_t first = I(f, "first_ns"), last = I(f, "last_ns");

		printf("%-22s %s held of %s: %llu events over %s (pre %s); %llu overwritten, %llu "
		       "dropped; %llu kept in memory only\n", "flight buffer",
		       cli_bytes((double)I(f, "bytes"), a, sizeof(a)),
		       cli_bytes((double)I(f, "size"), b, sizeof(b)), (unsigned long long)I(f, "events"),
		       cli_span(first && last > first ? (last - first) / 1000000000u : 0, c, sizeof(c)),
		       cli_span(I(f, "pre_ns") / 1000000000u, d, sizeof(d)),
		       (unsigned long long)I(f, "overwritten"), (unsigned long long)I(f, "dropped"),
		       (unsigned long long)I(f, "memory_only"));
	}
	if (!json_is_true(json_object_get(f, "enabled")))
		printf("%-22s %llu in %s, %s\n", "snapshots", (unsigned long long)I(s, "count"),
		       S(f, "snapshot_dir"), cli_bytes((double)I(s, "bytes"), a, sizeof(a)));
	else
		printf("%-22s %llu in %s, %s of flight.max_disk %s; %llu written, %llu refused "
	       "(max_snapshots), %llu coalesced, %llu failed%s\n", "snapshots",
	       (unsigned long long)I(s, "count"), S(f, "snapshot_dir"),
	       cli_bytes((double)I(s, "bytes"), a, sizeof(a)),
	       cli_bytes((double)I(s, "max_disk"), b, sizeof(b)), (unsigned long long)I(s, "written"),
	       (unsigned long long)I(s, "refused"), (unsigned long long)I(s, "coalesced"),
	       (unsigned long long)I(s, "failed"), I(s, "pending") ? "; one pending" : "");
	if (*S(s, "last_reason"))
		printf("%-22s %s\n", "last trigger", S(s, "last_reason"));
	if (*S(s, "last_path"))
		printf("%-22s %s\n", "last snapshot", S(s, "last_path"));
	if (*S(s, "last_error"))
		printf("%-22s %s\n", "SNAPSHOT PROBLEM", S(s, "last_error"));
}

/* With the daemon down: the snapshots in dir/snapshots, and the last
 * one's reasons from its header. */
void *status_offline_flight(const char *store)
{
	char dir[4200], last[4200 + 260] = "", reason[256] = "";
	uint64_t bytes = 0, count = 0;
	struct dirent **names;
	int k;

	snprintf(dir, sizeof(dir), "%s/snapshots", store);
	k = scandir(dir, &names, NULL, alphasort);
	for (int i = 0; i < k; i++) {
		struct ringlog_seg_file f;
		const char *why;

		if (strlen(names[i]->d_name) == 22 && !strcmp(names[i]->d_name + 16, ".rlseg")) {
			snprintf(last, sizeof(last), "%s/%s", dir, names[i]->d_name);
			if (ringlog_seg_open(&f, last, &why) == 0) {
				struct ringlog_seg_snap sn;

				count++;
				bytes += f.size;
				memcpy(&sn, (const uint8_t *)&f.hdr + RINGLOG_SEG_SNAP_OFF, sizeof(sn));
				if ((f.hdr.compat_flags & RINGLOG_SEG_SNAPSHOT) && sn.nreasons &&
				    ringlog_seg_snap_crc(&sn) == sn.crc && sn.reasons_len <= sizeof(sn.reasons))
					snprintf(reason, sizeof(reason), "%.*s", (int)strnlen(sn.reasons,
						 sn.reasons_len), sn.reasons);
				ringlog_seg_close(&f);
			}
		}
		free(names[i]);
	}
	if (k >= 0)
		free(names);
	return json_pack("{s:b,s:s,s:{s:I,s:I,s:s,s:s}}", "enabled", 0, "snapshot_dir", dir,
			 "snapshots", "count", (json_int_t)count, "bytes", (json_int_t)bytes,
			 "last_reason", reason, "last_path", count ? last : "");
}
