/* tests/win/test-win.c - the Windows build's own unit tests, run under Wine
 * by tests/test-windows.c (Criterion has no mingw package, so this is a
 * plain program: one line per check, exit status 1 on any failure).
 *
 * - ring: the same ring code as on Linux, in a pagefile-backed file
 *   mapping (CreateFileMapping), mapped a second time through a handle
 *   made by DuplicateHandle, as the daemon maps a client's ring; a
 *   producer thread writes 2 million records that the consumer, on the
 *   other view, checks for order and content.
 * - tracelogging: the encoder as mingw compiles it gives Windows' own GUID
 *   structure for Microsoft's example provider, and its metadata and
 *   payload go through the real ETW calls (EventRegister,
 *   EventSetInformation, EventWriteTransfer). Wine implements ETW as stubs:
 *   this shows only that the calls are accepted and disturb nothing.
 * - crc32c: the segment checksum gives the standard check value.
 * - iocp: the daemon's IOCP write backend (daemon/io-iocp.c) on a file
 *   opened unbuffered and overlapped: 32 chunks of 64 KiB issued at once in
 *   reverse order, every completion back on the libuv loop, the file read
 *   back; a write the system refuses comes back as an error, not a crash.
 * - etw forwarder: daemon/fwd-etw.c registers one provider per ringlog
 *   provider name, shared by that provider's events and unregistered with
 *   the last of them; under Wine nothing is enabled, so nothing is written
 *   and nothing is disturbed.
 */
#include "io.h" /* first: libuv wants winsock2.h before windows.h */
#include "forward.h"

#include <windows.h>
#include <evntprov.h>
#include <malloc.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ring.h"
#include "ringbuf.h"
#include "segment.h"
#include "tracelogging.h"

static int failures, checks;

#define CHECK(cond, ...)                                               \
	do {                                                           \
		checks++;                                              \
		if (!(cond)) {                                         \
			failures++;                                    \
			printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
			printf(__VA_ARGS__);                           \
			printf("\n");                                  \
		}                                                      \
	} while (0)

#define RECORDS 2000000u
#define DATA    (1u << 20)

struct ring_run {
	struct ringlog_producer p;
	uint64_t next, bad;
};

static DWORD WINAPI producer(void *arg)
{
	struct ring_run *r = arg;

	for (uint64_t seq = 0; seq < RECORDS; seq++) {
		uint64_t rec[3] = { seq, seq * 0x9e3779b97f4a7c15ull, ~seq };

		/* keep up: wait for room rather than count a loss */
		while (ringlog_prod_free(&r->p) < 64)
			SwitchToThread();
		if (ringlog_prod_write(&r->p, RINGLOG_REC_USER_MIN, 7, rec, sizeof(rec)) < 0)
			return 1;
	}
	ringlog_prod_finish(&r->p);
	return 0;
}

static int consume(void *ctx, uint16_t type, uint16_t aux, const uint8_t *payload, uint32_t len)
{
	struct ring_run *r = ctx;
	uint64_t rec[3];

	if (type != RINGLOG_REC_USER_MIN || aux != 7 || len != sizeof(rec)) {
		r->bad++;
		return 0;
	}
	memcpy(rec, payload, sizeof(rec));
	if (rec[0] != r->next || rec[1] != rec[0] * 0x9e3779b97f4a7c15ull || rec[2] != ~rec[0])
		r->bad++;
	r->next = rec[0] + 1;
	return 0;
}

