/* tests/test-service.c - ringlog as a system service: what `cmake --install`
 * puts where, the systemd units, socket activation, and who may write and
 * read (with throw-away users, as root).
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "live.h"

/* A library built with sanitizers needs programs built with them. */
#ifdef RINGLOG_TEST_SANITIZE
#define SAN_FLAGS "-fsanitize=address,undefined"
#else
#define SAN_FLAGS ""
#endif

static bool have(const char *prog)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", prog);
	return system(cmd) == 0;
}

static void must(const char *cmd)
{
	char out[8192];
	char full[4200];

	snprintf(full, sizeof(full), "%s 2>&1", cmd);
	cr_assert_eq(live_run(full, out, sizeof(out)), 0, "`%s` failed:\n%s", cmd, out);
}

static void expect_file(const char *root, const char *rel, mode_t type)
{
	char p[600];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	cr_expect(lstat(p, &st) == 0 && (st.st_mode & S_IFMT) == type, "not installed: %s", rel);
}

struct hello {
	int pkgconfig, cmake;
};

static int on_hello(void *ctx, const struct ringlog_dec_event *ev)
{
	struct hello *h = ctx;

	if (strcmp(ev->desc->name, "Hello") || ev->desc->nfields != 2)
		return 0;
	if (ev->values[0].len == 10 && !memcmp(ev->values[0].data, "pkg-config", 10))
		h->pkgconfig++;
	if (ev->values[0].len == 5 && !memcmp(ev->values[0].data, "cmake", 5))
		h->cmake++;
	return 0;
}

Test(service, install_puts_everything_in_place_and_programs_build_against_it)
{
	struct live e;
	char pfx[400], cmd[4000], out[8192];
	struct hello h = { 0 };
	struct live_read rd = { .ctx = &h, .on_event = on_hello };
	pid_t d;

	live_init(&e);
	snprintf(pfx, sizeof(pfx), "%s/usr", e.dir);
	snprintf(cmd, sizeof(cmd), "cmake --install '%s' --prefix '%s'", RINGLOG_BUILD_DIR, pfx);
	must(cmd);
	expect_file(pfx, "sbin/ringlogd", S_IFREG);
	expect_file(pfx, "bin/ringlog", S_IFREG);
	expect_file(pfx, "lib/libringlog.so", S_IFLNK);
	expect_file(pfx, "lib/libringlog.so.0", S_IFLNK);
	expect_file(pfx, "lib/libringlog.a", S_IFREG);
	expect_file(pfx, "include/ringlog.h", S_IFREG);
	expect_file(pfx, "lib/pkgconfig/ringlog.pc", S_IFREG);
	expect_file(pfx, "lib/cmake/ringlog/ringlogConfig.cmake", S_IFREG);
	expect_file(pfx, "etc/ringlog/ringlogd.json", S_IFREG);
	expect_file(pfx, "share/man/man1/ringlog.1", S_IFREG);
	expect_file(pfx, "share/man/man8/ringlogd.8", S_IFREG);
	expect_file(pfx, "lib/systemd/system/ringlogd.service", S_IFREG);
	expect_file(pfx, "lib/systemd/system/ringlogd.socket", S_IFREG);
	expect_file(pfx, "lib/sysusers.d/ringlog.conf", S_IFREG);
	expect_file(pfx, "lib/tmpfiles.d/ringlog.conf", S_IFREG);

	/* The soname, and nothing exported but the API. */
	snprintf(cmd, sizeof(cmd), "objdump -p '%s/lib/libringlog.so' | grep SONAME", pfx);
	live_run(cmd, out, sizeof(out));
	cr_expect(strstr(out, "libringlog.so.0"), "soname: %s", out);

	/* An admin's edited configuration survives a reinstall. */
	snprintf(cmd, sizeof(cmd), "echo ' ' >> '%s/etc/ringlog/ringlogd.json' && "
		 "cp '%s/etc/ringlog/ringlogd.json' '%s/edited.json' && "
		 "cmake --install '%s' --prefix '%s' >/dev/null && "
		 "cmp '%s/etc/ringlog/ringlogd.json' '%s/edited.json'",
		 pfx, pfx, e.dir, RINGLOG_BUILD_DIR, pfx, pfx, e.dir);
	must(cmd);

	/* The example program, built both ways a user would. */
	snprintf(cmd, sizeof(cmd),
		 "cd '%s' && PKG_CONFIG_PATH='%s/lib/pkgconfig' cc -Wall -Wextra -Werror %s -o ex-pc "
		 "'%s/client/example/example.c' $(PKG_CONFIG_PATH='%s/lib/pkgconfig' "
		 "pkg-config --cflags --libs ringlog)", e.dir, pfx, SAN_FLAGS, RINGLOG_SOURCE_DIR, pfx);
	must(cmd);
	snprintf(cmd, sizeof(cmd),
		 "cmake -S '%s/client/example' -B '%s/ex-cmake' -DCMAKE_PREFIX_PATH='%s' "
		 "-DCMAKE_C_FLAGS='%s' >/dev/null && "
		 "cmake --build '%s/ex-cmake' >/dev/null", RINGLOG_SOURCE_DIR, e.dir, pfx, SAN_FLAGS, e.dir);
	must(cmd);

	d = live_daemon(&e, NULL);
	snprintf(cmd, sizeof(cmd), "LD_LIBRARY_PATH='%s/lib' '%s/ex-pc' pkg-config && "
		 "LD_LIBRARY_PATH='%s/lib' '%s/ex-cmake/example' cmake", pfx, e.dir, pfx, e.dir);
	must(cmd);
	live_daemon_stop(d);
	live_read_store(e.store, &rd);
	cr_expect_eq(h.pkgconfig, 1, "the pkg-config build's event is not stored");
	cr_expect_eq(h.cmake, 1, "the find_package build's event is not stored");

	/* systemd-analyze verify, on the units as installed: no complaint. */
	if (!have("systemd-analyze")) {
		cr_log_warn("systemd-analyze verify skipped: no systemd-analyze "
			    "(apt-get install systemd)");
	} else {
		snprintf(cmd, sizeof(cmd),
			 "MANPATH='%s/share/man' systemd-analyze verify "
			 "'%s/lib/systemd/system/ringlogd.service' "
			 "'%s/lib/systemd/system/ringlogd.socket' 2>&1",
			 pfx, pfx, pfx);
		int rc = live_run(cmd, out, sizeof(out));

		cr_expect(rc == 0 && out[0] == 0, "systemd-analyze verify said (exit %d):\n%s", rc, out);
	}
	live_cleanup(&e);
}

