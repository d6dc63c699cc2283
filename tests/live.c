/* tests/live.c - see live.h. */
#define _GNU_SOURCE
#include "live.h"

#include <jansson.h>

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

void live_init(struct live *e)
{
	snprintf(e->dir, sizeof(e->dir), "/tmp/ringlog-test-XXXXXX");
	cr_assert(mkdtemp(e->dir));
	snprintf(e->store, sizeof(e->store), "%s/store", e->dir);
	snprintf(e->sock, sizeof(e->sock), "%s/sock", e->dir);
	snprintf(e->log, sizeof(e->log), "%s/daemon.log", e->dir);
	e->deny_io_uring = false;
	e->deny_net = LIVE_NET_OPEN;
	setenv("RINGLOG_SOCKET", e->sock, 1);
}

void live_cleanup(struct live *e)
{
	char cmd[400];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", e->dir);
	cr_assert_eq(system(cmd), 0);
}

/* Install a seccomp filter of n instructions on this process: 0 or -1. */
static int seccomp_install(struct sock_filter *f, unsigned short n)
{
	struct sock_fprog prog = { .len = n, .filter = f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -1;
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

static int deny_io_uring(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};

	return seccomp_install(f, sizeof(f) / sizeof(f[0]));
}

/* The daemon's network as systemd's sandbox leaves it: socket(AF_INET or
 * AF_INET6) fails with EAFNOSUPPORT, as RestrictAddressFamilies=AF_UNIX
 * makes it (a seccomp filter too); or every connect() fails with EPERM,
 * as IPAddressDeny=any makes a TCP one (ringlogd connects nothing else:
 * its clients connect to it). */
static int deny_net(enum live_net how)
{
	struct sock_filter families[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_socket, 0, 4),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_INET, 1, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_INET6, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EAFNOSUPPORT),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_filter connects[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_connect, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};

	if (how == LIVE_NET_NO_CONNECT)
		return seccomp_install(connects, sizeof(connects) / sizeof(connects[0]));
	return seccomp_install(families, sizeof(families) / sizeof(families[0]));
}

void live_log(const struct live *e, char *buf, size_t cap)
{
	int fd = open(e->log, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, cap - 1) : 0;

	buf[n > 0 ? n : 0] = 0;
	if (fd >= 0)
		close(fd);
}

static bool sock_listens(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool ok;

	if (fd < 0 || strlen(path) >= sizeof(a.sun_path)) {
		if (fd >= 0)
			close(fd);
		return false;
	}
	memcpy(a.sun_path, path, strlen(path) + 1);
	ok = connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
	close(fd);
	return ok;
}

pid_t live_daemon(const struct live *e, ...)
{
	const char *argv[32] = { "ringlogd", "--storage", e->store, "--socket", e->sock };
	int n = 5;
	va_list ap;
	pid_t pid;

	va_start(ap, e);
	for (const char *a; (a = va_arg(ap, const char *)) && n < 31;)
		argv[n++] = a;
	va_end(ap);
	unlink(e->sock);
	pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		int fd = open(e->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);

		/* stdout too: a daemon left behind by a crashed test must not
		 * hold the test's output pipe open. */
		if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
			_exit(126);
		prctl(PR_SET_PDEATHSIG, SIGKILL); /* nothing outlives its test */
		if (e->deny_io_uring && deny_io_uring() < 0)
			_exit(125);
		if (e->deny_net != LIVE_NET_OPEN && deny_net(e->deny_net) < 0)
			_exit(125);
		execv(RINGLOGD_PATH, (char *const *)argv);
		_exit(127);
	}
	for (int i = 0; i < 200; i++) {
		int status;

		/* listening, not just bound: the socket file exists from bind(),
		 * and a test that connects, or stops the daemon, between bind()
		 * and listen() got ECONNREFUSED (CI, under ASan) */
		if (sock_listens(e->sock))
			return pid;
		if (waitpid(pid, &status, WNOHANG) == pid) {
			static char log[4096];
			FILE *f = fopen(e->log, "r");
			size_t got = f ? fread(log, 1, sizeof(log) - 1, f) : 0;

			log[got] = 0;
			if (f)
				fclose(f);
			cr_assert_fail("ringlogd exited before listening (status %d); its log:\n%s",
				       status, log);
		}
		usleep(25000);
	}
	cr_assert_fail("ringlogd did not create %s within 5 s", e->sock);
	return -1;
}

void live_daemon_stop(pid_t pid)
{
	int st;

	kill(pid, SIGTERM);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "ringlogd: status %d", st);
}

pid_t live_spawn(const char *const argv[], const char *const env[], const char *out_path)
{
	pid_t pid = fork();

	cr_assert(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL); /* nothing outlives its test */
		for (int i = 0; env && env[i]; i++)
			putenv((char *)env[i]);
		if (out_path) {
			int fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

			if (fd < 0 || dup2(fd, 1) < 0)
				_exit(126);
			close(fd);
		}
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	return pid;
}

void live_wait_ok(pid_t pid, const char *what)
{
	int st;

	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: status %d", what, st);
}

void live_damage_second_chunk(const struct live *e)
{
	char cmd[2048], out[256];

	/* Damage at a fixed offset (it was 64 KiB) lands in the first chunk
	 * when a fast drain writes chunks of a MiB or more, and takes the
	 * descriptions of the next three with it: CI once read 1,000 events
	 * of 120,000. Chunk 1 starts after chunk 0 (at 4096): its 48-byte
	 * header and body_len (offset 8) bytes, rounded up to 4096. */
	snprintf(cmd, sizeof(cmd), "f=$(ls '%s'/*.rlseg | head -1); "
		 "bl=$(od -An -tu4 -j 4104 -N 4 \"$f\"); "
		 "c1=$(( (4096 + 48 + bl + 4095) / 4096 )); "
		 "[ $(stat -c %%s \"$f\") -gt $(( c1 * 4096 + 4096 )) ] || exit 3; "
		 "head -c 4096 /dev/zero | tr '\\0' X | "
		 "dd of=\"$f\" bs=4096 seek=$c1 conv=notrunc 2>/dev/null", e->store);
	cr_assert_eq(live_run(cmd, out, sizeof(out)), 0,
		     "the first segment in %s has no second chunk to damage", e->store);
}

