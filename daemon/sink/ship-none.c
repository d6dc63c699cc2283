/* daemon/sink/ship-none.c - a ringlogd built without libnats (Windows, or
 * Linux without libnats-dev): a ship section is accepted, and the daemon
 * says, once and in status, that shipping is unavailable in this build. */
#define _GNU_SOURCE
#include "daemon.h"
#include "log.h"
#include "sink/shipping.h"

const struct sink_ops ship_sink_ops = { .name = "ship" };

void ship_init(struct daemon *d)
{
	(void)d;
}

int ship_start(struct daemon *d)
{
	if (d->cfg.ship.servers[0])
		d_log(LOG_WARNING, "ship: shipping is unavailable: this ringlogd was built without "
		      "libnats (Debian: libnats-dev); storing locally only");
	return 0;
}

void ship_reload(struct daemon *d, struct ringlog_config *next)
{
	if (next->ship.servers[0] && !d->cfg.ship.servers[0])
		d_log(LOG_WARNING, "SIGHUP: ship: shipping is unavailable: this ringlogd was built "
		      "without libnats (Debian: libnats-dev); storing locally only");
}

bool ship_tick(struct daemon *d)
{
	(void)d;
	return false;
}

void ship_seg_deleting(struct daemon *d, const struct segfile *s)
{
	(void)d;
	(void)s;
}

bool ship_seg_keep(struct daemon *d, const struct segfile *s)
{
	(void)d;
	(void)s;
	return false;
}

json_t *ship_status(struct daemon *d)
{
	if (!d->cfg.ship.servers[0])
		return NULL;
	return json_pack("{s:s,s:s}", "state", "unavailable",
			 "error", "built without libnats (Debian: libnats-dev)");
}

void ship_stop(struct daemon *d)
{
	(void)d;
}
