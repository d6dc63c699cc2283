/* tests/types.c - a client for the library tests.
 *
 * usage: test-types MODE
 *   types      one event with every field type and hint at its edge values,
 *              one with empty and over-long strings and the largest blob,
 *              one with an activity id; waits until the daemon has them
 *   disabled   1,000,000 disabled (level 5) events: prints rings_created,
 *              which must stay 0, then one enabled event and it again
 *   threads    10,000 threads, each one event, one after another; prints
 *              the process's open fds and rings before and after
 *   fork       emits, forks: the child emits into its own ring and execs
 *              `ls -l /proc/self/fd` (no ringlog fd may survive exec)
 *   burst      (run with a 64 KiB ring) one event, then 5 times: 300 ms idle
 *              (the daemon goes to sleep), then 2,000 events at about 1 MB/s,
 *              past the ring's high-water mark within a millisecond
 *   steady     2 s at about 6 MB/s (100 events per millisecond): the daemon
 *              stays awake draining, nobody needs waking
 *              (both print "wakeups=N dropped=N emitted=N")
 *   slices     start/stop pairs: nested on the main thread without activity
 *              ids (Outer{n} > Inner{n}, ended by InnerDone), two activities overlapping (A
 *              starts, B starts, A stops, B stops), B's stop from a second
 *              thread, and a stop that closes nothing; waits like types
 *   signal     the main thread emits 300,000 events while a 20 us timer's
 *              handler emits on the same thread, often between the inline
 *              reserve and publish; prints what was emitted and dropped
 *   abort-fresh  one event and a flush (connected), then 100 threads, each
 *              5 events, and abort() as soon as the last has emitted: their
 *              rings are new, and the library's thread may not have run
 *   fd-full    (started with no daemon) RLIMIT_NOFILE 96; threads, one
 *              event each, until the rings of those ended (a descriptor
 *              each, waiting for a daemon) fill the table and a ring cannot
 *              be made; prints "full", then waits up to 30 s for a daemon to
 *              take them, and prints what it had, flushed and freed; then
 *              bursts (as burst) until one wakes the daemon (8 at most)
 *   fork-connecting  a listening socket whose backlog is full (RINGLOG_SOCKET
 *              names it), so that the library's thread waits in connect();
 *              then fork(): the child prints "child sockets=N", N the
 *              sockets it holds besides the two this mode made (0 unless
 *              the connecting one came along)
 *   resident   one event (no daemon needed), then the ring's mapping in
 *              /proc/self/smaps: prints "size=N rss=N clean=N" (kB)
 *   key-dtor   20 threads at once, each 2 events, and one from a pthread
 *              key's destructor in each round of destructors (4 in glibc),
 *              made after the library's key (so it runs after it), the
 *              first once the rings of all 20 are freed or 1 s passed;
 *              prints the stats
 */
#define _GNU_SOURCE
#include <ringlog.h>

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

RINGLOG_PROVIDER_DEFINE(types_provider, "Test.Types");

static volatile sig_atomic_t sig_n;

/* burst: 300 ms idle (the daemon goes to sleep), then 2,000 events at
 * about 1 MB/s; else 2 s at 100 events a millisecond. *n counts them. */
static void pace_round(int burst, uint64_t *n)
{
	if (burst)
		usleep(300000);
	for (int k = 0; k < (burst ? 20 : 2000); k++) {
		for (int i = 0; i < 100; i++)
			RINGLOG_EVENT(types_provider, "Pace", RINGLOG_LEVEL_INFO, 0x1,
				      RINGLOG_U64("i", (*n)++));
		usleep(burst ? 50 : 1000);
	}
}

/* The sockets among this process's descriptors. */
static int count_sockets(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	char path[300], to[64];
	int n = 0;

	if (!d)
		return -1000;
	while ((e = readdir(d))) {
		ssize_t k;

		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		k = readlink(path, to, sizeof(to) - 1);
		if (k > 0) {
			to[k] = 0;
			n += !strncmp(to, "socket:", 7);
		}
	}
	closedir(d);
	return n;
}

