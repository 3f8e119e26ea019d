"""torch.ops.tilefuse.conv2d / tilefuse.nn.Conv2d on a GPU against PyTorch: the fused conv (activations, bias,
residual), its gradients through the dgrad / wgrad kernels (and the recomputed derivative epilogue), a first
layer with C = 3, channels-last outputs, torch.compile(fullgraph=True) and the module as a drop-in for
torch.nn.Conv2d. Each result is compared element by element with a float64 reference; our error must stay
within a small multiple of PyTorch's own error in the same dtype."""
import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] < 8:
    pytest.skip("needs an sm_80 or newer GPU for torch", allow_module_level=True)

import tilefuse  # noqa: E402
from torch_checks import check as check_close, has_triton, poison  # noqa: E402
import tilefuse.nn  # noqa: E402
import tilefuse.ops as ops  # noqa: E402

F = torch.nn.functional
CL = torch.channels_last
ACT = {"none": lambda z: z, "relu": torch.relu, "gelu": F.gelu, "silu": F.silu,
       "gelu_tanh": lambda z: F.gelu(z, approximate="tanh")}
# (N, C, H, W, K, R, S, stride, padding, dilation)
CASES = [(2, 32, 10, 10, 48, 3, 3, 1, 1, 1), (2, 3, 15, 13, 16, 7, 7, 2, 3, 1), (3, 16, 9, 9, 24, 1, 1, 2, 0, 1),
         (2, 24, 8, 8, 40, 3, 3, 1, 2, 2)]


def check(ours, reference64, torch_same_dtype, what, factor=2.0, slack=2e-3):
    check_close(ours, reference64, torch_same_dtype, what, factor, slack)


def make(case, dtype, bias, residual, seed):
    N, C, H, W, K, R, S, stride, pad, dil = case
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(N, C, H, W, device="cuda", generator=g).to(dtype).contiguous(memory_format=CL)
    w = (torch.randn(K, C, R, S, device="cuda", generator=g) * (C * R * S) ** -0.5).to(dtype)
    w = w.contiguous(memory_format=CL)
    b = torch.randn(K, device="cuda", generator=g).to(dtype) if bias else None
    geo = dict(stride=stride, padding=pad, dilation=dil)
    out = F.conv2d(x, w, **geo)
    r = torch.randn(out.shape, device="cuda", generator=g).to(dtype).contiguous(memory_format=CL) if residual else None
    return x, w, b, r, geo


def torch_conv(x, w, b, r, geo, activation):
    y = ACT[activation](F.conv2d(x, w, b, **geo))
    return y + r if r is not None else y


def as64(*tensors):
    return [t.double() if t is not None else None for t in tensors]


@pytest.mark.parametrize("activation", ["none", "relu", "gelu", "silu"])
@pytest.mark.parametrize("bias,residual", [(True, True), (True, False), (False, False)])
@pytest.mark.parametrize("case", CASES)
def test_forward_and_backward(case, activation, bias, residual):
    x, w, b, r, geo = make(case, torch.bfloat16, bias, residual, seed=sum(case))
    leaves = [t.detach().requires_grad_() for t in (x, w, b, r) if t is not None]
    ours_in = iter(leaves)
    xo, wo = next(ours_in), next(ours_in)
    bo = next(ours_in) if b is not None else None
    ro = next(ours_in) if r is not None else None
    poison()  # an element the kernel leaves unwritten reads NaN
    y = ops.conv2d(xo, wo, bo, ro, activation=activation, **geo)
    assert y.is_contiguous(memory_format=CL) and y.dtype == torch.bfloat16
    what = f"{case} {activation} bias={bias} residual={residual}"
    check(y, torch_conv(*as64(x, w, b, r), geo, activation), torch_conv(x, w, b, r, geo, activation), what)
    g = torch.randn_like(y)
    (y.float() * g.float()).sum().backward()

    def grads(dtype):
        inputs = [t.detach().to(dtype).requires_grad_() if t is not None else None for t in (x, w, b, r)]
        out = torch_conv(*inputs, geo, activation)
        (out.to(torch.float64 if dtype == torch.float64 else torch.float32) * g.to(out.dtype)).sum().backward()
        return [t.grad for t in inputs if t is not None]

    for name, ours, ref, same in zip(("x", "w", "bias", "residual"), [t.grad for t in leaves], grads(torch.float64),
                                     grads(torch.bfloat16)):
        check(ours, ref, same, f"grad {name} of {what}", factor=3.0)


