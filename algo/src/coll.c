/* Names of the collectives. */
#include "tcomms/algo/schedule.h"

const char *tc_coll_name(tc_coll_t coll)
{
    static const char *const names[TC_COLL_COUNT] = {
        [TC_COLL_ALL_REDUCE] = "all_reduce",
        [TC_COLL_REDUCE] = "reduce",
        [TC_COLL_BROADCAST] = "broadcast",
        [TC_COLL_ALL_GATHER] = "all_gather",
        [TC_COLL_REDUCE_SCATTER] = "reduce_scatter",
        [TC_COLL_ALL_TO_ALL] = "all_to_all",
        [TC_COLL_GATHER] = "gather",
        [TC_COLL_SCATTER] = "scatter",
        [TC_COLL_BARRIER] = "barrier",
    };
    if ((int)coll < 0 || coll >= TC_COLL_COUNT) {
        return "invalid";
    }
    return names[coll];
}
