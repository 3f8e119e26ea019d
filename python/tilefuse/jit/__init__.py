"""JIT: generated kernels (Hopper GEMMs, implicit-GEMM convolutions) compiled with NVRTC, kept in a disk cache, loaded with the CUDA
runtime's library API.

    from tilefuse.epilogue import relu, trace, to_cpp
    from tilefuse.jit import gemm_kernel, load_kernel

    tree = to_cpp(trace(lambda acc, bias: relu(acc + bias), bias=(n,)), "bfloat16")
    kernel = gemm_kernel(tree, "bfloat16", "Sm90LargeConfig")   # cubin, lowered_name, hit
    loaded = load_kernel(kernel)                                # needs a GPU (NoCudaDeviceError without)

Nothing here touches NVRTC, libcudart or a GPU at import. Cache, key and switches: docs/python.md.
"""
from .cache import CachedKernel, KernelCache, cache_dir, cache_key, key_inputs
from .errors import CacheMissError, JitError, NoCudaDeviceError, NvrtcError, NvrtcNotFoundError
from .conv import conv_kernel, conv_sm90_kernel
from .gemm import gather_columns_kernel, gemm_kernel, gemm_skinny_kernel, gemm_sm80_kernel, pack_k_major_kernel
from .loader import LoadedKernel, load_kernel
from .source import KernelSource, conv_sm90_source, conv_source, gemm_sm80_source, gemm_sm90_source

__all__ = ["CacheMissError", "CachedKernel", "JitError", "KernelCache", "KernelSource", "LoadedKernel",
           "NoCudaDeviceError", "NvrtcError", "NvrtcNotFoundError", "cache_dir", "cache_key", "conv_kernel", "conv_sm90_kernel", "conv_sm90_source", "conv_source", "gather_columns_kernel", "gemm_kernel",
           "gemm_skinny_kernel", "gemm_sm80_kernel", "gemm_sm80_source", "gemm_sm90_source", "key_inputs", "load_kernel",
           "pack_k_major_kernel"]
