/* daemon/log.c - the daemon's own diagnostics: one function, levels, a rate
 * limit.
 *
 * Messages go to stderr (with a "<N>" priority prefix when stderr is the
 * journal, so journalctl shows levels), or to syslog with --syslog (on
 * Windows: the Application event log, source "ringlogd"). They
 * never enter the event store: a daemon that logged into its own rings
 * could feed itself forever.
 *
 * Each message format (the call site) has a bucket of 10 lines that refills
 * at one line per second, so a hostile client that triggers the same
 * warning in a loop costs a line a second, not a flooded journal; when a
 * format speaks again after being held back, the line says how many were
 * suppressed.
 */
#define _GNU_SOURCE
#include "log.h"
#include "clock.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _WIN32
#include <windows.h>
#endif

#ifdef _WIN32
static HANDLE event_log;
#define openlog(ident, opt, fac) (event_log = RegisterEventSourceA(NULL, ident))
/* Event types by level: errors, warnings, the rest information. */
static void syslog(int level, const char *fmt, const char *msg)
{
	WORD type = level <= LOG_ERR ? EVENTLOG_ERROR_TYPE :
		    level == LOG_WARNING ? EVENTLOG_WARNING_TYPE : EVENTLOG_INFORMATION_TYPE;

	(void)fmt;
	if (event_log)
		ReportEventA(event_log, type, 0, 0, NULL, 1, 0, &msg, NULL);
	else
		fprintf(stderr, "ringlogd: %s\n", msg);
}
#endif

#define BURST 10
#define SLOTS 64

static struct bucket {
	const char *fmt;
	double tokens;
	uint64_t last_ns;
	uint64_t suppressed;
} buckets[SLOTS];

static int max_level = LOG_INFO;
static bool use_syslog, journal;

void d_log_init(bool to_syslog, bool verbose)
{
	use_syslog = to_syslog;
	max_level = verbose ? LOG_DEBUG : LOG_INFO;
	/* systemd sets JOURNAL_STREAM when stderr is a journal stream. */
	journal = getenv("JOURNAL_STREAM") != NULL;
	if (use_syslog)
		openlog("ringlogd", LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

/* Whether this format may speak now; *held gets how many were held back. */
static bool admit(const char *fmt, uint64_t *held)
{
	struct bucket *b = &buckets[((uintptr_t)fmt >> 3) % SLOTS];
	uint64_t now = d_now(CLOCK_MONOTONIC);

	if (b->fmt != fmt) { /* a new format takes the slot over */
		*b = (struct bucket){ .fmt = fmt, .tokens = BURST, .last_ns = now };
	} else {
		b->tokens += (double)(now - b->last_ns) / 1e9;
		if (b->tokens > BURST)
			b->tokens = BURST;
		b->last_ns = now;
	}
	if (b->tokens < 1) {
		b->suppressed++;
		return false;
	}
	b->tokens -= 1;
	*held = b->suppressed;
	b->suppressed = 0;
	return true;
}

void d_log(int level, const char *fmt, ...)
{
	static const char *const names[] = { "emerg", "alert", "crit", "error",
					     "warning", "notice", "info", "debug" };
	char msg[1024];
	uint64_t held = 0;
	va_list ap;

	if (level > max_level || !admit(fmt, &held))
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (use_syslog) {
		syslog(level, "%s", msg);
		if (held) {
			snprintf(msg, sizeof(msg), "%llu similar messages were suppressed",
				 (unsigned long long)held);
			syslog(level, "%s", msg);
		}
		return;
	}
	if (journal)
		fprintf(stderr, "<%d>", level);
	fprintf(stderr, "ringlogd: %s%s%s\n", level <= LOG_WARNING ? names[level & 7] : "",
		level <= LOG_WARNING ? ": " : "", msg);
	if (held)
		fprintf(stderr, "ringlogd: (%llu similar messages were suppressed)\n",
			(unsigned long long)held);
}
