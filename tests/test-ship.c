/* tests/test-ship.c - shipping to NATS JetStream (daemon/sink/ship.c) and
 * reading the fleet back (`ringlog read/tail --nats`), against real
 * nats-server processes the tests start on loopback ports with their own
 * JetStream directories: a 3-node cluster with a 3-replica stream under
 * node, daemon and whole-cluster faults; two hosts into one stream; what
 * the daemon says when the cluster refuses it. Skips, saying why, without
 * nats-server (Debian: nats-server). */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <jansson.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "live.h"

#ifdef RINGLOG_HAVE_NATS
#include <nats/nats.h>

#include "segment.h" /* ringlog_crc32c */
#include "ship.h"
#include "ship-codec.h"
#endif

#define MAXN 3

struct node {
	pid_t pid;
	int port, cport;
	char conf[400], log[400];
};

struct cluster {
	int n;
	struct node node[MAXN];
	char urls[256];
	char dir[300];
};

static const char *nats_server(void)
{
	static const char *const where[] = { "/usr/sbin/nats-server", "/usr/bin/nats-server",
					     "/usr/local/bin/nats-server" };

	for (size_t i = 0; i < sizeof(where) / sizeof(where[0]); i++)
		if (access(where[i], X_OK) == 0)
			return where[i];
	return NULL;
}

