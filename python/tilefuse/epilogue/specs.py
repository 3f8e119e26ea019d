"""Argument specs: how trace() learns what each parameter of an epilogue is.

  a Python number                 -> a run-time scalar (C++ Scalar<"name">)
  a shape (n,) or (1, n)          -> one value per output column, e.g. a bias (RowBroadcast)
  a shape (m, 1)                  -> one value per output row (ColBroadcast)
  a shape (m, n)                  -> a matrix of the output's shape, e.g. a residual (AuxLoad)
  (b, ...) in front of any shape  -> one per batch entry
  tensor(shape, dtype), or anything with .shape and .dtype (a torch tensor, a numpy array): the same,
  and the element type comes with it.
"""
import numbers
from dataclasses import dataclass

from ..dtypes import ELEMENT_TYPES, element_type


@dataclass(frozen=True)
class TensorSpec:
    """The shape and (optionally) element type of a tensor argument."""

    shape: tuple
    dtype: str | None = None


def tensor(shape, dtype=None):
    """A tensor argument spec: tensor((n,), "bfloat16") for a bf16 bias."""
    return TensorSpec(_shape(shape, "shape"), element_type(dtype).name if dtype is not None else None)


def _shape(shape, what):
    try:
        dims = tuple(shape)
    except TypeError:
        raise ValueError(f"{what}={shape!r} is not a shape: give a tuple of sizes such as (n,) or (m, n)") from None
    if not all(isinstance(d, numbers.Integral) and not isinstance(d, bool) and d > 0 for d in dims):
        raise ValueError(f"{what}={shape!r}: every size must be a positive integer")
    return tuple(int(d) for d in dims)


class SpecError(ValueError):
    """A spec that does not describe an epilogue argument (trace() adds the parameter's name)."""


def normalize(spec):
    """'scalar' for a number; otherwise a TensorSpec (dtype None when the spec has none)."""
    if isinstance(spec, bool):
        raise SpecError("True/False is not an argument spec: give a number for a scalar, or a shape")
    if isinstance(spec, numbers.Real):
        return "scalar"
    if isinstance(spec, TensorSpec):
        return spec
    if hasattr(spec, "shape") and hasattr(spec, "dtype"):
        dtype = element_type(spec.dtype, what="dtype")
        if not dtype.epilogue:
            usable = ", ".join(n for n, t in ELEMENT_TYPES.items() if t.epilogue)
            raise SpecError(f"has dtype {dtype.name}, which an epilogue cannot read; use one of: {usable}")
        return TensorSpec(_shape(spec.shape, "shape"), dtype.name) if tuple(spec.shape) else "scalar"
    if isinstance(spec, (tuple, list)):
        return TensorSpec(_shape(spec, "shape")) if len(spec) else "scalar"
    raise SpecError(f"has the spec {spec!r} ({type(spec).__name__}); give a number (scalar), a shape such as (n,), "
                    "(m, 1) or (m, n), tilefuse.epilogue.tensor(shape, dtype), or a tensor")


def classify(spec: TensorSpec, out_shape):
    """The kind of a tensor argument ("row_broadcast", "col_broadcast" or "aux_load") and the (m, n) it
    implies (None where it implies nothing), checked against the output's (m, n) when that is known."""
    dims = spec.shape
    if len(dims) == 3:
        dims = dims[1:]  # batch first; its size is checked by the runtime, which knows the batch
    if len(dims) == 1:
        kind, implied = "row_broadcast", (None, dims[0])
    elif len(dims) == 2:
        rows, cols = dims
        if out_shape is not None and (rows, cols) == tuple(out_shape):
            kind, implied = "aux_load", (rows, cols)
        elif rows == 1:
            kind, implied = "row_broadcast", (None, cols)
        elif cols == 1 and (out_shape is None or out_shape[1] != 1):
            kind, implied = "col_broadcast", (rows, None)
        else:
            kind, implied = "aux_load", (rows, cols)
    else:
        raise SpecError(f"has shape {spec.shape}; use (n,) or (1, n) per column, (m, 1) per row, (m, n) for a "
                        "matrix, each optionally with a batch size in front")
    if out_shape is not None:
        for got, want, axis in ((implied[0], out_shape[0], "rows"), (implied[1], out_shape[1], "columns")):
            if got is not None and got != want:
                raise SpecError(f"has shape {spec.shape}, which does not broadcast against the output "
                                f"{tuple(out_shape)} ({axis}: {got} vs {want}); use (n,) or (1, n) per column, "
                                "(m, 1) per row, or (m, n)")
    return kind, implied
