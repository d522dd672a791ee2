#!/usr/bin/env bash
# Build and run the CUDA kernel tests on a machine with a GPU; everything goes to stdout.
#
#   tests/kernels/cuda/run_on_gpu.sh            # with bazel when it is installed, else direct
#   tests/kernels/cuda/run_on_gpu.sh --direct   # nvcc + cc without bazel, into build/kernels_cuda
#
# The direct build needs nvcc ($CUDA_HOME, default /usr/local/cuda), a C compiler and
# cmocka. For a machine without cmocka (the lent GPU machine has none), copy it into
# the ignored folder .gpu/cmocka of the checkout first and carry that folder:
#   mkdir -p .gpu/cmocka/include .gpu/cmocka/lib && echo /.gpu/ >>.git/info/exclude
#   cp /usr/include/cmocka*.h .gpu/cmocka/include/
#   cp -P /usr/lib/x86_64-linux-gnu/libcmocka.so* .gpu/cmocka/lib/
#
# Exit status 0 only if every test passed and the GPU tests really ran (here, a
# skip for want of a device is a failure).
set -uo pipefail
cd "$(dirname "$0")/../../.."
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
mode=${1:-auto}

echo "=== device"
nvidia-smi -L 2>&1 || echo "(nvidia-smi failed)"

run_tests() { # each test binary, with its output; fails on a failure or a skipped GPU test
    local rc=0 out
    for t in "$@"; do
        echo "=== $t"
        out=$(timeout 600 "$t" 2>&1)
        local st=$?
        echo "$out"
        echo "=== $t: exit $st"
        [ $st -eq 0 ] || rc=1
        if [[ $t == *cuda_gpu_test ]] && grep -q SKIPPED <<<"$out"; then
            echo "GPU tests skipped"
            rc=1
        fi
    done
    return $rc
}

if [ "$mode" = auto ] && command -v bazel >/dev/null; then
    bazel build //kernels/cuda/... //tests/kernels/cuda/... || exit 1
    bin=bazel-bin/tests/kernels/cuda
    export TC_CUDA_PLUGIN=$PWD/bazel-bin/kernels/cuda/libtcomms_cuda.so
    run_tests $bin/cuda_api_test $bin/cuda_gpu_test $bin/cuda_emulate_test
    exit
fi

# Direct build. Keep NVCC_FLAGS in step with kernels/cuda/cuda.bzl.
out=build/kernels_cuda
mkdir -p "$out/obj"
NVCC_FLAGS=(-std=c++17 -O3 -Xcompiler -fPIC,-fno-exceptions,-Wall,-Wextra --Werror all-warnings
    --objdir-as-tempdir -gencode arch=compute_80,code=sm_80
    -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90)
CFLAGS=(-std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Werror -Wno-unused-parameter
    -Ibase/include -Ikernels/cuda/include -Ikernels/cuda/src -I"$CUDA_HOME/include"
    -DTC_TEST_HAVE_CUDA)
LIBS=(-L"$CUDA_HOME/lib64" -lcudart_static -lcmocka -lstdc++ -lm -ldl -lrt -lpthread)
PLUGIN_LIBS=(-L"$CUDA_HOME/lib64" -lcudart_static -lstdc++ -lm -ldl -lrt -lpthread)
if [ -d .gpu/cmocka ]; then
    CFLAGS+=(-I.gpu/cmocka/include)
    LIBS=(-L.gpu/cmocka/lib -Wl,-rpath,"$PWD/.gpu/cmocka/lib" "${LIBS[@]}")
fi
CC=${CC:-cc}

echo "=== nvcc kernels/cuda/src/cuda_dev.cu"
start=$SECONDS
"$CUDA_HOME/bin/nvcc" "${NVCC_FLAGS[@]}" -Ibase/include -Ikernels/cuda/src \
    -c kernels/cuda/src/cuda_dev.cu -o "$out/obj/cuda_dev.o" || exit 1
echo "nvcc took $((SECONDS - start)) s"
base_objs=()
objs=()
for src in base/src/*.c kernels/cuda/src/cuda_reduce.c kernels/cuda/src/cuda_load.c \
    kernels/cuda/src/cuda_plugin.c tests/kernels/cuda/cref.c tests/kernels/cuda/matrix.c; do
    o="$out/obj/$(basename "${src%.c}").o"
    "$CC" "${CFLAGS[@]}" -fPIC -DTC_KERN_CUDA_PLUGIN_BUILT=1 -c "$src" -o "$o" || exit 1
    case $src in
    base/*) base_objs+=("$o") ;;
    kernels/*/cuda_reduce.c | kernels/*/cuda_load.c) objs+=("$o") ;;
    esac
done
objs+=("${base_objs[@]}")
# The plugin, as kernels/cuda/cuda.bzl links it: nvcc's object, its entry, base, the CUDA runtime.
"$CC" -shared -o "$out/libtcomms_cuda.so" "$out/obj/cuda_dev.o" "$out/obj/cuda_plugin.o" \
    "${base_objs[@]}" -Wl,--version-script=kernels/cuda/src/cuda_plugin.map -Wl,-z,defs \
    "${PLUGIN_LIBS[@]}" || exit 1
export TC_CUDA_PLUGIN=$PWD/$out/libtcomms_cuda.so
for t in cuda_api_test cuda_gpu_test cuda_emulate_test; do
    extra=()
    [ $t = cuda_api_test ] || extra=("$out/obj/cref.o" "$out/obj/matrix.o")
    "$CC" "${CFLAGS[@]}" "tests/kernels/cuda/$t.c" "${extra[@]}" "${objs[@]}" "${LIBS[@]}" \
        -o "$out/$t" || exit 1
done
run_tests "$out/cuda_api_test" "$out/cuda_gpu_test" "$out/cuda_emulate_test"
