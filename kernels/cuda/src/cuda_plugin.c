/* The plugin's entry point (linked into libtcomms_cuda.so only, beside nvcc's object). */
#include "cuda_dev.h"
#include "cuda_plugin.h"

int tc_kern_cuda_plugin_init(uint32_t abi, size_t table_size, tc_kern_cuda_plugin_t *table);

int tc_kern_cuda_plugin_init(uint32_t abi, size_t table_size, tc_kern_cuda_plugin_t *table)
{
    if (abi != TC_KERN_CUDA_PLUGIN_ABI || table_size != sizeof(*table) || table == NULL)
        return -1;
    table->dev_count = tc_kern_cuda_dev_count;
    table->set_device = tc_kern_cuda_dev_set_device;
    table->memcpy = tc_kern_cuda_dev_memcpy;
    table->reduce = tc_kern_cuda_dev_reduce;
    table->scale_div = tc_kern_cuda_dev_scale_div;
    table->emulate_reduce = tc_kern_cuda_dev_emulate_reduce;
    table->emulate_scale_div = tc_kern_cuda_dev_emulate_scale_div;
    table->last_error = tc_last_error;
    return 0;
}
