/* Preloaded into tcrun by finalize_test.sh: the PMIx server's shutdown never returns, as when
 * libpmix's progress thread deadlocked (libpmix 4.2 with PMIX_MCA_gds=ds21). */
#include <unistd.h>

#include <pmix_server.h>

pmix_status_t PMIx_server_finalize(void)
{
    for (;;) {
        pause();
    }
}
