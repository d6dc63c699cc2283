/* client/transport-win.c - the library's link to ringlogd on Windows: a
 * named pipe (RINGLOG_SOCKET, default \\.\pipe\ringlog), overlapped so
 * that the library's thread waits on the pipe and its wake event at once.
 *
 * Shared-memory objects do not ride beside a frame as descriptors do on a
 * Unix socket: the frame carries the object's handle value in this process
 * as a u64 after its payload (proto/ctl.h), and ringlogd duplicates it out
 * of this process with DuplicateHandle, under an identity it takes from
 * the pipe. The pipe is opened at SECURITY_IDENTIFICATION: the daemon may
 * learn who we are, not act as us.
 */
#include "transport.h"
#include "ctl.h"
#include "compat-win.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <windows.h>

#define SEND_TIMEOUT_MS 2000

struct transport {
	HANDLE pipe;
	OVERLAPPED rov, wov;
	bool pending;        /* a read is outstanding into buf */
	int err;             /* the pipe broke: every later call says so */
	DWORD have, off;     /* bytes in buf, bytes already handed out */
	uint8_t buf[64 << 10];
};

static HANDLE wake_ev;

/* A broken connection is what the library reports for anything the
 * pipe does that has no better name (-EPIPE, where -EIO would say
 * nothing more to the caller). */
static int win_err(DWORD e)
{
	int err = win_errno(e);

	return err == -EIO ? -EPIPE : err;
}

static const char *pipe_name(void)
{
	const char *s = getenv("RINGLOG_SOCKET");

	return s && *s ? s : RINGLOG_SOCKET_DEFAULT;
}

struct transport *tr_connect(int *err)
{
	const char *name = pipe_name();
	struct transport *t;
	HANDLE h = INVALID_HANDLE_VALUE;

	for (int tries = 0; tries < 2; tries++) {
		h = CreateFileA(name, GENERIC_READ | GENERIC_WRITE, 0, NULL, OPEN_EXISTING,
				FILE_FLAG_OVERLAPPED | SECURITY_SQOS_PRESENT | SECURITY_IDENTIFICATION,
				NULL);
		if (h != INVALID_HANDLE_VALUE || GetLastError() != ERROR_PIPE_BUSY)
			break;
		/* every instance taken: the daemon makes another as it accepts */
		WaitNamedPipeA(name, 200);
	}
	if (h == INVALID_HANDLE_VALUE) {
		*err = win_err(GetLastError());
		return NULL;
	}
	if (!(t = calloc(1, sizeof(*t))) || !(t->rov.hEvent = CreateEventA(NULL, TRUE, FALSE, NULL)) ||
	    !(t->wov.hEvent = CreateEventA(NULL, TRUE, FALSE, NULL))) {
		if (t && t->rov.hEvent)
			CloseHandle(t->rov.hEvent);
		free(t);
		CloseHandle(h);
		*err = -ENOMEM;
		return NULL;
	}
	t->pipe = h;
	return t;
}

void tr_refusal(char *buf, size_t len)
{
	/* The pipe's security descriptor (daemon/win/transport.c) decides. */
	snprintf(buf, len, "access refused by %s: the pipe admits SYSTEM, Administrators and "
		 "members of ringlogd's socket_group (by default \"ringlog\"); join it and sign in "
		 "again", pipe_name());
}

void tr_close(struct transport *t)
{
	if (!t)
		return;
	/* An outstanding read writes into t->buf until it is cancelled and
	 * has completed: wait for that before freeing. */
	if (t->pending) {
		DWORD n;

		CancelIoEx(t->pipe, &t->rov);
		GetOverlappedResult(t->pipe, &t->rov, &n, TRUE);
	}
	CloseHandle(t->pipe);
	CloseHandle(t->rov.hEvent);
	CloseHandle(t->wov.hEvent);
	free(t);
}

/* Not from an emitting thread: the pipe's one overlapped write is the
 * library thread's, and the daemon duplicates a ring's handle out of this
 * process, which must still be running then anyway. */
int tr_try_send(struct transport *t, uint16_t type, const void *payload, uint32_t len,
		lib_obj_t obj)
{
	(void)t;
	(void)type;
	(void)payload;
	(void)len;
	(void)obj;
	return -EOPNOTSUPP;
}