/* What `systemd-analyze security --offline` says of the unit (with the
 * drop-ins beside it, as systemd merges them) about a setting: the line
 * starting with "✓" (restricted) or "✗" (allowed) and naming it. */
static bool unit_restricts(const char *unit, const char *setting)
{
	char cmd[1200], out[32768], *line;

	snprintf(cmd, sizeof(cmd), "systemd-analyze security --offline=yes --no-pager '%s' 2>&1",
		 unit);
	live_run(cmd, out, sizeof(out));
	line = strstr(out, setting);
	cr_assert(line, "systemd-analyze security does not rate %s:\n%s", setting, out);
	while (line > out && line[-1] != '\n')
		line--;
	return !strncmp(line, "\u2713", strlen("\u2713"));
}

/* The shipping drop-in, installed as an example under the documentation
 * (not active), verifies with the unit, and the two merged allow Internet
 * sockets to a listed address, which the unit alone does not. */
Test(service, the_ship_drop_in_opens_the_network_to_the_unit)
{
	struct live e;
	char pfx[400], cmd[4000], out[8192], unit[600];
	int rc;

	if (!have("systemd-analyze"))
		cr_skip("no systemd-analyze (apt-get install systemd): the units cannot be checked");
	live_init(&e);
	snprintf(pfx, sizeof(pfx), "%s/usr", e.dir);
	snprintf(cmd, sizeof(cmd), "cmake --install '%s' --prefix '%s' >/dev/null", RINGLOG_BUILD_DIR,
		 pfx);
	must(cmd);
	expect_file(pfx, "share/doc/ringlog/examples/ringlogd.service.d/ship.conf", S_IFREG);
	snprintf(unit, sizeof(unit), "%s/lib/systemd/system/ringlogd.service", pfx);
	/* the unit as shipped: no Internet socket, no address */
	cr_expect(unit_restricts(unit, "RestrictAddressFamilies=~AF_(INET|INET6)"),
		  "the shipped unit allows Internet sockets");
	cr_expect(unit_restricts(unit, "IPAddressDeny="), "the shipped unit allows addresses");
	/* with the drop-in where an admin puts it (beside the unit, as
	 * /etc/systemd/system/ringlogd.service.d/ is to systemd) */
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s.d' && cp '%s/share/doc/ringlog/examples/"
		 "ringlogd.service.d/ship.conf' '%s.d/'", unit, pfx, unit);
	must(cmd);
	snprintf(cmd, sizeof(cmd), "MANPATH='%s/share/man' systemd-analyze verify '%s' "
		 "'%s/lib/systemd/system/ringlogd.socket' 2>&1", pfx, unit, pfx);
	rc = live_run(cmd, out, sizeof(out));
	cr_expect(rc == 0 && out[0] == 0, "systemd-analyze verify with the drop-in said (exit %d):\n%s",
		  rc, out);
	cr_expect(!unit_restricts(unit, "RestrictAddressFamilies=~AF_(INET|INET6)"),
		  "the unit with the drop-in still denies Internet sockets");
	cr_expect(!unit_restricts(unit, "IPAddressDeny="),
		  "the unit with the drop-in still denies every address");
	/* and the rest of the sandbox stays */
	cr_expect(unit_restricts(unit, "RestrictAddressFamilies=~AF_PACKET"));
	cr_expect(unit_restricts(unit, "RestrictAddressFamilies=~AF_NETLINK"));
	live_cleanup(&e);
}

