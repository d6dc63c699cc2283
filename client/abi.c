/* client/abi.c - ringlog.h's numbers are the contract's. A program compiled
 * against the public header writes its field types, display formats,
 * opcodes and levels into its metadata region; the daemon and every reader
 * decode them with proto/event.h. The two headers spell them apart (the
 * public one stays self-contained), so they are tied together here, at
 * the library's build. */
#include <assert.h>

#include "event.h"
#include "ringlog.h"

/* The two sides' enums are distinct types: compared as the ints they are
 * written as. */
#define SAME(pub, contract) static_assert((int)(pub) == (int)(contract), #pub " is not " #contract)

/* Field types (the payload's storage). */
SAME(RINGLOG_T_I8, RINGLOG_TYPE_I8); SAME(RINGLOG_T_I16, RINGLOG_TYPE_I16);
SAME(RINGLOG_T_I32, RINGLOG_TYPE_I32); SAME(RINGLOG_T_I64, RINGLOG_TYPE_I64);
SAME(RINGLOG_T_U8, RINGLOG_TYPE_U8); SAME(RINGLOG_T_U16, RINGLOG_TYPE_U16);
SAME(RINGLOG_T_U32, RINGLOG_TYPE_U32); SAME(RINGLOG_T_U64, RINGLOG_TYPE_U64);
SAME(RINGLOG_T_F64, RINGLOG_TYPE_F64); SAME(RINGLOG_T_BOOL, RINGLOG_TYPE_BOOL);
SAME(RINGLOG_T_STR, RINGLOG_TYPE_STR); SAME(RINGLOG_T_BLOB, RINGLOG_TYPE_BLOB);
SAME(RINGLOG_T_BLOB, RINGLOG_TYPE_MAX_); /* no type proto/ has and ringlog.h lacks */

/* Display formats, opcodes. */
SAME(RINGLOG_F_DEFAULT, RINGLOG_FMT_DEFAULT); SAME(RINGLOG_F_HEX, RINGLOG_FMT_HEX);
SAME(RINGLOG_F_PID, RINGLOG_FMT_PID); SAME(RINGLOG_F_ERRNO, RINGLOG_FMT_ERRNO);
SAME(RINGLOG_F_TIME, RINGLOG_FMT_TIME); SAME(RINGLOG_F_TIME, RINGLOG_FMT_MAX_);
SAME(RINGLOG_OPCODE_INFO, RINGLOG_OP_INFO); SAME(RINGLOG_OPCODE_START, RINGLOG_OP_START);
SAME(RINGLOG_OPCODE_STOP, RINGLOG_OP_STOP); SAME(RINGLOG_OPCODE_STOP, RINGLOG_OP_MAX_);

/* Levels 1 (critical) .. 5 (verbose): what the daemon's enablement masks
 * (kw[level]) and the readers' level names index. */
SAME(RINGLOG_LEVEL_CRITICAL, 1); SAME(RINGLOG_LEVEL_VERBOSE, 5);