static void on_alarm(int sig)
{
	(void)sig;
	RINGLOG_EVENT(types_provider, "Sig", RINGLOG_LEVEL_INFO, 0x1,
		      RINGLOG_U64("seq", (uint64_t)sig_n), RINGLOG_STR("s", "from a handler"));
	sig_n = sig_n + 1;
}

static int fd_count(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	while (d && readdir(d))
		n++;
	if (d)
		closedir(d);
	return n - 3; /* ., .., the DIR's own fd */
}

/* The rings the process pid has mapped (libringlog's memfds). */
static int daemon_ring_maps(const char *pid)
{
	char path[64], line[512];
	int maps = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%s/maps", pid);
	if (!(f = fopen(path, "r")))
		return -1;
	while (fgets(line, sizeof(line), f))
		maps += strstr(line, "memfd:ringlog-ring") != NULL;
	fclose(f);
	return maps;
}

static atomic_uint events_emitted; /* by one_event() */

static void *one_event(void *arg)
{
	atomic_fetch_add(&events_emitted, 1);
	RINGLOG_EVENT(types_provider, "Thread", RINGLOG_LEVEL_INFO, 0x1,
		      RINGLOG_U64("i", (uint64_t)(uintptr_t)arg));
	return NULL;
}

static pthread_barrier_t released_go;

static void *event_then_wait(void *arg)
{
	one_event(arg);
	pthread_barrier_wait(&released_go);
	return NULL;
}

static atomic_int fresh_done;

static void *five_events(void *arg)
{
	for (int i = 0; i < 5; i++)
		one_event(arg);
	atomic_fetch_add(&fresh_done, 1);
	pause();
	return NULL;
}

static pthread_key_t late_key;

/* key-dtor: runs after the library's own destructor (in the first round
 * of destructors). A library that finished the ring there let it be
 * drained, released and freed: wait for that (1 s at most), so that its
 * bug shows every run, then emit. */
static __thread unsigned late_calls;

static void late_dtor(void *arg)
{
	struct ringlog_stats st;

	for (int i = 0; i < 100 && !late_calls; i++) {
		ringlog_get_stats(&st);
		if (st.rings_freed >= 20)
			break;
		usleep(10000);
	}
	RINGLOG_EVENT(types_provider, "Dtor", RINGLOG_LEVEL_INFO, 0x1,
		      RINGLOG_U64("i", (uint64_t)(uintptr_t)arg));
	/* again in every round there is: the last round's comes after the
	 * library's last (it made its key first), and finds no ring */
	if (++late_calls < 8)
		pthread_setspecific(late_key, arg);
}

static void *two_events_and_a_late_one(void *arg)
{
	pthread_setspecific(late_key, arg);
	one_event(arg);
	one_event(arg);
	return NULL;
}

