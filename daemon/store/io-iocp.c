/* daemon/store/io-iocp.c - segment writes through an I/O completion port
 * (Windows): overlapped WriteFile at the chunk's offset, as many in flight
 * as the segment writer issues, completions in whatever order the disk
 * gives them.
 *
 * libuv's loop already waits on a completion port of its own, but offers
 * no way to hang foreign OVERLAPPED requests on it; so this backend has its
 * own port and one waiter thread that takes completions off it and hands
 * them to the loop through a uv_async_t. The waiter never touches the
 * daemon's state: done() always runs on the loop thread, as io-ops.h promises.
 *
 * The files must be opened with FILE_FLAG_OVERLAPPED (and may be with
 * FILE_FLAG_NO_BUFFERING: chunk buffers and sizes are sector-aligned, the
 * same rule O_DIRECT follows on Linux); fd is the C runtime's descriptor
 * for such a handle (uv_open_osfhandle).
 */
#include "io-ops.h"
#include "compat-win.h"

#include <errno.h>
#include <stdlib.h>
#include <windows.h>

struct iocp_req {
	OVERLAPPED ov;            /* first: the port gives this pointer back */
	io_done_fn done;
	void *arg;
	long res;
	struct iocp_req *next;    /* on the completed list */
};

struct io_iocp {
	struct io io;
	HANDLE port;
	uv_thread_t waiter;
	uv_async_t async;
	uv_mutex_t lock;
	struct iocp_req *completed, **completed_tail;
	unsigned inflight;
};

/* Completion keys: files carry KEY_FILE; KEY_STOP, posted by close, ends
 * the waiter. */
#define KEY_FILE 1
#define KEY_STOP 2

static void waiter_main(void *arg)
{
	struct io_iocp *p = arg;

	for (;;) {
		DWORD n = 0;
		ULONG_PTR key = 0;
		OVERLAPPED *ov = NULL;
		BOOL ok = GetQueuedCompletionStatus(p->port, &n, &key, &ov, INFINITE);
		struct iocp_req *r;

		if (!ov) {
			if (key == KEY_STOP)
				return;
			continue; /* the port itself failed a wait: nothing to hand on */
		}
		r = (struct iocp_req *)ov;
		r->res = ok ? (long)n : win_errno(GetLastError());
		r->next = NULL;
		uv_mutex_lock(&p->lock);
		*p->completed_tail = r;
		p->completed_tail = &r->next;
		uv_mutex_unlock(&p->lock);
		uv_async_send(&p->async);
	}
}

/* On the loop thread: everything the waiter collected, in its order. */
static void on_completions(uv_async_t *a)
{
	struct io_iocp *p = a->data;
	struct iocp_req *list;

	uv_mutex_lock(&p->lock);
	list = p->completed;
	p->completed = NULL;
	p->completed_tail = &p->completed;
	uv_mutex_unlock(&p->lock);
	while (list) {
		struct iocp_req *r = list;

		list = r->next;
		p->inflight--;
		r->done(r->arg, r->res);
		free(r);
	}
}

static void on_async_closed(uv_handle_t *h)
{
	free(h->data);
}

static struct io *iocp_open(uv_loop_t *loop)
{
	struct io_iocp *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->io.ops = &io_iocp_ops;
	p->completed_tail = &p->completed;
	p->port = CreateIoCompletionPort(INVALID_HANDLE_VALUE, NULL, 0, 1);
	if (!p->port) {
		errno = -win_errno(GetLastError());
		free(p);
		return NULL;
	}
	if (uv_mutex_init(&p->lock) != 0) {
		CloseHandle(p->port);
		free(p);
		errno = ENOMEM;
		return NULL;
	}
	if (uv_async_init(loop, &p->async, on_completions) != 0) {
		uv_mutex_destroy(&p->lock);
		CloseHandle(p->port);
		free(p);
		errno = ENOMEM;
		return NULL;
	}
	p->async.data = p;
	if (uv_thread_create(&p->waiter, waiter_main, p) != 0) {
		CloseHandle(p->port);
		uv_mutex_destroy(&p->lock);
		uv_close((uv_handle_t *)&p->async, on_async_closed); /* frees p */
		errno = EAGAIN;
		return NULL;
	}
	return &p->io;
}

static int iocp_write(struct io *io, int fd, const void *buf, size_t len, uint64_t off,
		      io_done_fn done, void *arg)
{
	struct io_iocp *p = (struct io_iocp *)io;
	HANDLE h = uv_get_osfhandle(fd);
	struct iocp_req *r;

	if (h == INVALID_HANDLE_VALUE)
		return -EBADF;
	if (len > 0xffffffffu)
		return -EINVAL;
	/* A file joins the port on its first write; asking again fails with
	 * ERROR_INVALID_PARAMETER, which means it already has. */
	if (!CreateIoCompletionPort(h, p->port, KEY_FILE, 0) &&
	    GetLastError() != ERROR_INVALID_PARAMETER)
		return win_errno(GetLastError());
	if (!(r = calloc(1, sizeof(*r))))
		return -ENOMEM;
	r->done = done;
	r->arg = arg;
	r->ov.Offset = (DWORD)off;
	r->ov.OffsetHigh = (DWORD)(off >> 32);
	/* Success or pending, the completion comes through the port either
	 * way (the handle is not marked to skip it on success). */
	if (!WriteFile(h, buf, (DWORD)len, NULL, &r->ov) && GetLastError() != ERROR_IO_PENDING) {
		int err = win_errno(GetLastError());

		free(r);
		return err;
	}
	p->inflight++;
	return 0;
}

static void iocp_close(struct io *io)
{
	struct io_iocp *p = (struct io_iocp *)io;

	PostQueuedCompletionStatus(p->port, 0, KEY_STOP, NULL);
	uv_thread_join(&p->waiter);
	on_completions(&p->async); /* io-ops.h: none are left; this is belt and braces */
	CloseHandle(p->port);
	uv_mutex_destroy(&p->lock);
	uv_close((uv_handle_t *)&p->async, on_async_closed);
}

static int iocp_sync(struct io *io, int fd, io_done_fn done, void *arg)
{
	/* FlushFileBuffers on libuv's pool: the port has no flush request */
	return io_sync_on_pool(((struct io_iocp *)io)->async.loop, fd, done, arg);
}

const struct io_ops io_iocp_ops = {
	.name = "IOCP",
	.open = iocp_open,
	.write = iocp_write,
	.close = iocp_close,
	.sync = iocp_sync,
};
