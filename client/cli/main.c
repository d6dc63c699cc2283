/* client/cli/main.c - `ringlog`: tail, status, read, emit. */
#include "cli.h"
#include "ctl.h"
#include "event.h"
#include "ring.h"
#include "segment.h"

#include <string.h>
#ifdef _WIN32
#include <fcntl.h>
#include <io.h>
#endif

static void usage(FILE *f)
{
	fputs("usage: ringlog COMMAND [OPTIONS]\n"
	      "\n"
	      "  tail     follow live events (like journalctl -f)\n"
	      "  status   disk budget, retention horizon, rates, losses, clients\n"
	      "  read     decode segment files offline\n"
	      "  emit     write one event from a script\n"
	      "  export   write stored events as CTF 1.8 (babeltrace2, Trace Compass), Perfetto\n"
	      "           (ui.perfetto.dev, trace_processor) or JSON\n"
	      "  enable   record a provider's events at run time (until SIGHUP)\n"
	      "  disable  stop a provider's events at run time (until SIGHUP)\n"
	      "  list     providers and events running programs declared\n"
	      "  vacuum   delete the oldest segments now (--size 100M, --time 2d)\n"
	      "  snapshot write the flight recorder's last minutes to a file now\n"
	      "\n"
	      "ringlog --version prints the version and the formats it reads.\n"
	      "ringlog COMMAND --help describes each. The daemon is found through\n"
	      "--socket, then $RINGLOG_SOCKET, then " RINGLOG_SOCKET_DEFAULT ".\n"
	      "Exit codes: 0 ok, 1 error, 2 usage, 3 ringlogd unreachable,\n"
	      "4 read or export found damaged input (the rest was read).\n", f);
}

int main(int argc, char **argv)
{
#ifdef _WIN32
	/* the same bytes as on Linux: no "\r\n" translation */
	_setmode(1, _O_BINARY);
	_setmode(2, _O_BINARY);
#endif
	if (argc >= 2 && !strcmp(argv[1], "--version")) {
		/* what a bug report needs: this build, the formats it reads and
		 * the protocol it speaks */
		printf("ringlog %s\n"
		       "formats: ring %u, metadata %u, segment %u, control %u\n",
		       RINGLOG_VERSION_STRING, RINGLOG_RING_VERSION, RINGLOG_META_VERSION,
		       RINGLOG_SEG_VERSION, RINGLOG_CTL_VERSION);
		return EXIT_OK;
	}
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? EXIT_USAGE : EXIT_OK;
	}
	if (!strcmp(argv[1], "tail"))
		return cmd_tail(argc - 1, argv + 1);
	if (!strcmp(argv[1], "status"))
		return cmd_status(argc - 1, argv + 1);
	if (!strcmp(argv[1], "read"))
		return cmd_read(argc - 1, argv + 1);
	if (!strcmp(argv[1], "emit"))
		return cmd_emit(argc - 1, argv + 1);
	if (!strcmp(argv[1], "export"))
		return cmd_export(argc - 1, argv + 1);
	if (!strcmp(argv[1], "enable"))
		return cmd_enable(argc - 1, argv + 1);
	if (!strcmp(argv[1], "disable"))
		return cmd_disable(argc - 1, argv + 1);
	if (!strcmp(argv[1], "list"))
		return cmd_list(argc - 1, argv + 1);
	if (!strcmp(argv[1], "vacuum"))
		return cmd_vacuum(argc - 1, argv + 1);
	if (!strcmp(argv[1], "snapshot"))
		return cmd_snapshot(argc - 1, argv + 1);
	fprintf(stderr, "ringlog: unknown command \"%s\"\n", argv[1]);
	usage(stderr);
	return EXIT_USAGE;
}
