"""tilefuse.ops / tilefuse.nn on an H100 / H200 against PyTorch: the fused linear (every activation, with and
without bias and residual, random shapes that are not tile multiples, k and n not multiples of 8, 3-D inputs,
bf16 and fp16, strided inputs), its gradients, tilefuse::mm, torch.compile(fullgraph=True) and
tilefuse.nn.Linear as a drop-in for torch.nn.Linear. Each result is compared element by element with a float64
reference; our error must stay within a small multiple of PyTorch's own error in the same dtype (as in
test_gemm_gpu.py)."""
import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] != 9:
    pytest.skip("needs an sm_90 GPU (H100 / H200) for torch", allow_module_level=True)

import tilefuse  # noqa: E402
from torch_checks import check as check_close, has_triton, poison  # noqa: E402
import tilefuse.nn  # noqa: E402
import tilefuse.ops as ops  # noqa: E402

F = torch.nn.functional
TORCH_ACT = {"none": lambda z: z, "relu": torch.relu, "gelu": F.gelu, "silu": F.silu,
             "gelu_tanh": lambda z: F.gelu(z, approximate="tanh"), "sigmoid": torch.sigmoid,
             "hardswish": F.hardswish, "relu6": F.relu6}
# (leading dims of x, n, k): 2-D and 3-D, tile multiples and not, k and n not multiples of 8 (padded operands)
SHAPES = [((128,), 256, 64), ((1,), 8, 8), ((200,), 136, 72), ((3, 37), 100, 96), ((2, 5, 33), 72, 100),
          ((1000,), 520, 264)]


def check(ours, reference64, torch_same_dtype, what, factor=2.0, slack=1e-3):
    check_close(ours, reference64, torch_same_dtype, what, factor, slack)


