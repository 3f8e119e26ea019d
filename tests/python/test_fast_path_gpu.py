"""The C++ warm path (tilefuse._torch_ops) on a GPU: from the second call of a signature on, tilefuse.nn.Conv2d's
forward and backward run from C++, and every output and gradient is exactly what the Python path gave and
exactly the float64 reference rounded to the dtype (integer-valued inputs: every sum is exact in fp32)."""
import importlib

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] < 8:
    pytest.skip("needs an sm_80 or newer GPU", allow_module_level=True)

import tilefuse.nn  # noqa: E402
from tilefuse import conv_ops, fast_path  # noqa: E402
from torch_checks import check  # noqa: E402

F = torch.nn.functional
CL = torch.channels_last


def integers(*shape, generator):
    return torch.randint(-1, 2, shape, device="cuda", generator=generator).to(torch.bfloat16)


def exact(ours, reference, what):
    expected = reference.to(torch.bfloat16)
    bad = (ours.float() != expected.float()).sum().item()
    assert bad == 0, f"{what}: {bad} of {ours.numel()} elements differ from the float64 reference"


@pytest.mark.parametrize("stride,bias,residual", [(1, True, False), (2, False, False), (1, False, True),
                                                  (2, True, True)])
def test_training_steps_run_from_cpp_and_stay_exact(stride, bias, residual):
    assert fast_path.available(), fast_path.why_unavailable()
    g = torch.Generator(device="cuda").manual_seed(stride * 10 + bias * 2 + residual)
    module = tilefuse.nn.Conv2d(64, 96, 3, stride=stride, padding=1, bias=bias, device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        module.weight.copy_(integers(96, 64, 3, 3, generator=g))
        if bias:
            module.bias.copy_(integers(96, generator=g))
    module = module.to(memory_format=CL)
    fast = conv_ops.fast_conv(module.stride, module._explicit_padding, module.dilation, "none", "require")
    before = dict(fast.stats())
    for step in range(4):
        x = integers(3, 64, 17, 15, generator=g).contiguous(memory_format=CL).requires_grad_()
        out_shape = F.conv2d(x.detach(), module.weight.detach(), stride=stride, padding=1).shape
        r = integers(*out_shape, generator=g).contiguous(memory_format=CL).requires_grad_() if residual else None
        y = module(x, r)
        grad = integers(*y.shape, generator=g).contiguous(memory_format=CL)
        inputs = [x, module.weight] + ([module.bias] if bias else []) + ([r] if residual else [])
        grads = torch.autograd.grad(y, inputs, grad)
        x64, w64, g64 = x.detach().double(), module.weight.detach().double(), grad.double()
        ref = F.conv2d(x64, w64, module.bias.detach().double() if bias else None, stride=stride, padding=1)
        exact(y, ref + (r.detach().double() if residual else 0), f"step {step} y")
        assert y.is_contiguous(memory_format=CL)
        exact(grads[0], torch.nn.grad.conv2d_input(x.shape, w64, g64, stride=stride, padding=1), f"step {step} grad x")
        exact(grads[1], torch.nn.grad.conv2d_weight(x64, w64.shape, g64, stride=stride, padding=1),
              f"step {step} grad w")
        if bias:
            exact(grads[2], g64.sum((0, 2, 3)), f"step {step} grad bias")
        if residual:
            exact(grads[-1], g64, f"step {step} grad residual")
    stats = fast.stats()
    # step 0 plans through Python; steps 1-3 run from C++, their backwards by warm calls
    assert stats["forwards"] - before["forwards"] == 3, stats
    assert stats["backwards"] - before["backwards"] == 3, stats


def test_inference_with_an_activation_runs_from_cpp_and_training_with_it_takes_python():
    g = torch.Generator(device="cuda").manual_seed(7)
    module = tilefuse.nn.Conv2d(32, 64, 1, activation="relu", device="cuda", dtype=torch.bfloat16).to(memory_format=CL)
    x = torch.randn(2, 32, 9, 9, device="cuda", generator=g).bfloat16().contiguous(memory_format=CL)
    fast = conv_ops.fast_conv((1, 1), (0, 0), (1, 1), "relu", "require")
    forwards = fast.stats()["forwards"]
    with torch.no_grad():
        first = module(x)
        second = module(x)
    assert fast.stats()["forwards"] - forwards >= 1  # this test's calls, not an earlier test's
    ref = torch.relu(F.conv2d(x.double(), module.weight.double(), module.bias.double()))
    check(first, ref, torch.relu(F.conv2d(x, module.weight, module.bias)), "relu conv from C++")
    assert torch.equal(first, second)
    misses = fast.stats()["misses"]
    y = module(x.requires_grad_())  # relu's backward masks by the output: the Python op's
    assert fast.stats()["misses"] == misses + 1
    assert torch.equal(y, first)


def test_a_contiguous_weight_and_a_stem_take_the_python_path_and_stay_correct():
    g = torch.Generator(device="cuda").manual_seed(3)
    stem = tilefuse.nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False, device="cuda", dtype=torch.bfloat16)
    stem = stem.to(memory_format=CL)
    reference = torch.nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False, device="cuda", dtype=torch.bfloat16)
    reference.weight = stem.weight
    for _ in range(3):
        x = torch.randn(2, 3, 32, 32, device="cuda", generator=g).bfloat16().contiguous(memory_format=CL)
        torch.testing.assert_close(stem(x).float(), reference(x).float(), rtol=2e-2, atol=5e-2)
    plain = tilefuse.nn.Conv2d(16, 16, 3, padding=1, bias=False, device="cuda", dtype=torch.bfloat16)  # contiguous w
    for _ in range(3):
        x = torch.randn(2, 16, 8, 8, device="cuda", generator=g).bfloat16().contiguous(memory_format=CL)
        torch.testing.assert_close(plain(x).float(), F.conv2d(x, plain.weight, padding=1).float(), rtol=2e-2, atol=5e-2)


