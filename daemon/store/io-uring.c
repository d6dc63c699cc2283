/* daemon/store/io-uring.c - segment writes through io_uring (liburing 2.3 API).
 *
 * Completions reach the libuv loop through an eventfd registered with the
 * ring and watched by a uv_poll: no thread, no spinning. Submissions are
 * made at once (one io_uring_submit per chunk); chunks are large, so the
 * system call is amortised over thousands of events.
 */
#define _GNU_SOURCE
#include "io-ops.h"

#include <errno.h>
#include <liburing.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <unistd.h>

struct uring_req {
	io_done_fn done;
	void *arg;
};

struct io_uring_be {
	struct io io;
	struct io_uring ring;
	int efd;
	uv_poll_t poll;
	unsigned inflight;
	/* registered buffers (the chunks): pinned once, not per write */
	void *const *fixed;
	size_t fixed_len;
	unsigned nfixed;
};

static void reap(struct io_uring_be *u)
{
	struct io_uring_cqe *cqe;

	while (io_uring_peek_cqe(&u->ring, &cqe) == 0) {
		struct uring_req *r = io_uring_cqe_get_data(cqe);
		long res = cqe->res;

		io_uring_cqe_seen(&u->ring, cqe);
		u->inflight--;
		if (r) {
			r->done(r->arg, res);
			free(r);
		}
	}
}

static void on_eventfd(uv_poll_t *h, int status, int events)
{
	struct io_uring_be *u = h->data;
	uint64_t v;

	(void)status;
	(void)events;
	if (read(u->efd, &v, sizeof(v)) < 0) {
		/* EAGAIN: a previous callback already consumed the count */
	}
	reap(u);
}

static struct io *uring_open(uv_loop_t *loop)
{
	struct io_uring_be *u = calloc(1, sizeof(*u));
	int err;

	if (!u)
		return NULL;
	err = io_uring_queue_init(64, &u->ring, 0);
	if (err < 0)
		goto fail_free;
	u->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (u->efd < 0) {
		err = -errno;
		goto fail_ring;
	}
	err = io_uring_register_eventfd(&u->ring, u->efd);
	if (err < 0)
		goto fail_efd;
	err = uv_poll_init(loop, &u->poll, u->efd);
	if (err < 0)
		goto fail_efd;
	u->poll.data = u;
	uv_poll_start(&u->poll, UV_READABLE, on_eventfd);
	u->io.ops = &io_uring_ops;
	return &u->io;

fail_efd:
	close(u->efd);
fail_ring:
	io_uring_queue_exit(&u->ring);
fail_free:
	free(u);
	errno = -err;
	return NULL;
}

/* A submission slot and its completion's record; NULL with *err set
 * (-ENOMEM, or -EBUSY: the submission queue stays full). */
static struct io_uring_sqe *get_sqe(struct io_uring_be *u, io_done_fn done, void *arg,
				    struct uring_req **req, int *err)
{
	struct uring_req *r = malloc(sizeof(*r));
	struct io_uring_sqe *sqe;

	*err = -ENOMEM;
	if (!r)
		return NULL;
	r->done = done;
	r->arg = arg;
	sqe = io_uring_get_sqe(&u->ring);
	if (!sqe) {
		/* The submission queue is full of unsubmitted entries: push
		 * them and take a slot. */
		io_uring_submit(&u->ring);
		sqe = io_uring_get_sqe(&u->ring);
	}
	if (!sqe) {
		free(r);
		*err = -EBUSY;
		return NULL;
	}
	*req = r;
	return sqe;
}

static int submit(struct io_uring_be *u, struct io_uring_sqe *sqe, struct uring_req *r)
{
	io_uring_sqe_set_data(sqe, r);
	u->inflight++;
	/* On failure the sqe stays queued and goes with the next submit. */
	(void)io_uring_submit(&u->ring);
	return 0;
}

static int uring_write(struct io *io, int fd, const void *buf, size_t len, uint64_t off,
		       io_done_fn done, void *arg)
{
	struct io_uring_be *u = (struct io_uring_be *)io;
	struct uring_req *r;
	int err;
	struct io_uring_sqe *sqe = get_sqe(u, done, arg, &r, &err);

	if (!sqe)
		return err;
	io_uring_prep_write(sqe, fd, buf, (unsigned)len, off);
	for (unsigned i = 0; i < u->nfixed; i++) {
		const uint8_t *b = u->fixed[i];

		if ((const uint8_t *)buf >= b && (const uint8_t *)buf + len <= b + u->fixed_len) {
			io_uring_prep_write_fixed(sqe, fd, buf, (unsigned)len, off, (int)i);
			break;
		}
	}
	return submit(u, sqe, r);
}

static int uring_sync(struct io *io, int fd, io_done_fn done, void *arg)
{
	struct io_uring_be *u = (struct io_uring_be *)io;
	struct uring_req *r;
	int err;
	struct io_uring_sqe *sqe = get_sqe(u, done, arg, &r, &err);

	if (!sqe)
		return err;
	io_uring_prep_fsync(sqe, fd, IORING_FSYNC_DATASYNC);
	return submit(u, sqe, r);
}

/* Registered buffers are counted against RLIMIT_MEMLOCK unless the daemon
 * has CAP_IPC_LOCK: the unit's LimitMEMLOCK= (64M) covers them, but a
 * daemon started by hand as a user has the system's default, 8 MiB on
 * Debian, below the chunk buffers' 16 MiB. Its soft limit is raised as far
 * as the hard one allows (never lowered); what still does not fit is
 * refused by the kernel, the caller says so, and each write pins its
 * buffer instead (segment.c: memlock_hint()). */
static void memlock_room(size_t need)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_MEMLOCK, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY ||
	    rl.rlim_cur >= need || rl.rlim_max <= rl.rlim_cur)
		return;
	/* the hard limit: the memory this user has locked already counts too */
	rl.rlim_cur = rl.rlim_max;
	(void)setrlimit(RLIMIT_MEMLOCK, &rl);
}

static int uring_register_buffers(struct io *io, void *const *bufs, size_t len, unsigned n)
{
	struct io_uring_be *u = (struct io_uring_be *)io;
	struct iovec iov[64];
	int err;

	if (n > 64)
		return -E2BIG;
	for (unsigned i = 0; i < n; i++)
		iov[i] = (struct iovec){ bufs[i], len };
	memlock_room((size_t)n * len);
	err = io_uring_register_buffers(&u->ring, iov, n);
	if (err < 0)
		return err;
	u->fixed = bufs;
	u->fixed_len = len;
	u->nfixed = n;
	return 0;
}

static void on_poll_closed(uv_handle_t *h)
{
	struct io_uring_be *u = h->data;

	io_uring_queue_exit(&u->ring);
	close(u->efd);
	free(u);
}

static void uring_close(struct io *io)
{
	struct io_uring_be *u = (struct io_uring_be *)io;

	/* Callers close after every write completed; reap stragglers anyway. */
	while (u->inflight) {
		struct io_uring_cqe *cqe;

		/* submitting too: a request whose submit failed earlier
		 * would otherwise never complete */
		(void)io_uring_submit(&u->ring);
		if (io_uring_wait_cqe(&u->ring, &cqe) < 0)
			break;
		reap(u);
	}
	uv_poll_stop(&u->poll);
	uv_close((uv_handle_t *)&u->poll, on_poll_closed);
}

const struct io_ops io_uring_ops = {
	.name = "io_uring",
	.open = uring_open,
	.write = uring_write,
	.close = uring_close,
	.register_buffers = uring_register_buffers,
	.sync = uring_sync,
};
