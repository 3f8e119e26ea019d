"""Kernels built when the package is installed, so that the common epilogues need no compile at run time.

`pip install .` runs `python -m tilefuse.jit.prebuilt --out <build>/prebuilt` (python/CMakeLists.txt; switch
it off with -C cmake.define.TILEFUSE_PREBUILT=OFF) and installs the result as tilefuse/prebuilt: entries in
the disk cache's own format and keys, which KernelCache reads (read-only) when its own folder misses. The
set (`common_kernels`), bf16 and fp16, for sm_90a:
  - the Hopper GEMM, every config its C++ planner can pick (_C.gemm_sm90_config_choices), with the epilogues of tilefuse.ops / tilefuse.nn
    (tilefuse.epilogue.common.fused): none, bias, bias + relu / gelu / silu, bias + residual, bias + relu +
    residual; the residual trees also with each tile's TMA residual config (Sm90TmaResidual, the planner's choice
    where the residual is aligned for TMA);
  - the Hopper conv: every kernel the C++ planner can pick (tilefuse._C.conv_sm90_kernel_choices: each
    tile of each source, each wgrad split reduction) for fprop with none, bias, bias + relu, relu(acc + bias)
    + residual and relu(acc + bias + residual) (the ResNet block's order), and for dgrad and wgrad;
  - the sm80 conv kernels (every tile, aligned or not, each mode) that the planner falls back to on Hopper
    where no Hopper kernel takes the problem (C = 3 stems, strided dgrad): with no epilogue, and in fprop with
    the conv epilogues above (a stem's folded BatchNorm + ReLU);
  - the skinny GEMM (m <= 16: gemm/kernel/skinny_gemm.h) with the GEMM epilogues above;
  - the copy of GEMM operands into the Hopper kernel's layout (gemm/kernel/pack_k_major.h) and the im2col gather of the
    wgrad of few channels (conv/kernel/gather_columns.h). tests/python/test_prebuilt_coverage.py checks
    that a ResNet-50's inference and training steps ask for nothing else.

A prebuilt entry is found only when everything in the key agrees: the generated source (so the trees the
ops trace), the headers, the arch (sm_90a), NVRTC's version and tilefuse's. Anything else compiles on first
use as before.
"""
import argparse
import multiprocessing
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor

from .cache import prebuilt_dir  # noqa: F401 - where the built set is installed (tests and users ask here)

# (activation, bias, residual): the epilogues of tilefuse.ops / tilefuse.nn worth having without a compile.
COMMON_EPILOGUES = (("none", False, False), ("none", True, False), ("relu", True, False), ("gelu", True, False),
                    ("silu", True, False), ("none", True, True), ("relu", True, True))
ELEMENTS = ("bfloat16", "float16")
CONV_EPILOGUES = (("none", False, False), ("none", True, False), ("relu", True, False), ("relu", True, True),
                  "relu(acc + bias + residual)")
SM80_CONV_CONFIGS = ("Sm80LargeConfig", "Sm80SmallConfig", "Sm80NarrowConfig")


def _cpp_tree(activation, bias, residual, element):
    """The lowered tree of fused(activation, bias, residual) as tilefuse.ops traces it."""
    from ..epilogue import to_cpp, trace
    from ..epilogue.common import fused

    m, n = 256, 256  # the trees do not depend on the sizes, only on each argument's broadcast
    specs = {}
    if bias:
        specs["bias"] = (n,)
    if residual:
        specs["residual"] = (m, n)
    return to_cpp(trace(fused(activation, bias, residual), acc=(m, n), **specs), element=element)


def _residual_block_tree(element):
    """relu(acc + bias + residual): a ResNet block's conv + BN (folded into the bias) + shortcut + ReLU, as
    tilefuse::conv2d_add_act and the torch.compile backend trace it."""
    from ..epilogue import to_cpp, trace
    from ..epilogue.common import fused

    return to_cpp(trace(fused("relu", True, True, residual_first=True), acc=(256, 256), bias=(256,),
                        residual=(256, 256)), element=element)


