"""tilefuse.ops (torch.library custom ops) and tilefuse.nn on a machine without a GPU.

- the schemas, and the fake implementations under FakeTensorMode (fake CUDA tensors need no GPU);
- torch.export and torch.compile(fullgraph=True) trace the ops;
- the validation errors;
- torch.nn.Linear compatibility of tilefuse.nn.Linear;
- the autograd formulas, run end to end on the CPU through reference kernels registered here for the CPU
  only (the forward in float32 torch; linear_grad_preact through tilefuse.epilogue.evaluate of the very
  epilogue the GPU compiles, so the fused derivative formulas are checked too), including
  torch.library.opcheck. Without `reference_kernels` the CPU kernel is the real one, which refuses CPU tensors.
"""
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

import tilefuse  # noqa: E402
import tilefuse.nn  # noqa: E402
import tilefuse.ops as ops  # noqa: E402
from tilefuse.epilogue import evaluate, trace  # noqa: E402
from tilefuse.errors import TensorArgumentError  # noqa: E402
from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402

BF16 = torch.bfloat16
F = torch.nn.functional
TORCH_ACT = {"none": lambda z: z, "relu": torch.relu, "gelu": F.gelu, "silu": F.silu,
             "gelu_tanh": lambda z: F.gelu(z, approximate="tanh"), "sigmoid": torch.sigmoid,
             "hardswish": F.hardswish, "relu6": F.relu6}

# ------------------------------------------------------------------------------------- CPU reference kernels

_REFERENCE = {"on": False}


def _ref_linear(x, weight, bias=None, residual=None, activation="none"):
    if not _REFERENCE["on"]:
        return ops._linear._init_fn(x, weight, bias, residual, activation)
    ops.check_linear(x, weight, bias, residual, activation)
    z = x.float() @ weight.float().t()
    if bias is not None:
        z = z + bias.float()
    y = TORCH_ACT[activation](z)
    if residual is not None:
        y = y + residual.float()
    return y.to(x.dtype)


def _ref_mm(a, b):
    if not _REFERENCE["on"]:
        return ops._mm._init_fn(a, b)
    ops._check_mm(a, b)
    return (a.float() @ b.float()).to(a.dtype)


_GRAD_PREACT_CALLS = []


def _ref_grad_preact(grad_y, x, weight, bias, activation):
    _GRAD_PREACT_CALLS.append(activation)
    if not _REFERENCE["on"]:
        return ops._linear_grad_preact._init_fn(grad_y, x, weight, bias, activation)
    if activation == "none":
        return grad_y.clone()
    ops._check_grad_preact(grad_y, x, weight, bias, activation)
    m, n = grad_y.shape
    specs, arrays = {"acc": (m, n), "grad": (m, n)}, {"grad": grad_y.float().numpy()}
    if bias is not None:
        specs["bias"], arrays["bias"] = (n,), bias.float().numpy()
    graph = trace(ops.grad_epilogue(activation, bias is not None), **specs)
    acc = (x.float() @ weight.float().t()).numpy()
    return torch.from_numpy(evaluate(graph, acc, **arrays)["D"].copy()).to(x.dtype)


torch.library.register_kernel("tilefuse::linear", "cpu", _ref_linear)
torch.library.register_kernel("tilefuse::mm", "cpu", _ref_mm)
torch.library.register_kernel("tilefuse::linear_grad_preact", "cpu", _ref_grad_preact)


@pytest.fixture
def reference_kernels():
    _REFERENCE["on"] = True
    try:
        yield
    finally:
        _REFERENCE["on"] = False


def _randn(*shape, seed, dtype=BF16, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(*shape, generator=g) * scale).to(dtype)


def _linear_case(lead, n, k, bias, residual, seed=0, dtype=BF16):
    x = _randn(*lead, k, seed=seed, dtype=dtype)
    w = _randn(n, k, seed=seed + 1, dtype=dtype, scale=k ** -0.5)
    b = _randn(n, seed=seed + 2, dtype=dtype) if bias else None
    r = _randn(*lead, n, seed=seed + 3, dtype=dtype) if residual else None
    return x, w, b, r


# ------------------------------------------------------------------------------------- registration, fake