static void need_nats(void)
{
#ifndef RINGLOG_HAVE_NATS
	cr_skip("this build has no libnats (Debian: libnats-dev): shipping not tested");
#endif
	if (!nats_server())
		cr_skip("nats-server is not installed (Debian: nats-server): shipping not tested");
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

/* A loopback port nobody listens on now. Each test process takes its own
 * range (by pid): the kernel's "any free port" handed two tests running in
 * parallel the same one, and a daemon then met the other test's server. */
static int free_port(void)
{
	static int next;

	for (int tries = 0; tries < 1000; tries++) {
		struct sockaddr_in a = { .sin_family = AF_INET,
					 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		int port = 20000 + (int)(getpid() % 1500) * 20 + next++ % 20, fd, ok;

		a.sin_port = htons((uint16_t)port);
		fd = socket(AF_INET, SOCK_STREAM, 0);
		cr_assert(fd >= 0);
		ok = bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
		close(fd);
		if (ok)
			return port;
	}
	cr_assert_fail("no free loopback port");
	return -1;
}

static bool port_open(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				 .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	bool ok = connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0;

	close(fd);
	return ok;
}

/* Write node i's configuration: JetStream in its own directory, routes to
 * the others, extra (server options) appended. */
static void node_conf(struct cluster *c, int i, const char *extra)
{
	struct node *nd = &c->node[i];
	char text[2048], routes[512] = "", cl[700] = "";
	size_t used = 0;

	for (int k = 0; k < c->n; k++)
		if (k != i)
			used += (size_t)snprintf(routes + used, sizeof(routes) - used,
						 "%snats-route://127.0.0.1:%d", used ? ", " : "",
						 c->node[k].cport);
	if (c->n > 1)
		snprintf(cl, sizeof(cl), "cluster { name: rl, listen: 127.0.0.1:%d, routes: [ %s ] }\n",
			 nd->cport, routes);
	snprintf(nd->conf, sizeof(nd->conf), "%s/n%d.conf", c->dir, i);
	snprintf(nd->log, sizeof(nd->log), "%s/n%d.log", c->dir, i);
	snprintf(text, sizeof(text),
		 "server_name: n%d\nlisten: 127.0.0.1:%d\njetstream { store_dir: \"%s/js%d\" }\n%s%s\n",
		 i, nd->port, c->dir, i, cl, extra ? extra : "");
	live_write_file(nd->conf, text);
}

static void node_start(struct cluster *c, int i)
{
	struct node *nd = &c->node[i];
	pid_t pid = fork();

	cr_assert(pid >= 0);
	if (pid == 0) {
		int fd = open(nd->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);

		if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
			_exit(126);
		prctl(PR_SET_PDEATHSIG, SIGKILL); /* nothing outlives its test */
		execl(nats_server(), "nats-server", "-c", nd->conf, (char *)NULL);
		_exit(127);
	}
	nd->pid = pid;
	for (int k = 0; k < 400 && !port_open(nd->port); k++)
		sleep_ms(25);
	cr_assert(port_open(nd->port), "nats-server n%d does not listen on %d (see %s)", i,
		  nd->port, nd->log);
}

static void node_kill(struct cluster *c, int i, int sig)
{
	int st;

	if (c->node[i].pid <= 0)
		return;
	kill(c->node[i].pid, sig);
	waitpid(c->node[i].pid, &st, 0);
	c->node[i].pid = 0;
}

static void cluster_start(struct cluster *c, const struct live *e, int n, const char *extra)
{
	size_t used = 0;

	memset(c, 0, sizeof(*c));
	c->n = n;
	for (int i = 0; i < n; i++) {
		c->node[i].port = free_port();
		c->node[i].cport = free_port();
		used += (size_t)snprintf(c->urls + used, sizeof(c->urls) - used, "%snats://127.0.0.1:%d",
					 used ? "," : "", c->node[i].port);
	}
	/* by its first port: a test may run two clusters */
	snprintf(c->dir, sizeof(c->dir), "%s/nats-%d", e->dir, c->node[0].port);
	mkdir(c->dir, 0700);
	for (int i = 0; i < n; i++) {
		node_conf(c, i, extra);
		node_start(c, i);
	}
}

static void cluster_stop(struct cluster *c)
{
	for (int i = 0; i < c->n; i++)
		node_kill(c, i, SIGTERM);
}

/* The servers as a JSON list. */
static void urls_json(const struct cluster *c, char *buf, size_t len)
{
	size_t used = (size_t)snprintf(buf, len, "[");

	for (int i = 0; i < c->n; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s\"nats://127.0.0.1:%d\"", i ? ", " : "",
					 c->node[i].port);
	snprintf(buf + used, len - used, "]");
}

/* Write the configuration of a daemon on e shipping to c as host, with
 * ship keys extra (JSON members, may be ""): its path in conf. */
static void ship_conf(const struct live *e, const struct cluster *c, const char *host,
		      const char *extra, char *conf, size_t len)
{
	char text[2048], urls[300];

	urls_json(c, urls, sizeof(urls));
	snprintf(conf, len, "%s/ringlogd-%s.json", e->dir, host);
	snprintf(text, sizeof(text),
		 "{ \"max_disk\": \"4G\", \"min_free\": \"1%%\", \"flush_interval\": \"200ms\",\n"
		 "  \"forward\": { \"user_events\": false, \"etw\": false },\n"
		 "  \"ship\": { \"servers\": %s, \"stream\": \"RLTEST\", \"host\": \"%s\", "
		 "\"live\": true, \"interval\": \"200ms\"%s%s } }\n", urls, host, *extra ? ", " : "",
		 extra);
	live_write_file(conf, text);
}

/* A daemon on e shipping to c as host (ship_conf()). */
static pid_t ship_daemon(const struct live *e, const struct cluster *c, const char *host,
			 const char *extra, char *conf, size_t len)
{
	ship_conf(e, c, host, extra, conf, len);
	return live_daemon(e, "--config", conf, NULL);
}

/* The daemon's "ship" status (of the daemon at e->sock). */
static json_t *ship_status(const struct live *e)
{
	json_t *st, *ship;

	setenv("RINGLOG_SOCKET", e->sock, 1);
	st = live_status_json();
	if (!st)
		return NULL;
	ship = json_incref(json_object_get(st, "ship"));
	json_decref(st);
	return ship;
}

static void log_status(const struct live *e)
{
	json_t *s = ship_status(e);
	char *t = s ? json_dumps(s, JSON_COMPACT) : NULL;

	cr_log_info("ship status: %s", t ? t : "none");
	free(t);
	json_decref(s);
}

/* Wait until everything stored is acknowledged by the cluster. */
static void wait_shipped(const struct live *e, int seconds)
{
	json_t *s = NULL;

	for (int i = 0; i < seconds * 10; i++) {
		s = ship_status(e);
		if (s && !strcmp(json_string_value(json_object_get(s, "state")) ?: "", "connected") &&
		    json_integer_value(json_object_get(s, "lag_bytes")) == 0 &&
		    json_integer_value(json_object_get(s, "lag_chunks")) == 0) {
			json_decref(s);
			return;
		}
		json_decref(s);
		s = NULL;
		sleep_ms(100);
	}
	log_status(e);
	cr_assert_fail("not everything was shipped within %d s", seconds);
}

/* Wait until the daemon's ship state says something containing want. */
static json_t *wait_ship_error(const struct live *e, const char *want)
{
	for (int i = 0; i < 150; i++) {
		json_t *s = ship_status(e);
		const char *err = s ? json_string_value(json_object_get(s, "error")) : NULL;

		if (err && strstr(err, want))
			return s;
		json_decref(s);
		sleep_ms(100);
	}
	log_status(e);
	cr_assert_fail("ship status never said \"%s\"", want);
	return NULL;
}

/* What `ringlog read --nats` gave, per writer. */
#define MAXW 16
struct fleet {
	struct {
		char host[64];
		uint32_t pid;
		uint64_t events, lost;
		uint64_t next[8];        /* per emitter thread: the next seq */
		uint64_t first[8];       /* ... and the first one read */
		bool seen[8];
	} w[MAXW];
	int nw;
	uint64_t events, lost, disorder, lines;
	uint64_t not_shipped;    /* loss lines of cause ship_* */
};

static int writer(struct fleet *f, const char *host, uint32_t pid)
{
	for (int i = 0; i < f->nw; i++)
		if (f->w[i].pid == pid && !strcmp(f->w[i].host, host))
			return i;
	cr_assert(f->nw < MAXW);
	snprintf(f->w[f->nw].host, sizeof(f->w[f->nw].host), "%s", host);
	f->w[f->nw].pid = pid;
	return f->nw++;
}

/* Run `ringlog read --nats ... -o json` with args, tally its lines. */
static void read_fleet(const struct live *e, const struct cluster *c, const char *args,
		       struct fleet *f)
{
	char cmd[1024], path[400], line[4096];
	FILE *in;
	int rc;

	memset(f, 0, sizeof(*f));
	snprintf(path, sizeof(path), "%s/fleet.json", e->dir);
	snprintf(cmd, sizeof(cmd), RINGLOG_CLI_PATH " read --nats %s --stream RLTEST -o json %s > %s",
		 c->urls, args, path);
	rc = system(cmd);
	cr_assert(WIFEXITED(rc) && WEXITSTATUS(rc) == 0, "%s: status %d", cmd, rc);
	in = fopen(path, "r");
	cr_assert(in);
	while (fgets(line, sizeof(line), in)) {
		json_t *j = json_loads(line, 0, NULL), *fields;
		const char *host, *type;
		int w;

		cr_assert(j, "not JSON: %s", line);
		f->lines++;
		type = json_string_value(json_object_get(j, "type"));
		host = json_string_value(json_object_get(j, "host"));
		cr_assert(host, "a line without its host: %s", line);
		w = writer(f, host, (uint32_t)json_integer_value(json_object_get(j, "pid")));
		if (type && !strcmp(type, "loss")) {
			uint64_t n = (uint64_t)json_integer_value(json_object_get(j, "lost"));

			const char *cause = json_string_value(json_object_get(j, "cause"));

			f->w[w].lost += n;
			f->lost += n;
			if (cause && !strncmp(cause, "ship_", 5))
				f->not_shipped += n;
		} else if ((fields = json_object_get(j, "fields")) &&
			   json_object_get(fields, "seq")) {
			unsigned th = (unsigned)json_integer_value(json_object_get(fields, "thread"));
			uint64_t seq = (uint64_t)json_integer_value(json_object_get(fields, "seq"));

			f->w[w].events++;
			f->events++;
			/* every writer's events once and in order: each seq after
			 * the previous one of its thread (gaps only where a loss
			 * is counted) */
			if (th < 8) {
				if (f->w[w].seen[th] && seq < f->w[w].next[th] && !f->disorder++)
					cr_log_info("read --nats: %s pid %u thread %u: seq %llu after %llu "
						    "(line %llu)", host, f->w[w].pid, th,
						    (unsigned long long)seq,
						    (unsigned long long)f->w[w].next[th] - 1,
						    (unsigned long long)f->lines);
				if (!f->w[w].seen[th])
					f->w[w].first[th] = seq;
				f->w[w].seen[th] = true;
				f->w[w].next[th] = seq + 1;
			}
		}
		json_decref(j);
	}
	fclose(in);
}

/* The stream on c holds emitted events (or counted losses), each writer's
 * in order. */
static void expect_in_stream(const struct live *e, const struct cluster *c, uint64_t emitted)
{
	struct fleet f;

	read_fleet(e, c, "", &f);
	cr_expect_eq(f.events + f.lost, emitted, "in the stream %llu + lost %llu != emitted %llu",
		     (unsigned long long)f.events, (unsigned long long)f.lost,
		     (unsigned long long)emitted);
	cr_expect_eq(f.disorder, 0, "%llu events duplicated or out of order",
		     (unsigned long long)f.disorder);
}

/* Sum of the "emitted N" of an emitter's report. */
static uint64_t emitted_of(const char *path)
{
	FILE *f = fopen(path, "r");
	char line[256];
	uint64_t sum = 0;

	cr_assert(f, "no report %s", path);
	while (fgets(line, sizeof(line), f)) {
		unsigned th, tid;
		unsigned long long em;

		if (sscanf(line, "thread %u tid %u emitted %llu", &th, &tid, &em) == 3)
			sum += em;
	}
	fclose(f);
	return sum;
}

static pid_t emitter(const struct live *e, const char *threads, const char *events,
		     const char *pause, char *out, size_t len, int k)
{
	const char *argv[] = { EMITTER_PATH, threads, events, "--pause-us", pause, "--wait-daemon",
			       "20", NULL };
	char env[400];
	const char *envp[] = { env, NULL };

	snprintf(env, sizeof(env), "RINGLOG_SOCKET=%s", e->sock);
	snprintf(out, len, "%s/emitter-%d.out", e->dir, k);
	return live_spawn(argv, envp, out);
}

/* On a fresh e and a one-node cluster c, a daemon shipping as alpha (its
 * configuration in conf) into which one thread emitted n events, all
 * shipped; the emitter's report in out. */
static pid_t shipped_daemon(struct live *e, struct cluster *c, char *conf, size_t len,
			    const char *n, char *out, size_t outlen)
{
	pid_t d, em;

	need_nats();
	live_init(e);
	cluster_start(c, e, 1, NULL);
	d = ship_daemon(e, c, "alpha", "\"create_stream\": true, \"replicas\": 1", conf, len);
	em = emitter(e, "1", n, "0", out, outlen, 0);
	live_wait_ok(em, "emitter");
	wait_shipped(e, 60);
	return d;
}

/* The whole story on a 3-node cluster with 3 replicas: several programs
 * emit; one node is killed -9 mid-run (and comes back); ringlogd is killed
 * -9 mid-run and restarted; all three nodes stop for longer than the ship
 * interval and restart. Then the stream holds, for every writer, every
 * event once and in order, and stored + counted lost == emitted. */
Test(ship, cluster_faults, .timeout = 600)
{
	struct live e;
	struct cluster c;
	struct fleet f;
	char conf[400], out[4][400];
	pid_t d, em[4];
	uint64_t emitted = 0;

	need_nats();
	live_init(&e);
	cluster_start(&c, &e, 3, "max_payload: 8MB");
	d = ship_daemon(&e, &c, "alpha", "\"create_stream\": true, \"replicas\": 3", conf,
			sizeof(conf));
	/* ~10 k events/s a thread: a ring holds ~2 s of them while ringlogd
	 * is down, so its restart costs nothing, or a counted loss */
	for (int k = 0; k < 3; k++)
		em[k] = emitter(&e, "2", "40000", "10000", out[k], sizeof(out[k]), k);
	sleep_ms(1000);
	node_kill(&c, 1, SIGKILL); /* a replica goes */
	sleep_ms(1000);
	{
		int st;

		kill(d, SIGKILL); /* and ringlogd, mid-run */
		waitpid(d, &st, 0);
	}
	sleep_ms(300);
	d = live_daemon(&e, "--config", conf, NULL);
	sleep_ms(500);
	node_start(&c, 1);
	for (int k = 0; k < 3; k++)
		live_wait_ok(em[k], "emitter");
	/* the whole cluster away for longer than ship.interval */
	em[3] = emitter(&e, "2", "30000", "10000", out[3], sizeof(out[3]), 3);
	sleep_ms(500);
	for (int i = 0; i < 3; i++)
		node_kill(&c, i, SIGKILL);
	sleep_ms(2000);
	for (int i = 0; i < 3; i++)
		node_start(&c, i);
	live_wait_ok(em[3], "emitter");
	wait_shipped(&e, 180);
	log_status(&e);
	live_daemon_stop(d);

	read_fleet(&e, &c, "", &f);
	for (int k = 0; k < 4; k++)
		emitted += emitted_of(out[k]);
	fprintf(stderr, "ship: cluster faults: %llu emitted, %llu in the stream, %llu counted lost, "
		"%d writers\n", (unsigned long long)emitted, (unsigned long long)f.events,
		(unsigned long long)f.lost, f.nw);
	cr_expect_eq(f.disorder, 0, "%llu events duplicated or out of order",
		     (unsigned long long)f.disorder);
	cr_expect_eq(f.nw, 4, "4 writers in the stream, got %d", f.nw);
	cr_expect_eq(f.events + f.lost, emitted, "in the stream %llu + counted lost %llu != "
		     "emitted %llu", (unsigned long long)f.events, (unsigned long long)f.lost,
		     (unsigned long long)emitted);
	for (int k = 0; k < 4; k++) {
		int w = -1;

		for (int i = 0; i < f.nw; i++)
			if ((pid_t)f.w[i].pid == em[k])
				w = i;
		cr_assert(w >= 0, "emitter %d (pid %d) is not in the stream", k, em[k]);
		cr_expect_eq(f.w[w].events + f.w[w].lost, emitted_of(out[k]),
			     "emitter %d: %llu + lost %llu != emitted %llu", k,
			     (unsigned long long)f.w[w].events, (unsigned long long)f.w[w].lost,
			     (unsigned long long)emitted_of(out[k]));
		cr_expect_str_eq(f.w[w].host, "alpha");
	}
	cluster_stop(&c);
	live_cleanup(&e);
}

/* Two daemons (two stores, two host names) into one stream: read --host
 * selects each, tail --nats shows both as they come. */
Test(ship, two_hosts, .timeout = 300)
{
	struct live a, b;
	struct cluster c;
	struct fleet f;
	char conf_a[400], conf_b[400], out[2][400], tail_out[400], line[4096];
	const char *targv[8];
	pid_t da, db, ea, eb, tail;
	uint64_t lines = 0, seen_a = 0, seen_b = 0;
	FILE *in;

	need_nats();
	live_init(&a);
	live_init(&b);
	cluster_start(&c, &a, 1, NULL);
	/* one stream, two encodings: alpha sends its chunks as they are,
	 * beta compressed at zstd's level 19 (the default is level 1, which
	 * every other test here uses) */
	da = ship_daemon(&a, &c, "alpha", "\"create_stream\": true, \"replicas\": 1, "
			 "\"compress\": \"none\"", conf_a, sizeof(conf_a));
	db = ship_daemon(&b, &c, "beta", "\"create_stream\": true, \"replicas\": 1, "
			 "\"compress\": \"zstd:19\"", conf_b, sizeof(conf_b));
	wait_shipped(&a, 60);
	wait_shipped(&b, 60);
	snprintf(tail_out, sizeof(tail_out), "%s/tail.json", a.dir);
	targv[0] = RINGLOG_CLI_PATH;
	targv[1] = "tail";
	targv[2] = "--nats";
	targv[3] = c.urls;
	targv[4] = "--stream";
	targv[5] = "RLTEST";
	targv[6] = "--json";
	targv[7] = NULL;
	tail = live_spawn(targv, NULL, tail_out);
	sleep_ms(1000); /* its consumer exists: it delivers from now on */
	ea = emitter(&a, "1", "3000", "1000", out[0], sizeof(out[0]), 0);
	eb = emitter(&b, "1", "2000", "1000", out[1], sizeof(out[1]), 1);
	live_wait_ok(ea, "emitter alpha");
	live_wait_ok(eb, "emitter beta");
	wait_shipped(&a, 60);
	wait_shipped(&b, 60);

	/* what each sent: alpha its chunks' bytes, beta a fraction of them */
	{
		json_t *sa = ship_status(&a), *sb = ship_status(&b);
		json_int_t sent_a = json_integer_value(json_object_get(sa, "shipped_bytes"));
		json_int_t raw_a = json_integer_value(json_object_get(sa, "shipped_chunk_bytes"));
		json_int_t sent_b = json_integer_value(json_object_get(sb, "shipped_bytes"));
		json_int_t raw_b = json_integer_value(json_object_get(sb, "shipped_chunk_bytes"));

		cr_expect_str_eq(json_string_value(json_object_get(sa, "compress")) ?: "", "none");
		cr_expect_str_eq(json_string_value(json_object_get(sb, "compress")) ?: "", "zstd:19");
		cr_expect(raw_a > 0 && sent_a == raw_a, "alpha sent %lld bytes of %lld",
			  (long long)sent_a, (long long)raw_a);
		cr_expect(raw_b > 0 && sent_b > 0 && sent_b < raw_b / 3,
			  "beta, compressed, sent %lld bytes of %lld", (long long)sent_b, (long long)raw_b);
		json_decref(sa);
		json_decref(sb);
	}
	read_fleet(&a, &c, "--host alpha", &f);
	cr_expect_eq(f.nw, 1);
	cr_expect_str_eq(f.w[0].host, "alpha");
	cr_expect_eq(f.events + f.lost, emitted_of(out[0]));
	read_fleet(&a, &c, "--host beta", &f);
	cr_expect_eq(f.nw, 1);
	cr_expect_str_eq(f.w[0].host, "beta");
	cr_expect_eq(f.events + f.lost, emitted_of(out[1]));
	read_fleet(&a, &c, "--host 'a*' --host 'b*'", &f);
	cr_expect_eq(f.nw, 2);
	cr_expect_eq(f.events + f.lost, emitted_of(out[0]) + emitted_of(out[1]));
	cr_expect_eq(f.disorder, 0);

	/* the tail saw both hosts' events live (no time is asserted here:
	 * scripts/bench.sh --ship measures emit -> tail --nats) */
	for (int i = 0; i < 300; i++) {
		lines = seen_a = seen_b = 0;
		in = fopen(tail_out, "r");
		while (in && fgets(line, sizeof(line), in)) {
			lines++;
			seen_a += strstr(line, "\"host\":\"alpha\"") != NULL;
			seen_b += strstr(line, "\"host\":\"beta\"") != NULL;
		}
		if (in)
			fclose(in);
		if (seen_a == emitted_of(out[0]) && seen_b == emitted_of(out[1]))
			break;
		sleep_ms(100);
	}
	kill(tail, SIGTERM);
	waitpid(tail, NULL, 0);
	cr_expect_eq(seen_a, emitted_of(out[0]), "tail --nats: %llu of alpha's events",
		     (unsigned long long)seen_a);
	cr_expect_eq(seen_b, emitted_of(out[1]), "tail --nats: %llu of beta's events",
		     (unsigned long long)seen_b);

	/* read -f --nats: the newest 5 of alpha's, then what alpha ships next
	 * (beta's are not selected) */
	{
		char follow_out[400], hostarg[] = "alpha";
		const char *fargv[] = { RINGLOG_CLI_PATH, "read", "-f", "--nats", c.urls, "--stream",
					"RLTEST", "--host", hostarg, "-n", "5", "--json", NULL };
		uint64_t n = 0, beta = 0;
		pid_t rf, e2, e3;

		snprintf(follow_out, sizeof(follow_out), "%s/follow.json", a.dir);
		rf = live_spawn(fargv, NULL, follow_out);
		for (int i = 0; i < 300 && n < 5; i++) {
			n = 0;
			in = fopen(follow_out, "r");
			while (in && fgets(line, sizeof(line), in))
				n++;
			if (in)
				fclose(in);
			sleep_ms(50);
		}
		cr_expect_eq(n, 5, "read -f --nats -n 5: %llu lines of history", (unsigned long long)n);
		e2 = emitter(&a, "1", "100", "0", out[0], sizeof(out[0]), 2);
		e3 = emitter(&b, "1", "100", "0", out[1], sizeof(out[1]), 3);
		live_wait_ok(e2, "emitter alpha");
		live_wait_ok(e3, "emitter beta");
		for (int i = 0; i < 300 && n < 105; i++) {
			n = beta = 0;
			in = fopen(follow_out, "r");
			while (in && fgets(line, sizeof(line), in)) {
				n++;
				beta += strstr(line, "\"host\":\"beta\"") != NULL;
			}
			if (in)
				fclose(in);
			sleep_ms(100);
		}
		kill(rf, SIGTERM);
		waitpid(rf, NULL, 0);
		cr_expect_eq(n, 105, "read -f --nats: %llu lines, 5 + 100 expected",
			     (unsigned long long)n);
		cr_expect_eq(beta, 0, "--host alpha printed beta's events");
	}
	live_daemon_stop(da);
	live_daemon_stop(db);
	cluster_stop(&c);
	live_cleanup(&b);
	live_cleanup(&a);
}

/* The cluster is away while events are stored under the daemon's
 * configuration keys (budget and ship.max_backlog in config); then it comes
 * back. What could not be shipped is counted "not shipped" in status (by
 * ns_key) and reaches the stream as a loss line once shipping resumes, so
 * that in the stream + counted lost == emitted. */
/* How not_shipped_case() goes: the cluster away from the start, or
 * shipping first and then away (the acknowledged position inside a
 * segment, the thread holding one open when the budget deletes it); and
 * ringlogd restarted while it is away, by SIGTERM or SIGKILL. */
struct ns_how {
	bool before_start, shipped_first;
	int restart; /* 0, SIGTERM or SIGKILL */
	bool freeze; /* the node stopped (SIGSTOP), its connections open */
};

static void not_shipped_case(const char *config, const char *ship_extra, const char *ns_key,
			     struct ns_how how)
{
	struct live e;
	struct cluster c = { .n = 1 };
	struct fleet f;
	char conf[400], out[400], first[400], urls[300], text[1500];
	pid_t d, em;
	uint64_t ns = 0, doubt = 0, emitted;

	live_init(&e);
	snprintf(c.dir, sizeof(c.dir), "%s/nats", e.dir);
	mkdir(c.dir, 0700);
	c.node[0].port = free_port();
	snprintf(c.urls, sizeof(c.urls), "nats://127.0.0.1:%d", c.node[0].port);
	node_conf(&c, 0, NULL); /* not started yet */
	urls_json(&c, urls, sizeof(urls));
	snprintf(conf, sizeof(conf), "%s/ringlogd.json", e.dir);
	snprintf(text, sizeof(text),
		 "{ %s, \"min_free\": \"1%%\",\n"
		 "  \"flush_interval\": \"200ms\", \"forward\": { \"user_events\": false, \"etw\": false },\n"
		 "  \"ship\": { \"servers\": %s, \"stream\": \"RLTEST\", \"host\": \"alpha\",\n"
		 "            \"create_stream\": true, \"replicas\": 1%s%s } }\n", config, urls,
		 *ship_extra ? ", " : "", ship_extra);
	live_write_file(conf, text);
	if (how.shipped_first)
		node_start(&c, 0);
	d = live_daemon(&e, "--config", conf, NULL);
	if (how.shipped_first) {
		/* about half a segment shipped, then the cluster goes */
		em = emitter(&e, "1", "12000", "0", first, sizeof(first), 1);
		live_wait_ok(em, "emitter");
		wait_shipped(&e, 60);
		if (how.freeze)
			kill(c.node[0].pid, SIGSTOP);
		else
			node_kill(&c, 0, SIGTERM);
	}
	em = emitter(&e, "1", "300000", "2000", out, sizeof(out), 0);
	live_wait_ok(em, "emitter");
	emitted = emitted_of(out) + (how.shipped_first ? emitted_of(first) : 0);
	if (how.before_start) {
		for (int i = 0; i < 100 && !ns; i++) {
			json_t *s = ship_status(&e);

			ns = (uint64_t)json_integer_value(json_object_get(
				json_object_get(s, "not_shipped_by"), ns_key));
			/* frozen, what went out waits for the stream's word */
			doubt = (uint64_t)json_integer_value(json_object_get(s, "in_doubt"));
			json_decref(s);
			if (!ns && !(how.freeze && doubt))
				sleep_ms(100);
			else
				break;
		}
		cr_assert(ns > 0 || (how.freeze && doubt > 0),
			  "nothing counted not shipped (%s) or in doubt while the cluster was away",
			  ns_key);
		cr_log_info("while away: %llu not shipped, %llu in doubt", (unsigned long long)ns,
			    (unsigned long long)doubt);
	}
	if (how.restart) {
		/* ship.state keeps the count no message has carried yet: a
		 * restart forgot it, and no loss line ever said it (an
		 * outsider's test: 155,000 events missing, none counted);
		 * and what of a segment the thread held open the budget
		 * deleted (a kill -9 lost 14,198 events, none counted) */
		uint64_t after = 0;

		if (how.restart == SIGKILL) {
			int st;

			sleep_ms(3000); /* ship.state written (each 2 s at most) */
			kill(d, SIGKILL);
			waitpid(d, &st, 0);
		} else {
			live_daemon_stop(d);
		}
		d = live_daemon(&e, "--config", conf, NULL);
		{
			json_t *s = ship_status(&e);

			after = (uint64_t)json_integer_value(json_object_get(
				json_object_get(s, "not_shipped_by"), ns_key));
			json_decref(s);
		}
		cr_expect_geq(after, ns, "after a restart status counts %llu not shipped (%s), "
			      "%llu before", (unsigned long long)after, ns_key,
			      (unsigned long long)ns);
	}
	if (how.freeze)
		kill(c.node[0].pid, SIGCONT);
	else
		node_start(&c, 0);
	wait_shipped(&e, 120);
	for (int i = 0; how.freeze && i < 300; i++) {
		/* the stream asked of each chunk in doubt */
		json_t *s = ship_status(&e);

		doubt = (uint64_t)json_integer_value(json_object_get(s, "in_doubt"));
		if (!doubt) {
			cr_log_info("found in the stream by probes: %lld events, %lld probes",
				    (long long)json_integer_value(json_object_get(s, "found_in_stream")),
				    (long long)json_integer_value(json_object_get(s, "probes")));
			cr_expect(json_integer_value(json_object_get(s, "probes")) > 0,
				  "nothing was in doubt: the test froze nothing in flight");
		}
		json_decref(s);
		if (!doubt)
			break;
		sleep_ms(100);
	}
	cr_expect_eq(doubt, 0, "%llu events still in doubt 30 s after the thaw",
		     (unsigned long long)doubt);
	{
		json_t *s = ship_status(&e);

		ns = (uint64_t)json_integer_value(json_object_get(json_object_get(s, "not_shipped_by"),
								  ns_key));
		/* Nothing was in flight when the cluster went (all shipped
		 * first, or nothing yet): nothing went out twice. Attempts
		 * refused while it was away counted as "sent again" (an
		 * outsider saw 2,749 for some 350 chunks). */
		/* and the outage's error is gone once the stream acknowledges
		 * again (an outsider saw it stay after the catch-up) */
		cr_expect_str_eq(json_string_value(json_object_get(s, "error")) ?: "?", "",
				 "status still says: %s", json_string_value(json_object_get(s, "error")));
		/* (frozen, it was: what it never acknowledged went again) */
		cr_expect(how.freeze || json_integer_value(json_object_get(s, "resent")) == 0,
			     "%lld messages \"sent again\" after an outage with none in flight",
			     (long long)json_integer_value(json_object_get(s, "resent")));
		json_decref(s);
	}
	/* (frozen, all that went out may be in the stream) */
	cr_expect(ns > 0 || how.freeze, "nothing counted not shipped (%s)", ns_key);
	log_status(&e);
	live_daemon_stop(d);
	read_fleet(&e, &c, "", &f);
	fprintf(stderr, "ship: %s: %llu emitted, %llu in the stream, %llu counted lost (%llu not "
		"shipped, %llu in status)\n", ns_key, (unsigned long long)emitted,
		(unsigned long long)f.events, (unsigned long long)f.lost,
		(unsigned long long)f.not_shipped, (unsigned long long)ns);
	cr_expect_geq(f.not_shipped, ns, "the stream says %llu not shipped, status %llu",
		      (unsigned long long)f.not_shipped, (unsigned long long)ns);
	cr_expect_eq(f.events + f.lost, emitted, "%llu + lost %llu != emitted %llu",
		     (unsigned long long)f.events, (unsigned long long)f.lost,
		     (unsigned long long)emitted);
	cr_expect_eq(f.disorder, 0, "%llu events duplicated or out of order", (unsigned long long)f.disorder);
	node_kill(&c, 0, SIGTERM);
	live_cleanup(&e);
}

/* The disk budget deletes segments while the cluster is away. */
Test(ship, budget_deletes_before_shipping, .timeout = 300)
{
	need_nats();
	not_shipped_case("\"max_disk\": \"4M\", \"max_segment_size\": \"1M\"", "", "retention",
			 (struct ns_how){ .before_start = true });
}

/* The same with ringlogd restarted while the cluster is away. */
Test(ship, budget_deletes_before_shipping_across_a_restart, .timeout = 300)
{
	need_nats();
	not_shipped_case("\"max_disk\": \"4M\", \"max_segment_size\": \"1M\"", "", "retention",
			 (struct ns_how){ .before_start = true, .restart = SIGTERM });
}

/* Shipping, then the cluster goes and the budget deletes: the segment
 * shipped in part, the one the thread held open and those behind them
 * are each counted for what no acknowledgement covered (an outsider's
 * test: 4,882 to 17,600 events missing and not counted, about a segment). */
Test(ship, budget_deletes_a_store_shipped_in_part, .timeout = 300)
{
	need_nats();
	not_shipped_case("\"max_disk\": \"4M\", \"max_segment_size\": \"1M\"", "", "retention",
			 (struct ns_how){ .before_start = true, .shipped_first = true });
}

/* The same with ringlogd killed -9 while the cluster is away: the segment
 * the thread held open dies with its descriptor, and the next start
 * counts it from ship.state. */
Test(ship, budget_deletes_a_store_shipped_in_part_across_a_kill, .timeout = 300)
{
	need_nats();
	not_shipped_case("\"max_disk\": \"4M\", \"max_segment_size\": \"1M\"", "", "retention",
			 (struct ns_how){ .before_start = true, .shipped_first = true,
					  .restart = SIGKILL });
}

/* The same with the node frozen (SIGSTOP: its connection stays open, the
 * messages sent meanwhile wait in its socket, unacknowledged) while the
 * budget deletes, then thawed: it stores what it had received, so a chunk
 * sent and never acknowledged may be in the stream, and is counted not
 * shipped only when it is not (an outsider's test: 170,000 events in the
 * stream and 45,415 of them counted not shipped as well). */
Test(ship, budget_deletes_what_a_frozen_node_stores_once_thawed, .timeout = 300)
{
	need_nats();
	not_shipped_case("\"max_disk\": \"4M\", \"max_segment_size\": \"1M\"", "", "retention",
			 (struct ns_how){ .before_start = true, .shipped_first = true,
					  .freeze = true });
}

/* More un-shipped bytes than ship.max_backlog when the cluster comes back:
 * the oldest segments beyond it are given up. */
Test(ship, backlog_over_max_backlog, .timeout = 300)
{
	need_nats();
	not_shipped_case("\"max_disk\": \"64M\", \"max_segment_size\": \"1M\"",
			 "\"max_backlog\": \"2M\"", "backlog", (struct ns_how){ 0 });
}

/* read --durable: a job that reads again goes on after what it read. */
Test(ship, durable_reader_resumes, .timeout = 120)
{
	struct live e;
	struct cluster c;
	struct fleet f;
	char conf[400], out[2][400];
	pid_t d, em;

	d = shipped_daemon(&e, &c, conf, sizeof(conf), "1000", out[0], sizeof(out[0]));
	read_fleet(&e, &c, "--durable job1", &f);
	cr_expect_eq(f.events + f.lost, emitted_of(out[0]), "first run: %llu",
		     (unsigned long long)f.events);
	em = emitter(&e, "1", "500", "0", out[1], sizeof(out[1]), 1);
	live_wait_ok(em, "emitter");
	wait_shipped(&e, 60);
	read_fleet(&e, &c, "--durable job1", &f);
	cr_expect_eq(f.events + f.lost, emitted_of(out[1]), "second run: %llu, only the new %llu "
		     "expected", (unsigned long long)f.events, (unsigned long long)emitted_of(out[1]));
	read_fleet(&e, &c, "", &f);
	cr_expect_eq(f.events + f.lost, emitted_of(out[0]) + emitted_of(out[1]));
	live_daemon_stop(d);
	cluster_stop(&c);
	live_cleanup(&e);
}

/* Mark in seen (n entries) the seq of every event line of thread 0 in the
 * JSON lines at path; returns how many event lines there were. */
static uint64_t mark_seqs(const char *path, bool *seen, uint64_t n)
{
	FILE *in = fopen(path, "r");
	char line[4096];
	uint64_t lines = 0;

	cr_assert(in, "%s", path);
	while (fgets(line, sizeof(line), in)) {
		json_t *j = json_loads(line, 0, NULL);
		json_t *seq = json_object_get(json_object_get(j, "fields"), "seq");

		if (seq && json_integer_value(json_object_get(json_object_get(j, "fields"),
							      "thread")) == 0) {
			if ((uint64_t)json_integer_value(seq) < n)
				seen[json_integer_value(seq)] = true;
			lines++;
		}
		json_decref(j);
	}
	fclose(in);
	return lines;
}

static uint64_t unseen(const bool *seen, uint64_t n)
{
	uint64_t k = 0;

	for (uint64_t i = 0; i < n; i++)
		k += !seen[i];
	return k;
}

/* A durable job's run that does not print everything acknowledges nothing
 * past what it printed, and back-to-back runs while the stream grows miss
 * nothing between them. An outsider's test lost 199,000 of 200,000 events
 * after `| head -n 1000`, all of them after a ^C, and 6,100-18,900 at the
 * boundaries of runs 1.5 s apart (the runs acknowledged what they had
 * fetched, not printed, and the server resumed after what it had pushed). */
Test(ship, a_durable_job_misses_nothing_it_did_not_print, .timeout = 240)
{
	enum { N = 60000 };
	static bool seen[N];
	struct live e;
	struct cluster c;
	char conf[400], out[400], cmd[1500], path[400];
	uint64_t lines, runs = 0;
	int rc, st;
	pid_t d, em;

	need_nats();
	live_init(&e);
	cluster_start(&c, &e, 1, NULL);
	d = ship_daemon(&e, &c, "alpha", "\"create_stream\": true, \"replicas\": 1", conf,
			sizeof(conf));
	snprintf(path, sizeof(path), "%s/job.json", e.dir);

	/* a run cut short by its reader: the next prints everything again */
	em = emitter(&e, "1", "20000", "1000", out, sizeof(out), 0);
	live_wait_ok(em, "emitter");
	wait_shipped(&e, 60);
	snprintf(cmd, sizeof(cmd), RINGLOG_CLI_PATH " read --nats %s --stream RLTEST -o json "
		 "--durable job | head -n 100 > %s", c.urls, path);
	rc = system(cmd);
	cr_assert(WIFEXITED(rc), "%s", cmd);
	snprintf(cmd, sizeof(cmd), RINGLOG_CLI_PATH " read --nats %s --stream RLTEST -o json "
		 "--durable job > %s", c.urls, path);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	lines = mark_seqs(path, seen, N);
	cr_expect_eq(lines, emitted_of(out), "after a run cut by head, the next printed %llu of "
		     "%llu", (unsigned long long)lines, (unsigned long long)emitted_of(out));
	cr_expect_eq(unseen(seen, 20000), 0, "%llu of 20000 events missing",
		     (unsigned long long)unseen(seen, 20000));

	/* runs one after the other while 40,000 more come at ~10,000/s (the
	 * outsider's gaps came with runs 1.5 s apart over 300,000 larger
	 * events; this shorter case did not show them on the old code in 2
	 * tries, and stays as a guard of the run boundaries) */
	memset(seen, 0, sizeof(seen));
	em = emitter(&e, "1", "40000", "10000", out, sizeof(out), 1);
	do {
		snprintf(cmd, sizeof(cmd), RINGLOG_CLI_PATH " read --nats %s --stream RLTEST "
			 "-o json --durable job > %s", c.urls, path);
		cr_assert_eq(system(cmd), 0, "%s", cmd);
		mark_seqs(path, seen, N);
		runs++;
	} while (waitpid(em, &st, WNOHANG) == 0);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the emitter failed");
	wait_shipped(&e, 60);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	mark_seqs(path, seen, N);
	cr_log_info("durable: %llu runs while the stream grew", (unsigned long long)runs);
	cr_expect_eq(unseen(seen, 40000), 0, "%llu of 40000 events printed by no run (%llu runs)",
		     (unsigned long long)unseen(seen, 40000), (unsigned long long)runs);

	/* following with a durable consumer (tail, read -f) is refused with
	 * the way to do it: it acknowledged on its own schedule, and the next
	 * run started from a floor it had not printed to (this test found
	 * it: a durable tail printed 63,000 events for 3,000 new) */
	for (int k = 0; k < 2; k++) {
		char msg[1024];

		snprintf(cmd, sizeof(cmd), RINGLOG_CLI_PATH " %s --nats %s --stream RLTEST "
			 "--durable job 2>&1", k ? "read -f" : "tail", c.urls);
		rc = live_run(cmd, msg, sizeof(msg));
		cr_expect(rc == 2 && strstr(msg, "read --nats --durable"), "`%s`: exit %d: %s",
			  cmd, rc, msg);
	}
	live_daemon_stop(d);
	cluster_stop(&c);
	live_cleanup(&e);
}

/* A store deleted and made again on the same host and boot numbers its
 * segments from 0 again: its chunks are new messages, not re-sends, and
 * readers take both stores' events. The message id carried the boot id,
 * so JetStream discarded every chunk of the new store as a duplicate and
 * status said "de-duplicated" (an outsider's test: 5,000 of 5,000 gone). */
Test(ship, a_store_made_again_ships_as_new_chunks, .timeout = 180)
{
	struct live e;
	struct cluster c;
	struct fleet f;
	char conf[400], out[2][400], cmd[900];
	pid_t d, em;
	json_t *s;

	d = shipped_daemon(&e, &c, conf, sizeof(conf), "5000", out[0], sizeof(out[0]));
	live_daemon_stop(d);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", e.store);
	cr_assert_eq(system(cmd), 0);
	d = live_daemon(&e, "--config", conf, NULL);
	em = emitter(&e, "1", "5000", "0", out[1], sizeof(out[1]), 1);
	live_wait_ok(em, "emitter");
	wait_shipped(&e, 60);
	s = ship_status(&e);
	cr_expect_eq(json_integer_value(json_object_get(s, "deduplicated")), 0,
		     "the new store's chunks were taken for re-sends");
	json_decref(s);
	read_fleet(&e, &c, "", &f);
	cr_expect_eq(f.events + f.lost, emitted_of(out[0]) + emitted_of(out[1]),
		     "in the stream %llu + lost %llu, emitted %llu + %llu",
		     (unsigned long long)f.events, (unsigned long long)f.lost,
		     (unsigned long long)emitted_of(out[0]), (unsigned long long)emitted_of(out[1]));
	live_daemon_stop(d);
	cluster_stop(&c);
	live_cleanup(&e);
}

/* SIGTERM right after the events: the daemon drains them, writes the last
 * chunk and ships it before it exits (the cluster answering). */
Test(ship, stop_ships_the_last_chunk, .timeout = 120)
{
	struct live e;
	struct cluster c;
	struct fleet f;
	char conf[400], out[400];
	pid_t d, em;

	need_nats();
	live_init(&e);
	cluster_start(&c, &e, 1, NULL);
	d = ship_daemon(&e, &c, "alpha", "\"create_stream\": true, \"replicas\": 1", conf,
			sizeof(conf));
	wait_shipped(&e, 60); /* connected, the stream made */
	em = emitter(&e, "1", "3000", "0", out, sizeof(out), 0);
	live_wait_ok(em, "emitter");
	live_daemon_stop(d);
	read_fleet(&e, &c, "", &f);
	cr_expect_eq(f.events + f.lost, emitted_of(out), "%llu + lost %llu != emitted %llu",
		     (unsigned long long)f.events, (unsigned long long)f.lost,
		     (unsigned long long)emitted_of(out));
	cluster_stop(&c);
	live_cleanup(&e);
}

/* ship.state lost (a crash before it was written): the daemon sends its
 * chunks again, JetStream discards them by Nats-Msg-Id, and the stream
 * still holds every event once. */
Test(ship, resent_chunks_are_discarded, .timeout = 300)
{
	struct live e;
	struct cluster c;
	struct fleet f;
	char conf[400], out[400], state[400];
	pid_t d, em;
	json_t *s;

	need_nats();
	live_init(&e);
	cluster_start(&c, &e, 1, NULL);
	d = ship_daemon(&e, &c, "alpha", "\"create_stream\": true, \"replicas\": 1", conf,
			sizeof(conf));
	em = emitter(&e, "2", "20000", "100", out, sizeof(out), 0);
	live_wait_ok(em, "emitter");
	wait_shipped(&e, 60);
	live_daemon_stop(d);
	snprintf(state, sizeof(state), "%s/ship.state", e.store);
	cr_assert_eq(access(state, R_OK), 0, "no %s", state);
	cr_assert_eq(unlink(state), 0);
	d = live_daemon(&e, "--config", conf, NULL);
	wait_shipped(&e, 60);
	s = ship_status(&e);
	/* the stream itself discarded them (read --nats would hide a
	 * duplicate the stream kept) */
	cr_expect_gt(json_integer_value(json_object_get(s, "deduplicated")), 0,
		     "nothing was discarded as a duplicate");
	json_decref(s);
	log_status(&e);
	live_daemon_stop(d);
	read_fleet(&e, &c, "", &f);
	cr_expect_eq(f.events + f.lost, emitted_of(out));
	cr_expect_eq(f.disorder, 0);
	cluster_stop(&c);
	live_cleanup(&e);
}

/* Wait until the daemon's log has a line containing both a and b. */
static void wait_log(const struct live *e, const char *a, const char *b)
{
	static char text[1 << 18];

	for (int i = 0; i < 100; i++) {
		char *line, *save = NULL;

		live_log(e, text, sizeof(text));
		for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
			if (strstr(line, a) && strstr(line, b))
				return;
		sleep_ms(100);
	}
	live_log(e, text, sizeof(text));
	cr_assert_fail("the log has no line with \"%s\" and \"%s\":\n%s", a, b, text);
}

/* Wait until the ship status names a server on port. */
static void wait_server(const struct live *e, int port)
{
	char want[32];

	snprintf(want, sizeof(want), ":%d", port);
	for (int i = 0; i < 300; i++) {
		json_t *s = ship_status(e);
		const char *srv = s ? json_string_value(json_object_get(s, "server")) : NULL;
		bool ok = srv && strstr(srv, want) &&
			  !strcmp(json_string_value(json_object_get(s, "state")) ?: "", "connected");

		json_decref(s);
		if (ok)
			return;
		sleep_ms(100);
	}
	log_status(e);
	cr_assert_fail("shipping never went to the server on port %d", port);
}

/* SIGHUP with the ship section moved to other servers (another cluster,
 * with its own stream), a larger window and no compression, while
 * programs emit: shipping goes on there without a restart, and the two
 * streams together hold every event once: the first a prefix of each
 * writer's events, the second the rest (nothing acknowledged by the first
 * is sent again, nothing is skipped). */
Test(ship, reload_moves_shipping_without_loss_or_duplication, .timeout = 300)
{
	struct live e;
	struct cluster c1, c2;
	struct fleet f1, f2;
	char conf[400], out[2][400];
	pid_t d, em[2];
	uint64_t emitted = 0;
	json_t *s;

	need_nats();
	live_init(&e);
	cluster_start(&c1, &e, 1, NULL);
	cluster_start(&c2, &e, 1, NULL);
	d = ship_daemon(&e, &c1, "alpha", "\"create_stream\": true, \"replicas\": 1, "
			"\"max_pending\": 8", conf, sizeof(conf));
	for (int k = 0; k < 2; k++)
		em[k] = emitter(&e, "2", "30000", "10000", out[k], sizeof(out[k]), k);
	wait_server(&e, c1.node[0].port);
	sleep_ms(1000);
	/* the new section sends the chunks as they are: the first stream
	 * holds compressed messages, the second plain ones */
	ship_conf(&e, &c2, "alpha", "\"create_stream\": true, \"replicas\": 1, "
		  "\"max_pending\": 64, \"compress\": \"none\"", conf, sizeof(conf));
	cr_assert_eq(kill(d, SIGHUP), 0);
	wait_log(&e, "SIGHUP: ship: to stream", "once the messages in flight");
	wait_server(&e, c2.node[0].port);
	for (int k = 0; k < 2; k++)
		live_wait_ok(em[k], "emitter");
	wait_shipped(&e, 120);
	s = ship_status(&e);
	cr_expect(json_integer_value(json_object_get(s, "shipped_events")) > 0);
	cr_expect_str_eq(json_string_value(json_object_get(s, "compress")) ?: "", "none");
	json_decref(s);
	live_daemon_stop(d);

	read_fleet(&e, &c1, "", &f1);
	read_fleet(&e, &c2, "", &f2);
	for (int k = 0; k < 2; k++)
		emitted += emitted_of(out[k]);
	fprintf(stderr, "ship: reload: %llu emitted, %llu in the first stream, %llu in the second, "
		"%llu + %llu counted lost\n", (unsigned long long)emitted,
		(unsigned long long)f1.events, (unsigned long long)f2.events,
		(unsigned long long)f1.lost, (unsigned long long)f2.lost);
	cr_expect_gt(f1.events, 0, "nothing was shipped before the reload");
	cr_expect_gt(f2.events, 0, "nothing was shipped to the new servers");
	cr_expect_eq(f1.disorder + f2.disorder, 0, "events duplicated or out of order");
	cr_expect_eq(f1.events + f2.events + f1.lost + f2.lost, emitted,
		     "first %llu + second %llu + lost %llu != emitted %llu",
		     (unsigned long long)f1.events, (unsigned long long)f2.events,
		     (unsigned long long)(f1.lost + f2.lost), (unsigned long long)emitted);
	/* once: what the second stream has of a writer's thread comes after
	 * what the first has */
	for (int a = 0; a < f2.nw; a++)
		for (int b = 0; b < f1.nw; b++) {
			if (f1.w[b].pid != f2.w[a].pid)
				continue;
			for (int th = 0; th < 8; th++)
				if (f1.w[b].seen[th] && f2.w[a].seen[th])
					cr_expect_geq(f2.w[a].first[th], f1.w[b].next[th],
						      "pid %u thread %d: the second stream starts at "
						      "%llu, the first ended before %llu", f2.w[a].pid,
						      th, (unsigned long long)f2.w[a].first[th],
						      (unsigned long long)f1.w[b].next[th]);
		}
	cluster_stop(&c1);
	cluster_stop(&c2);
	live_cleanup(&e);
}

/* SIGHUP with a ship section the parser refuses (the whole file is kept),
 * then with one libnats refuses (a tls_ca that is no certificate: the rest
 * of the file applies, the ship section is kept): each said in the log,
 * naming the key or the cause, and shipping goes on as before, every
 * event in the stream. */
Test(ship, reload_refuses_an_invalid_ship_section, .timeout = 180)
{
	struct live e;
	struct cluster c;
	char conf[400], out[2][400], bad[400], extra[800];
	pid_t d, em;

	d = shipped_daemon(&e, &c, conf, sizeof(conf), "5000", out[0], sizeof(out[0]));

	ship_conf(&e, &c, "alpha", "\"create_stream\": true, \"max_pending\": 0", conf,
		  sizeof(conf));
	cr_assert_eq(kill(d, SIGHUP), 0);
	wait_log(&e, "SIGHUP: keeping the running configuration", "ship.max_pending");

	snprintf(bad, sizeof(bad), "%s/not-a-ca.pem", e.dir);
	live_write_file(bad, "this is no certificate\n");
	snprintf(extra, sizeof(extra), "\"create_stream\": true, \"replicas\": 1, \"tls_ca\": "
		 "\"%s\"", bad);
	ship_conf(&e, &c, "alpha", extra, conf, sizeof(conf));
	cr_assert_eq(kill(d, SIGHUP), 0);
	wait_log(&e, "SIGHUP: ship: keeping the running ship section", "the new one is refused");
	wait_log(&e, "SIGHUP: configuration reloaded", "");

	em = emitter(&e, "1", "5000", "0", out[1], sizeof(out[1]), 1);
	live_wait_ok(em, "emitter");
	wait_server(&e, c.node[0].port);
	wait_shipped(&e, 60);
	live_daemon_stop(d);
	expect_in_stream(&e, &c, emitted_of(out[0]) + emitted_of(out[1]));
	cluster_stop(&c);
	live_cleanup(&e);
}

/* 3000 events from emitter k into e's daemon while it does not ship: no
 * "ship" in its status (when: how the configuration says so). */
static void emit_unshipped(const struct live *e, char *out, size_t len, int k, const char *when)
{
	pid_t em = emitter(e, "1", "3000", "0", out, len, k);
	json_t *s;

	live_wait_ok(em, "emitter");
	s = ship_status(e);
	cr_expect_null(s, "a ship status %s", when);
	json_decref(s);
}

/* SIGHUP turns shipping on (a daemon started without a ship section),
 * off (ship.servers emptied: no "ship" in status) and on again: what was
 * stored before, meanwhile and after is all in the stream, once. */
Test(ship, reload_starts_and_stops_shipping, .timeout = 240)
{
	struct live e;
	struct cluster c;
	char conf[400], out[3][400];
	uint64_t emitted = 0;
	pid_t d, em;

	need_nats();
	live_init(&e);
	cluster_start(&c, &e, 1, NULL);
	/* the path ship_conf() writes: the one SIGHUP reads again */
	snprintf(conf, sizeof(conf), "%s/ringlogd-alpha.json", e.dir);
	live_write_file(conf, "{ \"flush_interval\": \"200ms\", "
			"\"forward\": { \"user_events\": false, \"etw\": false } }\n");
	d = live_daemon(&e, "--config", conf, NULL);
	emit_unshipped(&e, out[0], sizeof(out[0]), 0, "without a ship section");

	ship_conf(&e, &c, "alpha", "\"create_stream\": true, \"replicas\": 1", conf, sizeof(conf));
	cr_assert_eq(kill(d, SIGHUP), 0);
	wait_server(&e, c.node[0].port);
	wait_shipped(&e, 60);

	live_write_file(conf, "{ \"flush_interval\": \"200ms\", "
			"\"forward\": { \"user_events\": false, \"etw\": false }, "
			"\"ship\": { \"servers\": [] } }\n");
	cr_assert_eq(kill(d, SIGHUP), 0);
	wait_log(&e, "SIGHUP: ship: ship.servers is empty", "shipping stops");
	emit_unshipped(&e, out[1], sizeof(out[1]), 1, "with ship.servers empty");

	ship_conf(&e, &c, "alpha", "\"create_stream\": true, \"replicas\": 1", conf, sizeof(conf));
	cr_assert_eq(kill(d, SIGHUP), 0);
	em = emitter(&e, "1", "3000", "0", out[2], sizeof(out[2]), 2);
	live_wait_ok(em, "emitter");
	wait_server(&e, c.node[0].port);
	wait_shipped(&e, 60);
	live_daemon_stop(d);
	for (int k = 0; k < 3; k++)
		emitted += emitted_of(out[k]);
	expect_in_stream(&e, &c, emitted);
	cluster_stop(&c);
	live_cleanup(&e);
}

/* Emit n events into daemon d at e, stop it and read its local store:
 * every one is there, whatever the cluster said. */
static void stores_locally(const struct live *e, pid_t d, const char *n)
{
	struct live_read rd = { 0 };
	char out[400];
	pid_t em = emitter(e, "1", n, "0", out, sizeof(out), 9);

	live_wait_ok(em, "emitter");
	live_daemon_stop(d);
	live_read_store(e->store, &rd);
	cr_expect_eq(rd.events + rd.lost, emitted_of(out), "stored %llu + lost %llu != emitted %llu",
		     (unsigned long long)rd.events, (unsigned long long)rd.lost,
		     (unsigned long long)emitted_of(out));
}

static void expect_error(json_t *s, const char *want)
{
	const char *err = json_string_value(json_object_get(s, "error"));

	cr_expect(err && strstr(err, want), "ship error \"%s\" does not say \"%s\"",
		  err ? err : "", want);
}

/* A stream that does not exist, without create_stream: refused, named,
 * and the daemon stores locally. */
Test(ship, unknown_stream, .timeout = 120)
{
	struct live e;
	struct cluster c;
	char conf[400];
	pid_t d;
	json_t *s;

	need_nats();
	live_init(&e);
	cluster_start(&c, &e, 1, NULL);
	d = ship_daemon(&e, &c, "alpha", "", conf, sizeof(conf));
	s = wait_ship_error(&e, "does not exist");
	expect_error(s, "stream \"RLTEST\" does not exist");
	expect_error(s, "ship.create_stream");
	cr_expect_str_eq(json_string_value(json_object_get(s, "state")), "refused");
	json_decref(s);
	{
		/* and `ringlog status` says it to people */
		char cmd[600], text[16384];

		snprintf(cmd, sizeof(cmd), "RINGLOG_SOCKET=%s " RINGLOG_CLI_PATH " status", e.sock);
		cr_expect_eq(live_run(cmd, text, sizeof(text)), 0);
		cr_expect(strstr(text, "shipping") && strstr(text, "refused: stream RLTEST") &&
			  strstr(text, "does not exist") && strstr(text, "ship lag"),
			  "status: %s", text);
	}
	stores_locally(&e, d, "5000");
	cluster_stop(&c);
	live_cleanup(&e);
}

/* No server answers: said, retried, stored locally. */
Test(ship, unreachable, .timeout = 120)
{
	struct live e;
	struct cluster c = { .n = 1 };
	char conf[400];
	pid_t d;
	json_t *s;

	need_nats();
	live_init(&e);
	c.node[0].port = free_port(); /* nobody listens there */
	d = ship_daemon(&e, &c, "alpha", "", conf, sizeof(conf));
	s = wait_ship_error(&e, "no server of");
	expect_error(s, "accepts a connection");
	json_decref(s);
	stores_locally(&e, d, "5000");
	live_cleanup(&e);
}

/* The daemon's sandbox denies the network (how: as the shipped unit's
 * RestrictAddressFamilies=AF_UNIX or IPAddressDeny=any do) while a server
 * listens: status and the log name the cause and the drop-in, the state is
 * "denied", and every event is stored locally. */
static void sandbox_case(enum live_net how, const char *cause)
{
	struct live e;
	struct cluster c;
	char conf[400], cmd[600], text[16384];
	pid_t d;
	json_t *s;

	need_nats();
	live_init(&e);
	cluster_start(&c, &e, 1, NULL);
	e.deny_net = how;
	d = ship_daemon(&e, &c, "alpha", "\"create_stream\": true, \"replicas\": 1", conf,
			sizeof(conf));
	s = wait_ship_error(&e, "the sandbox");
	expect_error(s, cause);
	expect_error(s, "ringlogd.service.d/ship.conf");
	expect_error(s, "storing locally");
	cr_expect_str_eq(json_string_value(json_object_get(s, "state")) ?: "", "denied");
	json_decref(s);
	snprintf(cmd, sizeof(cmd), "RINGLOG_SOCKET=%s " RINGLOG_CLI_PATH " status", e.sock);
	cr_expect_eq(live_run(cmd, text, sizeof(text)), 0);
	cr_expect(strstr(text, "shipping") && strstr(text, "denied") && strstr(text, cause) &&
		  strstr(text, "ship.conf"), "status: %s", text);
	/* The shipping thread sets the error status shows at once; its log
	 * line is written by the loop, a moment later (/tmp/ci26 read the
	 * log before it). */
	wait_log(&e, "ship: the sandbox", cause);
	stores_locally(&e, d, "20000");
	cluster_stop(&c);
	live_cleanup(&e);
}

Test(ship, sandbox_denies_internet_sockets, .timeout = 120)
{
	sandbox_case(LIVE_NET_NO_INET, "RestrictAddressFamilies=");
}

Test(ship, sandbox_denies_connecting, .timeout = 120)
{
	sandbox_case(LIVE_NET_NO_CONNECT, "IPAddressDeny=any");
}

/* Wrong password: said (with where to look), nothing secret in status,
 * stored locally. */
Test(ship, wrong_credentials, .timeout = 120)
{
	struct live e;
	struct cluster c;
	char conf[400], pw[400], extra[600], *dump;
	pid_t d;
	json_t *s;

	need_nats();
	live_init(&e);
	cluster_start(&c, &e, 1, "authorization { user: ringlog, password: s3cret-right }");
	snprintf(pw, sizeof(pw), "%s/password", e.dir);
	live_write_file(pw, "s3cret-wrong\n");
	snprintf(extra, sizeof(extra), "\"user\": \"ringlog\", \"password_file\": \"%s\"", pw);
	d = ship_daemon(&e, &c, "alpha", extra, conf, sizeof(conf));
	s = wait_ship_error(&e, "uthoriz");
	expect_error(s, "ship.password_file");
	dump = json_dumps(s, JSON_COMPACT);
	cr_expect(!strstr(dump, "s3cret"), "a password in status: %s", dump);
	free(dump);
	json_decref(s);
	stores_locally(&e, d, "5000");
	{
		char log[65536];

		live_log(&e, log, sizeof(log));
		cr_expect(!strstr(log, "s3cret"), "a password in the log");
	}
	cluster_stop(&c);
	live_cleanup(&e);
}

/* A server whose max_payload is smaller than a chunk's message: messages
 * are cut into fragments (more messages acknowledged than chunks) and read
 * back whole, compressed (16 KiB: a compressed chunk is ~1/13 of its
 * bytes) or not (64 KiB). */
static void small_max_payload_case(const char *payload, const char *compress)
{
	struct live e;
	struct cluster c;
	char conf[400], out[400], extra[200], server[64];
	pid_t d, em;
	json_t *s;

	need_nats();
	live_init(&e);
	snprintf(server, sizeof(server), "max_payload: %s", payload);
	cluster_start(&c, &e, 1, server);
	snprintf(extra, sizeof(extra), "\"create_stream\": true, \"replicas\": 1, \"compress\": \"%s\"",
		 compress);
	d = ship_daemon(&e, &c, "alpha", extra, conf, sizeof(conf));
	em = emitter(&e, "2", "50000", "100", out, sizeof(out), 0);
	live_wait_ok(em, "emitter");
	wait_shipped(&e, 120);
	s = ship_status(&e);
	cr_expect_eq(json_integer_value(json_object_get(s, "max_payload")), atoll(payload));
	cr_expect_gt(json_integer_value(json_object_get(s, "acked_messages")),
		     json_integer_value(json_object_get(s, "acked_chunks")),
		     "no message was cut: %lld messages for %lld chunks",
		     (long long)json_integer_value(json_object_get(s, "acked_messages")),
		     (long long)json_integer_value(json_object_get(s, "acked_chunks")));
	json_decref(s);
	live_daemon_stop(d);
	expect_in_stream(&e, &c, emitted_of(out));
	cluster_stop(&c);
	live_cleanup(&e);
}

Test(ship, small_max_payload, .timeout = 180)
{
	small_max_payload_case("16384", "zstd");
}

Test(ship, small_max_payload_uncompressed, .timeout = 180)
{
	small_max_payload_case("65536", "none");
}

#ifdef RINGLOG_HAVE_NATS
/* Publish len bytes of data to c's stream as message id "mallory/0../0/
 * CHUNK/PART" (part as text: "0", or "I.N.TAG" for a fragment), with a
 * right CRC32C, Ringlog-Parts when cut and Ringlog-Format format. */
static void publish_as(const struct cluster *c, const char *host, unsigned chunk, const char *part,
		       unsigned parts, const char *format, const void *data, size_t len)
{
	natsConnection *nc = NULL;
	jsCtx *js = NULL;
	natsMsg *m = NULL;
	jsPubAck *pa = NULL;
	jsErrCode jerr = 0;
	char id[160], crc[16], n[16];

	char subject[100];

	snprintf(id, sizeof(id), "%s/%032x/0/%u/%s", host, 0, chunk, part);
	snprintf(subject, sizeof(subject), "ringlog.%s", host);
	snprintf(crc, sizeof(crc), "%08x", ringlog_crc32c(0, data, len));
	snprintf(n, sizeof(n), "%u", parts);
	cr_assert_eq(natsConnection_ConnectTo(&nc, c->urls), NATS_OK);
	cr_assert_eq(natsConnection_JetStream(&js, nc, NULL), NATS_OK);
	cr_assert_eq(natsMsg_Create(&m, subject, NULL, data, (int)len), NATS_OK);
	natsMsgHeader_Set(m, "Nats-Msg-Id", id);
	natsMsgHeader_Set(m, "Ringlog-Host", host);
	natsMsgHeader_Set(m, "Ringlog-Crc32c", crc);
	natsMsgHeader_Set(m, "Ringlog-Format", format);
	if (parts > 1)
		natsMsgHeader_Set(m, "Ringlog-Parts", n);
	cr_assert_eq(js_PublishMsg(&pa, js, m, NULL, &jerr), NATS_OK, "publish: %d", (int)jerr);
	jsPubAck_Destroy(pa);
	natsMsg_Destroy(m);
	jsCtx_Destroy(js);
	natsConnection_Destroy(nc);
}

static void publish_forged(const struct cluster *c, unsigned chunk, const char *part,
			   unsigned parts, const char *format, const void *data, size_t len)
{
	publish_as(c, "mallory", chunk, part, parts, format, data, len);
}

/* A version 2 (encoded) ship header for desc + body bytes, then frame. */
static size_t forged_v2(uint8_t *buf, uint32_t encoding, uint32_t decoded, const void *frame,
			size_t len)
{
	struct ringlog_ship_hdr h = { .magic = RINGLOG_SHIP_MAGIC,
				      .version = RINGLOG_SHIP_VERSION_ENCODED,
				      .header_size = RINGLOG_SHIP_HDR_SIZE, .body_len = decoded,
				      .encoding = encoding };

	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), frame, len);
	return sizeof(h) + len;
}

