/* daemon/store/io-ops.h - where segment writes go. One ops table, one file per
 * backend (io-uring.c, io-pool.c; io-iocp.c on Windows), in the manner of
 * Redis's ae_*.c: the segment writer never knows which one runs.
 *
 * A backend takes positional writes of aligned buffers and calls done(arg,
 * res) on the loop thread when each completes: res is the byte count or
 * -errno. Several writes may be in flight; completions may come back in
 * any order.
 */
#ifndef RINGLOG_DAEMON_IO_OPS_H
#define RINGLOG_DAEMON_IO_OPS_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

struct io;
typedef void (*io_done_fn)(void *arg, long res);

struct io_ops {
	const char *name;  /* "io_uring", "thread pool", "IOCP" */
	/* Returns a backend, or NULL with errno set (EPERM/ENOSYS: refused
	 * by the kernel or its policy; the caller may fall back). */
	struct io *(*open)(uv_loop_t *loop);
	int (*write)(struct io *io, int fd, const void *buf, size_t len, uint64_t off,
		     io_done_fn done, void *arg);
	void (*close)(struct io *io); /* after every write has completed */
	/* Optional: the buffers every write will come from (the chunks), for
	 * a backend that can pin them once instead of per write. Returns 0 or
	 * -errno; on failure writes still work, only slower. */
	int (*register_buffers)(struct io *io, void *const *bufs, size_t len, unsigned n);
	/* Make what was written to fd durable (fdatasync) off the loop
	 * thread; done(arg, 0 or -errno) on the loop thread. A sync of a
	 * rotated segment takes tens of milliseconds on a virtual disk: on
	 * the loop it held every drain that long, and rings overflowed at
	 * each rotation (issue 23). Returns 0 or -errno (not queued). */
	int (*sync)(struct io *io, int fd, io_done_fn done, void *arg);
};

/* sync() on libuv's thread pool (io-sync.c): for the backends that have
 * no queue of their own for it (thread pool, IOCP). */
int io_sync_on_pool(uv_loop_t *loop, int fd, io_done_fn done, void *arg);

struct io {
	const struct io_ops *ops;
};

extern const struct io_ops io_uring_ops;
extern const struct io_ops io_pool_ops;
extern const struct io_ops io_iocp_ops;

#endif /* RINGLOG_DAEMON_IO_OPS_H */