static void test_ring_over_a_duplicated_file_mapping(void)
{
	static struct ring_run r;
	struct ringlog_consumer c;
	uint64_t size = RINGLOG_RING_HEADER_SIZE + DATA;
	HANDLE map, dup = NULL, th;
	void *mine, *theirs;
	DWORD code = 1;

	map = CreateFileMappingW(INVALID_HANDLE_VALUE, NULL, PAGE_READWRITE, 0, (DWORD)size, NULL);
	CHECK(map != NULL, "CreateFileMapping: error %lu", GetLastError());
	if (!map)
		return;
	CHECK(DuplicateHandle(GetCurrentProcess(), map, GetCurrentProcess(), &dup,
			      FILE_MAP_READ | FILE_MAP_WRITE, FALSE, 0),
	      "DuplicateHandle: error %lu", GetLastError());
	mine = MapViewOfFile(map, FILE_MAP_ALL_ACCESS, 0, 0, (SIZE_T)size);
	theirs = dup ? MapViewOfFile(dup, FILE_MAP_READ | FILE_MAP_WRITE, 0, 0, (SIZE_T)size) : NULL;
	CHECK(mine && theirs && mine != theirs, "two views at different addresses");
	if (!mine || !theirs)
		return;
	CHECK(ringlog_prod_init(&r.p, mine, DATA, GetCurrentProcessId(), GetCurrentThreadId(), 1) == 0,
	      "prod_init");
	CHECK(ringlog_cons_attach(&c, theirs, size) == 0, "cons_attach: %s", c.why ? c.why : "");
	th = CreateThread(NULL, 0, producer, &r, 0, NULL);
	while (!ringlog_cons_done(&c)) {
		long n = ringlog_cons_drain(&c, 256 << 10, consume, &r);

		if (n < 0) {
			CHECK(n >= 0, "drain: %ld (%s)", n, c.why ? c.why : "");
			break;
		}
		if (n == 0)
			SwitchToThread();
	}
	WaitForSingleObject(th, INFINITE);
	GetExitCodeThread(th, &code);
	CHECK(code == 0, "producer exit %lu", code);
	CHECK(r.next == RECORDS && r.bad == 0, "consumed %llu of %u in order, %llu bad",
	      (unsigned long long)r.next, RECORDS, (unsigned long long)r.bad);
	CloseHandle(th);
	UnmapViewOfFile(theirs);
	UnmapViewOfFile(mine);
	CloseHandle(dup);
	CloseHandle(map);
	printf("ring: %u records through a duplicated file mapping, in order\n", RECORDS);
}

static void test_tracelogging_through_the_etw_api(void)
{
	static struct ringlog_field_desc f[] = {
		{ RINGLOG_TYPE_U16, RINGLOG_FMT_DEFAULT, (char *)"port" },
		{ RINGLOG_TYPE_STR, RINGLOG_FMT_DEFAULT, (char *)"host" },
	};
	struct ringlog_event_desc e = { .name = (char *)"Connect", .level = 4, .keyword = 1,
					.fields = f, .nfields = 2 };
	static const uint8_t fields[] = { 0x90, 0x1f, 3, 0, 'a', 'b', 'c' };
	uint8_t traits[RINGLOG_TLG_TRAITS_MAX], meta[RINGLOG_TLG_META_MAX], payload[64];
	long tl = ringlog_tlg_traits(traits, sizeof(traits), "SimpleTraceLoggingProvider");
	long ml = ringlog_tlg_metadata(meta, sizeof(meta), &e);
	long pl = ringlog_tlg_payload(payload, sizeof(payload), &e, 42, fields, sizeof(fields));
	EVENT_DESCRIPTOR d = { .Channel = RINGLOG_TLG_CHANNEL, .Level = 4, .Keyword = 1 };
	EVENT_DATA_DESCRIPTOR data[3];
	REGHANDLE reg = 0;
	GUID g;
	ULONG st;

	ringlog_tlg_provider_guid((uint8_t *)&g, "SimpleTraceLoggingProvider");
	CHECK(g.Data1 == 0x0205c616 && g.Data2 == 0xcf97 && g.Data3 == 0x5c11 && g.Data4[0] == 0x97 &&
	      g.Data4[7] == 0xa7, "GUID {%08lx-%04x-%04x-...}", g.Data1, g.Data2, g.Data3);
	CHECK(tl > 0 && ml > 0 && pl == 8 + 2 + 5, "encoded %ld %ld %ld", tl, ml, pl);
	st = EventRegister(&g, NULL, NULL, &reg);
	printf("etw: EventRegister -> %lu, EventEnabled -> %d (Wine's ETW is a stub)\n", st,
	       (int)EventEnabled(reg, &d));
	if (st == ERROR_SUCCESS) {
		st = EventSetInformation(reg, (EVENT_INFO_CLASS)RINGLOG_TLG_INFO_SET_TRAITS, traits, (ULONG)tl);
		printf("etw: EventSetInformation(traits) -> %lu\n", st);
		EventDataDescCreate(&data[0], traits, (ULONG)tl);
		data[0].Reserved = RINGLOG_TLG_DESC_PROVIDER_METADATA;
		EventDataDescCreate(&data[1], meta, (ULONG)ml);
		data[1].Reserved = RINGLOG_TLG_DESC_EVENT_METADATA;
		EventDataDescCreate(&data[2], payload, (ULONG)pl);
		st = EventWriteTransfer(reg, &d, NULL, NULL, 3, data);
		printf("etw: EventWriteTransfer -> %lu\n", st);
		CHECK(EventUnregister(reg) == ERROR_SUCCESS, "EventUnregister");
	}
}

