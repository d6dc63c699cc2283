/* daemon/win/peer.h - who is at the other end of the control pipe, and the
 * objects it hands over (Windows). The counterpart of SO_PEERCRED and
 * SCM_RIGHTS on Linux:
 *
 *   client                               ringlogd
 *   ------                               --------
 *   CreateFileMapping(pagefile, size)    named pipe, security descriptor
 *   connect to \\.\pipe\ringlog  ------> peer_identify(): pid from
 *                                        GetNamedPipeClientProcessId, user
 *                                        from the client's token, image
 *                                        path from the process; nothing
 *                                        the client says
 *   RING frame: its handle value ------> peer_take_section(): DuplicateHandle
 *                                        out of the client's process, map,
 *                                        check the size the daemon sees
 *   SetEvent(wake) <-------------------- peer_give_handle(): the daemon's
 *                                        wake event duplicated into the
 *                                        client, value sent with WELCOME
 *
 * A handle value is just a number: a client that sends one of something
 * else (a file, a thread, nothing) gets an error, never a mapping.
 */
#ifndef RINGLOG_DAEMON_PEER_WIN_H
#define RINGLOG_DAEMON_PEER_WIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <windows.h>

struct peer_id {
	uint32_t pid;
	HANDLE process;      /* PROCESS_DUP_HANDLE | QUERY_LIMITED_INFORMATION */
	HANDLE token;        /* its token, identification level: membership */
	char user[192];      /* the token's user SID, "S-1-5-21-..." */
	char exe[MAX_PATH];  /* the process image, as Windows names it */
};

/* A security descriptor for the pipe: full control for SYSTEM and
 * Administrators, read and write for each SID in the NULL-terminated list
 * sids ("S-1-5-..."; NULL or empty: Authenticated Users). 0 or -errno
 * with err filled in. Free *sd with LocalFree. */
int peer_pipe_security(const char *const *sids, PSECURITY_DESCRIPTOR *sd, char *err, size_t len);
/* The SID of an account or group name, as text: 0 or -ENOENT. */
int peer_lookup_sid(const char *name, char *sid, size_t len);
/* The SID of the user this process runs as. 0 or -errno. */
int peer_self_sid(char *sid, size_t len);

/* The identity of the client connected to pipe. 0 or -errno. */
int peer_identify(HANDLE pipe, struct peer_id *id);
void peer_release(struct peer_id *id);
/* Whether the client's token has the SID (a group it is in, enabled). */
bool peer_member(const struct peer_id *id, const char *sid);

/* Map the section the client knows as remote_handle, read-write. Its
 * size, as the daemon sees it, must lie in [min, max]. 0, or -EBADF (not
 * a handle of that process, or not a section), -EINVAL (size: *size says
 * it; 0 when not committed all through), -errno. */
int peer_take_section(const struct peer_id *id, uint64_t remote_handle, size_t min, size_t max,
		      void **view, size_t *size);

/* Duplicate local into the client with access; *remote is the value the
 * client uses. 0 or -errno. */
int peer_give_handle(const struct peer_id *id, HANDLE local, DWORD access, uint64_t *remote);

#endif /* RINGLOG_DAEMON_PEER_WIN_H */
