/* daemon/store/io-pool.c - segment writes on libuv's thread pool (uv_fs_write).
 * The fallback where io_uring is refused: same semantics, a thread handoff
 * per write instead of a ring submission. */
#define _GNU_SOURCE
#include "io-ops.h"

#include <errno.h>
#include <stdlib.h>

struct pool_req {
	uv_fs_t req;
	io_done_fn done;
	void *arg;
};

struct io_pool {
	struct io io;
	uv_loop_t *loop;
};

static struct io *pool_open(uv_loop_t *loop)
{
	struct io_pool *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->io.ops = &io_pool_ops;
	p->loop = loop;
	return &p->io;
}

static void on_written(uv_fs_t *req)
{
	struct pool_req *r = (struct pool_req *)req;
	long res = (long)req->result;

	uv_fs_req_cleanup(req);
	r->done(r->arg, res);
	free(r);
}

static int pool_write(struct io *io, int fd, const void *buf, size_t len, uint64_t off,
		      io_done_fn done, void *arg)
{
	struct io_pool *p = (struct io_pool *)io;
	struct pool_req *r = malloc(sizeof(*r));
	uv_buf_t b = uv_buf_init((char *)buf, (unsigned)len);
	int err;

	if (!r)
		return -ENOMEM;
	r->done = done;
	r->arg = arg;
	err = uv_fs_write(p->loop, &r->req, fd, &b, 1, (int64_t)off, on_written);
	if (err) {
		free(r);
		return err;
	}
	return 0;
}

static int pool_sync(struct io *io, int fd, io_done_fn done, void *arg)
{
	return io_sync_on_pool(((struct io_pool *)io)->loop, fd, done, arg);
}

static void pool_close(struct io *io)
{
	free(io);
}

const struct io_ops io_pool_ops = {
	.name = "thread pool",
	.open = pool_open,
	.write = pool_write,
	.close = pool_close,
	.sync = pool_sync,
};