#ifndef RINGLOG_TEST_SANITIZE
/* Configure and build the product (no tests, no bench) in DIR/b-TAG for
 * PREFIX, install it into DIR/dest-TAG as a package build does, then build
 * client/example in DIR/ex-TAG against that tree only, with its Makefile
 * (pkg-config) and its CMakeLists.txt (find_package). Gives the directory
 * of the installed library in LIBDIR. */
static void example_against_destdir(const char *dir, const char *tag, const char *prefix,
				    char *libdir, size_t cap)
{
	char b[300], dest[300], root[400], ex[300], pcdir[720], cmd[4000], out[300];
	FILE *f;

	snprintf(b, sizeof(b), "%s/b-%s", dir, tag);
	snprintf(dest, sizeof(dest), "%s/dest-%s", dir, tag);
	snprintf(root, sizeof(root), "%s%s", dest, prefix);
	snprintf(ex, sizeof(ex), "%s/ex-%s", dir, tag);
	snprintf(cmd, sizeof(cmd),
		 "{ cmake -S '%s' -B '%s' -DCMAKE_INSTALL_PREFIX='%s' -DRINGLOG_BUILD_TESTS=OFF "
		 "-DRINGLOG_BUILD_BENCH=OFF >/dev/null && cmake --build '%s' -j2 >/dev/null && "
		 "DESTDIR='%s' cmake --install '%s' >/dev/null; }",
		 RINGLOG_SOURCE_DIR, b, prefix, b, dest, b);
	must(cmd);

	/* Where the .pc went: lib/<multiarch>/pkgconfig for /usr on Debian. */
	snprintf(cmd, sizeof(cmd), "cd '%s' && find . -name ringlog.pc", root);
	cr_assert_eq(live_run(cmd, out, sizeof(out)), 0);
	out[strcspn(out, "\n")] = 0;
	cr_assert(out[0] == '.', "%s: no ringlog.pc installed under %s", prefix, root);
	snprintf(pcdir, sizeof(pcdir), "%s/%s", root, out + 2);
	*strrchr(pcdir, '/') = 0;
	cr_log_info("%s: %s", prefix, pcdir + strlen(dest));
	if (!strcmp(prefix, "/usr") && access("/etc/debian_version", F_OK) == 0 &&
	    (f = popen("cc -print-multiarch 2>/dev/null", "r"))) {
		char arch[64] = "", want[200];

		if (fgets(arch, sizeof(arch), f) && (arch[strcspn(arch, "\n")] = 0, arch[0])) {
			snprintf(want, sizeof(want), "/usr/lib/%s/pkgconfig", arch);
			cr_expect_str_eq(pcdir + strlen(dest), want);
		}
		pclose(f);
	}

	/* pkg-config's directories are the tree's, wherever it lies. */
	snprintf(cmd, sizeof(cmd),
		 "{ export PKG_CONFIG_PATH='%s'; "
		 "test \"$(readlink -f \"$(pkg-config --variable=includedir ringlog)\")\" = "
		 "\"$(readlink -f '%s/include')\" && "
		 "test \"$(readlink -f \"$(pkg-config --variable=libdir ringlog)\")\" = "
		 "\"$(readlink -f '%s/..')\" || { pkg-config --cflags --libs ringlog; false; }; }",
		 pcdir, root, pcdir);
	must(cmd);

	/* The example's own Makefile and CMakeLists.txt, on a copy of it. */
	snprintf(cmd, sizeof(cmd),
		 "{ cp -r '%s/client/example' '%s' && cd '%s' && "
		 "PKG_CONFIG_PATH='%s' make CFLAGS='-Wall -Wextra -Werror' && "
		 "cmake -S . -B build -DCMAKE_PREFIX_PATH='%s' -DCMAKE_C_FLAGS='-Wall -Wextra -Werror' && "
		 "cmake --build build && "
		 "test \"$(readlink -f \"$(sed -n 's/^ringlog_DIR:PATH=//p' build/CMakeCache.txt)\")\" = "
		 "\"$(readlink -f '%s/../cmake/ringlog')\"; }",
		 RINGLOG_SOURCE_DIR, ex, ex, pcdir, root, pcdir);
	must(cmd);
	snprintf(libdir, cap, "%s/..", pcdir);
}

/* The README's recipe, -DCMAKE_INSTALL_PREFIX=/usr, into a DESTDIR: the .pc
 * lies one directory deeper on Debian (lib/x86_64-linux-gnu/pkgconfig),
 * where a prefix of ${pcfiledir}/../.. gave -I/usr/lib/include. Then the
 * prefixes with a plain lib/. Not in the sanitizer build: the trees built
 * here are plain ones either way (about 30 s for the three). */
