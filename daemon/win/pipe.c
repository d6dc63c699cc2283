/* daemon/win/pipe.c - the control pipe's listening side (win/pipe.h). */
#include "pipe.h"
#include "peer.h"
#include "compat-win.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

struct pipe_listener {
	uv_loop_t *loop;
	uv_async_t async;
	char name[256];
	SECURITY_ATTRIBUTES sa;
	pipe_accept_fn fn;
	void *ctx;
	HANDLE pending;          /* the instance waiting for a client */
	OVERLAPPED ov;
	HANDLE wait;             /* RegisterWaitForSingleObject on ov.hEvent */
	bool connected_now;      /* ConnectNamedPipe found its client at once:
	                          * no overlapped operation to ask about */
	bool closing;
};

static int new_instance(struct pipe_listener *l, bool first)
{
	DWORD open_mode = PIPE_ACCESS_DUPLEX | FILE_FLAG_OVERLAPPED |
			  (first ? FILE_FLAG_FIRST_PIPE_INSTANCE : 0);
	HANDLE h = CreateNamedPipeA(l->name, open_mode,
				    PIPE_TYPE_BYTE | PIPE_READMODE_BYTE | PIPE_WAIT |
				    PIPE_REJECT_REMOTE_CLIENTS, PIPE_UNLIMITED_INSTANCES, 65536, 65536,
				    0, &l->sa);

	if (h == INVALID_HANDLE_VALUE) {
		DWORD e = GetLastError();

		return first && (e == ERROR_ACCESS_DENIED || e == ERROR_PIPE_BUSY) ? -EADDRINUSE :
		       win_errno(e);
	}
	l->pending = h;
	return 0;
}

static void CALLBACK on_event(void *arg, BOOLEAN timed_out)
{
	struct pipe_listener *l = arg;

	(void)timed_out;
	uv_async_send(&l->async); /* a thread-pool thread: only wake the loop */
}

static void on_closed(uv_handle_t *h)
{
	struct pipe_listener *l = h->data;

	CloseHandle(l->ov.hEvent);
	free(l);
}

/* Wait for the next client on l->pending; a client may already be there. */
static int arm(struct pipe_listener *l)
{
	ResetEvent(l->ov.hEvent);
	l->connected_now = false;
	if (ConnectNamedPipe(l->pending, &l->ov) || GetLastError() == ERROR_PIPE_CONNECTED) {
		/* connected between create and connect */
		l->connected_now = true;
		SetEvent(l->ov.hEvent);
	} else if (GetLastError() != ERROR_IO_PENDING) {
		return win_errno(GetLastError());
	}
	if (!RegisterWaitForSingleObject(&l->wait, l->ov.hEvent, on_event, l, INFINITE,
					 WT_EXECUTEONLYONCE))
		return win_errno(GetLastError());
	return 0;
}

static void on_async(uv_async_t *a)
{
	struct pipe_listener *l = a->data;
	DWORD n;
	HANDLE h;

	if (l->closing || WaitForSingleObject(l->ov.hEvent, 0) != WAIT_OBJECT_0)
		return;
	/* this wait fired once; wait for it to be done before the next */
	UnregisterWaitEx(l->wait, INVALID_HANDLE_VALUE);
	l->wait = NULL;
	h = l->pending;
	l->pending = NULL;
	if (!l->connected_now && !GetOverlappedResult(h, &l->ov, &n, FALSE) &&
	    GetLastError() != ERROR_PIPE_CONNECTED) {
		CloseHandle(h); /* the client gave up before we looked */
		h = NULL;
	}
	/* the next instance is up before the client is handed on, so that
	 * there is never a moment with no instance to connect to */
	if (new_instance(l, false) < 0 || arm(l) < 0) {
		if (l->pending)
			CloseHandle(l->pending);
		l->pending = NULL;
	}
	if (h)
		l->fn(l->ctx, h);
}

int pipe_listen(uv_loop_t *loop, const char *name, PSECURITY_DESCRIPTOR sd, pipe_accept_fn fn,
		void *ctx, struct pipe_listener **out)
{
	struct pipe_listener *l = calloc(1, sizeof(*l));
	int err;

	if (!l)
		return -ENOMEM;
	if (strlen(name) >= sizeof(l->name)) {
		free(l);
		return -ENAMETOOLONG;
	}
	strcpy(l->name, name);
	l->loop = loop;
	l->fn = fn;
	l->ctx = ctx;
	l->sa = (SECURITY_ATTRIBUTES){ sizeof(l->sa), sd, FALSE };
	if (!(l->ov.hEvent = CreateEventA(NULL, TRUE, FALSE, NULL))) {
		free(l);
		return -ENOMEM;
	}
	if ((err = new_instance(l, true)) < 0) {
		CloseHandle(l->ov.hEvent);
		free(l);
		return err;
	}
	if ((err = uv_async_init(loop, &l->async, on_async)) < 0) {
		CloseHandle(l->pending);
		CloseHandle(l->ov.hEvent);
		free(l);
		return err;
	}
	l->async.data = l;
	if ((err = arm(l)) < 0) {
		CloseHandle(l->pending);
		l->pending = NULL;
		uv_close((uv_handle_t *)&l->async, on_closed);
		return err;
	}
	*out = l;
	return 0;
}

void pipe_listener_close(struct pipe_listener *l)
{
	l->closing = true;
	if (l->wait)
		UnregisterWaitEx(l->wait, INVALID_HANDLE_VALUE); /* no callback after this */
	l->wait = NULL;
	if (l->pending) {
		DWORD n;

		CancelIoEx(l->pending, &l->ov);
		GetOverlappedResult(l->pending, &l->ov, &n, TRUE);
		CloseHandle(l->pending);
		l->pending = NULL;
	}
	uv_close((uv_handle_t *)&l->async, on_closed);
}
