/* tests/fuzz/fuzz-eventheader.c - the user_events encoder on arbitrary
 * descriptors and payloads: metadata entries (as a program writes them)
 * parsed by the metadata parser, then every event defined is encoded with
 * the rest of the input as its payload; names from every provider. */
#include <stdlib.h>
#include <string.h>

#include "eventheader.h"
#include "fuzz-meta.h"
#include "meta.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	static uint8_t meta[RINGLOG_EH_META_MAX], out[1 << 17];
	struct ringlog_meta m;
	size_t mlen;
	long got;
	char name[RINGLOG_EH_NAME_MAX], cmd[RINGLOG_EH_COMMAND_MAX];
	const uint8_t act[16] = { 1 };

	got = fuzz_meta(&d, &n, &m);
	if (got < 0)
		return 0;
	mlen = (size_t)got;
	for (uint32_t i = 0; i < m.nprov; i++)
		if (m.providers[i] && ringlog_eh_name(name, sizeof(name), m.providers[i], 5, 0x1f) > 0)
			ringlog_eh_command(cmd, sizeof(cmd), name);
	for (uint32_t i = 0; i < m.nev; i++) {
		const struct ringlog_event_desc *e = m.events[i];
		long ml;

		if (!e)
			continue;
		ml = ringlog_eh_metadata(meta, sizeof(meta), e);
		if (ml < 0)
			continue;
		ringlog_eh_event(out, sizeof(out), e, meta, (size_t)ml, i & 1 ? act : NULL, i,
				 d + mlen, n - mlen);
	}
	ringlog_meta_free(&m);
	return 0;
}