/* slices: the second request ends on another thread than it began */
static void *stop_b(void *arg)
{
	RINGLOG_EVENT_EX(types_provider, RINGLOG_OPCODE_STOP, (const struct ringlog_activity *)arg,
			 "Request", RINGLOG_LEVEL_INFO, 0x1, RINGLOG_I32("code", 404));
	return NULL;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	struct ringlog_stats st;

	if (!strcmp(mode, "types")) {
		static char longs[RINGLOG_STR_MAX + 100];
		static uint8_t blob[RINGLOG_BLOB_MAX];
		struct ringlog_activity act;

		memset(longs, 'x', sizeof(longs) - 1);
		for (size_t i = 0; i < sizeof(blob); i++)
			blob[i] = (uint8_t)i;
		for (int i = 0; i < 16; i++)
			act.bytes[i] = (uint8_t)(0xa0 + i);
		RINGLOG_EVENT(types_provider, "Ints", RINGLOG_LEVEL_WARNING, 0x8000000000000001ull,
			      RINGLOG_I8("i8", INT8_MIN), RINGLOG_I16("i16", INT16_MIN),
			      RINGLOG_I32("i32", INT32_MIN), RINGLOG_I64("i64", INT64_MIN),
			      RINGLOG_U8("u8", UINT8_MAX), RINGLOG_U16("u16", UINT16_MAX),
			      RINGLOG_U32("u32", UINT32_MAX), RINGLOG_U64("u64", UINT64_MAX),
			      RINGLOG_BOOL("yes", 1), RINGLOG_BOOL("no", 0));
		RINGLOG_EVENT(types_provider, "Doubles", RINGLOG_LEVEL_INFO, 0x2,
			      RINGLOG_F64("half", 1.5), RINGLOG_F64("neg", -2.25e-300),
			      RINGLOG_F64("nan", NAN), RINGLOG_F64("inf", INFINITY),
			      RINGLOG_F64("ninf", -INFINITY), RINGLOG_F64("zero", 0.0));
		RINGLOG_EVENT(types_provider, "Hints", RINGLOG_LEVEL_INFO, 0x2,
			      RINGLOG_HEX32("h32", 0xdeadbeefu), RINGLOG_HEX64("h64", 0x0123456789abcdefull),
			      RINGLOG_PID("pid", 4242), RINGLOG_ERRNO("err", 2),
			      RINGLOG_TIME("when", 1700000000123456789ull));
		RINGLOG_EVENT(types_provider, "Strings", RINGLOG_LEVEL_ERROR, 0x4,
			      RINGLOG_STR("empty", ""), RINGLOG_STR("quote", "say \"hi\"\n\ttab"),
			      RINGLOG_STR("utf8", "caf\xc3\xa9"), RINGLOG_STR("long", longs),
			      RINGLOG_BLOB("none", NULL, 0), RINGLOG_BLOB("big", blob, sizeof(blob)));
		RINGLOG_EVENT_EX(types_provider, RINGLOG_OPCODE_START, &act, "Begin",
				 RINGLOG_LEVEL_CRITICAL, 0x1, RINGLOG_U32("n", 7));
		return ringlog_flush(5000) == 0 ? 0 : 3;
	}
	if (!strcmp(mode, "slices")) {
		static struct ringlog_activity a, b;
		pthread_t th;

		for (int i = 0; i < 16; i++) {
			a.bytes[i] = (uint8_t)(0x10 + i);
			b.bytes[i] = (uint8_t)(0x20 + i);
		}
		RINGLOG_EVENT_EX(types_provider, RINGLOG_OPCODE_START, NULL, "Outer",
				 RINGLOG_LEVEL_INFO, 0x1, RINGLOG_U32("n", 1));
		RINGLOG_EVENT_EX(types_provider, RINGLOG_OPCODE_START, NULL, "Inner",
				 RINGLOG_LEVEL_INFO, 0x1, RINGLOG_U32("n", 2));
		RINGLOG_EVENT_EX(types_provider, RINGLOG_OPCODE_STOP, NULL, "InnerDone",
				 RINGLOG_LEVEL_INFO, 0x1, RINGLOG_U32("n", 2), RINGLOG_STR("status", "ok"));
		RINGLOG_EVENT_EX(types_provider, RINGLOG_OPCODE_STOP, NULL, "Outer",
				 RINGLOG_LEVEL_INFO, 0x1, RINGLOG_U32("n", 1));
		RINGLOG_EVENT_EX(types_provider, RINGLOG_OPCODE_START, &a, "Request",
				 RINGLOG_LEVEL_INFO, 0x1, RINGLOG_STR("url", "/a"));
		RINGLOG_EVENT_EX(types_provider, RINGLOG_OPCODE_START, &b, "Request",
				 RINGLOG_LEVEL_INFO, 0x1, RINGLOG_STR("url", "/b"));
		RINGLOG_EVENT_EX(types_provider, RINGLOG_OPCODE_STOP, &a, "Request",
				 RINGLOG_LEVEL_INFO, 0x1, RINGLOG_I32("code", 200));
		pthread_create(&th, NULL, stop_b, &b);
		pthread_join(th, NULL);
		RINGLOG_EVENT_EX(types_provider, RINGLOG_OPCODE_STOP, NULL, "Stray",
				 RINGLOG_LEVEL_WARNING, 0x1, RINGLOG_STR("why", "closes nothing"));
		return ringlog_flush(5000) == 0 ? 0 : 3;
	}
	if (!strcmp(mode, "burst") || !strcmp(mode, "steady")) {
		int burst = !strcmp(mode, "burst");
		uint64_t n = 0;

		RINGLOG_EVENT(types_provider, "Pace", RINGLOG_LEVEL_INFO, 0x1, RINGLOG_U64("i", n++));
		if (ringlog_flush(5000) < 0)
			return 3;
		for (int round = 0; round < (burst ? 5 : 1); round++)
			pace_round(burst, &n);
		ringlog_get_stats(&st);
		printf("wakeups=%llu dropped=%llu emitted=%llu\n", (unsigned long long)st.daemon_wakeups,
		       (unsigned long long)st.dropped_full, (unsigned long long)n);
		return ringlog_flush(5000) == 0 ? 0 : 3;
	}
	if (!strcmp(mode, "disabled")) {
		for (int i = 0; i < 1000000; i++)
			RINGLOG_EVENT(types_provider, "Chatty", RINGLOG_LEVEL_VERBOSE, 0x1,
				      RINGLOG_U32("i", (uint32_t)i), RINGLOG_STR("s", "never stored"));
		ringlog_get_stats(&st);
		printf("after_disabled rings_created=%llu dropped=%llu\n",
		       (unsigned long long)st.rings_created,
		       (unsigned long long)(st.dropped_full + st.dropped_other));
		RINGLOG_EVENT(types_provider, "Once", RINGLOG_LEVEL_INFO, 0x1, RINGLOG_U32("i", 1));
		ringlog_get_stats(&st);
		printf("after_enabled rings_created=%llu\n", (unsigned long long)st.rings_created);
		return ringlog_flush(5000) == 0 ? 0 : 3;
	}
	if (!strcmp(mode, "signal")) {
		struct sigaction sa = { .sa_handler = on_alarm, .sa_flags = SA_RESTART };
		struct itimerval it = { { 0, 20 }, { 0, 20 } };
		const uint64_t n = 300000;

		sigaction(SIGALRM, &sa, NULL);
		setitimer(ITIMER_REAL, &it, NULL);
		for (uint64_t i = 0; i < n; i++) {
			RINGLOG_EVENT(types_provider, "Main", RINGLOG_LEVEL_INFO, 0x1,
				      RINGLOG_U64("seq", i), RINGLOG_U64("a", i * 3),
				      RINGLOG_STR("s", "from the thread"));
			if (i % 2000 == 1999)
				usleep(200); /* let the daemon keep up */
		}
		memset(&it, 0, sizeof(it));
		setitimer(ITIMER_REAL, &it, NULL);
		ringlog_get_stats(&st);
		printf("main=%llu sig=%llu dropped_full=%llu dropped_other=%llu\n",
		       (unsigned long long)n, (unsigned long long)sig_n,
		       (unsigned long long)st.dropped_full, (unsigned long long)st.dropped_other);
		return ringlog_flush(5000) == 0 ? 0 : 3;
	}
	if (!strcmp(mode, "resident")) {
		/* Every page of a new ring must be resident and already written
		 * (client/os-unix.c: touch_pages()) once the first event
		 * returns, so that no emit takes a page's first fault or trap:
		 * smaps counts a page Clean until its page table entry was
		 * written through. */
		FILE *f;
		char l[512];
		long size = -1, rss = -1, clean = 0;
		int in = 0;

		one_event(NULL);
		if (!(f = fopen("/proc/self/smaps", "r")))
			return 2;
		while (fgets(l, sizeof(l), f)) {
			unsigned long lo, hi;
			long v;

			if (sscanf(l, "%lx-%lx ", &lo, &hi) == 2) { /* a mapping's first line */
				in = strstr(l, "ringlog-ring") != NULL;
				continue;
			}
			if (!in)
				continue;
			if (sscanf(l, "Size: %ld", &v) == 1)
				size = v;
			else if (sscanf(l, "Rss: %ld", &v) == 1)
				rss = v;
			else if (strstr(l, "_Clean:") && sscanf(strchr(l, ':') + 1, "%ld", &v) == 1)
				clean += v;
		}
		fclose(f);
		printf("size=%ld rss=%ld clean=%ld\n", size, rss, clean);
		return 0;
	}
	if (!strcmp(mode, "threads")) {
		int fds0;

		one_event(NULL); /* the main thread's ring and the connection */
		ringlog_flush(5000);
		fds0 = fd_count();
		for (int i = 0; i < 10000; i++) {
			pthread_t t;

			if (pthread_create(&t, NULL, one_event, (void *)(uintptr_t)(i + 1)))
				return 2;
			pthread_join(t, NULL);
		}
		ringlog_flush(5000);
		usleep(300000); /* the daemon drains and lets the finished rings go */
		one_event(NULL); /* the library frees drained rings on its way */
		ringlog_flush(5000);
		ringlog_get_stats(&st);
		printf("fds_before=%d fds_after=%d rings_created=%llu rings_live=%llu\n", fds0,
		       fd_count(), (unsigned long long)st.rings_created,
		       (unsigned long long)st.rings_live);
		return 0;
	}
	if (!strcmp(mode, "released") && argc > 2) {
		/* 200 threads' rings, finished at once: while the library frees
		 * them, every ring the daemon (pid argv[2]) still has mapped
		 * must still be ours. Sampled: our live rings first, then the
		 * daemon's mappings (no ring is created in between), so a ring
		 * the daemon maps at the second read was live at the first. */
		enum { N = 200 };
		pthread_t t[N];
		int excess = 0, maps = 0;
		unsigned long long live = 0;

		one_event(NULL); /* the main thread's ring stays */
		pthread_barrier_init(&released_go, NULL, N + 1);
		for (int i = 0; i < N; i++)
			if (pthread_create(&t[i], NULL, event_then_wait, NULL))
				return 2;
		pthread_barrier_wait(&released_go); /* all their rings exist */
		for (int i = 0; i < N; i++)
			pthread_join(t[i], NULL);
		for (int i = 0; i < 2000; i++) {
			ringlog_get_stats(&st);
			live = st.rings_live;
			if ((maps = daemon_ring_maps(argv[2])) < 0)
				return 4;
			if (maps - (int)live > excess)
				excess = maps - (int)live;
			if (live <= 1 && maps <= 1)
				break;
			usleep(2000);
		}
		printf("rings_freed=%llu rings_live=%llu daemon_ring_maps=%d excess=%d\n",
		       (unsigned long long)st.rings_freed, live, maps, excess);
		return 0;
	}
	if (!strcmp(mode, "abort-fresh")) {
		enum { N = 100 };
		pthread_t t;

		one_event(NULL);
		if (ringlog_flush(5000) < 0)
			return 3;
		for (int i = 0; i < N; i++)
			if (pthread_create(&t, NULL, five_events, (void *)(uintptr_t)(i + 1)))
				return 2;
		while (atomic_load(&fresh_done) < N)
			sched_yield();
		/* no core: the rings' memfds would be dumped, 1 MiB each */
		setrlimit(RLIMIT_CORE, &(struct rlimit){ 0, 0 });
		abort();
	}
	if (!strcmp(mode, "fd-full")) {
		struct rlimit rl = { 96, 96 };
		unsigned threads = 0;
		int flush = -1;

		if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
			return 2;
		one_event(NULL);
		ringlog_flush(100); /* (no daemon) the library's thread has run */
		do {
			pthread_t t;

			if (pthread_create(&t, NULL, one_event, (void *)(uintptr_t)++threads))
				return 2;
			pthread_join(t, NULL);
			ringlog_get_stats(&st);
		} while (!st.dropped_other && threads < 1000);
		printf("full threads=%u rings_live=%llu\n", threads,
		       (unsigned long long)st.rings_live);
		fflush(stdout);
		for (int i = 0; i < 300 && flush < 0; i++) {
			flush = ringlog_flush(100);
			if (flush == -ENOTCONN || flush == -ETIMEDOUT)
				flush = -1;
		}
		for (int i = 0; i < 100 && flush == 0; i++) { /* ended threads' rings freed */
			ringlog_get_stats(&st);
			if (st.rings_live <= 1)
				break;
			one_event(NULL);
			ringlog_flush(100);
			usleep(10000);
		}
		/* Its WELCOME came with the table full, so without the daemon's
		 * wake eventfd: the library asks again (WAKE) once there is
		 * room. Bursts past a 64 KiB ring's high-water mark while the
		 * daemon sleeps must wake it (the test runs this with that
		 * ring size), within a few rounds. */
		for (int round = 0; round < 8 && flush == 0; round++) {
			uint64_t n = 0;

			pace_round(1, &n);
			atomic_fetch_add(&events_emitted, (unsigned)n);
			ringlog_get_stats(&st);
			if (st.daemon_wakeups)
				break;
		}
		ringlog_flush(5000);
		ringlog_get_stats(&st);
		printf("flush=%d emitted=%u dropped_other=%llu rings_live=%llu fds=%d wakeups=%llu "
		       "dropped_full=%llu connects=%llu\n", flush, atomic_load(&events_emitted),
		       (unsigned long long)st.dropped_other, (unsigned long long)st.rings_live,
		       fd_count(), (unsigned long long)st.daemon_wakeups,
		       (unsigned long long)st.dropped_full, (unsigned long long)st.connects);
		return 0;
	}
	if (!strcmp(mode, "key-dtor")) {
		enum { N = 20 };
		pthread_t t[N];

		one_event(NULL); /* the library's key first */
		if (pthread_key_create(&late_key, late_dtor))
			return 2;
		for (int i = 0; i < N; i++)
			if (pthread_create(&t[i], NULL, two_events_and_a_late_one,
					   (void *)(uintptr_t)(i + 1)))
				return 2;
		for (int i = 0; i < N; i++)
			pthread_join(t[i], NULL);
		ringlog_flush(5000);
		for (int i = 0; i < 500; i++) { /* ended threads' rings freed */
			one_event(NULL);
			ringlog_flush(5000);
			ringlog_get_stats(&st);
			if (st.rings_live <= 1)
				break;
			usleep(10000);
		}
		printf("rings_created=%llu rings_live=%llu dropped_full=%llu dropped_other=%llu\n",
		       (unsigned long long)st.rings_created, (unsigned long long)st.rings_live,
		       (unsigned long long)st.dropped_full, (unsigned long long)st.dropped_other);
		return 0;
	}
	if (!strcmp(mode, "fork-connecting")) {
		struct sockaddr_un a = { .sun_family = AF_UNIX };
		int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		int cfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		pid_t pid;
		int status;

		snprintf(a.sun_path, sizeof(a.sun_path), "/tmp/ringlog-fork-%d.sock", (int)getpid());
		unlink(a.sun_path);
		/* backlog 0: the first connection fills it, and nobody accepts */
		if (lfd < 0 || cfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
		    listen(lfd, 0) < 0 || connect(cfd, (struct sockaddr *)&a, sizeof(a)) < 0) {
			perror("fork-connecting: listener");
			return 2;
		}
		setenv("RINGLOG_SOCKET", a.sun_path, 1);
		RINGLOG_EVENT(types_provider, "Parent", RINGLOG_LEVEL_INFO, 0x1, RINGLOG_U32("n", 1));
		/* its thread makes its socket and waits in connect() for 2 s */
		for (int i = 0; i < 100 && count_sockets() < 3; i++)
			usleep(10000);
		usleep(100000);
		fflush(stdout);
		pid = fork();
		if (pid == 0) {
			int n = count_sockets() - 2;

			printf("child sockets=%d\n", n);
			fflush(stdout);
			_exit(0);
		}
		waitpid(pid, &status, 0);
		unlink(a.sun_path);
		return WIFEXITED(status) && !WEXITSTATUS(status) ? 0 : 3;
	}
	if (!strcmp(mode, "fork")) {
		pid_t pid;
		int status;

		RINGLOG_EVENT(types_provider, "Parent", RINGLOG_LEVEL_INFO, 0x1, RINGLOG_U32("n", 1));
		ringlog_flush(5000);
		fflush(stdout);
		pid = fork();
		if (pid == 0) {
			RINGLOG_EVENT(types_provider, "Child", RINGLOG_LEVEL_INFO, 0x1,
				      RINGLOG_U32("n", 2));
			ringlog_flush(5000);
			execl("/bin/ls", "ls", "-l", "/proc/self/fd", (char *)NULL);
			_exit(127);
		}
		waitpid(pid, &status, 0);
		RINGLOG_EVENT(types_provider, "Parent", RINGLOG_LEVEL_INFO, 0x1, RINGLOG_U32("n", 3));
		return ringlog_flush(5000) == 0 && WIFEXITED(status) && !WEXITSTATUS(status) ? 0 : 3;
	}
	return 2;
}
