"""evaluate(graph, acc, **arguments): the epilogue computed with numpy in float32, the same formulas
as include/tilefuse/epilogue/ops.h (on the host). For checking an epilogue on the CPU and for tests.
Stored outputs come back unrounded (the element type's rounding is the caller's to apply)."""
import math

from .graph import Graph


def evaluate(graph, acc, **arguments):
    """{output name: numpy array}. acc: (m, n) or (b, m, n). Tensor arguments are numpy arrays of their
    spec's shape (a bias (n,), a per-row vector (m, 1), a matrix (m, n), each optionally batched);
    scalars are numbers. Reductions come back as (n,) / (m,) (or (b, n) / (b, m))."""
    from ..errors import require_numpy

    np = require_numpy("tilefuse.epilogue.evaluate")

    if not isinstance(graph, Graph):
        raise TypeError(f"evaluate(graph, ...): graph must come from trace(), got {type(graph).__name__}")
    acc = np.asarray(acc, dtype=np.float32)
    if acc.ndim not in (2, 3):
        raise ValueError(f"evaluate(..., acc): acc must be (m, n) or (b, m, n), got shape {acc.shape}")
    missing = [n for n in graph.inputs if n not in arguments]
    if missing:
        raise TypeError(f"evaluate(...): missing argument(s) {', '.join(missing)}")
    batched = acc.ndim == 3
    grid = np.indices(acc.shape, dtype=np.float32)
    coords = {"batch": grid[0] if batched else np.zeros_like(acc), "row": grid[-2], "col": grid[-1]}

    def load(name, kind):
        x = np.asarray(arguments[name], dtype=np.float32)
        if kind == "row_broadcast":  # (n,), (1, n), (b, 1, n) or (b, n)
            if batched and x.ndim == 2 and x.shape[0] == acc.shape[0] and x.shape[0] != 1:
                x = x[:, None, :]
            elif x.ndim == 1:
                x = x[None, :]
        return np.broadcast_to(x, acc.shape)

    with np.errstate(all="ignore"):
        values = []
        for node in graph.nodes:
            x = [values[i] for i in node.inputs]
            if node.op == "acc":
                v = acc
            elif node.op == "constant":
                v = np.full(acc.shape, node.value, np.float32)
            elif node.op == "scalar":
                v = np.full(acc.shape, arguments[node.name], np.float32)
            elif node.op in coords:
                v = coords[node.op]
            elif node.op in ("row_broadcast", "col_broadcast", "aux_load"):
                v = load(node.name, node.op)
            else:
                v = _OPS[node.op](np, *x)
            values.append(np.asarray(v, dtype=np.float32))

        results = {}
        for out in graph.outputs.values():
            v = values[out.node]
            if out.kind == "store":
                results[out.name] = v
                continue
            axis = -2 if out.kind == "col_reduce" else -1
            if out.reduction == "sum":
                results[out.name] = v.sum(axis=axis, dtype=np.float64).astype(np.float32)
            elif out.reduction == "max":
                results[out.name] = v.max(axis=axis)
            else:
                results[out.name] = np.abs(v).max(axis=axis)
    return results


def _erf(np, x):
    return np.vectorize(math.erf, otypes=[np.float64])(x.astype(np.float64)).astype(np.float32)


def _sigmoid(np, x):
    return np.float32(1) / (np.float32(1) + np.exp(-x))


def _floor_div(np, a, b):
    """C++ op::FloorDiv: floor of the integer parts' quotient; NaN for a zero or non-finite divisor."""
    a, b = np.broadcast_arrays(np.asarray(a, np.float32), np.asarray(b, np.float32))
    ok = (b != 0) & np.isfinite(a) & np.isfinite(b) & (np.abs(a) < 2.0**31) & (np.abs(b) < 2.0**31)
    safe_b = np.where(ok, np.trunc(b), np.float32(1))
    q = np.floor_divide(np.where(ok, np.trunc(a), np.float32(0)), safe_b)
    return np.where(ok, q, np.float32(np.nan)).astype(np.float32)


_OPS = {
    "add": lambda np, a, b: a + b,
    "sub": lambda np, a, b: a - b,
    "mul": lambda np, a, b: a * b,
    "div": lambda np, a, b: a / b,
    "floordiv": lambda np, a, b: _floor_div(np, a, b),
    "mod": lambda np, a, b: a - b * _floor_div(np, a, b),
    "minimum": lambda np, a, b: np.minimum(a, b),
    "maximum": lambda np, a, b: np.maximum(a, b),
    "lt": lambda np, a, b: (a < b).astype(np.float32),
    "le": lambda np, a, b: (a <= b).astype(np.float32),
    "gt": lambda np, a, b: (a > b).astype(np.float32),
    "ge": lambda np, a, b: (a >= b).astype(np.float32),
    "eq": lambda np, a, b: (a == b).astype(np.float32),
    "ne": lambda np, a, b: (a != b).astype(np.float32),
    "leaky_relu": lambda np, a, b: np.where(a < 0, a * b, a),
    "neg": lambda np, x: -x,
    "abs": lambda np, x: np.abs(x),
    "exp": lambda np, x: np.exp(x),
    "tanh": lambda np, x: np.tanh(x),
    "relu": lambda np, x: np.where(x < 0, np.float32(0), x),
    "sigmoid": _sigmoid,
    "silu": lambda np, x: x * _sigmoid(np, x),
    "gelu": lambda np, x: np.float32(0.5) * x * (np.float32(1) + _erf(np, x * np.float32(0.70710678118654752))),
    "gelu_tanh": lambda np, x: x / (np.float32(1) + np.exp(np.float32(-1.5957691216057308) *
                                                             (x + np.float32(0.044715) * x * x * x))),
    "clamp": lambda np, x, lo, hi: np.minimum(np.maximum(x, lo), hi),
    "where": lambda np, c, a, b: np.where(c != 0, a, b),
}
