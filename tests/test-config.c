/* tests/test-config.c - ringlogd's configuration: the shipped file equals
 * the built-in defaults, sizes and durations, a table of bad files with the
 * exact error each must print, and dump/parse round trips. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "config.h"
#include "helpers.h"

TestSuite(config, .fini = th_check_leaks);

static int parse(struct ringlog_config *c, const char *json, char *err, size_t len)
{
	return ringlog_config_parse(c, json, strlen(json), "t.json", err, len);
}

Test(config, shipped_file_equals_the_built_in_defaults)
{
	struct ringlog_config *d = malloc(sizeof(*d)), *c = calloc(1, sizeof(*c));
	char err[1024];

	ringlog_config_defaults(d);
	cr_assert_eq(ringlog_config_load(c, RINGLOG_SOURCE_DIR "/config/ringlogd.json", err,
					 sizeof(err)), 0, "%s", err);
	cr_assert_eq(memcmp(c, d, sizeof(*c)), 0,
		     "config/ringlogd.json and ringlog_config_defaults() disagree");
	free(c);
	free(d);
}

/* The socket unit makes the socket when systemd starts ringlogd by it;
 * the daemon makes it otherwise: both give it the same mode, or access
 * would depend on how the daemon was started. */
Test(config, the_socket_unit_and_the_default_config_give_the_socket_one_mode)
{
	struct ringlog_config *d = malloc(sizeof(*d));
	FILE *f = fopen(RINGLOG_SOURCE_DIR "/systemd/ringlogd.socket", "r");
	char line[256];
	unsigned mode = 0, found = 0;

	cr_assert(f, "systemd/ringlogd.socket: cannot open");
	while (fgets(line, sizeof(line), f))
		found += sscanf(line, "SocketMode=%o", &mode) == 1;
	fclose(f);
	cr_assert_eq(found, 1, "systemd/ringlogd.socket has %u SocketMode= lines", found);
	ringlog_config_defaults(d);
	cr_expect_eq(d->socket_mode, mode, "socket_mode %o (config), SocketMode=%o (ringlogd.socket)",
		     d->socket_mode, mode);
	free(d);
}

Test(config, sizes_and_durations)
{
	static const struct { const char *s; uint64_t v; } sizes[] = {
		{ "0", 0 }, { "4096", 4096 }, { "64K", 65536 }, { "64k", 65536 },
		{ "512M", 512ull << 20 }, { "4G", 4ull << 30 }, { "1T", 1ull << 40 },
		{ "2GiB", 2ull << 30 }, { "3MB", 3ull << 20 }, { "1P", 1ull << 50 },
	};
	static const char *bad_sizes[] = { "", "-3", "M", "12X", "1.5G", "4G ", " 4G",
					   "99999999999999999999", "20000000P", "4Gi", "4GiBs" };
	static const struct { const char *s; uint64_t v; } durs[] = {
		{ "1s", 1000000000ull }, { "500ms", 500000000ull }, { "30m", 1800000000000ull },
		{ "7d", 604800000000000ull }, { "2h", 7200000000000ull }, { "10us", 10000 },
		{ "5ns", 5 },
	};
	static const char *bad_durs[] = { "", "1", "s", "1sec", "-1s", "1.5s", "1 s", "1S",
					  "300000000000d" };
	uint64_t v;

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		cr_assert_eq(ringlog_parse_size(sizes[i].s, &v), 0, "%s", sizes[i].s);
		cr_assert_eq(v, sizes[i].v, "%s", sizes[i].s);
	}
	for (size_t i = 0; i < sizeof(bad_sizes) / sizeof(bad_sizes[0]); i++)
		cr_assert_eq(ringlog_parse_size(bad_sizes[i], &v), -EINVAL, "\"%s\"", bad_sizes[i]);
	for (size_t i = 0; i < sizeof(durs) / sizeof(durs[0]); i++) {
		cr_assert_eq(ringlog_parse_duration(durs[i].s, &v), 0, "%s", durs[i].s);
		cr_assert_eq(v, durs[i].v, "%s", durs[i].s);
	}
	for (size_t i = 0; i < sizeof(bad_durs) / sizeof(bad_durs[0]); i++)
		cr_assert_eq(ringlog_parse_duration(bad_durs[i], &v), -EINVAL, "\"%s\"", bad_durs[i]);
}

