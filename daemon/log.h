/* daemon/log.h - the daemon's own diagnostics (log.c): stderr, or syslog
 * (the Application event log on Windows) with --syslog; never the event
 * store, which a daemon logging into its own rings could feed forever.
 * Levels are <syslog.h>'s: LOG_ERR .. LOG_DEBUG. Rate-limited per call
 * site (format string). */
#ifndef RINGLOG_DAEMON_LOG_H
#define RINGLOG_DAEMON_LOG_H

#include <stdbool.h>

#ifdef _WIN32
/* The daemon's log levels, as <syslog.h> numbers them. */
enum { LOG_ERR = 3, LOG_WARNING = 4, LOG_NOTICE = 5, LOG_INFO = 6, LOG_DEBUG = 7 };
#else
#include <syslog.h>
#endif

void d_log_init(bool to_syslog, bool verbose);
void d_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif /* RINGLOG_DAEMON_LOG_H */
