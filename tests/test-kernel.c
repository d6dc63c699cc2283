/* tests/test-kernel.c - forwarding to user_events, checked on a real
 * kernel: tests/kernel/run.sh boots a small kernel with CONFIG_USER_EVENTS
 * under qemu and runs ringlogd, a client and a tracer inside it (see
 * tests/kernel/guest-test.sh for the checks). Skips, with the reason,
 * where the kernel cannot be built or qemu is missing.
 */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

Test(kernel, user_events_forwarding_on_a_real_kernel, .timeout = 1500)
{
	static char out[1 << 17];
	size_t n = 0;
	FILE *p = popen(RINGLOG_SOURCE_DIR "/tests/kernel/run.sh " RINGLOG_BUILD_DIR " 2>&1", "r");
	int st, rc;

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
	cr_assert_eq(rc, 0, "the kernel test failed (exit %d):\n%s", rc, out);
}
