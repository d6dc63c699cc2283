/* client/cli/tail.c - `ringlog tail`: follow live events; filters run in
 * the daemon, which also raises enablement while we run. */
#define _GNU_SOURCE
#include "cli.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl.h"

int read_backlog(const char *dir, const struct filter *f, const struct printer *pr, unsigned n);

struct tl {
	struct printer pr;
	struct filter f;
};

static int on_event(void *ctx, const struct ringlog_dec_event *e)
{
	struct tl *t = ctx;

	if (filter_match(&t->f, e)) /* the daemon filtered; since/until are ours */
		print_event(&t->pr, e);
	return 0;
}

static void on_loss(void *ctx, const struct ringlog_dec_loss *l)
{
	struct tl *t = ctx;

	if (filter_loss(&t->f, l)) /* as the daemon did; since/until are ours */
		print_loss(&t->pr, l);
}

static void on_damage(void *ctx, const char *what)
{
	(void)ctx;
	fprintf(stderr, "ringlog: tail: undecodable record from ringlogd: %s\n", what);
}

int cmd_tail(int argc, char **argv)
{
	struct tl t = { 0 };
	struct ringlog_decoder d;
	const char *sock = NULL;
	long backlog = 0;
	json_t *req;
	char *js;
	int fd, rc = EXIT_OK;

	filter_init(&t.f);
	t.pr.color = isatty(1) && !getenv("NO_COLOR");
	for (int i = 1; i < argc; i++) {
		int k = filter_option(&t.f, argc, argv, &i);

		if (k < 0)
			return EXIT_USAGE;
		if (k)
			continue;
		if (!strcmp(argv[i], "--json"))
			t.pr.json = true;
		else if (!strcmp(argv[i], "-n") && i + 1 < argc)
			backlog = strtol(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--socket") && i + 1 < argc)
			sock = argv[++i];
		else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			puts("usage: ringlog tail [-n N] [--provider GLOB] [--event NAME] [--level L]\n"
			     "                    [--keyword MASK] [--pid PID] [--uid UID] [--json] [--socket PATH]\n"
			     "Follow live events. -n N first prints the last N stored events.\n"
			     "Filters run in ringlogd; a --level or --keyword above what is enabled\n"
			     "raises enablement for matching providers while the tail runs.\n"
			     "Ctrl-C exits 0; losing ringlogd exits 3.");
			return 0;
		} else {
			fprintf(stderr, "ringlog tail: unknown option %s (see ringlog tail --help)\n", argv[i]);
			return EXIT_USAGE;
		}
	}
	if (backlog < 0) {
		fprintf(stderr, "ringlog tail: -n must be 0 or more\n");
		return EXIT_USAGE;
	}
	cli_catch_interrupt();
	if ((fd = cli_connect(socket_path(sock), false)) < 0)
		return cli_interrupted() ? EXIT_OK : EXIT_NODAEMON;
	cli_watch(fd);
	if (cli_interrupted()) { /* interrupted while connecting */
		cli_watch(-1);
		close(fd);
		return EXIT_OK;
	}
	req = json_object();
	json_object_set_new(req, "backlog", json_integer(backlog));
	if (t.f.provider)
		json_object_set_new(req, "provider", json_string(t.f.provider));
	if (t.f.event)
		json_object_set_new(req, "event", json_string(t.f.event));
	json_object_set_new(req, "level", json_integer(t.f.level ? t.f.level : 4));
	if (t.f.keyword)
		json_object_set_new(req, "keyword", json_integer((json_int_t)t.f.keyword));
	if (t.f.pid >= 0)
		json_object_set_new(req, "pid", json_integer(t.f.pid));
	if (t.f.uid >= 0)
		json_object_set_new(req, "uid", json_integer(t.f.uid));
	js = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	if (!js || cli_send(fd, RINGLOG_CTL_TAIL, js, (uint32_t)strlen(js)) < 0) {
		fprintf(stderr, "ringlog: tail: ringlogd closed the connection\n");
		free(js);
		return EXIT_NODAEMON;
	}
	free(js);
	setvbuf(stdout, NULL, _IOLBF, 0);
	ringlog_dec_init(&d, NULL);
	d.ctx = &t;
	d.on_event = on_event;
	d.on_loss = on_loss;
	d.on_damage = on_damage;
	while (!cli_interrupted()) {
		uint16_t type = 0;
		uint8_t *p;
		long n = cli_recv(fd, &type, &p);

		if (n < 0 && (n == -EINTR || cli_interrupted()))
			break;
		if (n <= 0 && !p) {
			if (cli_interrupted())
				break;
			fprintf(stderr, "ringlog: tail: ringlogd went away (%s)\n",
				n == 0 ? "connection closed" : strerror((int)-n));
			rc = EXIT_NODAEMON;
			break;
		}
		if (type == RINGLOG_CTL_TAIL) {
			json_t *j = json_loads((const char *)p, 0, NULL);
			const char *dir = json_string_value(json_object_get(j, "storage_dir"));

			if (backlog && dir && read_backlog(dir, &t.f, &t.pr, (unsigned)backlog) < 0)
				fprintf(stderr, "ringlog: tail: -n: cannot read %s (need membership in the "
					"read group)\n", dir);
			json_decref(j);
		} else if (type == RINGLOG_CTL_DATA) {
			ringlog_dec_records(&d, p, (size_t)n);
		} else if (type == RINGLOG_CTL_ERROR) {
			cli_print_error("ringlog: tail", p);
			rc = EXIT_FAIL;
			free(p);
			break;
		}
		free(p);
	}
	ringlog_dec_free(&d);
	cli_watch(-1);
	close(fd);
	return rc;
}
