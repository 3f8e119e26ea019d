"""The fused epilogues the PyTorch layer uses (tilefuse.ops, tilefuse.nn), written once: the same functions
give the same C++ trees, so the kernels tilefuse.jit.prebuilt builds at install are the ones those ops ask for.

    fused(activation, has_bias, has_residual)   act(acc + bias) + residual
"""
from .functions import gelu, gelu_tanh, relu, silu

ACTIVATIONS = ("none", "relu", "gelu", "gelu_tanh", "silu")
ACT = {"none": lambda z: z, "relu": relu, "gelu": gelu, "gelu_tanh": gelu_tanh, "silu": silu}


def fused(activation="none", has_bias=False, has_residual=False):
    """The epilogue act(acc + bias) + residual (bias and residual optional; the residual after the
    activation) as a function of acc and the arguments it takes, named bias and residual."""
    act = ACT[activation]
    if has_bias and has_residual:
        def fused_epilogue(acc, bias, residual):
            return act(acc + bias) + residual
    elif has_bias:
        def fused_epilogue(acc, bias):
            return act(acc + bias)
    elif has_residual:
        def fused_epilogue(acc, residual):
            return act(acc) + residual
    else:
        def fused_epilogue(acc):
            return act(acc)
    return fused_epilogue
