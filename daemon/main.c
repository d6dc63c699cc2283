/* daemon/main.c - ringlogd: options and configuration, then the loop
 * (lifecycle.c starts and stops everything else). */
#define _GNU_SOURCE
#include "daemon.h"
#include "log.h"
#include "ctl.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef _WIN32
#include "win/service.h"
#else
#include <sys/resource.h>
#endif

static void usage(FILE *f)
{
#ifdef _WIN32
	fputs("usage: ringlogd [--config FILE] [--check-config] [--storage DIR] [--socket PIPE]\n"
	      "                [--service install|uninstall|run] [--syslog] [--verbose]\n"
	      "\n"
	      "Collects events from programs linked with ringlog.dll into rotating,\n"
	      "checksummed segment files under one disk budget.\n"
	      "\n"
	      "  --config FILE      JSON configuration (default: built-in defaults)\n"
	      "  --check-config     validate the configuration, print the effective one, exit\n"
	      "  --version          the version, the formats and the I/O backends built in\n"
	      "  --storage DIR      override storage_dir\n"
	      "  --socket PIPE      override socket_path (a pipe name: \\\\.\\pipe\\NAME)\n"
	      "  --service install  register as the Windows service \"ringlogd\" (automatic\n"
	      "                     start, LocalSystem), with the other options given\n"
	      "  --service uninstall  stop and remove it\n"
	      "  --service run      what the service control manager starts\n"
	      "  --syslog           log to the Application event log instead of stderr\n"
	      "  --verbose          also log debug messages\n"
	      "\n"
	      "Writes go through an I/O completion port. Ctrl-C, Ctrl-Break, closing the\n"
	      "console and stopping the service drain every ring and exit 0. Exit codes:\n"
	      "0 ok, 1 runtime error, 2 usage or configuration error.\n", f);
	return;
#endif
	fputs("usage: ringlogd [--config FILE] [--check-config] [--foreground]\n"
	      "                [--storage DIR] [--socket PATH] [--io-backend auto|io_uring|pool]\n"
	      "\n"
	      "Collects events from programs linked with libringlog into rotating,\n"
	      "checksummed segment files under one disk budget.\n"
	      "\n"
	      "  --config FILE      JSON configuration (default: built-in defaults)\n"
	      "  --check-config     validate the configuration, print the effective one, exit\n"
	      "  --version          the version, the formats and the I/O backends built in\n"
	      "  --foreground       accepted for compatibility; ringlogd never forks\n"
	      "  --storage DIR      override storage_dir\n"
	      "  --socket PATH      override socket_path\n"
	      "  --io-backend B     override io_backend\n"
	      "  --syslog           log to syslog instead of stderr\n"
	      "  --verbose          also log debug messages\n"
	      "\n"
	      "Under systemd: Type=notify readiness and watchdog over $NOTIFY_SOCKET, and\n"
	      "the listening socket from $LISTEN_FDS (ringlogd.socket) when passed one.\n"
	      "\n"
	      "Signals: SIGTERM/SIGINT drain every ring and exit 0; SIGHUP reloads the\n"
	      "configuration (a bad file keeps the old one). Exit codes: 0 ok, 1 runtime\n"
	      "error, 2 usage or configuration error.\n", f);
}

/* Start the daemon: 0, or 1 when it could not start (logged). */
static int start(void *ctx)
{
	return daemon_start(ctx) < 0 ? 1 : 0;
}

/* Run the started daemon until it stops, then tear it down. */
static int serve(void *ctx)
{
	struct daemon *d = ctx;

	uv_run(d->loop, UV_RUN_DEFAULT);
	daemon_finish(d);
	d_log(LOG_NOTICE, "stopped");
	return 0;
}

#ifdef _WIN32
/* From another thread (the service control manager's). */
static void stop(void *ctx)
{
	daemon_stop_async(ctx);
}
#endif

/* What a bug report needs: the version, the formats this build writes
 * and reads, and the write backends compiled in. */
