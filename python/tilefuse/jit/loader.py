"""Loads a CUBIN with the CUDA runtime's library API (cudaLibraryLoadData, cudaLibraryGetKernel) through
ctypes on libcudart. Never libcuda: like the C++ runtime library, tilefuse reaches the driver only
through the CUDA runtime. libcudart is opened on first use, so importing needs neither it nor a GPU.
"""
import ctypes
import functools

from .errors import JitError, NoCudaDeviceError
from .toolkit import find_shared_library

_handle = ctypes.c_void_p  # cudaLibrary_t, cudaKernel_t: opaque pointers


@functools.lru_cache(maxsize=None)
def runtime():
    """The opened libcudart with the signatures used here; NoCudaDeviceError when it is missing."""
    path, searched = find_shared_library("cudart")
    if path is None:
        raise NoCudaDeviceError("tilefuse.jit: no CUDA device is available: the CUDA runtime library (libcudart) was "
                                "not found; searched: " + ", ".join(searched) + ". Install the CUDA toolkit or set "
                                "CUDA_HOME to it.")
    lib = ctypes.CDLL(path)
    signatures = {
        "cudaGetErrorName": ([ctypes.c_int], ctypes.c_char_p),
        "cudaGetErrorString": ([ctypes.c_int], ctypes.c_char_p),
        "cudaGetDeviceCount": ([ctypes.POINTER(ctypes.c_int)], ctypes.c_int),
        "cudaGetLastError": ([], ctypes.c_int),
        "cudaLibraryLoadData": ([ctypes.POINTER(_handle), ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                 ctypes.c_uint, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint], ctypes.c_int),
        "cudaLibraryGetKernel": ([ctypes.POINTER(_handle), _handle, ctypes.c_char_p], ctypes.c_int),
        "cudaLibraryUnload": ([_handle], ctypes.c_int),
    }
    for name, (argtypes, restype) in signatures.items():
        function = getattr(lib, name)
        function.argtypes, function.restype = argtypes, restype
    return lib


def _error(code):
    lib = runtime()
    return f"{lib.cudaGetErrorName(code).decode()} ({lib.cudaGetErrorString(code).decode()})"


def require_device():
    """Raises NoCudaDeviceError unless the CUDA runtime sees at least one device."""
    lib = runtime()
    count = ctypes.c_int(0)
    code = lib.cudaGetDeviceCount(ctypes.byref(count))
    if code != 0 or count.value == 0:
        lib.cudaGetLastError()  # clear the error so later runtime calls start clean
        reason = _error(code) if code != 0 else "the runtime found 0 devices"
        raise NoCudaDeviceError(f"tilefuse.jit: no CUDA device is available to load a kernel on: cudaGetDeviceCount "
                                f"says {reason}. Loading needs an NVIDIA GPU and its driver; compiling and caching "
                                "(tilefuse.jit.gemm_kernel) do not.")


class LoadedKernel:
    """A CUBIN loaded into the current device's context. `kernel` is the cudaKernel_t (as an int) of
    `name`; unload() (or garbage collection) frees the library."""

    def __init__(self, library, kernel, name):
        self.library, self.kernel, self.name = library, kernel, name

    def unload(self):
        if self.library:
            runtime().cudaLibraryUnload(_handle(self.library))
            self.library = None

    def __del__(self):
        try:
            self.unload()
        except Exception:  # interpreter shutdown: the runtime may already be gone
            pass


def load_kernel(cubin, name=None):
    """Loads `cubin` (bytes, or a CachedKernel: its CUBIN and lowered name) and finds the kernel `name`
    (its mangled name) in it. Raises NoCudaDeviceError on a machine without a GPU."""
    if not isinstance(cubin, bytes):
        cubin, name = cubin.cubin, name or cubin.lowered_name
    if not name:
        raise ValueError("load_kernel(cubin, name): name must be the kernel's lowered (mangled) name")
    require_device()
    lib = runtime()
    library = _handle()
    code = lib.cudaLibraryLoadData(ctypes.byref(library), cubin, None, None, 0, None, None, 0)
    if code != 0:
        lib.cudaGetLastError()
        raise JitError(f"tilefuse.jit: cudaLibraryLoadData failed with {_error(code)}; a CUBIN loads only on the "
                       "GPU architecture it was compiled for (sm_90a: an sm_90 device such as H100 / H200)")
    kernel = _handle()
    code = lib.cudaLibraryGetKernel(ctypes.byref(kernel), library, name.encode())
    if code != 0:
        lib.cudaGetLastError()
        lib.cudaLibraryUnload(library)
        raise JitError(f"tilefuse.jit: the CUBIN has no kernel named {name!r} ({_error(code)}); pass the lowered name "
                       "NVRTC gave for the kernel's name expression (CachedKernel.lowered_name)")
    return LoadedKernel(library.value, kernel.value, name)
