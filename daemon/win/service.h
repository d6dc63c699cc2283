/* daemon/win/service.h - ringlogd.exe under the Windows service control
 * manager, the counterpart of systemd's unit and sd_notify on Linux:
 *
 *   ringlogd.exe --service install [options]   register it (automatic
 *                                              start, LocalSystem: it must
 *                                              open every writer's process
 *                                              to duplicate its rings);
 *                                              the options are kept for
 *                                              each start
 *   ringlogd.exe --service uninstall           stop it if running, remove
 *   ringlogd.exe --service run [options]       what the SCM starts: the
 *                                              daemon on a service thread
 *
 * Without --service it is a console program, as on Linux.
 */
#ifndef RINGLOG_DAEMON_SERVICE_WIN_H
#define RINGLOG_DAEMON_SERVICE_WIN_H

#include <stddef.h>

#define SVC_NAME "ringlogd"

/* 0 or -errno with err filled in, naming what failed and what to do. */
int svc_install(const char *name, const char *display, const char *command_line, char *err,
		size_t len);
int svc_uninstall(const char *name, char *err, size_t len);

/* Hand this thread to the SCM's dispatcher; run(ctx) runs the daemon on
 * the service thread and returns its exit code; stop(ctx) is called from
 * another thread when the SCM asks it to stop (it must only signal run).
 * run calls svc_running() once it serves. Returns run's code, or -errno
 * when the process was not started by the SCM. */
int svc_run(const char *name, int (*run)(void *ctx), void (*stop)(void *ctx), void *ctx);
void svc_running(void);

/* The daemon as the service runs it (main.c): start() returns 0 or the
 * exit code, serve() runs it until it stops, stop() is called from the
 * SCM's thread and only asks. */
struct svc_daemon {
	int (*start)(void *ctx);
	int (*serve)(void *ctx);
	void (*stop)(void *ctx);
	void *ctx;
};

/* --service VERB with the process's arguments (install: register this
 * program with the other options; uninstall; run: what the SCM starts).
 * Returns the process's exit code: 0, 1 (failed, said on stderr) or 2
 * (usage: not an SCM start, or an unknown verb). */
int svc_main(const char *verb, int argc, char **argv, const struct svc_daemon *dm);

#endif /* RINGLOG_DAEMON_SERVICE_WIN_H */
