/* proto/ctl.h - the control protocol on ringlogd's Unix stream socket.
 *
 * Every message is a frame:
 *
 *   +---------+---------+----------+---------------------------+
 *   | len:32  | type:16 | flags:16 | payload (len bytes)       |
 *   +---------+---------+----------+---------------------------+
 *
 * len is at most RINGLOG_CTL_MAX; a receiver closes the connection on a
 * larger or unknown frame. File descriptors travel as SCM_RIGHTS ancillary
 * data on the first byte of the frame that needs them (HELLO, RING, BELL).
 *
 * On Windows the same frames go over a named pipe (\\.\pipe\ringlog), and
 * an object travels as its handle value, a u64 after the frame's struct
 * (counted in len): in the client's process for HELLO, RING and BELL, which the
 * daemon duplicates out of it (DuplicateHandle, the pid taken from the
 * pipe); in the client's process already for WELCOME, where the daemon
 * duplicated its wake event into it (daemon/win/peer.h).
 *
 * Two kinds of peers use the socket.
 *
 * Programs (libringlog), binary payloads:
 *   C->D HELLO   struct ringlog_ctl_hello + fd: the metadata region (event.h)
 *   D->C WELCOME struct ringlog_ctl_welcome [+ fd: the daemon's eventfd, which a
 *                producer past its ring's high-water mark signals (ring.h)]
 *   C->D WAKE    no payload: WELCOME came without the eventfd (the program's
 *                descriptor table was full: MSG_CTRUNC; or the daemon's
 *                queue to it was not empty), send it again; only to a
 *                daemon whose WELCOME flags say RINGLOG_WELCOME_WAKE
 *   D->C WAKE    no payload [+ fd: the same eventfd; without it while the
 *                program has not read all the daemon sent before (one
 *                descriptor in flight at most), and the program may ask
 *                again later]; on Windows a u64 handle value (0: none), as
 *                WELCOME's
 *   C->D RING    struct ringlog_ctl_ring + fd: one ring (ring.h)
 *   C->D BELL    struct ringlog_ctl_bell + fd: the process's bell page
 *                (bell.h), once per connection; only to a daemon whose
 *                WELCOME flags say RINGLOG_WELCOME_BELL
 *   C->D META    no payload: the metadata region grew, read it
 *   D->C ENABLE  struct ringlog_ctl_enable[n]: keyword mask per level
 *   D->C REFUSE  struct ringlog_ctl_refuse + UTF-8 message: a ring or the
 *                whole client was refused (limits, bad seals, ...); the
 *                library then waits for no RELEASED until it reconnects
 *   D->C RELEASED struct ringlog_ctl_released[n]: the daemon has drained
 *                these finished rings for good and unmapped them, and will
 *                never read them again (one frame for those a drain pass
 *                released; one its queue cannot take then goes at a later
 *                pass); from a daemon whose WELCOME flags say
 *                RINGLOG_WELCOME_RELEASED. The library frees such a ring
 *                only then, so that the last reference to its pages is the
 *                program's and freeing them is the program's cost, as
 *                allocating them was (the daemon's munmap() of a ring
 *                whose file is still open is a fraction of it)
 *   D->C POLICY  struct ringlog_ctl_policy[n]: per event, its rate limit
 *                and wait (configuration "rate"/"burst"/"wait", `ringlog
 *                enable --rate`); sent for each event whose policy differs
 *                from what the program was last sent (the default: none)
 *   C->D SUPPRESSED struct ringlog_ctl_suppressed[n]: per event, how many
 *                its rate limit suppressed since the last report; event 0:
 *                how many events since the last report the library could
 *                put in no ring (none could be made for their thread),
 *                which a daemon from before ignores (stored as
 *                RINGLOG_LOSS_NO_RING, segment.h); only to a daemon whose
 *                WELCOME flags say RINGLOG_WELCOME_OVERLOAD (an older one
 *                closes the connection on a frame it does not know)
 *   C->D SYNC    u64 token; D->C SYNC echoes it once every earlier message
 *                of that client is processed and every event its rings
 *                held when SYNC was read is written to a segment file
 *                (daemon/sink/sync.c; ringlog_flush()). Answers keep request
 *                order; a daemon that dies first never answers.
 * The daemon takes the client's pid, uid and gid from SO_PEERCRED and its
 * command and executable from /proc, never from a message.
 *
 * Tools (`ringlog`), JSON payloads (UTF-8, one object per frame):
 *   C->D STATUS  {} ; D->C STATUS {...} (see ringlog status --json)
 *   C->D TAIL    {"backlog":N,"provider":"glob"|["glob",...],
 *                 "event":"glob"|["glob",...],"level":L,"level_min":L,
 *                 "keyword":K,"pid":P,"uid":U,
 *                 "fields":{"NAME":"VALUE"|["VALUE",...],...}}
 *                every member optional: events of levels level_min (1)
 *                ..level (4) whose provider and event names match one of
 *                the globs (fnmatch), with the keyword and writer, and
 *                whose fields equal one of the values given for each name
 *                (by type): proto/match.h, the matcher `ringlog read`
 *                applies to stored events. The tool adds what only it
 *                can judge (--grep, times).
 *   D->C DATA    binary: segment records (segment.h) - WRITER, STREAM, META,
 *                SPAN with exactly one event, LOSS
 *   D->C ERROR   {"error":"message"}
 * Operating (`ringlog enable/disable/list/vacuum`; read access, like TAIL:
 * a peer without it gets ERROR naming read_group and is disconnected). One
 * request per frame, answered by a frame of the same type or ERROR:
 *   C->D ENABLE_SET {"provider":GLOB, "level":0..5 (0: off; default 5),
 *                 "keywords":"0xHEX" (default all)} or {"provider":GLOB,
 *                 "reset":true}: a run-time enablement rule, before the
 *                 configuration's, until SIGHUP or restart (daemon/ingest/operate.c);
 *                 D->C {"provider","reset","level","keywords","matched":[names
 *                 of providers known now that it reaches], "replaced": rules
 *                 for the same GLOB dropped (0 or 1)}
 *   C->D LIST    {"provider":GLOB (optional)}; D->C {"providers":[{"name",
 *                 "enabled_level", "programs":[{"pid","comm"}], "events":[{
 *                 "name","level","keyword","opcode","fields":[{"name","type",
 *                 "format"}]}]}]}: what running programs declared
 *   C->D VACUUM  {"size":BYTES, "age_ns":NS} (either or both): delete sealed
 *                 segments, oldest first, until the store is at most BYTES,
 *                 and those whose newest event is older than NS; never the
 *                 segment being written. D->C {"deleted":[{"path","bytes",
 *                 "events","first_ns","last_ns"}], "freed_bytes", "used_bytes",
 *                 "segments", "storage_dir", "current": seq being written}
 *   C->D SNAPSHOT {"reason":"text" (optional, at most 200 bytes)}: a flight
 *                 recorder trigger (daemon/sink/flight.c). Answered once
 *                 the snapshot holding it is written (post seconds later;
 *                 coalesced triggers share one): D->C {"path","reasons":[..],
 *                 "events","bytes","overwritten"}; or ERROR when the flight
 *                 recorder is off, the trigger was refused by max_snapshots
 *                 or the write failed.
 */
