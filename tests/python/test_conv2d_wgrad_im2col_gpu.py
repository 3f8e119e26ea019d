"""The wgrad of few channels on a Hopper GPU: tilefuse.Conv2d("wgrad") runs the planner's im2col + Hopper GEMM
for C = 3 (ResNet's stem and odd shapes), and for x whose last channels the caller says are zeros; the torch op
and a tilefuse.nn.Conv2d stem take it in a backward. Each gradient against float64, within a small multiple
of torch's own error in bf16, written over NaN."""
import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available() or torch.cuda.get_device_capability() != (9, 0):
    pytest.skip("needs an sm_90 GPU (H100 / H200) for torch", allow_module_level=True)

import tilefuse  # noqa: E402
from tilefuse.conv2d_im2col import Im2colWgrad, Im2colWgradPlan  # noqa: E402
from torch_checks import check, poison  # noqa: E402

CL = torch.channels_last

# (N, C, H, W, K, R, S, padding, stride, dilation)
CASES = [
    (4, 3, 224, 224, 64, 7, 7, (3, 3), (2, 2), (1, 1)),  # ResNet-50's stem
    (3, 3, 37, 29, 24, 3, 5, (1, 2), (1, 2), (1, 1)),     # odd sizes: pixels and columns padded
    (2, 1, 31, 33, 16, 5, 3, (2, 0), (2, 1), (2, 1)),     # one channel, dilated
    (5, 6, 19, 23, 40, 3, 3, (1, 1), (1, 1), (1, 1)),
]


def operands(case, seed=0):
    N, C, H, W, K, R, S, pad, stride, dil = case
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(N, C, H, W, device="cuda", generator=g).to(torch.bfloat16).contiguous(memory_format=CL)
    P = (H + 2 * pad[0] - dil[0] * (R - 1) - 1) // stride[0] + 1
    Q = (W + 2 * pad[1] - dil[1] * (S - 1) - 1) // stride[1] + 1
    dy = torch.randn(N, K, P, Q, device="cuda", generator=g).to(torch.bfloat16).contiguous(memory_format=CL)
    return x, dy


def reference(x, dy, case):
    _, C, _, _, K, R, S, pad, stride, dil = case
    grad = torch.nn.grad.conv2d_weight
    ref = grad(x.double(), (K, C, R, S), dy.double(), stride=stride, padding=pad, dilation=dil)
    same = grad(x, (K, C, R, S), dy, stride=stride, padding=pad, dilation=dil)
    return ref, same


@pytest.mark.parametrize("case", CASES, ids=lambda c: "x".join(map(str, c[:7])))
def test_wgrad_by_im2col_matches_torch(case):
    x, dy = operands(case)
    conv = tilefuse.Conv2d("wgrad", padding=case[7], stride=case[8], dilation=case[9], kernel_size=case[5:7])
    plan = conv.plan(dy, x)
    assert isinstance(plan, Im2colWgradPlan), plan.describe()
    assert "by im2col" in plan.describe() and plan.family in ("sm90", "skinny")
    poison()
    dw = conv.run(dy, x)
    assert dw.is_contiguous(memory_format=CL)
    check(dw, *reference(x, dy, case), "wgrad by im2col")
    poison()  # the warm call's output and operands over NaN too (the first call's buffers are free again)
    check(conv.run(dy, x), *reference(x, dy, case), "the warm call")  # repeated from the warm table


def test_zero_channels_gather_the_others_only():
    case = CASES[0]
    x3, dy = operands(case, seed=1)
    x8 = torch.nn.functional.pad(x3, (0, 0, 0, 0, 0, 5)).contiguous(memory_format=CL)
    conv = tilefuse.Conv2d("wgrad", padding=case[7], stride=case[8], kernel_size=case[5:7])
    poison()
    dw = conv.run(dy, x8, zero_channels=5)
    ref, same = reference(x3, dy, case)
    check(dw[:, :3], ref, same, "wgrad of the real channels")
    assert (dw[:, 3:] == 0).all()
    assert any(isinstance(w, Im2colWgrad) for w in conv._warm.values())
    # the same signature without the promise is another call (the direct kernel), not the warm im2col one
    poison()
    check(conv.run(dy, x8)[:, :3], ref, same, "wgrad without zero_channels")
    with pytest.raises(tilefuse.TensorArgumentError, match="zero_channels"):
        conv.run(dy, x8, zero_channels=8)
    with pytest.raises(tilefuse.TensorArgumentError, match="zero_channels"):
        conv.run(dy, x8, zero_channels=5.0)  # refused before the warm key (which 5 made) is looked up


def test_the_stem_backward_takes_it():
    case = CASES[0]
    x, dy = operands(case, seed=2)
    torch_conv = torch.nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False).cuda().to(torch.bfloat16)
    torch_conv = torch_conv.to(memory_format=CL)
    ours = tilefuse.nn.Conv2d.from_torch(torch_conv)
    y = ours(x)
    y.backward(dy)
    ref, same = reference(x, dy, case)
    check(ours.weight.grad, ref, same, "the stem's weight gradient")
    from tilefuse import conv_ops

    wgrads = [c for key, c in conv_ops._CONVS.items() if key[0] == "wgrad" and key[-1] == (7, 7)]
    assert any(isinstance(w, Im2colWgrad) for c in wgrads for w in c._warm.values()), "the stem's wgrad ran directly"