def test_conv2d_and_gemm_run_repeat_from_the_cpp_table_with_new_tensors():
    import tilefuse
    from tilefuse.epilogue import relu

    g = torch.Generator(device="cuda").manual_seed(11)
    conv = tilefuse.Conv2d(padding=1, epilogue=lambda acc, bias, residual: relu(acc + bias + residual))
    w = integers(32, 16, 3, 3, generator=g).contiguous(memory_format=CL)
    b = integers(32, generator=g)
    for step in range(3):
        x = integers(2, 16, 9, 7, generator=g).contiguous(memory_format=CL)
        r = integers(2, 32, 9, 7, generator=g).contiguous(memory_format=CL)
        y = conv.run(x, w, bias=b, residual=r)
        ref = torch.relu(F.conv2d(x.double(), w.double(), b.double(), padding=1) + r.double())
        exact(y, ref, f"Conv2d.run call {step}")
        assert y.is_contiguous(memory_format=CL)
        if step == 0:
            assert conv._table is not None  # the first call handed itself to C++
    if torch.cuda.get_device_capability()[0] != 9:
        return  # the Python GEMM runs the Hopper kernel only
    gemm = tilefuse.Gemm(lambda acc, bias: acc + bias)
    bias = integers(96, generator=g)
    for step in range(3):
        a = integers(40, 64, generator=g)
        bt = integers(96, 64, generator=g)
        d = gemm.run(a, bt.t(), bias=bias)
        exact(d, a.double() @ bt.double().t() + bias.double(), f"Gemm.run call {step}")
    assert gemm._table is not None