#ifndef RINGLOG_PROTO_CTL_H
#define RINGLOG_PROTO_CTL_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

#define RINGLOG_CTL_VERSION 1u
#define RINGLOG_CTL_MAX     (1u << 20)
#ifdef _WIN32
#define RINGLOG_SOCKET_DEFAULT "\\\\.\\pipe\\ringlog"
#else
#define RINGLOG_SOCKET_DEFAULT "/run/ringlog/ringlog.sock"
#endif

enum ringlog_ctl_type {
	RINGLOG_CTL_HELLO = 1,
	RINGLOG_CTL_WELCOME = 2,
	RINGLOG_CTL_RING = 3,
	RINGLOG_CTL_META = 4,
	RINGLOG_CTL_ENABLE = 5,
	RINGLOG_CTL_REFUSE = 6,
	RINGLOG_CTL_SYNC = 7,
	RINGLOG_CTL_POLICY = 8,
	RINGLOG_CTL_SUPPRESSED = 9,
	RINGLOG_CTL_BELL = 10,
	RINGLOG_CTL_RELEASED = 11,
	RINGLOG_CTL_WAKE = 12,
	RINGLOG_CTL_STATUS = 16,
	RINGLOG_CTL_TAIL = 17,
	RINGLOG_CTL_DATA = 18,
	RINGLOG_CTL_ERROR = 19,
	RINGLOG_CTL_ENABLE_SET = 20,
	RINGLOG_CTL_LIST = 21,
	RINGLOG_CTL_VACUUM = 22,
	RINGLOG_CTL_SNAPSHOT = 23,
};

struct ringlog_ctl_frame {
	uint32_t len;
	uint16_t type;
	uint16_t flags;
};

struct ringlog_ctl_hello {
	uint32_t version;
	uint32_t clock;      /* RINGLOG_RING_CLOCK_TSC when rings use the TSC */
	uint64_t tsc;        /* one calibration sample taken by the client */
	uint64_t mono_ns;
	uint64_t real_ns;
};

/* ringlog_ctl_welcome.flags: what this daemon understands beyond version 1
 * (0 from a daemon before the field). */
#define RINGLOG_WELCOME_OVERLOAD 0x1u /* SUPPRESSED frames */
#define RINGLOG_WELCOME_BELL     0x2u /* BELL frames and ringlog_ctl_ring.bell */
#define RINGLOG_WELCOME_RELEASED 0x4u /* RELEASED frames */
#define RINGLOG_WELCOME_WAKE     0x8u /* WAKE frames */

struct ringlog_ctl_welcome {
	uint32_t version;
	uint32_t flags;      /* RINGLOG_WELCOME_* */
	uint64_t ring_size;  /* data size new rings should use */
};

