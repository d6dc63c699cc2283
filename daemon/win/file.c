/* daemon/win/file.c - what the daemon asks of Windows besides the control
 * channel (win/transport.c) and the write backend (io-iocp.c): segment files
 * (overlapped, unbuffered where sizes allow, deletable while a reader has
 * them open), free space, the boot's identity. unix/file.c is the same for
 * Linux; compat/compat-win.c has the POSIX calls mingw's C runtime lacks.
 */
#include "daemon.h"
#include "log.h"
#include "store/file.h"
#include "compat-win.h"

#include <errno.h>
#include <io.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *file_aligned(size_t n)
{
	void *p = _aligned_malloc(n, RINGLOG_SEG_ALIGN);

	if (p)
		memset(p, 0, n);
	return p;
}

void file_aligned_free(void *p)
{
	_aligned_free(p);
}

/* Large pages on Windows need SeLockMemoryPrivilege, which a service
 * account lacks by default: ordinary committed pages, touched now. */
void *file_large(size_t n)
{
	uint8_t *p = VirtualAlloc(NULL, n, MEM_RESERVE | MEM_COMMIT, PAGE_READWRITE);

	if (p)
		memset(p, 0, n);
	return p;
}

void file_large_free(void *p, size_t n)
{
	(void)n;
	if (p)
		VirtualFree(p, 0, MEM_RELEASE);
}

/* Overlapped for IOCP (io-iocp.c), and the C runtime's descriptor for it,
 * which is what the backend table passes around. FILE_SHARE_DELETE: the
 * disk budget deletes segments that `ringlog read` may have open. */
static int open_handle(const char *path, DWORD disposition, DWORD flags)
{
	HANDLE h = CreateFileA(path, GENERIC_READ | GENERIC_WRITE,
			       FILE_SHARE_READ | FILE_SHARE_DELETE, NULL, disposition,
			       FILE_ATTRIBUTE_NORMAL | FILE_FLAG_OVERLAPPED | flags, NULL);
	int fd;

	if (h == INVALID_HANDLE_VALUE)
		return GetLastError() == ERROR_FILE_EXISTS ? -EEXIST : win_errno(GetLastError());
	fd = uv_open_osfhandle(h);
	if (fd < 0) {
		CloseHandle(h);
		return -EMFILE;
	}
	return fd;
}

int file_create(const char *path, bool *direct)
{
	/* Chunks are 4 KiB-aligned in memory and on disk, which every sector
	 * size up to 4 KiB divides: the same rule as O_DIRECT. */
	int fd = open_handle(path, CREATE_NEW, FILE_FLAG_NO_BUFFERING);

	*direct = fd >= 0;
	if (fd == -EINVAL)
		fd = open_handle(path, CREATE_NEW, 0);
	return fd;
}

int file_open_existing(const char *path)
{
	return open_handle(path, OPEN_EXISTING, 0);
}

/* A synchronous write on an overlapped handle: wait for it here. The low
 * bit on the event keeps the completion off IOCP's port. */
int file_pwrite(int fd, const void *buf, size_t len, uint64_t off)
{
	HANDLE h = (HANDLE)uv_get_osfhandle(fd);
	OVERLAPPED ov = { 0 };
	DWORD n = 0;
	int err = 0;

	ov.Offset = (DWORD)off;
	ov.OffsetHigh = (DWORD)(off >> 32);
	ov.hEvent = CreateEventA(NULL, TRUE, FALSE, NULL);
	if (!ov.hEvent)
		return -ENOMEM;
	ov.hEvent = (HANDLE)((uintptr_t)ov.hEvent | 1);
	if (!WriteFile(h, buf, (DWORD)len, NULL, &ov) && GetLastError() != ERROR_IO_PENDING)
		err = win_errno(GetLastError());
	else if (!GetOverlappedResult(h, &ov, &n, TRUE))
		err = win_errno(GetLastError());
	else if (n != len)
		err = -EIO;
	CloseHandle((HANDLE)((uintptr_t)ov.hEvent & ~(uintptr_t)1));
	return err;
}

int file_sync(int fd)
{
	return FlushFileBuffers((HANDLE)uv_get_osfhandle(fd)) ? 0 : win_errno(GetLastError());
}

void file_close(int fd)
{
	_close(fd);
}