def test_copied_gemm_calls_repeat_from_the_cpp_table_with_their_packing_launches():
    """Operands the planner copies into the Hopper kernel's layouts (an odd k; a row-major b; a's rows 2 bytes
    off 16; a b shared by the batch, odd k): from the second call on the C++ table packs the caller's new tensors and
    runs the kernel on the copies, exactly."""
    if torch.cuda.get_device_capability()[0] != 9:
        pytest.skip("the Python GEMM copies operands for the Hopper kernel only")
    import tilefuse

    g = torch.Generator(device="cuda").manual_seed(13)
    gemm = tilefuse.Gemm(lambda acc, bias: acc + bias)
    bias = integers(72, generator=g)
    cases = {
        "odd k": lambda: (integers(37, 61, generator=g), integers(72, 61, generator=g).t()),
        "b row-major": lambda: (integers(37, 64, generator=g), integers(64, 72, generator=g)),
        "a 2 bytes off": lambda: (integers(37 * 64 + 1, generator=g)[1:].view(37, 64), integers(72, 64, generator=g).t()),
        "b shared by a batch, odd k": lambda: (integers(3, 37, 61, generator=g),
                                               integers(72, 61, generator=g).t().expand(3, -1, -1)),
    }
    for name, make in cases.items():
        for step in range(3):
            a, b = make()
            # the first call through run() (Python: checks, plans, copies, hands the call over), later ones
            # straight from the C++ table, which must have them
            d = gemm.run(a, b, bias=bias) if step == 0 else fast_path.repeat_run(gemm, a, b, {"bias": bias})
            assert d is not None, f"{name}, call {step}: the C++ table does not have the copied call"
            exact(d, torch.matmul(a.double(), b.double()) + bias.double(), f"{name}, call {step}")
    assert gemm.plan(*cases["odd k"](), bias=bias).describe(), "describe() of a copied plan"


def test_the_frozen_graphs_ops_and_linear_without_autograd_run_from_cpp():
    importlib.import_module("tilefuse.inference_ops")  # registers the ops (C++ kernels over the fast paths)
    import tilefuse.ops as ops

    g = torch.Generator(device="cuda").manual_seed(5)
    x = integers(2, 32, 8, 8, generator=g).contiguous(memory_format=CL)
    w = integers(48, 32, 3, 3, generator=g).contiguous(memory_format=CL)
    b = integers(48, generator=g)
    r = integers(2, 48, 8, 8, generator=g).contiguous(memory_format=CL)
    op = torch.ops.tilefuse.conv2d_inference
    for residual_first in (False, True):
        fast = conv_ops.fast_conv([1, 1], [1, 1], [1, 1], "relu", "require", "add_act" if residual_first else "forward")
        before = fast.stats()["forwards"]
        z = F.conv2d(x.double(), w.double(), b.double(), padding=1)
        ref = torch.relu(z + r.double()) if residual_first else torch.relu(z) + r.double()
        for step in range(3):
            exact(op(x, w, b, r, [1, 1], [1, 1], [1, 1], "relu", residual_first), ref, f"conv2d_inference {step}")
        assert fast.stats()["forwards"] - before == 2  # the first call plans through Python
    if torch.cuda.get_device_capability()[0] != 9:
        return
    a = integers(3, 5, 64, generator=g)
    wl = integers(80, 64, generator=g)
    bl = integers(80, generator=g)
    ref = torch.relu(a.double() @ wl.double().t() + bl.double())
    with torch.no_grad():
        for step in range(3):
            exact(ops.linear(a, wl, bl, None, "relu"), ref, f"ops.linear {step}")
            exact(torch.ops.tilefuse.linear_inference(a, wl, bl, None, "relu"), ref, f"linear_inference {step}")
            exact(torch.ops.tilefuse.linear(a, wl, bl, None, "relu"), ref, f"tilefuse::linear {step}")
    assert ops.fast_linear("relu").stats()["hits"] >= 6


