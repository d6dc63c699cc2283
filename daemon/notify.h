/* daemon/notify.h - readiness and status for the service manager: the
 * sd_notify protocol without libsystemd (unix/notify.c). On Windows the
 * service control manager is told by win/service.c instead: no-ops here.
 * Both return 0 or -errno (no $NOTIFY_SOCKET: 0, nothing sent). */
#ifndef RINGLOG_DAEMON_NOTIFY_H
#define RINGLOG_DAEMON_NOTIFY_H

#ifdef _WIN32
static inline int sd_notify_send(const char *state) { (void)state; return 0; }
#else
int sd_notify_send(const char *state);
/* The same with a descriptor passed along (fd >= 0). */
int sd_notify_fd(const char *state, int fd);
#endif

#endif /* RINGLOG_DAEMON_NOTIFY_H */