def _tree(activation, bias, residual, element):
    return str(_cpp_tree(activation, bias, residual, element))


def common_kernels():
    """The jobs of every prebuilt kernel: ("gemm", tree, element, config), ("conv90", tree, kernel, kernel tree,
    split), ("conv80", tree, element, mode, config, aligned), ("skinny", tree, element), ("pack", element) or ("gather", element)."""
    from .. import _C
    from ..kernel_params import tree_facts

    kernels = []
    # Every config the C++ GEMM planner can pick (gemm_plan.hpp: sm90_config_choices), and for trees with a
    # residual TMA can stage, their TMA residual twins too.
    gemm_configs, gemm_tma_residual_configs = _C.gemm_sm90_config_choices(False), _C.gemm_sm90_config_choices(True)
    for element in ELEMENTS:
        for epilogue in COMMON_EPILOGUES:
            tree = _tree(*epilogue, element)
            kernels += [("gemm", tree, element, config) for config in gemm_configs]
            if tree_facts(_cpp_tree(*epilogue, element))["residual_by_tma"]:
                kernels += [("gemm", tree, element, config) for config in gemm_tma_residual_configs]
            kernels.append(("skinny", tree, element))
        trees = {"fprop": [_residual_block_tree(element) if isinstance(e, str) else _cpp_tree(*e, element)
                           for e in CONV_EPILOGUES],
                 "dgrad": [_cpp_tree("none", False, False, element)], "wgrad": [_cpp_tree("none", False, False, element)]}
        for mode, mode_trees in trees.items():
            for tree in mode_trees:
                facts = tree_facts(tree)
                for kernel, kernel_tree, split in _C.conv_sm90_kernel_choices(mode, element, facts["reads_memory"],
                                                                              facts["residual_by_tma"]):
                    kernels.append(("conv90", str(tree), kernel, kernel_tree, split))
        kernels += [("conv80", str(tree), element, mode, config, aligned) for mode, mode_trees in trees.items()
                    for tree in mode_trees for config in SM80_CONV_CONFIGS for aligned in (True, False)]
        kernels.append(("pack", element))
        kernels.append(("gather", element))
    return kernels


def _build_one(job):
    kind, out = job[0], job[-1]
    from .conv import conv_kernel, conv_sm90_kernel
    from .gemm import gather_columns_kernel, gemm_kernel, gemm_skinny_kernel, pack_k_major_kernel

    if kind == "pack":
        return pack_k_major_kernel(job[1], cache_dir=out, require_cached=False).hit
    if kind == "gather":
        return gather_columns_kernel(job[1], cache_dir=out, require_cached=False).hit
    if kind == "skinny":
        return gemm_skinny_kernel(job[1], job[2], cache_dir=out, require_cached=False).hit
    if kind == "gemm":
        _, tree, element, config, _ = job
        kernel = gemm_kernel(tree, element, config, cache_dir=out, require_cached=False)
    elif kind == "conv90":
        _, tree, kernel_type, kernel_tree, split, _ = job
        kernel = conv_sm90_kernel(tree, kernel_type, kernel_tree, split, cache_dir=out, require_cached=False)
    else:
        _, tree, element, mode, config, aligned, _ = job
        kernel = conv_kernel(tree, element, mode, config, aligned, arch="sm_90a", cache_dir=out, require_cached=False)
    return kernel.hit


def build(out, jobs=None, kernels=None):
    """Builds every common kernel (or the given jobs of common_kernels()) into the cache folder `out` (entries
    already there are kept); returns (kernels, compiled now)."""
    kernels = common_kernels() if kernels is None else kernels
    jobs = jobs or os.cpu_count() or 1
    # Spawned workers, not forked: a forked worker ends by os._exit, which skips NVRTC's clean-up of its automatic
    # precompiled header (a __nvrtc_auto_pch_<pid>_0 folder of ~125 MB left in the temp folder per worker).
    with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
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
