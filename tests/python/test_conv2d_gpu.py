"""tilefuse.Conv2d on a GPU against PyTorch: fprop, dgrad and wgrad on edge-case shapes (C = 3, 1x1 and 7x7
filters, strides, dilation, padding, channels that are not multiples of 8), both kernels (Hopper fprop and
the sm80 path), fused epilogues (bias + ReLU + residual, a coordinate-dependent activation, a per-channel
amax). Every output is compared element by element with a float64 reference; our error must stay within a
small multiple of PyTorch's own error in the same dtype. Outputs land in memory filled with NaN just before."""
import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] < 8:
    pytest.skip("needs an sm_80 or newer GPU for torch", allow_module_level=True)

import torch.nn.functional as F  # noqa: E402

import tilefuse  # noqa: E402
from torch_checks import DLPackOnly, poison  # noqa: E402
from torch_checks import check as check_close  # noqa: E402
from tilefuse.epilogue import amax, relu, row, sigmoid, tanh, where  # noqa: E402
from tilefuse.errors import TensorArgumentError  # noqa: E402

HOPPER = torch.cuda.get_device_capability()[0] == 9
CL = torch.channels_last
# (N, C, H, W, K, R, S, padding, stride, dilation)
FPROP = [
    (2, 64, 14, 14, 64, 3, 3, 1, 1, 1),
    (1, 3, 17, 19, 24, 7, 7, 3, 2, 1),     # first layer: C = 3 (element-wise path)
    (4, 32, 9, 11, 40, 3, 3, 2, 1, 2),     # dilation 2
    (2, 128, 8, 8, 256, 1, 1, 0, 1, 1),    # 1x1
    (3, 16, 13, 7, 8, 5, 5, 2, 2, 1),      # asymmetric, stride 2
    (1, 64, 7, 7, 72, 3, 3, 0, 1, 1),      # K not a tile multiple, output 5x5
    (2, 20, 6, 6, 12, 3, 3, 1, 1, 1),      # C, K multiples of 4 only
]
GRAD = [
    (2, 64, 14, 14, 64, 3, 3, 1, 1, 1),
    (2, 16, 15, 15, 24, 3, 3, 1, 2, 1),    # strided
    (1, 5, 9, 9, 7, 3, 3, 1, 1, 1),        # unaligned C and K
    (2, 32, 8, 8, 48, 1, 1, 0, 2, 1),      # strided 1x1
    (3, 8, 10, 12, 16, 3, 3, 2, 1, 2),     # dilation 2
]


def tensors(case, dtype, seed):
    N, C, H, W, K, R, S, pad, stride, dil = case
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(N, C, H, W, device="cuda", generator=g).to(dtype).contiguous(memory_format=CL)
    w = torch.randn(K, C, R, S, device="cuda", generator=g).to(dtype).contiguous(memory_format=CL)
    return x, w, dict(padding=pad, stride=stride, dilation=dil)


def check(ours, reference64, torch_same_dtype, what):
    assert ours.is_contiguous(memory_format=CL), f"{what}: the output is not channels-last"
    check_close(ours, reference64, torch_same_dtype, what)


KERNELS = ["auto", "sm80"] + (["sm90"] if HOPPER else [])


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("case", FPROP)
def test_fprop(case, kernel):
    x, w, geo = tensors(case, torch.bfloat16, seed=sum(case))
    aligned = case[1] % 8 == 0 and case[4] % 8 == 0
    conv = tilefuse.Conv2d("fprop", kernel=kernel, **geo)
    if kernel == "sm90" and not aligned:
        with pytest.raises(TensorArgumentError, match="multiples of 8"):
            conv.run(x, w)
        return
    poison()
    y = conv.run(x, w)
    family = conv.plan(x, w).family
    assert family == ("sm90" if kernel == "sm90" or (kernel == "auto" and HOPPER and aligned) else "sm80")
    check(y, F.conv2d(x.double(), w.double(), **geo), F.conv2d(x, w, **geo), f"fprop {case} {kernel}")


@pytest.mark.parametrize("case", GRAD)
def test_dgrad(case):
    x, w, geo = tensors(case, torch.bfloat16, seed=3 * sum(case))
    dy = torch.randn_like(F.conv2d(x, w, **geo)).contiguous(memory_format=CL)
    poison()
    conv = tilefuse.Conv2d("dgrad", **geo)
    dx = conv.run(dy, w, input_size=tuple(x.shape))
    ref = torch.nn.grad.conv2d_input(x.shape, w.double(), dy.double(), **geo)
    same = torch.nn.grad.conv2d_input(x.shape, w, dy, **geo)
    check(dx, ref, same, f"dgrad {case}")
    # the torch ops find the call by the size they pass, whether or not it is the one dgrad infers
    assert conv.warm_call(dy, w, {}, tuple(x.shape)) is not None
    if conv._implied_input_size(dy, w) == tuple(x.shape):  # then it is the call without input_size too
        assert conv.warm_call(dy, w, {}, None) is conv.warm_call(dy, w, {}, tuple(x.shape))
    poison()
    check(conv.run(dy, w, input_size=tuple(x.shape)), ref, same, f"dgrad {case}, warm")


