/* What tc-info reports, gathered once, printed as text or JSON. */
#ifndef TC_INFO_INFO_H
#define TC_INFO_INFO_H

#include "tcomms/algo/tuning.h"
#include "tcomms/base/sbuf.h"
#include "tcomms/base/status.h"
#include "tcomms/topo/topo.h"

/** One TC_* variable of the environment. */
typedef struct tci_var {
    char name[64];
    char value[256];  /* as set (a secret is not copied) */
    char parsed[256]; /* the value tcomms uses, or "" */
    char error[512];  /* why it is refused, or "" */
    const char *type; /* "int", "enum", "string", "secret", "path", or NULL if unknown */
} tci_var_t;

#define TCI_MAX_VARS 64

/** One transport backend. */
typedef struct tci_transport {
    const char *name;
    int available;
    int same_node_only;
    int one_sided;
} tci_transport_t;

/** An optional library, opened at run time when there is a use for it. */
typedef struct tci_library {
    const char *name;
    int found;
    char where[1024]; /* where it was loaded from, or why not */
} tci_library_t;

#define TCI_MAX_LIBS 3

/** Everything tc-info prints. */
typedef struct tci_info {
    tc_topo_node_t node;
    tci_var_t vars[TCI_MAX_VARS];
    int nvars;
    tci_transport_t transports[4];
    int ntransports;
    int version; /* tc_version() */
    tci_library_t libs[TCI_MAX_LIBS];
    int nlibs;
    int has_job;         /* run under a launcher and the exchange worked */
    char job_error[512]; /* why there is no job, when a launcher was detected */
    char launcher[32];
    int rank;
    tc_topo_job_t job;
    tc_topo_node_t *rank_nodes; /* [job.nranks] */
    int model_ok;               /* the cost model's parameters could be read */
    int rules_on;               /* TC_ALGO_RULES is not 0 (the file's rules apply) */
    char model_error[512];      /* why not (a bad TC_TUNING_FILE or variable) */
    tc_algo_model_info_t model; /* the parameters in effect and their sources */
} tci_info_t;

/* collect.c */
void tci_collect_config(tci_info_t *info);
void tci_collect_transports(tci_info_t *info);
/* The library's version, libibverbs, the CUDA kernels plugin and the CUDA devices. */
void tci_collect_libraries(tci_info_t *info);
/* The cost model's parameters in effect and where each comes from. */
void tci_collect_model(tci_info_t *info);
/* Exchange descriptors through the bootstrap when a launcher is detected.
 * Returns 1 when this process should print (rank 0, or no launcher). */
int tci_collect_job(tci_info_t *info);

/* output.c: append the report to @p sb */
tc_status_t tci_print_text(const tci_info_t *info, tc_sbuf_t *sb);
tc_status_t tci_print_json(const tci_info_t *info, tc_sbuf_t *sb);

#endif /* TC_INFO_INFO_H */