/* Each bad file and the exact message it must produce. */
static const struct { const char *json, *err; } bad[] = {
	{ "{\n  \"max_disk\": -3\n}",
	  "config: t.json:2:3: \"max_disk\": expected a size like \"512M\", got -3" },
	{ "{\"max_disks\": \"1G\"}",
	  "config: t.json:1:2: \"max_disks\": unknown key; known keys here: storage_dir, "
	  "socket_path, socket_group, read_group, socket_mode, ring_size, ring_reserve, "
	  "shed_level, flush_interval, sync_interval, "
	  "max_segment_size, max_segment_age, max_disk, min_free, max_retention, retention, "
	  "io_backend, providers, "
	  "forward, limits, flight, ship" },
	{ "{\"ring_size\": \"3M\"}",
	  "config: t.json:1:2: \"ring_size\": \"3M\" is not a power of two; try \"256K\", "
	  "\"1M\" or \"4M\"" },
	{ "{\"ring_size\": \"2K\"}",
	  "config: t.json:1:2: \"ring_size\": \"2K\" is out of range (4096 to 1073741824 bytes)" },
	{ "{\"flush_interval\": 1}",
	  "config: t.json:1:2: \"flush_interval\": expected a duration like \"1s\" or \"500ms\" "
	  "(1ms to 1h), got 1" },
	{ "{\"sync_interval\": \"abc\"}",
	  "config: t.json:1:2: \"sync_interval\": expected a duration like \"1s\" or \"500ms\" "
	  "(10ms to 1h), got \"abc\"" },
	{ "{\"flush_interval\": \"2h\"}",
	  "config: t.json:1:2: \"flush_interval\": \"2h\" is out of range (1ms to 1h)" },
	{ "{\"sync_interval\": \"1ms\"}",
	  "config: t.json:1:2: \"sync_interval\": \"1ms\" is out of range (10ms to 1h)" },
	{ "{\"max_retention\": \"forever\"}",
	  "config: t.json:1:2: \"max_retention\": expected \"off\" or a duration like \"12h\" or "
	  "\"30d\", got \"forever\"" },
	{ "{\"max_retention\": \"500ms\"}",
	  "config: t.json:1:2: \"max_retention\": \"500ms\" is out of range (1s to 3660d)" },
	{ "{\"io_backend\": \"epoll\"}",
	  "config: t.json:1:2: \"io_backend\": expected \"auto\", \"io_uring\" or \"pool\", "
	  "got \"epoll\"" },
	{ "{\"min_free\": \"150%\"}",
	  "config: t.json:1:2: \"min_free\": expected a percentage from 0% to 99%, got \"150%\"" },
	{ "{\"min_free\": true}",
	  "config: t.json:1:2: \"min_free\": expected a size like \"1G\" or a percentage like "
	  "\"5%\", got true" },
	{ "{\"socket_mode\": 660}",
	  "config: t.json:1:2: \"socket_mode\": expected an octal mode string like \"0660\", "
	  "got 660" },
	{ "{\"socket_group\": \"bad group\"}",
	  "config: t.json:1:2: \"socket_group\": \"bad group\" is not a valid group name "
	  "(letters, digits, _ . -; at most 32)" },
	{ "{\"storage_dir\": \"\"}",
	  "config: t.json:1:2: \"storage_dir\": expected a directory path, got \"\"" },
	{ "{\"socket_path\": \"/run/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.sock\"}",
	  "config: t.json:1:2: \"socket_path\": too long (122 bytes, at most 107)" },
	{ "{\"providers\": {\"Acme.Net\": {\"level\": 9}}}",
	  "config: t.json:1:29: \"providers.Acme.Net.level\": expected an integer from 1 to 5, "
	  "got 9" },
	{ "{\"providers\": {\"Acme.Net\": {\"level\": \"loud\"}}}",
	  "config: t.json:1:29: \"providers.Acme.Net.level\": expected a level 1..5 or critical, "
	  "error, warning, info, verbose; got \"loud\"" },
	{ "{\"providers\": {\"Acme\": {\"keywords\": \"ff\"}}}",
	  "config: t.json:1:25: \"providers.Acme.keywords\": expected a keyword mask like "
	  "\"0xff\" (hex, up to 64 bits), got \"ff\"" },
	{ "{\"providers\": {\"Acme\": {\"colour\": 1}}}",
	  "config: t.json:1:25: \"providers.Acme.colour\": unknown key; known keys here: level, "
	  "keywords, rate, burst, wait, events, flight_level" },
	/* overload (issue 28) */
	{ "{\"ring_reserve\": \"60%\"}",
	  "config: t.json:1:2: \"ring_reserve\": expected a percentage of the ring from \"0%\" (off) "
	  "to \"50%\", like \"25%\"; got \"60%\"" },
	{ "{\"shed_level\": 9}",
	  "config: t.json:1:2: \"shed_level\": expected the least important level kept in the ring's "
	  "reserve: 1..5 or critical, error, warning, info, verbose (verbose: shed nothing); got 9" },
	{ "{\"providers\": {\"Acme\": {\"rate\": \"fast\"}}}",
	  "config: t.json:1:25: \"providers.Acme.rate\": expected a rate like \"1000/s\", \"50/min\" "
	  "or \"10/h\" (1 to 100000000 events), or \"off\"; got \"fast\"" },
	{ "{\"providers\": {\"Acme\": {\"wait\": \"1s\"}}}",
	  "config: t.json:1:25: \"providers.Acme.wait\": \"1s\" is out of range (0 to 100ms; true "
	  "means 1ms)" },
	{ "{\"providers\": {\"Acme\": {\"events\": {\"Tick\": {\"colour\": 1}}}}}",
	  "config: t.json:1:45: \"providers.Acme.events.Tick.colour\": unknown key; known keys "
	  "here: rate, burst, wait" },
	{ "{\"providers\": {\"Ac me\": {}}}",
	  "config: t.json:1:16: \"providers.Ac me\": not a provider name or pattern (letters, "
	  "digits, _ . - and the wildcards * ?; at most 127)" },
	{ "{\"forward\": {\"user_events\": \"yes\"}}",
	  "config: t.json:1:14: \"forward.user_events\": expected true or false, got \"yes\"" },
	{ "{\"forward\": true}",
	  "config: t.json:1:2: \"forward\": expected an object { ... }, got true" },
	{ "{\"limits\": {\"clients\": 0}}",
	  "config: t.json:1:13: \"limits.clients\": expected an integer from 1 to 65536, got 0" },
	{ "{\"flight\": {\"max_snapshots\": \"10 per hour\"}}",
	  "config: t.json:1:13: \"flight.max_snapshots\": expected a rate like \"10/h\" (1 to 10000 "
	  "per s, m, h or d), got \"10 per hour\"" },
	{ "{\"flight\": {\"size\": \"64K\"}}",
	  "config: t.json:1:13: \"flight.size\": \"64K\" is too small: 0 (off) or at least \"1M\"" },
	{ "{\"providers\": {\"Acme\": {\"flight_level\": 7}}}",
	  "config: t.json:1:25: \"providers.Acme.flight_level\": expected an integer from 1 to 5, got 7" },
	{ "{\"max_disk\": \"1G\", \"flight\": {\"size\": \"16M\", \"max_disk\": \"1G\"}}",
	  "config: t.json:1:46: \"flight.max_disk\": 1073741824 bytes for snapshots leaves less than "
	  "max_segment_size (67108864) of max_disk (1073741824) to the segments; lower flight.max_disk "
	  "or raise max_disk" },
	/* below it the segment being written was the whole budget: new data
	 * was dropped with the disk nearly empty (an outsider's test) */
	{ "{\"max_disk\": \"64K\", \"max_segment_size\": \"64K\"}",
	  "config: t.json:1:2: \"max_disk\": \"64K\" is too small: at least \"1M\" (the segment being "
	  "written, one to delete and a chunk)" },
	{ "{\"max_disk\": \"2M\", \"max_segment_size\": \"256K\", \"retention\": [\n"
	  " {\"name\": \"a\", \"levels\": \"error\", \"min_share\": \"20%\"},\n"
	  " {\"name\": \"b\", \"levels\": \"warning\", \"min_share\": \"20%\"}]}",
	  "config: t.json:1:2: \"max_disk\": 2097152 bytes leaves the segments 2097152 (after "
	  "flight.max_disk), less than 3145728: 1M for the default class and 1M for each of 2 "
	  "retention classes; raise max_disk" },
	{ "{\"flight\": {\"size\": \"16M\", \"max_disk\": \"16M\"}}",
	  "config: t.json:1:28: \"flight.max_disk\": 16777216 bytes for snapshots is less than twice "
	  "flight.size (16777216): the newest snapshot and the next may each take flight.size; "
	  "raise flight.max_disk or lower flight.size" },
	{ "{\"max_disk\": \"2560K\", \"max_segment_size\": \"64K\", \"flight\": {\"size\": \"1M\", "
	  "\"max_disk\": \"2M\"}}",
	  "config: t.json:1:2: \"max_disk\": 2621440 bytes leaves the segments 524288 (after "
	  "flight.max_disk), less than 1048576: 1M for the default class and 1M for each of 0 "
	  "retention classes; raise max_disk" },
	{ "{\"max_disk\": \"1M\", \"max_segment_size\": \"64M\"}",
	  "config: t.json:1:2: \"max_disk\": 1048576 bytes is less than max_segment_size "
	  "(67108864); raise max_disk or lower max_segment_size" },
	{ "{\"max_disk\": \"1G\",\n \"max_disk\": \"2G\"}",
	  "config: t.json:2:11: duplicate object key near '\"max_disk\"'" },
	{ "{\"max_disk\": \"1G\",}",
	  "config: t.json:1:19: string or '}' expected near '}'" },
	/* retention classes (issue 28.4) */
	{ "{\"retention\": [{\"name\": \"errors\", \"colour\": 1}]}",
	  "config: t.json:1:35: \"retention.0.colour\": unknown key; known keys here: name, "
	  "providers, levels, min_share, min_age" },
	{ "{\"retention\": [{\"name\": \"Err ors\"}]}",
	  "config: t.json:1:17: \"retention.0.name\": expected a class name of 1 to 31 bytes of "
	  "a-z, 0-9, _ and - (not \"default\", the class of what no other takes), got \"Err ors\"" },
	{ "{\"retention\": [{\"name\": \"a\", \"providers\": [\"Ac me\"]}]}",
	  "config: t.json:1:30: \"retention.0.providers\": entry 0 is not a provider name or glob "
	  "(letters, digits, _ . - and the wildcards * ?; at most 127 bytes): \"Ac me\"" },
	{ "{\"retention\": [{\"name\": \"a\", \"levels\": \"loud\"}]}",
	  "config: t.json:1:30: \"retention.0.levels\": expected a level (that level and every more "
	  "important one, like \"error\") or a range most important first, like "
	  "\"critical..warning\", of critical, error, warning, info, verbose; got \"loud\"" },
	{ "{\"retention\": [{\"name\": \"a\", \"levels\": \"info..error\"}]}",
	  "config: t.json:1:30: \"retention.0.levels\": expected a level (that level and every more "
	  "important one, like \"error\") or a range most important first, like "
	  "\"critical..warning\", of critical, error, warning, info, verbose; got \"info..error\"" },
	{ "{\"retention\": [{\"name\": \"a\", \"min_age\": \"soon\"}]}",
	  "config: t.json:1:30: \"retention.0.min_age\": expected a duration like \"1s\" or "
	  "\"500ms\" (1s to 3660d), got \"soon\"" },
	{ "{\"retention\": [{\"name\": \"a\", \"min_share\": \"60%\"}, "
	  "{\"name\": \"b\", \"min_share\": \"50%\"}]}",
	  "config: t.json:1:2: \"retention\": the classes' min_share add up to 110%, more than the "
	  "whole budget; lower them to 100% or less in total" },
	{ "{\"retention\": [{\"name\": \"a\", \"min_share\": \"10\"}]}",
	  "config: t.json:1:30: \"retention.0.min_share\": expected a share of the disk budget from "
	  "\"0%\" to \"100%\", like \"10%\", got \"10\"" },
	{ "{\"retention\": [{\"name\": \"a\"}, {\"name\": \"a\"}]}",
	  "config: t.json:1:31: \"retention.1\": class name \"a\" is used twice; give each class its own" },
	{ "{\"retention\": [{\"name\": \"a\"}], \"ship\": {\"servers\": [\"nats://127.0.0.1:4222\"]}}",
	  "config: t.json:1:2: \"retention\": retention classes and ship cannot be used together "
	  "yet (shipping reads one segment stream in order); remove \"retention\" or "
	  "\"ship.servers\"" },
	{ "{\"retention\": [{\"name\": \"a\"}, {\"name\": \"b\"}, {\"name\": \"c\"}, "
	  "{\"name\": \"d\"}, {\"name\": \"e\"}]}",
	  "config: t.json:1:2: \"retention\": expected an array of at most 4 retention classes like "
	  "[{ \"name\": \"errors\", \"levels\": \"error\", \"min_share\": \"10%\" }], got "
	  "[{\"name\":\"a\"},{\"name\":\"b\"},{\"name\":\"c\"},{\"name\":\"d\"},{\"name\"..." },
	{ "{\"retention\": [{\"levels\": \"error\"}]}",
	  "config: t.json:1:16: \"retention.0\": a retention class needs a \"name\" (a-z, 0-9, _ and "
	  "-): it names the class's segments and its line in ringlog status" },
	{ "[1, 2]", "config: t.json:1:1: \"\": expected an object { ... }, got [1,2]" },
	{ "", "config: t.json:1:0: '[' or '{' expected near end of file" },
	{ "{\"ring_size\": \"1M\", \"io_backend\": 3,\n  \"max_disk\": null}",
	  "config: t.json:1:21: \"io_backend\": expected \"auto\", \"io_uring\" or \"pool\", got 3\n"
	  "config: t.json:2:3: \"max_disk\": expected a size like \"512M\", got null" },
};