@pytest.mark.parametrize("case", GRAD)
def test_wgrad(case):
    x, w, geo = tensors(case, torch.bfloat16, seed=5 * sum(case))
    dy = torch.randn_like(F.conv2d(x, w, **geo)).contiguous(memory_format=CL)
    poison()
    dw = tilefuse.Conv2d("wgrad", kernel_size=tuple(w.shape[2:]), **geo).run(dy, x)
    ref = torch.nn.grad.conv2d_weight(x.double(), w.shape, dy.double(), **geo)
    same = torch.nn.grad.conv2d_weight(x, w.shape, dy, **geo)
    check(dw, ref, same, f"wgrad {case}")


def test_dgrad_infers_the_input_size():
    x, w, geo = tensors((2, 16, 9, 9, 24, 3, 3, 1, 1, 1), torch.float16, seed=11)
    dy = torch.randn_like(F.conv2d(x, w, **geo)).contiguous(memory_format=CL)
    dx = tilefuse.Conv2d("dgrad", **geo).run(dy, w)
    assert dx.shape == x.shape


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_bias_relu_residual(dtype, kernel):
    case = (2, 64, 12, 10, 96, 3, 3, 1, 1, 1)
    x, w, geo = tensors(case, dtype, seed=21)
    K = case[4]
    bias = torch.randn(K, device="cuda").to(dtype)
    residual = torch.randn_like(F.conv2d(x, w, **geo)).contiguous(memory_format=CL)

    def epi(acc, bias, residual):
        return relu(acc + bias) + residual

    poison()
    y = tilefuse.Conv2d(padding=1, epilogue=epi, kernel=kernel).run(x, w, bias=bias, residual=residual)
    b4 = bias.view(1, K, 1, 1)
    ref = torch.relu(F.conv2d(x.double(), w.double(), **geo) + b4.double()) + residual.double()
    same = torch.relu(F.conv2d(x, w, **geo) + b4) + residual
    check(y, ref, same, f"bias relu residual {dtype} {kernel}")


def test_region_activation_and_channel_amax():
    case = (2, 32, 10, 10, 48, 3, 3, 1, 1, 1)
    x, w, geo = tensors(case, torch.bfloat16, seed=33)
    r0 = 77  # output pixels (rows of the N*P*Q x K matrix) below r0 take sigmoid

    def epi(acc, r0):
        y = where(row() < r0, sigmoid(acc), tanh(acc))
        return {"D": y, "amax": amax(y, dim=0)}

    poison()
    out = tilefuse.Conv2d(padding=1, epilogue=epi).run(x, w, r0=r0)
    acc64 = F.conv2d(x.double(), w.double(), **geo)
    rows = acc64.permute(0, 2, 3, 1).reshape(-1, case[4])
    ref_rows = torch.where(torch.arange(rows.shape[0], device="cuda")[:, None] < r0, torch.sigmoid(rows),
                           torch.tanh(rows))
    ref = ref_rows.reshape(acc64.shape[0], acc64.shape[2], acc64.shape[3], -1).permute(0, 3, 1, 2)
    same_acc = F.conv2d(x, w, **geo).permute(0, 2, 3, 1).reshape(-1, case[4])
    same_rows = torch.where(torch.arange(rows.shape[0], device="cuda")[:, None] < r0, torch.sigmoid(same_acc),
                            torch.tanh(same_acc))
    same = same_rows.reshape(ref.shape[0], ref.shape[2], ref.shape[3], -1).permute(0, 3, 1, 2)
    check(out["D"], ref, same, "where(row() < r0, sigmoid, tanh)")
    amax_ref = out["D"].double().permute(0, 2, 3, 1).reshape(-1, case[4]).abs().amax(dim=0)
    assert out["amax"].shape == (case[4],)
    assert torch.allclose(out["amax"].double(), amax_ref, rtol=1e-2, atol=1e-3)


def test_refusals_name_the_problem():
    x, w, geo = tensors((2, 16, 8, 8, 16, 3, 3, 1, 1, 1), torch.bfloat16, seed=1)
    conv = tilefuse.Conv2d(padding=1)
    with pytest.raises(TensorArgumentError, match="channels_last"):
        conv.run(x.contiguous(), w)
    with pytest.raises(TensorArgumentError, match="same dtype"):
        conv.run(x, w.half())
    with pytest.raises(TensorArgumentError, match="channels"):
        conv.run(x, w[:, :8].contiguous(memory_format=CL))
    with pytest.raises(TensorArgumentError, match="kernel_size"):
        tilefuse.Conv2d("wgrad", padding=1).run(torch.empty_like(x), x)
    with pytest.raises(TensorArgumentError, match="output's shape"):
        tilefuse.Conv2d(padding=1, epilogue=lambda acc, r: acc + r).run(x, w, r=x[:, :, :4].contiguous(memory_format=CL))


