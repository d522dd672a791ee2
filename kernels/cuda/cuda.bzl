"""The CUDA kernels library, compiled by nvcc when the toolkit is present.

A BUILD file cannot branch, so the choice lives in this macro: with
HAVE_CUDA, a genrule runs nvcc on the .cu file and the plugin
libtcomms_cuda.so links the object with the static CUDA runtime; the library
itself (argument checks and the plugin's loader) links neither, in both
builds. Without the toolkit the loader answers "built without CUDA".
"""

load("@local_cuda//:defs.bzl", "HAVE_CUDA", "NVCC")

# sm_80 (A100) and sm_90 (H100/H200) machine code, plus compute_90 PTX that
# the driver compiles for later GPUs. No fast-math: IEEE division, float32
# subnormals kept, which the bit-for-bit semantics rely on.
NVCC_FLAGS = [
    "-std=c++17",
    "-O3",
    "-Xcompiler -fPIC,-fno-exceptions,-Wall,-Wextra",
    "--Werror all-warnings",
    "--objdir-as-tempdir",
    "-gencode arch=compute_80,code=sm_80",
    "-gencode arch=compute_90,code=sm_90",
    "-gencode arch=compute_90,code=compute_90",
]

def _tc_cc_headers_impl(ctx):
    hdrs = []
    for dep in ctx.attr.deps:
        hdrs.append(dep[CcInfo].compilation_context.headers)
    return [DefaultInfo(files = depset(transitive = hdrs))]

# The headers of cc_library targets as plain files, for a genrule: another
# package's headers are not visible as files, but its library is.
_tc_cc_headers = rule(
    implementation = _tc_cc_headers_impl,
    attrs = {"deps": attr.label_list(providers = [CcInfo])},
)

def tc_cuda_kernels_library(
        name,
        cu,
        host_srcs,
        plugin_srcs,
        plugin_map,
        hdrs,
        cu_hdrs,
        cu_deps,
        visibility):
    """The library `name`, and with the toolkit the plugin libtcomms_cuda.so.

    The library never links the CUDA runtime: it opens the plugin (nvcc's
    object, `plugin_srcs` and the static CUDA runtime) with dlopen when CUDA
    is used. Without the toolkit there is no plugin and the library says so.

    Args:
      name: the cc_library.
      cu: the .cu file.
      host_srcs: C sources of the library (the loader among them).
      plugin_srcs: C sources of the plugin besides nvcc's object.
      plugin_map: the plugin's linker version script.
      hdrs: public headers.
      cu_hdrs: headers of this package the .cu file includes.
      cu_deps: cc_library targets whose headers the .cu file includes.
      visibility: of the library and the plugin.
    """
    if HAVE_CUDA:
        obj = name + "_dev.o"
        _tc_cc_headers(name = name + "_cu_hdrs", deps = cu_deps)
        native.genrule(
            name = name + "_nvcc",
            srcs = [cu, ":" + name + "_cu_hdrs"] + cu_hdrs,
            outs = [obj],
            # -I: the root of each header (the part before tcomms/), or its directory.
            cmd = " ".join([
                NVCC,
                " ".join(NVCC_FLAGS),
                "$$(for h in $(SRCS); do case $$h in *.h) d=$$(dirname $$h); " +
                "echo -I$${d%%/tcomms/*};; esac; done | sort -u)",
                "-c $(location %s) -o $@" % cu,
            ]),
            message = "nvcc %s (sm_80, sm_90, compute_90)" % cu,
        )
        native.cc_binary(
            name = "libtcomms_cuda.so",
            srcs = [obj] + plugin_srcs + cu_hdrs,
            linkshared = True,
            linkopts = [
                "-Wl,--version-script=$(location %s)" % plugin_map,
                "-Wl,-z,defs",
            ],
            additional_linker_inputs = [plugin_map],
            visibility = visibility,
            deps = cu_deps + ["@local_cuda//:cudart"],
        )
    native.cc_library(
        name = name,
        srcs = host_srcs,
        hdrs = hdrs,
        strip_include_prefix = "include",
        local_defines = ["TC_KERN_CUDA_PLUGIN_BUILT=%d" % (1 if HAVE_CUDA else 0)],
        linkopts = ["-ldl", "-lpthread"],
        visibility = visibility,
        deps = cu_deps,
    )
