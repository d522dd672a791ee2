/* Never builds under layering_check: see BUILD.bazel. */
#include "tcomms/base/log.h"

int tc_probe_transitive(void)
{
    return tc_log_enabled(TC_LOG_LEVEL_INFO, TC_SUBSYS_RUNTIME);
}
