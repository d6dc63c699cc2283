/* daemon/store/io-sync.c - fdatasync on libuv's thread pool, the sync() of
 * the backends without a queue of their own for it (io-pool.c, io-iocp.c):
 * the loop goes on draining while the disk flushes. */
#define _GNU_SOURCE /* uv.h wants the POSIX types of a full libc */
#include "io-ops.h"

#include <errno.h>
#include <stdlib.h>

struct sync_req {
	uv_fs_t req;
	io_done_fn done;
	void *arg;
};

static void on_synced(uv_fs_t *req)
{
	struct sync_req *r = (struct sync_req *)req;
	long res = (long)req->result;

	uv_fs_req_cleanup(req);
#ifdef _WIN32
	/* libuv's codes are not -errno there: the caller's strerror() needs one */
	if (res < 0)
		res = -EIO;
#endif
	r->done(r->arg, res < 0 ? res : 0);
	free(r);
}

int io_sync_on_pool(uv_loop_t *loop, int fd, io_done_fn done, void *arg)
{
	struct sync_req *r = malloc(sizeof(*r));
	int err;

	if (!r)
		return -ENOMEM;
	r->done = done;
	r->arg = arg;
	if ((err = uv_fs_fdatasync(loop, &r->req, fd, on_synced)) < 0)
		free(r);
	return err < 0 ? err : 0;
}