def test_import_tilefuse_does_not_import_torch():
    code = "import sys, tilefuse; assert 'torch' not in sys.modules, 'import tilefuse imported torch'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_schemas():
    assert str(torch.ops.tilefuse.linear.default._schema) == (
        'tilefuse::linear(Tensor x, Tensor weight, Tensor? bias=None, Tensor? residual=None, '
        'str activation="none") -> Tensor')
    assert str(torch.ops.tilefuse.mm.default._schema) == "tilefuse::mm(Tensor a, Tensor b) -> Tensor"
    assert str(torch.ops.tilefuse.linear_grad_preact.default._schema) == (
        "tilefuse::linear_grad_preact(Tensor grad_y, Tensor x, Tensor weight, Tensor? bias, str activation) -> Tensor")
    assert tilefuse.ops is ops and tilefuse.nn.Linear is not None


@pytest.mark.parametrize("device", ["cuda", "cpu"])
@pytest.mark.parametrize("lead", [(5,), (3, 7), (2, 3, 4), ()])
def test_fake_linear_shapes_dtypes_strides(lead, device):
    with FakeTensorMode():
        x, w, b, r = _linear_case(lead, 24, 40, True, True)
        x, w, b, r = (t.to(device) for t in (x, w, b, r))
        y = ops.linear(x, w, b, r, "gelu")
        assert y.shape == (*lead, 24) and y.dtype == BF16 and y.device.type == device and y.is_contiguous()
        assert ops.mm(x.reshape(-1, 40), w.t()).shape == (y.numel() // 24, 24)
        g = torch.ops.tilefuse.linear_grad_preact(y.reshape(-1, 24), x.reshape(-1, 40), w, b, "silu")
        assert g.shape == (y.numel() // 24, 24) and g.dtype == BF16


def test_fake_backward_under_fake_mode():
    with FakeTensorMode():
        x, w, b, r = _linear_case((6, 5), 16, 32, True, True)
        x, w, b, r = (t.requires_grad_() for t in (x, w, b, r))  # CPU fakes: the engine needs no device
        ops.linear(x, w, b, r, "silu").sum().backward()
        for t in (x, w, b, r):
            assert t.grad.shape == t.shape and t.grad.dtype == BF16


def test_torch_export_traces_the_op():
    model = torch.nn.Sequential(tilefuse.nn.Linear(32, 64, activation="gelu", dtype=BF16),
                                tilefuse.nn.Linear(64, 16, dtype=BF16))
    exported = torch.export.export(model, (torch.randn(4, 9, 32, dtype=BF16),))
    targets = [node.target for node in exported.graph.nodes if node.op == "call_function"]
    assert targets.count(torch.ops.tilefuse.linear.default) == 2


def test_compile_fullgraph_runs_with_reference_kernels(reference_kernels):
    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.up = tilefuse.nn.Linear(32, 64, activation="silu", dtype=BF16)
            self.down = tilefuse.nn.Linear(64, 32, dtype=BF16)

        def forward(self, x):
            return self.down(self.up(x), residual=x)

    torch.manual_seed(0)
    block = Block()
    compiled = torch.compile(block, backend="aot_eager", fullgraph=True)
    for lead in ((2, 7), (4, 9), (11,)):  # new sizes: dynamic shapes through the fake implementations
        x = torch.randn(*lead, 32, dtype=BF16)
        assert torch.equal(compiled(x), block(x))
    x = torch.randn(3, 5, 32, dtype=BF16)
    xs = [x.clone().requires_grad_() for _ in range(2)]
    block(xs[0]).float().square().sum().backward()
    grads_eager = [p.grad.clone() for p in block.parameters()]
    block.zero_grad()
    compiled(xs[1]).float().square().sum().backward()
    assert torch.equal(xs[0].grad, xs[1].grad)
    for p, g in zip(block.parameters(), grads_eager):
        assert torch.equal(p.grad, g)


# ------------------------------------------------------------------------------------- autograd formulas

def _check(ours, reference64, torch_same_dtype, what, factor=3.0):
    err = (ours.double() - reference64).abs().max().item()
    torch_err = (torch_same_dtype.double() - reference64).abs().max().item()
    scale = reference64.abs().max().item() + 1e-30
    assert err <= factor * torch_err + 2e-3 * scale, f"{what}: max error {err:.3e}, torch's {torch_err:.3e}"


@pytest.mark.parametrize("activation", ops.ACTIVATIONS)
@pytest.mark.parametrize("bias,residual", [(True, False), (False, True), (True, True), (False, False)])
def test_backward_formulas_against_float64(activation, bias, residual, reference_kernels):
    lead, n, k = (3, 11), 20, 36  # n and m = 33 not multiples of 8: padded operands in backward
    inputs = [t for t in _linear_case(lead, n, k, bias, residual, seed=5)]
    grad_out = _randn(*lead, n, seed=9)

    def run(fn, dtype):
        leaves = [t.detach().to(dtype).clone().requires_grad_() if t is not None else None for t in inputs]
        y = fn(*leaves)
        y.backward(grad_out.to(dtype))
        return [y] + [t.grad for t in leaves if t is not None]

    def torch_linear(x, w, b, r):
        y = TORCH_ACT[activation](F.linear(x, w, b))
        return y + r if r is not None else y

    ours = run(lambda x, w, b, r: ops.linear(x, w, b, r, activation), BF16)
    ref = run(torch_linear, torch.float64)
    same = run(torch_linear, BF16)
    names = ["y", "grad_x", "grad_weight", "grad_bias", "grad_residual"]
    names = [nm for nm, present in zip(names, [True, True, True, bias, residual]) if present]
    for name, o, r, s in zip(names, ours, ref, same):
        assert o.shape == r.shape and o.dtype == BF16, name
        _check(o, r, s, f"{activation} bias={bias} residual={residual} {name}")


@pytest.mark.parametrize("activation,residual,recomputes", [
    ("relu", False, False), ("none", True, False), ("relu", True, True), ("gelu", False, True)])
def test_when_backward_recomputes_the_pre_activation(activation, residual, recomputes, reference_kernels):
    x, w, b, r = _linear_case((8,), 16, 24, True, residual)
    del _GRAD_PREACT_CALLS[:]
    ops.linear(x.requires_grad_(), w, b, r, activation).sum().backward()
    assert len(_GRAD_PREACT_CALLS) == (1 if recomputes else 0)


@pytest.mark.parametrize("activation", ["none", "gelu"])
def test_opcheck(activation, reference_kernels):
    x, w, b, r = _linear_case((4, 3), 16, 24, True, True, seed=2)
    for args in [(x, w, b, r, activation), (x.requires_grad_(), w.requires_grad_(), b.requires_grad_(), r,
                                           activation), (x[0], w, None, None, activation)]:
        torch.library.opcheck(torch.ops.tilefuse.linear.default, args)
    a, bm = _randn(12, 24, seed=1).requires_grad_(), _randn(24, 8, seed=2).requires_grad_()
    torch.library.opcheck(torch.ops.tilefuse.mm.default, (a, bm))
    torch.library.opcheck(torch.ops.tilefuse.linear_grad_preact.default,
                          (_randn(12, 16, seed=3), _randn(12, 24, seed=4), w.detach(), b.detach(), activation))


def _integers(*shape, seed):
    """bf16 integers in [-3, 3]: the products here sum exactly in bf16 (|sum| <= 12 * 9 < 256)."""
    g = torch.Generator().manual_seed(seed)
    return torch.randint(-3, 4, shape, generator=g).to(BF16)


def test_mm_gradients(reference_kernels):
    # A random upstream gradient (not .sum()'s ones, which a backward that ignores it would reproduce) and
    # integer-valued operands: grad_a = g b^T and grad_b = a^T g are exact, compared bit for bit with float64.
    a = _integers(10, 12, seed=1).requires_grad_()
    b = _integers(12, 6, seed=2).requires_grad_()
    g = _integers(10, 6, seed=3)
    ops.mm(a, b).backward(g)
    assert torch.equal(a.grad.double(), g.double() @ b.double().t())
    assert torch.equal(b.grad.double(), a.double().t() @ g.double())
    assert a.grad.abs().sum() > 0 and b.grad.abs().sum() > 0


# ------------------------------------------------------------------------------------- validation

def test_cpu_tensors_are_refused_by_the_real_kernel():
    x, w, b, _ = _linear_case((4,), 8, 16, True, False)
    with pytest.raises(TensorArgumentError, match="CUDA device"):
        ops.linear(x, w, b)
    with pytest.raises(TensorArgumentError, match="CUDA device"):
        ops.mm(x, w.t())


def test_mm_falls_back_to_torch_for_float32():
    a, b = torch.randn(5, 7), torch.randn(7, 3)
    assert torch.allclose(ops.mm(a, b), a @ b)


@pytest.mark.parametrize("change,match", [
    (lambda x, w, b, r: (x.float(), w, b, r), "dtype float32.*bfloat16 or float16"),
    (lambda x, w, b, r: (x, w.half(), b, r), "weight has dtype float16 and x bfloat16"),
    (lambda x, w, b, r: (x[..., :8], w, b, r), "in_features = 16"),
    (lambda x, w, b, r: (x, w[None], b, r), "out_features, in_features"),
    (lambda x, w, b, r: (x, w, b[:4], r), r"bias has shape \(4,\); it must be \(out_features,\)"),
    (lambda x, w, b, r: (x, w, b, r[:1]), "residual has shape"),
    (lambda x, w, b, r: (x, w, b, r.to("meta")), "residual is on meta"),
])
def test_validation_errors(change, match):
    x, w, b, r = change(*_linear_case((4, 3), 8, 16, True, True))
    with pytest.raises(TensorArgumentError, match=match):
        ops.linear(x, w, b, r)
    with FakeTensorMode() as mode, pytest.raises(TensorArgumentError, match=match):  # as torch.compile sees it
        ops.linear(*(mode.from_tensor(t) for t in (x, w, b, r)))


def test_activation_names():
    assert ops.activation_name(None) == "none" and ops.activation_name("gelu_tanh") == "gelu_tanh"
    for bad in ("tanh", "ReLU", 3):
        with pytest.raises(ValueError, match="relu.*gelu.*silu"):
            ops.activation_name(bad)
    with pytest.raises(ValueError, match="activation='swish'"):
        tilefuse.nn.Linear(4, 4, activation="swish")
    x, w, _, _ = _linear_case((2,), 8, 8, False, False)
    with pytest.raises(ValueError, match="activation='swish'"):
        torch.ops.tilefuse.linear(x, w, None, None, "swish")


# ------------------------------------------------------------------------------------- tilefuse.nn.Linear

@pytest.mark.parametrize("bias", [True, False])
def test_linear_module_matches_torch_nn_linear(bias):
    torch.manual_seed(3)
    ours = tilefuse.nn.Linear(24, 40, bias=bias, activation="relu", dtype=BF16)
    torch.manual_seed(3)
    theirs = torch.nn.Linear(24, 40, bias=bias, dtype=BF16)
    assert isinstance(ours, torch.nn.Linear) and ours.activation == "relu"
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for (name, p), (name_t, p_t) in zip(ours.named_parameters(), theirs.named_parameters()):
        assert name == name_t and p.shape == p_t.shape and p.dtype == p_t.dtype and torch.equal(p, p_t)
    ours.load_state_dict(theirs.state_dict())
    assert "activation='relu'" in repr(ours) and "in_features=24" in repr(ours)
    meta = tilefuse.nn.Linear(4, 8, device="meta")
    assert meta.weight.device.type == "meta" and meta.weight.dtype == torch.float32 and meta.activation == "none"


def test_from_torch_shares_parameters():
    linear = torch.nn.Linear(16, 8, dtype=BF16).eval()
    ours = tilefuse.nn.Linear.from_torch(linear, activation="gelu")
    assert ours.weight is linear.weight and ours.bias is linear.bias and not ours.training
    assert ours.activation == "gelu" and ours.in_features == 16 and ours.out_features == 8
    no_bias = tilefuse.nn.Linear.from_torch(torch.nn.Linear(16, 8, bias=False))
    assert no_bias.bias is None
    with pytest.raises(TypeError, match="torch.nn.Linear"):
        tilefuse.nn.Linear.from_torch(torch.nn.Conv2d(3, 3, 1))


def test_linear_module_runs_like_torch_with_reference_kernels(reference_kernels):
    linear = torch.nn.Linear(32, 24, dtype=BF16)
    ours = tilefuse.nn.Linear.from_torch(linear)
    x = _randn(2, 5, 32, seed=4)
    r = _randn(2, 5, 24, seed=5)
    assert torch.allclose(ours(x).float(), linear(x).float(), rtol=2e-2, atol=2e-2)
    assert torch.allclose(ours(x, residual=r).float(), (linear(x) + r).float(), rtol=2e-2, atol=3e-2)


def test_conv2d_op_fake_gives_a_channels_last_output():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        x = torch.empty(2, 16, 9, 9, dtype=BF16, device="cuda").contiguous(memory_format=torch.channels_last)
        w = torch.empty(24, 16, 3, 3, dtype=BF16, device="cuda").contiguous(memory_format=torch.channels_last)
        b = torch.empty(24, dtype=BF16, device="cuda")
        y = torch.ops.tilefuse.conv2d(x, w, b, None, [2, 2], [1, 1], [1, 1], "relu")
        assert tuple(y.shape) == (2, 24, 5, 5) and y.dtype == BF16
        assert y.is_contiguous(memory_format=torch.channels_last)
        with pytest.raises(TensorArgumentError, match="residual has shape"):
            torch.ops.tilefuse.conv2d(x, w, b, torch.empty(2, 24, 9, 9, dtype=BF16, device="cuda"), [2, 2], [1, 1],
                                      [1, 1], "relu")
        with pytest.raises(TensorArgumentError, match="groups"):
            torch.ops.tilefuse.conv2d(x, w[:, :8], None, None, [1, 1], [1, 1], [1, 1])
        with pytest.raises(TensorArgumentError, match="float32"):
            torch.ops.tilefuse.conv2d(x.float(), w.float(), None, None, [1, 1], [1, 1], [1, 1])
        # an empty batch is torch's empty output; an empty image is refused with a sentence
        empty = torch.ops.tilefuse.conv2d(x[:0], w, b, None, [2, 2], [1, 1], [1, 1], "relu")
        assert tuple(empty.shape) == (0, 24, 5, 5)
        with pytest.raises(TensorArgumentError, match="give an output of"):
            torch.ops.tilefuse.conv2d(x[:, :, :0], w, b, None, [1, 1], [0, 0], [1, 1])


def test_conv2d_module_is_a_torch_conv2d():
    ours = tilefuse.nn.Conv2d(16, 32, 3, padding="same", activation="silu", dtype=BF16)
    theirs = torch.nn.Conv2d(16, 32, 3, padding=1, dtype=BF16)
    assert isinstance(ours, torch.nn.Conv2d) and ours._explicit_padding == [1, 1]
    assert {k: v.shape for k, v in ours.state_dict().items()} == {k: v.shape for k, v in theirs.state_dict().items()}
    shared = tilefuse.nn.Conv2d.from_torch(theirs, activation="relu")
    assert shared.weight is theirs.weight and shared.bias is theirs.bias and shared.activation == "relu"
    with pytest.raises(ValueError, match="groups"):
        tilefuse.nn.Conv2d(16, 32, 3, groups=2)
    with pytest.raises(ValueError, match="unevenly"):
        tilefuse.nn.Conv2d(16, 32, 2, padding="same")
    with pytest.raises(ValueError, match="activation"):
        tilefuse.nn.Conv2d(16, 32, 3, activation="tanh")
    with pytest.raises(TensorArgumentError, match="CUDA"):
        ours(torch.zeros(1, 16, 8, 8, dtype=BF16).contiguous(memory_format=torch.channels_last))


def test_gemm_op_decomposes_into_linear():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        a = torch.empty(3, 40, 64, dtype=BF16, device="cuda")
        w = torch.empty(96, 64, dtype=BF16, device="cuda")
        bias = torch.empty(96, dtype=BF16, device="cuda")
        y = torch.ops.tilefuse.gemm(a, w.t(), bias, None, "gelu")
        assert tuple(y.shape) == (3, 40, 96) and y.dtype == BF16
        with pytest.raises(TensorArgumentError, match="2-D"):
            torch.ops.tilefuse.gemm(a, torch.empty(2, 64, 96, dtype=BF16, device="cuda"))


def test_eager_calls_skip_the_dispatcher_only_where_nothing_traces():
    t = torch.ones(2)
    assert ops.eager_path((t, torch.nn.Parameter(t), None))
    with FakeTensorMode() as mode:
        assert not ops.eager_path((mode.from_tensor(t),))


def test_channels_to_pad_is_the_planners():
    from tilefuse.op_common import channels_to_pad, pad_channels

    x = torch.zeros(2, 3, 5, 5, dtype=torch.bfloat16).contiguous(memory_format=torch.channels_last)
    w = torch.zeros(64, 3, 7, 7, dtype=torch.bfloat16)
    assert channels_to_pad(x, w) == 5
    assert channels_to_pad(x.float(), w.float()) == 0  # no kernel for the dtype: the op's checks say so
    assert channels_to_pad(x, torch.zeros(10, 3, 7, 7, dtype=torch.bfloat16)) == 0  # K = 10: padding C would not help
    assert channels_to_pad(x, torch.zeros(64, 4, 7, 7, dtype=torch.bfloat16)) == 0  # C mismatch: the checks report it
    padded = pad_channels(x + 1, 5)
    assert padded.shape == (2, 8, 5, 5) and padded.is_contiguous(memory_format=torch.channels_last)
    assert torch.equal(padded[:, :3], x + 1) and not padded[:, 3:].any()
