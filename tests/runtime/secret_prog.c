/*
 * A rank of a PMIx job (tcrun, mpirun, srun --mpi=pmix) that checks the job secret the
 * bootstrap settled on: not empty, and the same on every rank. Ranks compare a one-way
 * digest of it (the auth key derived from it), never the secret itself; rank 0 prints
 * "secret: N bytes, digest <hex>" so that a script can tell two jobs apart. Exit 0 when
 * every check passed.
 */
#include <stdio.h>
#include <string.h>

#include "tcomms/base/status.h"
#include "tcomms/base/time.h"
#include "tcomms/runtime/bootstrap.h"
#include "tcomms/transport/auth.h"

int main(void)
{
    tc_boot_t *boot = NULL;
    tc_auth_key_t key;
    unsigned char got[sizeof(key.k)];
    size_t len = 0;
    tc_status_t st = tc_boot_create(TC_BOOT_PMIX, tc_deadline_after_ms(30000), &boot);
    if (st != TC_OK) {
        fprintf(stderr, "create: %s\n", tc_last_error());
        return 2;
    }
    int rank = boot->rank, rc = 0;
    if (boot->secret_len == 0) {
        fprintf(stderr, "rank %d: no job secret\n", rank);
        rc = 3;
    }
    if (tc_auth_key_init(&key, boot->secret, boot->secret_len) != TC_OK ||
        tc_boot_put(boot, "t.secret.digest", key.k, sizeof(key.k)) != TC_OK ||
        tc_boot_fence(boot, tc_deadline_after_ms(30000)) != TC_OK ||
        tc_boot_get(boot, 0, "t.secret.digest", got, sizeof(got), &len,
                    tc_deadline_after_ms(30000)) != TC_OK) {
        fprintf(stderr, "rank %d: exchange: %s\n", rank, tc_last_error());
        rc = 4;
    } else if (len != sizeof(key.k) || memcmp(got, key.k, len) != 0) {
        fprintf(stderr, "rank %d: its secret differs from rank 0's\n", rank);
        rc = 5;
    }
    if (rc == 0 && rank == 0) {
        printf("secret: %zu bytes, digest ", boot->secret_len);
        for (size_t i = 0; i < sizeof(key.k); i++)
            printf("%02x", key.k[i]);
        printf("\n");
    }
    if (rc == 0)
        printf("rank %d: same secret as rank 0\n", rank);
    fflush(stdout);
    tc_auth_key_wipe(&key);
    tc_boot_destroy(boot);
    return rc;
}
