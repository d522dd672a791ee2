/* A key-value store in this process's memory for tc_comm_create_from_store(), shared by ranks
 * that are threads: every callback takes one mutex, wait sleeps on a condition variable and is
 * bounded by its timeout. For tests. */
#ifndef TCOMMS_TESTS_API_MEM_STORE_H
#define TCOMMS_TESTS_API_MEM_STORE_H

#include "tcomms/tcomms.h"

typedef struct mem_store mem_store_t;

/* A new, empty store (NULL when out of memory). */
mem_store_t *mem_store_new(void);
/* Free it: no communicator created through it may still be alive. */
void mem_store_free(mem_store_t *s);
/* The callbacks of ::tc_store_t over @p s. */
tc_store_t mem_store_table(mem_store_t *s);

#endif