/* `ringlog read --nats --host mallory` on c: its standard error. */
static void read_host(const struct live *e, const struct cluster *c, const char *host, char *err,
		      size_t len, uint64_t *lines)
{
	char cmd[1200], line[4096], want[100];
	FILE *f;
	size_t n;

	snprintf(want, sizeof(want), "\"host\":\"%s\"", host);
	snprintf(cmd, sizeof(cmd), RINGLOG_CLI_PATH " read --nats %s --stream RLTEST -o json "
		 "--host %s 2>%s/err.txt >%s/mallory.json", c->urls, host, e->dir, e->dir);
	cr_expect_eq(system(cmd), 0, "%s", cmd);
	snprintf(cmd, sizeof(cmd), "%s/err.txt", e->dir);
	f = fopen(cmd, "r");
	cr_assert(f);
	n = fread(err, 1, len - 1, f);
	err[n] = '\0';
	fclose(f);
	snprintf(cmd, sizeof(cmd), "%s/mallory.json", e->dir);
	f = fopen(cmd, "r");
	cr_assert(f);
	*lines = 0;
	while (fgets(line, sizeof(line), f))
		*lines += strstr(line, want) != NULL;
	fclose(f);
	cr_log_info("read --nats --host %s: %llu lines; said:\n%s", host, (unsigned long long)*lines,
		    err);
}

