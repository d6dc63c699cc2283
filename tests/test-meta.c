/* tests/test-meta.c - the metadata parser's duplicate rule: segments repeat
 * a writer's entries (after a rotation, after a lost chunk), so an
 * identical repeat is accepted and only a real redefinition refused. The
 * fuzzer found the comparison reading past the header it was given. */
#include <criterion/criterion.h>

#include <errno.h>
#include <string.h>

#include "meta.h"

/* PROVIDER 1 "P", EVENT 1 "E" (level 4, one u32 field "n"), 8-aligned */
static const uint8_t prov[] = { 16, 0, 0, 0, 1, 0, 1, 0, 1, 0, 'P', 0, 0, 0, 0, 0 };
static const uint8_t ev[] = {
	32, 0, 0, 0, 2, 0, 1, 0,              /* len 32, EVENT, id 1 */
	1, 0, 0, 0, 0, 0, 0, 0,               /* keyword 1 */
	1, 0, 4, 0, 1, 0, 1, 0,               /* provider 1, level 4, opcode 0, 1 field, name 1 */
	'E', 7, 0, 1, 0, 'n', 0, 0,           /* "E", u32 default "n", padding */
};

Test(meta, an_identical_repeat_is_accepted_a_redefinition_refused)
{
	struct ringlog_meta m;
	uint8_t other[sizeof(ev)];
	const char *why;

	ringlog_meta_init(&m);
	cr_assert_eq(ringlog_meta_add(&m, prov, sizeof(prov), &why), (long)sizeof(prov), "%s", why);
	cr_assert_eq(ringlog_meta_add(&m, ev, sizeof(ev), &why), (long)sizeof(ev), "%s", why);
	cr_expect_eq(ringlog_meta_add(&m, ev, sizeof(ev), &why), (long)sizeof(ev),
		     "an identical repeat was refused: %s", why ? why : "");
	memcpy(other, ev, sizeof(ev));
	other[29] = 'm'; /* the field is now called "m" */
	cr_expect_eq(ringlog_meta_add(&m, other, sizeof(other), &why), -EEXIST);
	ringlog_meta_free(&m);
}
