/* daemon/ingest/operate.h - what operators change at run time
 * (operate.c): proto/ctl.h's ENABLE_SET, LIST and VACUUM frames
 * (max_retention is the store's own: store_tick()). Run-time enablement
 * rules come before the configuration's and last until SIGHUP or a
 * restart.
 *
 * The frame handlers return 0 (a bad request gets an ERROR frame) or
 * -ENOMEM. */
#ifndef RINGLOG_DAEMON_OPERATE_H
#define RINGLOG_DAEMON_OPERATE_H

#include <stdbool.h>
#include <stdint.h>

struct daemon;
struct client;

int op_enable_set(struct client *c, const uint8_t *json, uint32_t len);
int op_list(struct client *c, const uint8_t *json, uint32_t len);
int op_vacuum(struct client *c, const uint8_t *json, uint32_t len);
/* The run-time rule for provider name, if one matches: true, kw filled. */
bool op_rule_kw(const struct daemon *d, const char *name, uint64_t kw[8]);
/* The flight_level of that rule (0: none, or it sets none), with its
 * level and keywords. */
unsigned op_rule_flight(const struct daemon *d, const char *name, unsigned *level, uint64_t *keywords);
struct json_t *op_status(const struct daemon *d); /* the rules, for STATUS */
void op_reset(struct daemon *d);  /* SIGHUP: back to the configuration */
void op_free(struct daemon *d);

#endif /* RINGLOG_DAEMON_OPERATE_H */
