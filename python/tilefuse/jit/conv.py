"""conv_kernel(): an implicit-GEMM convolution kernel for an epilogue tree, from the disk cache or NVRTC."""
from .gemm import compile_cached
from .source import conv_sm90_source, conv_source


def conv_kernel(epilogue, element="bfloat16", mode="fprop", config="Sm80LargeConfig", aligned=True, *,
                arch="sm_90a", cache_dir=None, require_cached=None):
    """The CachedKernel of the conv kernel conv_source(epilogue, element, mode, config, aligned) describes,
    compiled for `arch` (sm_80, sm_86, sm_89, sm_90a, ...; the Hopper configs need sm_90a). Its info holds
    the lowered name of the parameter-layout kernel (info["lowered_names"]["layout"]). The cache and
    require_cached work as for gemm_kernel."""
    if config.startswith("Sm90") and arch != "sm_90a":
        raise ValueError(f"config={config!r} is a Hopper kernel: compile it for sm_90a, not {arch}")
    return compile_cached(conv_source(epilogue, element, mode, config, aligned), arch, cache_dir, require_cached)


def conv_sm90_kernel(epilogue, kernel, kernel_tree, split="none", *, cache_dir=None, require_cached=None):
    """The CachedKernel of the Hopper conv kernel the C++ planner spelled (conv_sm90_source), for sm_90a."""
    return compile_cached(conv_sm90_source(epilogue, kernel, kernel_tree, split), "sm_90a", cache_dir, require_cached)