static void print_version(void)
{
	printf("ringlogd %s\n"
	       "formats: ring %u, metadata %u, segment %u, control %u\n"
#ifdef _WIN32
	       "io: iocp\n",
#else
	       "io: io_uring, pool (io_uring falls back to pool where refused)\n",
#endif
	       RINGLOG_VERSION_STRING, RINGLOG_RING_VERSION, RINGLOG_META_VERSION,
	       RINGLOG_SEG_VERSION, RINGLOG_CTL_VERSION);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "check-config", no_argument, NULL, 'C' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "storage", required_argument, NULL, 's' },
		{ "socket", required_argument, NULL, 'S' },
		{ "io-backend", required_argument, NULL, 'b' },
		{ "syslog", no_argument, NULL, 'L' },
		{ "verbose", no_argument, NULL, 'v' },
#ifdef _WIN32
		{ "service", required_argument, NULL, 'W' },
#endif
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	/* The one daemon of the process, for its whole life: no allocation
	 * to free on each of main()'s early returns. */
	static struct daemon state;
	struct daemon *d = &state;
	const char *storage = NULL, *sock = NULL, *backend = NULL, *service = NULL;
	bool check = false, to_syslog = false, verbose = false;
	char err[8192];
	int o, rc = 0;

#ifdef __GLIBC__
	/* A fixed threshold turns off glibc's dynamic one, which after the
	 * first free of a large block serves every later one from the heap:
	 * each connection's 1 MiB receive buffer and a slow tail's queue
	 * would then stay in the daemon for good, fragmenting it, instead of
	 * going back to the system when the connection closes. */
	mallopt(M_MMAP_THRESHOLD, 256 << 10);
#endif
	ringlog_config_defaults(&d->cfg);
	while ((o = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
		switch (o) {
		case 'c':
			snprintf(d->config_path, sizeof(d->config_path), "%s", optarg);
			d->have_config_path = true;
			break;
		case 'C': check = true; break;
		case 'f': break;
		case 's': storage = optarg; break;
		case 'S': sock = optarg; break;
		case 'b': backend = optarg; break;
		case 'L': to_syslog = true; break;
		case 'v': verbose = true; break;
		case 'W': service = optarg; break;
		case 'h': usage(stdout); return 0;
		case 'V': print_version(); return 0;
		default: usage(stderr); return 2;
		}
	}
	d_log_init(to_syslog, verbose);
	if (optind < argc) {
		fprintf(stderr, "ringlogd: unexpected argument \"%s\"\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	if (d->have_config_path &&
	    ringlog_config_load_host(&d->cfg, d->config_path, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s", err);
		if (err[0] && err[strlen(err) - 1] != '\n')
			fputc('\n', stderr);
		return 2;
	}
	if (storage && snprintf(d->cfg.storage_dir, sizeof(d->cfg.storage_dir), "%s", storage) >=
		       (int)sizeof(d->cfg.storage_dir)) {
		fprintf(stderr, "ringlogd: --storage: path too long\n");
		return 2;
	}
	if (sock && strlen(sock) >= sizeof(d->cfg.socket_path)) {
		fprintf(stderr, "ringlogd: --socket \"%s\": longer than %zu bytes (a Unix socket path limit); "
			"use a shorter path\n", sock, sizeof(d->cfg.socket_path) - 1);
		return 2;
	}
	if (sock)
		snprintf(d->cfg.socket_path, sizeof(d->cfg.socket_path), "%s", sock);
	if (backend) {
		int b = ringlog_io_backend_parse(backend);

		if (b < 0) {
			fprintf(stderr, "ringlogd: --io-backend \"%s\": expected auto, io_uring or pool\n", backend);
			return 2;
		}
		d->cfg.io_backend = (enum ringlog_io_backend)b;
	}
	if (check) {
		ringlog_config_dump(&d->cfg, stdout);
		return 0;
	}
#ifdef _WIN32
	if (service) {
		struct svc_daemon run = { .start = start, .serve = serve, .stop = stop, .ctx = d };

		return svc_main(service, argc, argv, &run);
	}
#else
	(void)service;

	/* Every client holds a socket and, briefly, its memfds: take all the
	 * descriptors the hard limit allows (systemd's LimitNOFILE=). */
	{
		struct rlimit rl;

		if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
			rl.rlim_cur = rl.rlim_max;
			setrlimit(RLIMIT_NOFILE, &rl);
		}
	}
#endif
	rc = start(d);
	if (!rc)
		rc = serve(d);
	return rc;
}
