/* tests/emitter.c - a real client process for the integration tests.
 *
 * usage: test-emitter THREADS EVENTS [--wait-daemon SECONDS] [--pause-us N]
 *                     [--progress FILE] [--half-record] [--warn-every N]
 *                     [--wait-us US] [--seconds S] [--flush-first]
 *                     [--exit-together] [--linger S] [--every-us US] [--hold S]
 *
 * Each thread emits EVENTS events Tick{thread, seq, text} (EVENTS = 0: until
 * SIGUSR1), pausing N microseconds after every 100 when --pause-us is given.
 * With --wait-daemon the process waits (bounded) until a daemon holds its
 * rings before it exits, so events emitted before the daemon started get
 * stored. --progress keeps, in a shared file of one u64 per thread, how many
 * events each thread has emitted (updated after each emit), so that a test
 * that kills the process knows what was committed. --half-record: after its
 * events, thread 0 reserves one more record, fills half of it and the
 * process kills itself before committing it.
 * Overload (issue 28): --warn-every N makes every Nth event an Alert{thread,
 * seq} of level warning instead of a Tick (level info); --wait-us emits
 * Ticks with RINGLOG_EVENT_WAIT(US); --seconds S (with EVENTS = 0) emits
 * for S seconds. --flush-first: a ringlog_flush() before the first event,
 * so that what the daemon says about the events (a rate limit) has
 * arrived when they start. --exit-together: after its first event each
 * thread waits until every one has its ring and the daemon holds them (a
 * flush), then all emit the rest and end at once, as a thread pool shutting
 * down does. --linger S: once every thread has ended, print "threads
 * ended" and live on S seconds (the rings of ended threads, their process
 * alive). At exit it also prints "level L emitted N" per level and
 * "suppressed=N waits=N wait_ns=N wait_max_ns=N wait_timeouts=N".
 * At exit it prints, per thread, what the fault tests compare with
 * the store:
 *   thread T tid TID emitted N max_emit_ns NS max_own_ns NS blocked N
 *   blocked_faulting N
 * (max_own_ns: the longest emit in a batch of 100 during which the thread
 * was never switched out; blocked: voluntary switches inside batches with
 * no page fault, which only a waiting emit could cause; blocked_faulting:
 * those in batches with a page fault, which may be the kernel's sleep in
 * the fault)
 *   dropped_full=N dropped_other=N
 */
#define _GNU_SOURCE
#include <ringlog.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

RINGLOG_PROVIDER_DEFINE(test_provider, "Test.Emitter");

static long events;
static long pause_us;
static volatile sig_atomic_t stop;
static uint64_t *progress; /* shared with the test, one slot per thread */
static int half_record;
static int flush_first;
static int exit_together;
static pthread_barrier_t done_barrier, exit_barrier;
static long warn_every;
static uint32_t wait_us;
static double seconds;
static double linger; /* --linger: seconds to live on after the threads ended */
static long every_us; /* --every-us: a sleep after every event (a ring that falls silent) */
static double hold;   /* --hold: seconds each thread lives on after its events
                       * (rings registered and idle) */
static uint64_t emitted_level[8];

/* --exit-together: every thread has its ring and the daemon holds them
 * (main() flushes between the two barriers), then all go on at once. */
static void meet_the_others(void)
{
	pthread_barrier_wait(&done_barrier);
	pthread_barrier_wait(&exit_barrier);
}

/* The Tick event once more, as a run-time descriptor for --half-record. */
static const struct ringlog_field tick_fields[] = {
	{ RINGLOG_T_U32, 0, "thread" }, { RINGLOG_T_U64, 0, "seq" }, { RINGLOG_T_STR, 0, "text" },
};
static struct ringlog_event tick = {
	.provider = &test_provider, .name = "Tick", .fields = tick_fields, .nfields = 3,
	.level = RINGLOG_LEVEL_INFO, .keyword = 0x1,
};

/* Alert{thread, seq}, level warning, for --warn-every: a run-time
 * descriptor, so that only runs that use it declare it (`ringlog list`
 * tests see the emitter's one event, Tick). The waiting Ticks of --wait-us
 * go through ringlog_emit_wait() with the Tick descriptor above, for the
 * same reason. */
static const struct ringlog_field alert_fields[] = {
	{ RINGLOG_T_U32, 0, "thread" }, { RINGLOG_T_U64, 0, "seq" },
};
static struct ringlog_event alert = {
	.provider = &test_provider, .name = "Alert", .fields = alert_fields, .nfields = 2,
	.level = RINGLOG_LEVEL_WARNING, .keyword = 0x1,
};

