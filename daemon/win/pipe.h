/* daemon/win/pipe.h - the control pipe's listening side (Windows), the
 * counterpart of ctl.c's listening socket.
 *
 * libuv's own pipe server (uv_pipe_bind) creates its instances with the
 * default security descriptor, which lets any user read the pipe and no
 * ordinary user write it; nor can it refuse a name someone else created
 * first. So the daemon creates each instance itself: with its security
 * descriptor (peer_pipe_security), the first one with
 * FILE_FLAG_FIRST_PIPE_INSTANCE (a name squatted by another process is an
 * error, not a pipe we share), remote clients rejected. A connected
 * instance is handed to the loop, which wraps it with uv_pipe_open and
 * reads and writes it as any libuv stream; the next instance is already
 * waiting by then.
 *
 * Waiting for a connection costs no thread of ours: the overlapped
 * ConnectNamedPipe's event is watched by the system thread pool
 * (RegisterWaitForSingleObject), whose callback only wakes the loop.
 */
#ifndef RINGLOG_DAEMON_PIPE_WIN_H
#define RINGLOG_DAEMON_PIPE_WIN_H

#include <uv.h>
#include <windows.h>

struct pipe_listener;

/* On the loop thread, for each client: pipe is a connected instance,
 * overlapped, now the callee's to wrap (uv_open_osfhandle + uv_pipe_open)
 * or close. */
typedef void (*pipe_accept_fn)(void *ctx, HANDLE pipe);

/* 0, or -EADDRINUSE (another process has the name), -errno. */
int pipe_listen(uv_loop_t *loop, const char *name, PSECURITY_DESCRIPTOR sd, pipe_accept_fn fn,
		void *ctx, struct pipe_listener **out);
/* Stop accepting; the listener is freed once libuv has let go of it. */
void pipe_listener_close(struct pipe_listener *l);

#endif /* RINGLOG_DAEMON_PIPE_WIN_H */
