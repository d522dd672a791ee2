"""The CUDA kernels library, compiled by nvcc when the toolkit is present.

A BUILD file cannot branch, so the choice lives in this macro: with
HAVE_CUDA, a genrule runs nvcc on the .cu file and the library links the
object with the static CUDA runtime; without it, the library is the same
argument checks with a device side that answers "built without CUDA".
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
        no_cuda_srcs,
        hdrs,
        cu_hdrs,
        cu_deps,
        visibility):
    """The library `name`; `cu` is compiled by nvcc with `cu_hdrs` visible.

    Args:
      name: the cc_library.
      cu: the .cu file.
      host_srcs: C sources in both builds.
      no_cuda_srcs: C sources only without it.
      hdrs: public headers.
      cu_hdrs: headers of this package the .cu file includes.
      cu_deps: cc_library targets whose headers the .cu file includes.
      visibility: of the library.
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
                "-c $(location %s) -o $@.tmp" % cu,
                # The archive is linked into other people's binaries: keep only
                # the tc_* entry points (and the toolkit's own __ names) global.
                "&& objcopy -w --localize-symbol='!tc_*' --localize-symbol='!__*'",
                "--localize-symbol='*' $@.tmp $@ && rm -f $@.tmp",
            ]),
            message = "nvcc %s (sm_80, sm_90, compute_90)" % cu,
        )
        srcs = host_srcs + [obj]
        deps = cu_deps + ["@local_cuda//:cudart"]
    else:
        srcs = host_srcs + no_cuda_srcs
        deps = cu_deps
    native.cc_library(
        name = name,
        srcs = srcs,
        hdrs = hdrs,
        strip_include_prefix = "include",
        linkopts = ["-ldl", "-lrt", "-lpthread"],
        visibility = visibility,
        deps = deps,
    )
