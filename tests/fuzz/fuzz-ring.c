/* tests/fuzz/fuzz-ring.c - the ring consumer on arbitrary ring memory, as
 * a hostile program could leave it: header positions and identity from the
 * input, the data area filled with it. The consumer must validate, deliver
 * only well-formed records inside the ring, and end every drain; a drain in
 * runs (ringlog_cons_drain_runs()) must deliver exactly what the drain
 * record by record does. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ringbuf.h"

#define DATA 4096u

static int on_record(void *ctx, uint16_t type, uint16_t aux, const uint8_t *payload, uint32_t len)
{
	uint64_t *sum = ctx;

	(void)type;
	(void)aux;
	/* touch every byte the consumer claims is a payload */
	for (uint32_t i = 0; i < len; i++)
		*sum += payload[i];
	return 0;
}

static long on_run(void *ctx, uint16_t type, uint16_t aux, const uint8_t *payload,
		   uint32_t len, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		on_record(ctx, type, aux, payload + (size_t)i * ringlog_rec_total(len), len);
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	static uint8_t *mem;
	struct ringlog_ring_hdr *h;
	struct ringlog_consumer c, c2;
	uint64_t sum = 0, sum2 = 0;
	long got[2], got2[2];

	if (!mem && !(mem = aligned_alloc(4096, RINGLOG_RING_HEADER_SIZE + DATA)))
		abort();
	memset(mem, 0, RINGLOG_RING_HEADER_SIZE + DATA);
	h = (struct ringlog_ring_hdr *)(void *)mem;
	h->magic = RINGLOG_RING_MAGIC;
	h->version = RINGLOG_RING_VERSION;
	h->header_size = RINGLOG_RING_HEADER_SIZE;
	h->data_size = DATA;
	if (n < 25)
		return 0;
	/* byte 0 bit 0: take the identity block from the input too */
	if (d[0] & 1)
		memcpy(mem, d + 1, 24);
	memcpy(&h->prod_pos, d + 1, 8);
	memcpy(&h->cons_pos, d + 9, 8);
	memcpy(&h->state, d + 17, 4);
	memcpy(&h->loss_seen_records, d + 21, 4);
	d += 25;
	n -= 25;
	for (size_t i = 0; n && i < DATA; i++)
		mem[RINGLOG_RING_HEADER_SIZE + i] = d[i % n];
	if (ringlog_cons_attach(&c, mem, RINGLOG_RING_HEADER_SIZE + DATA) != 0)
		return 0;
	/* attached before c publishes anything: it starts where c does */
	if (ringlog_cons_attach(&c2, mem, RINGLOG_RING_HEADER_SIZE + DATA) != 0)
		abort();
	got[0] = ringlog_cons_drain(&c, DATA, on_record, &sum);
	got[1] = ringlog_cons_drain(&c, DATA, on_record, &sum);
	(void)ringlog_cons_done(&c);
	got2[0] = ringlog_cons_drain_runs(&c2, DATA, on_record, on_run, &sum2);
	got2[1] = ringlog_cons_drain_runs(&c2, DATA, on_record, on_run, &sum2);
	if (got[0] != got2[0] || got[1] != got2[1] || sum != sum2 || c.pos != c2.pos ||
	    c.bad_pos != c2.bad_pos)
		abort(); /* the two drains disagree */
	return 0;
}
