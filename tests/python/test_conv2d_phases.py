"""The strided dgrad by phases (tilefuse.conv2d_phases) without a GPU: the C++ planner's phases
(tilefuse._C.plan_dgrad_phases, for an H100's facts) run by PhasedDgrad with each phase's fprop done by
torch in float64, either stored through the planner's row map as the kernel's lane stores do
(gemm::sm90::mapped_row_offset) or interleaved into dx by a copy, equal torch's dgrad; and the planner's
refusals reach Python."""
import random

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

from tilefuse import _C  # noqa: E402
from tilefuse.conv2d import ConvProblem, output_extent  # noqa: E402
from tilefuse.conv2d_phases import PhasedDgrad  # noqa: E402

CL = torch.channels_last
H100 = (9, 0, 132)


class _TorchFprop:
    """A stand-in for tilefuse.Conv2d("fprop", stride=1, padding=...): torch's conv in float64."""

    def __init__(self, padding):
        self.padding = padding

    def run(self, x, w):
        assert x.is_contiguous(memory_format=CL) and w.is_contiguous(memory_format=CL)
        return F.conv2d(x, w, padding=self.padding).contiguous(memory_format=CL)


class _MappedStore:
    """What Conv2d.row_mapped_call returns, in float64 on the CPU: the fprop's output pixels stored into `out`
    where the row map says, as the kernel's lane stores do; rows the map does not store are dropped."""

    def __init__(self, padding, row_map):
        self.padding, self.row_map = padding, row_map

    def call(self, x, w, arguments, out):
        q, p, crop_h, crop_w, extent_h, extent_w, image, row, column, origin = self.row_map[:10]  # then divisors
        y = F.conv2d(x, w, padding=self.padding).permute(0, 2, 3, 1).reshape(-1, w.shape[0])
        assert y.shape[0] == x.shape[0] * p * q
        flat = out.permute(0, 2, 3, 1).reshape(-1)  # a view: out is channels-last
        for r in range(y.shape[0]):
            n, i, j = r // (p * q), r % (p * q) // q - crop_h, r % q - crop_w
            if 0 <= i < extent_h and 0 <= j < extent_w:
                at = origin + n * image + i * row + j * column
                flat[at:at + y.shape[1]] = y[r]
        return out


class _TorchMappedFprop(_TorchFprop):
    """_TorchFprop with the in-place store a Hopper fprop kernel offers."""

    def row_mapped_call(self, a, b, out, row_map, beside_previous=False):
        return _MappedStore(self.padding, row_map)


def problem(N, C, H, W, K, R, S, pad, stride):
    P, Q = output_extent(H, pad[0], 1, R, stride[0]), output_extent(W, pad[1], 1, S, stride[1])
    return ConvProblem(N, H, W, C, K, R, S, P, Q, pad, stride, (1, 1))


@pytest.fixture
def poisoned_empty(monkeypatch):
    """torch.empty hands out NaNs: an element of dx that no phase writes and the zero fill misses shows."""
    original = torch.empty
    monkeypatch.setattr(torch, "empty", lambda *a, **k: original(*a, **k).fill_(float("nan")))


@pytest.mark.parametrize("fprop", [_TorchMappedFprop, _TorchFprop], ids=["row map", "copy"])
def test_phases_stored_or_interleaved_equal_torchs_dgrad(poisoned_empty, fprop):
    rng = random.Random(3)
    ran = 0
    for _ in range(60):
        R, S = rng.randint(1, 5), rng.randint(1, 5)
        stride = (rng.randint(1, 3), rng.randint(2, 3))
        pad = (rng.randint(0, R - 1), rng.randint(0, S - 1))
        p = problem(2, 8, rng.randint(R, R + 8), rng.randint(S, S + 8), 16, R, S, pad, stride)
        planned = _C.plan_dgrad_phases(p.planner_geometry(), "bfloat16", True, H100, True)
        assert planned["use"], planned["why"]
        ran += 1
        w = torch.randn(p.K, p.C, R, S, dtype=torch.float64).contiguous(memory_format=CL)
        dy = torch.randn(p.N, p.K, p.P, p.Q, dtype=torch.float64).contiguous(memory_format=CL)
        phased = PhasedDgrad(planned, p, fprop)
        dx = phased.call(dy, w, {})
        assert phased.stores_in_place(dy, w) == (fprop is _TorchMappedFprop)
        ref = torch.nn.grad.conv2d_input((p.N, p.C, p.H, p.W), w, dy, stride=stride, padding=pad)
        assert dx.is_contiguous(memory_format=CL)
        assert torch.allclose(dx, ref, atol=1e-9), (p, planned["why"])
    assert ran == 60


@pytest.mark.parametrize("fprop", [_TorchMappedFprop, _TorchFprop], ids=["row map", "copy"])
def test_a_1x1_stride_2_dgrad_runs_one_phase_and_zero_fills_the_rest(poisoned_empty, fprop):
    p = problem(2, 64, 14, 14, 128, 1, 1, (0, 0), (2, 2))
    planned = _C.plan_dgrad_phases(p.planner_geometry(), "bfloat16", True, H100, True)
    phased = PhasedDgrad(planned, p, fprop)
    assert len(phased.phases) == 1 and phased.zero_fill
    assert "the others zero" in planned["why"]
    w = torch.randn(p.K, p.C, 1, 1, dtype=torch.float64).contiguous(memory_format=CL)
    dy = torch.randn(p.N, p.K, p.P, p.Q, dtype=torch.float64).contiguous(memory_format=CL)
    dx = phased.call(dy, w, {})
    ref = torch.nn.grad.conv2d_input((p.N, p.C, p.H, p.W), w, dy, stride=(2, 2), padding=(0, 0))
    assert torch.equal(dx[:, :, 1::2], torch.zeros_like(dx[:, :, 1::2]))  # odd rows: no tap reaches them
    assert torch.equal(dx[:, :, :, 1::2], torch.zeros_like(dx[:, :, :, 1::2]))
    assert torch.allclose(dx, ref, atol=1e-9)


@pytest.mark.parametrize("bare,device,why", [(False, H100, "epilogue"), (True, (8, 0, 108), "sm_80")])
def test_the_planners_refusals_say_why(bare, device, why):
    p = problem(2, 64, 14, 14, 128, 3, 3, (1, 1), (2, 2))
    planned = _C.plan_dgrad_phases(p.planner_geometry(), "bfloat16", bare, device, True)
    assert not planned["use"] and why in planned["why"]


def test_the_kept_gather_index_made_under_inference_mode_serves_autograd_later(poisoned_empty):
    """The gather index is kept per device: made under torch.inference_mode it must not be an inference tensor,
    or a later call with a parameter that requires grad could not use it."""
    p = problem(2, 16, 9, 9, 32, 3, 3, (1, 1), (2, 2))
    planned = _C.plan_dgrad_phases(p.planner_geometry(), "bfloat16", True, H100, True)
    phased = PhasedDgrad(planned, p, _TorchFprop)
    w = torch.randn(p.K, p.C, 3, 3, dtype=torch.float64).contiguous(memory_format=CL)
    dy = torch.randn(p.N, p.K, p.P, p.Q, dtype=torch.float64).contiguous(memory_format=CL)
    with torch.inference_mode():
        phased.call(dy, w, {})
    weight = torch.nn.Parameter(w.clone())
    dx = phased.call(dy, weight, {})
    ref = torch.nn.grad.conv2d_input((p.N, p.C, p.H, p.W), w, dy, stride=(2, 2), padding=(1, 1))
    assert torch.allclose(dx, ref, atol=1e-9)
