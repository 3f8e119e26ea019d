"""Every unsupported construct raises EpilogueTraceError at the user's line, saying what to use."""
import inspect
import math

import numpy as np
import pytest

from tilefuse import EpilogueTraceError
from tilefuse.epilogue import amax, relu, row, to_cpp, trace, where


def line_of(fn, text):
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


def expect_error(fn, marker, *needles, **specs):
    with pytest.raises(EpilogueTraceError) as info:
        trace(fn, **specs)
    message = str(info.value)
    assert f"{__file__}:{line_of(fn, marker)}:" in message, message
    assert info.value.filename == __file__ and info.value.lineno == line_of(fn, marker)
    for needle in needles:
        assert needle in message, message
    return message


def test_if_on_a_traced_value():
    def epi(acc):
        if acc > 0:  # marker
            return acc
        return -acc

    expect_error(epi, "# marker", "use tilefuse.epilogue.where(cond, a, b) instead of if")


def test_and_or():
    def epi(acc, r0):
        return where(row() < r0 and acc > 0, acc, 0.0)  # marker

    expect_error(epi, "# marker", "&", "where", r0=1.0)


def test_builtin_max():
    def epi(acc):
        return max(acc, 0.0)  # marker

    expect_error(epi, "# marker", "tilefuse.epilogue.maximum")


def test_math_exp():
    def epi(acc):
        return math.exp(acc)  # marker

    expect_error(epi, "# marker", "math.exp()", "use tilefuse.epilogue.exp(...)")


def test_numpy_function():
    def epi(acc):
        return np.tanh(acc)  # marker

    expect_error(epi, "# marker", "numpy.tanh() cannot be traced", "tilefuse.epilogue.tanh")


def test_unknown_function_from_a_library():
    def epi(acc):
        return math.erf(acc) * acc  # marker

    expect_error(epi, "# marker", "math.erf()", "available:")


def test_unknown_attribute():
    def epi(acc):
        return acc.sigmoid()  # marker

    expect_error(epi, "# marker", "no attribute .sigmoid", "tilefuse.epilogue.sigmoid(x)")


def test_other_failures_point_at_the_line():
    def epi(acc, bias):
        return acc + bias["x"]  # marker

    expect_error(epi, "# marker", "cannot be indexed", bias=(8,))


def test_captured_array():
    table = np.ones(8)

    def epi(acc):
        return acc * table  # marker

    expect_error(epi, "# marker", "pass it to the function as an argument")


def test_reduction_used_as_a_value():
    def epi(acc):
        return amax(acc, dim=0) * 2  # marker

    expect_error(epi, "# marker", "is a reduction", "return it in the output dict")


def test_bad_reduction_dim():
    def epi(acc):
        return {"D": acc, "m": amax(acc, dim=2)}  # marker

    expect_error(epi, "# marker", "dim must be 0")


def test_returning_nothing():
    def epi(acc):
        relu(acc)

    message = expect_error(epi, "def epi", "forget `return`")
    assert "returned None" in message


def test_output_named_like_an_input():
    def epi(acc, bias):
        return {"D": acc, "bias": acc + bias}

    expect_error(epi, "def epi", "name of an input", bias=(8,))


def test_output_name_too_long_for_cpp():
    def epi(acc):
        return {"D": acc, "x" * 33: acc}

    expect_error(epi, "def epi", "at most 32")


def test_missing_acc_parameter():
    def epi(x):
        return x

    expect_error(epi, "def epi", "no parameter named acc")


def test_functions_outside_a_trace():
    with pytest.raises(EpilogueTraceError, match="only be used inside an epilogue function"):
        row()


def test_spec_errors_name_the_argument():
    with pytest.raises(TypeError, match="no spec for parameter bias"):
        trace(lambda acc, bias: acc + bias)
    with pytest.raises(TypeError, match="beta is not a parameter"):
        trace(lambda acc: acc, beta=1.0)
    with pytest.raises(ValueError, match=r"argument bias has shape \(7,\), which does not broadcast"):
        trace(lambda acc, bias: acc + bias, acc=(4, 8), bias=(7,))
    with pytest.raises(ValueError, match="argument bias has dtype int8, which an epilogue cannot read"):
        trace(lambda acc, bias: acc + bias, bias=np.zeros(8, np.int8))
    with pytest.raises(ValueError, match="disagree on the output's columns"):
        trace(lambda acc, a, b: acc + a + b, a=(8,), b=(4, 9))


def test_unsupported_element_types():
    g = trace(lambda acc: acc)
    with pytest.raises(ValueError, match="element='int8'.*cannot be an epilogue's"):
        to_cpp(g, element="int8")
    with pytest.raises(ValueError, match="element='complex64' is not an element type"):
        to_cpp(g, element="complex64")
    with pytest.raises(TypeError, match="graph must be what tilefuse.epilogue.trace returns"):
        to_cpp("Acc")
