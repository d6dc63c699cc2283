/* config/config.h - ringlogd's configuration: built-in defaults, an optional
 * JSON file (jansson), validation with errors that name the file, line,
 * column and key, and a dump of the effective configuration.
 *
 * Sizes are strings like "512M", "4G", "64K" (binary units) or plain
 * integers (bytes); durations are strings like "500ms", "1s", "30m", "7d".
 * min_free is a size or a percentage of the filesystem ("5%").
 */
#ifndef RINGLOG_CONFIG_H
#define RINGLOG_CONFIG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define RINGLOG_CONFIG_PATH_MAX   4096
#define RINGLOG_CONFIG_NAME_MAX   64  /* group names */
#define RINGLOG_SOCKET_PATH_MAX   108 /* sizeof(sockaddr_un.sun_path) */
#define RINGLOG_CONFIG_PROVIDERS  64
#define RINGLOG_PROVIDER_NAME_MAX 128
#define RINGLOG_SHIP_PATH_MAX     1024 /* ship's credential and TLS files */
#define RINGLOG_SHIP_SERVERS_MAX  1024 /* "nats://a:4222,nats://b:4222" */

enum ringlog_io_backend {
	RINGLOG_IO_AUTO,     /* io_uring, falling back to the pool if refused */
	RINGLOG_IO_URING,
	RINGLOG_IO_POOL,
	RINGLOG_IO_N_,
};

/* The names the configuration and --io-backend use, by enum value. */
extern const char *const ringlog_io_backend_names[RINGLOG_IO_N_];
/* The backend a name gives, or -1 when it names none. */
int ringlog_io_backend_parse(const char *name);

#define RINGLOG_CONFIG_EVENTS     4   /* event rules per provider pattern */
#define RINGLOG_EVENT_PATTERN_MAX 64
#define RINGLOG_CONFIG_WAIT_MAX_NS 100000000ull /* 100 ms, ctl.h's RINGLOG_WAIT_MAX_US */

/* Overload policy of an event (ctl.h: struct ringlog_ctl_policy): "rate"
 * N events per period (0: no limit) with a burst, and "wait" for room. */
struct ringlog_config_policy {
	uint32_t rate;
	uint32_t period_ms;
	uint32_t burst;
	uint32_t wait_us;  /* 0: never wait (the default) */
};

struct ringlog_config_event {
	char pattern[RINGLOG_EVENT_PATTERN_MAX]; /* glob over event names */
	struct ringlog_config_policy pol;
};

/* Default enablement for providers whose name matches a glob. */
struct ringlog_config_provider {
	char pattern[RINGLOG_PROVIDER_NAME_MAX];
	uint8_t level;     /* 1 critical .. 5 verbose */
	uint8_t flight_level; /* kept in the flight buffer up to it (memory
	                       * only past level); 0: as level */
	uint64_t keywords; /* mask; all ones = every keyword */
	struct ringlog_config_policy pol; /* every event of the provider ... */
	struct ringlog_config_event events[RINGLOG_CONFIG_EVENTS]; /* ... but these */
	unsigned n_events;
};

#define RINGLOG_FLIGHT_TRIGGER_PROVIDERS 16

/* The flight recorder (daemon/sink/flight.c): size 0 is off. */
struct ringlog_config_flight {
	uint64_t size;             /* the in-memory buffer, allocated once */
	uint64_t pre_ns, post_ns;  /* a snapshot holds [t - pre, t + post] */
	uint32_t max_snapshots;    /* at most this many per max_snapshots_per */
	uint64_t max_snapshots_per_ns;
	uint64_t max_disk;         /* snapshots' share of the global max_disk */
	uint8_t trigger_level;     /* an event at or above it (1..5) triggers; 0: off */
	char snapshot_dir[RINGLOG_CONFIG_PATH_MAX]; /* "": storage_dir/snapshots */
	char trigger_providers[RINGLOG_FLIGHT_TRIGGER_PROVIDERS][RINGLOG_PROVIDER_NAME_MAX];
	unsigned n_trigger_providers; /* 0: every provider */
};

/* Retention classes (issue 28): events of the providers matching a glob,
 * within a level range, stored in a segment stream of their own so that
 * the budget can delete one class's data without another's
 * (daemon/store/retention.c, proto/FORMAT.md "Retention classes"). The
 * first class that matches an event takes it, in config order; what no
 * class takes is the default class (name "default"). */
/* The least max_disk: a segment being written, one to delete and a chunk
 * (config.c: k_max_disk()); each retention class needs as much again. */
#define RINGLOG_CONFIG_MAX_DISK_MIN (1ull << 20)
#define RINGLOG_CONFIG_CLASSES   4   /* + the default class: each keeps one of the
                                      * store's 8 chunk buffers open, and at
                                      * least 3 stay for writing */
#define RINGLOG_CLASS_NAME_MAX   32  /* as the segment header's class_name */
#define RINGLOG_CLASS_PROVIDERS  8

struct ringlog_config_class {
	char name[RINGLOG_CLASS_NAME_MAX];  /* [a-z0-9_-], not "default" */
	char providers[RINGLOG_CLASS_PROVIDERS][RINGLOG_PROVIDER_NAME_MAX]; /* globs */
	unsigned n_providers;               /* 0: every provider */
	uint8_t level_min, level_max;       /* 1 (critical) .. 5 (verbose), min <= max */
	uint32_t min_share_percent;         /* of the segments' budget, 0..100 */
	uint64_t min_age_ns;                /* 0: none */
};

