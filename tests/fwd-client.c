/* tests/fwd-client.c - the program the user_events kernel test drives
 * (tests/kernel/guest-test.sh), one command per line on stdin:
 *
 *   emit N          N "Info" events (level 4, keyword 0x1, every field
 *                   type) and N "Detail" events (level 5, keyword 0x2,
 *                   disabled by default, with an activity id and opcode
 *                   start); prints "emitted INFO DETAIL", the number that
 *                   passed the enablement check, after ringlog_flush
 *   wait-detail V   waits up to 10 s until Detail's enablement is V (0/1);
 *                   prints "detail V" or "detail-timeout"
 *   quit
 *
 * Detail is never emitted before a tracer enables it: only the event
 * section (registered with the provider) tells the daemon it exists.
 */
#define _GNU_SOURCE
#include <ringlog.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

RINGLOG_PROVIDER_DEFINE(fwd_provider, "Test.Fwd");

int main(void)
{
	char line[128];
	static const unsigned char blob[3] = { 0xde, 0xad, 0x01 };
	struct ringlog_activity act = { { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 } };

	setvbuf(stdout, NULL, _IOLBF, 0);
	while (fgets(line, sizeof(line), stdin)) {
		unsigned long n;

		if (sscanf(line, "emit %lu", &n) == 1) {
			unsigned long info = 0, detail = 0;

			for (unsigned long i = 0; i < n; i++) {
				if (RINGLOG_ENABLED(fwd_provider, RINGLOG_LEVEL_INFO, 0x1))
					info++;
				RINGLOG_EVENT(fwd_provider, "Info", RINGLOG_LEVEL_INFO, 0x1,
					      RINGLOG_I8("i8", -8), RINGLOG_I16("i16", -16),
					      RINGLOG_I32("i32", -32), RINGLOG_I64("i64", -64),
					      RINGLOG_U8("u8", 8), RINGLOG_U16("u16", 16),
					      RINGLOG_U32("u32", 32), RINGLOG_U64("seq", i),
					      RINGLOG_F64("f64", 0.5), RINGLOG_BOOL("ok", 1),
					      RINGLOG_STR("s", "hello"), RINGLOG_BLOB("b", blob, 3),
					      RINGLOG_HEX32("hx", 0xbeef), RINGLOG_PID("pid", getpid()),
					      RINGLOG_ERRNO("err", 2), RINGLOG_TIME("t", 1));
				if (RINGLOG_ENABLED(fwd_provider, RINGLOG_LEVEL_VERBOSE, 0x2))
					detail++;
				RINGLOG_EVENT_EX(fwd_provider, RINGLOG_OPCODE_START, &act, "Detail",
						 RINGLOG_LEVEL_VERBOSE, 0x2, RINGLOG_U64("seq", i));
			}
			ringlog_flush(5000);
			printf("emitted %lu %lu\n", info, detail);
		} else if (sscanf(line, "wait-detail %lu", &n) == 1) {
			int i;

			for (i = 0; i < 1000; i++) {
				if (RINGLOG_ENABLED(fwd_provider, RINGLOG_LEVEL_VERBOSE, 0x2) == (n != 0))
					break;
				usleep(10000);
			}
			if (i < 1000)
				printf("detail %lu\n", n);
			else
				printf("detail-timeout\n");
		} else if (!strncmp(line, "quit", 4)) {
			break;
		}
	}
	ringlog_close(5000);
	return 0;
}
