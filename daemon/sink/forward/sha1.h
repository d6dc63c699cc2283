/* daemon/sink/forward/sha1.h - SHA-1 (FIPS 180-4), for one use only: TraceLogging derives
 * an ETW provider's GUID from its name with it (tracelogging.c). Not for
 * anything that needs a secure hash. */
#ifndef RINGLOG_PROTO_SHA1_H
#define RINGLOG_PROTO_SHA1_H

#include <stddef.h>
#include <stdint.h>

struct ringlog_sha1 {
	uint32_t h[5];
	uint64_t bytes;    /* message length so far */
	uint8_t block[64]; /* the partial block */
};

void ringlog_sha1_init(struct ringlog_sha1 *s);
void ringlog_sha1_update(struct ringlog_sha1 *s, const void *p, size_t n);
void ringlog_sha1_final(struct ringlog_sha1 *s, uint8_t digest[20]);

#endif /* RINGLOG_PROTO_SHA1_H */
