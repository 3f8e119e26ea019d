"""The functions an epilogue may call. Each records one node of the C++ tree (graph.COMPUTE_OPS says
which); numbers given as arguments become Constant nodes."""
from . import proxy
from .graph import REDUCTIONS
from .location import trace_error
from .proxy import Reduction, Value, tracer_of


def _unary(op, doc):
    def function(x):
        return tracer_of(op, x).compute(op, x, function=op, names=["x"])
    function.__name__ = function.__qualname__ = op
    function.__doc__ = doc
    return function


relu = _unary("relu", "max(x, 0); NaN stays NaN (like torch.relu).")
gelu = _unary("gelu", "x * Phi(x) with the exact erf (torch.nn.functional.gelu's default). C++: GeluErf.")
gelu_tanh = _unary("gelu_tanh", "GELU's tanh approximation (gelu(x, approximate='tanh')). C++: GeluTanh.")
silu = _unary("silu", "x * sigmoid(x).")
sigmoid = _unary("sigmoid", "1 / (1 + exp(-x)).")
tanh = _unary("tanh", "tanh(x).")
exp = _unary("exp", "e ** x.")
abs = _unary("abs", "|x| (the built-in abs(x) works too).")  # noqa: A001 - the name users expect


def minimum(a, b):
    """The smaller of a and b; NaN if either is NaN (like torch.minimum). C++: Min."""
    return tracer_of("minimum", a, b).compute("minimum", a, b, function="minimum", names=["a", "b"])


def maximum(a, b):
    """The larger of a and b; NaN if either is NaN (like torch.maximum). C++: Max."""
    return tracer_of("maximum", a, b).compute("maximum", a, b, function="maximum", names=["a", "b"])


def clamp(x, lo, hi):
    """min(max(x, lo), hi). Both bounds are required: for one bound use maximum or minimum."""
    return tracer_of("clamp", x, lo, hi).compute("clamp", x, lo, hi, function="clamp", names=["x", "lo", "hi"])


def leaky_relu(x, negative_slope=0.01):
    """x where x >= 0, negative_slope * x below (torch's default slope 0.01)."""
    return tracer_of("leaky_relu", x, negative_slope).compute(
        "leaky_relu", x, negative_slope, function="leaky_relu", names=["x", "negative_slope"])


def where(condition, a, b):
    """a where condition holds (is non-zero), else b. Both a and b are computed. Use it instead of `if`."""
    return tracer_of("where", condition, a, b).compute("where", condition, a, b, function="where",
                                                       names=["condition", "a", "b"])


def row():
    """The element's output row (m index), as a float (exact below 2**24)."""
    return proxy.active_tracer("row").value("row")


def col():
    """The element's output column (n index, the output channel of a convolution), as a float."""
    return proxy.active_tracer("col").value("col")


def batch():
    """The element's batch index (the L of a batched GEMM), as a float."""
    return proxy.active_tracer("batch").value("batch")


def _reduce(reduction, function, x, dim):
    if not isinstance(x, Value):
        raise trace_error(f"{function}(x, dim): x must be a traced value, not {type(x).__name__}")
    if dim not in (0, 1, -1, -2) or isinstance(dim, bool):
        raise trace_error(f"{function}(x, dim={dim!r}): dim must be 0 (over rows: one value per column) or "
                          "1 (over columns: one value per row)")
    kind = "col_reduce" if dim in (0, -2) else "row_reduce"
    assert reduction in REDUCTIONS
    return Reduction(x._tracer, x._index, kind, reduction, f"{function}(..., dim={dim})")


def amax(x, dim):
    """max |x| over rows (dim=0: one float per column) or columns (dim=1: one per row), the amax of FP8
    scaling recipes. Note: the absolute value, unlike torch.amax. NaN propagates. An output."""
    return _reduce("absmax", "amax", x, dim)


def reduce_max(x, dim):
    """max x over rows (dim=0) or columns (dim=1), starting from -inf. NaN propagates. An output."""
    return _reduce("max", "reduce_max", x, dim)


def reduce_sum(x, dim):
    """The sum of x over rows (dim=0) or columns (dim=1), in float. An output."""
    return _reduce("sum", "reduce_sum", x, dim)


FUNCTIONS = ("relu", "gelu", "gelu_tanh", "silu", "sigmoid", "tanh", "exp", "abs", "minimum", "maximum", "clamp",
             "leaky_relu", "where", "row", "col", "batch", "amax", "reduce_max", "reduce_sum")
proxy._FUNCTION_NAMES.update(FUNCTIONS)
