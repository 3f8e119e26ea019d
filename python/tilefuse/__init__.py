"""tilefuse: GEMM and implicit-GEMM convolution with fused epilogues, from Python.

Importing needs no GPU. tilefuse.Gemm runs D = epilogue(A @ B) on an H100 / H200 with the epilogue a
Python function (:mod:`tilefuse.epilogue`), traced, lowered to the C++ epilogue tree and compiled by the
JIT (:mod:`tilefuse.jit`); see docs/python.md.
"""
import os as _os

try:
    from . import _C
except ImportError:
    # python/CMakeLists.txt runs tilefuse.jit.prebuilt while building the package, before _C exists.
    if _os.environ.get("TILEFUSE_PREBUILD") != "1":
        raise
    _C = None
from .dtypes import ELEMENT_TYPES, element_type
from .errors import EpilogueTraceError, MissingPackageError, TensorArgumentError
from . import epilogue
from .gemm import Gemm
from .conv2d import Conv2d
from .scaled_mm import scaled_mm

from ._version import version as _version

__version__ = _version()


def __getattr__(name):
    # tilefuse.ops (torch.library custom ops), tilefuse.nn (modules), tilefuse.backend (torch.compile's) and
    # tilefuse.parallel need torch: imported on first use, so that `import tilefuse` works without torch.
    import importlib

    if name in ("ops", "nn", "backend", "parallel"):
        return importlib.import_module(f".{name}", __name__)
    if name == "optimize":  # tilefuse.optimize(model): torch.compile(model, backend="tilefuse")
        return importlib.import_module(".backend", __name__).optimize
    raise AttributeError(f"module 'tilefuse' has no attribute {name!r}")


def cuda_device_count() -> int:
    """Number of CUDA devices; 0 (not an error) on a machine without a GPU or a usable driver."""
    return _C.cuda_device_count()


__all__ = ["Conv2d", "EpilogueTraceError", "Gemm", "MissingPackageError", "TensorArgumentError", "scaled_mm", "ELEMENT_TYPES", "cuda_device_count", "element_type", "epilogue", "__version__"]
