/* tests/test-kernel.c - forwarding to user_events, checked on a real
 * kernel: tests/kernel/run.sh boots a small kernel with CONFIG_USER_EVENTS
 * under qemu and runs ringlogd, a client and a tracer inside it (see
 * tests/kernel/guest-test.sh for the checks), the slow-disk fault test,
 * whose delay target this machine's kernel may not have, and a boot from a
 * checkout under /tmp (guest-paths.sh). Skips, with the reason, where the
 * kernel cannot be built or qemu is missing.
 */
#define _GNU_SOURCE
#include <criterion/criterion.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char out[1 << 17];

/* Boot the test kernel with SRC/tests/kernel/SCRIPT as the guest's test on
 * BUILD: run.sh's exit status, its output in out[]. */
static int boot(const char *src, const char *build, const char *script)
{
	char cmd[1024];
	size_t n = 0;
	FILE *p;
	int st;

	snprintf(cmd, sizeof(cmd), "'%s/tests/kernel/run.sh' '%s' %s 2>&1", src, build, script);
	p = popen(cmd, "r");
	cr_assert(p);
	while (n < sizeof(out) - 1) {
		size_t k = fread(out + n, 1, sizeof(out) - 1 - n, p);

		if (k == 0)
			break;
		n += k;
	}
	out[n] = 0;
	st = pclose(p);
	fprintf(stderr, "%s", out);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* run.sh's verdict: 0 passes, 77 skips with its reason, else fails. */
static void verdict(const char *script, int rc)
{
	if (rc == 77) {
		const char *why = strstr(out, "SKIP: ");

		cr_skip_test("%s", why ? why + 6 : "tests/kernel/run.sh cannot run here");
	}
	cr_assert_eq(rc, 0, "the kernel test %s failed (exit %d):\n%s", script, rc, out);
}

/* Boot the test kernel with tests/kernel/SCRIPT as the guest's test. */
static void run_guest(const char *script)
{
	verdict(script, boot(RINGLOG_SOURCE_DIR, RINGLOG_BUILD_DIR, script));
}

Test(kernel, user_events_forwarding_on_a_real_kernel, .timeout = 1500)
{
	run_guest("guest-test.sh");
}

/* The store on a device-mapper delay target: see guest-slow-disk.sh. */
Test(kernel, a_slow_disk_bounds_memory_counts_loss_and_never_blocks_programs, .timeout = 1500)
{
	run_guest("guest-slow-disk.sh");
}

/* The guest's scratch is a tmpfs; over /tmp it hid a checkout in /tmp/x.
 * tests/kernel copied under /tmp and the programs run.sh needs under /run
 * (where the scratch goes first; /tmp again if /run is not writable):
 * guest-paths.sh checks the guest sees both and has its scratch elsewhere. */
Test(kernel, the_guest_sees_a_checkout_under_tmp_and_a_build_under_run, .timeout = 600)
{
	char src[64] = "/tmp/ringlog-kernel-src-XXXXXX";
	char build[64] = "/run/ringlog-kernel-build-XXXXXX";
	char cmd[1024];
	int rc;

	if (access("/run", W_OK) != 0)
		memcpy(build, "/tmp", 4);
	cr_assert(mkdtemp(src), "mkdtemp %s: %s", src, strerror(errno));
	cr_assert(mkdtemp(build), "mkdtemp %s: %s", build, strerror(errno));
	snprintf(cmd, sizeof(cmd),
		 "mkdir -p '%s/tests' '%s/daemon' '%s/client' '%s/tests' && "
		 "cp -r '" RINGLOG_SOURCE_DIR "/tests/kernel' '%s/tests/' && "
		 "cp '" RINGLOG_BUILD_DIR "/daemon/ringlogd' '%s/daemon/' && "
		 "cp '" RINGLOG_BUILD_DIR "/client/ringlog' '%s/client/' && "
		 "cp '" RINGLOG_BUILD_DIR "/tests/test-fwd-client' '" RINGLOG_BUILD_DIR
		 "/tests/test-emitter' '%s/tests/'",
		 src, build, build, build, src, build, build, build);
	rc = system(cmd);
	if (rc == 0)
		rc = boot(src, build, "guest-paths.sh");
	else
		snprintf(out, sizeof(out), "`%s` failed\n", cmd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s'", src, build);
	cr_expect_eq(system(cmd), 0);
	verdict("guest-paths.sh", rc);
}
