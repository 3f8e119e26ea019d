"""gemm_kernel(): the Hopper GEMM kernel for an epilogue tree, from the disk cache or compiled by NVRTC."""
from .cache import KernelCache, key_inputs
from .errors import JitError
from .headers import include_dir
from .nvrtc import compile_to_cubin, version as nvrtc_version
from .source import gather_columns_source, gemm_skinny_source, gemm_sm80_source, gemm_sm90_source, pack_k_major_source
from .toolkit import cuda_include_dirs

# NVRTC's flags (the include folders are added at compile time and are not part of the cache key).
BASE_FLAGS = ("-std=c++20",)


def speed_flags():
    """Flags that make compiles faster and leave the code as it is, so not part of the cache key: NVRTC's
    automatic precompiled header (12.8+), which a process's later compiles of the same headers reuse (a Hopper
    GEMM kernel 1.1 -> 0.45 s on one core; the SASS byte-identical)."""
    return ["-pch"] if nvrtc_version() >= (12, 8) else []


def gemm_kernel(epilogue, element="bfloat16", config="Sm90LargeConfig", *, element_b=None, arch="sm_90a",
                cache_dir=None, require_cached=None):
    """The CachedKernel (cubin, lowered_name, hit, ...) of
    tilefuse::gemm::sm90::sm90_gemm_kernel<GemmKernel<element, epilogue, config>> for `arch`.

    epilogue: the C++ tree type, e.g. tilefuse.epilogue.to_cpp(trace(fn, ...), "bfloat16").
    cache_dir: the cache folder (default $TILEFUSE_CACHE_DIR or ~/.cache/tilefuse).
    require_cached: True makes a miss a CacheMissError instead of a compile (None:
    $TILEFUSE_JIT_REQUIRE_CACHED). Needs libnvrtc (its version is part of the key), never a GPU.
    """
    return compile_cached(gemm_sm90_source(epilogue, element, config, element_b), arch, cache_dir, require_cached)


def gemm_sm80_kernel(epilogue, element="bfloat16", config="Sm80LargeConfig", layout_a="row", layout_b="column",
                     aligned=True, *, arch="sm_90a", cache_dir=None, require_cached=None):
    """The CachedKernel of the sm80 GEMM kernel gemm_sm80_source(...) describes (with its layout kernel and its
    split-K pass, info["lowered_names"]["split_k"]), compiled for `arch` (sm_80, sm_86, sm_89, sm_90a, ...)."""
    source = gemm_sm80_source(epilogue, element, config, layout_a, layout_b, aligned)
    return compile_cached(source, arch, cache_dir, require_cached)


def gemm_skinny_kernel(epilogue, element="bfloat16", *, arch="sm_90a", cache_dir=None, require_cached=None):
    """The CachedKernel of the skinny GEMM kernel (gemm_skinny_source) for `arch`, with its layout kernel."""
    return compile_cached(gemm_skinny_source(epilogue, element), arch, cache_dir, require_cached)


def pack_k_major_kernel(element="bfloat16", *, arch="sm_90a", cache_dir=None, require_cached=None):
    """The CachedKernel of the packing copy into the Hopper GEMM's K-major layout (pack_k_major_source)."""
    return compile_cached(pack_k_major_source(element), arch, cache_dir, require_cached)


def gather_columns_kernel(element="bfloat16", *, arch="sm_90a", cache_dir=None, require_cached=None):
    """The CachedKernel of the im2col gather of the wgrad of few channels (gather_columns_source)."""
    return compile_cached(gather_columns_source(element), arch, cache_dir, require_cached)


def compile_cached(kernel, arch, cache_dir=None, require_cached=None):
    """The CachedKernel of a KernelSource (kernel, and its layout kernel where it has one, in one CUBIN) for
    `arch`."""
    flags = [*BASE_FLAGS, f"--gpu-architecture={arch}"]

    def build():
        toolkit = cuda_include_dirs()
        if not toolkit:
            raise JitError("tilefuse.jit: the CUDA toolkit's headers (cuda_fp16.h, cuda/std) were not found; set "
                           "CUDA_HOME to the toolkit's folder")
        includes = [f"-I{d}" for d in (include_dir(), *toolkit)]
        extra = dict(kernel.extra_expressions)
        layout = [kernel.layout_expression] if kernel.layout_expression else []
        expressions = [kernel.name_expression, *layout, *extra.values()]
        compiled = compile_to_cubin(kernel.source, expressions, flags + speed_flags() + includes)
        names = {"layout": compiled.lowered_names[e] for e in layout}
        names.update((key, compiled.lowered_names[expression]) for key, expression in extra.items())
        return compiled.cubin, compiled.lowered_names[kernel.name_expression], names

    inputs = key_inputs(kernel.source, kernel.name_expression, flags, arch)
    return KernelCache(cache_dir).get_or_build(inputs, build, describe=kernel.kernel_type,
                                               require_cached=require_cached)
