/* daemon/sink/snapshot.h - writing a flight recorder snapshot (snapshot.c):
 * an ordinary segment file (proto/segment.h, compat flag SNAPSHOT), written
 * under a temporary name and renamed once complete and synced, so that a
 * daemon killed while writing leaves a whole snapshot or none. Named like
 * segments (<seq:016x>.rlseg) so that `ringlog read --dir` takes the
 * snapshot directory as it is. */
#ifndef RINGLOG_DAEMON_SNAPSHOT_H
#define RINGLOG_DAEMON_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "segment.h"

struct snap_part {
	const uint8_t *mem;  /* RINGLOG_SEG_ALIGN-aligned: a sealed chunk */
	size_t len;          /* a multiple of RINGLOG_SEG_ALIGN */
};

struct snap_job {
	char path[RINGLOG_CONFIG_PATH_MAX + 48];
	char tmp[RINGLOG_CONFIG_PATH_MAX + 64];
	struct ringlog_seg_hdr *hdr; /* aligned, complete but for end and hdr_crc */
	struct snap_part *parts;     /* chunks in file order */
	unsigned nparts;
	int err;                     /* 0 or -errno, of the step named in what */
	const char *what;
	uint64_t bytes;              /* of the file written */
	uint64_t ns;                 /* how long it took (CLOCK_MONOTONIC) */
};

/* Write the job's file: 0 or -errno (j->err, j->what). Touches only the
 * job and the files, so that it may run on a worker thread. */
int snap_write(struct snap_job *j);
/* The snapshots in dir (names as segments'): how many, their bytes, and
 * the oldest's path (oldest_len > 0) for trimming; clean: delete the
 * temporaries a daemon killed while writing left (at start). 0 or -errno. */
int snap_scan(const char *dir, bool clean, unsigned *count, uint64_t *bytes, char *oldest,
	      size_t oldest_len);

#endif /* RINGLOG_DAEMON_SNAPSHOT_H */
