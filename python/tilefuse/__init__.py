"""tilefuse: GEMM and implicit-GEMM convolution with fused epilogues, from Python.

Importing needs no GPU. What exists today: the compiled module's basics (version, device count,
element types) and epilogues written as Python functions (:mod:`tilefuse.epilogue`), traced and
lowered to the C++ epilogue tree. Running kernels from Python comes next (see docs/python.md).
"""
from . import _C
from .dtypes import ELEMENT_TYPES, element_type
from .errors import EpilogueTraceError
from . import epilogue

__version__ = _C.__version__


def cuda_device_count() -> int:
    """Number of CUDA devices; 0 (not an error) on a machine without a GPU or a usable driver."""
    return _C.cuda_device_count()


__all__ = ["EpilogueTraceError", "ELEMENT_TYPES", "cuda_device_count", "element_type", "epilogue", "__version__"]