def test_convert_layout_and_plan_reuse():
    x, w, geo = tensors((2, 16, 8, 8, 32, 3, 3, 1, 1, 1), torch.bfloat16, seed=2)
    conv = tilefuse.Conv2d(padding=1, layout="convert")
    poison()
    y1 = conv.run(x.contiguous(), w.contiguous())
    check(y1, F.conv2d(x.double(), w.double(), **geo), F.conv2d(x, w, **geo), "layout='convert' on NCHW operands")
    y2 = conv.run(x, w)
    assert len(conv._operations) == 1, "the second call re-planned"
    assert torch.equal(y1, y2)
    text = conv.plan(x, w).describe()
    assert "conv2d" in text and "tile" in text


def test_cuda_graph_capture():
    x, w, geo = tensors((2, 32, 8, 8, 64, 3, 3, 1, 1, 1), torch.bfloat16, seed=4)
    bias = torch.randn(64, device="cuda").to(torch.bfloat16)
    conv = tilefuse.Conv2d(padding=1, epilogue=lambda acc, bias: relu(acc + bias))
    expected = conv.run(x, w, bias=bias)
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        conv.run(x, w, bias=bias)  # warm: plans and loads outside the capture
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            out = conv.run(x, w, bias=bias)
    x.copy_(-x)  # the replay must read x's contents now, not the values the eager call saw
    graph.replay()
    torch.cuda.synchronize()
    b4 = bias.view(1, -1, 1, 1)
    check(out, torch.relu(F.conv2d(x.double(), w.double(), **geo) + b4.double()),
          torch.relu(F.conv2d(x, w, **geo) + b4), "CUDA graph replay on a new x")
    x.copy_(-x)
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, expected)  # the same inputs again: the eager call's bits


def test_wgrad_splits_its_long_reduction():
    case = (8, 64, 28, 28, 64, 3, 3, 1, 1, 1)  # N*P*Q = 6272 summed into a 64 x 576 output: 9 tiles
    x, w, geo = tensors(case, torch.bfloat16, seed=41)
    dy = torch.randn_like(F.conv2d(x, w, **geo)).contiguous(memory_format=CL)
    conv = tilefuse.Conv2d("wgrad", kernel_size=(3, 3), **geo)
    assert conv.plan(dy, x).split_k > 1 and "split-K" in conv.plan(dy, x).describe()
    poison()
    dw = conv.run(dy, x)
    check(dw, torch.nn.grad.conv2d_weight(x.double(), w.shape, dy.double(), **geo),
          torch.nn.grad.conv2d_weight(x, w.shape, dy, **geo), "wgrad split-K")


def test_forced_split_k_applies_the_epilogue_once():
    case = (2, 32, 10, 10, 48, 3, 3, 1, 1, 1)
    x, w, geo = tensors(case, torch.bfloat16, seed=43)
    bias = torch.randn(48, device="cuda").to(torch.bfloat16)

    def epi(acc, bias):
        y = relu(acc + bias)
        return {"D": y, "amax": amax(y, dim=0)}

    poison()
    out = tilefuse.Conv2d(padding=1, epilogue=epi, kernel="sm80", split_k=3).run(x, w, bias=bias)
    ref = torch.relu(F.conv2d(x.double(), w.double(), **geo) + bias.double().view(1, -1, 1, 1))
    same = torch.relu(F.conv2d(x, w, **geo) + bias.view(1, -1, 1, 1))
    check(out["D"], ref, same, "fprop split-K 3 with bias, relu, amax")
    amax_ref = out["D"].double().permute(0, 2, 3, 1).reshape(-1, 48).abs().amax(dim=0)
    assert torch.allclose(out["amax"].double(), amax_ref, rtol=1e-2, atol=1e-3)


