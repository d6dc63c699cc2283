/* tests/test-windows.c - the Windows build, run under Wine from the Linux
 * suite. scripts/test.sh cross-builds it (scripts/win-build.sh) into
 * build-win/ when gcc-mingw-w64-x86-64 is installed; without that build, or
 * without wine, every test here skips and says which is missing.
 *
 * What runs: the Windows programs' own unit tests (tests/win/test-win.c:
 * rings in duplicated file mappings, the pipe handover between processes,
 * ringlog.dll in a program against a pipe server, the daemon's pipe
 * listener, the service control manager code, the IOCP write backend,
 * the ETW forwarder, the TraceLogging encoder through the ETW calls,
 * CRC32C), and ringlog.exe read on stores written by the Linux
 * daemon, whose output must equal the Linux reader's byte for byte, damage
 * reports and exit codes included.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "live.h"

#define CLI RINGLOG_CLI_PATH
#define WIN_BUILD RINGLOG_SOURCE_DIR "/build-win"
#define WIN_READER WIN_BUILD "/client/ringlog.exe"
#define WIN_TESTS WIN_BUILD "/tests/win/test-win.exe"
/* One Wine prefix for the whole suite: creating one takes ~10 s. */
#define WINE_ENV "TZ=UTC WINEDEBUG=-all WINEPREFIX=" WIN_BUILD "/wineprefix "
#define WINE WINE_ENV "wine "

/* The tests run in parallel, and a Wine prefix's first use creates it:
 * two programs doing that at once restart each other's wineserver
 * ("recvmsg: Connection reset by peer") and print "configuration has been
 * updated" into the output under test. So the prefix is made once, under a
 * lock, before any test program runs; then one wineserver is kept up for
 * the run, so that it does not exit, idle, just as the next program
 * connects. */