Test(service, a_destdir_install_builds_the_example_with_pkg_config_and_cmake, .timeout = 600)
{
	static const char *const prefixes[][2] = {
		{ "usr", "/usr" }, { "usr-local", "/usr/local" }, { "opt", "/opt/ringlog" },
	};
	enum { N = sizeof(prefixes) / sizeof(prefixes[0]) };
	char libdir[N][800], cmd[4000];
	struct live e;
	struct hello h = { 0 };
	struct live_read rd = { .ctx = &h, .on_event = on_hello };
	pid_t d;

	live_init(&e);
	for (int i = 0; i < N; i++)
		example_against_destdir(e.dir, prefixes[i][0], prefixes[i][1], libdir[i], sizeof(libdir[i]));
	d = live_daemon(&e, NULL);
	for (int i = 0; i < N; i++) {
		snprintf(cmd, sizeof(cmd), "{ cd '%s/ex-%s' && LD_LIBRARY_PATH='%s' ./example pkg-config && "
			 "./build/example cmake; }", e.dir, prefixes[i][0], libdir[i]);
		must(cmd);
	}
	live_daemon_stop(d);
	live_read_store(e.store, &rd);
	cr_expect_eq(h.pkgconfig, 3, "pkg-config builds' events stored: %d of 3", h.pkgconfig);
	cr_expect_eq(h.cmake, 3, "find_package builds' events stored: %d of 3", h.cmake);
	live_cleanup(&e);
}
#endif

/* ringlogd started as ringlogd.socket would: fd 3 listening, LISTEN_PID and
 * LISTEN_FDS set. */