static void read_mallory(const struct live *e, const struct cluster *c, char *err, size_t len,
			 uint64_t *lines)
{
	read_host(e, c, "mallory", err, len, lines);
}

/* Messages that claim to be ringlog chunks but are not what they say (a
 * format from a newer ringlog, an unknown encoding, bytes that are no zstd
 * frame, a frame that would decode to 65 MiB, a frame of another size than
 * its header's): `read --nats` names each and skips it, and every real
 * event is still read. */
Test(ship, forged_encodings_are_named_and_skipped, .timeout = 180)
{
	struct live e;
	struct cluster c;
	char conf[400], out[400], err[8192];
	struct ringlog_ship_zbuf z = { 0 };
	const char *why;
	uint8_t *zeros, *buf;
	uint64_t lines;
	pid_t d;

	d = shipped_daemon(&e, &c, conf, sizeof(conf), "3000", out, sizeof(out));
	zeros = calloc(1, 65u << 20);
	buf = malloc(1u << 20);
	cr_assert(zeros && buf);
	publish_forged(&c, 1, "0", 1, "3", "from the future", 15);
	publish_forged(&c, 2, "0", 1, "2", buf, forged_v2(buf, 7, 100, "????", 4));
	publish_forged(&c, 3, "0", 1, "2", buf, forged_v2(buf, 1, 100, "not a zstd frame", 16));
	cr_assert_eq(ringlog_ship_compress(&z, 1, 0, zeros, 65u << 20, &why), 0);
	publish_forged(&c, 4, "0", 1, "2", buf, forged_v2(buf, 1, 65u << 20, z.data, z.len));
	cr_assert_eq(ringlog_ship_compress(&z, 1, 0, zeros, 4000, &why), 0);
	publish_forged(&c, 5, "0", 1, "2", buf, forged_v2(buf, 1, 4096, z.data, z.len));
	free(zeros);
	free(buf);
	ringlog_ship_zbuf_free(&z);

	expect_in_stream(&e, &c, emitted_of(out));
	read_mallory(&e, &c, err, sizeof(err), &lines);
	cr_expect_eq(lines, 0);
	cr_expect(strstr(err, "/0/1/0 is in format 3, which this ringlog cannot read"), "%s", err);
	cr_expect(strstr(err, "chunk 0/2 of mallory says version 2 and encoding 7, which version 2 "
			      "does not have"), "%s", err);
	cr_expect(strstr(err, "chunk 0/3 of mallory cannot be decompressed (not a zstd frame)"),
		  "%s", err);
	cr_expect(strstr(err, "chunk 0/4 of mallory cannot be decompressed (the header's "
			      "descriptions and body are over 64 MiB)"), "%s", err);
	cr_expect(strstr(err, "chunk 0/5 of mallory cannot be decompressed (the zstd frame's "
			      "decoded size is not the header's)"), "%s", err);
	live_daemon_stop(d);
	cluster_stop(&c);
	live_cleanup(&e);
}