def test_first_layer_and_strided_gradient():
    # C = 3 (the element-wise path), a gradient that is not channels-last (the sum's expanded ones)
    x, w, b, _, geo = make(CASES[1], torch.float16, True, False, seed=5)
    xo, wo, bo = (t.detach().requires_grad_() for t in (x, w, b))
    y = ops.conv2d(xo, wo, bo, activation="relu", **geo)
    y.sum().backward()
    ref = [t.detach().double().requires_grad_() for t in (x, w, b)]
    torch.relu(F.conv2d(*ref, **geo)).sum().backward()
    same = [t.detach().requires_grad_() for t in (x, w, b)]
    torch.relu(F.conv2d(*same, **geo)).float().sum().backward()
    for name, ours, r, s in zip("xwb", (xo, wo, bo), ref, same):
        check(ours.grad, r.grad, s.grad, f"first layer grad {name}", factor=3.0)


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = tilefuse.nn.Conv2d(16, 32, 3, padding=1, activation="relu")
        self.conv2 = tilefuse.nn.Conv2d(32, 16, 1)

    def forward(self, x):
        return self.conv2(self.conv1(x), residual=x)


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_compile_fullgraph_matches_eager(backend):
    if backend == "inductor" and not has_triton():
        pytest.skip("inductor needs triton")
    torch.manual_seed(0)
    block = Block().cuda().bfloat16().to(memory_format=CL)
    compiled = torch.compile(block, backend=backend, fullgraph=True)
    x = torch.randn(2, 16, 12, 12, device="cuda").bfloat16().contiguous(memory_format=CL)
    xe, xc = x.clone().requires_grad_(), x.clone().requires_grad_()
    eager = block(xe)
    eager.float().square().sum().backward()
    grads_eager = [p.grad.clone() for p in block.parameters()] + [xe.grad]
    block.zero_grad()
    out = compiled(xc)
    out.float().square().sum().backward()
    grads = [p.grad.clone() for p in block.parameters()] + [xc.grad]
    torch.testing.assert_close(out, eager, rtol=0, atol=0)
    for g, ge in zip(grads, grads_eager):
        torch.testing.assert_close(g, ge, rtol=1e-2, atol=1e-2)


def test_nn_conv2d_drop_in():
    torch.manual_seed(2)
    reference = torch.nn.Conv2d(32, 64, 3, stride=2, padding=1).cuda().bfloat16().to(memory_format=CL)
    ours = tilefuse.nn.Conv2d.from_torch(reference, activation="silu")
    x = torch.randn(4, 32, 17, 17, device="cuda").bfloat16().contiguous(memory_format=CL)
    y = ours(x)
    assert y.is_contiguous(memory_format=CL)
    ref = F.silu(F.conv2d(x.double(), reference.weight.double(), reference.bias.double(), stride=2, padding=1))
    check(y, ref, F.silu(reference(x)), "nn.Conv2d drop-in")
    with pytest.raises(tilefuse.errors.TensorArgumentError, match="channels_last"):
        ours(x.contiguous())
    converting = tilefuse.nn.Conv2d.from_torch(reference, activation="silu", layout="convert")
    assert torch.equal(converting(x.contiguous()), y)


def test_eager_path_and_custom_op_agree():
    """Eager calls skip the custom-op dispatcher (an autograd.Function over the same kernels): forward and
    every gradient equal the custom op's bit for bit."""
    x, w, b, r, geo = make((2, 64, 12, 12, 64, 3, 3, 1, 1, 1), torch.bfloat16, True, True, seed=5)
    results = []
    for path in ("eager", "op"):
        leaves = [t.detach().requires_grad_() for t in (x, w, b, r)]
        if path == "eager":
            assert ops.eager_path(leaves)
            y = ops.conv2d(*leaves, activation="gelu", **geo)
        else:
            y = torch.ops.tilefuse.conv2d(*leaves, [1, 1], [1, 1], [1, 1], "gelu", "require")
        y.float().square().sum().backward()
        results.append([y.detach()] + [t.grad for t in leaves])
    for name, a, c in zip(("y", "x", "w", "bias", "residual"), *results):
        assert torch.equal(a, c), name


def test_empty_batch_is_torchs_empty_output_and_zero_gradients():
    x, w, b, r, geo = make((0, 64, 12, 12, 64, 3, 3, 1, 1, 1), torch.bfloat16, True, True, seed=6)
    leaves = [t.detach().requires_grad_() for t in (x, w, b, r)]
    y = ops.conv2d(*leaves, activation="relu", **geo)
    assert tuple(y.shape) == (0, 64, 12, 12) and y.is_contiguous(memory_format=CL)
    y.float().sum().backward()
    assert leaves[0].grad.shape == x.shape
    assert torch.equal(leaves[1].grad, torch.zeros_like(w)) and torch.equal(leaves[2].grad, torch.zeros_like(b))
    with torch.no_grad():
        assert ops.conv2d(x, w, b, activation="relu", **geo).shape == (0, 64, 12, 12)
        assert torch.ops.tilefuse.conv2d_add_act(x, w, b, r, [1, 1], [1, 1], [1, 1], "relu").shape == (0, 64, 12, 12)


