/* The portable loops (vectorised by the compiler for the baseline instruction set). */
#include "generic.h"
#include "kern_internal.h"

TC_KERN_GEN_INT(, base)
TC_KERN_GEN_FLOAT(, base)

const tc_kern_table_t tc_kern_table_base = TC_KERN_TABLE(base);
