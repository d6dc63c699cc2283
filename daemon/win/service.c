/* daemon/win/service.c - install, uninstall and run ringlogd.exe as a
 * Windows service (win/service.h). */
#include "service.h"
#include "compat-win.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <windows.h>

static SERVICE_STATUS_HANDLE status_handle;
static SERVICE_STATUS status;
static const char *svc_name;
static int (*svc_fn_run)(void *);
static void (*svc_fn_stop)(void *);
static void *svc_ctx;
static int svc_code;

static void report(DWORD state, DWORD exit_code, DWORD wait_ms)
{
	static DWORD checkpoint = 1;

	status.dwServiceType = SERVICE_WIN32_OWN_PROCESS;
	status.dwCurrentState = state;
	status.dwWin32ExitCode = exit_code ? ERROR_SERVICE_SPECIFIC_ERROR : NO_ERROR;
	status.dwServiceSpecificExitCode = exit_code;
	status.dwWaitHint = wait_ms;
	status.dwControlsAccepted = state == SERVICE_RUNNING ?
		SERVICE_ACCEPT_STOP | SERVICE_ACCEPT_SHUTDOWN : 0;
	status.dwCheckPoint = state == SERVICE_RUNNING || state == SERVICE_STOPPED ? 0 : checkpoint++;
	SetServiceStatus(status_handle, &status);
}

void svc_running(void)
{
	if (status_handle)
		report(SERVICE_RUNNING, 0, 0);
}

static DWORD WINAPI on_control(DWORD control, DWORD type, void *data, void *ctx)
{
	(void)type;
	(void)data;
	(void)ctx;
	switch (control) {
	case SERVICE_CONTROL_STOP:
	case SERVICE_CONTROL_SHUTDOWN:
		/* draining every ring and sealing the segments takes a moment:
		 * tell the SCM how long to wait before it gives up */
		report(SERVICE_STOP_PENDING, 0, 30000);
		svc_fn_stop(svc_ctx);
		return NO_ERROR;
	case SERVICE_CONTROL_INTERROGATE:
		return NO_ERROR;
	default:
		return ERROR_CALL_NOT_IMPLEMENTED;
	}
}

static void WINAPI service_main(DWORD argc, char **argv)
{
	(void)argc;
	(void)argv;
	status_handle = RegisterServiceCtrlHandlerExA(svc_name, on_control, NULL);
	if (!status_handle)
		return;
	report(SERVICE_START_PENDING, 0, 10000);
	svc_code = svc_fn_run(svc_ctx);
	report(SERVICE_STOPPED, (DWORD)svc_code, 0);
}

int svc_run(const char *name, int (*run)(void *ctx), void (*stop)(void *ctx), void *ctx)
{
	SERVICE_TABLE_ENTRYA table[] = { { (char *)name, service_main }, { NULL, NULL } };

	svc_name = name;
	svc_fn_run = run;
	svc_fn_stop = stop;
	svc_ctx = ctx;
	if (!StartServiceCtrlDispatcherA(table))
		return win_errno(GetLastError());
	return svc_code;
}

static int open_scm(DWORD access, SC_HANDLE *scm, char *err, size_t len)
{
	DWORD e;

	if ((*scm = OpenSCManagerA(NULL, NULL, access)))
		return 0;
	e = GetLastError();
	snprintf(err, len, "cannot open the service control manager (Windows error %lu): run this "
		 "from an administrator's prompt", e);
	return win_errno(e);
}

int svc_install(const char *name, const char *display, const char *command_line, char *err,
		size_t len)
{
	SC_HANDLE scm, svc;
	SERVICE_DESCRIPTIONA desc = { (char *)"Collects events from programs linked with ringlog.dll "
					      "into rotating, checksummed segment files." };
	DWORD e;
	int rc;

	if ((rc = open_scm(SC_MANAGER_CREATE_SERVICE, &scm, err, len)) < 0)
		return rc;
	svc = CreateServiceA(scm, name, display, SERVICE_ALL_ACCESS, SERVICE_WIN32_OWN_PROCESS,
			     SERVICE_AUTO_START, SERVICE_ERROR_NORMAL, command_line, NULL, NULL, NULL,
			     NULL /* LocalSystem */, NULL);
	if (!svc) {
		e = GetLastError();
		snprintf(err, len, e == ERROR_SERVICE_EXISTS ?
			 "service \"%s\" is already installed: --service uninstall first" :
			 "cannot create service \"%s\" (Windows error %lu)", name, e);
		CloseServiceHandle(scm);
		return win_errno(e);
	}
	ChangeServiceConfig2A(svc, SERVICE_CONFIG_DESCRIPTION, &desc);
	CloseServiceHandle(svc);
	CloseServiceHandle(scm);
	return 0;
}