int file_remove(const char *path)
{
	if (DeleteFileA(path) || GetLastError() == ERROR_FILE_NOT_FOUND)
		return 0;
	return win_errno(GetLastError());
}

int file_mkdir(const char *path)
{
	if (CreateDirectoryA(path, NULL) || GetLastError() == ERROR_ALREADY_EXISTS)
		return 0;
	return win_errno(GetLastError());
}

/* LockFileEx on a lock file, held for the life of the process. Its
 * sharing mode lets the next daemon read the holder's PID from it. */
int file_lock_dir(const char *dir, int *lock, long *holder)
{
	char path[RINGLOG_CONFIG_PATH_MAX + 32], buf[32];
	OVERLAPPED ov = { 0 };
	HANDLE h;
	DWORD n = 0;
	int fd, len;

	*holder = 0;
	snprintf(path, sizeof(path), "%s\\" RINGLOG_LOCK_NAME, dir);
	h = CreateFileA(path, GENERIC_READ | GENERIC_WRITE, FILE_SHARE_READ | FILE_SHARE_WRITE,
			NULL, OPEN_ALWAYS, FILE_ATTRIBUTE_NORMAL, NULL);
	if (h == INVALID_HANDLE_VALUE)
		return win_errno(GetLastError());
	/* Lock a byte past the PID's text, so that it stays readable. */
	ov.Offset = 4096;
	if (!LockFileEx(h, LOCKFILE_EXCLUSIVE_LOCK | LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &ov)) {
		if (ReadFile(h, buf, sizeof(buf) - 1, &n, NULL) && n > 0) {
			buf[n] = 0;
			*holder = strtol(buf, NULL, 10);
		}
		CloseHandle(h);
		return -EBUSY;
	}
	len = snprintf(buf, sizeof(buf), "%lu\r\n", (unsigned long)GetCurrentProcessId());
	if (!WriteFile(h, buf, (DWORD)len, &n, NULL) || !SetEndOfFile(h)) {
		CloseHandle(h);
		return -EIO;
	}
	fd = uv_open_osfhandle(h);
	if (fd < 0) {
		CloseHandle(h);
		return -EMFILE;
	}
	if (*lock >= 0)
		_close(*lock);
	*lock = fd;
	return 0;
}

/* Windows refuses to delete a directory with open files in it, so the
 * storage directory cannot vanish under the daemon: nothing to detect. */
int file_dir_id(const char *dir, uint64_t id[2])
{
	(void)dir;
	id[0] = id[1] = 0;
	return 0;
}

int file_unlinked(int fd)
{
	(void)fd;
	return 0;
}

int file_space(const char *dir, uint64_t *avail, uint64_t *total)
{
	ULARGE_INTEGER a, t;

	if (!GetDiskFreeSpaceExA(dir, &a, &t, NULL))
		return win_errno(GetLastError());
	*avail = a.QuadPart;
	*total = t.QuadPart;
	return 0;
}

/* Windows numbers its boots (the kernel's BootId, Windows 8 and later);
 * the id is that number with the machine's GUID, so that two hosts or two
 * boots never share one. Zeros where neither is known (Wine). */
void sys_identity(uint8_t boot_id[16], char *host, size_t host_len)
{
	DWORD boot = 0, n = sizeof(boot), hn = (DWORD)host_len - 1;
	char guid[64] = "";
	DWORD gn = sizeof(guid);

	if (RegGetValueA(HKEY_LOCAL_MACHINE,
			 "SYSTEM\\CurrentControlSet\\Control\\Session Manager\\Memory Management\\"
			 "PrefetchParameters", "BootId", RRF_RT_REG_DWORD, NULL, &boot, &n) == ERROR_SUCCESS &&
	    RegGetValueA(HKEY_LOCAL_MACHINE, "SOFTWARE\\Microsoft\\Cryptography", "MachineGuid",
			 RRF_RT_REG_SZ, NULL, guid, &gn) == ERROR_SUCCESS) {
		int k = 0;

		for (const char *p = guid; *p && k < 12; p++) {
			unsigned v;

			if (*p == '-' || *p == '{')
				continue;
			if (sscanf(p, "%2x", &v) == 1) {
				boot_id[k++] = (uint8_t)v;
				p++;
			}
		}
		memcpy(boot_id + 12, &boot, 4);
	}
	if (!GetComputerNameA(host, &hn))
		snprintf(host, host_len, "?");
}