/* One chunk in the stream cut two ways: it was sent cut into fragments,
 * compressed, and only the first reached the stream; sent again cut
 * otherwise (a reload to "compress": "none", another max_payload, another
 * zstd), its fragments have other ids (proto/ship.h: I.N.TAG), so the
 * stream keeps them instead of taking them for re-sends, and the reader
 * joins the whole cut: every event of the chunk once. With ids that did not
 * name the cut, the stream would have dropped the second cut's first
 * fragment and the reader joined fragments of two cuts. */
Test(ship, a_chunk_sent_again_cut_otherwise_is_read_whole_once, .timeout = 180)
{
	struct live e;
	struct cluster c;
	char conf[400], out[400], err[8192], part[64];
	struct ringlog_ship_zbuf z = { 0 };
	natsConnection *nc = NULL;
	jsCtx *js = NULL;
	natsMsg *m = NULL;
	jsErrCode jerr = 0;
	struct ringlog_ship_hdr hdr, *h = &hdr; /* a copy: a message's data need not be aligned */
	const uint8_t *plain;
	const char *why;
	uint8_t *v2;
	size_t len, half;
	uint32_t tag;
	uint64_t lines, events = 0;
	pid_t d;

	need_nats();
	live_init(&e);
	cluster_start(&c, &e, 1, NULL);
	d = ship_daemon(&e, &c, "alpha", "\"create_stream\": true, \"replicas\": 1, "
			"\"compress\": \"none\"", conf, sizeof(conf));
	live_wait_ok(emitter(&e, "1", "2000", "0", out, sizeof(out), 0), "emitter");
	wait_shipped(&e, 60);
	/* the first message with events: a whole, uncompressed one */
	cr_assert_eq(natsConnection_ConnectTo(&nc, c.urls), NATS_OK);
	cr_assert_eq(natsConnection_JetStream(&js, nc, NULL), NATS_OK);
	for (uint64_t seq = 1; !events; seq++) {
		natsMsg_Destroy(m);
		m = NULL;
		cr_assert_eq(js_GetMsg(&m, js, "RLTEST", seq, NULL, &jerr), NATS_OK,
			     "no message with events up to %llu", (unsigned long long)seq);
		cr_assert_geq(natsMsg_GetDataLength(m), (int)sizeof(hdr));
		memcpy(&hdr, natsMsg_GetData(m), sizeof(hdr));
		events = h->events;
	}
	plain = (const uint8_t *)natsMsg_GetData(m);
	len = (size_t)natsMsg_GetDataLength(m);
	cr_assert_eq(h->version, RINGLOG_SHIP_VERSION);
	/* the first cut: compressed, in two; only its first fragment sent */
	cr_assert_eq(ringlog_ship_compress(&z, 1, RINGLOG_SHIP_HDR_SIZE, plain + RINGLOG_SHIP_HDR_SIZE,
					   len - RINGLOG_SHIP_HDR_SIZE, &why), 0);
	memcpy(z.data, plain, RINGLOG_SHIP_HDR_SIZE);
	((struct ringlog_ship_hdr *)(void *)z.data)->version = RINGLOG_SHIP_VERSION_ENCODED;
	((struct ringlog_ship_hdr *)(void *)z.data)->encoding = RINGLOG_SHIP_ENC_ZSTD;
	v2 = z.data;
	tag = ringlog_crc32c(0, v2 + RINGLOG_SHIP_HDR_SIZE, z.len - RINGLOG_SHIP_HDR_SIZE);
	half = z.len / 2;
	snprintf(part, sizeof(part), "0.2.%08x", tag);
	publish_forged(&c, 7, part, 2, "2", v2, half);
	/* the second: as it is, in two, both sent */
	tag = ringlog_crc32c(0, plain + RINGLOG_SHIP_HDR_SIZE, len - RINGLOG_SHIP_HDR_SIZE);
	snprintf(part, sizeof(part), "0.2.%08x", tag);
	publish_forged(&c, 7, part, 2, "1", plain, len / 2);
	snprintf(part, sizeof(part), "1.2.%08x", tag);
	publish_forged(&c, 7, part, 2, "1", plain + len / 2, len - len / 2);

	read_mallory(&e, &c, err, sizeof(err), &lines);
	cr_expect_eq(lines, events, "the chunk's %llu events read %llu times",
		     (unsigned long long)events, (unsigned long long)lines);
	cr_expect(!strstr(err, "lacks fragments") && !strstr(err, "cannot be"), "%s", err);

	/* two cuts that share a tag but not their number of fragments (a
	 * writer from before the tag named the fragments' size): the whole
	 * one in 2 is read, the one in 3 lacking its middle is not mixed in */
	publish_as(&c, "trudy", 7, part, 2, "1", plain + len / 2, len - len / 2);
	snprintf(part, sizeof(part), "0.2.%08x", tag);
	publish_as(&c, "trudy", 7, part, 2, "1", plain, len / 2);
	snprintf(part, sizeof(part), "0.3.%08x", tag);
	publish_as(&c, "trudy", 7, part, 3, "1", plain, len / 3);
	snprintf(part, sizeof(part), "2.3.%08x", tag);
	publish_as(&c, "trudy", 7, part, 3, "1", plain + 2 * (len / 3), len - 2 * (len / 3));
	read_host(&e, &c, "trudy", err, sizeof(err), &lines);
	cr_expect_eq(lines, events, "trudy: the chunk's %llu events read %llu times",
		     (unsigned long long)events, (unsigned long long)lines);
	cr_expect(!strstr(err, "lacks fragments") && !strstr(err, "cannot be"), "%s", err);
	natsMsg_Destroy(m);
	jsCtx_Destroy(js);
	natsConnection_Destroy(nc);
	ringlog_ship_zbuf_free(&z);
	live_daemon_stop(d);
	cluster_stop(&c);
	live_cleanup(&e);
}

