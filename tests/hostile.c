/* tests/hostile.c - a client that speaks the control protocol (proto/ctl.h)
 * by hand and breaks every rule it can, for the hostile-client tests.
 *
 * usage: test-hostile MODE
 *   unsealed-ring   a ring memfd that can still shrink
 *   unsealed-meta   a metadata memfd that can still shrink
 *   meta-lies       metadata whose header claims more than the region holds,
 *                   then entries whose lengths run past it
 *   garbage-ring    a valid ring header, random bytes as records
 *   ring-flood      10,000 RING frames on one connection
 *   connect-flood   10,000 connections, each a HELLO, most left open
 *   frame-lies      a frame longer than the protocol allows
 *   huge-ring       a sealed ring memfd of 2 GiB (sparse), past ring_size limits
 *   scribble-ring   a valid ring that a second thread overwrites with random
 *                   bytes, header and data, while the daemon drains it
 *   bad-frames      one connection per malformed frame: unknown type, short
 *                   HELLO, RING before HELLO, a SYNC of the wrong length, a
 *                   frame cut off by the peer hanging up
 *   deaf            asks for status 20,000 times and never reads a reply
 *   hold N [S]      N idle connections: after 1 s prints "held K of N" (those
 *                   the daemon neither refused nor closed), then keeps them
 *                   S more seconds
 *   half-frames N   N connections, each sending half of a 1 MiB frame and
 *                   waiting 2 s: prints "held K of N" likewise
 *   wake-flood      10,000 WAKE frames, 2 s without reading a reply, then
 *                   reads them all: prints "wake-flood: N descriptors", N
 *                   the descriptors that came with them (WELCOME's only: 1,
 *                   not one per frame)
 *   loss-lies       well-formed LOSS records and ring totals claiming counts
 *                   whose sum wraps 64 bits; prints "loss-lies: drained"
 *                   once the daemon took them
 *
 * It prints every REFUSE message it gets, one per line ("refused: ..."),
 * and exits 0 when it got at least one (or, for connect-flood, when it
 * made all its connections). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "bell.h"
#include "ctl.h"
#include "event.h"
#include "helpers.h"
#include "ringbuf.h"

static int send_frame(int fd, uint16_t type, const void *p, uint32_t len, int pass_fd)
{
	long n = ringlog_ctl_send(fd, type, p, len, pass_fd, 0);

	return n < 0 ? (int)n : 0;
}

static int connect_daemon(void)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	const char *path = getenv("RINGLOG_SOCKET");
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (!path || fd < 0 || strlen(path) >= sizeof(a.sun_path))
		exit(2);
	strcpy(a.sun_path, path);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		perror("connect");
		exit(2);
	}
	return fd;
}

/* A memfd of size bytes, sealed (or not) against shrinking, mapped. */
static int make_memfd(size_t size, int seal, void **map)
{
	int fd = memfd_create("hostile", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd < 0 || ftruncate(fd, (off_t)size) < 0) {
		perror("memfd");
		exit(2);
	}
	*map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (*map == MAP_FAILED)
		exit(2);
	if (seal && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
		exit(2);
	return fd;
}

/* A valid, empty metadata region. */
static int make_meta(int seal, struct ringlog_meta_hdr **h)
{
	void *m;
	int fd = make_memfd(RINGLOG_META_MIN_SIZE, seal, &m);

	*h = m;
	(*h)->magic = RINGLOG_META_MAGIC;
	(*h)->version = RINGLOG_META_VERSION;
	(*h)->header_size = RINGLOG_META_HEADER_SIZE;
	(*h)->size = RINGLOG_META_MIN_SIZE;
	return fd;
}

static void hello(int fd, int meta_fd)
{
	struct ringlog_ctl_hello h = { .version = RINGLOG_CTL_VERSION };

	int err = send_frame(fd, RINGLOG_CTL_HELLO, &h, sizeof(h), meta_fd);

	if (err < 0) {
		fprintf(stderr, "HELLO: %s\n", strerror(-err));
		exit(2);
	}
}

static int send_ring(int fd, uint64_t handle, int ring_fd)
{
	struct ringlog_ctl_ring m = { .handle = handle, .tid = (uint32_t)getpid() };

	return send_frame(fd, RINGLOG_CTL_RING, &m, sizeof(m), ring_fd);
}

/* Read frames for up to ms milliseconds; print REFUSE messages. Returns how
 * many there were. */
static int refused; /* REFUSE frames seen so far */
static bool hung_up; /* the daemon closed the connection collect() read */

static int collect(int fd, int ms)
{
	static uint8_t buf[1 << 16];
	size_t have = 0;

	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, ms) <= 0)
			break;
		n = read(fd, buf + have, sizeof(buf) - have);
		if (n <= 0) {
			hung_up = true;
			break;
		}
		have += (size_t)n;
		while (have >= sizeof(struct ringlog_ctl_frame)) {
			struct ringlog_ctl_frame f;

			memcpy(&f, buf, sizeof(f));
			if (f.len > sizeof(buf) - sizeof(f))
				return refused;
			if (have < sizeof(f) + f.len)
				break;
			if (f.type == RINGLOG_CTL_REFUSE && f.len >= sizeof(struct ringlog_ctl_refuse)) {
				printf("refused: %.*s\n", (int)(f.len - sizeof(struct ringlog_ctl_refuse)),
				       (const char *)buf + sizeof(f) + sizeof(struct ringlog_ctl_refuse));
				refused++;
			}
			memmove(buf, buf + sizeof(f) + f.len, have - sizeof(f) - f.len);
			have -= sizeof(f) + f.len;
		}
	}
	return refused;
}