static void test_crc32c_check_value(void)
{
	CHECK(ringlog_crc32c(0, "123456789", 9) == 0xe3069283u, "crc32c 0x%08x",
	      ringlog_crc32c(0, "123456789", 9));
}

#define IOCP_CHUNKS 32
#define IOCP_CHUNK (64 * 1024)

struct iocp_result {
	int done;
	long res[IOCP_CHUNKS];
};

static struct iocp_result iocp_r;

static void on_iocp_done(void *arg, long res)
{
	iocp_r.res[(intptr_t)arg] = res;
	iocp_r.done++;
}

/* The C runtime's _close, reached through libuv: the daemon's io.h hides
 * the system's <io.h> on this target's include path. */
static void close_fd(uv_loop_t *loop, int fd)
{
	uv_fs_t req;

	uv_fs_close(loop, &req, fd, NULL);
	uv_fs_req_cleanup(&req);
}

static void test_iocp_backend(void)
{
	char path[MAX_PATH], dir[MAX_PATH];
	uv_loop_t loop;
	struct io *io;
	uint8_t *bufs[IOCP_CHUNKS];
	HANDLE h;
	int fd, bad = 0, err;
	FILE *f;

	GetTempPathA(sizeof(dir), dir);
	snprintf(path, sizeof(path), "%sringlog-iocp-%lu.bin", dir, GetCurrentProcessId());
	h = CreateFileA(path, GENERIC_READ | GENERIC_WRITE, FILE_SHARE_READ, NULL, CREATE_ALWAYS,
			FILE_FLAG_OVERLAPPED | FILE_FLAG_NO_BUFFERING, NULL);
	CHECK(h != INVALID_HANDLE_VALUE, "CreateFile %s: %lu", path, GetLastError());
	if (h == INVALID_HANDLE_VALUE)
		return;
	fd = uv_open_osfhandle(h);
	uv_loop_init(&loop);
	io = io_iocp_ops.open(&loop);
	CHECK(io != NULL, "open: errno %d", errno);
	if (!io)
		return;
	for (int i = 0; i < IOCP_CHUNKS; i++) {
		bufs[i] = _aligned_malloc(IOCP_CHUNK, 4096);
		for (int j = 0; j < IOCP_CHUNK; j++)
			bufs[i][j] = (uint8_t)(i * 7 + j);
	}
	/* all in flight at once, last offset first */
	for (int i = IOCP_CHUNKS - 1; i >= 0; i--) {
		err = io->ops->write(io, fd, bufs[i], IOCP_CHUNK, (uint64_t)i * IOCP_CHUNK, on_iocp_done,
				     (void *)(intptr_t)i);
		CHECK(err == 0, "write %d: %d", i, err);
	}
	while (iocp_r.done < IOCP_CHUNKS && uv_run(&loop, UV_RUN_ONCE))
		;
	CHECK(iocp_r.done == IOCP_CHUNKS, "%d of %d completions", iocp_r.done, IOCP_CHUNKS);
	for (int i = 0; i < IOCP_CHUNKS; i++)
		bad += iocp_r.res[i] != IOCP_CHUNK;
	CHECK(bad == 0, "%d writes did not report %d bytes", bad, IOCP_CHUNK);
	close_fd(&loop, fd);

	/* a handle opened for reading only: the system refuses the write */
	h = CreateFileA(path, GENERIC_READ, FILE_SHARE_READ, NULL, OPEN_EXISTING,
			FILE_FLAG_OVERLAPPED, NULL);
	fd = uv_open_osfhandle(h);
	iocp_r.done = 0;
	iocp_r.res[0] = 1;
	err = io->ops->write(io, fd, bufs[0], IOCP_CHUNK, 0, on_iocp_done, (void *)(intptr_t)0);
	while (!err && iocp_r.done < 1 && uv_run(&loop, UV_RUN_ONCE))
		;
	CHECK(err < 0 || iocp_r.res[0] < 0, "a write on a read-only handle: %d, %ld", err, iocp_r.res[0]);
	close_fd(&loop, fd);
	io->ops->close(io);
	uv_run(&loop, UV_RUN_DEFAULT);
	CHECK(uv_loop_close(&loop) == 0, "the backend left handles on the loop");

	/* what the disk holds */
	f = fopen(path, "rb");
	bad = 0;
	for (int i = 0; f && i < IOCP_CHUNKS; i++) {
		static uint8_t got[IOCP_CHUNK];

		if (fread(got, 1, IOCP_CHUNK, f) != IOCP_CHUNK || memcmp(got, bufs[i], IOCP_CHUNK))
			bad++;
	}
	CHECK(f && bad == 0, "%d chunks differ on disk", bad);
	if (f)
		fclose(f);
	for (int i = 0; i < IOCP_CHUNKS; i++)
		_aligned_free(bufs[i]);
	DeleteFileA(path);
	printf("iocp: %d chunks of %d KiB written out of order, read back intact\n", IOCP_CHUNKS,
	       IOCP_CHUNK / 1024);
}

