/* desc_seeds OUTDIR [MACHINE.xml...]: write valid node descriptors as fuzzing seeds. */
#include <stdio.h>
#include <stdlib.h>

#include "tcomms/base/status.h"
#include "tcomms/topo/topo.h"

static int write_seed(const char *dir, int index, const tc_topo_node_t *node)
{
    static unsigned char buf[TC_TOPO_DESC_MAX];
    char path[1024];
    size_t len;
    FILE *f;

    if (tc_topo_desc_encode(node, buf, sizeof(buf), &len) != TC_OK) {
        fprintf(stderr, "desc_seeds: %s\n", tc_last_error());
        return 1;
    }
    snprintf(path, sizeof(path), "%s/seed%02d", dir, index);
    if ((f = fopen(path, "wb")) == NULL || fwrite(buf, 1, len, f) != len || fclose(f) != 0) {
        perror(path);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    static const char *const shapes[] = {"pack:1 core:1 pu:1", "pack:2 numa:2 l3:1 core:4 pu:2"};
    static tc_topo_node_t node;
    int i, n = 0, rc = 0;

    if (argc < 2) {
        fprintf(stderr, "usage: desc_seeds OUTDIR [MACHINE.xml...]\n");
        return 2;
    }
    for (i = 2; i < argc; i++) {
        if (tc_topo_node_from_xml(argv[i], &node) != TC_OK) {
            fprintf(stderr, "desc_seeds: %s\n", tc_last_error());
            return 1;
        }
        rc |= write_seed(argv[1], n++, &node);
    }
    for (i = 0; i < 2; i++) {
        if (tc_topo_node_from_synthetic(shapes[i], &node) != TC_OK) {
            fprintf(stderr, "desc_seeds: %s\n", tc_last_error());
            return 1;
        }
        rc |= write_seed(argv[1], n++, &node);
    }
    if (tc_topo_node_probe(&node) == TC_OK) {
        rc |= write_seed(argv[1], n++, &node);
    }
    return rc;
}