int svc_uninstall(const char *name, char *err, size_t len)
{
	SC_HANDLE scm, svc;
	SERVICE_STATUS st;
	DWORD e;
	int rc;

	if ((rc = open_scm(SC_MANAGER_CONNECT, &scm, err, len)) < 0)
		return rc;
	svc = OpenServiceA(scm, name, SERVICE_STOP | SERVICE_QUERY_STATUS | DELETE);
	if (!svc) {
		e = GetLastError();
		snprintf(err, len, "service \"%s\" is not installed (Windows error %lu)", name, e);
		CloseServiceHandle(scm);
		return win_errno(e);
	}
	/* stop it first, and give it the time a drain takes */
	if (ControlService(svc, SERVICE_CONTROL_STOP, &st))
		for (int i = 0; i < 300 && QueryServiceStatus(svc, &st) &&
				st.dwCurrentState != SERVICE_STOPPED; i++)
			Sleep(100);
	if (!DeleteService(svc)) {
		e = GetLastError();
		/* removed already, and the SCM still finishing it off */
		if (e == ERROR_SERVICE_MARKED_FOR_DELETE)
			snprintf(err, len, "service \"%s\" is not installed (its removal is under way)",
				 name);
		else
			snprintf(err, len, "cannot remove service \"%s\" (Windows error %lu)", name, e);
		CloseServiceHandle(svc);
		CloseServiceHandle(scm);
		return win_errno(e);
	}
	CloseServiceHandle(svc);
	CloseServiceHandle(scm);
	return 0;
}

/* What the service is started with: this program, --service run, and
 * the options given to install, quoted. */
static int service_command(int argc, char **argv, char *out, size_t len)
{
	char self[MAX_PATH];
	size_t n;

	if (!GetModuleFileNameA(NULL, self, sizeof(self)))
		return -1;
	n = (size_t)snprintf(out, len, "\"%s\" --service run", self);
	for (int i = 1; i < argc && n < len; i++) {
		if (!strcmp(argv[i], "--service") || !strncmp(argv[i], "--service=", 10)) {
			i += !strcmp(argv[i], "--service");
			continue;
		}
		n += (size_t)snprintf(out + n, len - n, " \"%s\"", argv[i]);
	}
	return n < len ? 0 : -1;
}

static const struct svc_daemon *svc_dm;

/* On the service thread: the daemon serves once it started. */
static int run_daemon(void *ctx)
{
	int rc = svc_dm->start(ctx);

	if (rc)
		return rc;
	svc_running();
	return svc_dm->serve(ctx);
}

int svc_main(const char *verb, int argc, char **argv, const struct svc_daemon *dm)
{
	char err[8192];
	int rc;

	if (!strcmp(verb, "install")) {
		char cmd[4096];

		if (service_command(argc, argv, cmd, sizeof(cmd)) < 0) {
			fprintf(stderr, "ringlogd: --service install: the command line is too long\n");
			return 1;
		}
		if (svc_install(SVC_NAME, "ringlog collector", cmd, err, sizeof(err)) < 0) {
			fprintf(stderr, "ringlogd: %s\n", err);
			return 1;
		}
		printf("installed the service \"%s\": %s\n", SVC_NAME, cmd);
		return 0;
	}
	if (!strcmp(verb, "uninstall")) {
		if (svc_uninstall(SVC_NAME, err, sizeof(err)) < 0) {
			fprintf(stderr, "ringlogd: %s\n", err);
			return 1;
		}
		printf("removed the service \"%s\"\n", SVC_NAME);
		return 0;
	}
	if (strcmp(verb, "run")) {
		fprintf(stderr, "ringlogd: --service \"%s\": expected install, uninstall or run\n", verb);
		return 2;
	}
	/* The daemon starts on the service thread; a stop the SCM asks for
	 * before it is up is seen once it is (daemon_stop_async()). */
	svc_dm = dm;
	rc = svc_run(SVC_NAME, run_daemon, dm->stop, dm->ctx);
	if (rc < 0) {
		fprintf(stderr, "ringlogd: --service run: not started by the service control manager; "
			"install it with --service install, or run without --service\n");
		return 2;
	}
	return rc;
}
