"""tilefuse.Gemm on an H100 / H200 against PyTorch: random shapes (tile multiples and not), bf16 and fp16,
epilogues with bias, activations, residuals, scalars, coordinates and reductions, batches, CUDA-graph
capture and the torch stream. Every output is compared element by element with a float64 reference; our
error must stay within a small multiple of PyTorch's own error in the same dtype. Outputs land in memory
that was filled with NaN just before (the caching allocator hands the freed block back)."""

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] != 9:
    pytest.skip("needs an sm_90 GPU (H100 / H200) for torch", allow_module_level=True)

import tilefuse  # noqa: E402
from torch_checks import DLPackOnly, check, poison  # noqa: E402
from tilefuse.epilogue import amax, gelu_tanh, relu, row, sigmoid, tanh, where  # noqa: E402

SHAPES = [(128, 256, 64), (1, 8, 8), (200, 136, 72), (1000, 1000, 1000), (257, 384, 520), (4096, 1024, 256)]


def operands(m, n, k, dtype, batch=None, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    lead = (batch,) if batch is not None else ()
    a = torch.randn(*lead, m, k, device="cuda", generator=g).to(dtype)
    w = torch.randn(*lead, n, k, device="cuda", generator=g).to(dtype)
    return a, w.transpose(-1, -2)  # b = w^T: (k, n), K-major


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("m,n,k", SHAPES)
def test_plain(m, n, k, dtype):
    a, b = operands(m, n, k, dtype, seed=m + n + k)
    poison()
    d = tilefuse.Gemm().run(a, b)
    assert d.shape == (m, n) and d.dtype == dtype
    check(d, a.double() @ b.double(), a @ b, f"plain {m}x{n}x{k} {dtype}")


@pytest.mark.parametrize("m,n,k", SHAPES[2:])
def test_bias_relu_alpha_residual(m, n, k):
    a, b = operands(m, n, k, torch.bfloat16, seed=7)
    bias = torch.randn(n, device="cuda").to(torch.bfloat16)
    residual = torch.randn(m, n, device="cuda").to(torch.bfloat16)

    def epi(acc, bias, residual, alpha):
        return relu(alpha * acc + bias) + residual

    poison()
    d = tilefuse.Gemm(epilogue=epi).run(a, b, bias=bias, residual=residual, alpha=0.5)
    ref = torch.relu(0.5 * (a.double() @ b.double()) + bias.double()) + residual.double()
    same = torch.relu(0.5 * (a @ b) + bias) + residual
    check(d, ref, same, f"bias relu residual {m}x{n}x{k}")


def test_gelu_column_bias_and_fp32_output():
    m, n, k = 300, 520, 264
    a, b = operands(m, n, k, torch.float16, seed=3)
    scale = torch.randn(m, 1, device="cuda").to(torch.float16)
    poison()
    d = tilefuse.Gemm(epilogue=lambda acc, scale: gelu_tanh(acc * scale), out_dtype="float32").run(a, b, scale=scale)
    assert d.dtype == torch.float32
    x = (a.double() @ b.double()) * scale.double()
    ref = torch.nn.functional.gelu(x, approximate="tanh")
    same = torch.nn.functional.gelu((a @ b).float() * scale.float(), approximate="tanh")
    check(d, ref, same, "gelu_tanh(acc * scale)")


def test_region_activation_by_row():
    m, n, k = 384, 256, 128
    a, b = operands(m, n, k, torch.bfloat16, seed=5)

    def region(acc, r0):
        return where(row() < r0, sigmoid(acc), tanh(acc))

    poison()
    d = tilefuse.Gemm(epilogue=region).run(a, b, r0=100.0)
    x = a.double() @ b.double()
    rows = torch.arange(m, device="cuda").view(-1, 1)
    ref = torch.where(rows < 100, torch.sigmoid(x), torch.tanh(x))
    y = a @ b
    same = torch.where(rows < 100, torch.sigmoid(y), torch.tanh(y))
    check(d, ref, same, "where(row() < r0, sigmoid, tanh)")


def test_amax_output_and_dict_results():
    m, n, k = 500, 392, 200
    a, b = operands(m, n, k, torch.bfloat16, seed=9)

    def epi(acc):
        y = relu(acc)
        return {"D": y, "col_amax": amax(y, 0)}

    poison()
    out = tilefuse.Gemm(epilogue=epi).run(a, b)
    ref = torch.relu(a.double() @ b.double())
    check(out["D"], ref, torch.relu(a @ b), "relu with amax")
    col = out["col_amax"]
    assert col.shape == (n,) and col.dtype == torch.float32
    assert torch.allclose(col.double(), ref.abs().amax(0), rtol=2e-2, atol=1e-2)


def test_batched_with_shared_b_and_batched_bias():
    batch, m, n, k = 3, 130, 200, 96
    a, _ = operands(m, n, k, torch.bfloat16, batch=batch, seed=11)
    _, b = operands(m, n, k, torch.bfloat16, seed=12)  # one B for the whole batch
    bias = torch.randn(batch, 1, n, device="cuda").to(torch.bfloat16)  # one bias per batch entry
    poison()
    d = tilefuse.Gemm(epilogue=lambda acc, bias: acc + bias).run(a, b, bias=bias)
    assert d.shape == (batch, m, n)
    ref = a.double() @ b.double() + bias.double()
    check(d, ref, a @ b + bias, "batched")


def test_runs_on_the_current_stream_and_in_a_cuda_graph():
    m, n, k = 512, 512, 256
    a, b = operands(m, n, k, torch.bfloat16, seed=13)
    gemm = tilefuse.Gemm(epilogue=lambda acc: relu(acc))
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        d = gemm.run(a, b)  # plans, compiles, loads
        # The side stream held ~25 ms, then a rewritten: a kernel launched on any other stream would run before
        # the rewrite and read the old a.
        torch.cuda._sleep(50_000_000)
        a.copy_(-a)
        after = gemm.run(a, b)
    stream.synchronize()
    check(d, torch.relu(-a.double() @ b.double()), torch.relu(-a @ b), "side stream")
    check(after, torch.relu(a.double() @ b.double()), torch.relu(a @ b), "side stream, after a was rewritten on it")
    a.copy_(-a)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        captured = gemm.run(a, b)
    a.copy_(-a)
    graph.replay()
    torch.cuda.synchronize()
    check(captured, torch.relu(a.double() @ b.double()), torch.relu(a @ b), "graph replay")


def test_describe():
    a, b = operands(256, 256, 64, torch.bfloat16)
    op = tilefuse.Gemm().plan(a, b)
    assert "sm90 TMA + WGMMA" in op.describe() and "tile" in op.describe()


@pytest.mark.parametrize("m,n,k", [(4095, 4097, 4093), (127, 255, 8191), (33, 17, 5), (1, 64, 100), (40, 24, 0)])
def test_any_layout_and_odd_k_run(m, n, k):
    """Operands TMA cannot describe as given (odd k, a row-major b, a transposed a, 2-byte offsets, a view with no
    unit stride, an expanded b) run, as torch.matmul's do: copied into the kernel's layouts with k zero-padded,
    with the epilogue applied."""
    g = torch.Generator(device="cuda").manual_seed(m + n + k)
    a = torch.randn(m, k + 1, device="cuda", generator=g).to(torch.bfloat16)[:, 1:]  # a 2-byte offset
    b_row_major = torch.randn(k, n, device="cuda", generator=g).to(torch.bfloat16)
    bias = torch.randn(n, device="cuda", generator=g).to(torch.bfloat16)
    gemm = tilefuse.Gemm(epilogue=lambda acc, bias: relu(acc + bias))
    strided = torch.randn(m, 2 * k, device="cuda", generator=g).to(torch.bfloat16)[:, ::2]  # no unit stride
    expanded = bias[:1].reshape(1, 1).expand(k, n) if n > 1 and k > 1 else b_row_major  # rows that overlap
    for a_, b_ in ((a, b_row_major), (a.t().contiguous().t(), b_row_major.t().contiguous().t()),
                   (strided, b_row_major), (a, expanded)):
        poison()
        d = gemm.run(a_, b_, bias=bias)
        ref = torch.relu(a_.double() @ b_.double() + bias.double())
        check(d, ref, torch.relu(a_ @ b_ + bias), f"{m}x{n}x{k} a {tuple(a_.stride())} b {tuple(b_.stride())}")


@pytest.mark.parametrize("m,n,k,layouts", [(200, 136, 72, "tn"), (257, 384, 520, "nn"), (1000, 1000, 1000, "tt"),
                                            (127, 255, 8191, "nt"), (256, 256, 16384, "tn"), (33, 17, 5, "tn"),
                                            (40, 24, 0, "tn")])
def test_the_sm80_kernel_from_python(m, n, k, layouts):
    """kernel="sm80": the mma.sync kernel the planner picks on GPUs other than sm_90, forced here: every layout
    (t: row-major, n: column-major, for A then B), unaligned k (the element-wise path), split-K with its pass
    (127 x 255 x 8191 element-wise, 256 x 256 x 16384 aligned), k = 0, a fused epilogue; the first call, then a
    warm call on new tensors of the same signature (its pointers patched), each against float64."""
    g = torch.Generator(device="cuda").manual_seed(m + n + k)

    def tensors():
        a = torch.randn(m, k, device="cuda", generator=g).to(torch.bfloat16)
        b = torch.randn(k, n, device="cuda", generator=g).to(torch.bfloat16)
        if layouts[0] == "n":
            a = a.t().contiguous().t()
        if layouts[1] == "n":
            b = b.t().contiguous().t()
        bias = torch.randn(n, device="cuda", generator=g).to(torch.bfloat16)
        residual = torch.randn(m, n, device="cuda", generator=g).to(torch.bfloat16)
        return a, b, bias, residual

    gemm = tilefuse.Gemm(epilogue=lambda acc, bias, residual: relu(acc + bias) + residual, kernel="sm80")
    a, b, bias, residual = tensors()
    op = gemm.plan(a, b, bias=bias, residual=residual)
    assert op.describe().startswith("sm80 mma.sync GEMM"), op.describe()
    if (m, n) in ((127, 255), (256, 256)):
        assert op.split_k > 1 and "split-K" in op.describe(), op.describe()
    for call in range(2):
        if call:
            a, b, bias, residual = tensors()
        poison()
        d = gemm.run(a, b, bias=bias, residual=residual)
        ref = torch.relu(a.double() @ b.double() + bias.double()) + residual.double()
        check(d, ref, torch.relu(a @ b + bias) + residual, f"sm80 {layouts} {m}x{n}x{k} call {call}")
    assert len(gemm._warm) == 1  # the second call was the first's warm call


def test_the_sm80_kernel_batched_with_a_shared_b():
    a, b = operands(96, 80, 64, torch.float16, batch=3, seed=5)
    b = b[:1].expand(3, -1, -1)
    poison()
    d = tilefuse.Gemm(kernel="sm80").run(a, b)
    check(d, a.double() @ b.double(), a @ b, "sm80 batched, shared b")


def test_operands_are_copied_by_the_packing_kernel_exactly():
    """hopper_operands on CUDA tensors runs gemm::Gemm's packing kernel (tilefuse.gemm_pack): every layout, odd k,
    strided and offset views, a shared b, k = 0 and rows that are not a multiple of its 64 x 64 tile give the
    bits torch's own pad gives, zeros past k included (into memory poisoned first)."""
    import torch.nn.functional as F

    from tilefuse.gemm import hopper_operands

    def packed(t, kp):  # torch's copy of t (..., rows, k): row-major, zeros past k
        return F.pad(t, (0, kp - t.shape[-1])).contiguous()

    g = torch.Generator(device="cuda").manual_seed(3)

    def rand(*shape):
        return torch.randn(*shape, device="cuda", generator=g).to(torch.bfloat16)

    cases = {
        "odd k": (rand(70, 13), rand(45, 13).t()),
        "row-major b": (rand(64, 40), rand(40, 33)),
        "transposed a": (rand(40, 97).t(), rand(33, 40).t()),
        "batched, odd k, strided": (rand(3, 70, 26)[:, :, ::2], rand(3, 13, 50)),
        "offset view": (rand(100, 1001)[1:, 3:], rand(1001, 64)[3:]),
        "shared b (batch stride 0), odd k": (rand(3, 36, 21), rand(1, 50, 21).transpose(-1, -2).expand(3, 21, 50)),
        "k = 0": (rand(6, 0), rand(0, 5)),
        "fp16, long k": (rand(127, 8191).half(), rand(255, 8191).half().t()),
    }
    for name, (a, b) in cases.items():
        poison()
        a2, b2 = hopper_operands(a, b)
        kp = a2.shape[-1]
        assert kp % 8 == 0 and kp >= max(a.shape[-1], 8), name
        assert torch.equal(a2, packed(a, kp)), name
        assert torch.equal(b2.transpose(-1, -2), packed(b.transpose(-1, -2), kp)), name
        assert a2.stride(-1) == 1 and b2.stride(-2) == 1, name
        if "shared b" in name:
            assert b2.stride(0) == 0, "a matrix shared by the batch is copied once"


@pytest.mark.parametrize("m,n,k,batch", [(1, 4096, 4096, None), (8, 1000, 1001, None), (3, 77, 7, None),
                                          (5, 200, 520, 3), (8, 8, 4104, None), (9, 300, 777, None),
                                          (16, 4096, 4096, None), (13, 64, 33, 2)])
def test_a_few_rows_run_the_skinny_kernel(m, n, k, batch):
    """m <= 16 with A row-major and B K-major, rows 16-byte aligned: the skinny kernel (B streamed into mma.sync
    once; forced, as the planner picks it only where its blocks fill the SMs), every m, n off its 8-column
    blocks, a k tail past its 32-element chunks, batches; a fused epilogue with a scalar; the first call and a warm
    call on new tensors (its pointers patched), against float64."""
    g = torch.Generator(device="cuda").manual_seed(m + n + k)
    lead = (batch,) if batch else ()
    kp = -(-k // 8) * 8  # rows 16 bytes apart: k padded in the storage, the view k wide

    def tensors():
        a = torch.randn(*lead, m, kp, device="cuda", generator=g).to(torch.bfloat16)[..., :k]
        w = torch.randn(*lead, n, kp, device="cuda", generator=g).to(torch.bfloat16)[..., :k]
        bias = torch.randn(n, device="cuda", generator=g).to(torch.bfloat16)
        residual = torch.randn(*lead, m, n, device="cuda", generator=g).to(torch.bfloat16)
        return a, w.transpose(-1, -2), bias, residual

    gemm = tilefuse.Gemm(epilogue=lambda acc, bias, residual, alpha: relu(alpha * acc + bias) + residual,
                         kernel="skinny")
    a, b, bias, residual = tensors()
    op = gemm.plan(a, b, bias=bias, residual=residual, alpha=0.5)
    assert op.describe().startswith(f"skinny kernel: m = {m} rows"), op.describe()
    for call, alpha in enumerate((0.5, -1.25)):
        if call:
            a, b, bias, residual = tensors()
        poison()
        d = gemm.run(a, b, bias=bias, residual=residual, alpha=alpha)
        ref = torch.relu(alpha * (a.double() @ b.double()) + bias.double()) + residual.double()
        check(d, ref, torch.relu(alpha * (a @ b) + bias) + residual, f"skinny {m}x{n}x{k} batch {batch} call {call}")
    assert len(gemm._warm) == 1


def test_the_skinny_kernel_chosen_forced_or_refused():
    """The planner picks the skinny kernel for a few rows whose blocks fill the SMs (1 x 4096 x 1024), not for few
    blocks over a long K (8 x 256 x 16384: the Hopper kernel splits it); kernel="skinny" runs where it can and is
    refused with the planner's reason where it cannot (m past 16)."""
    a, b = operands(1, 4096, 1024, torch.bfloat16)
    assert tilefuse.Gemm().plan(a, b).describe().startswith("skinny kernel"), tilefuse.Gemm().plan(a, b).describe()
    d = tilefuse.Gemm().run(a, b)
    check(d, a.double() @ b.double(), a @ b, "skinny, the planner's choice")
    a, b = operands(8, 256, 16384, torch.bfloat16)
    assert not tilefuse.Gemm().plan(a, b).describe().startswith("skinny"), tilefuse.Gemm().plan(a, b).describe()
    a, b = operands(4, 264, 128, torch.float16)
    d = tilefuse.Gemm(kernel="skinny").run(a, b)
    check(d, a.double() @ b.double(), a @ b, "forced skinny fp16")
    big_a, big_b = operands(17, 64, 64, torch.bfloat16)
    with pytest.raises(tilefuse.TensorArgumentError, match="m = 17 is not 1 to 16"):
        tilefuse.Gemm(kernel="skinny").run(big_a, big_b)


def test_copied_operands_have_a_warm_call():
    """A signature whose operands are copied (odd k) repeats as a warm call that copies again: new tensors of
    the same signature give their own results, and the call after the first takes no planning."""
    from tilefuse.gemm import CopyingWarmCall
    m, n, k = 127, 255, 8191
    gemm = tilefuse.Gemm(epilogue=lambda acc, bias: relu(acc + bias))
    bias = torch.randn(n, device="cuda").to(torch.bfloat16)
    for seed in range(3):
        a, b = operands(m, n, k, torch.bfloat16, seed=seed)
        poison()
        d = gemm.run(a, b, bias=bias)
        check(d, torch.relu(a.double() @ b.double() + bias.double()), torch.relu(a @ b + bias), f"copied call {seed}")
        if seed == 0:  # later calls take the warm path: planning again would fail here
            assert [type(w) for w in gemm._warm.values()] == [CopyingWarmCall]
            gemm._first_call = None


@pytest.mark.parametrize("m,n,k", [(128, 512, 8192), (256, 256, 16384), (64, 64, 65536), (66, 66, 2048)])
def test_split_k_summed_in_the_kernel(m, n, k):
    """Skinny outputs with a long K: the planner splits K in the kernel (its describe() says so), the sums and
    tickets zeroed per call; the first call, warm calls (C++ fast path) and a fused epilogue agree with float64."""
    a, b = operands(m, n, k, torch.bfloat16, seed=m + k)
    bias = torch.randn(n, device="cuda").to(torch.bfloat16)
    residual = torch.randn(m, n, device="cuda").to(torch.bfloat16)
    gemm = tilefuse.Gemm(epilogue=lambda acc, bias, residual: gelu_tanh(acc + bias) + residual)
    op = gemm.plan(a, b, bias=bias, residual=residual)
    assert op.split_k >= 2 and "summed in the kernel" in op.describe(), op.describe()
    ref = torch.nn.functional.gelu(a.double() @ b.double() + bias.double(), approximate="tanh") + residual.double()
    same = torch.nn.functional.gelu(a @ b + bias, approximate="tanh") + residual
    for call in range(3):  # the first call, then warm ones (the workspace zeroed each time)
        poison()
        d = gemm.run(a, b, bias=bias, residual=residual)
        check(d, ref, same, f"split {op.split_k} {m}x{n}x{k} call {call}")


def test_warm_call_is_fast():
    import time
    a, b = operands(256, 256, 64, torch.bfloat16)
    gemm = tilefuse.Gemm(epilogue=lambda acc: relu(acc))
    gemm.run(a, b)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(20):
        gemm.run(a, b)
    torch.cuda.synchronize()
    per_call_ms = (time.perf_counter() - start) / 20 * 1e3
    print(f"warm tilefuse.Gemm.run: {per_call_ms:.3f} ms per call (host + a small kernel)")
    assert per_call_ms < 5.0


def test_warm_calls_patch_new_pointers_scalars_and_tensor_maps():
    """Calls after the first with the same signature skip the checks and re-encode only the tensor maps of
    new pointers: every call's own tensors and scalar must be used."""
    gemm = tilefuse.Gemm(epilogue=lambda acc, bias, alpha: relu(alpha * acc + bias))
    for seed, alpha in ((1, 0.5), (2, -2.0), (3, 1.0)):
        a, b = operands(300, 264, 136, torch.bfloat16, seed=seed)
        bias = torch.randn(264, device="cuda").to(torch.bfloat16)
        poison()
        d = gemm.run(a, b, bias=bias, alpha=alpha)
        check(d, torch.relu(alpha * (a.double() @ b.double()) + bias.double()),
              torch.relu(alpha * (a @ b) + bias), f"warm call {seed}")
    assert len(gemm._warm) == 1


def test_dlpack_operands_and_arguments():
    a, b = operands(256, 128, 64, torch.bfloat16, seed=9)
    bias = torch.randn(128, device="cuda").to(torch.bfloat16)
    gemm = tilefuse.Gemm(epilogue=lambda acc, bias: relu(acc + bias))
    d = gemm.run(DLPackOnly(a), DLPackOnly(b), bias=DLPackOnly(bias))
    check(d, torch.relu(a.double() @ b.double() + bias.double()), torch.relu(a @ b + bias), "DLPack operands")


def test_out_stores_into_a_block_of_rows_first_and_warm_call():
    """out= stores D into a caller's tensor (a block of rows of a larger output, as tilefuse.overlap does), on the
    first call and on warm calls alike; rows outside the block keep their poison; a mismatched out is refused."""
    m, n, k = 136, 200, 72
    gemm = tilefuse.Gemm()
    whole = torch.full((3 * m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    for block in (1, 2, 0):  # first call, then warm calls with new pointers
        a, b = operands(m, n, k, torch.bfloat16, seed=30 + block)
        target = whole[block * m:(block + 1) * m]
        assert gemm.run(a, b, out=target).data_ptr() == target.data_ptr()
        check(target, a.double() @ b.double(), a @ b, f"out block {block}")  # (not against gemm.run's own D)
        assert torch.equal(target, gemm.run(a, b))
        if block == 1:
            assert torch.isnan(whole[2 * m:]).all() and torch.isnan(whole[:m]).all()
    for bad, why in ((whole[:m, :n - 8], "shape"), (whole[:m].float(), "dtype"), (whole[:m].t().contiguous().t(),
                                                                                   "contiguous")):
        with pytest.raises(tilefuse.errors.TensorArgumentError, match="out must be a contiguous tensor of shape"):
            gemm.run(a, b, out=bad)


@pytest.mark.parametrize("m,n,k,batch", [(0, 40, 24, None), (24, 0, 40, None), (0, 0, 0, None), (16, 24, 8, 0)])
def test_empty_problems_return_torchs_empty_results(m, n, k, batch):
    """m, n or the batch 0: as torch.matmul, an empty result (and reductions at their identity), no kernel."""
    a, b = operands(m, n, k, torch.bfloat16, batch=batch)
    d = tilefuse.Gemm().run(a, b)
    assert d.shape == (a @ b).shape and d.dtype == torch.bfloat16 and d.is_cuda
    bias = torch.randn(n, device="cuda").to(torch.bfloat16)

    def epi(acc, bias):
        y = relu(acc + bias)
        return {"D": y, "colmax": amax(y, 0)}

    if batch is None:
        got = tilefuse.Gemm(epilogue=epi).run(a, b, bias=bias)
        assert got["D"].shape == (m, n) and got["colmax"].shape == (n,)
        if m == 0:  # max |y| over no rows: the identity, 0
            assert torch.equal(got["colmax"], torch.zeros(n, device="cuda"))
    with pytest.raises(tilefuse.errors.TensorArgumentError, match="no plan"):
        tilefuse.Gemm().plan(a, b)


def test_d_stored_by_tma_or_by_the_lanes():
    """D leaves by TMA stores where it is aligned for them (gemm::encode_sm90_store's rule, from Python too) and
    by the lanes' stores where not (n not a multiple of 8): a new D, an `out` block of a larger tensor (new
    pointers re-encode D's tensor map) and a batched D all agree with float64; an `out` off 16 bytes is refused."""
    gemm = tilefuse.Gemm(epilogue=lambda acc: relu(acc))
    for n in (512, 257):
        a, b = operands(256, n, 128, torch.bfloat16, seed=n)
        ref, same = torch.relu(a.double() @ b.double()), torch.relu(a @ b)
        poison()
        check(gemm.run(a, b), ref, same, f"new D, n = {n}")
        storage = torch.empty(3 * 256 * n, device="cuda", dtype=torch.bfloat16)
        for block in range(3):  # the first call, then warm calls with new pointers
            out = storage[block * 256 * n:(block + 1) * 256 * n].view(256, n)
            out.fill_(float("nan"))
            d = gemm.run(a, b, out=out)
            assert d.data_ptr() == out.data_ptr()
            check(d, ref, same, f"out block {block}, n = {n}")
    a, b = operands(256, 512, 128, torch.bfloat16, seed=5)
    with pytest.raises(tilefuse.TensorArgumentError, match="16-byte"):
        gemm.run(a, b, out=torch.empty(256 * 512 + 1, device="cuda", dtype=torch.bfloat16)[1:].view(256, 512))
    batched_a, batched_b = operands(100, 72, 64, torch.float16, batch=3, seed=8)
    poison()
    check(gemm.run(batched_a, batched_b), torch.relu(batched_a.double() @ batched_b.double()),
          torch.relu(batched_a @ batched_b), "batched D by TMA")


def test_residual_by_tma_or_staged():
    """A residual whose rows TMA can read is loaded by TMA (the planner's residual_by_tma, as gemm::Gemm decides
    it), one that is not (an odd leading dimension, a base off 16 bytes) runs the staged epilogue; both agree with
    float64, and so do warm calls with new pointers and a batched residual."""
    gemm = tilefuse.Gemm(epilogue=lambda acc, bias, residual: relu(acc + bias + residual))
    m, n, k = 300, 520, 264
    a, b = operands(m, n, k, torch.bfloat16, seed=11)
    bias = torch.randn(n, device="cuda").to(torch.bfloat16)
    storage = torch.randn(m * (n + 1) + 8, device="cuda").to(torch.bfloat16)
    aligned = storage[:m * n].view(m, n)
    odd_ld = storage[:m * (n + 1)].view(m, n + 1)[:, :n]
    shifted = storage[1:m * n + 1].view(m, n)
    for residual, by_tma in ((aligned, True), (odd_ld, False), (shifted, False)):
        text = gemm.plan(a, b, bias=bias, residual=residual).describe()
        assert ("residual loaded by TMA" in text) == by_tma, text
        ref = torch.relu(a.double() @ b.double() + bias.double() + residual.double())
        same = torch.relu(a @ b + bias + residual)
        for call in range(2):  # the first call, then the warm one
            poison()
            check(gemm.run(a, b, bias=bias, residual=residual), ref, same, f"residual by TMA {by_tma}, call {call}")
    other = torch.randn(m, n, device="cuda").to(torch.bfloat16)  # a warm call with a new residual pointer
    poison()
    check(gemm.run(a, b, bias=bias, residual=other), torch.relu(a.double() @ b.double() + bias.double() + other.double()),
          torch.relu(a @ b + bias + other), "new residual pointer")
    batched_a, batched_b = operands(100, 72, 64, torch.float16, batch=3, seed=12)
    bias16 = torch.randn(72, device="cuda").to(torch.float16)
    for residual in (torch.randn(3, 100, 72, device="cuda").to(torch.float16),
                     torch.randn(100, 72, device="cuda").to(torch.float16)):  # per batch entry, and shared
        poison()
        check(gemm.run(batched_a, batched_b, bias=bias16, residual=residual),
              torch.relu(batched_a.double() @ batched_b.double() + bias16.double() + residual.double()),
              torch.relu(batched_a @ batched_b + bias16 + residual), f"batched residual {tuple(residual.shape)}")


@pytest.mark.parametrize("m,n,k", [(197, 768, 3072), (250, 136, 2000), (100, 1000, 3000)])
def test_the_64x64_ping_pong_tile_for_few_rows(m, n, k):
    """A few hundred rows over a long K: the planner's 64x64 ping-pong tile (Sm90ShortConfig), plain and with bias +
    relu + residual (the residual by TMA where aligned), against float64; and forced on shapes with edges in every
    dimension."""
    a, b = operands(m, n, k, torch.bfloat16, seed=m + k)
    gemm = tilefuse.Gemm()
    assert "64x64x64" in gemm.plan(a, b).describe(), gemm.plan(a, b).describe()
    poison()
    check(gemm.run(a, b), a.double() @ b.double(), a @ b, f"64x64 plain {m}x{n}x{k}")
    bias = torch.randn(n, device="cuda").to(torch.bfloat16)
    residual = torch.randn(m, n, device="cuda").to(torch.bfloat16)
    fused = tilefuse.Gemm(epilogue=lambda acc, bias, residual: relu(acc + bias) + residual)
    assert "64x64x64" in fused.plan(a, b, bias=bias, residual=residual).describe()
    poison()
    d = fused.run(a, b, bias=bias, residual=residual)
    check(d, torch.relu(a.double() @ b.double() + bias.double()) + residual.double(),
          torch.relu(a @ b + bias) + residual, f"64x64 fused {m}x{n}x{k}")
    for mm, nn, kk in ((1, 8, 8), (65, 72, 136), (333, 520, 264)):
        a2, b2 = operands(mm, nn, kk, torch.float16, seed=mm)
        poison()
        check(tilefuse.Gemm(tile="64x64").run(a2, b2), a2.double() @ b2.double(), a2 @ b2, f"64x64 forced {mm}x{nn}x{kk}")


@pytest.mark.parametrize("m,n", [(197, 64), (4100, 256)])
def test_back_to_back_calls_read_their_predecessors_output(m, n):
    # The Hopper kernel starts beside the previous kernel (programmatic dependent launch) and must wait for its
    # writes: a chain queued behind a sleeping kernel, each call reading the last one's output and overwriting
    # the operand the one before it read. Small integers times signed column selections: exact in bf16. Every B
    # is K-major, so no packing copy runs between the calls.
    g = torch.Generator(device="cuda").manual_seed(m)
    k = 48
    a = torch.randint(-2, 3, (m, k), device="cuda", generator=g).to(torch.bfloat16)
    b = torch.randint(-2, 3, (n, k), device="cuda", generator=g).to(torch.bfloat16).t()
    selections = []
    for _ in range(16):
        pick = torch.randperm(n, device="cuda", generator=g)
        sign = torch.randint(0, 2, (n,), device="cuda", generator=g) * 2 - 1
        rows = torch.zeros(n, n, device="cuda")
        rows[torch.arange(n, device="cuda"), pick] = sign.float()  # column j of the selection takes pick[j]
        selections.append(rows.to(torch.bfloat16).t())
    gemm = tilefuse.Gemm()
    ping = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    pong = torch.empty_like(ping)
    gemm.run(a, b, out=ping)  # both signatures planned (and compiled) before the chain
    gemm.run(ping, selections[0], out=pong)
    ping.fill_(float("nan"))
    pong.fill_(float("nan"))
    torch.cuda.synchronize()
    torch.cuda._sleep(20_000_000)  # the stream held while the chain is queued
    gemm.run(a, b, out=ping)
    for i, s in enumerate(selections):
        src, dst = (ping, pong) if i % 2 == 0 else (pong, ping)
        gemm.run(src, s, out=dst)
    want = a.double() @ b.double()
    for s in selections:
        want = want @ s.double()
    got = ping if len(selections) % 2 == 0 else pong
    torch.cuda.synchronize()
    assert torch.equal(got.double(), want), f"{m}x{n}: {(got.double() != want).sum().item()} elements differ"
