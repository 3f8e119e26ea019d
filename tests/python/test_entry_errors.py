"""The public entry points refuse bad input with a sentence, before any kernel work and without a GPU: wrong
constructor arguments at construction, missing or unknown epilogue arguments in run()'s words, CUDA arrays that
do not say their device, and missing packages (torch, numpy) with the pip command."""
import importlib
import sys

import numpy as np
import pytest

import tilefuse
from tilefuse import MissingPackageError, TensorArgumentError
from tilefuse.epilogue import relu


@pytest.mark.parametrize("op", [tilefuse.Gemm, tilefuse.Conv2d])
def test_constructor_arguments_are_checked_at_construction(op):
    with pytest.raises(ValueError, match=r"\(out_dtype=.int8.\): the kernels store bfloat16, float16, float32"):
        op(out_dtype="int8")
    with pytest.raises(ValueError, match="not an element type"):
        op(out_dtype="bfloat17")
    with pytest.raises(TypeError, match="pass a Python function"):
        op(epilogue=42)
    op(out_dtype="float32", epilogue=lambda acc: acc)  # fine


def test_missing_and_unknown_epilogue_arguments_speak_of_run():
    a = np.zeros((64, 32), np.float16)
    b = np.zeros((64, 32), np.float16).T
    gemm = tilefuse.Gemm(epilogue=lambda acc, bias, residual: relu(acc + bias) + residual)
    with pytest.raises(TensorArgumentError, match=r"takes 'bias', 'residual', which were not passed; call "
                                                  r"run\(a, b, bias=\.\.\., residual=\.\.\.\)"):
        gemm.run(a, b)
    with pytest.raises(TensorArgumentError, match="'scale' is not a parameter of the epilogue"):
        gemm.run(a, b, bias=np.zeros(64, np.float16), residual=a, scale=2.0)
    with pytest.raises(TensorArgumentError, match="tilefuse.Conv2d.run: the epilogue takes 'bias'"):
        tilefuse.Conv2d(epilogue=lambda acc, bias: acc + bias).run(np.zeros((1, 8, 4, 4)), np.zeros((8, 8, 1, 1)))


class CudaArray:
    """A CUDA array of another framework that gives no device index (__cuda_array_interface__ has none)."""

    def __init__(self, shape, strides=None):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": "<f2", "data": (1 << 20, False), "version": 3,
                                         "strides": strides}


def test_a_cuda_array_without_a_device_index_is_named():
    with pytest.raises(TensorArgumentError, match="__cuda_array_interface__, which does not say which device"):
        tilefuse.Gemm().run(CudaArray((64, 32)), CudaArray((32, 64), (2, 64)))


@pytest.fixture
def without(monkeypatch):
    """Makes `import <name>` fail as if the package were not installed (and forgets modules that imported it)."""
    def hide(name):
        monkeypatch.setitem(sys.modules, name, None)
        for module in ("tilefuse.nn", "tilefuse.ops", "tilefuse.conv_ops"):
            monkeypatch.delitem(sys.modules, module, raising=False)
    return hide


def test_without_torch_every_entry_point_says_what_to_install(without):
    without("torch")
    x = np.zeros((1, 8, 4, 4), np.float16)
    with pytest.raises(MissingPackageError, match="needs PyTorch .*pip install torch"):
        tilefuse.Conv2d().run(x, np.zeros((8, 8, 1, 1), np.float16))
    with pytest.raises(MissingPackageError, match="tilefuse.scaled_mm needs PyTorch"):
        tilefuse.scaled_mm(x, x, 1.0, 1.0)
    for module in ("nn", "ops"):
        with pytest.raises(MissingPackageError, match="pip install torch"):
            importlib.import_module(f"tilefuse.{module}")


def test_evaluate_without_numpy_says_what_to_install(without):
    from tilefuse.epilogue import evaluate, trace

    graph = trace(lambda acc: relu(acc), acc=(2, 2))
    without("numpy")
    with pytest.raises(MissingPackageError, match="tilefuse.epilogue.evaluate needs numpy: pip install numpy"):
        evaluate(graph, [[1.0, -1.0], [0.0, 2.0]])