@pytest.mark.parametrize("kernel", KERNELS)
def test_warm_calls_patch_new_pointers_and_scalars(kernel):
    """The second call with the same signature takes the warm path (no checks, no packing of static fields):
    new tensors and a new scalar must still reach the kernel."""
    case = (2, 32, 9, 9, 40, 3, 3, 1, 1, 1)
    conv = tilefuse.Conv2d(padding=1, kernel=kernel, epilogue=lambda acc, bias, residual, alpha:
                           relu(alpha * acc + bias) + residual)
    for seed, alpha in ((1, 0.5), (2, -1.5), (3, 2.0)):
        x, w, geo = tensors(case, torch.bfloat16, seed=seed)
        bias = torch.randn(40, device="cuda").to(torch.bfloat16)
        residual = torch.randn_like(F.conv2d(x, w, **geo)).contiguous(memory_format=CL)
        poison()
        y = conv.run(x, w, bias=bias, residual=residual, alpha=alpha)
        b4 = bias.view(1, -1, 1, 1)
        ref = torch.relu(alpha * F.conv2d(x.double(), w.double(), **geo) + b4.double()) + residual.double()
        same = torch.relu(alpha * F.conv2d(x, w, **geo) + b4) + residual
        check(y, ref, same, f"warm call {seed} ({kernel})")
    assert len(conv._warm) == 1 and len(conv._operations) == 1


def test_dlpack_operands():
    x, w, geo = tensors((2, 16, 8, 8, 32, 3, 3, 1, 1, 1), torch.bfloat16, seed=8)
    y = tilefuse.Conv2d(padding=1).run(DLPackOnly(x), DLPackOnly(w))
    check(y, F.conv2d(x.double(), w.double(), **geo), F.conv2d(x, w, **geo), "DLPack operands")


@pytest.mark.parametrize("mode", ["fprop", "dgrad", "wgrad"])
def test_views_of_channels_last_tensors_run(mode):
    """A crop and a batch stride of channels-last tensors run, as torch's conv runs them (copied packed)."""
    big_x, w, geo = tensors((4, 64, 18, 18, 64, 3, 3, 1, 1, 1), torch.bfloat16, seed=7)
    x = big_x[::2, :, 1:17, 1:17]  # not packed: every other image, a 16 x 16 crop
    out = F.conv2d(x, w, **geo)
    dy = torch.randn(out.shape[0] * 2, *out.shape[1:], device="cuda").to(torch.bfloat16)
    dy = dy.contiguous(memory_format=CL)[::2]
    poison()
    if mode == "fprop":
        got = tilefuse.Conv2d("fprop", **geo).run(x, w)
        ref, same = F.conv2d(x.double(), w.double(), **geo), out
    elif mode == "dgrad":
        got = tilefuse.Conv2d("dgrad", **geo).run(dy, w, input_size=tuple(x.shape))
        ref = torch.nn.grad.conv2d_input(x.shape, w.double(), dy.double(), **geo)
        same = torch.nn.grad.conv2d_input(x.shape, w, dy, **geo)
    else:
        got = tilefuse.Conv2d("wgrad", kernel_size=(3, 3), **geo).run(dy, x)
        ref = torch.nn.grad.conv2d_weight(x.double(), w.shape, dy.double(), **geo)
        same = torch.nn.grad.conv2d_weight(x, w.shape, dy, **geo)
    check(got, ref, same, f"{mode} on views")


def test_an_empty_batch_returns_torchs_results():
    """N = 0: fprop and dgrad give empty outputs (a column reduction at its identity), wgrad the epilogue on the
    sum over no samples (zeros), as torch's conv; plan() says there is none."""
    CL = torch.channels_last
    x = torch.empty(0, 16, 9, 9, device="cuda", dtype=torch.bfloat16).contiguous(memory_format=CL)
    w = torch.randn(32, 16, 3, 3, device="cuda").to(torch.bfloat16).contiguous(memory_format=CL)
    dy = torch.empty(0, 32, 9, 9, device="cuda", dtype=torch.bfloat16).contiguous(memory_format=CL)
    y = tilefuse.Conv2d("fprop", padding=1).run(x, w)
    assert y.shape == F.conv2d(x, w, padding=1).shape and y.is_contiguous(memory_format=CL)

    def fused(acc, bias, residual):
        out = relu(acc + bias + residual)
        return {"D": out, "colmax": amax(out, 0)}

    bias = torch.randn(32, device="cuda").to(torch.bfloat16)
    got = tilefuse.Conv2d("fprop", padding=1, epilogue=fused).run(x, w, bias=bias, residual=dy)
    assert got["D"].shape == (0, 32, 9, 9) and torch.equal(got["colmax"], torch.zeros(32, device="cuda"))
    dx = tilefuse.Conv2d("dgrad", padding=1).run(dy, w, input_size=(0, 16, 9, 9))
    assert dx.shape == (0, 16, 9, 9)
    dw = tilefuse.Conv2d("wgrad", padding=1, kernel_size=3).run(dy, x)
    assert dw.shape == w.shape and not dw.any()
    shifted = tilefuse.Conv2d("wgrad", padding=1, kernel_size=3, epilogue=lambda acc: acc + 1.0).run(dy, x)
    assert torch.equal(shifted, torch.ones_like(shifted))
    with pytest.raises(TensorArgumentError, match="no plan"):
        tilefuse.Conv2d("fprop", padding=1).plan(x, w)