int tr_send(struct transport *t, uint16_t type, const void *payload, uint32_t len, lib_obj_t obj)
{
	uint32_t extra = obj ? 8u : 0u;
	struct ringlog_ctl_frame f = { .len = len + extra, .type = type };
	size_t total = sizeof(f) + len + extra;
	uint8_t stack[512], *b = total <= sizeof(stack) ? stack : malloc(total);
	DWORD n = 0;
	BOOL ok;

	if (t->err)
		return t->err;
	if (!b)
		return -ENOMEM;
	memcpy(b, &f, sizeof(f));
	if (len)
		memcpy(b + sizeof(f), payload, len);
	if (extra) {
		uint64_t v = (uint64_t)(uintptr_t)obj;

		memcpy(b + sizeof(f) + len, &v, sizeof(v));
	}
	ResetEvent(t->wov.hEvent);
	ok = WriteFile(t->pipe, b, (DWORD)total, NULL, &t->wov);
	if (!ok && GetLastError() == ERROR_IO_PENDING) {
		/* the daemon is not reading: drop the link rather than block */
		if (WaitForSingleObject(t->wov.hEvent, SEND_TIMEOUT_MS) != WAIT_OBJECT_0)
			CancelIoEx(t->pipe, &t->wov);
		ok = GetOverlappedResult(t->pipe, &t->wov, &n, TRUE);
	} else if (ok) {
		ok = GetOverlappedResult(t->pipe, &t->wov, &n, TRUE);
	}
	if (b != stack)
		free(b);
	if (!ok || n != total)
		return t->err = -EPIPE;
	return 0;
}

static void start_read(struct transport *t)
{
	if (t->pending || t->err || t->off < t->have)
		return;
	t->have = t->off = 0;
	ResetEvent(t->rov.hEvent);
	if (ReadFile(t->pipe, t->buf, sizeof(t->buf), NULL, &t->rov) ||
	    GetLastError() == ERROR_IO_PENDING)
		t->pending = true;
	else
		t->err = -EPIPE;
}

long tr_recv(struct transport *t, uint8_t *buf, size_t cap, lib_obj_t *obj)
{
	DWORD n = 0, give;

	*obj = LIB_OBJ_NONE; /* objects come inside frames here (tr_frame_obj) */
	if (t->pending) {
		if (!GetOverlappedResult(t->pipe, &t->rov, &n, FALSE)) {
			if (GetLastError() == ERROR_IO_INCOMPLETE)
				return 0;
			t->pending = false;
			return t->err = -EPIPE;
		}
		t->pending = false;
		t->have = n;
		t->off = 0;
		if (!n)
			return t->err = -EPIPE;
	}
	if (t->err)
		return t->err;
	give = t->have - t->off;
	if (give > cap)
		give = (DWORD)cap;
	memcpy(buf, t->buf + t->off, give);
	t->off += give;
	start_read(t);
	return give;
}

int tr_wait(struct transport *t, int ms)
{
	HANDLE h[2];
	DWORD n = 0, r;

	if (t) {
		if (t->off < t->have || t->err)
			return TR_READABLE;
		start_read(t);
		if (t->err)
			return TR_READABLE;
		h[n++] = t->rov.hEvent;
	}
	h[n++] = wake_ev;
	r = WaitForMultipleObjects(n, h, FALSE, (DWORD)ms);
	if (r == WAIT_TIMEOUT || r >= WAIT_OBJECT_0 + n)
		return 0;
	if (h[r - WAIT_OBJECT_0] == wake_ev)
		return TR_WOKEN;
	return TR_READABLE;
}

lib_obj_t tr_frame_obj(const uint8_t *p, uint32_t len, size_t struct_len, lib_obj_t received)
{
	uint64_t v;

	(void)received;
	if (len < struct_len + sizeof(v))
		return LIB_OBJ_NONE;
	memcpy(&v, p + struct_len, sizeof(v));
	return (lib_obj_t)(uintptr_t)v;
}

void tr_close_obj(lib_obj_t obj)
{
	(void)obj; /* handle values come inside frames: none arrive unasked */
}

int tr_wake_init(void)
{
	if (!wake_ev && !(wake_ev = CreateEventA(NULL, FALSE, FALSE, NULL)))
		return -ENOMEM;
	return 0;
}

void tr_wake_signal(void)
{
	if (wake_ev)
		SetEvent(wake_ev);
}

void tr_wake_clear(void)
{
	/* an auto-reset event clears itself when a wait takes it */
}

bool tr_signal(lib_obj_t obj)
{
	return obj && SetEvent(obj);
}

/* A later daemon's wake event replaces the earlier one's, which is never
 * closed: an emitting thread may have loaded it a moment ago, and a closed
 * handle value can come back as something else. One handle per daemon
 * restart is the price. */
void tr_take_daemon_wake(lib_obj_t obj)
{
	if (obj)
		__atomic_store_n(&lib.daemon_wake, obj, __ATOMIC_RELEASE);
}
