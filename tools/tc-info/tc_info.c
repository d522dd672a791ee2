/* tc-info [--json]: this machine's topology, the transports, the configuration in
 * effect and, under a launcher (PMIX_NAMESPACE set), where the job's ranks sit. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "info.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: tc-info [--json]\n"
               "  Prints this node's topology (CPUs, caches, GPUs, NICs, their NUMA nodes and\n"
               "  GPU-NIC pairing), the libraries opened at run time (libibverbs, the CUDA\n"
               "  kernels plugin), the transports available, the TC_* configuration in\n"
               "  effect, the cost model's parameters and where each comes from (default,\n"
               "  TC_TUNING_FILE, or its own variable) and, when run under a launcher, the\n"
               "  job's rank placement.\n"
               "  TC_TOPO_XML=file or TC_TOPO_SYNTHETIC=string describe another machine.\n");
}

int main(int argc, char **argv)
{
    static tci_info_t info; /* large: off the stack */
    tc_sbuf_t sb;
    int json = 0, i, print, rc = 0;
    tc_status_t st;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "tc-info: unknown argument \"%s\"\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    if (tc_topo_node_probe(&info.node) != TC_OK) {
        fprintf(stderr, "tc-info: %s\n", tc_last_error());
        return 1;
    }
    tci_collect_config(&info);
    tci_collect_transports(&info);
    tci_collect_libraries(&info);
    tci_collect_model(&info);
    print = tci_collect_job(&info);
    if (!print) {
        if (info.job_error[0]) {
            fprintf(stderr, "tc-info: rank %d: %s\n", info.rank, info.job_error);
            rc = 1;
        }
        goto out;
    }
    tc_sbuf_init(&sb);
    st = json ? tci_print_json(&info, &sb) : tci_print_text(&info, &sb);
    if (st != TC_OK) {
        fprintf(stderr, "tc-info: %s\n", tc_last_error());
        rc = 1;
    } else if (fputs(tc_sbuf_str(&sb), stdout) == EOF || fflush(stdout) != 0) {
        perror("tc-info: writing the report");
        rc = 1;
    }
    tc_sbuf_free(&sb);
out:
    tc_topo_job_free(&info.job);
    free(info.rank_nodes);
    return rc;
}
