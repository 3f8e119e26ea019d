"""tilefuse.Conv2d on a Hopper GPU runs the Hopper kernel the C++ planner picks, in every mode: fprop by TMA
im2col, by the tiled map of a 1x1 problem and by the gathering source, with the residual and D by TMA; dgrad;
wgrad without a split, with its splits summed in the kernel and by a pass. Each output is compared with a
float64 reference within a small multiple of PyTorch's own error in the same dtype, written over NaN."""
import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available() or torch.cuda.get_device_capability() != (9, 0):
    pytest.skip("needs an sm_90 GPU (H100 / H200) for torch", allow_module_level=True)

import torch.nn.functional as F  # noqa: E402

import tilefuse  # noqa: E402
from tilefuse.epilogue import relu  # noqa: E402
from torch_checks import check, poison  # noqa: E402

CL = torch.channels_last


def tensors(case, dtype=torch.bfloat16, seed=0):
    N, C, H, W, K, R, pad, stride = case
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(N, C, H, W, device="cuda", generator=g).to(dtype).contiguous(memory_format=CL)
    w = torch.randn(K, C, R, R, device="cuda", generator=g).to(dtype).contiguous(memory_format=CL)
    return x, w, dict(padding=pad, stride=stride)


# (N, C, H, W, K, R, padding, stride): C and K multiples of 64, where the Hopper kernels take every mode.
FPROP = [
    (2, 64, 14, 14, 64, 3, 1, 1),      # im2col, a small grid (ping-pong tiles)
    (8, 64, 28, 28, 256, 1, 0, 1),     # 1x1: the tiled map
    (4, 128, 15, 17, 192, 3, 1, 2),    # strided, odd sizes
    (16, 64, 56, 56, 256, 3, 1, 1),    # large: the 128x256 cooperative tile
]
DGRAD = [(2, 64, 14, 14, 64, 3, 1, 1), (8, 256, 14, 14, 64, 1, 0, 1), (4, 128, 9, 11, 192, 3, 1, 1)]
WGRAD = [
    (2, 64, 7, 7, 128, 3, 1, 1),       # little K: no split
    (8, 64, 56, 56, 64, 1, 0, 1),      # a 64 x 64 output over 25088 pixels: many splits, summed in the kernel
    (8, 128, 28, 28, 128, 3, 1, 1),    # a few splits (7), summed by a pass
    (4, 128, 15, 17, 64, 3, 1, 2),     # strided
]


def residual_block(acc, bias, residual):
    return relu(acc + bias + residual)


@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("case", FPROP)
def test_fprop_runs_the_planned_hopper_kernel(case, fused):
    x, w, geo = tensors(case, seed=sum(case))
    K = case[4]
    conv = tilefuse.Conv2d("fprop", epilogue=residual_block if fused else None, **geo)
    args = {}
    if fused:
        args = dict(bias=torch.randn(K, device="cuda").to(torch.bfloat16),
                    residual=torch.randn_like(F.conv2d(x, w, **geo)).contiguous(memory_format=CL))
    plan = conv.plan(x, w, **args)
    assert plan.family == "sm90", plan.describe()
    assert ("tiled TMA" in plan.describe()) == (case[5] == 1 and case[7] == 1)
    for _ in range(2):  # the first call, then the warm path
        poison()
        y = conv.run(x, w, **args)
        if fused:
            b4 = args["bias"].view(1, K, 1, 1)
            ref = torch.relu(F.conv2d(x.double(), w.double(), **geo) + b4.double() + args["residual"].double())
            same = torch.relu(F.conv2d(x, w, **geo) + b4 + args["residual"])
        else:
            ref, same = F.conv2d(x.double(), w.double(), **geo), F.conv2d(x, w, **geo)
        check(y, ref, same, f"fprop {case} fused={fused}: {plan.describe()}")


