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
 */
#include <windows.h>
#include <evntprov.h>

#include <stdio.h>
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

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	test_crc32c_check_value();
	test_tracelogging_through_the_etw_api();
	test_ring_over_a_duplicated_file_mapping();
	printf("%d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
