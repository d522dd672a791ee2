/* One rank of a job in the torchrun environment (see tests/integration/run_torchrun_env.sh):
 * puts a rank-specific value, fences, fetches every rank's value and checks it
 * byte for byte, and prints one line. Options to exercise the launcher script:
 *   --fail-rank R   rank R exits with status 3 at once
 *   --hang-rank R   rank R sleeps (never joins) until killed */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tcomms/base/status.h"
#include "tcomms/base/time.h"
#include "tcomms/runtime/bootstrap.h"

static void fill(unsigned char *buf, size_t len, int rank)
{
    for (size_t i = 0; i < len; i++)
        buf[i] = (unsigned char)(rank * 29 + (int)i * 3 + 5);
}

int main(int argc, char **argv)
{
    int fail_rank = -1, hang_rank = -1;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--fail-rank") == 0)
            fail_rank = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--hang-rank") == 0)
            hang_rank = atoi(argv[i + 1]);
    }
    const char *r = getenv("RANK");
    int me = r ? atoi(r) : -1;
    if (me == fail_rank) {
        fprintf(stderr, "rank %d: failing on purpose\n", me);
        return 3;
    }
    if (me == hang_rank) {
        for (;;)
            sleep(1);
    }
    tc_boot_t *boot = NULL;
    tc_status_t st = tc_boot_create(TC_BOOT_ENV, tc_deadline_after_ms(60000), &boot);
    if (st != TC_OK) {
        fprintf(stderr, "create: %s: %s\n", tc_status_string(st), tc_last_error());
        return 2;
    }
    unsigned char mine[64], got[64], want[64];
    size_t len = 8 + (size_t)boot->rank % 50, glen = 0;
    fill(mine, len, boot->rank);
    int bad = 0;
    if ((st = tc_boot_put(boot, "v", mine, len)) != TC_OK ||
        (st = tc_boot_fence(boot, tc_deadline_after_ms(60000))) != TC_OK) {
        fprintf(stderr, "rank %d: put+fence: %s: %s\n", boot->rank, tc_status_string(st),
                tc_last_error());
        tc_boot_destroy(boot);
        return 2;
    }
    for (int q = 0; q < boot->size; q++) {
        size_t wlen = 8 + (size_t)q % 50;
        fill(want, wlen, q);
        st = tc_boot_get(boot, q, "v", got, sizeof(got), &glen, tc_deadline_after_ms(60000));
        if (st != TC_OK || glen != wlen || memcmp(got, want, wlen) != 0) {
            fprintf(stderr, "rank %d: value of rank %d: %s (%zu bytes) %s\n", boot->rank, q,
                    tc_status_string(st), glen, st != TC_OK ? tc_last_error() : "");
            bad++;
        }
    }
    printf("rank %d of %d (local size %d, launcher %s): %d values checked, %d wrong\n", boot->rank,
           boot->size, boot->local_size, boot->launcher, boot->size, bad);
    tc_boot_destroy(boot);
    return bad ? 1 : 0;
}
