/* client/cli/nats-none.c - `read --nats` and `tail --nats` in a ringlog
 * built without libnats (Windows, or Linux without libnats-dev). */
#include "cli.h"

#include <stdio.h>

#include "query.h"

static int unavailable(const struct query *q)
{
	fprintf(stderr, "ringlog %s: --nats is unavailable: this ringlog was built without libnats "
		"(Debian: libnats-dev)\n", q->cmd);
	return EXIT_FAIL;
}

int nats_read(struct query *q)
{
	return unavailable(q);
}

int nats_tail(struct query *q)
{
	return unavailable(q);
}
