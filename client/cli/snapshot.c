/* client/cli/snapshot.c - `ringlog snapshot`: ask ringlogd's flight
 * recorder for a snapshot now (the SNAPSHOT frame, proto/ctl.h) and print
 * its path once it is written, `post` seconds later. */
#include "cli.h"
#include "ctl.h"

#include <getopt.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

int cmd_snapshot(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "reason", required_argument, NULL, 'r' },
		{ "socket", required_argument, NULL, 'S' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *sock = NULL, *reason = NULL;
	bool as_json = false;
	json_t *req, *ans = NULL, *v;
	size_t i;
	int o, ret;

	optind = 1;
	opterr = 0;
	while ((o = getopt_long(argc, argv, "hr:", opts, NULL)) != -1) {
		switch (o) {
		case 'r': reason = optarg; break;
		case 'S': sock = optarg; break;
		case 'j': as_json = true; break;
		case 'h':
			puts("usage: ringlog snapshot [--reason TEXT] [--json] [--socket PATH]\n"
			     "Asks ringlogd's flight recorder (ringlogd.json \"flight\") to write the\n"
			     "events it holds in memory from flight.pre before now to flight.post after\n"
			     "it as a snapshot segment file, and prints the file's path once written\n"
			     "(so it waits flight.post). Triggers close together share one snapshot,\n"
			     "which lists every reason; over flight.max_snapshots, it is refused.\n"
			     "Read it with ringlog read FILE, or ringlog read --dir on the snapshot\n"
			     "directory. Needs read access (group read_group).");
			return EXIT_OK;
		default:
			fprintf(stderr, "ringlog snapshot: unknown option or missing value: %s (see ringlog "
				"snapshot --help)\n", argv[optind - 1]);
			return EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "ringlog snapshot: unexpected argument \"%s\" (see ringlog snapshot "
			"--help)\n", argv[optind]);
		return EXIT_USAGE;
	}
	if (reason && strlen(reason) > 160) {
		fprintf(stderr, "ringlog snapshot: --reason is %zu bytes; at most 160\n", strlen(reason));
		return EXIT_USAGE;
	}
	req = json_object();
	if (reason)
		json_object_set_new(req, "reason", json_string(reason));
	ret = cli_ask("ringlog snapshot", sock, RINGLOG_CTL_SNAPSHOT, req, &ans, false, NULL);
	if (ret != EXIT_OK)
		return ret;
	if (as_json) {
		char *s = json_dumps(ans, JSON_COMPACT);

		puts(s ? s : "{}");
		free(s);
	} else {
		printf("%s\n", json_string_value(json_object_get(ans, "path")) ?: "?");
		json_array_foreach(json_object_get(ans, "reasons"), i, v)
			fprintf(stderr, "  reason: %s\n", json_string_value(v) ?: "?");
		if (json_integer_value(json_object_get(ans, "overwritten")))
			fprintf(stderr, "  %lld events of the window were overwritten before it was taken\n",
				(long long)json_integer_value(json_object_get(ans, "overwritten")));
	}
	json_decref(ans);
	return EXIT_OK;
}
