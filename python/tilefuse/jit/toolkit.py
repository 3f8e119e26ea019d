"""Where the CUDA toolkit is: its shared libraries (libnvrtc, libcudart) and its include folders.

Looked up only when the JIT needs them, never at import: importing tilefuse needs no toolkit.
"""
import ctypes.util
import functools
import glob
import os
import shutil


def toolkit_roots():
    """Candidate toolkit folders, most specific first: $CUDA_HOME, $CUDA_PATH, nvcc's, /usr/local/cuda."""
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")]
    nvcc = shutil.which("nvcc")
    roots.append(os.path.dirname(os.path.dirname(os.path.realpath(nvcc))) if nvcc else None)
    roots.append("/usr/local/cuda")
    unique = []
    for root in roots:
        if root and root not in unique:
            unique.append(root)
    return unique


def find_shared_library(stem):
    """(path or soname to dlopen, [places searched]) for lib<stem>.so; (None, searched) when missing.

    Toolkit folders first (the unversioned name, then the newest versioned one), then the system's
    loader paths through ctypes.util.find_library (slow: it runs ldconfig, so it comes last)."""
    searched = []
    for root in toolkit_roots():
        for libdir in ("lib64", "lib", os.path.join("targets", "x86_64-linux", "lib")):
            folder = os.path.join(root, libdir)
            searched.append(folder)
            exact = os.path.join(folder, f"lib{stem}.so")
            if os.path.exists(exact):
                return exact, searched
            versioned = sorted(glob.glob(os.path.join(folder, f"lib{stem}.so.*")))
            if versioned:
                return versioned[-1], searched
    searched.append(f"ctypes.util.find_library({stem!r}) (the system loader's paths)")
    return ctypes.util.find_library(stem), searched


@functools.lru_cache(maxsize=None)
def cuda_include_dirs():
    """The toolkit's include folder and CCCL's (CUDA 13 keeps cuda/std in include/cccl, CUDA 12 in
    include), as tests/nvrtc passes them to NVRTC; () when no toolkit headers are found."""
    for root in toolkit_roots():
        include = os.path.join(root, "include")
        if not os.path.exists(os.path.join(include, "cuda_fp16.h")):
            continue
        for cccl in (os.path.join(include, "cccl"), include):
            if os.path.exists(os.path.join(cccl, "cuda", "std", "type_traits")):
                return (include,) if cccl == include else (include, cccl)
    return ()
