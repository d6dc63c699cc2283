/* compat/error-win.c - the one translation of Win32 error codes into
 * -errno, for the daemon and the library alike (libuv's src/win/error.c
 * is the model): every Windows file of ours that fails on a Win32 call
 * returns what this says, so that callers test the same errno values as
 * on Linux. A code not listed is -EIO: an I/O failure we cannot name. */
#include "compat-win.h"

#ifdef _WIN32
#include <errno.h>
#include <windows.h>

int win_errno(unsigned long e)
{
	switch (e) {
	case ERROR_FILE_NOT_FOUND:
	case ERROR_PATH_NOT_FOUND:
	case ERROR_NONE_MAPPED:
	case ERROR_SERVICE_DOES_NOT_EXIST:
	case ERROR_SERVICE_MARKED_FOR_DELETE: return -ENOENT;
	case ERROR_FILE_EXISTS:
	case ERROR_ALREADY_EXISTS:
	case ERROR_SERVICE_EXISTS:
	case ERROR_DUPLICATE_SERVICE_NAME: return -EEXIST;
	case ERROR_ACCESS_DENIED:
	case ERROR_WRITE_PROTECT: return -EACCES;
	case ERROR_INVALID_HANDLE: return -EBADF;
	case ERROR_INVALID_PARAMETER: return -EINVAL;
	case ERROR_NOT_ENOUGH_MEMORY:
	case ERROR_OUTOFMEMORY:
	case ERROR_COMMITMENT_LIMIT: return -ENOMEM;
	case ERROR_DISK_FULL:
	case ERROR_HANDLE_DISK_FULL: return -ENOSPC;
	case ERROR_PIPE_BUSY: return -EBUSY;
	case ERROR_BROKEN_PIPE:
	case ERROR_NO_DATA:
	case ERROR_PIPE_NOT_CONNECTED: return -EPIPE;
	case ERROR_FAILED_SERVICE_CONTROLLER_CONNECT: return -ENOTSUP;
	default: return -EIO;
	}
}
#endif