struct worker {
	pthread_t th;
	uint32_t index;
	pid_t tid;
	uint64_t emitted;
	uint64_t max_ns;       /* longest single emit, wall clock */
	uint64_t max_own_ns;   /* longest in a batch the thread was never
	                        * switched out of, after the first batch (the
	                        * first event creates and faults in the ring) */
	uint64_t blocked;      /* voluntary context switches inside batches
	                        * after the first (which creates the ring)
	                        * with no page fault: an emit that waits on
	                        * anything shows here */
	uint64_t blocked_faulting; /* the same in batches with a page fault */
};

/* Context switches of the calling thread so far, and its page faults. */
static void switches(long *vol, long *invol, long *faults)
{
	struct rusage ru;

	getrusage(RUSAGE_THREAD, &ru);
	*vol = ru.ru_nvcsw;
	*invol = ru.ru_nivcsw;
	*faults = ru.ru_minflt + ru.ru_majflt;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *run(void *arg)
{
	struct worker *w = arg;

	long v0 = 0, iv0 = 0, f0 = 0, v1, iv1, f1;
	uint64_t batch_max = 0;

	uint64_t end = seconds > 0 ? now_ns() + (uint64_t)(seconds * 1e9) : 0;

	w->tid = gettid();
	for (uint64_t i = 0; events ? i < (uint64_t)events : !stop; i++) {
		uint64_t t0, dt;

		if (end && (i & 255) == 0 && now_ns() >= end)
			break;

		if (i % 100 == 0)
			switches(&v0, &iv0, &f0);
		t0 = now_ns();

		if (warn_every && i % (uint64_t)warn_every == 0) {
			struct ringlog_arg a[2] = { { .v.u = w->index }, { .v.u = i } };

			ringlog_emit(&alert, NULL, a);
			__atomic_fetch_add(&emitted_level[RINGLOG_LEVEL_WARNING], 1, __ATOMIC_RELAXED);
		} else if (wait_us) {
			struct ringlog_arg a[3] = { { .v.u = w->index }, { .v.u = i },
				{ .v.bytes = { "fifteen chars..", 15 } } };

			ringlog_emit_wait(&tick, NULL, a, wait_us);
			__atomic_fetch_add(&emitted_level[RINGLOG_LEVEL_INFO], 1, __ATOMIC_RELAXED);
		} else {
			RINGLOG_EVENT(test_provider, "Tick", RINGLOG_LEVEL_INFO, 0x1,
				      RINGLOG_U32("thread", w->index), RINGLOG_U64("seq", i),
				      RINGLOG_STR("text", "fifteen chars.."));
			__atomic_fetch_add(&emitted_level[RINGLOG_LEVEL_INFO], 1, __ATOMIC_RELAXED);
		}
		dt = now_ns() - t0;
		if (dt > w->max_ns)
			w->max_ns = dt;
		if (dt > batch_max)
			batch_max = dt;
		w->emitted = i + 1;
		if (exit_together && i == 0)
			meet_the_others(); /* our ring exists: then the rest together */
		if (every_us)
			usleep((useconds_t)every_us);
		if (progress)
			__atomic_store_n(&progress[w->index], i + 1, __ATOMIC_RELEASE);
		if (i % 100 == 99) {
			switches(&v1, &iv1, &f1);
			/* A page fault can sleep in the kernel (reclaim, a
			 * sanitizer's shadow memory, a cgroup's memory.high):
			 * the memory's wait, not the library's, counted apart */
			if (i >= 100 && f1 == f0)
				w->blocked += (uint64_t)(v1 - v0);
			else if (i >= 100)
				w->blocked_faulting += (uint64_t)(v1 - v0);
			if (i >= 100 && v1 == v0 && iv1 == iv0 && batch_max > w->max_own_ns)
				w->max_own_ns = batch_max;
			batch_max = 0;
			if (pause_us)
				usleep((useconds_t)pause_us);
		}
	}
	if (hold > 0) {
		struct timespec ts = { (time_t)hold, (long)((hold - (time_t)hold) * 1e9) };

		while (nanosleep(&ts, &ts) < 0 && errno == EINTR && !stop)
			;
	}
	if (half_record && w->index == 0) {
		uint8_t *p = ringlog__begin(&tick, 4 + 8 + 2 + 15, NULL);

		if (p)
			memset(p, 0xA5, 10); /* half of it, then die holding it */
		raise(SIGKILL);
	}
	/* a thread that ended before its first event (SIGUSR1, --seconds)
	 * still meets the others at the barriers */
	if (exit_together && w->emitted == 0)
		meet_the_others();
	return NULL;
}

static void on_usr1(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	int threads = argc > 2 ? atoi(argv[1]) : 1;
	double wait = 0;
	static struct worker w[256];
	struct ringlog_stats st;

	events = argc > 2 ? atol(argv[2]) : 1000;
	for (int i = 3; i < argc; i++) {
		const char *opt = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(opt, "--half-record")) {
			half_record = 1;
			continue;
		}
		if (!strcmp(opt, "--flush-first")) {
			flush_first = 1;
			continue;
		}
		if (!strcmp(opt, "--exit-together")) {
			exit_together = 1;
			continue;
		}
		if (!val)
			return 2;
		i++;
		if (!strcmp(opt, "--wait-daemon")) {
			wait = atof(val);
		} else if (!strcmp(opt, "--warn-every")) {
			warn_every = atol(val);
		} else if (!strcmp(opt, "--wait-us")) {
			wait_us = (uint32_t)atol(val);
		} else if (!strcmp(opt, "--every-us")) {
			every_us = atol(val);
		} else if (!strcmp(opt, "--hold")) {
			hold = atof(val);
		} else if (!strcmp(opt, "--linger")) {
			linger = atof(val);
		} else if (!strcmp(opt, "--seconds")) {
			seconds = atof(val);
		} else if (!strcmp(opt, "--pause-us")) {
			pause_us = atol(val);
		} else if (!strcmp(opt, "--progress")) {
			int fd = open(val, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

			if (fd < 0 || ftruncate(fd, 256 * 8) < 0)
				return 2;
			progress = mmap(NULL, 256 * 8, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
			close(fd);
			if (progress == MAP_FAILED)
				return 2;
		} else {
			return 2;
		}
	}
	if (threads < 1 || threads > 256)
		return 2;
	signal(SIGUSR1, on_usr1);
	if (flush_first && ringlog_flush(5000) < 0)
		return 4;
	pthread_barrier_init(&done_barrier, NULL, (unsigned)threads + 1);
	pthread_barrier_init(&exit_barrier, NULL, (unsigned)threads + 1);
	for (int i = 0; i < threads; i++) {
		w[i].index = (uint32_t)i;
		pthread_create(&w[i].th, NULL, run, &w[i]);
	}
	if (exit_together) {
		pthread_barrier_wait(&done_barrier);
		if (ringlog_flush(5000) < 0)
			fprintf(stderr, "test-emitter: flush before the threads end failed\n");
		pthread_barrier_wait(&exit_barrier);
	}
	for (int i = 0; i < threads; i++)
		pthread_join(w[i].th, NULL);
	if (linger > 0) { /* the rings of ended threads, of a process alive */
		printf("threads ended\n");
		fflush(stdout);
		struct timespec ts = { (time_t)linger, (long)((linger - (time_t)linger) * 1e9) };

		nanosleep(&ts, NULL);
	}
	for (double t = 0; t < wait; t += 0.05) {
		if (ringlog_flush(1000) == 0)
			break;
		struct timespec ts = { 0, 50000000 };
		nanosleep(&ts, NULL);
	}
	for (int i = 0; i < threads; i++)
		printf("thread %u tid %d emitted %llu max_emit_ns %llu max_own_ns %llu blocked %llu "
		       "blocked_faulting %llu\n",
		       w[i].index, (int)w[i].tid, (unsigned long long)w[i].emitted,
		       (unsigned long long)w[i].max_ns, (unsigned long long)w[i].max_own_ns,
		       (unsigned long long)w[i].blocked, (unsigned long long)w[i].blocked_faulting);
	ringlog_get_stats(&st);
	printf("dropped_full=%llu dropped_other=%llu\n", (unsigned long long)st.dropped_full,
	       (unsigned long long)st.dropped_other);
	for (int l = 1; l <= 5; l++)
		if (emitted_level[l])
			printf("level %d emitted %llu\n", l, (unsigned long long)emitted_level[l]);
	{
		struct ringlog_overload_stats o;

		ringlog_get_overload_stats(&o, sizeof(o));
		printf("suppressed=%llu waits=%llu wait_ns=%llu wait_max_ns=%llu wait_timeouts=%llu\n",
		       (unsigned long long)o.suppressed, (unsigned long long)o.waits,
		       (unsigned long long)o.wait_ns, (unsigned long long)o.wait_max_ns,
		       (unsigned long long)o.wait_timeouts);
	}
	fflush(stdout);
	return ringlog_flush(5000) == 0 ? 0 : 3;
}
