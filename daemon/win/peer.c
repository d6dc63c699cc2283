/* daemon/win/peer.c - the control pipe's peer on Windows: its identity, the
 * pipe's security descriptor, and handles taken from or given to it (see
 * win/peer.h for the exchange).
 */
#include "peer.h"
#include "compat-win.h"

#include <errno.h>
#include <sddl.h>
#include <stdio.h>
#include <string.h>

int peer_lookup_sid(const char *name, char *out, size_t len)
{
	BYTE sid[SECURITY_MAX_SID_SIZE];
	DWORD sid_len = sizeof(sid), dom_len;
	char domain[256], *str = NULL;
	SID_NAME_USE use;

	dom_len = sizeof(domain);
	if (!name || !*name || !LookupAccountNameA(NULL, name, sid, &sid_len, domain, &dom_len, &use))
		return -ENOENT;
	if (!ConvertSidToStringSidA(sid, &str))
		return win_errno(GetLastError());
	snprintf(out, len, "%s", str);
	LocalFree(str);
	return 0;
}

int peer_pipe_security(const char *const *sids, PSECURITY_DESCRIPTOR *sd, char *err, size_t len)
{
	char sddl[1024];
	size_t n;

	*sd = NULL;
	/* Protected DACL: SYSTEM and Administrators all access; each SID
	 * given (or, with none, every signed-in user) read and write, which is
	 * what opening the pipe's client end takes. Nobody else may even
	 * connect. */
	n = (size_t)snprintf(sddl, sizeof(sddl), "D:P(A;;GA;;;SY)(A;;GA;;;BA)");
	if (!sids || !sids[0])
		n += (size_t)snprintf(sddl + n, sizeof(sddl) - n, "(A;;GRGW;;;AU)");
	for (int i = 0; sids && sids[i] && n < sizeof(sddl); i++)
		n += (size_t)snprintf(sddl + n, sizeof(sddl) - n, "(A;;GRGW;;;%s)", sids[i]);
	if (n >= sizeof(sddl)) {
		snprintf(err, len, "the pipe's security descriptor is too long");
		return -E2BIG;
	}
	if (!ConvertStringSecurityDescriptorToSecurityDescriptorA(sddl, SDDL_REVISION_1, sd, NULL)) {
		DWORD e = GetLastError();

		snprintf(err, len, "cannot build the pipe's security descriptor \"%s\" (Windows "
			 "error %lu)", sddl, e);
		return win_errno(e);
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
		return win_errno(GetLastError());
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
		return win_errno(GetLastError());
	id->pid = pid;
	id->process = OpenProcess(PROCESS_DUP_HANDLE | PROCESS_QUERY_LIMITED_INFORMATION, FALSE, pid);
	if (!id->process)
		return win_errno(GetLastError());
	if (!QueryFullProcessImageNameA(id->process, 0, id->exe, &n))
		snprintf(id->exe, sizeof(id->exe), "?");
	/* The pipe's own notion of the client: its token while it talks to
	 * us, which is what Windows checks the pipe's DACL against. A process
	 * that impersonates someone else when it connects is that someone
	 * here too. Failing that (no data read yet), the process token. */
	if (ImpersonateNamedPipeClient(pipe)) {
		if (!OpenThreadToken(GetCurrentThread(), TOKEN_QUERY | TOKEN_DUPLICATE, TRUE, &tok))
			tok = NULL;
		RevertToSelf();
	}
	if (!tok && !OpenProcessToken(id->process, TOKEN_QUERY | TOKEN_DUPLICATE, &tok)) {
		err = win_errno(GetLastError());
		peer_release(id);
		return err;
	}
	err = token_user(tok, id->user, sizeof(id->user));
	/* A copy to ask group membership of (CheckTokenMembership wants an
	 * impersonation token; identification level is all it takes). */
	if (!err && !DuplicateToken(tok, SecurityIdentification, &id->token))
		err = win_errno(GetLastError());
	CloseHandle(tok);
	if (err)
		peer_release(id);
	return err;
}

int peer_self_sid(char *out, size_t len)
{
	HANDLE tok;
	int err;

	if (!OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &tok))
		return win_errno(GetLastError());
	err = token_user(tok, out, len);
	CloseHandle(tok);
	return err;
}

bool peer_member(const struct peer_id *id, const char *sid)
{
	PSID p = NULL;
	BOOL is = FALSE;

	if (!id->token || !sid || !ConvertStringSidToSidA(sid, &p))
		return false;
	if (!CheckTokenMembership(id->token, p, &is))
		is = FALSE;
	LocalFree(p);
	return is;
}

void peer_release(struct peer_id *id)
{
	if (id->process)
		CloseHandle(id->process);
	if (id->token)
		CloseHandle(id->token);
	id->process = NULL;
	id->token = NULL;
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
		*size = mbi.State == MEM_COMMIT ? mbi.RegionSize : 0;
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
		return win_errno(GetLastError());
	*remote = (uint64_t)(uintptr_t)r;
	return 0;
}