/* A fleet's stream can hold a chunk after a later one of its host: a
 * resend went out before the first copy's ack, and the first copy was
 * lost. `tail --nats` prints the late chunk too, once, where it dropped it
 * as seen (its chunk number and ring positions lie below the newest
 * printed). alpha's real chunks are published again as host "zed", in the
 * order 0, 2, 1, 3, ..., then 1 and 2 again with another cut (not
 * duplicates to JetStream: printed once is enough). */
Test(ship, tail_nats_prints_a_chunk_that_comes_after_a_later_one, .timeout = 180)
{
	enum { MAXM = 16 };
	struct live e;
	struct cluster c;
	char conf[400], out[400], tail_out[400], line[4096];
	natsConnection *nc = NULL;
	jsCtx *js = NULL;
	natsMsg *m[MAXM] = { 0 };
	jsErrCode jerr = 0;
	uint64_t events = 0, seen = 0;
	unsigned nm = 0;
	const char *targv[] = { RINGLOG_CLI_PATH, "tail", "--nats", NULL, "--stream", "RLTEST",
				"--host", "zed", "--json", NULL };
	pid_t d, tail;
	FILE *in;

	need_nats();
	live_init(&e);
	cluster_start(&c, &e, 1, NULL);
	d = ship_daemon(&e, &c, "alpha", "\"create_stream\": true, \"replicas\": 1, "
			"\"compress\": \"none\"", conf, sizeof(conf));
	/* one thread's ring over several chunks (a seal every 100 ms): the
	 * late chunk's ring positions lie below the newest printed */
	{
		const char *argv[] = { EMITTER_PATH, "1", "1500", "--every-us", "1000",
				       "--wait-daemon", "20", NULL };
		char env[400];
		const char *envp[] = { env, NULL };

		snprintf(env, sizeof(env), "RINGLOG_SOCKET=%s", e.sock);
		snprintf(out, sizeof(out), "%s/emitter.out", e.dir);
		live_wait_ok(live_spawn(argv, envp, out), "emitter");
	}
	wait_shipped(&e, 60);
	cr_assert_eq(natsConnection_ConnectTo(&nc, c.urls), NATS_OK);
	cr_assert_eq(natsConnection_JetStream(&js, nc, NULL), NATS_OK);
	for (uint64_t seq = 1; nm < MAXM; seq++) {
		struct ringlog_ship_hdr h;
		natsMsg *x = NULL;
		const char *parts = NULL;

		if (js_GetMsg(&x, js, "RLTEST", seq, NULL, &jerr) != NATS_OK)
			break;
		memcpy(&h, natsMsg_GetData(x), sizeof(h));
		if (h.events && (natsMsgHeader_Get(x, "Ringlog-Parts", &parts) != NATS_OK || !parts)) {
			m[nm++] = x;
			events += h.events;
		} else {
			natsMsg_Destroy(x);
		}
	}
	cr_assert_geq(nm, 3, "alpha shipped %u whole chunks with events; 3 needed", nm);

	targv[3] = c.urls;
	snprintf(tail_out, sizeof(tail_out), "%s/tail.json", e.dir);
	tail = live_spawn(targv, NULL, tail_out);
	sleep_ms(1000); /* its consumer exists: it delivers from now on */
	for (unsigned i = 0; i < nm; i++) {
		unsigned k = i == 1 ? 2 : i == 2 ? 1 : i;

		publish_as(&c, "zed", k, "0", 1, "1", natsMsg_GetData(m[k]),
			   (size_t)natsMsg_GetDataLength(m[k]));
	}
	for (unsigned k = 1; k <= 2; k++)
		publish_as(&c, "zed", k, "0.1.00000000", 1, "1", natsMsg_GetData(m[k]),
			   (size_t)natsMsg_GetDataLength(m[k]));
	for (int i = 0; i < 100; i++) {
		seen = 0;
		in = fopen(tail_out, "r");
		while (in && fgets(line, sizeof(line), in))
			seen += strstr(line, "\"host\":\"zed\"") != NULL;
		if (in)
			fclose(in);
		if (seen >= events && i >= 20)
			break;
		sleep_ms(100);
	}
	kill(tail, SIGTERM);
	waitpid(tail, NULL, 0);
	cr_expect_eq(seen, events, "tail --nats printed %llu lines of the %u chunks' %llu events",
		     (unsigned long long)seen, nm, (unsigned long long)events);
	for (unsigned i = 0; i < nm; i++)
		natsMsg_Destroy(m[i]);
	jsCtx_Destroy(js);
	natsConnection_Destroy(nc);
	live_daemon_stop(d);
	cluster_stop(&c);
	live_cleanup(&e);
}
#endif

