"""The wgrad of few channels by im2col + GEMM (tilefuse.conv2d_im2col) without a GPU: the C++ planner's plan
(tilefuse._C.plan_wgrad_im2col, for an H100's facts) run by Im2colWgrad with the GEMM done by torch in float64
equals torch's wgrad, for random sizes, paddings, strides, dilations and zero-padded channels; and the
planner's refusals reach Python. tests/python/test_conv2d_wgrad_im2col_gpu.py runs it on the GPU."""
import random

import pytest

torch = pytest.importorskip("torch")

from tilefuse import _C  # noqa: E402
from tilefuse.conv2d import ConvProblem, output_extent  # noqa: E402
from tilefuse.conv2d_im2col import Im2colWgrad  # noqa: E402

CL = torch.channels_last
H100 = (9, 0, 132)


class _TorchGemm:
    """A stand-in for tilefuse.Gemm: a (m, k) row-major times b (k, n) K-major, in float64; the operands'
    paddings must be zeros (poisoned memory would show up here as NaN)."""

    def run(self, a, b):
        assert a.is_contiguous() and b.t().is_contiguous()
        return a @ b


def problem(N, C, H, W, K, R, S, pad, stride, dilation):
    P = output_extent(H, pad[0], dilation[0], R, stride[0])
    Q = output_extent(W, pad[1], dilation[1], S, stride[1])
    return ConvProblem(N, H, W, C, K, R, S, P, Q, pad, stride, dilation)


def test_im2col_and_gemm_equal_torchs_wgrad():
    rng = random.Random(5)
    for trial in range(40):
        R, S = rng.randint(1, 7), rng.randint(1, 5)
        stride, dilation = (rng.randint(1, 3), rng.randint(1, 2)), (rng.randint(1, 2), 1)
        pad = (rng.randint(0, R - 1), rng.randint(0, S - 1))
        C, zero = rng.choice([(3, 0), (1, 0), (5, 0), (7, 0), (8, 5), (8, 7), (16, 9)])
        H, W = rng.randint(R * dilation[0], R * dilation[0] + 9), rng.randint(S, S + 9)
        p = problem(rng.randint(1, 3), C, H, W, rng.choice([8, 16, 24]), R, S, pad, stride, dilation)
        real = ConvProblem(p.N, p.H, p.W, C - zero, p.K, R, S, p.P, p.Q, pad, stride, dilation)
        planned = _C.plan_wgrad_im2col(real.planner_geometry(), "bfloat16", True, H100, True)
        assert planned["use"], planned["why"]
        assert planned["padded_columns"] % 8 == 0 and planned["padded_k"] % 8 == 0
        x = torch.randn(p.N, C, H, W, dtype=torch.float64)
        if zero:
            x[:, C - zero:] = 0
        x = x.contiguous(memory_format=CL)
        dy = torch.randn(p.N, p.K, p.P, p.Q, dtype=torch.float64).contiguous(memory_format=CL)
        wgrad = Im2colWgrad(planned, p, zero)
        wgrad.gemm = _TorchGemm()
        original = torch.empty
        # poison what the call allocates: every padding must be written
        torch.empty = lambda *a, **k: original(*a, **k).fill_(float("nan"))
        try:
            dw = wgrad.call(dy, x, {})
        finally:
            torch.empty = original
        ref = torch.nn.grad.conv2d_weight(x, (p.K, C, R, S), dy, stride=stride, padding=pad, dilation=dilation)
        assert dw.shape == (p.K, C, R, S) and dw.is_contiguous(memory_format=CL)
        assert torch.allclose(dw, ref, atol=1e-9), (trial, p, zero)


def test_refusals_reach_python():
    stem = (64, 224, 224, 3, 64, 7, 7, 3, 3, 2, 2, 1, 1)
    assert _C.plan_wgrad_im2col(stem, "bfloat16", True, H100, True)["use"]
    assert "147 columns" in _C.plan_wgrad_im2col(stem, "bfloat16", True, H100, True)["why"]
    assert "sm80 kernel" in _C.plan_wgrad_im2col(stem, "bfloat16", True, (8, 0, 108), True)["why"]
    assert "epilogue" in _C.plan_wgrad_im2col(stem, "bfloat16", False, H100, True)["why"]
    wide = (64, 56, 56, 64, 64, 3, 3, 1, 1, 1, 1, 1, 1)
    assert "Hopper wgrad takes it" in _C.plan_wgrad_im2col(wide, "bfloat16", True, H100, True)["why"]
    assert "not below a 16-byte chunk" in _C.plan_wgrad_im2col(wide[:3] + (12,) + wide[4:], "bfloat16", True, H100,
                                                              True)["why"]
    assert _C.plan_wgrad_im2col(stem, "bfloat16", True, H100, True)["gemm_family"] == "sm90"
    small = (1, 9, 9, 3, 16, 3, 3, 1, 1, 1, 1, 1, 1)  # m = 16 filters, k = 81 pixels: the skinny GEMM
    assert _C.plan_wgrad_im2col(small, "bfloat16", True, H100, True)["gemm_family"] == "skinny"
    with pytest.raises(ValueError, match=r"no element type 'int8': pass bfloat16, float16"):
        _C.plan_wgrad_im2col(stem, "int8", True, H100, True)


def test_the_gather_launch_packs_the_sizes_and_refuses_what_does_not_fit():
    import struct

    sizes = [64, 224, 224, 8, 3, 7, 7, 112, 112, 3, 3, 2, 2, 1, 1]
    params, src, dst, grid, threads = _C.gather_columns_launch(sizes, 152, 802816)
    assert (src, dst) == (0, 8) and threads == 256 and grid == 802816 // 256
    assert list(struct.unpack_from("<17q", params, 16)) == sizes + [152, 802816]
    with pytest.raises(ValueError, match="does not fit"):
        _C.gather_columns_launch(sizes, 146, 802816)  # fewer rows than 7 x 7 x 3
    with pytest.raises(ValueError, match="does not fit"):
        _C.gather_columns_launch(sizes, 152, 802815)  # fewer columns than pixels
    with pytest.raises(ValueError, match="does not fit"):
        _C.gather_columns_launch(sizes[:3] + [2] + sizes[4:], 152, 802816)  # more channels than x has
