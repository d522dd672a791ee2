"""Finds the CUDA toolkit (default /usr/local/cuda, or $CUDA_HOME) on this machine.

The toolkit is not a Debian package, so a machine may lack it. The generated
repository `@local_cuda` always exists: its `defs.bzl` says whether the
toolkit was found (`HAVE_CUDA`) and where nvcc is, and `:cudart` is the
static CUDA runtime (empty when the toolkit is absent). CUDA targets are
built only when `HAVE_CUDA` is true.
"""

def _cuda_configure_impl(ctx):
    home = ctx.os.environ.get("CUDA_HOME", "/usr/local/cuda")
    nvcc = ctx.path(home + "/bin/nvcc")
    found = nvcc.exists and ctx.path(home + "/lib64/libcudart_static.a").exists
    if found:
        ctx.symlink(home + "/include", "include")
        ctx.symlink(home + "/lib64", "lib64")
        ctx.file("BUILD.bazel", """
cc_library(
    name = "cudart",
    hdrs = glob(["include/**/*.h", "include/**/*.hpp"]),
    includes = ["include"],
    srcs = ["lib64/libcudart_static.a"],
    linkopts = ["-ldl", "-lrt", "-lpthread"],
    visibility = ["//visibility:public"],
)
""")
    else:
        ctx.file("BUILD.bazel", """
cc_library(
    name = "cudart",
    visibility = ["//visibility:public"],
)
""")
    ctx.file("defs.bzl", "HAVE_CUDA = %s\nNVCC = \"%s\"\n" % (
        "True" if found else "False",
        str(nvcc) if found else "",
    ))

cuda_configure = repository_rule(
    implementation = _cuda_configure_impl,
    environ = ["CUDA_HOME"],
    local = True,
)