def case(lead, n, k, dtype, bias=True, residual=True, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(*lead, k, device="cuda", generator=g).to(dtype)
    w = (torch.randn(n, k, device="cuda", generator=g) * k ** -0.5).to(dtype)
    b = torch.randn(n, device="cuda", generator=g).to(dtype) if bias else None
    r = torch.randn(*lead, n, device="cuda", generator=g).to(dtype) if residual else None
    return x, w, b, r


def torch_linear(x, w, b, r, activation):
    y = TORCH_ACT[activation](F.linear(x, w, b))
    return y + r if r is not None else y


def as64(*tensors):
    return [t.double() if t is not None else None for t in tensors]


@pytest.mark.parametrize("activation", ops.ACTIVATIONS)
@pytest.mark.parametrize("bias,residual", [(True, True), (True, False), (False, True), (False, False)])
@pytest.mark.parametrize("lead,n,k", SHAPES[2:5])
def test_forward(lead, n, k, activation, bias, residual):
    x, w, b, r = case(lead, n, k, torch.bfloat16, bias, residual, seed=n + k)
    poison()  # an element the kernel leaves unwritten reads NaN
    y = ops.linear(x, w, b, r, activation)
    assert y.shape == (*lead, n) and y.dtype == torch.bfloat16 and y.is_contiguous()
    check(y, torch_linear(*as64(x, w, b, r), activation), torch_linear(x, w, b, r, activation),
          f"linear {activation} bias={bias} residual={residual} {lead}x{n}x{k}")


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("lead,n,k", SHAPES)
def test_forward_shapes_and_dtypes(lead, n, k, dtype):
    x, w, b, r = case(lead, n, k, dtype, seed=len(lead) + n)
    poison()
    y = ops.linear(x, w, b, r, "gelu")
    assert y.dtype == dtype
    check(y, torch_linear(*as64(x, w, b, r), "gelu"), torch_linear(x, w, b, r, "gelu"), f"{lead}x{n}x{k} {dtype}")


def test_strided_inputs_are_copied_into_the_kernels_layouts():
    x_wide, w, b, r = case((64,), 48, 80, torch.bfloat16, seed=4)
    x = x_wide[:, 3:75]  # (64, 72), a 6-byte offset and a leading dimension of 80
    w = w[:, :72].t().contiguous().t()  # (48, 72), column-major: weight.t() is row-major, not K-major
    y = ops.linear(x, w, b, r, "silu")
    check(y, torch_linear(*as64(x, w, b, r), "silu"), torch_linear(x, w, b, r, "silu"), "strided x and weight")
    assert ops.linear(x[:0], w, b, r[:0]).shape == (0, 48)


GRAD_CASES = [((200,), 136, 72), ((3, 37), 100, 96), ((2, 5, 33), 72, 100)]


@pytest.mark.parametrize("activation", ops.ACTIVATIONS)
@pytest.mark.parametrize("bias,residual", [(True, True), (True, False), (False, False)])
@pytest.mark.parametrize("lead,n,k", GRAD_CASES)
def test_backward(lead, n, k, activation, bias, residual):
    inputs = case(lead, n, k, torch.bfloat16, bias, residual, seed=3 * n + k)
    grad_out = torch.randn(*lead, n, device="cuda", generator=torch.Generator(device="cuda").manual_seed(1))

    def run(fn, dtype):
        leaves = [t.detach().to(dtype).clone().requires_grad_() if t is not None else None for t in inputs]
        y = fn(*leaves)
        y.backward(grad_out.to(torch.bfloat16).to(dtype))
        return [y] + [t.grad for t in leaves if t is not None]

    ours = run(lambda x, w, b, r: ops.linear(x, w, b, r, activation), torch.bfloat16)
    ref = run(lambda x, w, b, r: torch_linear(x, w, b, r, activation), torch.float64)
    same = run(lambda x, w, b, r: torch_linear(x, w, b, r, activation), torch.bfloat16)
    names = [nm for nm, present in zip(["y", "grad_x", "grad_weight", "grad_bias", "grad_residual"],
                                       [True, True, True, bias, residual]) if present]
    for name, o, r, s in zip(names, ours, ref, same):
        assert o.dtype == torch.bfloat16, name
        check(o, r, s, f"{activation} bias={bias} residual={residual} {lead}x{n}x{k}: {name}", slack=2e-3)


def test_backward_fp16_gelu_tanh():
    x, w, b, r = case((130,), 96, 64, torch.float16, seed=8)
    grad_out = torch.randn(130, 96, device="cuda").half()
    leaves = [t.clone().requires_grad_() for t in (x, w, b)]
    ops.linear(*leaves, r, "gelu_tanh").backward(grad_out)
    ref = [t.double().requires_grad_() for t in (x, w, b)]
    torch_linear(*ref, r.double(), "gelu_tanh").backward(grad_out.double())
    same = [t.clone().requires_grad_() for t in (x, w, b)]
    torch_linear(*same, r, "gelu_tanh").backward(grad_out)
    for name, o, rf, s in zip(("grad_x", "grad_weight", "grad_bias"), leaves, ref, same):
        check(o.grad, rf.grad, s.grad, f"fp16 gelu_tanh {name}", slack=2e-3)


@pytest.mark.parametrize("m,n,k", [(128, 256, 64), (33, 100, 100), (1, 8, 3), (257, 72, 520)])
def test_mm_any_layout(m, n, k):
    g = torch.Generator(device="cuda").manual_seed(m)
    a = torch.randn(m, k, device="cuda", generator=g).bfloat16()
    b = torch.randn(k, n, device="cuda", generator=g).bfloat16()
    for bb in (b, b.t().contiguous().t()):  # row-major b (copied) and K-major b (read as is)
        d = ops.mm(a, bb)
        check(d, a.double() @ b.double(), a @ b, f"mm {m}x{n}x{k}")
    d = ops.mm(a.t().contiguous().t(), b)  # column-major a: copied
    check(d, a.double() @ b.double(), a @ b, f"mm column-major a {m}x{n}x{k}")


def test_mm_falls_back_to_torch_for_float32():
    a, b = torch.randn(17, 9, device="cuda"), torch.randn(9, 5, device="cuda")
    torch.testing.assert_close(ops.mm(a, b), a @ b)


class Block(torch.nn.Module):
    def __init__(self, width=64, hidden=200):
        super().__init__()
        self.up = tilefuse.nn.Linear(width, hidden, activation="gelu")
        self.down = tilefuse.nn.Linear(hidden, width, bias=False)

    def forward(self, x):
        return self.down(self.up(x), residual=x)


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_compile_fullgraph_matches_eager(backend):
    if backend == "inductor" and not has_triton():
        pytest.skip("inductor needs triton")
    torch.manual_seed(0)
    block = Block().cuda().bfloat16()
    compiled = torch.compile(block, backend=backend, fullgraph=True)
    for lead in ((4, 50), (3, 50)):  # a second size: recompiled or dynamic, either way the same numbers
        x = torch.randn(*lead, 64, device="cuda").bfloat16()
        xe, xc = x.clone().requires_grad_(), x.clone().requires_grad_()
        eager = block(xe)
        eager.float().square().sum().backward()
        grads_eager = [p.grad.clone() for p in block.parameters()] + [xe.grad]
        block.zero_grad()
        out = compiled(xc)
        out.float().square().sum().backward()
        grads = [p.grad.clone() for p in block.parameters()] + [xc.grad]
        block.zero_grad()
        torch.testing.assert_close(out, eager, rtol=0, atol=0)
        for g, ge in zip(grads, grads_eager):
            torch.testing.assert_close(g, ge, rtol=1e-2, atol=1e-2)


def test_nn_linear_drop_in():
    torch.manual_seed(1)
    reference = torch.nn.Sequential(torch.nn.Linear(96, 160), torch.nn.SiLU(), torch.nn.Linear(160, 40)).cuda()
    reference = reference.bfloat16()
    ours = torch.nn.Sequential(tilefuse.nn.Linear.from_torch(reference[0], activation="silu"),
                               tilefuse.nn.Linear.from_torch(reference[2]))
    x = torch.randn(7, 9, 96, device="cuda").bfloat16()
    y = ours(x)
    same = reference(x)
    # the float64 reference from the same bf16 parameters (the modules stay bf16)
    w1, b1, w2, b2 = (p.double() for p in (reference[0].weight, reference[0].bias, reference[2].weight,
                                            reference[2].bias))
    r64 = F.linear(F.silu(F.linear(x.double(), w1, b1)), w2, b2)
    check(y, r64, same, "drop-in MLP")
    # a freshly built module in bf16 on the GPU, as torch.nn.Linear would be
    fresh = tilefuse.nn.Linear(96, 40, device="cuda", dtype=torch.bfloat16)
    check(fresh(x), F.linear(x.double(), fresh.weight.double(), fresh.bias.double()),
          F.linear(x, fresh.weight, fresh.bias), "fresh module")


def test_float32_module_is_refused_with_the_fix():
    module = tilefuse.nn.Linear(16, 8, device="cuda")
    with pytest.raises(tilefuse.errors.TensorArgumentError, match="bfloat16 or float16"):
        module(torch.randn(4, 16, device="cuda"))


def test_float32_module_under_autocast():
    torch.manual_seed(2)
    reference = torch.nn.Linear(64, 48).cuda()
    module = tilefuse.nn.Linear.from_torch(reference, activation="relu")
    x = torch.randn(5, 64, device="cuda", requires_grad=True)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        y = module(x)
        same = torch.relu(reference(x))
    assert y.dtype == torch.bfloat16
    w, b = reference.weight.bfloat16().double(), reference.bias.bfloat16().double()
    check(y, torch.relu(F.linear(x.bfloat16().double(), w, b)), same, "autocast")
    y.float().sum().backward()
    assert reference.weight.grad.dtype == torch.float32 and x.grad.shape == x.shape


def test_gemm_op_with_a_row_major_b_and_gradients():
    a, w, b, r = case((37,), 72, 96, torch.bfloat16, seed=12)
    bmat = w.t().contiguous()  # (k, n) row-major: read through b.t() = w, K-major
    leaves = [t.detach().requires_grad_() for t in (a, bmat, b, r)]
    y = ops.gemm(*leaves, activation="silu")
    ref_in = [t.detach().double().requires_grad_() for t in (a, bmat, b, r)]
    ref = F.silu(ref_in[0] @ ref_in[1] + ref_in[2]) + ref_in[3]
    same = F.silu(a @ bmat + b) + r
    check(y, ref, same, "tilefuse::gemm silu")
    g = torch.randn_like(y)
    (y.float() * g.float()).sum().backward()
    (ref * g.double()).sum().backward()
    for ours, theirs in zip(leaves, ref_in):
        assert ours.grad is not None and ours.grad.shape == theirs.shape
        err = (ours.grad.double() - theirs.grad).abs().max().item()
        assert err <= 3e-2 * theirs.grad.abs().max().item() + 1e-2, f"gemm op gradient error {err:.3e}"
