/* daemon/win/service.c - install, uninstall and run ringlogd.exe as a
 * Windows service (win/service.h). */
#include "service.h"

#include <errno.h>
#include <stdio.h>
#include <windows.h>

static SERVICE_STATUS_HANDLE status_handle;
static SERVICE_STATUS status;
static const char *svc_name;
static int (*svc_fn_run)(void *);
static void (*svc_fn_stop)(void *);
static void *svc_ctx;
static int svc_code;

static int win_errno(DWORD e)
{
	switch (e) {
	case ERROR_ACCESS_DENIED: return EACCES;
	case ERROR_SERVICE_EXISTS:
	case ERROR_DUPLICATE_SERVICE_NAME: return EEXIST;
	case ERROR_SERVICE_DOES_NOT_EXIST:
	case ERROR_SERVICE_MARKED_FOR_DELETE: return ENOENT;
	case ERROR_FAILED_SERVICE_CONTROLLER_CONNECT: return ENOTSUP;
	default: return EIO;
	}
}

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
		return -win_errno(GetLastError());
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
	return -win_errno(e);
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
		return -win_errno(e);
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
		return -win_errno(e);
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
		return -win_errno(e);
	}
	CloseServiceHandle(svc);
	CloseServiceHandle(scm);
	return 0;
}
