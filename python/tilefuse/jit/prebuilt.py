"""Kernels built when the package is installed, so that the common epilogues need no compile at run time.

`pip install .` runs `python -m tilefuse.jit.prebuilt --out <build>/prebuilt` (python/CMakeLists.txt; switch
it off with -C cmake.define.TILEFUSE_PREBUILT=OFF) and installs the result as tilefuse/prebuilt: entries in
the disk cache's own format and keys, which KernelCache reads (read-only) when its own folder misses. The
set (`common_kernels`): the Hopper GEMM and the Hopper conv fprop, bf16 and fp16, every tile of the wave
models, with the epilogues of tilefuse.ops / tilefuse.nn (tilefuse.epilogue.common.fused): none, bias,
bias + relu / gelu / silu, bias + residual, bias + relu + residual.

A prebuilt entry is found only when everything in the key agrees: the generated source (so the trees the
ops trace), the headers, the arch (sm_90a), NVRTC's version and tilefuse's. Anything else compiles on first
use as before.
"""
import argparse
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor

# (activation, bias, residual): the epilogues of tilefuse.ops / tilefuse.nn worth having without a compile.
COMMON_EPILOGUES = (("none", False, False), ("none", True, False), ("relu", True, False), ("gelu", True, False),
                    ("silu", True, False), ("none", True, True), ("relu", True, True))
ELEMENTS = ("bfloat16", "float16")
GEMM_CONFIGS = ("Sm90LargeConfig", "Sm90MediumConfig", "Sm90NarrowConfig")
CONV_CONFIGS = ("Sm90ConvLargeConfig", "Sm90ConvMediumConfig", "Sm90ConvNarrowConfig")
CONV_EPILOGUES = (("none", False, False), ("none", True, False), ("relu", True, False), ("relu", True, True))


def prebuilt_dir():
    """tilefuse/prebuilt in the installed package (absent in a source checkout or with TILEFUSE_PREBUILT=OFF)."""
    return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "prebuilt")


def _tree(activation, bias, residual, element):
    from ..epilogue import to_cpp, trace
    from ..epilogue.common import fused

    m, n = 256, 256  # the trees do not depend on the sizes, only on each argument's broadcast
    specs = {}
    if bias:
        specs["bias"] = (n,)
    if residual:
        specs["residual"] = (m, n)
    return str(to_cpp(trace(fused(activation, bias, residual), acc=(m, n), **specs), element=element))


def common_kernels():
    """(kind, tree, element, config) of every prebuilt kernel; kind "gemm" or "conv" (fprop, aligned)."""
    kernels = []
    for element in ELEMENTS:
        for epilogue in COMMON_EPILOGUES:
            tree = _tree(*epilogue, element)
            kernels += [("gemm", tree, element, config) for config in GEMM_CONFIGS]
        for epilogue in CONV_EPILOGUES:
            tree = _tree(*epilogue, element)
            kernels += [("conv", tree, element, config) for config in CONV_CONFIGS]
    return kernels


def _build_one(job):
    kind, tree, element, config, out = job
    from .conv import conv_kernel
    from .gemm import gemm_kernel

    if kind == "gemm":
        kernel = gemm_kernel(tree, element, config, cache_dir=out, require_cached=False)
    else:
        kernel = conv_kernel(tree, element, "fprop", config, True, cache_dir=out, require_cached=False)
    return kernel.hit


def build(out, jobs=None):
    """Builds every common kernel into the cache folder `out` (entries already there are kept); returns
    (kernels, compiled now)."""
    kernels = common_kernels()
    jobs = jobs or os.cpu_count() or 1
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        hits = list(pool.map(_build_one, [(*k, out) for k in kernels]))
    return len(kernels), hits.count(False)


def main(argv=None):
    parser = argparse.ArgumentParser(description="Build tilefuse's prebuilt kernels into a cache folder.")
    parser.add_argument("--out", required=True, help="the cache folder to fill (installed as tilefuse/prebuilt)")
    parser.add_argument("--jobs", type=int, default=0, help="parallel NVRTC compiles (default: all cores)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    total, compiled = build(args.out, args.jobs or None)
    print(f"tilefuse.jit.prebuilt: {total} kernels in {args.out} ({compiled} compiled now) in "
          f"{time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