def test_linear_into_a_block_of_rows_runs_from_cpp_and_a_misfit_out_goes_back_to_python():
    """tilefuse.overlap's GEMMs store into blocks of rows of a larger output through the C++ warm path."""
    if torch.cuda.get_device_capability()[0] != 9:
        pytest.skip("the linear's warm path is the Hopper GEMM's")
    import tilefuse.ops as ops

    g = torch.Generator(device="cuda").manual_seed(9)
    x, w, b = integers(48, 64, generator=g), integers(72, 64, generator=g), integers(72, generator=g)
    ref = torch.relu(x.double() @ w.double().t() + b.double())
    big = torch.full((3 * 48, 72), float("nan"), dtype=torch.bfloat16, device="cuda")
    with torch.no_grad():
        ops._linear_impl(x, w, b, None, "relu", out=big[48:96])  # the first call: Python checks and hands it over
        fast = ops.fast_linear("relu")
        hits = fast.stats()["hits"]
        assert fast(x, w, b, None, big[96:]) is not None
        assert fast.stats()["hits"] == hits + 1
        for block in (big[48:96], big[96:]):
            exact(block, ref, "a block of rows")
        assert torch.isnan(big[:48].float()).all(), "a store outside its block of rows"
        assert fast(x, w, b, None, big[:47]) is None  # another shape: Python's check says why
        assert fast(x, w, b, None, big[:48].float()) is None
        strided = torch.empty(72, 48, dtype=torch.bfloat16, device="cuda").t()
        assert fast(x, w, b, None, strided) is None  # the right shape, not contiguous
        assert fast(x, w, b, None, x.new_empty(48, 72)) is not None
        wide = torch.empty(48, 72 + 64, dtype=torch.bfloat16, device="cuda")
        assert fast(x, w, b, None, wide[:, :72]) is None  # a view of a wider matrix
        shared = torch.empty(48 * 72, dtype=torch.bfloat16, device="cuda")
        x_in_it = shared[:48 * 64].view(48, 64).copy_(x)
        assert fast(x_in_it, w, b, None, shared.view(48, 72)) is None  # out overlaps x


def test_compiled_training_runs_the_backward_ops_from_cpp_and_stays_exact():
    from tilefuse import fast_path as fp

    g = torch.Generator(device="cuda").manual_seed(21)
    model = torch.nn.Sequential(
        tilefuse.nn.Conv2d(32, 64, 3, padding=1, bias=False, device="cuda", dtype=torch.bfloat16),
        tilefuse.nn.Conv2d(64, 48, 3, stride=2, padding=1, bias=True, device="cuda", dtype=torch.bfloat16))
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(integers(*p.shape, generator=g))
    model = model.to(memory_format=CL)
    compiled = torch.compile(model, backend="aot_eager", fullgraph=True)
    before = fp.module().backward_kernel_stats()
    for step in range(3):
        x = integers(2, 32, 12, 10, generator=g).contiguous(memory_format=CL).requires_grad_()
        y = compiled(x)
        grad = integers(*y.shape, generator=g).contiguous(memory_format=CL)
        gx, g0, g1 = torch.autograd.grad(y, [x, model[0].weight, model[1].weight], grad)
        x64, w0, w1, b1 = (t.detach().double() for t in (x, model[0].weight, model[1].weight, model[1].bias))
        h = F.conv2d(x64, w0, padding=1)
        exact(y, F.conv2d(h.to(torch.bfloat16).double(), w1, b1, stride=2, padding=1), f"step {step} y")
        gh = torch.nn.grad.conv2d_input(h.shape, w1, grad.double(), stride=2, padding=1)
        exact(g1, torch.nn.grad.conv2d_weight(h.to(torch.bfloat16).double(), w1.shape, grad.double(), stride=2,
                                              padding=1), f"step {step} grad w1")
        gh = gh.to(torch.bfloat16).double()
        exact(g0, torch.nn.grad.conv2d_weight(x64, w0.shape, gh, padding=1), f"step {step} grad w0")
        exact(gx, torch.nn.grad.conv2d_input(x.shape, w0, gh, padding=1), f"step {step} grad x")
    after = fp.module().backward_kernel_stats()
    # step 0's backward ops plan through Python; steps 1 and 2 run from the C++ tables (two convs each)
    assert after["dgrad_hits"] - before["dgrad_hits"] >= 3, (before, after)
    assert after["wgrad_hits"] - before["wgrad_hits"] >= 4, (before, after)
