/* tests/fuzz/fuzz-ctl.c - the control protocol, spoken by a hostile peer to
 * the real daemon.
 *
 * ringlogd runs in this process (daemon_start, as main.c does) on a private
 * directory, listening on its socket. Each input is a script played over a
 * fresh connection, so what is fuzzed is everything a peer reaches: the
 * accept path, frame splitting, descriptors passed with SCM_RIGHTS, every
 * frame handler (HELLO, RING, META, SYNC, STATUS, TAIL), the memfd checks,
 * the metadata parser and the ring consumer behind them, and the replies.
 *
 * Script: a sequence of steps, each one opcode byte, then:
 *   op % 4 == 0  send: u16 n, n bytes, on the stream, carrying the
 *                descriptors made since the last send
 *   op % 4 == 1  make a memfd for the next send: u16 n, n bytes of content.
 *                (op >> 2) & 3 picks the size, op & 0x10 seals it against
 *                shrinking and growing, op & 0x20 lays out a valid ring
 *                (the bytes are then its records), op & 0x40 a valid
 *                metadata region (the bytes are then its entries)
 *   op % 4 == 2  let the daemon run
 *   op % 4 == 3  read and drop the replies
 * At the end the connection closes and the daemon drains and forgets it.
 */
#define _GNU_SOURCE
#include "daemon.h"
#include "log.h"
#include "ingest/drain.h"

#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "event.h"
#include "ringbuf.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct daemon *d;
static char dir[64];

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)flag;
	(void)f;
	return remove(path);
}

static void cleanup(void)
{
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	snprintf(dir, sizeof(dir), "/tmp/ringlog-fuzz-ctl.XXXXXX");
	if (!mkdtemp(dir) || !(d = calloc(1, sizeof(*d))))
		abort();
	atexit(cleanup);
	ringlog_config_defaults(&d->cfg);
	snprintf(d->cfg.storage_dir, sizeof(d->cfg.storage_dir), "%s/store", dir);
	snprintf(d->cfg.socket_path, sizeof(d->cfg.socket_path), "%s/sock", dir);
	d->cfg.io_backend = RINGLOG_IO_POOL; /* no io_uring limits in a fuzzer */
	d->cfg.max_disk = 64u << 20;
	d->cfg.min_free_bytes = 0;
	d->cfg.min_free_percent = 0;
	d->cfg.forward.user_events = false;
	d_log_init(false, false);
	if (daemon_start(d) < 0)
		abort();
	return 0;
}

static void turn(void)
{
	uv_run(d->loop, UV_RUN_NOWAIT);
}

static size_t take16(const uint8_t **p, size_t *left)
{
	size_t n;

	if (*left < 2)
		return *left = 0;
	n = (size_t)(*p)[0] | (size_t)(*p)[1] << 8;
	*p += 2;
	*left -= 2;
	return n < *left ? n : *left;
}

static int make_memfd(uint8_t op, const uint8_t *b, size_t n)
{
	static const size_t sizes[] = { 4096, 8192 + RINGLOG_RING_HEADER_SIZE,
					65536 + RINGLOG_RING_HEADER_SIZE, 1u << 20 };
	size_t size = sizes[(op >> 2) & 3];
	int fd = memfd_create("fuzz", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	uint8_t *m;

	if (fd < 0)
		return -1;
	if (ftruncate(fd, (off_t)size) < 0 ||
	    (m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
		close(fd);
		return -1;
	}
	if ((op & 0x20) && size > RINGLOG_RING_HEADER_SIZE) {
		struct ringlog_producer p;
		uint64_t data = size - RINGLOG_RING_HEADER_SIZE;

		if (ringlog_prod_init(&p, m, data, (uint32_t)getpid(), (uint32_t)gettid(), 1) == 0) {
			if (n > data)
				n = (size_t)data;
			memcpy(m + RINGLOG_RING_HEADER_SIZE, b, n);
			__atomic_store_n(&p.hdr->prod_pos, (uint64_t)(n & ~(size_t)7),
					 __ATOMIC_RELEASE);
		}
	} else if (op & 0x40) {
		struct ringlog_meta_hdr *h = (void *)m;

		if (n > size - RINGLOG_META_HEADER_SIZE)
			n = size - RINGLOG_META_HEADER_SIZE;
		h->magic = RINGLOG_META_MAGIC;
		h->version = RINGLOG_META_VERSION;
		h->header_size = RINGLOG_META_HEADER_SIZE;
		h->size = (uint32_t)size;
		memcpy(m + RINGLOG_META_HEADER_SIZE, b, n);
		__atomic_store_n(&h->used, (uint32_t)n, __ATOMIC_RELEASE);
	} else {
		memcpy(m, b, n < size ? n : size);
	}
	munmap(m, size);
	if ((op & 0x10) && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static void send_all(int fd, const uint8_t *b, size_t n, int *fds, int *nfds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * 4)];
		struct cmsghdr align;
	} u;

	for (int tries = 0; n && tries < 100; tries++) {
		struct iovec iov = { (void *)b, n };
		struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
		ssize_t k;

		if (*nfds) {
			struct cmsghdr *c;

			memset(&u, 0, sizeof(u));
			msg.msg_control = u.buf;
			msg.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)*nfds);
			c = CMSG_FIRSTHDR(&msg);
			c->cmsg_level = SOL_SOCKET;
			c->cmsg_type = SCM_RIGHTS;
			c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)*nfds);
			memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)*nfds);
		}
		k = sendmsg(fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (k < 0) {
			turn(); /* the daemon's side is full: let it read */
			continue;
		}
		for (int i = 0; i < *nfds; i++)
			close(fds[i]);
		*nfds = 0;
		b += k;
		n -= (size_t)k;
	}
}

static void drop_replies(int fd)
{
	char b[65536];

	while (recv(fd, b, sizeof(b), MSG_DONTWAIT) > 0)
		;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), fds[4], nfds = 0;

	snprintf(a.sun_path, sizeof(a.sun_path), "%s", d->cfg.socket_path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		abort(); /* the daemon must always take a connection */
	turn();
	while (size) {
		uint8_t op = *data++;
		size_t n;

		size--;
		switch (op & 3) {
		case 0:
			n = take16(&data, &size);
			send_all(fd, data, n, fds, &nfds);
			data += n;
			size -= n;
			break;
		case 1:
			n = take16(&data, &size);
			if (nfds < 4 && (fds[nfds] = make_memfd(op, data, n)) >= 0)
				nfds++;
			data += n;
			size -= n;
			break;
		case 2:
			turn();
			break;
		default:
			drop_replies(fd);
			break;
		}
	}
	turn();
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
	close(fd);
	/* The daemon forgets the peer once its rings are drained and their
	 * chunks written (the pool completes them on its threads). */
	for (int i = 0; i < 2000 && d->nclients; i++) {
		struct timespec ts = { 0, 20000 };

		turn();
		drain_all(d);
		store_seal(d->st);
		nanosleep(&ts, NULL);
	}
	if (d->nclients)
		abort(); /* a peer that hung up must not stay forever */
	return 0;
}
