/* daemon/peer-win.c - the control pipe's peer on Windows: its identity, the
 * pipe's security descriptor, and handles taken from or given to it (see
 * peer-win.h for the exchange).
 */
#include "peer-win.h"

#include <errno.h>
#include <sddl.h>
#include <stdio.h>
#include <string.h>

int peer_errno(DWORD e)
{
	switch (e) {
	case ERROR_ACCESS_DENIED: return EACCES;
	case ERROR_INVALID_HANDLE: return EBADF;
	case ERROR_INVALID_PARAMETER: return EINVAL;
	case ERROR_NONE_MAPPED: return ENOENT;
	case ERROR_NOT_ENOUGH_MEMORY:
	case ERROR_OUTOFMEMORY:
	case ERROR_COMMITMENT_LIMIT: return ENOMEM;
	case ERROR_DISK_FULL:
	case ERROR_HANDLE_DISK_FULL: return ENOSPC;
	case ERROR_BROKEN_PIPE:
	case ERROR_NO_DATA:
	case ERROR_PIPE_NOT_CONNECTED: return EPIPE;
	default: return EIO;
	}
}

int peer_pipe_security(const char *writers, PSECURITY_DESCRIPTOR *sd, char *err, size_t len)
{
	char sddl[512], *sid_str = NULL, domain[256];
	BYTE sid[SECURITY_MAX_SID_SIZE];
	DWORD sid_len = sizeof(sid), dom_len = sizeof(domain);
	SID_NAME_USE use;

	*sd = NULL;
	if (writers && *writers) {
		if (!LookupAccountNameA(NULL, writers, sid, &sid_len, domain, &dom_len, &use)) {
			DWORD e = GetLastError();

			snprintf(err, len, "socket_group \"%s\": no such account or group on this "
				 "system (Windows error %lu); create it or name an existing one",
				 writers, e);
			return -peer_errno(e);
		}
		if (!ConvertSidToStringSidA(sid, &sid_str)) {
			snprintf(err, len, "socket_group \"%s\": cannot print its SID", writers);
			return -EIO;
		}
	}
	/* Protected DACL: SYSTEM and Administrators all access; the writers
	 * (or every signed-in user) read and write, which is what opening
	 * the pipe's client end takes. Nobody else may even connect. */
	snprintf(sddl, sizeof(sddl), "D:P(A;;GA;;;SY)(A;;GA;;;BA)(A;;GRGW;;;%s)",
		 sid_str ? sid_str : "AU");
	if (sid_str)
		LocalFree(sid_str);
	if (!ConvertStringSecurityDescriptorToSecurityDescriptorA(sddl, SDDL_REVISION_1, sd, NULL)) {
		DWORD e = GetLastError();

		snprintf(err, len, "cannot build the pipe's security descriptor \"%s\" (Windows "
			 "error %lu)", sddl, e);
		return -peer_errno(e);
	}
	return 0;
}

/* The user SID of a token, as text. */
static int token_user(HANDLE tok, char *out, size_t len)
{
	union {
		TOKEN_USER tu;
		BYTE buf[sizeof(TOKEN_USER) + SECURITY_MAX_SID_SIZE];
	} u;
	DWORD n = 0;
	char *s = NULL;

	if (!GetTokenInformation(tok, TokenUser, &u, sizeof(u), &n) ||
	    !ConvertSidToStringSidA(u.tu.User.Sid, &s))
		return -peer_errno(GetLastError());
	snprintf(out, len, "%s", s);
	LocalFree(s);
	return 0;
}

int peer_identify(HANDLE pipe, struct peer_id *id)
{
	ULONG pid = 0;
	DWORD n = sizeof(id->exe);
	HANDLE tok = NULL;
	int err;

	memset(id, 0, sizeof(*id));
	if (!GetNamedPipeClientProcessId(pipe, &pid))
		return -peer_errno(GetLastError());
	id->pid = pid;
	id->process = OpenProcess(PROCESS_DUP_HANDLE | PROCESS_QUERY_LIMITED_INFORMATION, FALSE, pid);
	if (!id->process)
		return -peer_errno(GetLastError());
	if (!QueryFullProcessImageNameA(id->process, 0, id->exe, &n))
		snprintf(id->exe, sizeof(id->exe), "?");
	/* The pipe's own notion of the client: its token while it talks to
	 * us, which is what Windows checks the pipe's DACL against. A process
	 * that impersonates someone else when it connects is that someone
	 * here too. Failing that (no data read yet), the process token. */
	if (ImpersonateNamedPipeClient(pipe)) {
		if (!OpenThreadToken(GetCurrentThread(), TOKEN_QUERY, TRUE, &tok))
			tok = NULL;
		RevertToSelf();
	}
	if (!tok && !OpenProcessToken(id->process, TOKEN_QUERY, &tok)) {
		err = -peer_errno(GetLastError());
		peer_release(id);
		return err;
	}
	err = token_user(tok, id->user, sizeof(id->user));
	CloseHandle(tok);
	if (err)
		peer_release(id);
	return err;
}

void peer_release(struct peer_id *id)
{
	if (id->process)
		CloseHandle(id->process);
	id->process = NULL;
}

int peer_take_section(const struct peer_id *id, uint64_t remote_handle, size_t min, size_t max,
		      void **view, size_t *size)
{
	MEMORY_BASIC_INFORMATION mbi;
	HANDLE h = NULL;
	void *v;

	*view = NULL;
	*size = 0;
	if (!remote_handle || remote_handle > UINTPTR_MAX)
		return -EBADF;
	if (!DuplicateHandle(id->process, (HANDLE)(uintptr_t)remote_handle, GetCurrentProcess(), &h,
			     FILE_MAP_READ | FILE_MAP_WRITE, FALSE, 0))
		return -EBADF;
	/* Whatever it is, only a section maps. */
	v = MapViewOfFile(h, FILE_MAP_READ | FILE_MAP_WRITE, 0, 0, 0);
	CloseHandle(h); /* the view keeps the section */
	if (!v)
		return -EBADF;
	/* The size the daemon sees, not one the client states; and committed
	 * all through, or touching a reserved page would fault in here. */
	if (!VirtualQuery(v, &mbi, sizeof(mbi)) || mbi.State != MEM_COMMIT ||
	    mbi.RegionSize < min || mbi.RegionSize > max) {
		UnmapViewOfFile(v);
		return -EINVAL;
	}
	*view = v;
	*size = mbi.RegionSize;
	return 0;
}

int peer_give_handle(const struct peer_id *id, HANDLE local, DWORD access, uint64_t *remote)
{
	HANDLE r = NULL;

	if (!DuplicateHandle(GetCurrentProcess(), local, id->process, &r, access, FALSE, 0))
		return -peer_errno(GetLastError());
	*remote = (uint64_t)(uintptr_t)r;
	return 0;
}
