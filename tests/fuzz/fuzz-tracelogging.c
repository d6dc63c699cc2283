/* tests/fuzz/fuzz-tracelogging.c - the ETW (TraceLogging) encoder on
 * arbitrary descriptors and payloads: metadata entries parsed by the
 * metadata parser, then every event defined gets its metadata and a payload
 * built from the rest of the input; traits and GUIDs for every provider
 * name (UTF-8 decoding of arbitrary bytes). Encoded metadata is walked back
 * to check its own size field and that it ends where the size says. */
#include <stdlib.h>
#include <string.h>

#include "fuzz-meta.h"
#include "meta.h"
#include "tracelogging.h"

/* Walk metadata as a decoder would; abort on anything inconsistent. */
static size_t skip_name(const uint8_t *m, long len, size_t at)
{
	const uint8_t *nul = memchr(m + at, 0, (size_t)len - at);

	if (!nul)
		abort();
	return (size_t)(nul - m) + 1;
}

static void walk(const uint8_t *m, long len, const struct ringlog_event_desc *e)
{
	size_t at;

	if (len < 3 || (m[0] | m[1] << 8) != len || m[2] != 0)
		abort();
	at = skip_name(m, len, 3); /* the event name */
	/* emit_time_ns, then each field: name, intype, [outtype] */
	for (unsigned f = 0; f <= e->nfields; f++) {
		at = skip_name(m, len, at);
		if (at >= (size_t)len)
			abort();
		at += m[at] & 0x80 ? 2 : 1;
	}
	if (at != (size_t)len)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	static uint8_t meta[RINGLOG_TLG_META_MAX], out[1 << 17];
	uint8_t traits[RINGLOG_TLG_TRAITS_MAX], guid[16];
	char gs[39];
	struct ringlog_meta m;
	size_t mlen;
	long got;

	got = fuzz_meta(&d, &n, &m);
	if (got < 0)
		return 0;
	mlen = (size_t)got;
	for (uint32_t i = 0; i < m.nprov; i++) {
		if (!m.providers[i])
			continue;
		ringlog_tlg_provider_guid(guid, m.providers[i]);
		ringlog_tlg_guid_string(gs, guid);
		if (ringlog_tlg_traits(traits, sizeof(traits), m.providers[i]) < 0)
			abort(); /* names are at most RINGLOG_NAME_MAX: always fits */
	}
	for (uint32_t i = 0; i < m.nev; i++) {
		const struct ringlog_event_desc *e = m.events[i];
		long ml;

		if (!e)
			continue;
		ml = ringlog_tlg_metadata(meta, sizeof(meta), e);
		if (ml < 0)
			abort(); /* RINGLOG_TLG_META_MAX bounds every valid event */
		walk(meta, ml, e);
		ringlog_tlg_payload(out, sizeof(out), e, i, d + mlen, n - mlen);
	}
	ringlog_meta_free(&m);
	return 0;
}