Test(config, each_bad_file_gets_its_exact_error_and_changes_nothing)
{
	struct ringlog_config *c = malloc(sizeof(*c)), *d = malloc(sizeof(*d));
	char err[2048];

	ringlog_config_defaults(c);
	ringlog_config_defaults(d);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(parse(c, bad[i].json, err, sizeof(err)), -EINVAL, "case %zu accepted", i);
		cr_expect_str_eq(err, bad[i].err, "case %zu:\n got: %s\nwant: %s", i, err, bad[i].err);
		cr_assert_eq(memcmp(c, d, sizeof(*c)), 0, "case %zu changed the config", i);
	}
	free(c);
	free(d);
}

Test(config, good_file_applies_every_key)
{
	struct ringlog_config *c = malloc(sizeof(*c));
	char err[1024];
	const char *json =
		"{ \"storage_dir\": \"./store\", \"socket_path\": \"./s.sock\",\n"
		"  \"socket_group\": \"ops\", \"read_group\": \"sre\", \"socket_mode\": \"0600\",\n"
		"  \"ring_size\": \"256K\", \"flush_interval\": \"200ms\", \"max_segment_size\": \"1M\",\n"
		"  \"sync_interval\": \"250ms\",\n"
		"  \"max_segment_age\": \"10m\", \"max_disk\": \"8M\", \"min_free\": \"100M\",\n"
		"  \"io_backend\": \"pool\", \"max_retention\": \"30d\",\n"
		"  \"providers\": { \"*\": {\"level\": \"error\"},\n"
		"                 \"Acme.*\": {\"level\": \"verbose\", \"keywords\": \"0x3\"} },\n"
		"  \"forward\": {\"user_events\": false, \"etw\": false},\n"
		"  \"limits\": {\"rings_per_process\": 8, \"ring_bytes_per_uid\": \"64M\",\n"
		"             \"metadata_size\": \"64K\", \"clients\": 10} }";

	ringlog_config_defaults(c);
	cr_assert_eq(parse(c, json, err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(c->storage_dir, "./store");
	cr_assert_str_eq(c->socket_path, "./s.sock");
	cr_assert_str_eq(c->socket_group, "ops");
	cr_assert_str_eq(c->read_group, "sre");
	cr_assert_eq(c->socket_mode, 0600);
	cr_assert_eq(c->ring_size, 256 << 10);
	cr_assert_eq(c->flush_interval_ns, 200000000ull);
	cr_assert_eq(c->sync_interval_ns, 250000000ull);
	cr_assert_eq(c->max_segment_size, 1 << 20);
	cr_assert_eq(c->max_segment_age_ns, 600000000000ull);
	cr_assert_eq(c->max_disk, 8 << 20);
	cr_assert_eq(c->min_free_bytes, 100 << 20);
	cr_assert_eq(c->min_free_percent, 0);
	cr_assert_eq(c->max_retention_ns, 30 * 86400000000000ull);
	cr_assert_eq(c->io_backend, RINGLOG_IO_POOL);
	cr_assert_eq(c->default_provider.level, 2);
	cr_assert_eq(c->default_provider.keywords, UINT64_MAX);
	cr_assert_eq(c->n_providers, 1);
	cr_assert_str_eq(c->providers[0].pattern, "Acme.*");
	cr_assert_eq(c->providers[0].level, 5);
	cr_assert_eq(c->providers[0].keywords, 3);
	cr_assert_not(c->forward.user_events);
	cr_assert_not(c->forward.etw);
	cr_assert_eq(c->limits.rings_per_process, 8);
	cr_assert_eq(c->limits.ring_bytes_per_uid, 64 << 20);
	cr_assert_eq(c->limits.metadata_size, 64 << 10);
	cr_assert_eq(c->limits.clients, 10);

	/* dump, parse the dump into fresh defaults: the same values */
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	cr_assert_eq(ringlog_config_dump(c, f), 0);
	fclose(f);
	struct ringlog_config *d = malloc(sizeof(*d));
	ringlog_config_defaults(d);
	cr_assert_eq(ringlog_config_parse(d, buf, len, "dump", err, sizeof(err)), 0, "%s\n%s", err, buf);
	cr_assert_eq(memcmp(c, d, sizeof(*c)), 0, "dump does not round-trip:\n%s", buf);
	free(buf);
	free(c);
	free(d);
}

Test(config, deeply_nested_values_are_an_error_not_a_hang, .timeout = 10)
{
	struct ringlog_config *c = malloc(sizeof(*c));
	char json[4096], err[1024];
	size_t n = 0;

	/* 1000 nested arrays (jansson's limit is 2048), then objects */
	n += (size_t)snprintf(json + n, sizeof(json) - n, "{\"limits\": ");
	for (int k = 0; k < 1000; k++)
		json[n++] = '[';
	for (int k = 0; k < 1000; k++)
		json[n++] = ']';
	n += (size_t)snprintf(json + n, sizeof(json) - n, ", \"forward\": ");
	for (int k = 0; k < 300; k++)
		n += (size_t)snprintf(json + n, sizeof(json) - n, "{\"a\":");
	json[n++] = '1';
	for (int k = 0; k < 300; k++)
		json[n++] = '}';
	snprintf(json + n, sizeof(json) - n, "}");

	ringlog_config_defaults(c);
	cr_assert_eq(parse(c, json, err, sizeof(err)), -EINVAL);
	cr_assert_str_eq(err,
		"config: t.json:1:2: \"limits\": expected an object { ... }, got "
		"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[...\n"
		"config: t.json:1:2026: \"forward.a\": unknown key; known keys here: "
		"user_events, etw");
	free(c);
}

/* The daemon's load checks groups against the host; the tools' load and
 * the parser do not (a file read for storage_dir only, fuzzing). */
Test(config, groups_that_do_not_exist_are_an_error_for_the_daemon_only)
{
	struct ringlog_config *c = malloc(sizeof(*c));
	char path[] = "/tmp/ringlog-config-XXXXXX", err[1024], want[1200];
	int fd = mkstemp(path);
	const char *json = "{\n  \"read_group\": \"rltest-no-such-group\",\n"
			   "  \"socket_group\": \"root\"\n}\n";

	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, json, strlen(json)), (ssize_t)strlen(json));
	close(fd);
	ringlog_config_defaults(c);
	cr_expect_eq(ringlog_config_load_host(c, path, err, sizeof(err)), -EINVAL);
	snprintf(want, sizeof(want), "config: %s:2:3: \"read_group\": no group "
		 "\"rltest-no-such-group\" on this host; create it (groupadd rltest-no-such-group, "
		 "or systemd-sysusers for the packaged ones) or name an existing group", path);
	cr_expect_str_eq(err, want);
	cr_expect_str_eq(c->read_group, "ringlog-read", "a refused file changed the config");
	cr_expect_eq(ringlog_config_load(c, path, err, sizeof(err)), 0, "%s", err);
	cr_expect_str_eq(c->read_group, "rltest-no-such-group");
	unlink(path);
	free(c);
}