struct ringlog_ctl_ring {
	uint64_t handle;     /* client's name for the ring, echoed in REFUSE */
	uint32_t tid;        /* informational: the daemon checks it is in pid */
	uint32_t bell;       /* its slot in the bell page + 1 (bell.h); 0: none */
};

struct ringlog_ctl_bell {
	uint32_t slots;      /* RINGLOG_BELL_SLOTS */
	uint32_t reserved;   /* 0 */
};

struct ringlog_ctl_enable {
	uint16_t provider;   /* metadata id */
	uint16_t reserved0;
	uint32_t reserved1;
	uint64_t kw[8];      /* keyword mask wanted per level (index 1..5) */
};

/* One event's overload policy. A library from before POLICY ignores the
 * frame (libraries skip frame types they do not know). */
struct ringlog_ctl_policy {
	uint16_t event;      /* metadata id */
	uint16_t reserved0;
	uint32_t wait_us;    /* wait up to this for room when the ring is full
	                      * (0: drop at once; at most 100000) */
	uint32_t rate;       /* events allowed per period (0: no limit) */
	uint32_t period_ms;  /*   the period, 1 .. 86400000 */
	uint32_t burst;      /* events allowed at once beyond the rate (>= 1) */
	uint32_t reserved1;
};

struct ringlog_ctl_suppressed {
	uint16_t event;      /* metadata id */
	uint16_t reserved0;
	uint32_t reserved1;
	uint64_t count;      /* suppressed since the previous SUPPRESSED */
};

#define RINGLOG_WAIT_MAX_US 100000u

struct ringlog_ctl_refuse {
	uint64_t handle;     /* 0: the whole client */
};

struct ringlog_ctl_released {
	uint64_t handle;     /* the ring's, from its RING frame */
};

static_assert(sizeof(struct ringlog_ctl_frame) == 8, "frame size");
static_assert(offsetof(struct ringlog_ctl_frame, type) == 4, "frame type");
static_assert(offsetof(struct ringlog_ctl_frame, flags) == 6, "frame flags");
static_assert(sizeof(struct ringlog_ctl_hello) == 32, "hello size");
static_assert(offsetof(struct ringlog_ctl_hello, tsc) == 8, "hello tsc");
static_assert(offsetof(struct ringlog_ctl_hello, mono_ns) == 16, "hello mono");
static_assert(offsetof(struct ringlog_ctl_hello, real_ns) == 24, "hello real");
static_assert(sizeof(struct ringlog_ctl_welcome) == 16, "welcome size");
static_assert(offsetof(struct ringlog_ctl_welcome, ring_size) == 8, "welcome ring_size");
static_assert(sizeof(struct ringlog_ctl_ring) == 16, "ring msg size");
static_assert(offsetof(struct ringlog_ctl_ring, tid) == 8, "ring tid");
static_assert(offsetof(struct ringlog_ctl_ring, bell) == 12, "ring bell");
static_assert(sizeof(struct ringlog_ctl_bell) == 8, "bell msg size");
static_assert(sizeof(struct ringlog_ctl_enable) == 72, "enable size");
static_assert(offsetof(struct ringlog_ctl_enable, kw) == 8, "enable kw");
static_assert(sizeof(struct ringlog_ctl_refuse) == 8, "refuse size");
static_assert(sizeof(struct ringlog_ctl_released) == 8, "released size");
static_assert(sizeof(struct ringlog_ctl_policy) == 24, "policy size");
static_assert(offsetof(struct ringlog_ctl_policy, wait_us) == 4, "policy wait_us");
static_assert(offsetof(struct ringlog_ctl_policy, rate) == 8, "policy rate");
static_assert(offsetof(struct ringlog_ctl_policy, period_ms) == 12, "policy period_ms");
static_assert(offsetof(struct ringlog_ctl_policy, burst) == 16, "policy burst");
static_assert(sizeof(struct ringlog_ctl_suppressed) == 16, "suppressed size");
static_assert(offsetof(struct ringlog_ctl_suppressed, count) == 8, "suppressed count");
static_assert(offsetof(struct ringlog_ctl_welcome, flags) == 4, "welcome flags");

/* Send one frame on sock, with pass_fd (if >= 0) as SCM_RIGHTS on its first
 * byte. flags are sendmsg()'s (MSG_NOSIGNAL is always added). Returns the
 * bytes sent, which may be fewer than the frame, or -errno. */
long ringlog_ctl_send(int sock, uint16_t type, const void *payload, uint32_t len, int pass_fd,
		      int flags);

/* Why connect() to the control socket at path failed with EACCES or EPERM,
 * as one line for a person, into buf: "access refused by" the file that
 * refused (a directory on the way, or the socket), its mode, owner and
 * group, and what to do: the group to join, or the mode to ask for. The
 * library's log and every ringlog command say it; Linux only. */
void ringlog_ctl_refusal(const char *path, char *buf, size_t len);

#endif /* RINGLOG_PROTO_CTL_H */
