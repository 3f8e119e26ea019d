"""Epilogues written as Python functions, traced into a graph and lowered to the C++ epilogue tree.

    from tilefuse.epilogue import relu, trace, to_cpp

    def epi(acc, bias, residual, alpha):
        return relu(alpha * acc + bias) + residual

    graph = trace(epi, acc=(m, n), bias=(n,), residual=(m, n), alpha=1.0)
    cpp = to_cpp(graph, element="bfloat16")   # the C++ type; cpp.arguments lists the names to set

Rules and error messages: docs/python.md.
"""
from ..errors import EpilogueTraceError
from .functions import (FUNCTIONS, abs, amax, batch, clamp, col, exp, gelu, gelu_tanh, leaky_relu, maximum, minimum,
                        reduce_max, reduce_sum, relu, row, sigmoid, silu, tanh, where)
from .graph import Graph
from .lowering import Argument, CppEpilogue, to_cpp
from .reference import evaluate
from .specs import TensorSpec, tensor
from .tracer import trace

__all__ = [*FUNCTIONS, "Argument", "CppEpilogue", "EpilogueTraceError", "Graph", "TensorSpec", "evaluate", "tensor",
           "to_cpp", "trace"]