/* TLS both ways: a server that asks for a client certificate, ringlogd
 * with ship.tls_ca, tls_cert and tls_key. Certificates made here with
 * openssl (skips without it). */
Test(ship, mutual_tls, .timeout = 180)
{
	struct live e;
	struct cluster c;
	char conf[400], cmd[4096], out[4096], extra[1500], tls[1200], d_[300];
	pid_t d, em;
	json_t *s;

	need_nats();
	if (access("/usr/bin/openssl", X_OK) != 0)
		cr_skip("openssl is not installed: TLS certificates cannot be made");
	live_init(&e);
	snprintf(d_, sizeof(d_), "%s", e.dir);
	snprintf(cmd, sizeof(cmd),
		 "cd %s && "
		 "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
		 "-keyout ca.key -out ca.pem -days 2 -subj /CN=ringlog-test-ca && "
		 "printf 'subjectAltName=IP:127.0.0.1\\n' > san.ext && "
		 "openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
		 "-keyout server.key -out server.csr -subj /CN=127.0.0.1 && "
		 "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
		 "-out server.pem -days 2 -extfile san.ext && "
		 "openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
		 "-keyout client.key -out client.csr -subj /CN=ringlogd && "
		 "openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
		 "-out client.pem -days 2 2>&1", d_);
	cr_assert_eq(live_run(cmd, out, sizeof(out)), 0, "openssl: %s", out);
	snprintf(tls, sizeof(tls), "tls { cert_file: \"%s/server.pem\", key_file: \"%s/server.key\", "
		 "ca_file: \"%s/ca.pem\", verify: true, timeout: 2 }", d_, d_, d_);
	cluster_start(&c, &e, 1, tls);
	snprintf(extra, sizeof(extra), "\"create_stream\": true, \"replicas\": 1, \"tls_ca\": "
		 "\"%s/ca.pem\", \"tls_cert\": \"%s/client.pem\", \"tls_key\": \"%s/client.key\"",
		 d_, d_, d_);
	d = ship_daemon(&e, &c, "alpha", extra, conf, sizeof(conf));
	em = emitter(&e, "1", "5000", "0", out, sizeof(out), 0);
	live_wait_ok(em, "emitter");
	wait_shipped(&e, 60);
	s = ship_status(&e);
	cr_expect_geq(json_integer_value(json_object_get(s, "shipped_events")), 5000);
	json_decref(s);
	live_daemon_stop(d);
	cluster_stop(&c);
	live_cleanup(&e);
}

