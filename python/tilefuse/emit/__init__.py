"""Code emitters: a GEMM or conv2d with its traced epilogue, written out as a standalone PyTorch extension.

    from tilefuse.emit import OpSpec, pytorch
    from tilefuse.epilogue import relu

    def epi(acc, bias, residual):
        return relu(acc + bias) + residual

    spec = OpSpec("conv2d_fprop", "bfloat16", epi, {"bias": (64,), "residual": (8, 64)}, padding=(1, 1))
    ext = pytorch(spec, "fused_conv", "build/fused_conv")   # then: cd build/fused_conv && python setup.py build_ext --inplace

Emitting needs neither torch nor a GPU. Details: docs/python.md ("Extension emitter").
"""
from .pytorch import DEFAULT_ARCHS, EmittedExtension, pytorch
from .spec import EmitError, OpSpec, spec_of

__all__ = ["DEFAULT_ARCHS", "EmitError", "EmittedExtension", "OpSpec", "pytorch", "spec_of"]