/* Read until the daemon refuses something or hangs up, 30 s at most: a
 * fixed short wait missed a refusal from a daemon slowed by ASan and a
 * loaded machine, and the test then read the next client's instead. */
static void await_refusal(int fd)
{
	int before = refused;

	hung_up = false;
	for (int i = 0; i < 300 && refused == before && !hung_up; i++)
		collect(fd, 100);
}

/* Wait (2 s at most) for the daemon to hang up; "refused: ..." if it did. */
static int expect_hangup(int fd, const char *what)
{
	char b[4096];
	struct pollfd pf = { .fd = fd, .events = POLLIN };

	while (poll(&pf, 1, 2000) == 1) {
		ssize_t n = read(fd, b, sizeof(b));

		if (n == 0) {
			printf("refused: connection closed (%s)\n", what);
			return 0;
		}
		if (n < 0)
			break;
	}
	printf("still connected after %s\n", what);
	return 1;
}

struct scribble {
	uint8_t *mem;
	size_t size;
	volatile int stop;
};

static void *scribbler(void *arg)
{
	struct scribble *s = arg;
	uint64_t seed = 12345;

	while (!s->stop) {
		uint64_t r = th_rand(&seed);
		size_t at = (size_t)(r % (s->size / 8)) * 8;

		memcpy(s->mem + at, &r, 8);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	struct ringlog_meta_hdr *mh;
	uint64_t seed = (uint64_t)getpid() * 7919;
	void *mem;
	int fd;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(mode, "connect-flood")) {
		static int fds[10000];
		int meta = make_meta(1, &mh), closed = 0;
		struct ringlog_ctl_hello h = { .version = RINGLOG_CTL_VERSION };

		for (int i = 0; i < 10000; i++) {
			fds[i] = connect_daemon();
			/* Past limits.clients the daemon refuses and hangs up:
			 * that is an answer too. */
			if (send_frame(fds[i], RINGLOG_CTL_HELLO, &h, sizeof(h), meta) < 0)
				closed++;
			/* Keep 1,000 open at a time (a process has a limited
			 * number of fds); the daemon sees them come and go. */
			if (i >= 1000)
				close(fds[i - 1000]);
		}
		printf("connections: 10000 (%d hung up by the daemon)\n", closed);
		return 0;
	}
	if (!strcmp(mode, "hold") || !strcmp(mode, "half-frames")) {
		int n = argc > 2 ? atoi(argv[2]) : 100, held = 0;
		int *fds = calloc((size_t)n, sizeof(int));
		static uint8_t half[RINGLOG_CTL_MAX / 2 + sizeof(struct ringlog_ctl_frame)];
		struct ringlog_ctl_frame f = { .len = RINGLOG_CTL_MAX - 64, .type = RINGLOG_CTL_STATUS };

		memcpy(half, &f, sizeof(f));
		for (int i = 0; i < n && fds; i++) {
			fds[i] = connect_daemon();
			if (mode[0] == 'h' && mode[1] == 'a') {
				size_t off = 0;

				while (off < sizeof(half)) {
					ssize_t k = send(fds[i], half + off, sizeof(half) - off, MSG_NOSIGNAL);

					if (k <= 0)
						break;
					off += (size_t)k;
				}
			}
		}
		/* Held: no answer once the daemon has read every connection.
		 * Refused: a REFUSE frame then EOF; closed: EOF. A fixed
		 * second was too short for a daemon slowed by ASan and a
		 * loaded machine: the count must stay the same for 2 s (30 s
		 * at most), after the same first wait as before. */
		sleep(mode[0] == 'h' && mode[1] == 'a' ? 2 : 1);
		for (int last = -1, same = 0, t = 0; fds && same < 4 && t < 60; t++) {
			held = 0;
			for (int i = 0; i < n; i++) {
				struct pollfd pf = { fds[i], POLLIN, 0 };

				held += poll(&pf, 1, 0) == 0;
			}
			same = held == last ? same + 1 : 0;
			last = held;
			if (same < 4)
				usleep(500000);
		}
		for (int i = 0; i < n && fds; i++) {
			struct pollfd pf = { fds[i], POLLIN, 0 };

			if (poll(&pf, 1, 0) != 0)
				collect(fds[i], 0);
		}
		printf("held %d of %d\n", held, n);
		fflush(stdout);
		if (argc > 3)
			sleep((unsigned)atoi(argv[3]));
		free(fds);
		return 0;
	}
	if (!strcmp(mode, "bad-frames")) {
		struct ringlog_ctl_hello h = { .version = RINGLOG_CTL_VERSION };
		struct ringlog_ctl_ring r = { .handle = 1 };
		uint8_t junk[64] = { 1, 2, 3 };
		int bad = 0;

		fd = connect_daemon();
		send_frame(fd, 999, junk, sizeof(junk), -1);
		bad += expect_hangup(fd, "unknown frame type 999");
		close(fd);
		fd = connect_daemon();
		send_frame(fd, RINGLOG_CTL_HELLO, &h, 5, make_meta(1, &mh));
		bad += expect_hangup(fd, "HELLO of 5 bytes");
		close(fd);
		fd = connect_daemon();
		send_frame(fd, RINGLOG_CTL_RING, &r, sizeof(r), make_memfd(RINGLOG_RING_HEADER_SIZE + 8192, 1, &mem));
		bad += expect_hangup(fd, "RING before HELLO");
		close(fd);
		fd = connect_daemon();
		hello(fd, make_meta(1, &mh));
		send_frame(fd, RINGLOG_CTL_SYNC, junk, 3, -1);
		bad += expect_hangup(fd, "SYNC of 3 bytes");
		close(fd);
		/* Half a frame, then gone: the daemon just forgets it. */
		fd = connect_daemon();
		{
			struct ringlog_ctl_frame f = { .len = 4096, .type = RINGLOG_CTL_STATUS };

			if (write(fd, &f, sizeof(f)) != sizeof(f) || write(fd, junk, 10) != 10)
				bad++;
		}
		close(fd);
		return bad ? 1 : 0;
	}
	if (!strcmp(mode, "deaf")) {
		int sent = 0;

		fd = connect_daemon();
		/* Non-blocking: if the daemon ever stops reading us (its queue
		 * for us full and the socket too), stop instead of hanging. The
		 * wait is long because each request costs the daemon a status
		 * report, and a socket's worth of them takes over half a second
		 * under ASan on a busy 2-core machine (seen in CI: 7961 sent). */
		fcntl(fd, F_SETFL, O_NONBLOCK);
		for (int i = 0; i < 20000; i++) {
			struct ringlog_ctl_frame f = { .len = 0, .type = RINGLOG_CTL_STATUS };

			if (write(fd, &f, sizeof(f)) != sizeof(f)) {
				struct pollfd pf = { .fd = fd, .events = POLLOUT };

				if (poll(&pf, 1, 10000) != 1)
					break;
				i--;
				continue;
			}
			sent++;
		}
		printf("refused: nothing; sent %d status requests, read no reply\n", sent);
		sleep(1);
		return 0;
	}
	fd = connect_daemon();
	if (!strcmp(mode, "unsealed-meta")) {
		hello(fd, make_meta(0, &mh));
	} else if (!strcmp(mode, "meta-lies")) {
		int meta = make_meta(1, &mh);

		mh->used = 1u << 30; /* past the region */
		hello(fd, meta);
		await_refusal(fd);
		/* A second client whose entry lengths run past the region. */
		close(fd);
		fd = connect_daemon();
		meta = make_meta(1, &mh);
		{
			struct ringlog_meta_entry *e = (void *)((uint8_t *)mh + RINGLOG_META_HEADER_SIZE);

			e->len = 0xfffffff8u;
			e->kind = RINGLOG_META_EVENT;
			__atomic_store_n(&mh->used, 64u, __ATOMIC_RELEASE);
		}
		hello(fd, meta);
		send_frame(fd, RINGLOG_CTL_META, NULL, 0, -1);
	} else {
		hello(fd, make_meta(1, &mh));
	}

	if (!strcmp(mode, "unsealed-ring")) {
		send_ring(fd, 1, make_memfd(RINGLOG_RING_HEADER_SIZE + 65536, 0, &mem));
	} else if (!strcmp(mode, "huge-ring")) {
		struct ringlog_producer p;
		int rfd = make_memfd(RINGLOG_RING_HEADER_SIZE + (2ull << 30), 1, &mem);

		ringlog_prod_init(&p, mem, 2ull << 30, (uint32_t)getpid(), (uint32_t)getpid(), 1);
		send_ring(fd, 3, rfd);
	} else if (!strcmp(mode, "scribble-ring")) {
		struct ringlog_producer p;
		struct scribble sc = { .size = RINGLOG_RING_HEADER_SIZE + 65536 };
		int rfd = make_memfd(sc.size, 1, &mem);
		pthread_t th;

		ringlog_prod_init(&p, mem, 65536, (uint32_t)getpid(), (uint32_t)getpid(), 1);
		send_ring(fd, 9, rfd);
		collect(fd, 200); /* attached and draining */
		sc.mem = mem;
		pthread_create(&th, NULL, scribbler, &sc);
		for (int i = 0; i < 30 && !refused; i++)
			collect(fd, 100);
		sc.stop = 1;
		pthread_join(th, NULL);
	} else if (!strcmp(mode, "garbage-ring")) {
		struct ringlog_producer p;
		int rfd = make_memfd(RINGLOG_RING_HEADER_SIZE + 65536, 1, &mem);
		uint8_t *data;

		ringlog_prod_init(&p, mem, 65536, (uint32_t)getpid(), (uint32_t)getpid(), 1);
		data = (uint8_t *)mem + RINGLOG_RING_HEADER_SIZE;
		for (size_t i = 0; i < 65536; i += 8) {
			uint64_t r = th_rand(&seed);

			memcpy(data + i, &r, 8);
		}
		__atomic_store_n(&p.hdr->prod_pos, 40000, __ATOMIC_RELEASE);
		send_ring(fd, 7, rfd);
	} else if (!strcmp(mode, "bad-bells")) {
		/* bell pages (proto/bell.h) of the wrong size and unsealed,
		 * then a good one scribbled over all along, and rings naming
		 * no slot, one slot twice, and a slot past the page */
		struct ringlog_ctl_bell b = { .slots = RINGLOG_BELL_SLOTS };
		static const uint32_t slots[] = { 0, 1, 1, 4096, 0xffffffffu };
		struct ringlog_ring_hdr *hdrs[5];
		struct scribble sc = { .size = RINGLOG_BELL_SIZE };
		pthread_t th;
		void *bm;
		int drained = 0;

		send_frame(fd, RINGLOG_CTL_BELL, &b, sizeof(b), make_memfd(8192, 1, &bm));
		send_frame(fd, RINGLOG_CTL_BELL, &b, sizeof(b), make_memfd(RINGLOG_BELL_SIZE, 0, &bm));
		send_frame(fd, RINGLOG_CTL_BELL, &b, sizeof(b), make_memfd(RINGLOG_BELL_SIZE, 1, &bm));
		sc.mem = bm;
		pthread_create(&th, NULL, scribbler, &sc);
		for (unsigned i = 0; i < sizeof(slots) / sizeof(slots[0]); i++) {
			struct ringlog_producer p;
			struct ringlog_ctl_ring m = { .handle = 20 + i, .tid = (uint32_t)getpid(),
						      .bell = slots[i] };
			int rfd = make_memfd(RINGLOG_RING_HEADER_SIZE + 65536, 1, &mem);

			ringlog_prod_init(&p, mem, 65536, (uint32_t)getpid(), (uint32_t)getpid(), 1);
			hdrs[i] = p.hdr;
			send_frame(fd, RINGLOG_CTL_RING, &m, sizeof(m), rfd);
		}
		/* quiet long enough for a ring with a bell to sleep; then one
		 * PAD record (the whole data area) in each, which no bell
		 * announces: every ring must still be drained (the test's
		 * daemon sweeps once a minute) */
		collect(fd, 300);
		for (unsigned i = 0; i < 5; i++) {
			struct ringlog_rec_hdr h = { .len = 65536 - RINGLOG_REC_HDR_SIZE,
						     .type = RINGLOG_REC_PAD };

			memcpy((uint8_t *)hdrs[i] + RINGLOG_RING_HEADER_SIZE, &h, sizeof(h));
			__atomic_store_n(&hdrs[i]->prod_pos, 65536, __ATOMIC_RELEASE);
		}
		for (int i = 0; i < 30 && drained < 5; i++) {
			collect(fd, 100);
			drained = 0;
			for (unsigned k = 0; k < 5; k++)
				drained += __atomic_load_n(&hdrs[k]->cons_pos, __ATOMIC_ACQUIRE) == 65536;
		}
		sc.stop = 1;
		pthread_join(th, NULL);
		printf("bells: %d refused, %d of 5 rings drained\n", refused, drained);
		return 0;
	} else if (!strcmp(mode, "wake-flood")) {
		/* Each answer carrying the daemon's eventfd counts against its
		 * user's open files while unread: a program asking in a loop
		 * must not be able to pile them up (proto/ctl.h: WAKE). */
		static uint8_t buf[1 << 16];
		int fds = 0, frames = 0;

		for (int i = 0; i < 10000; i++)
			if (send_frame(fd, RINGLOG_CTL_WAKE, NULL, 0, -1) < 0)
				break;
		/* unread while the daemon answers them all: what is in flight
		 * then is what a program that never reads could pile up (once
		 * read, each answer may carry one again) */
		sleep(2);
		for (;;) {
			union {
				char b[CMSG_SPACE(sizeof(int) * 16)];
				struct cmsghdr align;
			} u;
			struct iovec iov = { buf, sizeof(buf) };
			struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b,
					    .msg_controllen = sizeof(u.b) };
			struct pollfd pf = { .fd = fd, .events = POLLIN };
			ssize_t n;

			if (poll(&pf, 1, 1000) != 1 || (n = recvmsg(fd, &m, MSG_CMSG_CLOEXEC)) <= 0)
				break;
			frames += (int)(n / 8); /* about: frames of 8 bytes */
			for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
				if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
					int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));

					for (int j = 0; j < k; j++) {
						int one;

						memcpy(&one, CMSG_DATA(c) + j * sizeof(int), sizeof(one));
						close(one);
					}
					fds += k;
				}
		}
		printf("wake-flood: %d descriptors (%d frames' worth read)\n", fds, frames);
		return frames > 10000 ? 0 : 1;
	} else if (!strcmp(mode, "loss-lies")) {
		/* Well-formed LOSS records that claim absurd counts: three of
		 * 2^63 - 5 records each (their sum wraps 64 bits), then a
		 * header whose totals claim more, and the ring finished. The
		 * daemon must count them without wrapping or going negative. */
		struct ringlog_producer p;
		int rfd = make_memfd(RINGLOG_RING_HEADER_SIZE + 65536, 1, &mem);
		const uint64_t big = (1ull << 63) - 5;
		struct ringlog_rec_loss l[3] = {
			{ .records = big, .bytes = 1, .total_records = big, .total_bytes = 1 },
			{ .records = big, .bytes = 1, .total_records = 2 * big, .total_bytes = 2 },
			{ .records = big, .bytes = 1, .total_records = UINT64_MAX - 1, .total_bytes = 3 },
		};
		int drained = 0;

		ringlog_prod_init(&p, mem, 65536, (uint32_t)getpid(), (uint32_t)getpid(), 1);
		for (unsigned i = 0; i < 3; i++)
			if (ringlog_prod_write(&p, RINGLOG_REC_LOSS, 0, &l[i], sizeof(l[i])) < 0)
				return 2;
		__atomic_store_n(&p.hdr->lost_records_total, UINT64_MAX, __ATOMIC_RELEASE);
		__atomic_store_n(&p.hdr->lost_bytes_total, UINT64_MAX, __ATOMIC_RELEASE);
		ringlog_prod_finish(&p);
		send_ring(fd, 11, rfd);
		for (int i = 0; i < 50 && !drained; i++) {
			collect(fd, 100);
			drained = __atomic_load_n(&p.hdr->cons_pos, __ATOMIC_ACQUIRE) ==
				  __atomic_load_n(&p.hdr->prod_pos, __ATOMIC_ACQUIRE);
		}
		printf("loss-lies: %s, %d refused\n", drained ? "drained" : "not drained", refused);
		return 0;
	} else if (!strcmp(mode, "ring-flood")) {
		for (int i = 0; i < 10000; i++) {
			struct ringlog_producer p;
			int rfd = make_memfd(RINGLOG_RING_HEADER_SIZE + 8192, 1, &mem);

			ringlog_prod_init(&p, mem, 8192, (uint32_t)getpid(), (uint32_t)getpid(), 1);
			if (send_ring(fd, (uint64_t)i + 1, rfd) < 0)
				break;
			munmap(mem, RINGLOG_RING_HEADER_SIZE + 8192);
			close(rfd);
			if (i % 100 == 99)
				collect(fd, 0); /* keep the daemon's replies flowing */
		}
	} else if (!strcmp(mode, "frame-lies")) {
		struct ringlog_ctl_frame f = { .len = RINGLOG_CTL_MAX + 1, .type = RINGLOG_CTL_META };

		if (write(fd, &f, sizeof(f)) != sizeof(f))
			return 2;
		/* The daemon must close the connection (after the WELCOME
		 * and ENABLE frames it may already have sent). */
		char b[4096];
		struct pollfd pf = { .fd = fd, .events = POLLIN };

		while (poll(&pf, 1, 2000) == 1) {
			ssize_t n = read(fd, b, sizeof(b));

			if (n == 0) {
				printf("refused: connection closed\n");
				return 0;
			}
			if (n < 0)
				break;
		}
		return 1;
	}
	if (!refused)
		await_refusal(fd);
	collect(fd, 300); /* and what follows it */
	return refused > 0 ? 0 : 1;
}