/* Shipping is the daemon's and the command's: libringlog, which every
 * program links, needs neither libnats nor libzstd (nor anything but the C
 * library). */
Test(ship, libringlog_links_neither_libnats_nor_libzstd)
{
	char out[8192];
	int rc = live_run("ldd " LIBRINGLOG_PATH " 2>&1", out, sizeof(out));

	cr_assert_eq(rc, 0, "ldd %s: %s", LIBRINGLOG_PATH, out);
	cr_log_info("ldd libringlog:\n%s", out);
	cr_expect(strstr(out, "libc.so"), "%s", out);
	cr_expect(!strstr(out, "libnats") && !strstr(out, "libzstd") && !strstr(out, "libjansson") &&
		  !strstr(out, "libuv"), "libringlog links more than the C library:\n%s", out);
}

/* --check-config names the ship key and the value. */
Test(ship, check_config)
{
	static const struct {
		const char *json, *want;
	} cases[] = {
		{ "{\"ship\": {\"servers\": [\"http://a:4222\"]}}", "\"ship.servers\": \"http://a:4222\" is not a NATS server URL" },
		{ "{\"ship\": {\"servers\": [\"nats://a:4222\"], \"stream\": \"a.b\"}}", "\"ship.stream\": \"a.b\" is not a JetStream stream name" },
		{ "{\"ship\": {\"servers\": \"nats://a:4222\", \"subject\": \"x.*\"}}", "\"ship.subject\"" },
		{ "{\"ship\": {\"servers\": [\"nats://a:4222\"], \"creds\": \"/nonexistent/x.creds\"}}", "\"ship.creds\": cannot read \"/nonexistent/x.creds\"" },
		{ "{\"ship\": {\"servers\": [\"nats://a:4222\"], \"user\": \"u\"}}", "user and password_file go together" },
		{ "{\"ship\": {\"max_pending\": 0}}", "\"ship.max_pending\": expected an integer from 1 to 4096" },
		{ "{\"ship\": {\"colour\": 1}}", "\"ship.colour\": unknown key" },
		{ "{\"ship\": {\"compress\": \"lz4\"}}", "\"ship.compress\": \"lz4\" is not a compression: use \"zstd\", \"zstd:N\" with N from 1 to 19 (slower, smaller), or \"none\"" },
		{ "{\"ship\": {\"compress\": \"zstd:20\"}}", "\"ship.compress\": \"zstd:20\" is not a compression" },
		{ "{\"ship\": {\"compress\": \"zstd:1x\"}}", "\"ship.compress\": \"zstd:1x\" is not a compression" },
		{ "{\"ship\": {\"compress\": \"zstd:0\"}}", "\"ship.compress\": \"zstd:0\" is not a compression" },
		{ "{\"ship\": {\"compress\": \"zstd: 5\"}}", "\"ship.compress\": \"zstd: 5\" is not a compression" },
		{ "{\"ship\": {\"compress\": \"zstd:\"}}", "\"ship.compress\": \"zstd:\" is not a compression" },
		{ "{\"ship\": {\"compress\": true}}", "\"ship.compress\": expected \"zstd\", \"zstd:N\" or \"none\"" },
	};
	struct live e;

	live_init(&e);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char conf[400], cmd[600], out[4096];
		int rc;

		snprintf(conf, sizeof(conf), "%s/bad.json", e.dir);
		live_write_file(conf, cases[i].json);
		snprintf(cmd, sizeof(cmd), RINGLOGD_PATH " --check-config --config %s 2>&1", conf);
		rc = live_run(cmd, out, sizeof(out));
		cr_expect_neq(rc, 0, "%s: accepted", cases[i].json);
		cr_expect(strstr(out, cases[i].want), "%s: said \"%s\", not \"%s\"", cases[i].json, out,
			  cases[i].want);
	}
	live_cleanup(&e);
}
