/* tests/test-kernel.c - forwarding to user_events, checked on a real
 * kernel: tests/kernel/run.sh boots a small kernel with CONFIG_USER_EVENTS
 * under qemu and runs ringlogd, a client and a tracer inside it (see
 * tests/kernel/guest-test.sh for the checks), and the slow-disk fault test,
 * whose delay target this machine's kernel may not have. Skips, with the
 * reason, where the kernel cannot be built or qemu is missing.
 */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

/* Boot the test kernel with tests/kernel/SCRIPT as the guest's test. */
static void run_guest(const char *script)
{
	static char out[1 << 17];
	char cmd[1024];
	size_t n = 0;
	FILE *p;
	int st, rc;

	snprintf(cmd, sizeof(cmd), RINGLOG_SOURCE_DIR "/tests/kernel/run.sh " RINGLOG_BUILD_DIR " %s 2>&1",
		 script);
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
	rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	fprintf(stderr, "%s", out);
	if (rc == 77) {
		const char *why = strstr(out, "SKIP: ");

		cr_skip_test("%s", why ? why + 6 : "tests/kernel/run.sh cannot run here");
	}
	cr_assert_eq(rc, 0, "the kernel test %s failed (exit %d):\n%s", script, rc, out);
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
