/* client/cli/export.h - `ringlog export`'s writers: one small ops table,
 * one file per format (export-ctf.c, export-json.c; Perfetto next), in the
 * spirit of Redis's ae_*.c backends. export.c reads the store as `read`
 * does, one chunk at a time, and hands each selected event and loss to the
 * writer in store order; a writer keeps no more than its format needs
 * (CTF: one packet buffer per writer thread), so memory stays flat in the
 * store's size.
 */
#ifndef RINGLOG_CLI_EXPORT_H
#define RINGLOG_CLI_EXPORT_H

#include <stdint.h>

#include "decode.h"

/* What the store says about itself, from its first readable segment, and
 * the options a writer takes. */
struct export_info {
	char host[65];
	char boot_id[33];  /* hex; "" when unknown */
	const char *version;
	/* the segment's calibration: CLOCK_MONOTONIC mono_ref was wall clock
	 * real_ref (segment.h); both 0 when unknown */
	uint64_t mono_ref, real_ref;
	uint64_t max_size; /* --max-size (perfetto): split past it; 0: never */
};

/* The least --max-size: a file that stands alone needs its descriptions
 * (interned names, tracks) before its first event. */
#define EXPORT_MIN_MAX_SIZE (64u * 1024)

struct export_writer;

struct export_ops {
	const char *name;          /* --format NAME */
	/* Create the output at path. Returns a writer, or NULL with errno set
	 * after printing what is wrong and what to do. */
	struct export_writer *(*begin)(const char *path, const struct export_info *info);
	/* Returns 0 or -errno (the export stops: out of space, ...). */
	int (*event)(struct export_writer *w, const struct ringlog_dec_event *e);
	int (*loss)(struct export_writer *w, const struct ringlog_dec_loss *l);
	/* Finish the output (CTF: last packets and the metadata, which names
	 * every event class seen) and free w, also after an error. Returns 0
	 * or -errno; stats, when not NULL, gets the bytes written. */
	int (*end)(struct export_writer *w, uint64_t *bytes);
};

/* Helpers the writers share (export.c). */
/* write(2) all n bytes, through EINTR and short writes: 0 or -errno. */
int export_write_all(int fd, const void *p, size_t n);
/* FNV-1a 64 over n bytes, continuing from h (EXPORT_FNV_START to begin). */
#define EXPORT_FNV_START 0xcbf29ce484222325ull
uint64_t export_fnv(const void *p, size_t n, uint64_t h);

extern const struct export_ops export_ctf_ops;
extern const struct export_ops export_json_ops;
extern const struct export_ops export_perfetto_ops;

#endif /* RINGLOG_CLI_EXPORT_H */