int live_run(const char *cmd, char *out, size_t cap)
{
	FILE *p = popen(cmd, "r");
	size_t n = 0;
	int st;

	if (!p)
		return -1;
	if (out && cap) {
		size_t k;

		while (n + 1 < cap && (k = fread(out + n, 1, cap - 1 - n, p)) > 0)
			n += k;
		out[n] = 0;
	}
	{
		char sink[4096];
		size_t cut = 0, k;

		while ((k = fread(sink, 1, sizeof(sink), p)) > 0)
			cut += k;
		/* said, so a test that counts lines in a cut buffer explains itself */
		if (cut && out && cap)
			fprintf(stderr, "live_run: `%.200s`: output cut at %zu bytes (%zu more dropped)\n",
				cmd, n, cut);
	}
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}


static int count_event(void *ctx, const struct ringlog_dec_event *ev)
{
	struct live_read *r = ctx;

	r->events++;
	return r->on_event ? r->on_event(r->ctx, ev) : 0;
}

static void count_loss(void *ctx, const struct ringlog_dec_loss *l)
{
	struct live_read *r = ctx;

	r->lost += l->records;
	if (r->on_loss)
		r->on_loss(r->ctx, l);
}

static void count_damage(void *ctx, const char *what)
{
	struct live_read *r = ctx;

	cr_log_info("damaged record: %s", what);
	r->damaged_records++;
}

static int is_segment(const struct dirent *d)
{
	size_t n = strlen(d->d_name);

	return n > 6 && !strcmp(d->d_name + n - 6, ".rlseg");
}

void live_read_store(const char *store, struct live_read *r)
{
	struct ringlog_dedup dedup = { 0 };
	struct dirent **names;
	int n = scandir(store, &names, is_segment, alphasort);

	cr_assert(n >= 0, "cannot list %s", store);
	r->events = r->lost = r->damaged_records = r->damaged_bytes = r->damaged_closed = 0;
	r->segments = r->closed = r->recovered = 0;
	for (int i = 0; i < n; i++) {
		char path[600];
		struct ringlog_seg_file f;
		struct ringlog_decoder d;
		struct ringlog_seg_clock clk;
		const char *why;

		snprintf(path, sizeof(path), "%s/%s", store, names[i]->d_name);
		free(names[i]);
		cr_assert_eq(ringlog_seg_open(&f, path, &why), 0, "%s: %s", path, why);
		r->segments++;
		ringlog_seg_clock_of(&f.hdr, &clk);
		ringlog_dec_init(&d, &clk);
		d.dedup = &dedup;
		d.dedup_class = ringlog_seg_class_key(&f.hdr);
		d.ctx = r;
		d.on_event = count_event;
		d.on_loss = count_loss;
		d.on_damage = count_damage;
		while (ringlog_seg_next(&f, false) == 1)
			ringlog_dec_records(&d, f.body, f.chunk.body_len);
		r->damaged_bytes += f.damaged_bytes;
		if (f.hdr_ok && f.hdr.state == RINGLOG_SEG_CLOSED) {
			r->closed++;
			if (f.hdr.compat_flags & RINGLOG_SEG_RECOVERED)
				r->recovered++;
			else
				r->damaged_closed += f.damaged_bytes;
		}
		ringlog_dec_free(&d);
		ringlog_seg_close(&f);
	}
	free(names);
	r->dups_dropped = dedup.dropped;
	ringlog_dedup_free(&dedup);
}

int live_order_event(void *ctx, const struct ringlog_dec_event *e)
{
	struct live_order *o = ctx;
	int p;

	for (p = 0; p < o->npid && o->pid[p] != e->writer->w.pid; p++)
		;
	if (p == o->npid) {
		cr_assert(o->npid < 64);
		o->pid[o->npid++] = e->writer->w.pid;
	}
	cr_assert_eq(e->desc->nfields, 3);
	uint64_t t = e->values[0].u, seq = e->values[1].u;

	cr_assert(t < 256);
	if (seq != o->next[p][t])
		o->dups_or_gaps++;
	o->next[p][t] = seq + 1;
	cr_assert_eq(e->values[2].len, 15);
	return 0;
}

void live_write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert(f, "cannot write %s", path);
	fputs(text, f);
	fclose(f);
}

int live_fd_count(pid_t pid)
{
	char path[64];
	DIR *dir;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	if (!(dir = opendir(path)))
		return -1;
	while (readdir(dir))
		n++;
	closedir(dir);
	return n - 2;
}

void *live_status_json(void)
{
	static char out[1 << 20];
	json_error_t err;

	if (live_run(RINGLOG_CLI_PATH " status --json 2>/dev/null", out, sizeof(out)) != 0)
		return NULL;
	return json_loads(out, 0, &err);
}

long live_tails_attached(void)
{
	json_t *j = live_status_json();
	long n = j ? (long)json_integer_value(json_object_get(j, "tails")) : -1;

	json_decref(j);
	return n;
}

void live_wait_tail_attached(long before)
{
	for (int i = 0; i < 600; i++) {
		struct timespec ts = { 0, 50 * 1000000 };

		if (live_tails_attached() > before)
			return;
		nanosleep(&ts, NULL);
	}
	cr_assert_fail("no tail attached within 30 s (still %ld)", before);
}