Test(config, missing_file_says_which_and_why)
{
	struct ringlog_config *c = malloc(sizeof(*c));
	char err[512];

	ringlog_config_defaults(c);
	cr_assert_eq(ringlog_config_load(c, "/nonexistent/ringlogd.json", err, sizeof(err)), -ENOENT);
	cr_assert_str_eq(err, "config: /nonexistent/ringlogd.json: cannot open: No such file or directory");
	free(c);
}

/* Deep nesting with brackets inside strings, past the position scanner's
 * depth limit: refused (unknown key), with a message, and promptly (the
 * fuzzer once hung in that scanner; the input was not kept). */
Test(config, deep_nesting_is_refused_promptly, .timeout = 10)
{
	/* valid JSON (the scanner runs after jansson accepted it), nested past
	 * the scanner's depth limit, with closers inside strings */
	static const char *const nests[] = {
		"{\"a\":[[[[[[[[[[[[[[[[[[\"}\"]]]]]]]]]]]]]]]]]]}",
		"{\"a\":[[[[[[[[[[[[[[[[[[\"]]\"]]]]]]]]]]]]]]]]]]}",
		"{\"a\":[[[[[[[[[[[[[[[[[[{\"k\":\"}}}\"}]]]]]]]]]]]]]]]]]]}",
	};
	struct ringlog_config c;
	char err[2048];

	for (size_t i = 0; i < sizeof(nests) / sizeof(nests[0]); i++) {
		ringlog_config_defaults(&c);
		cr_expect_eq(parse(&c, nests[i], err, sizeof(err)), -EINVAL, "accepted: %s", nests[i]);
		/* refused for the unknown key "a", with a position */
		cr_expect(err[0], "no message for %s", nests[i]);
	}
}