def test_fused_fprop_with_a_residual_tma_cannot_read_runs_sm80_and_says_why():
    """The C++ planner takes the residual's alignment as a fact (ConvPlanInput::residual_unaligned): a residual
    2 bytes off 16 sends the fused fprop to the sm80 kernel, with the reason in describe(); an aligned one stays
    on the Hopper kernel."""
    case = FPROP[0]
    x, w, geo = tensors(case, seed=11)
    K = case[4]
    conv = tilefuse.Conv2d("fprop", epilogue=residual_block, **geo)
    bias = torch.randn(K, device="cuda").to(torch.bfloat16)
    shape = F.conv2d(x, w, **geo).shape
    aligned = torch.randn(shape, device="cuda").to(torch.bfloat16).contiguous(memory_format=CL)
    storage = torch.empty(aligned.numel() + 8, device="cuda", dtype=torch.bfloat16)
    shifted = storage.as_strided(shape, aligned.stride(), 1)
    shifted.copy_(aligned)
    assert shifted.data_ptr() % 16 == 2
    assert conv.plan(x, w, bias=bias, residual=aligned).family == "sm90"
    plan = conv.plan(x, w, bias=bias, residual=shifted)
    assert plan.family == "sm80", plan.describe()
    assert "16-byte-aligned base" in plan.describe(), plan.describe()
    with pytest.raises(tilefuse.TensorArgumentError, match="16-byte-aligned base"):
        tilefuse.Conv2d("fprop", epilogue=residual_block, kernel="sm90", **geo).plan(x, w, bias=bias, residual=shifted)
    poison()
    y = conv.run(x, w, bias=bias, residual=shifted)
    b4 = bias.view(1, K, 1, 1)
    ref = torch.relu(F.conv2d(x.double(), w.double(), **geo) + b4.double() + aligned.double())
    same = torch.relu(F.conv2d(x, w, **geo) + b4 + aligned)
    check(y, ref, same, f"fprop {case}, residual 2 bytes off: {plan.describe()}")


@pytest.mark.parametrize("case", DGRAD)
def test_dgrad_runs_the_hopper_kernel(case):
    x, w, geo = tensors(case, seed=3 * sum(case))
    dy = torch.randn_like(F.conv2d(x, w, **geo)).contiguous(memory_format=CL)
    conv = tilefuse.Conv2d("dgrad", **geo)
    plan = conv.plan(dy, w, input_size=tuple(x.shape))
    assert plan.family == "sm90", plan.describe()
    for _ in range(2):
        poison()
        dx = conv.run(dy, w, input_size=tuple(x.shape))
        check(dx, torch.nn.grad.conv2d_input(x.shape, w.double(), dy.double(), **geo),
              torch.nn.grad.conv2d_input(x.shape, w, dy, **geo), f"dgrad {case}: {plan.describe()}")


# Strided dgrads, run by phases (stride-1 Hopper fprops of dy, each stored in place in dx): ResNet-50's 3x3 and 1x1
# stride-2 layers, odd sizes that are not multiples of the stride, stride 3, a 1x1 reaching a quarter of dx.
DGRAD_STRIDED = [(4, 128, 56, 56, 128, 3, 1, 2), (4, 256, 56, 56, 512, 1, 0, 2), (2, 64, 15, 17, 128, 3, 1, 2),
                 (2, 64, 16, 13, 64, 5, 2, 3), (3, 64, 9, 11, 192, 3, 0, 2)]