struct ringlog_config {
	char storage_dir[RINGLOG_CONFIG_PATH_MAX];
	char socket_path[RINGLOG_SOCKET_PATH_MAX];
	char socket_group[RINGLOG_CONFIG_NAME_MAX]; /* may write events */
	char read_group[RINGLOG_CONFIG_NAME_MAX];   /* may tail/read/status */
	uint32_t socket_mode;                       /* 0666: the daemon checks groups */
	uint64_t ring_size;                         /* default per-thread ring */
	uint32_t ring_reserve_percent;              /* of each ring, kept for
	                                             * levels <= shed_level */
	uint8_t shed_level;                         /* 1..5; 5: shed nothing */
	uint64_t flush_interval_ns;
	uint64_t sync_interval_ns;  /* at most this long between syncs (power loss) */
	uint64_t max_segment_size;
	uint64_t max_segment_age_ns;
	uint64_t max_disk;
	uint64_t min_free_bytes;   /* one of these two is set */
	uint32_t min_free_percent;
	uint64_t max_retention_ns; /* older data is deleted whatever the budget; 0: off */
	struct ringlog_config_class classes[RINGLOG_CONFIG_CLASSES]; /* "retention" */
	unsigned n_classes;
	enum ringlog_io_backend io_backend;
	struct ringlog_config_provider default_provider;
	struct ringlog_config_provider providers[RINGLOG_CONFIG_PROVIDERS];
	unsigned n_providers;
	struct {
		bool user_events;
		bool etw;
	} forward;
	struct ringlog_config_flight flight;
	/* Shipping to a NATS JetStream stream (daemon/sink/ship.c): on when
	 * servers is not empty. Nothing here is secret: passwords and keys
	 * stay in the files named. */
	struct {
		char servers[RINGLOG_SHIP_SERVERS_MAX]; /* URLs, comma-separated */
		char stream[64];
		char subject[256];    /* "": ringlog.<host> */
		char host[64];        /* "": the system's host name */
		char creds[RINGLOG_SHIP_PATH_MAX];         /* NATS .creds file */
		char user[128];
		char password_file[RINGLOG_SHIP_PATH_MAX]; /* with user */
		char tls_ca[RINGLOG_SHIP_PATH_MAX];
		char tls_cert[RINGLOG_SHIP_PATH_MAX];
		char tls_key[RINGLOG_SHIP_PATH_MAX];
		bool live;            /* also the open chunk, every interval */
		uint64_t interval_ns;
		uint64_t max_backlog; /* un-shipped bytes kept before giving up */
		uint32_t max_pending; /* messages awaiting the cluster's ack */
		uint32_t compress;    /* zstd level of each message, 0: none */
		bool create_stream;
		uint32_t replicas;
		uint64_t max_age_ns;  /* 0: unlimited */
		uint64_t max_bytes;   /* 0: unlimited */
	} ship;
	struct {
		uint32_t rings_per_process;
		uint64_t ring_bytes_per_uid;
		uint64_t metadata_size;
		uint32_t clients;
		uint32_t clients_per_uid;   /* connections of one uid (not root) */
		uint32_t clients_reserved;  /* of clients, kept for root and readers */
		uint64_t buffered_bytes;    /* partial frames held, all connections */
	} limits;
};

/* Fill c with the built-in defaults (the same values config/ringlogd.json
 * ships). */
void ringlog_config_defaults(struct ringlog_config *c);

/* Apply the JSON document text (len bytes, named name in messages) on top
 * of what c holds. On error c is unchanged and err holds one line per
 * problem, each "config: NAME:LINE:COL: "key": what was expected, got what".
 * Returns 0, or -EINVAL. */
int ringlog_config_parse(struct ringlog_config *c, const char *text, size_t len,
			 const char *name, char *err, size_t errlen);

/* Read the file at path and apply it as ringlog_config_parse() does.
 * Returns 0, -EINVAL, or -errno when the file cannot be read (err says so). */
int ringlog_config_load(struct ringlog_config *c, const char *path, char *err,
			size_t errlen);

/* ringlog_config_load(), and what only this host can say: socket_group and
 * read_group, when the file sets them, must name groups that exist here
 * (else an error at that key, as for any bad value). For ringlogd: start,
 * --check-config and SIGHUP. The built-in defaults are not checked (a
 * daemon tried out without a file on a host without the packaged groups
 * runs; root and its own user may then do everything), nor are files read
 * by the tools for storage_dir. Returns as ringlog_config_load(). */
int ringlog_config_load_host(struct ringlog_config *c, const char *path, char *err,
			     size_t errlen);

/* Write the configuration as a JSON document that ringlog_config_parse()
 * accepts and that yields the same values. Returns 0 or -errno. */
int ringlog_config_dump(const struct ringlog_config *c, FILE *f);

/* Parse "512M", "4G", "4096" into bytes. Returns 0 or -EINVAL. */
int ringlog_parse_size(const char *s, uint64_t *out);
/* Parse a rate "1000/s", "50/min", "10/h" (1 to 100000000 events) into
 * events per period. Returns 0 or -EINVAL. */
int ringlog_parse_rate(const char *s, uint32_t *rate, uint32_t *period_ms);
/* Parse "500ms", "1s", "30m", "7d" into nanoseconds. Returns 0 or -EINVAL. */
int ringlog_parse_duration(const char *s, uint64_t *out);

#endif /* RINGLOG_CONFIG_H */
