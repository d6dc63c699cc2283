/* client/os-win.c - what libringlog needs from Windows besides the link to
 * the daemon (transport-win.c): shared memory and ids.
 *
 * Shared memory is a section backed by the paging file. Its size is fixed
 * when it is created and its pages are committed then, so the daemon's
 * view can never fault the way a truncated file would; the daemon checks
 * both on its side anyway (daemon/win/peer.c).
 */
#include "lib.h"

#include <errno.h>
#include <windows.h>

int lib_shm_create(const char *name, size_t size, bool populate, lib_obj_t *obj, void **mem)
{
	HANDLE h;
	void *m;

	(void)name;
	h = CreateFileMappingA(INVALID_HANDLE_VALUE, NULL, PAGE_READWRITE, (DWORD)((uint64_t)size >> 32),
			       (DWORD)size, NULL);
	if (!h)
		return GetLastError() == ERROR_COMMITMENT_LIMIT ? -ENOMEM : -EIO;
	m = MapViewOfFile(h, FILE_MAP_ALL_ACCESS, 0, 0, size);
	if (!m) {
		CloseHandle(h);
		return -ENOMEM;
	}
	/* Touch every page now, on the thread's first event, rather than
	 * during its first lap: as os-unix.c does (MAP_POPULATE, then a
	 * store to each page). */
	if (populate)
		for (size_t off = 0; off < size; off += 4096)
			((volatile uint8_t *)m)[off] = 0;
	*obj = h;
	*mem = m;
	return 0;
}

void lib_shm_destroy(lib_obj_t obj, void *mem, size_t size)
{
	(void)size;
	UnmapViewOfFile(mem);
	CloseHandle(obj);
}

uint32_t lib_tid(void)
{
	return (uint32_t)GetCurrentThreadId();
}

uint32_t lib_pid(void)
{
	return (uint32_t)GetCurrentProcessId();
}

void lib_sleep_ns(uint64_t ns)
{
	/* Sleep() counts milliseconds: a shorter wait yields the rest of the
	 * time slice instead. */
	if (ns < 1000000u)
		SwitchToThread();
	else
		Sleep((DWORD)(ns / 1000000u));
}