static pid_t activated_daemon(const struct live *e, int lfd)
{
	pid_t pid = fork();

	cr_assert(pid >= 0);
	if (pid == 0) {
		char n[32];
		int fd = open(e->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

		if (fd >= 0) {
			dup2(fd, 2);
			dup2(fd, 1);
		}
		if (lfd != 3) {
			dup2(lfd, 3);
			close(lfd);
		}
		fcntl(3, F_SETFD, 0);
		snprintf(n, sizeof(n), "%d", (int)getpid());
		setenv("LISTEN_PID", n, 1);
		setenv("LISTEN_FDS", "1", 1);
		execl(RINGLOGD_PATH, "ringlogd", "--storage", e->store, "--socket", e->sock,
		      (char *)NULL);
		_exit(127);
	}
	return pid;
}

Test(service, socket_activation_takes_the_listening_socket_and_leaves_it)
{
	struct live e;
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	char cmd[1200], out[8192];
	struct stat st;
	pid_t d;
	int lfd, rc;

	live_init(&e);
	/* A program that starts before the daemon and connects to the
	 * socket systemd already listens on. */
	cr_assert(strlen(e.sock) < sizeof(a.sun_path));
	memcpy(a.sun_path, e.sock, strlen(e.sock) + 1);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert(lfd >= 0);
	cr_assert_eq(bind(lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	cr_assert_eq(listen(lfd, 16), 0);
	d = activated_daemon(&e, lfd);
	close(lfd);
	snprintf(cmd, sizeof(cmd), RINGLOG_CLI_PATH " emit Test.Activation Early n=1 2>&1");
	rc = live_run(cmd, out, sizeof(out));
	cr_expect_eq(rc, 0, "emit through the activated socket: %s", out);
	snprintf(cmd, sizeof(cmd), RINGLOG_CLI_PATH " status --json 2>&1");
	rc = live_run(cmd, out, sizeof(out));
	cr_expect_eq(rc, 0, "status through the activated socket: %s", out);
	live_daemon_stop(d);
	/* The socket is systemd's: the daemon must not remove it. */
	cr_expect_eq(stat(e.sock, &st), 0, "ringlogd removed the activated socket");

	/* Segments 0640 in a 0750 directory. */
	cr_expect_eq(stat(e.store, &st), 0);
	/* (02750 where a group ringlog-read exists: see the test below) */
	cr_expect_eq(st.st_mode & 0777, 0750, "storage_dir mode %o", st.st_mode & 07777);
	snprintf(cmd, sizeof(cmd), "stat -c %%a '%s'/*.rlseg | sort -u", e.store);
	live_run(cmd, out, sizeof(out));
	cr_expect_str_eq(out, "640\n", "segment modes: %s", out);

	/* A wrong descriptor is refused with a reason, not used. */
	live_log(&e, out, sizeof(out));
	{
		int p[2];
		pid_t bad;
		int stt;

		cr_assert_eq(pipe(p), 0);
		bad = activated_daemon(&e, p[0]);
		close(p[0]);
		close(p[1]);
		cr_assert_eq(waitpid(bad, &stt, 0), bad);
		cr_expect(WIFEXITED(stt) && WEXITSTATUS(stt) != 0, "ringlogd ran on a pipe as fd 3");
		live_log(&e, out, sizeof(out));
		cr_expect(strstr(out, "not a listening Unix stream socket"), "%s", out);
	}
	live_cleanup(&e);
}

/* ------------------------------------------------------------------------
 * Who may do what, with real users. Root only: it creates (and removes)
 * two groups and three users.
 */
#define W_GROUP "rltest-w"
#define R_GROUP "rltest-r"

static void drop_users(void)
{
	if (system("for u in rltest-none rltest-writer rltest-reader; do "
		   "userdel $u >/dev/null 2>&1; done; "
		   "groupdel " W_GROUP " >/dev/null 2>&1; groupdel " R_GROUP " >/dev/null 2>&1; true")) {
		/* best effort */
	}
}

/* The throw-away users: one in neither group, a writer, a reader; made
 * afresh (a failed run may have left them). Skips when not root. */
static void make_users(void)
{
	if (geteuid() != 0)
		cr_skip_test("needs root to create throw-away users and groups");
	if (!have("useradd") || !have("setpriv"))
		cr_skip_test("needs useradd (passwd) and setpriv (util-linux)");
	drop_users();
	must("groupadd " W_GROUP " && groupadd " R_GROUP " && "
	     "useradd -M -N -s /bin/sh rltest-none && "
	     "useradd -M -N -s /bin/sh -G " W_GROUP " rltest-writer && "
	     "useradd -M -N -s /bin/sh -G " R_GROUP " rltest-reader");
}

/* The throw-away users and groups (make_users()), and a daemon run by hand
 * as root on e with a config naming the groups (plus extra, JSON members
 * or ""). Skips when not root. */
static pid_t daemon_with_groups(struct live *e, const char *extra)
{
	char conf[400];
	FILE *f;

	make_users();
	live_init(e);
	chmod(e->dir, 0755); /* as /run/ringlog and /var/lib: others may look in */
	snprintf(conf, sizeof(conf), "%s/ringlogd.json", e->dir);
	f = fopen(conf, "w");
	cr_assert(f);
	fprintf(f, "{\"socket_group\": \"%s\", \"read_group\": \"%s\"%s}\n", W_GROUP, R_GROUP, extra);
	fclose(f);
	return live_daemon(e, "--config", conf, NULL);
}

/* Run the command line ARGS as user, with RINGLOG_SOCKET naming e's daemon;
 * stderr goes with stdout. */
static int cli_as(const struct live *e, const char *user, const char *args, char *out, size_t cap)
{
	char cmd[1400];

	snprintf(cmd, sizeof(cmd), "setpriv --reuid=%s --regid=$(id -g %s) --init-groups "
		 "env RINGLOG_SOCKET='%s' %s 2>&1", user, user, e->sock, args);
	return live_run(cmd, out, cap);
}

Test(service, writers_and_readers_are_told_apart_by_their_groups, .timeout = 180)
{
	struct live e;
	char cmd[1200], out[8192];
	pid_t d;
	int rc;

	/* others reach the socket; the daemon decides */
	d = daemon_with_groups(&e, ", \"socket_mode\": \"0666\"");

	/* Nobody in particular: may neither write nor read. */
	rc = cli_as(&e, "rltest-none", RINGLOG_CLI_PATH " emit Test.Access FromNobody n=1", out,
		    sizeof(out));
	cr_expect_neq(rc, 0, "a non-member's event was accepted: %s", out);
	cr_expect(strstr(out, "may not write events") && strstr(out, W_GROUP),
		  "the refusal does not say why: %s", out);
	rc = cli_as(&e, "rltest-none", RINGLOG_CLI_PATH " status", out, sizeof(out));
	cr_expect_neq(rc, 0, "a non-member read the status: %s", out);
	cr_expect(strstr(out, "may not read events"), "%s", out);

	/* A writer writes, but cannot tail. */
	rc = cli_as(&e, "rltest-writer", RINGLOG_CLI_PATH " emit Test.Access FromWriter n=2", out,
		    sizeof(out));
	cr_expect_eq(rc, 0, "a writer could not write: %s", out);
	rc = cli_as(&e, "rltest-writer", RINGLOG_CLI_PATH " tail", out, sizeof(out));
	cr_expect_neq(rc, 0, "a writer could tail: %s", out);
	cr_expect(strstr(out, "may not read events") && strstr(out, R_GROUP), "%s", out);
	/* ... and its status has no per-program detail. */
	rc = cli_as(&e, "rltest-writer", RINGLOG_CLI_PATH " status --json", out, sizeof(out));
	cr_expect_eq(rc, 0, "%s", out);
	cr_expect(strstr(out, "\"clients\": []"), "a writer saw other programs: %s", out);

	/* A reader reads (status with detail), but cannot write. */
	rc = cli_as(&e, "rltest-reader", RINGLOG_CLI_PATH " status --json", out, sizeof(out));
	cr_expect_eq(rc, 0, "a reader could not read the status: %s", out);
	cr_expect(strstr(out, "\"storage_dir\""), "%s", out);
	rc = cli_as(&e, "rltest-reader", "timeout --preserve-status -s INT -k 10 3 " RINGLOG_CLI_PATH
		    " tail --json", out, sizeof(out));
	cr_expect_eq(rc, 0, "a reader could not tail (exit %d): %s", rc, out);
	rc = cli_as(&e, "rltest-reader", RINGLOG_CLI_PATH " emit Test.Access FromReader n=3", out,
		    sizeof(out));
	cr_expect_neq(rc, 0, "a reader could write: %s", out);

	live_daemon_stop(d);
	live_log(&e, out, sizeof(out));
	cr_expect(strstr(out, "may not write events"), "the daemon's log says nothing: %s", out);
	snprintf(cmd, sizeof(cmd), RINGLOG_CLI_PATH " read --dir '%s'", e.store);
	live_run(cmd, out, sizeof(out));
	cr_expect(strstr(out, "FromWriter") && !strstr(out, "FromNobody") && !strstr(out, "FromReader"),
		  "store: %s", out);
	live_cleanup(&e);
	drop_users();
}

/* Issue 20, point 6: with the default socket_mode (the shipped config's, as
 * the socket unit's) a member of the read group only reaches the daemon:
 * with 0660 it could not connect at all and `status` said the daemon was
 * not running. Someone in neither group is told "access refused" and the
 * group to join, by every command. */
Test(service, with_the_default_socket_mode_readers_connect_and_others_learn_which_group,
     .timeout = 180)
{
	struct live e;
	char out[8192];
	pid_t d;
	int rc;

	d = daemon_with_groups(&e, "");
	rc = cli_as(&e, "rltest-writer", RINGLOG_CLI_PATH " emit Test.Access FromWriter n=1", out,
		    sizeof(out));
	cr_expect_eq(rc, 0, "a writer could not write: %s", out);

	rc = cli_as(&e, "rltest-reader", RINGLOG_CLI_PATH " status", out, sizeof(out));
	cr_expect_eq(rc, 0, "a reader could not read the status (exit %d): %s", rc, out);
	cr_expect(!strstr(out, "not running") && strstr(out, "write backend"),
		  "a reader was told ringlogd is down: %s", out);
	rc = cli_as(&e, "rltest-reader", RINGLOG_CLI_PATH " status --json", out, sizeof(out));
	cr_expect(rc == 0 && strstr(out, "\"clients\"") && !strstr(out, "\"down\""),
		  "a reader got no detail: %s", out);
	rc = cli_as(&e, "rltest-reader", "timeout --preserve-status -s INT -k 10 3 " RINGLOG_CLI_PATH
		    " tail -n 10 --json", out, sizeof(out));
	cr_expect_eq(rc, 0, "a reader could not tail (exit %d): %s", rc, out);
	cr_expect(strstr(out, "FromWriter"), "the reader's tail missed the event: %s", out);

	rc = cli_as(&e, "rltest-none", RINGLOG_CLI_PATH " status", out, sizeof(out));
	cr_expect_neq(rc, 0, "%s", out);
	cr_expect(strstr(out, "access refused") && strstr(out, "join") && strstr(out, R_GROUP),
		  "status does not say access refused and which group: %s", out);
	cr_expect(!strstr(out, "not running"), "status says the running daemon is down: %s", out);
	rc = cli_as(&e, "rltest-none", RINGLOG_CLI_PATH " tail", out, sizeof(out));
	cr_expect_neq(rc, 0, "%s", out);
	cr_expect(strstr(out, "access refused") && strstr(out, R_GROUP),
		  "tail does not say access refused and which group: %s", out);
	rc = cli_as(&e, "rltest-none", RINGLOG_CLI_PATH " emit Test.Access FromNobody n=2", out,
		    sizeof(out));
	cr_expect_neq(rc, 0, "%s", out);
	cr_expect(strstr(out, "access refused") && strstr(out, W_GROUP) &&
		  strstr(out, "not stored"), "emit does not say access refused and which group: %s",
		  out);
	live_daemon_stop(d);
	live_cleanup(&e);
	drop_users();
}

/* An administrator's socket_mode 0660: the socket's file refuses readers
 * and strangers before the daemon sees them. Every command says "access
 * refused by" the socket and the group to join; status never calls the
 * daemon down, and shows the storage directory's figures when it may. */
Test(service, a_socket_that_refuses_by_its_mode_says_so_and_never_calls_the_daemon_down,
     .timeout = 180)
{
	struct live e;
	char cmd[600], out[8192];
	pid_t d;
	int rc;

	d = daemon_with_groups(&e, ", \"socket_mode\": \"0660\"");
	rc = cli_as(&e, "rltest-writer", RINGLOG_CLI_PATH " emit Test.Access FromWriter n=1", out,
		    sizeof(out));
	cr_expect_eq(rc, 0, "a writer could not write: %s", out);

	snprintf(cmd, sizeof(cmd), RINGLOG_CLI_PATH " status --dir '%s'", e.store);
	rc = cli_as(&e, "rltest-reader", cmd, out, sizeof(out));
	cr_expect(strstr(out, "access refused by") && strstr(out, e.sock) &&
		  strstr(out, "join group " W_GROUP) && strstr(out, "0660"),
		  "status does not say the socket refused and which group: %s", out);
	cr_expect(!strstr(out, "not running"), "status says the running daemon is down: %s", out);
	cr_expect(strstr(out, "figures read from the storage directory") && strstr(out, "segments"),
		  "no figures from the (readable) storage directory: %s", out);
	snprintf(cmd, sizeof(cmd), RINGLOG_CLI_PATH " status --json --dir '%s'", e.store);
	rc = cli_as(&e, "rltest-reader", cmd, out, sizeof(out));
	cr_expect(strstr(out, "\"refused\"") && !strstr(out, "\"down\""), "%s", out);
	rc = cli_as(&e, "rltest-reader", RINGLOG_CLI_PATH " tail", out, sizeof(out));
	cr_expect_neq(rc, 0, "%s", out);
	cr_expect(strstr(out, "access refused by") && strstr(out, "join group " W_GROUP) &&
		  !strstr(out, "is the service running"), "tail: %s", out);

	rc = cli_as(&e, "rltest-none", cmd, out, sizeof(out));
	cr_expect_neq(rc, 0, "%s", out);
	cr_expect(strstr(out, "access refused by") && strstr(out, "join group " W_GROUP) &&
		  !strstr(out, "not running") && strstr(out, "nor may this user read"),
		  "status: %s", out);
	rc = cli_as(&e, "rltest-none", RINGLOG_CLI_PATH " emit Test.Access FromNobody n=2", out,
		    sizeof(out));
	cr_expect_neq(rc, 0, "%s", out);
	cr_expect(strstr(out, "access refused by") && strstr(out, "join group " W_GROUP) &&
		  strstr(out, "not stored"), "emit: %s", out);
	live_daemon_stop(d);
	live_cleanup(&e);
	drop_users();
}

/* socket_group or read_group naming no group on this host would grant
 * nothing, silently: a config error at the key, as --check-config shows. */
Test(service, a_group_that_does_not_exist_is_a_config_error)
{
	struct live e;
	char conf[400], cmd[1000], out[8192];
	int rc;

	live_init(&e);
	snprintf(conf, sizeof(conf), "%s/ringlogd.json", e.dir);
	live_write_file(conf, "{\"socket_group\": \"rltest-nosuch-w\",\n"
			      " \"read_group\": \"rltest-nosuch-r\"}\n");
	snprintf(cmd, sizeof(cmd), RINGLOGD_PATH " --config '%s' --check-config 2>&1", conf);
	rc = live_run(cmd, out, sizeof(out));
	cr_expect_eq(rc, 2, "--check-config accepted groups that do not exist (exit %d): %s", rc, out);
	snprintf(cmd, sizeof(cmd), "%s:1:2: \"socket_group\": no group \"rltest-nosuch-w\" on this "
		 "host", conf);
	cr_expect(strstr(out, cmd), "want %s\ngot: %s", cmd, out);
	snprintf(cmd, sizeof(cmd), "%s:2:2: \"read_group\": no group \"rltest-nosuch-r\" on this "
		 "host", conf);
	cr_expect(strstr(out, cmd), "want %s\ngot: %s", cmd, out);
	/* A group that exists everywhere is fine. */
	live_write_file(conf, "{\"socket_group\": \"root\", \"read_group\": \"root\"}\n");
	snprintf(cmd, sizeof(cmd), RINGLOGD_PATH " --config '%s' --check-config 2>&1", conf);
	rc = live_run(cmd, out, sizeof(out));
	cr_expect_eq(rc, 0, "%s", out);
	live_cleanup(&e);
}

/* Run by hand as root, ringlogd creates its storage directory for the read
 * group, as tmpfiles and StateDirectory= make the packaged one: readers may
 * `ringlog read --dir` it. */
Test(service, a_storage_dir_made_by_hand_belongs_to_the_read_group, .timeout = 180)
{
	struct live e;
	char cmd[600], out[8192];
	struct stat st;
	pid_t d;
	int rc;

	d = daemon_with_groups(&e, "");
	rc = cli_as(&e, "rltest-writer", RINGLOG_CLI_PATH " emit Test.Access FromWriter n=1", out,
		    sizeof(out));
	cr_expect_eq(rc, 0, "a writer could not write: %s", out);
	live_daemon_stop(d);

	cr_assert_eq(stat(e.store, &st), 0);
	snprintf(cmd, sizeof(cmd), "getent group " R_GROUP " | cut -d: -f3");
	live_run(cmd, out, sizeof(out));
	cr_expect_eq(st.st_gid, (gid_t)strtoul(out, NULL, 10), "storage_dir group %u, not " R_GROUP,
		     (unsigned)st.st_gid);
	cr_expect_eq(st.st_mode & 07777, 02750, "storage_dir mode %o", st.st_mode & 07777);
	snprintf(cmd, sizeof(cmd), "stat -c '%%a %%G' '%s'/*.rlseg | sort -u", e.store);
	live_run(cmd, out, sizeof(out));
	cr_expect_str_eq(out, "640 " R_GROUP "\n", "segments: %s", out);

	snprintf(cmd, sizeof(cmd), RINGLOG_CLI_PATH " read --dir '%s'", e.store);
	rc = cli_as(&e, "rltest-reader", cmd, out, sizeof(out));
	cr_expect(rc == 0 && strstr(out, "FromWriter"), "a reader could not read the store (exit "
		  "%d): %s", rc, out);
	rc = cli_as(&e, "rltest-none", cmd, out, sizeof(out));
	cr_expect(rc != 0 && !strstr(out, "FromWriter"), "anyone could read the store: %s", out);
	live_cleanup(&e);
	drop_users();
}

/* Under systemd, stderr is a journal stream (JOURNAL_STREAM set): each line
 * carries its syslog priority so journalctl shows levels. */
Test(service, log_lines_carry_journal_priorities_under_systemd)
{
	struct live e;
	char log[8192];
	pid_t d;

	live_init(&e);
	setenv("JOURNAL_STREAM", "8:12345", 1); /* inherited by the daemon only */
	d = live_daemon(&e, NULL);
	unsetenv("JOURNAL_STREAM");
	live_daemon_stop(d);
	live_log(&e, log, sizeof(log));
	cr_expect(strstr(log, "<5>ringlogd: listening on "), "no notice-level prefix:\n%s", log);
	cr_expect(strstr(log, "<5>ringlogd: stopped"), "no prefix on the last line:\n%s", log);
	live_cleanup(&e);
}

/* --syslog: lines go to /dev/log as RFC 3164 datagrams with facility daemon,
 * and nothing goes to stderr. The test machine has no syslog daemon, so the
 * daemon runs in a private mount namespace whose /dev holds the test's own
 * datagram socket as "log" (and /dev/null). */
Test(service, syslog_gets_the_lines_with_facility_and_priority)
{
	struct live e;
	char dev[320], logsock[340], null[340], log[8192], got[8192] = "";
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = 0, .tv_usec = 200000 };
	size_t used = 0;
	pid_t d;
	int s, st;

	if (geteuid() != 0)
		cr_skip_test("needs root for a private mount namespace with its own /dev/log");
	live_init(&e);
	snprintf(dev, sizeof(dev), "%s/dev", e.dir);
	snprintf(logsock, sizeof(logsock), "%s/log", dev);
	snprintf(null, sizeof(null), "%s/null", dev);
	cr_assert_eq(mkdir(dev, 0755), 0);
	cr_assert(strlen(logsock) < sizeof(a.sun_path));
	memcpy(a.sun_path, logsock, strlen(logsock) + 1);
	s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	cr_assert(s >= 0);
	cr_assert_eq(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
	cr_assert_eq(setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
	close(open(null, O_WRONLY | O_CREAT | O_CLOEXEC, 0666));

	d = fork();
	cr_assert(d >= 0);
	if (d == 0) {
		int fd = open(e.log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);

		if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
			_exit(126);
		if (unshare(CLONE_NEWNS) < 0 ||
		    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
		    mount("/dev/null", null, NULL, MS_BIND, NULL) < 0 ||
		    mount(dev, "/dev", NULL, MS_BIND, NULL) < 0) {
			dprintf(2, "test: private /dev: %s\n", strerror(errno));
			_exit(125);
		}
		execl(RINGLOGD_PATH, "ringlogd", "--storage", e.store, "--socket", e.sock,
		      "--syslog", (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 200 && !strstr(got, "listening on "); i++) {
		ssize_t n = recv(s, got + used, sizeof(got) - used - 2, 0);

		if (n > 0) {
			used += (size_t)n;
			got[used++] = '\n';
			got[used] = 0;
		}
		cr_assert_neq(waitpid(d, &st, WNOHANG), d, "ringlogd exited (status %d)", st);
	}
	kill(d, SIGTERM);
	cr_assert_eq(waitpid(d, &st, 0), d);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);
	for (ssize_t n; !strstr(got, "stopped") && (n = recv(s, got + used, sizeof(got) - used - 2, 0)) > 0;) {
		used += (size_t)n;
		got[used++] = '\n';
		got[used] = 0;
	}
	close(s);
	live_log(&e, log, sizeof(log));
	/* LOG_DAEMON (3 << 3) + LOG_NOTICE (5) = 29; ident with the pid. */
	cr_expect(strstr(got, "<29>") && strstr(got, "ringlogd[") &&
		  strstr(got, "listening on ") && strstr(got, "stopped"),
		  "syslog received:\n%s", got);
	cr_expect(!strstr(log, "listening on"), "--syslog still wrote to stderr:\n%s", log);
	live_cleanup(&e);
}
