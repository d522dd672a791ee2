/* The version of the library itself, for programs built against another header. */
#include "tcomms/tcomms.h"

int tc_version(void)
{
    return TC_VERSION;
}