static void test_etw_forwarder(void)
{
	static struct ringlog_field_desc fl[] = {
		{ RINGLOG_TYPE_U16, RINGLOG_FMT_DEFAULT, (char *)"port" },
		{ RINGLOG_TYPE_STR, RINGLOG_FMT_DEFAULT, (char *)"host" },
	};
	struct ringlog_event_desc e = { .name = (char *)"Connect", .level = 4, .keyword = 1,
					.fields = fl, .nfields = 2 };
	struct ringlog_event_desc e2 = e;
	static const uint8_t fields[] = { 0x90, 0x1f, 3, 0, 'a', 'b', 'c' };
	struct fwd f = { .ops = &fwd_etw_ops };
	char why[128];
	unsigned targets = 9, enabled = 9;
	uint64_t kw[8] = { 0 };
	enum fwd_loss loss;
	void *a, *b, *c;

	e2.name = (char *)"Close";
	CHECK(f.ops->open(&f, why, sizeof(why)) == 0, "open: %s", why);
	a = f.ops->event_new(&f, "Acme.Net", &e);
	b = f.ops->event_new(&f, "Acme.Net", &e2);
	c = f.ops->event_new(&f, "Acme.Disk", &e);
	CHECK(a && b && c, "event_new %p %p %p", a, b, c);
	f.ops->count(&f, &targets, &enabled);
	CHECK(targets == 2 && enabled == 0, "%u providers (want 2), %u enabled (want 0: Wine)",
	      targets, enabled);
	CHECK(!f.ops->event_enabled(a), "enabled with no session");
	CHECK(!f.ops->changed(&f), "changed with no session");
	f.ops->raise(&f, "Acme.Net", kw);
	CHECK(kw[4] == 0, "raised keywords with no session: %llx", (unsigned long long)kw[4]);
	/* written anyway (the loop would not, being disabled): the stub takes it */
	CHECK(f.ops->event_write(&f, a, NULL, 42, fields, sizeof(fields), &loss) == 0, "write");
	CHECK(f.ops->event_write(&f, a, NULL, 42, fields, 3, &loss) < 0 && loss == FWD_LOST_OTHER,
	      "a payload shorter than its fields was not refused");
	f.ops->event_free(a);
	f.ops->count(&f, &targets, &enabled);
	CHECK(targets == 2, "the provider went with one of its two events");
	f.ops->event_free(b);
	f.ops->event_free(c);
	f.ops->count(&f, &targets, &enabled);
	CHECK(targets == 0, "%u providers left registered", targets);
	f.ops->close(&f);
	printf("etw forwarder: providers shared by their events and unregistered with the last\n");
}

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	test_crc32c_check_value();
	test_iocp_backend();
	test_etw_forwarder();
	test_tracelogging_through_the_etw_api();
	test_ring_over_a_duplicated_file_mapping();
	printf("%d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
