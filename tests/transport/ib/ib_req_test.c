/* The verbs backend's requests on the emulated HCA (ib_emu.h): a send and a receive posted again
 * while pending are refused with TC_ERR_INVALID_STATE, "request already pending", as
 * transport.h says and self, shm and tcp do (tests/transport/tp_util.c). Before, ib took the
 * second post (TC_OK) over the pending request's state. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "ib_pair.h"
#include "tests/transport/tp_util.h"

static void test_repost_pending(void **state)
{
    (void)state;
    pair_t p;
    pair_open(&p, "s", "s");
    tc_tpt_repost_check(p.ctx, 2, p.ep[0], p.ep[1]);
    pair_close(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_repost_pending),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
