/* client/cli/connect-win.c - the command's connection to ringlogd.exe: the
 * control pipe (\\.\pipe\ringlog), framed messages on it, and Ctrl-C. The
 * frames are the Linux ones (proto/ctl.h); tools send and receive no
 * handles. */
#include "cli.h"

#include <errno.h>
#include <io.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>

#include "ctl.h"

static volatile LONG stop;
static HANDLE main_thread;

/* The console's handler runs on a thread of its own: the read blocked on
 * the main thread is cancelled from here and returns at once. */
static BOOL WINAPI on_interrupt(DWORD type)
{
	if (type != CTRL_C_EVENT && type != CTRL_BREAK_EVENT)
		return FALSE;
	InterlockedExchange(&stop, 1);
	if (main_thread)
		CancelSynchronousIo(main_thread);
	return TRUE;
}

void cli_catch_interrupt(void)
{
	DuplicateHandle(GetCurrentProcess(), GetCurrentThread(), GetCurrentProcess(), &main_thread,
			THREAD_TERMINATE, FALSE, 0);
	SetConsoleCtrlHandler(on_interrupt, TRUE);
}

bool cli_interrupted(void)
{
	return InterlockedCompareExchange(&stop, 0, 0) != 0;
}

static VOID CALLBACK on_deadline(PVOID ctx, BOOLEAN fired)
{
	(void)ctx;
	(void)fired;
	on_interrupt(CTRL_C_EVENT);
}

void cli_interrupt_after(uint64_t ms)
{
	HANDLE t;

	/* the deadline as Ctrl-C: the blocked read is cancelled, exit 0 */
	CreateTimerQueueTimer(&t, NULL, on_deadline, NULL, ms > 0xfffffffe ? 0xfffffffe : (DWORD)ms, 0,
			      WT_EXECUTEONLYONCE);
}

void cli_watch(int fd)
{
	(void)fd; /* reads on any handle of this thread are cancelled */
}

int cli_connect(const char *path, bool quiet)
{
	HANDLE h = INVALID_HANDLE_VALUE;
	DWORD e = 0;
	int fd;

	/* Identification only: ringlogd may learn who we are, never act as us. */
	for (int tries = 0; tries < 50; tries++) {
		h = CreateFileA(path, GENERIC_READ | GENERIC_WRITE, 0, NULL, OPEN_EXISTING,
				SECURITY_SQOS_PRESENT | SECURITY_IDENTIFICATION, NULL);
		if (h != INVALID_HANDLE_VALUE || (e = GetLastError()) != ERROR_PIPE_BUSY)
			break;
		WaitNamedPipeA(path, 100); /* every instance busy: one is being made */
	}
	if (h == INVALID_HANDLE_VALUE) {
		int err = e == ERROR_ACCESS_DENIED ? EACCES : e == ERROR_PIPE_BUSY ? EBUSY : ENOENT;

		if (!quiet && err == EACCES) {
			char why[512];

			cli_refusal(path, why, sizeof(why));
			fprintf(stderr, "ringlog: cannot reach ringlogd at %s: %s\n", path, why);
		} else if (!quiet) {
			fprintf(stderr, "ringlog: cannot reach ringlogd at %s: %s (Windows error %lu); "
				"is the service running? (sc query ringlogd)\n", path, strerror(err), e);
		}
		return -err;
	}
	fd = _open_osfhandle((intptr_t)h, _O_BINARY);
	if (fd < 0) {
		CloseHandle(h);
		return -EMFILE;
	}
	return fd;
}

void cli_refusal(const char *path, char *buf, size_t len)
{
	/* The pipe's security descriptor (daemon/win/transport.c) admits SYSTEM,
	 * Administrators, ringlogd's user and the two configured groups. */
	snprintf(buf, len, "access refused by %s: the pipe admits SYSTEM, Administrators and "
		 "members of ringlogd's socket_group and read_group (by default \"ringlog\" and "
		 "\"ringlog-read\"); join one and sign in again", path);
}

int cli_write_full(int fd, const void *b, size_t n)
{
	DWORD done = 0;

	return WriteFile((HANDLE)_get_osfhandle(fd), b, (DWORD)n, &done, NULL) && done == n ? 0 : -EPIPE;
}

int cli_read_full(int fd, void *b, size_t n)
{
	HANDLE h = (HANDLE)_get_osfhandle(fd);
	size_t got = 0;

	while (got < n) {
		DWORD r = 0;

		if (!ReadFile(h, (uint8_t *)b + got, (DWORD)(n - got), &r, NULL)) {
			DWORD e = GetLastError();

			if (e == ERROR_OPERATION_ABORTED)
				return -EINTR; /* Ctrl-C */
			if (e == ERROR_BROKEN_PIPE || e == ERROR_PIPE_NOT_CONNECTED)
				return got ? -EPIPE : 0;
			return -EIO;
		}
		if (r == 0)
			return got ? -EPIPE : 0;
		got += r;
	}
	return 1;
}