@pytest.mark.parametrize("case", DGRAD_STRIDED)
def test_strided_dgrad_runs_by_hopper_phases_exactly(case):
    """Integer-valued dy and w: every phase sums exactly in fp32, so dx equals the float64 dgrad rounded once."""
    N, C, H, W, K, R, pad, stride = case
    g = torch.Generator(device="cuda").manual_seed(sum(case))
    geo = dict(padding=pad, stride=stride)
    x = torch.empty(N, C, H, W, device="cuda")
    w = torch.randint(-2, 3, (K, C, R, R), device="cuda", generator=g).to(torch.bfloat16).contiguous(memory_format=CL)
    dy_shape = F.conv2d(x, w.float(), **geo).shape
    dy = torch.randint(-2, 3, dy_shape, device="cuda", generator=g).to(torch.bfloat16).contiguous(memory_format=CL)
    conv = tilefuse.Conv2d("dgrad", **geo)
    plan = conv.plan(dy, w, input_size=tuple(x.shape))
    assert "by phases" in plan.describe() and plan.family == "sm90", plan.describe()
    assert "sm80" not in plan.describe(), plan.describe()
    assert plan.in_place, plan.describe()  # each phase's kernel stores into dx through its row map
    ref = torch.nn.grad.conv2d_input(x.shape, w.double(), dy.double(), **geo).to(torch.bfloat16)
    for _ in range(2):  # the first call and the warm one
        poison()
        dx = conv.run(dy, w, input_size=tuple(x.shape))
        assert dx.is_contiguous(memory_format=CL) and dx.shape == x.shape
        assert torch.equal(dx, ref), f"dgrad {case}: max diff {(dx.double() - ref.double()).abs().max()}"


@pytest.mark.parametrize("case", WGRAD)
def test_wgrad_runs_the_hopper_kernel_and_its_splits(case):
    x, w, geo = tensors(case, seed=5 * sum(case))
    dy = torch.randn_like(F.conv2d(x, w, **geo)).contiguous(memory_format=CL)
    bias = torch.randn(w[0].numel(), device="cuda").to(torch.bfloat16)
    conv = tilefuse.Conv2d("wgrad", kernel_size=tuple(w.shape[2:]), epilogue=lambda acc, bias: acc + bias, **geo)
    plan = conv.plan(dy, x, bias=bias)
    assert plan.family == "sm90", plan.describe()
    for _ in range(2):
        poison()
        dw = conv.run(dy, x, bias=bias)
        # the bias over the (K, R*S*C) matrix: one value per (r, s, c), broadcast over the filters
        b = bias.view(1, *w.shape[2:], w.shape[1]).permute(0, 3, 1, 2)
        ref = torch.nn.grad.conv2d_weight(x.double(), w.shape, dy.double(), **geo) + b.double()
        same = torch.nn.grad.conv2d_weight(x, w.shape, dy, **geo) + b
        check(dw, ref, same, f"wgrad {case}: {plan.describe()}")


def test_wgrad_cases_cover_every_split():
    splits = set()
    for case in WGRAD:
        x, w, geo = tensors(case)
        dy = torch.empty_like(F.conv2d(x, w, **geo)).contiguous(memory_format=CL)
        splits.add(tilefuse.Conv2d("wgrad", kernel_size=tuple(w.shape[2:]), **geo).plan(dy, x).planner["sm90_split"])
    assert splits == {"none", "kernel", "pass"}


def test_first_backward_of_a_signature_runs_on_a_thread_without_a_current_context():
    """A tilefuse.nn.Conv2d whose backward is the first dgrad and wgrad of their signatures: the autograd
    engine's thread has made no CUDA runtime call, so no context is current there, and the driver's tensor-map
    encoders refused to run (CUDA_ERROR_INVALID_CONTEXT; the host-cost bench's training rows met it). The
    adapter now makes the device's context current and encodes again."""
    import tilefuse.nn

    x, w, geo = tensors((3, 64, 13, 11, 128, 3, 1, 1), seed=17)  # a geometry no other test runs
    module = tilefuse.nn.Conv2d(64, 128, 3, padding=1, bias=False).to("cuda", torch.bfloat16)
    module = module.to(memory_format=CL)
    with torch.no_grad():
        module.weight.copy_(w)
    xs = x.detach().clone().requires_grad_()
    y = module(xs)
    grad = torch.randn_like(y)
    y.backward(grad)
    xt, wt = x.detach().double().requires_grad_(), w.detach().double().requires_grad_()
    F.conv2d(xt, wt, **geo).backward(grad.double())
    bf = x.detach().requires_grad_(), w.detach().requires_grad_()
    F.conv2d(*bf, **geo).backward(grad)
    check(xs.grad, xt.grad, bf[0].grad, "dgrad from the autograd thread")
    check(module.weight.grad, wt.grad, bf[1].grad, "wgrad from the autograd thread")
