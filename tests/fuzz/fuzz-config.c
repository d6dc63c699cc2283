/* tests/fuzz/fuzz-config.c - the configuration parser on arbitrary text:
 * it must accept or refuse with a message, and a refusal must leave the
 * configuration as it was. */
#include <stdlib.h>
#include <string.h>

#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	static struct ringlog_config c, before;
	char err[4096];

	ringlog_config_defaults(&c);
	before = c;
	if (ringlog_config_parse(&c, (const char *)d, n, "fuzz", err, sizeof(err)) != 0) {
		if (memcmp(&c, &before, sizeof(c)) != 0 || !err[0])
			abort(); /* refused, yet changed, or no reason given */
	}
	return 0;
}