static void wine_prefix_ready(void)
{
	char out[4096];
	int lock;

	mkdir(WIN_BUILD "/wineprefix", 0755);
	lock = open(WIN_BUILD "/wineprefix.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	cr_assert_geq(lock, 0, "cannot open %s/wineprefix.lock", WIN_BUILD);
	cr_assert_eq(flock(lock, LOCK_EX), 0);
	if (access(WIN_BUILD "/wineprefix/.ringlog-ready", F_OK)) {
		cr_assert_eq(live_run(WINE_ENV "wineboot --init 2>&1 && " WINE_ENV "wineserver -w "
				      "2>&1", out, sizeof(out)), 0,
			     "creating the Wine prefix %s/wineprefix failed:\n%s", WIN_BUILD, out);
		close(open(WIN_BUILD "/wineprefix/.ringlog-ready", O_WRONLY | O_CREAT | O_CLOEXEC,
			   0644));
	}
	/* exits 2, harmlessly, when the other test already started it */
	live_run(WINE_ENV "wineserver -p30 >/dev/null 2>&1 </dev/null", out, sizeof(out));
	flock(lock, LOCK_UN);
	close(lock);
}

static void need_windows_build(void)
{
	char out[256];

	if (access(WIN_READER, R_OK) || access(WIN_TESTS, R_OK))
		cr_skip_test("no Windows build in %s: install gcc-mingw-w64-x86-64 and run "
			     "scripts/win-build.sh (scripts/test.sh does both as root)", WIN_BUILD);
	if (live_run("command -v wine", out, sizeof(out)) != 0)
		cr_skip_test("wine is not installed (Debian package wine): the Windows programs "
			     "cannot run here");
	wine_prefix_ready();
}

static void must_run(const char *cmd)
{
	char out[4096];

	cr_assert_eq(live_run(cmd, out, sizeof(out)), 0, "`%s`:\n%s", cmd, out);
}

Test(windows, the_windows_unit_tests_pass_under_wine, .timeout = 300)
{
	static char out[16384];
	int rc;

	need_windows_build();
	rc = live_run(WINE WIN_TESTS " 2>&1", out, sizeof(out));
	cr_log_info("test-win.exe:\n%s", out);
	cr_expect_eq(rc, 0, "test-win.exe exited %d:\n%s", rc, out);
	cr_expect(strstr(out, " checks, 0 failed") != NULL, "%s", out);
	cr_expect(strstr(out, "ring: 2000000 records through a duplicated file mapping, in order"),
		  "%s", out);
	/* each part said it ran, so that none can pass by being skipped */
	cr_expect(strstr(out, "peer: pid ") && strstr(out, "3 bad handovers refused"), "%s", out);
	cr_expect(strstr(out, "dll: emit-win.exe (ringlog.dll) handed over 4 rings by handle; "
			      "80000 events in order"), "%s", out);
	cr_expect(strstr(out, "iocp: 32 chunks of 64 KiB written out of order, read back intact"),
		  "%s", out);
	cr_expect(strstr(out, "etw forwarder: providers shared by their events"), "%s", out);
	cr_expect(strstr(out, "service: installed, started (running), stopped (exit code 7 through "
			      "the SCM), removed"), "%s", out);
	cr_expect(strstr(out, "pipe listener: 3 clients served at once through uv_pipe_open"), "%s",
		  out);
}

/* Both readers on the same input: same stdout, stderr and exit status. */
static void expect_same_reading(const struct live *e, const char *args, int want_rc)
{
	static char lin[4 << 20], win[4 << 20], lerr[8192], werr[8192];
	char cmd[2048];
	int lrc, wrc;

	snprintf(cmd, sizeof(cmd), "TZ=UTC " CLI " read %s 2>'%s/lerr'", args, e->dir);
	lrc = live_run(cmd, lin, sizeof(lin));
	snprintf(cmd, sizeof(cmd), WINE WIN_READER " read %s 2>'%s/werr'", args, e->dir);
	wrc = live_run(cmd, win, sizeof(win));
	snprintf(cmd, sizeof(cmd), "cat '%s/lerr'", e->dir);
	live_run(cmd, lerr, sizeof(lerr));
	snprintf(cmd, sizeof(cmd), "cat '%s/werr'", e->dir);
	live_run(cmd, werr, sizeof(werr));
	cr_expect_eq(lrc, want_rc, "linux reader exit %d for `read %s`: %s", lrc, args, lerr);
	cr_expect_eq(wrc, lrc, "ringlog.exe exit %d, linux %d, for `read %s`: %s", wrc, lrc, args,
		     werr);
	cr_expect_gt(strlen(lin), 0);
	cr_expect(strlen(lin) < sizeof(lin) - 1, "output larger than the test's buffer");
	cr_expect_str_eq(win, lin, "stdout differs for `read %s`", args);
	cr_expect_str_eq(werr, lerr, "stderr differs for `read %s`", args);
}

#define ALL_TYPES                                                                             \
	"i8:i8=-8 i16:i16=-16 i32:i32=-32 i64:i64=-64 u8:u8=255 u16:u16=65535 u32:u32=32 "    \
	"u64:u64=18446744073709551615 f:f64=1.5 nan:f64=nan b:bool=true "                     \
	"s:str='hi \"there\" \xc3\xa9\t' h:hex=255 p:pid=42 e:errno=110 t:time=1700000000123456789 " \
	"d:blob=00ff10 z:blob= n=5 x=2.25 w=word"

Test(windows, the_windows_reader_prints_what_the_linux_reader_prints, .timeout = 600)
{
	struct live e;
	char cmd[1400], seg[600], bad[600];
	const char *emitter[] = { EMITTER_PATH, "4", "1500", NULL };
	pid_t d, p;
	FILE *f;

	need_windows_build();
	live_init(&e);
	d = live_daemon(&e, NULL);
	snprintf(cmd, sizeof(cmd), CLI " emit Golden.Types All --level warning --keyword 0x4 "
		 ALL_TYPES);
	must_run(cmd);
	p = live_spawn(emitter, NULL, "/dev/null");
	live_wait_ok(p, "test-emitter");
	must_run(CLI " emit Golden.Types Last why=done");
	live_daemon_stop(d);

	/* the whole store, text and JSON, and filters (globs, level, time) */
	snprintf(cmd, sizeof(cmd), "--dir '%s'", e.store);
	expect_same_reading(&e, cmd, 0);
	snprintf(cmd, sizeof(cmd), "--json --dir '%s'", e.store);
	expect_same_reading(&e, cmd, 0);
	snprintf(cmd, sizeof(cmd), "--provider 'Golden.*' --level warn --dir '%s'", e.store);
	expect_same_reading(&e, cmd, 0);
	snprintf(cmd, sizeof(cmd), "--event Tick --since 2000-01-01T00:00:00Z --json --dir '%s'",
		 e.store);
	expect_same_reading(&e, cmd, 0);

	/* a damaged copy: a flipped byte in the middle, the end cut off */
	snprintf(cmd, sizeof(cmd), "ls '%s'/*.rlseg | head -1", e.store);
	cr_assert_eq(live_run(cmd, seg, sizeof(seg)), 0);
	seg[strcspn(seg, "\n")] = 0;
	snprintf(bad, sizeof(bad), "%s/damaged.rlseg", e.dir);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", seg, bad);
	must_run(cmd);
	f = fopen(bad, "r+b");
	cr_assert(f);
	fseek(f, 0, SEEK_END);
	{
		long size = ftell(f);
		int ch;

		fseek(f, size / 2, SEEK_SET);
		ch = fgetc(f);
		fseek(f, size / 2, SEEK_SET);
		fputc(ch ^ 0x40, f);
		fclose(f);
		cr_assert_eq(truncate(bad, size - 1000), 0);
	}
	snprintf(cmd, sizeof(cmd), "'%s'", bad);
	expect_same_reading(&e, cmd, 4);
	live_cleanup(&e);
}