def test_no_grad_path_equals_the_custom_op():
    """Under no_grad, ops.conv2d and ops.linear call the kernels directly (no autograd.Function, no
    dispatcher, checks cached per signature): the same bits as the custom op, call after call."""
    x, w, b, r, geo = make((3, 64, 10, 10, 96, 3, 3, 1, 1, 1), torch.bfloat16, True, True, seed=7)
    with torch.no_grad():
        want = torch.ops.tilefuse.conv2d(x, w, b, r, [1, 1], [1, 1], [1, 1], "silu", "require")
        for _ in range(2):
            assert torch.equal(ops.conv2d(x, w, b, r, activation="silu", **geo), want)
        xl = torch.randn(37, 96, device="cuda", dtype=torch.bfloat16)
        wl = torch.randn(80, 96, device="cuda", dtype=torch.bfloat16) * 0.1
        want = torch.ops.tilefuse.linear(xl, wl, None, None, "gelu")
        for _ in range(2):
            assert torch.equal(ops.linear(xl, wl, activation="gelu"), want)


def test_contiguous_weight_is_taken_as_channels_last():
    """A weight in torch's default format (FSDP2 keeps parameters so) gives the channels-last weight's bits,
    forward and gradients; an input that is not channels-last is still refused."""
    x, w, b, r, geo = make((2, 32, 9, 9, 48, 3, 3, 1, 1, 1), torch.bfloat16, True, True, seed=8)
    results = []
    for weight in (w, w.contiguous()):
        leaves = [t.detach().requires_grad_() for t in (x, weight, b, r)]
        y = ops.conv2d(*leaves, activation="relu", **geo)
        y.float().square().sum().backward()
        results.append([y.detach()] + [t.grad for t in leaves])
    for name, a, c in zip(("y", "x", "w", "bias", "residual"), *results):
        assert torch.equal(a, c), name
    with pytest.raises(tilefuse.errors.TensorArgumentError, match="channels_last"):
        ops.conv2d(x.contiguous(), w.contiguous(), b, r, activation="relu", **geo)


def test_rgb_stem_trains_with_its_channels_padded():
    """C = 3: conv2d pads x and the weight to 8 channels (conv::channels_to_pad) and runs the aligned kernels;
    forward and the weight's gradient (3 channels, autograd slicing the padded one) match float64."""
    torch.manual_seed(4)
    reference = torch.nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False).cuda().bfloat16().to(memory_format=CL)
    ours = tilefuse.nn.Conv2d.from_torch(reference)
    x = torch.randn(2, 3, 37, 41, device="cuda").bfloat16().contiguous(memory_format=CL)
    y = ours(x)
    assert y.is_contiguous(memory_format=CL) and y.shape == (2, 64, 19, 21)
    check(y, F.conv2d(x.double(), reference.weight.double(), stride=2, padding=3), reference(x), "stem forward")
    grad = torch.randn_like(y)
    (gw,) = torch.autograd.grad(y, [ours.weight], grad)
    assert gw.shape == (64, 3, 7, 7)
    ref = torch.nn.grad.conv2d_weight(x.double(), (64, 3, 7, 7), grad.double(), stride=2, padding=3)
    same = torch.nn.grad.conv2d_weight(x, (64, 3, 7, 7), grad, stride=2, padding=3)
    check(gw, ref, same, "stem weight gradient")


@pytest.mark.parametrize("stride", [1, 2])
def test_repeated_training_steps_take_the_warm_backward_and_stay_exact(stride):
    """From the second backward of a signature on, dgrad and wgrad run their remembered warm calls: every
    step's gradients must still be torch's (fresh data each step; a contiguous weight in one step, which the
    warm path must not take for channels-last)."""
    reference = torch.nn.Conv2d(64, 128, 3, stride=stride, padding=1, bias=True).cuda().bfloat16()
    reference = reference.to(memory_format=CL)
    ours = tilefuse.nn.Conv2d.from_torch(reference)
    for step in range(4):
        if step == 2:
            ours.weight = torch.nn.Parameter(reference.weight.detach().contiguous())  # NCHW-contiguous
        x = torch.randn(4, 64, 15, 15, device="cuda").bfloat16().contiguous(memory_format=CL).requires_grad_()
        y = ours(x)
        grad = torch.randn_like(y)
        gx, gw, gb = torch.autograd.grad(y, [x, ours.weight, ours.bias], grad)
        w = ours.weight.detach()
        geo = dict(stride=stride, padding=1)
        check(gx, torch.nn.grad.conv2d_input(x.shape, w.double(), grad.double(), **geo),
              torch.nn.grad.conv2d_input(x.shape, w, grad, **geo), f"step {step} grad x")
        check(gw, torch.nn.grad.conv2d_weight(x.double(), w.shape, grad.double(), **geo),
              torch.nn.grad.conv2d_weight(x.detach(), w.shape, grad, **geo), f"step {step} grad w")
        torch.testing.assert_close(gb.float(), grad.float().sum((0, 2, 3)), rtol=2e-2, atol=2e-1)
