/* daemon/sink/ship-state.c - ship.state: "ringlog-ship 1 HOST SEG CHUNK
 * OFF", the acknowledged position, written to a temporary file and renamed
 * over the old one, so that a crash leaves either (ship-int.h).
 */
#define _GNU_SOURCE
#include "sink/ship-int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <unistd.h>

static void state_path(const struct ship *s, char *buf, size_t len, const char *suffix)
{
	snprintf(buf, len, "%s/ship.state%s", s->dir, suffix);
}

void ship_state_load(struct ship *s)
{
	char path[1100], host[RINGLOG_SHIP_HOST_MAX + 1];
	uint64_t seg, chunk, off;
	FILE *f;

	state_path(s, path, sizeof(path), "");
	f = fopen(path, "r");
	if (!f)
		return;
	if (fscanf(f, "ringlog-ship 1 %64s %" SCNu64 " %" SCNu64 " %" SCNu64, host, &seg, &chunk,
		   &off) == 4) {
		s->ack_valid = true;
		s->ack_seg = seg;
		s->ack_chunk = chunk;
		s->ack_off = off;
	}
	fclose(f);
}

/* Called without mu: the values are passed in. */
int ship_state_save(const struct ship *s, uint64_t seg, uint64_t chunk, uint64_t off)
{
	char tmp[1100], path[1100];
	FILE *f;
	int err = 0;

	state_path(s, tmp, sizeof(tmp), ".tmp");
	state_path(s, path, sizeof(path), "");
	f = fopen(tmp, "w");
	if (!f)
		return -errno;
	fprintf(f, "ringlog-ship 1 %s %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", s->c.host, seg, chunk, off);
	if (fflush(f) != 0 || fsync(fileno(f)) < 0)
		err = -errno;
	if (fclose(f) != 0 && !err)
		err = -errno;
	if (!err && rename(tmp, path) < 0)
		err = -errno;
	return err;
}
