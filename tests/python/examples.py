"""The epilogues the golden and C++ tests share: each with its argument specs, how to make test data,
and its formula written plainly in numpy (independent of the tracer)."""
from dataclasses import dataclass, field

import numpy as np

from tilefuse.epilogue import amax, col, gelu, relu, row, sigmoid, silu, tanh, where

M, N, B = 9, 21, 2  # odd sizes: partial vectors in the C++ host driver


def residual_block(acc, bias, residual, alpha):
    return relu(alpha * acc + bias) + residual


def region(acc, r0):
    return where(row() < r0, sigmoid(acc), tanh(acc))


def folded_bn_silu(acc, scale, shift):
    return silu(acc * scale + shift)


def aux_and_amax(acc, bias):
    z = acc + bias  # stored as "aux" and reused by D: one node, one Store sink
    d = gelu(z)
    return {"D": d, "aux": z, "amax": amax(d, dim=0)}


def gelu_bias(acc, bias):
    return gelu(acc + bias)


def plain(acc):
    return acc


def checkerboard(acc, q):
    # conv-style coordinates: with rows = (pixel) and q pixels per image row, flip every other tile
    return where((row() // q + col() // 4) % 2 == 0, acc, -acc)


@dataclass
class Example:
    name: str
    fn: object
    specs: dict  # for trace(); acc's shape included
    data: dict = field(default_factory=dict)  # numpy arguments (batched shapes), made by make_data
    formula: object = None  # numpy formula: (acc, data) -> {output: array}
    element: str = "bfloat16"


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _gelu(x):
    from math import erf
    return 0.5 * x * (1 + np.vectorize(erf)(x / np.sqrt(2)))


def examples(seed=0):
    rng = np.random.default_rng(seed)
    vec = lambda *shape: rng.uniform(-2, 2, shape).astype(np.float32)  # noqa: E731
    rows = np.arange(M, dtype=np.float32)[None, :, None]
    cols = np.arange(N, dtype=np.float32)[None, None, :]
    return [
        Example("residual_block", residual_block,
                {"acc": (B, M, N), "bias": (N,), "residual": (B, M, N), "alpha": 1.5},
                {"bias": vec(N), "residual": vec(B, M, N), "alpha": 1.5},
                lambda a, d: {"D": np.maximum(d["alpha"] * a + d["bias"], 0) + d["residual"]}),
        Example("region", region, {"acc": (B, M, N), "r0": 4.0}, {"r0": 4.0},
                lambda a, d: {"D": np.where(rows < d["r0"], _sigmoid(a), np.tanh(a))}, element="float32"),
        Example("folded_bn_silu", folded_bn_silu, {"acc": (B, M, N), "scale": (N,), "shift": (N,)},
                {"scale": vec(N), "shift": vec(N)},
                lambda a, d: {"D": (a * d["scale"] + d["shift"]) * _sigmoid(a * d["scale"] + d["shift"])}),
        Example("aux_and_amax", aux_and_amax, {"acc": (B, M, N), "bias": (N,)}, {"bias": vec(N)},
                lambda a, d: {"D": _gelu(a + d["bias"]), "aux": a + d["bias"],
                              "amax": np.abs(_gelu(a + d["bias"])).max(axis=1)}, element="float32"),
        Example("gelu_bias", gelu_bias, {"acc": (B, M, N), "bias": (N,)}, {"bias": vec(N)},
                lambda a, d: {"D": _gelu(a + d["bias"])}, element="float16"),
        Example("plain", plain, {"acc": (B, M, N)}, {}, lambda a, d: {"D": a}),
        Example("checkerboard", checkerboard, {"acc": (B, M, N), "q": 3.0}, {"q": 3.0},
                lambda a, d: {"D": np.where(((rows // d["q"]) + (cols // 4)) % 2 == 0, a, -a)}, element="float32"),
    ]


def random_acc(seed=1):
    return np.random.default_rng(seed).uniform(-4, 4, (B, M, N)).astype(np.float32)
