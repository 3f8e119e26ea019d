"""The fused epilogues the PyTorch layer uses (tilefuse.ops, tilefuse.nn), written once: the same functions
give the same C++ trees, so the kernels tilefuse.jit.prebuilt builds at install are the ones those ops ask for.

    fused(activation, has_bias, has_residual)   act(acc + bias) + residual
    fused(..., residual_first=True)             act(acc + bias + residual)   (a ResNet block's last conv)
"""
from .functions import clamp, gelu, gelu_tanh, relu, sigmoid, silu

ACTIVATIONS = ("none", "relu", "gelu", "gelu_tanh", "silu", "sigmoid", "hardswish", "relu6")


def _hardswish(z):
    """z * relu6(z + 3) / 6 (torch.nn.functional.hardswish)."""
    return z * clamp(z + 3.0, 0.0, 6.0) * (1.0 / 6.0)


def _relu6(z):
    """min(max(z, 0), 6) (torch.nn.functional.relu6, nn.ReLU6)."""
    return clamp(z, 0.0, 6.0)


ACT = {"none": lambda z: z, "relu": relu, "gelu": gelu, "gelu_tanh": gelu_tanh, "silu": silu, "sigmoid": sigmoid,
       "hardswish": _hardswish, "relu6": _relu6}


def fused(activation="none", has_bias=False, has_residual=False, residual_first=False):
    """The epilogue act(acc + bias) + residual (bias and residual optional; the residual after the
    activation, or before it with residual_first: act(acc + bias + residual)) as a function of acc and the
    arguments it takes, named bias and residual."""
    act = ACT[activation]
    if residual_first and has_residual:
        if has_bias:
            def fused_epilogue(acc, bias, residual):
                return act(acc + bias + residual)
        else:
            def fused_epilogue(acc, residual):
                return act(acc + residual)
        return fused_epilogue
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