/* The configuration's dump (--check-config) parses back to the same. */
static void expect_dump_reads_back(const struct ringlog_config *c)
{
	struct ringlog_config *back = malloc(sizeof(*back));
	char err[1024], *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	cr_assert(back && f);
	cr_assert_eq(ringlog_config_dump(c, f), 0);
	fclose(f);
	ringlog_config_defaults(back);
	cr_assert_eq(parse(back, text, err, sizeof(err)), 0, "%s\n%s", err, text);
	cr_assert_eq(memcmp(back, c, sizeof(*c)), 0, "the dump does not read back the same:\n%s", text);
	free(text);
	free(back);
}

/* Overload keys: the reserve and shed level, a provider's rate, burst and
 * wait, and its per-event rules, which survive a dump and a re-parse. */
Test(config, overload_keys_parse_and_round_trip)
{
	struct ringlog_config *c = malloc(sizeof(*c));
	char err[1024];

	ringlog_config_defaults(c);
	cr_assert_eq(c->ring_reserve_percent, 25, "default reserve: a quarter of the ring");
	cr_assert_eq(c->shed_level, 3, "default: shed below warning");
	cr_assert_eq(parse(c, "{\"ring_reserve\": \"10%\", \"shed_level\": \"error\", "
			   "\"providers\": {\"Acme.*\": {\"rate\": \"50/min\", \"wait\": true, "
			   "\"events\": {\"Tick*\": {\"rate\": \"1000/s\", \"burst\": 100}, "
			   "\"Slow\": {\"wait\": \"20ms\"}}}}}", err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(c->ring_reserve_percent, 10);
	cr_assert_eq(c->shed_level, 2);
	cr_assert_eq(c->n_providers, 1);
	struct ringlog_config_provider *p = &c->providers[0];
	cr_assert_eq(p->pol.rate, 50);
	cr_assert_eq(p->pol.period_ms, 60000);
	cr_assert_eq(p->pol.burst, 5, "default burst: a tenth of the period's");
	cr_assert_eq(p->pol.wait_us, 1000, "wait: true is 1 ms");
	cr_assert_eq(p->n_events, 2);
	cr_assert_str_eq(p->events[0].pattern, "Tick*");
	cr_assert_eq(p->events[0].pol.rate, 1000);
	cr_assert_eq(p->events[0].pol.period_ms, 1000);
	cr_assert_eq(p->events[0].pol.burst, 100);
	cr_assert_eq(p->events[1].pol.wait_us, 20000);

	expect_dump_reads_back(c);
	free(c);
}

Test(config, retention_classes_parse_and_round_trip)
{
	struct ringlog_config *c = malloc(sizeof(*c));
	char err[1024];

	ringlog_config_defaults(c);
	cr_assert_eq(c->n_classes, 0, "no class by default: today's one stream");
	cr_assert_eq(parse(c, "{\"retention\": [{\"name\": \"errors\", \"levels\": \"error\", "
			   "\"min_share\": \"10%\", \"min_age\": \"30d\"}, {\"name\": \"audit\", "
			   "\"providers\": \"Acme.Audit\", \"levels\": \"critical..verbose\", "
			   "\"min_age\": \"7d\"}, {\"name\": \"warn\", \"providers\": [\"A*\", \"B?\"], "
			   "\"levels\": \"warning..warning\"}]}", err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(c->n_classes, 3);
	cr_assert_str_eq(c->classes[0].name, "errors");
	cr_assert_eq(c->classes[0].n_providers, 0, "no providers: every provider");
	cr_assert_eq(c->classes[0].level_min, 1);
	cr_assert_eq(c->classes[0].level_max, 2);
	cr_assert_eq(c->classes[0].min_share_percent, 10);
	cr_assert_eq(c->classes[0].min_age_ns, 30 * 86400000000000ull);
	cr_assert_eq(c->classes[1].n_providers, 1);
	cr_assert_str_eq(c->classes[1].providers[0], "Acme.Audit");
	cr_assert_eq(c->classes[1].level_max, 5);
	cr_assert_eq(c->classes[1].min_share_percent, 0);
	cr_assert_eq(c->classes[2].n_providers, 2);
	cr_assert_eq(c->classes[2].level_min, 3);
	cr_assert_eq(c->classes[2].level_max, 3);

	expect_dump_reads_back(c);
	free(c);
}
