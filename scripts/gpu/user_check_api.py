#!/usr/bin/env python3
"""An independent, user-style acceptance check of the tilefuse Python API, written from README.md and
docs/python.md alone (the implementation was not read to write it).

Every check is a row (name, pass / fail / skip, detail). The script never stops at the first failure; at the
end it prints a Markdown table of all rows with counts, writes it to --markdown FILE if given, and exits 1
when any row failed. Without a GPU it prints "no GPU" and exits 0.

What it checks (reference: float64 torch on the same inputs, on the GPU):
  gemm.*     tilefuse.Gemm / tilefuse.ops: bf16 and fp16, shapes that are not tile multiples and odd k,
             operands of either major, offset views, empty sizes (m, n, k = 0), a batch, out= (poisoned with
             NaN), fused bias / relu / gelu / residual / alpha (number and 0-dim device tensor), fp32 output.
             Integer-valued inputs in [-3, 3] are compared exactly with the float64 result rounded once to
             the output dtype; random inputs against an elementwise bound stated in the row.
  conv.*     tilefuse.Conv2d fprop / dgrad / wgrad: ResNet-50-like layers (1x1, 3x3 s1 / s2, the 7x7 s2
             stem with C = 3), odd sizes, dilation, N = 1 and N = 0, conv + bias + relu + residual,
             views of channels-last storage, layout="convert"; dgrad / wgrad against torch autograd.
  fp8.*      tilefuse.scaled_mm per-tensor / row-wise / block-wise against dequantized float64.
  nn.*       tilefuse.nn.Linear / tilefuse.nn.Conv2d forward and backward against the torch modules.
  err.*      refusals: each must raise a Python exception whose message names the argument or the fix.
  host.*     warm-call host cost of Gemm.run and Conv2d.run (target <= 10 us, fails above 15 us).

Run: python scripts/gpu/user_check_api.py [--markdown FILE] [--only REGEX]
"""
import argparse
import importlib
import math
import re
import sys
import time
import traceback

ROWS = []  # (name, status, detail, seconds)
ARGS = None


def tail_of_traceback(exc, lines=4):
    tb = traceback.format_exception(type(exc), exc, exc.__traceback__)
    text = "".join(tb).strip().splitlines()
    return " | ".join(s.strip() for s in text[-lines:])


def check(name, fn):
    """Run one check; fn returns (ok, detail) or ("skip", detail). Any exception is a failure."""
    if ARGS is not None and ARGS.only and not re.search(ARGS.only, name):
        return
    t0 = time.perf_counter()
    try:
        ok, detail = fn()
        status = "skip" if ok == "skip" else ("pass" if ok else "fail")
    except BaseException as exc:  # noqa: B902 - every failure is a row, KeyboardInterrupt aside
        if isinstance(exc, KeyboardInterrupt):
            raise
        status, detail = "fail", f"raised {type(exc).__name__}: {tail_of_traceback(exc)}"
    dt = time.perf_counter() - t0
    # A check that left a sticky CUDA error behind breaks every later one: say so in its own row.
    try:
        import torch
        torch.cuda.synchronize()
    except BaseException as exc:
        status = "fail"
        detail += f" | CUDA error after the check: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
    ROWS.append((name, status, detail, dt))
    print(f"[{status:4s}] {name} ({dt:.1f}s): {detail}", flush=True)
    if ARGS is not None and ARGS.markdown:  # rewritten after every row: a run cut short keeps the rows done
        with open(ARGS.markdown, "w") as f:
            f.write(markdown_table()[0])


def markdown_table():
    npass = sum(r[1] == "pass" for r in ROWS)
    nfail = sum(r[1] == "fail" for r in ROWS)
    nskip = sum(r[1] == "skip" for r in ROWS)
    out = ["# tilefuse user-style API check", "",
           f"{len(ROWS)} checks: {npass} pass, {nfail} fail, {nskip} skip; "
           f"total {sum(r[3] for r in ROWS):.1f} s", "",
           "| # | check | result | s | detail |", "|---|---|---|---|---|"]
    for i, (name, status, detail, dt) in enumerate(ROWS, 1):
        d = detail.replace("|", "\\|").replace("\n", " ")
        mark = {"pass": "pass", "fail": "**FAIL**", "skip": "skip"}[status]
        out.append(f"| {i} | `{name}` | {mark} | {dt:.1f} | {d} |")
    out.append("")
    return "\n".join(out), nfail


# ---------------------------------------------------------------------------------------------------------
# helpers (torch is imported by main() before any of these run)

torch = None
F = None
DEV = "cuda"
GEN = None


def ints(*shape, dtype=None, lo=-3, hi=3):
    """Integer values in [lo, hi], exactly representable in bf16 / fp16 / fp8."""
    t = torch.randint(lo, hi + 1, shape, device=DEV, generator=GEN, dtype=torch.int32)
    return t.to(dtype or torch.bfloat16)


def randn(*shape, dtype=None, scale=1.0):
    t = torch.randn(*shape, device=DEV, generator=GEN, dtype=torch.float32) * scale
    return t.to(dtype or torch.bfloat16)


def cl(t):
    return t.contiguous(memory_format=torch.channels_last)


def is_cl(t):
    return t.is_contiguous(memory_format=torch.channels_last)


def unit_roundoff(dtype):
    """Relative bound of one round-to-nearest into dtype (half an ulp over the smallest value of a binade)."""
    return {torch.bfloat16: 2.0 ** -8, torch.float16: 2.0 ** -11, torch.float32: 2.0 ** -24}[dtype]


def shape_dtype_problem(out, shape, dtype):
    if not isinstance(out, torch.Tensor):
        return f"returned {type(out).__name__}, not a tensor"
    if tuple(out.shape) != tuple(shape):
        return f"shape {tuple(out.shape)}, want {tuple(shape)}"
    if out.dtype != dtype:
        return f"dtype {out.dtype}, want {dtype}"
    if out.device.type != "cuda":
        return f"on {out.device}, want cuda"
    return None


def compare_exact(out, ref64, dtype, what=""):
    """Integer-valued problem: out must equal the float64 reference rounded once to dtype, bit for bit
    (NaN anywhere fails)."""
    bad = shape_dtype_problem(out, ref64.shape, dtype)
    if bad:
        return False, f"{what}{bad}"
    want = ref64.to(dtype).double()
    got = out.double()
    diff = got != want  # NaN != anything
    nbad = int(diff.sum())
    n = want.numel()
    if nbad == 0:
        amax = float(want.abs().max()) if n else 0.0
        return True, f"{what}exact: all {n} values equal the float64 result rounded to {_dn(dtype)} (max |v| {amax:g})"
    idx = tuple(int(i) for i in diff.nonzero()[0])
    err = (got - want).abs()
    err = torch.where(torch.isnan(err), torch.full_like(err, float("inf")), err)
    return False, (f"{what}{nbad}/{n} values differ from the float64 result rounded to {_dn(dtype)}; "
                   f"max |diff| {float(err.max()):g}; first at {idx}: got {float(got[idx]):g}, "
                   f"want {float(want[idx]):g} (float64 {float(ref64[idx]):g})")


def compare_bound(out, ref64, tol64, dtype, bound_text, what=""):
    """Elementwise |out - ref| <= tol (NaN fails); the row states the bound and the norm-relative error."""
    bad = shape_dtype_problem(out, ref64.shape, dtype)
    if bad:
        return False, f"{what}{bad}"
    got = out.double()
    err = (got - ref64).abs()
    viol = ~(err <= tol64)
    nbad = int(viol.sum())
    n = ref64.numel()
    rel = float((got - ref64).norm() / ref64.norm().clamp_min(1e-300)) if n else 0.0
    ratio = float((err / tol64).nan_to_num(nan=float("inf")).max()) if n else 0.0
    head = f"{what}bound {bound_text}: max err/tol {ratio:.3f}, ||err||/||ref|| {rel:.2e}"
    if nbad == 0:
        return True, head
    idx = tuple(int(i) for i in viol.nonzero()[0])
    return False, (f"{head}; {nbad}/{n} values outside; first at {idx}: got {float(got[idx]):g}, "
                   f"want {float(ref64[idx]):g}, tol {float(tol64[idx]):g}")


def compare_vs_torch(name, got, ref64, torch_lowp, rel_extra):
    """The project's own bound (docs/python.md, tests): max |tilefuse - ref| <= 2 * max |torch - ref| +
    rel_extra * max |ref|, torch in the same low precision. Returns (ok, text)."""
    if got is None:
        return False, f"{name}: no value (None)"
    if tuple(got.shape) != tuple(ref64.shape):
        return False, f"{name}: shape {tuple(got.shape)}, want {tuple(ref64.shape)}"
    if got.dtype != torch_lowp.dtype:
        return False, f"{name}: dtype {got.dtype}, want {torch_lowp.dtype}"
    e_tf = float((got.double() - ref64).abs().max().nan_to_num(nan=float("inf")))
    e_t = float((torch_lowp.double() - ref64).abs().max())
    scale = float(ref64.abs().max())
    tol = 2 * e_t + rel_extra * scale
    ok = e_tf <= tol
    return ok, f"{name} err {e_tf:.3g} {'<=' if ok else '>'} {tol:.3g} (torch {e_t:.3g}, max|ref| {scale:.3g})"


def load_ops():
    """Docs: importing tilefuse.ops registers the torch.library ops (torch.ops.tilefuse.*)."""
    return importlib.import_module("tilefuse.ops")


def _dn(dtype):
    return str(dtype).replace("torch.", "")


def gemm_bound(a, b, ref64, dtype, k, lipschitz=1.0):
    """Elementwise bound for a GEMM (+ smooth epilogue) with fp32 accumulation and one rounding to dtype:
    u(dtype) * |ref| + lipschitz * 4 * k * 2^-24 * (|a| @ |b|) + 2^-20 * |ref| (epilogue math in fp32)."""
    absprod = a.double().abs() @ b.double().abs()
    u = unit_roundoff(dtype)
    tol = u * ref64.abs() + lipschitz * 4 * max(k, 1) * 2.0 ** -24 * absprod + 2.0 ** -20 * ref64.abs() + 1e-30
    return tol, f"|err| <= {u:g}*|ref| + {4 * lipschitz:g}*k*2^-24*(|a|@|b|) + 2^-20*|ref|"


def gelu64(z):
    return 0.5 * z * (1.0 + torch.special.erf(z / math.sqrt(2.0)))


# ---------------------------------------------------------------------------------------------------------
# 1. GEMM


def gemm_checks(tf):
    from tilefuse.epilogue import relu, gelu

    ident = tf.Gemm(epilogue=lambda acc: acc)
    fused = tf.Gemm(epilogue=lambda acc, bias, residual, alpha: relu(alpha * acc + bias) + residual)

    def plain(m, n, k, dtype, a_major="row", b_major="kmajor"):
        def fn():
            if a_major == "row":
                a = ints(m, k, dtype=dtype)
            elif a_major == "col":  # a transposed view: unit stride along m
                a = ints(k, m, dtype=dtype).t()
            else:  # offset by one element: base pointer 2 bytes off, lda odd
                a = ints(m, k + 1, dtype=dtype)[:, 1:]
            b = ints(n, k, dtype=dtype).t() if b_major == "kmajor" else ints(k, n, dtype=dtype)
            d = ident.run(a, b)
            lay = f"a {a_major}-major strides {tuple(a.stride())}, b {b_major} strides {tuple(b.stride())}; "
            return compare_exact(d, a.double() @ b.double(), dtype, lay)
        return fn

    check("gemm.bf16.4095x4097x4093.ints", plain(4095, 4097, 4093, torch.bfloat16))
    check("gemm.bf16.127x255x8191.a_transposed.b_rowmajor", plain(127, 255, 8191, torch.bfloat16, "col", "row"))
    check("gemm.bf16.1x4096x4096.skinny", plain(1, 4096, 4096, torch.bfloat16))
    check("gemm.bf16.7x13x17.a_offset_view", plain(7, 13, 17, torch.bfloat16, "offset", "row"))
    check("gemm.fp16.1000x1000x1000.b_rowmajor", plain(1000, 1000, 1000, torch.float16, "row", "row"))
    check("gemm.bf16.64x64x65536.long_k", plain(64, 64, 65536, torch.bfloat16))

    def fused_fn(m, n, k, dtype, alpha_tensor=False):
        def fn():
            a, b = ints(m, k, dtype=dtype), ints(n, k, dtype=dtype).t()
            bias, r = ints(n, dtype=dtype), ints(m, n, dtype=dtype)
            alpha = torch.tensor(0.5, device=DEV, dtype=torch.float32) if alpha_tensor else 0.5
            d = fused.run(a, b, bias=bias, residual=r, alpha=alpha)
            ref = torch.relu(0.5 * (a.double() @ b.double()) + bias.double()) + r.double()
            return compare_exact(d, ref, dtype, f"relu(0.5*acc+bias)+residual, alpha {'0-dim cuda tensor' if alpha_tensor else 'number'}; ")
        return fn

    check("gemm.bf16.7x13x17.bias_relu_residual_alpha", fused_fn(7, 13, 17, torch.bfloat16))
    check("gemm.bf16.1000x1000x1000.bias_relu_residual_alpha", fused_fn(1000, 1000, 1000, torch.bfloat16))
    check("gemm.bf16.256x384x512.alpha_device_scalar", fused_fn(256, 384, 512, torch.bfloat16, alpha_tensor=True))

    def gelu_random(m, n, k, dtype):
        def fn():
            g = tf.Gemm(epilogue=lambda acc, bias: gelu(acc + bias))
            a, b = randn(m, k, dtype=dtype), randn(n, k, dtype=dtype).t()
            bias = randn(n, dtype=dtype)
            d = g.run(a, b, bias=bias)
            ref = gelu64(a.double() @ b.double() + bias.double())
            tol, txt = gemm_bound(a, b, ref, dtype, k, lipschitz=1.13)
            return compare_bound(d, ref, tol, dtype, txt, "gelu(acc+bias), randn; ")
        return fn

    check("gemm.bf16.1000x1000x1000.gelu_bias.randn", gelu_random(1000, 1000, 1000, torch.bfloat16))
    check("gemm.fp16.777x1234x999.gelu_bias.randn", gelu_random(777, 1234, 999, torch.float16))

    def random_plain(m, n, k, dtype):
        def fn():
            a, b = randn(m, k, dtype=dtype), randn(k, n, dtype=dtype)
            d = ident.run(a, b)
            ref = a.double() @ b.double()
            tol, txt = gemm_bound(a, b, ref, dtype, k)
            return compare_bound(d, ref, tol, dtype, txt, "randn, b row-major; ")
        return fn

    check("gemm.bf16.4095x4097x4093.randn", random_plain(4095, 4097, 4093, torch.bfloat16))

    def empty(m, n, k):
        def fn():
            a, b = ints(m, k), ints(n, k).t()
            ref_t = torch.matmul(a, b)
            d = ident.run(a, b)
            bad = shape_dtype_problem(d, ref_t.shape, torch.bfloat16)
            if bad:
                return False, f"plain: {bad} (torch.matmul gives {tuple(ref_t.shape)})"
            ok, txt = compare_exact(d, a.double() @ b.double(), torch.bfloat16, "plain: ")
            if not ok:
                return ok, txt
            bias, r = ints(n), ints(m, n)
            d2 = fused.run(a, b, bias=bias, residual=r, alpha=0.5)
            ref2 = torch.relu(0.5 * (a.double() @ b.double()) + bias.double()) + r.double()
            ok2, txt2 = compare_exact(d2, ref2, torch.bfloat16, "relu(0.5*acc+bias)+residual: ")
            return ok2, f"{txt}; {txt2}"
        return fn

    check("gemm.empty.m0 (0x64x32)", empty(0, 64, 32))
    check("gemm.empty.n0 (48x0x32)", empty(48, 0, 32))
    check("gemm.empty.k0 (48x64x0: acc = 0, bias/residual only)", empty(48, 64, 0))

    def out_buffer():
        m, n, k = 200, 136, 264
        a, b = ints(m, k), ints(n, k).t()
        big = torch.full((3 * m, n), float("nan"), device=DEV, dtype=torch.bfloat16)
        t = big[m:2 * m]  # a block of rows of a larger output (contiguous)
        ret = ident.run(a, b, out=t)
        ok, txt = compare_exact(t, a.double() @ b.double(), torch.bfloat16, "out=rows [m,2m) of a NaN buffer: ")
        untouched = bool(torch.isnan(big[:m]).all()) and bool(torch.isnan(big[2 * m:]).all())
        same = isinstance(ret, torch.Tensor) and ret.data_ptr() == t.data_ptr()
        return ok and untouched, f"{txt}; rows outside untouched: {untouched}; returned out itself: {same}"

    check("gemm.out_poisoned_nan_row_block", out_buffer)

    def batched():
        bs, m, n, k = 3, 100, 72, 136
        g = tf.Gemm(epilogue=lambda acc, bias: acc + bias)
        a, b, bias = ints(bs, m, k), ints(n, k).t(), ints(bs, 1, n)
        d = g.run(a, b, bias=bias)
        ref = torch.matmul(a.double(), b.double()) + bias.double()
        return compare_exact(d, ref, torch.bfloat16, "a (3,m,k), shared b (k,n), per-batch bias (3,1,n): ")

    check("gemm.batched.shared_b.per_batch_bias", batched)

    def fp32_out():
        m, n, k = 320, 264, 512
        g = tf.Gemm(epilogue=lambda acc, scale: acc * scale, out_dtype=torch.float32)
        a, b = ints(m, k), ints(n, k).t()
        scale = ints(n, dtype=torch.float32)
        d = g.run(a, b, scale=scale)
        return compare_exact(d, (a.double() @ b.double()) * scale.double(), torch.float32,
                             "out_dtype=torch.float32, acc*scale[col]: ")

    check("gemm.fp32_out.column_scale", fp32_out)

    def warm_new_tensors():
        m, n, k = 256, 256, 512
        outs = []
        for _ in range(3):  # same signature, new tensors each time: the warm path must patch the pointers
            a, b, bias, r = ints(m, k), ints(n, k).t(), ints(n), ints(m, n)
            d = fused.run(a, b, bias=bias, residual=r, alpha=0.5)
            ref = torch.relu(0.5 * (a.double() @ b.double()) + bias.double()) + r.double()
            outs.append(compare_exact(d, ref, torch.bfloat16))
        ok = all(o[0] for o in outs)
        return ok, "3 calls, same signature, new tensors: " + "; ".join(o[1][:120] for o in outs)

    check("gemm.warm_calls_new_tensors", warm_new_tensors)

    def strided_no_unit():
        # Neither dimension has unit stride. docs/python.md: GEMM operands "of any layout" are copied; the
        # Tensors section says each matrix needs a unit stride in one of its last two dims. Either a correct
        # result or a clear refusal passes; a wrong result or a crash fails.
        m, n, k = 64, 80, 96
        a = ints(m, 2 * k)[:, ::2]
        b = ints(n, k).t()
        try:
            d = ident.run(a, b)
        except Exception as exc:
            msg = str(exc).splitlines()[0] if str(exc) else ""
            okmsg = bool(re.search(r"stride|layout|contiguous", str(exc), re.I))
            return okmsg, f"refused: {type(exc).__name__}: {msg[:200]}"
        return compare_exact(d, a.double() @ b.double(), torch.bfloat16, "ran (copied): ")

    check("gemm.a_without_unit_stride (a[:, ::2])", strided_no_unit)

    # The documented functional / torch-op forms.
    def ops_linear():
        load_ops()
        x, w, b = ints(2, 50, 256), ints(192, 256), ints(192)
        y = tf.ops.linear(x, w, b, residual=None, activation="relu")
        ref = torch.relu(x.double() @ w.double().t() + b.double())
        return compare_exact(y, ref, torch.bfloat16, "tilefuse.ops.linear x (2,50,256), relu: ")

    check("gemm.ops.linear.3d_relu", ops_linear)

    def ops_mm():
        load_ops()
        a, b = ints(77, 136).t(), ints(77, 91)  # a: the (136, 77) transpose of a (77, 136) tensor, odd k
        y = torch.ops.tilefuse.mm(a, b)
        return compare_exact(y, a.double() @ b.double(), torch.bfloat16, "torch.ops.tilefuse.mm, odd k, a transposed: ")

    check("gemm.ops.mm.any_strides", ops_mm)

    def ops_gemm():
        load_ops()
        a, b, bias, r = ints(96, 160), ints(160, 120), ints(120), ints(96, 120)
        y = tf.ops.gemm(a, b, bias, r, activation="relu")
        ref = torch.relu(a.double() @ b.double() + bias.double()) + r.double()
        return compare_exact(y, ref, torch.bfloat16, "tilefuse.ops.gemm relu(a@b+bias)+residual: ")

    check("gemm.ops.gemm.bias_relu_residual", ops_gemm)


# ---------------------------------------------------------------------------------------------------------
# 2. Conv2d


def conv_ref(x, w, stride, padding, dilation=1):
    return F.conv2d(x.double(), w.double(), None, stride, padding, dilation)


def conv_grads_ref(x, w, dy, stride, padding, dilation=1):
    x64 = x.detach().double().requires_grad_()
    w64 = w.detach().double().requires_grad_()
    y64 = F.conv2d(x64, w64, None, stride, padding, dilation)
    gx, gw = torch.autograd.grad(y64, (x64, w64), dy.double())
    return gx, gw


def conv_out_ok(y, what):
    """Docs: outputs are allocated channels-last."""
    if isinstance(y, torch.Tensor) and y.dim() == 4 and y.numel() and not is_cl(y):
        return f"{what} not channels-last (strides {tuple(y.stride())}); "
    return ""


def conv_checks(tf):
    from tilefuse.epilogue import relu

    def fprop(n, c, h, w_, k, r, stride, padding, dilation=1, dtype=torch.bfloat16, view=None):
        def fn():
            if view == "crop":  # x[:, :, 1:, :] of a channels-last tensor
                x = cl(ints(n, c, h + 1, w_, dtype=dtype))[:, :, 1:, :]
            elif view == "batch_stride":  # every other image
                x = cl(ints(2 * n, c, h, w_, dtype=dtype))[::2]
            elif view == "channel_slice":  # channels 3..3+c: base pointer 6 bytes off
                x = cl(ints(n, c + 8, h, w_, dtype=dtype))[:, 3:3 + c]
            else:
                x = cl(ints(n, c, h, w_, dtype=dtype))
            w = cl(ints(k, c, r, r, dtype=dtype))
            conv = tf.Conv2d(stride=stride, padding=padding, dilation=dilation)
            y = conv.run(x, w)
            ref = conv_ref(x, w, stride, padding, dilation)
            ok, txt = compare_exact(y, ref, dtype, f"x {tuple(x.shape)} strides {tuple(x.stride())}, w {tuple(w.shape)}: ")
            note = conv_out_ok(y, "y")
            return ok and not note, note + txt
        return fn

    check("conv.fprop.1x1.256to64.56x56.N2", fprop(2, 256, 56, 56, 64, 1, 1, 0))
    check("conv.fprop.3x3s1.64to64.56x56.N2", fprop(2, 64, 56, 56, 64, 3, 1, 1))
    check("conv.fprop.3x3s2.128to128.56x56.N2", fprop(2, 128, 56, 56, 128, 3, 2, 1))
    check("conv.fprop.1x1s2.256to512.56x56.N1", fprop(1, 256, 56, 56, 512, 1, 2, 0))
    check("conv.fprop.stem7x7s2.C3.224x224.N2", fprop(2, 3, 224, 224, 64, 7, 2, 3))
    check("conv.fprop.3x3s2.odd_17x23.64to96.N3", fprop(3, 64, 17, 23, 96, 3, 2, 1))
    check("conv.fprop.3x3.dilation2.32to40.N2", fprop(2, 32, 20, 21, 40, 3, 1, 2, dilation=2))
    check("conv.fprop.view.crop_h (x[:, :, 1:, :])", fprop(2, 64, 29, 30, 64, 3, 1, 1, view="crop"))
    check("conv.fprop.view.batch_stride (x[::2])", fprop(2, 64, 14, 14, 64, 3, 1, 1, view="batch_stride"))
    check("conv.fprop.view.channel_slice_offset (x[:, 3:35])", fprop(2, 32, 14, 14, 64, 3, 1, 1, view="channel_slice"))

    def fused(dtype, n=2, c=64, h=28, k=128):
        def fn():
            conv = tf.Conv2d(stride=1, padding=1, epilogue=lambda acc, bias, residual: relu(acc + bias) + residual)
            x, w = cl(ints(n, c, h, h, dtype=dtype)), cl(ints(k, c, 3, 3, dtype=dtype))
            b, r = ints(k, dtype=dtype), cl(ints(n, k, h, h, dtype=dtype))
            y = conv.run(x, w, bias=b, residual=r)
            ref = torch.relu(conv_ref(x, w, 1, 1) + b.double().view(1, -1, 1, 1)) + r.double()
            ok, txt = compare_exact(y, ref, dtype, "relu(conv+bias)+residual: ")
            note = conv_out_ok(y, "y")
            return ok and not note, note + txt
        return fn

    check("conv.fprop.fused_bias_relu_residual.bf16", fused(torch.bfloat16))
    check("conv.fprop.fused_bias_relu_residual.fp16", fused(torch.float16))

    def fprop_random():
        n, c, h, k = 2, 64, 28, 96
        x, w = cl(randn(n, c, h, h)), cl(randn(k, c, 3, 3, scale=0.1))
        y = tf.Conv2d(stride=1, padding=1).run(x, w)
        ref = conv_ref(x, w, 1, 1)
        absref = F.conv2d(x.double().abs(), w.double().abs(), None, 1, 1)
        kk = c * 9
        tol = 2.0 ** -8 * ref.abs() + 4 * kk * 2.0 ** -24 * absref + 1e-30
        return compare_bound(y, ref, tol, torch.bfloat16, "|err| <= 2^-8*|ref| + 4*CRS*2^-24*conv(|x|,|w|)", "randn: ")

    check("conv.fprop.3x3.randn.bound", fprop_random)

    def convert_layout():
        n, c, h, k = 2, 32, 15, 48
        x, w = ints(n, c, h, h), ints(k, c, 3, 3)  # NCHW-contiguous
        y = tf.Conv2d(stride=1, padding=1, layout="convert").run(x, w)
        ok, txt = compare_exact(y, conv_ref(x, w, 1, 1), torch.bfloat16, "NCHW x and w, layout='convert': ")
        note = conv_out_ok(y, "y")
        return ok and not note, note + txt

    check("conv.fprop.layout_convert_nchw", convert_layout)

    def empty_batch():
        c, h, k = 64, 14, 64
        x, w = cl(ints(0, c, h, h)), cl(ints(k, c, 3, 3))
        y = tf.Conv2d(stride=1, padding=1).run(x, w)
        want = F.conv2d(x.float(), w.float(), None, 1, 1)
        parts = []
        bad = shape_dtype_problem(y, want.shape, torch.bfloat16)
        parts.append(f"fprop -> {bad or 'empty ' + str(tuple(y.shape))}")
        dy = cl(ints(0, k, h, h))
        dx = tf.Conv2d("dgrad", stride=1, padding=1).run(dy, w, input_size=x.shape)
        bad2 = shape_dtype_problem(dx, x.shape, torch.bfloat16)
        parts.append(f"dgrad -> {bad2 or 'empty ' + str(tuple(dx.shape))}")
        dw = tf.Conv2d("wgrad", stride=1, padding=1, kernel_size=(3, 3)).run(dy, x)
        ok3, txt3 = compare_exact(dw, torch.zeros(k, c, 3, 3, device=DEV, dtype=torch.float64), torch.bfloat16)
        parts.append(f"wgrad -> {txt3[:100]}")
        return (not bad and not bad2 and ok3), "; ".join(parts)

    check("conv.N0.fprop_dgrad_wgrad", empty_batch)

    def dgrad(n, c, h, w_, k, r, stride, padding):
        def fn():
            x, w = cl(ints(n, c, h, w_)), cl(ints(k, c, r, r))
            p = (h + 2 * padding - r) // stride + 1
            q = (w_ + 2 * padding - r) // stride + 1
            dy = cl(ints(n, k, p, q))
            dx = tf.Conv2d("dgrad", stride=stride, padding=padding).run(dy, w, input_size=x.shape)
            gx, _ = conv_grads_ref(x, w, dy, stride, padding)
            ok, txt = compare_exact(dx, gx, torch.bfloat16, f"dy {tuple(dy.shape)} -> dx {tuple(x.shape)}: ")
            note = conv_out_ok(dx, "dx")
            return ok and not note, note + txt
        return fn

    check("conv.dgrad.3x3s1.64to64.28x28.N2", dgrad(2, 64, 28, 28, 64, 3, 1, 1))
    check("conv.dgrad.3x3s2.64to128.odd_29x29.N2", dgrad(2, 64, 29, 29, 128, 3, 2, 1))
    check("conv.dgrad.1x1.256to64.28x28.N2", dgrad(2, 256, 28, 28, 64, 1, 1, 0))

    def wgrad(n, c, h, w_, k, r, stride, padding):
        def fn():
            x, w = cl(ints(n, c, h, w_)), cl(ints(k, c, r, r))
            p = (h + 2 * padding - r) // stride + 1
            q = (w_ + 2 * padding - r) // stride + 1
            dy = cl(ints(n, k, p, q))
            dw = tf.Conv2d("wgrad", stride=stride, padding=padding, kernel_size=(r, r)).run(dy, x)
            _, gw = conv_grads_ref(x, w, dy, stride, padding)
            return compare_exact(dw, gw, torch.bfloat16, f"x {tuple(x.shape)}, dy {tuple(dy.shape)} -> dw {tuple(w.shape)}: ")
        return fn

    check("conv.wgrad.3x3s1.64to64.28x28.N2", wgrad(2, 64, 28, 28, 64, 3, 1, 1))
    check("conv.wgrad.3x3s2.128to128.odd_29x29.N2", wgrad(2, 128, 29, 29, 128, 3, 2, 1))
    check("conv.wgrad.stem7x7s2.C3.224x224.N2", wgrad(2, 3, 224, 224, 64, 7, 2, 3))

    def conv_warm_new_tensors():
        conv = tf.Conv2d(stride=1, padding=1, epilogue=lambda acc, bias, residual: relu(acc + bias) + residual)
        res = []
        for _ in range(3):
            x, w = cl(ints(2, 64, 14, 14)), cl(ints(64, 64, 3, 3))
            b, r = ints(64), cl(ints(2, 64, 14, 14))
            y = conv.run(x, w, bias=b, residual=r)
            ref = torch.relu(conv_ref(x, w, 1, 1) + b.double().view(1, -1, 1, 1)) + r.double()
            res.append(compare_exact(y, ref, torch.bfloat16))
        return all(o[0] for o in res), "3 calls, new tensors: " + "; ".join(o[1][:100] for o in res)

    check("conv.warm_calls_new_tensors", conv_warm_new_tensors)


# ---------------------------------------------------------------------------------------------------------
# 3. FP8 scaled_mm (not described in docs/python.md: the README names it and says torch._scaled_mm's
# convention; this follows torch._scaled_mm: a (m, k) row-major e4m3, b (k, n) column-major e4m3,
# float32 scales that multiply: out = (a * scale_a) @ (b * scale_b) [+ bias])


def fp8_checks(tf):
    e4m3 = torch.float8_e4m3fn

    def operands(m, n, k):
        a = randn(m, k, dtype=torch.float32, scale=2.0).to(e4m3)
        b = randn(n, k, dtype=torch.float32, scale=2.0).to(e4m3).t()  # (k, n) column-major
        return a, b

    def bound(a64, b64, ref):
        absprod = a64.abs() @ b64.abs()
        # bf16 output rounding, plus FP8 tensor-core partial sums (about 14 bits kept between promotions)
        tol = 2.0 ** -8 * ref.abs() + 2.0 ** -11 * absprod + 1e-30
        return tol, "|err| <= 2^-8*|ref| + 2^-11*(|a_deq|@|b_deq|)"

    def torch_err(a, b, sa, sb, ref, bias=None):
        try:
            t = torch._scaled_mm(a, b, scale_a=sa, scale_b=sb, bias=bias, out_dtype=torch.bfloat16)
            return f"; torch._scaled_mm max err {float((t.double() - ref).abs().max()):.3g}"
        except Exception as exc:
            return f"; torch._scaled_mm not comparable ({type(exc).__name__})"

    def per_tensor(m, n, k, with_bias):
        def fn():
            a, b = operands(m, n, k)
            sa = torch.tensor(0.75, device=DEV, dtype=torch.float32)
            sb = torch.tensor(1.25, device=DEV, dtype=torch.float32)
            bias = randn(n) if with_bias else None
            kw = {"bias": bias} if with_bias else {}
            d = tf.scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16, **kw)
            a64, b64 = a.double() * 0.75, b.double() * 1.25
            ref = a64 @ b64 + (bias.double() if with_bias else 0.0)
            tol, txt = bound(a64, b64, ref)
            ok, s = compare_bound(d, ref, tol, torch.bfloat16, txt, f"per-tensor{' + bias' if with_bias else ''}: ")
            return ok, s + torch_err(a, b, sa, sb, ref, bias)
        return fn

    check("fp8.per_tensor.1024x1024x1024", per_tensor(1024, 1024, 1024, False))
    check("fp8.per_tensor.bias.200x272x384", per_tensor(200, 272, 384, True))  # n, k multiples of 16: torch's rule

    def row_wise(m, n, k):
        def fn():
            a, b = operands(m, n, k)
            sa = (torch.rand(m, 1, device=DEV, generator=GEN) + 0.5).float()
            sb = (torch.rand(1, n, device=DEV, generator=GEN) + 0.5).float()
            d = tf.scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16)
            a64, b64 = a.double() * sa.double(), b.double() * sb.double()
            ref = a64 @ b64
            tol, txt = bound(a64, b64, ref)
            ok, s = compare_bound(d, ref, tol, torch.bfloat16, txt, "row-wise scale_a (m,1), scale_b (1,n): ")
            return ok, s + torch_err(a, b, sa, sb, ref)
        return fn

    check("fp8.row_wise.1024x2048x1536", row_wise(1024, 2048, 1536))

    def block_wise(m, n, k):
        def fn():
            a, b = operands(m, n, k)
            # torch's convention: a scaled per 1x128 block, scale_a (m, k/128) outer-dim-major;
            # b scaled per 128x128 block, scale_b (k/128, n/128) (the transpose of an (n/128, k/128) tensor)
            sa = (torch.rand(m, k // 128, device=DEV, generator=GEN) + 0.5).float().t().contiguous().t()
            sb = (torch.rand(n // 128, k // 128, device=DEV, generator=GEN) + 0.5).float().t()
            d = tf.scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16)
            sa_full = sa.double().repeat_interleave(128, dim=1)  # (m, k)
            sb_full = sb.double().repeat_interleave(128, dim=0).repeat_interleave(128, dim=1)  # (k, n)
            a64, b64 = a.double() * sa_full, b.double() * sb_full
            ref = a64 @ b64
            tol, txt = bound(a64, b64, ref)
            ok, s = compare_bound(d, ref, tol, torch.bfloat16, txt,
                                  "block-wise 1x128 (a) / 128x128 (b), scale_a (m,k/128), scale_b (k/128,n/128): ")
            return ok, s + torch_err(a, b, sa, sb, ref)
        return fn

    check("fp8.block_wise.1024x1024x2048", block_wise(1024, 1024, 2048))


# ---------------------------------------------------------------------------------------------------------
# 4. tilefuse.nn


def nn_checks(tf):
    importlib.import_module("tilefuse.nn")

    def linear(activation, with_residual):
        def fn():
            lin = torch.nn.Linear(1024, 512, device=DEV, dtype=torch.bfloat16)
            layer = tf.nn.Linear.from_torch(lin, activation=activation)
            x = randn(4, 33, 1024).requires_grad_()
            r = randn(4, 33, 512).requires_grad_() if with_residual else None
            gy = randn(4, 33, 512)
            y = layer(x, residual=r) if with_residual else layer(x)
            y.backward(gy)
            act = {"gelu": lambda z: F.gelu(z), "relu": torch.relu, None: lambda z: z}[activation]

            def torch_side(dtype):
                xx = x.detach().to(dtype).requires_grad_()
                ww = lin.weight.detach().to(dtype).requires_grad_()
                bb = lin.bias.detach().to(dtype).requires_grad_()
                rr = r.detach().to(dtype).requires_grad_() if with_residual else None
                yy = act(F.linear(xx, ww, bb)) + (rr if with_residual else 0)
                yy.backward(gy.to(dtype))
                return yy.detach(), xx.grad, ww.grad, bb.grad, (rr.grad if with_residual else None)

            ref = torch_side(torch.float64)
            low = torch_side(torch.bfloat16)
            got = (y.detach(), x.grad, lin.weight.grad, lin.bias.grad, r.grad if with_residual else None)
            names = ["y", "grad_x", "grad_w", "grad_b", "grad_residual"]
            oks, texts = [], []
            for i, nm in enumerate(names):
                if ref[i] is None:
                    continue
                ok, t = compare_vs_torch(nm, got[i], ref[i], low[i], 1e-3 if i == 0 else 2e-3)
                oks.append(ok)
                texts.append(t)
            return all(oks), "bound 2x torch bf16 err + 1e-3 (y) / 2e-3 (grads) * max|ref|: " + "; ".join(texts)
        return fn

    check("nn.Linear.from_torch.gelu.fwd_bwd", linear("gelu", False))
    check("nn.Linear.from_torch.relu_residual.fwd_bwd", linear("relu", True))

    def conv(cin, cout, ksize, stride, padding, activation, with_residual, hw=28, steps=1):
        def fn():
            ref_mod = torch.nn.Conv2d(cin, cout, ksize, stride=stride, padding=padding, device=DEV,
                                      dtype=torch.bfloat16).to(memory_format=torch.channels_last)
            layer = tf.nn.Conv2d.from_torch(ref_mod, activation=activation)
            act = {"relu": torch.relu, None: lambda z: z}[activation]
            texts, oks = [], []
            for step in range(steps):  # later steps take the warm paths (C++ tables) where they exist
                ref_mod.zero_grad(set_to_none=True)
                x = cl(randn(2, cin, hw, hw)).requires_grad_()
                p = (hw + 2 * padding - ksize) // stride + 1
                r = cl(randn(2, cout, p, p)).requires_grad_() if with_residual else None
                gy = cl(randn(2, cout, p, p))
                y = layer(x, residual=r) if with_residual else layer(x)
                y.backward(gy)

                def torch_side(dtype):
                    xx = x.detach().to(dtype).requires_grad_()
                    ww = ref_mod.weight.detach().to(dtype).requires_grad_()
                    bb = ref_mod.bias.detach().to(dtype).requires_grad_()
                    rr = r.detach().to(dtype).requires_grad_() if with_residual else None
                    yy = act(F.conv2d(xx, ww, bb, stride, padding)) + (rr if with_residual else 0)
                    yy.backward(gy.to(dtype))
                    return yy.detach(), xx.grad, ww.grad, bb.grad, (rr.grad if with_residual else None)

                ref = torch_side(torch.float64)
                low = torch_side(torch.bfloat16)
                got = (y.detach(), x.grad, ref_mod.weight.grad, ref_mod.bias.grad, r.grad if with_residual else None)
                if not is_cl(y):
                    oks.append(False)
                    texts.append(f"step {step}: y not channels-last {tuple(y.stride())}")
                for i, nm in enumerate(["y", "grad_x", "grad_w", "grad_b", "grad_residual"]):
                    if ref[i] is None:
                        continue
                    ok, t = compare_vs_torch(nm, got[i], ref[i], low[i], 1e-3 if i == 0 else 2e-3)
                    oks.append(ok)
                    if not ok or step == steps - 1:
                        texts.append(f"step {step}: {t}")
            return all(oks), "bound 2x torch bf16 err + 1e-3 (y) / 2e-3 (grads) * max|ref|: " + "; ".join(texts)
        return fn

    check("nn.Conv2d.from_torch.3x3.relu_residual.fwd_bwd", conv(64, 64, 3, 1, 1, "relu", True))
    check("nn.Conv2d.from_torch.3x3s2.none.3_steps", conv(64, 128, 3, 2, 1, None, False, hw=29, steps=3))
    check("nn.Conv2d.from_torch.stem7x7s2.C3.fwd_bwd", conv(3, 64, 7, 2, 3, "relu", False, hw=64))

    def constructed():
        layer = tf.nn.Conv2d(32, 48, 3, padding=1, activation="relu", device=DEV, dtype=torch.bfloat16)
        layer = layer.to(memory_format=torch.channels_last)
        if not isinstance(layer, torch.nn.Conv2d):
            return False, "not a torch.nn.Conv2d subclass"
        x = cl(ints(2, 32, 12, 12))
        with torch.no_grad():
            layer.weight.copy_(ints(48, 32, 3, 3))
            layer.bias.copy_(ints(48))
            y = layer(x)
        ref = torch.relu(conv_ref(x, layer.weight, 1, 1) + layer.bias.double().view(1, -1, 1, 1))
        return compare_exact(y, ref, torch.bfloat16, "tilefuse.nn.Conv2d(32,48,3,padding=1,activation='relu') no_grad: ")

    check("nn.Conv2d.constructed.no_grad.ints", constructed)


# ---------------------------------------------------------------------------------------------------------
# 4b. tilefuse.tensors (docs/python.md "Tensors: checking arguments before a kernel runs")


def tensors_checks(tf):
    tensors = importlib.import_module("tilefuse.tensors")
    errors = importlib.import_module("tilefuse.errors")

    def gemm_operands():
        a = randn(64, 128)
        b = randn(96, 128).t()  # (k, n), column-major
        d = torch.empty(64, 96, device=DEV, dtype=torch.bfloat16)
        ops = tensors.check_gemm_operands(a, b, d, allowed_dtypes=("float16", "bfloat16"))
        got = (ops.m, ops.n, ops.k, ops.batch, ops.device_index, ops.aligned)
        ok = got[:3] == (64, 96, 128) and ops.aligned is True and ops.device_index == torch.cuda.current_device()
        a2 = randn(64, 129)[:, 1:]  # base 2 bytes off, lda 129: not 16-byte aligned
        ops2 = tensors.check_gemm_operands(a2, b, d, allowed_dtypes=("float16", "bfloat16"))
        ok2 = ops2.aligned is False and bool(ops2.alignment_notes)
        return ok and ok2, (f"aligned: (m, n, k, batch, device, aligned) = {got}, layout_a {ops.layout_a}, lda {ops.lda}; "
                            f"offset a: aligned {ops2.aligned}, notes {str(ops2.alignment_notes)[:160]!r}")

    check("tensors.check_gemm_operands.fields_and_alignment", gemm_operands)

    def conv_activation():
        x = randn(2, 64, 14, 14)  # NCHW
        try:
            tensors.check_conv_activation(x, "x", layout="require")
            return False, "NCHW x accepted with layout='require'"
        except errors.TensorArgumentError as exc:
            msg = str(exc)
            ok = bool(re.search(r"channels_last", msg)) and "contiguous(memory_format" in msg
            txt = f"require: TensorArgumentError: {msg.splitlines()[0][:160]} (names channels_last and the fix: {ok})"
        y = tensors.check_conv_activation(x, "x", layout="convert")
        ok2 = is_cl(y) and torch.equal(y, x)
        return ok and ok2, f"{txt}; convert -> channels-last copy equal to x: {ok2}"

    check("tensors.check_conv_activation.require_convert", conv_activation)


# ---------------------------------------------------------------------------------------------------------
# 5. Errors


INTERNAL_ERRORS = (AttributeError, KeyError, IndexError, AssertionError, NameError, ZeroDivisionError,
                   UnboundLocalError, RecursionError)


def expect_error(fn, patterns, what, want_type=None):
    """fn must raise a Python exception (not crash, not return) whose message matches one of patterns
    (the argument's name or the fix), of want_type where the docs name the type. Returns (ok, detail)."""
    try:
        out = fn()
        torch.cuda.synchronize()
    except Exception as exc:
        msg = str(exc)
        first = msg.strip().splitlines()[0] if msg.strip() else "(empty message)"
        head = f"{type(exc).__name__}: {first[:220]}"
        if want_type is not None and not isinstance(exc, want_type):
            names = "/".join(t.__name__ for t in (want_type if isinstance(want_type, tuple) else (want_type,)))
            return False, f"docs say {names}, got {head}"
        if isinstance(exc, INTERNAL_ERRORS):
            return False, f"an internal error, not a refusal: {head} [{tail_of_traceback(exc, 2)[:200]}]"
        if re.search(r"CUDA error|illegal memory|misaligned address|segmentation", msg, re.I):
            return False, f"a CUDA fault, not a refusal: {head}"
        hit = [p for p in patterns if re.search(p, msg, re.I)]
        if not hit:
            return False, f"message names neither the argument nor the fix (wanted /{'/ or /'.join(patterns)}/): {head}"
        return True, head
    shape = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
    return False, f"no exception for {what}: returned {shape}"


def error_checks(tf):
    ident = tf.Gemm(epilogue=lambda acc: acc)
    biased = tf.Gemm(epilogue=lambda acc, bias: acc + bias)
    conv = tf.Conv2d(stride=1, padding=1)
    conv_res = tf.Conv2d(stride=1, padding=1, epilogue=lambda acc, residual: acc + residual)

    errors = importlib.import_module("tilefuse.errors")
    TAE = errors.TensorArgumentError  # docs: tensor mistakes raise it (a ValueError)
    TRACE = tf.EpilogueTraceError

    def e(name, fn, patterns, what, want_type=None):
        check(name, lambda: expect_error(fn, patterns, what, want_type))

    m, n, k = 64, 96, 128
    a, b = randn(m, k), randn(n, k).t()
    e("err.gemm.float64_operands", lambda: ident.run(a.double(), b.double()),
      [r"float64|double"], "float64 operands", TAE)
    e("err.gemm.int32_operands", lambda: ident.run(a.to(torch.int32), b.to(torch.int32)),
      [r"int32|int"], "int32 operands", TAE)
    e("err.gemm.cpu_operands", lambda: ident.run(a.cpu(), b.cpu()),
      [r"\bcpu\b", r"cuda"], "CPU operands", TAE)
    e("err.gemm.mixed_dtypes", lambda: ident.run(a, b.half()),
      [r"float16|half|fp16"], "a bf16, b fp16", TAE)
    e("err.gemm.k_mismatch", lambda: ident.run(a, randn(n, k + 8).t()),
      [r"\bk\b|\bK\b|136|inner|contraction"], "a (64,128) @ b (136,96)", TAE)
    e("err.gemm.batch_mismatch", lambda: ident.run(randn(2, m, k), randn(3, k, n)),
      [r"batch"], "batch 2 vs 3", TAE)
    e("err.gemm.bias_wrong_length", lambda: biased.run(a, b, bias=randn(n + 1)),
      [r"bias"], "bias of n+1", ValueError)
    e("err.gemm.bias_not_unit_stride", lambda: biased.run(a, b, bias=randn(2 * n)[::2]),
      [r"bias"], "bias[::2]", ValueError)
    e("err.gemm.missing_argument", lambda: biased.run(a, b),
      [r"bias"], "bias not passed", (TypeError, ValueError))
    e("err.gemm.unknown_keyword", lambda: biased.run(a, b, bias=randn(n), bais=randn(n)),
      [r"bais"], "misspelled keyword", (TypeError, ValueError))
    e("err.gemm.out_wrong_shape", lambda: ident.run(a, b, out=torch.empty(m, n + 1, device=DEV, dtype=torch.bfloat16)),
      [r"\bout\b"], "out (m, n+1)", TAE)
    e("err.gemm.out_wrong_dtype", lambda: ident.run(a, b, out=torch.empty(m, n, device=DEV, dtype=torch.float16)),
      [r"\bout\b"], "out float16 for bf16 D", TAE)
    e("err.gemm.out_not_contiguous", lambda: ident.run(a, b, out=torch.empty(n, m, device=DEV, dtype=torch.bfloat16).t()),
      [r"\bout\b|contiguous"], "out transposed view", TAE)

    def two_devices():
        if torch.cuda.device_count() < 2:
            return "skip", "one GPU"
        return expect_error(lambda: ident.run(a, b.to("cuda:1")), [r"cuda:1|device"], "b on cuda:1", TAE)

    check("err.gemm.two_devices", two_devices)

    x, w = cl(randn(2, 64, 14, 14)), cl(randn(64, 64, 3, 3))
    e("err.conv.nchw_activation", lambda: conv.run(x.contiguous(), w),
      [r"channels_last|channels-last"], "NCHW-contiguous x", TAE)
    e("err.conv.float32", lambda: conv.run(x.float(), w.float()),
      [r"float32|dtype|bfloat16|float16"], "float32 operands", TAE)
    e("err.conv.channel_mismatch", lambda: conv.run(x, cl(randn(64, 32, 3, 3))),
      [r"\bC\b|channel|\b32\b"], "x C=64, w C=32", ValueError)
    e("err.conv.cpu", lambda: conv.run(x.cpu(), w.cpu()),
      [r"\bcpu\b|cuda"], "CPU tensors", TAE)
    e("err.conv.residual_wrong_shape", lambda: conv_res.run(x, w, residual=cl(randn(2, 64, 13, 14))),
      [r"residual"], "residual (2,64,13,14) for y (2,64,14,14)", ValueError)

    def ops_float32():
        load_ops()
        return tf.ops.linear(randn(8, 64, dtype=torch.float32), randn(32, 64, dtype=torch.float32), None)

    e("err.ops.linear.float32", ops_float32, [r"bf16|bfloat16|float16"], "float32 linear", TAE)

    def ops_bad_activation():
        load_ops()
        return tf.ops.linear(randn(8, 64), randn(32, 64), None, activation="swish")

    check("err.ops.linear.unknown_activation", lambda: _value_error_listing(ops_bad_activation))

    def nn_groups():
        return tf.nn.Conv2d(64, 64, 3, padding=1, groups=2, device=DEV, dtype=torch.bfloat16)(cl(randn(2, 64, 8, 8)))

    e("err.nn.Conv2d.groups2", nn_groups, [r"groups"], "groups=2")

    def trace(fn_epi, **kw):
        def run():
            g = tf.Gemm(epilogue=fn_epi)
            return g.run(a, b, **kw)
        return run

    def if_epilogue(acc):
        if acc > 0:
            return acc
        return -acc

    import math as _math
    e("err.trace.if_statement", trace(if_epilogue), [r"where"], "if acc > 0", TRACE)
    e("err.trace.builtin_max", trace(lambda acc: max(acc, 0)), [r"maximum"], "max(acc, 0)", TRACE)
    e("err.trace.math_exp", trace(lambda acc: _math.exp(acc)), [r"tilefuse\.epilogue\.exp|epilogue.*exp"], "math.exp", TRACE)

    def trace_error_type():
        try:
            trace(if_epilogue)()
        except Exception as exc:
            ok = isinstance(exc, tf.EpilogueTraceError)
            has_loc = bool(re.search(r"user_check_api\.py:\d+", str(exc)))
            return ok and has_loc, (f"{type(exc).__name__} is tilefuse.EpilogueTraceError: {ok}; message starts with "
                                    f"file:line: {has_loc}; .lineno {getattr(exc, 'lineno', None)}")
        return False, "no exception"

    check("err.trace.EpilogueTraceError_type_and_location", trace_error_type)

    def fp8_bf16():
        s = torch.tensor(1.0, device=DEV)
        return tf.scaled_mm(a, b, s, s, out_dtype=torch.bfloat16)

    e("err.fp8.bf16_operands", fp8_bf16, [r"float8|e4m3|e5m2|fp8"], "bf16 operands to scaled_mm")

    def fp8_n_not_16():  # torch._scaled_mm refuses n = 264 too (k and n multiples of 16)
        s = torch.tensor(1.0, device=DEV)
        a8 = torch.randn(200, 384, device=DEV).to(torch.float8_e4m3fn)
        b8 = torch.randn(264, 384, device=DEV).to(torch.float8_e4m3fn).t()
        return tf.scaled_mm(a8, b8, s, s, out_dtype=torch.bfloat16)

    e("err.fp8.n_not_a_multiple_of_16", fp8_n_not_16, [r"\bn\b.*16|multiple"], "n = 264 to scaled_mm", TAE)


def _value_error_listing(fn):
    try:
        fn()
    except ValueError as exc:
        msg = str(exc)
        ok = bool(re.search(r"relu", msg) and re.search(r"gelu", msg))
        return ok, f"ValueError: {msg.splitlines()[0][:200]}" + ("" if ok else " (does not list the activations)")
    except Exception as exc:
        return False, f"{type(exc).__name__} (docs: ValueError): {str(exc).splitlines()[0][:200]}"
    return False, "no exception for activation='swish'"


# ---------------------------------------------------------------------------------------------------------
# 6. Warm-call host cost


def host_checks(tf):
    def timed(call, label, calls=200, reps=5):
        for _ in range(10):
            call()
        torch.cuda.synchronize()
        host, total = [], []
        for _ in range(reps):
            t0 = time.perf_counter()
            for _ in range(calls):
                call()
            t1 = time.perf_counter()
            torch.cuda.synchronize()
            t2 = time.perf_counter()
            host.append((t1 - t0) / calls * 1e6)
            total.append((t2 - t0) / calls * 1e6)
        host.sort()
        total.sort()
        med = host[len(host) // 2]
        fast = ""
        try:
            import tilefuse.fast_path as fp
            why = fp.why_unavailable()
            fast = "; C++ warm path available" if not why else f"; C++ warm path unavailable: {why}"
        except Exception as exc:
            fast = f"; tilefuse.fast_path.why_unavailable() failed: {type(exc).__name__}"
        ok = med <= 15.0
        return ok, (f"{label}: {calls} warm calls x {reps}: host median {med:.1f} us/call (min {host[0]:.1f}), "
                    f"with the final sync {total[len(total) // 2]:.1f} us/call; target <= 10, fail > 15{fast}")

    def gemm_cost():
        g = tf.Gemm(epilogue=lambda acc: acc)
        a, b = randn(128, 64), randn(128, 64).t()
        return timed(lambda: g.run(a, b), "Gemm.run 128x128x64 bf16")

    def conv_cost():
        c = tf.Conv2d(stride=1, padding=1)
        x, w = cl(randn(1, 64, 14, 14)), cl(randn(64, 64, 3, 3))
        return timed(lambda: c.run(x, w), "Conv2d.run N1 64->64 3x3 14x14 bf16")

    check("host.Gemm.run.warm_us", gemm_cost)
    check("host.Conv2d.run.warm_us", conv_cost)


# ---------------------------------------------------------------------------------------------------------


def finish(no_gpu_text=None):
    if no_gpu_text is not None:
        print(no_gpu_text)
        if ARGS.markdown:
            with open(ARGS.markdown, "w") as f:
                f.write(f"# tilefuse user-style API check\n\n{no_gpu_text}\n")
        return 0
    text, nfail = markdown_table()
    print()
    print(text)
    if ARGS.markdown:
        with open(ARGS.markdown, "w") as f:
            f.write(text)
    return 1 if nfail else 0


def main(argv=None):
    global ARGS, torch, F, GEN
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--markdown", metavar="FILE", help="also write the Markdown table here")
    p.add_argument("--only", metavar="REGEX", help="run only the checks whose name matches")
    p.add_argument("--seed", type=int, default=1234)
    ARGS = p.parse_args(argv)

    try:
        import torch as _torch
        import torch.nn.functional as _F
    except Exception as exc:
        return finish(f"no GPU: torch is not importable ({type(exc).__name__}: {exc})")
    torch, F = _torch, _F
    try:
        import tilefuse as _tf  # noqa: F401
        pkg = f"tilefuse {getattr(_tf, '__version__', '?')} importable"
    except Exception as exc:
        _tf = None
        pkg = f"tilefuse package missing ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})"
    if not torch.cuda.is_available() or torch.cuda.device_count() == 0:
        return finish(f"no GPU: torch {torch.__version__} sees no CUDA device; {pkg}; nothing checked")

    name = torch.cuda.get_device_name(0)
    cap = torch.cuda.get_device_capability(0)
    print(f"GPU: {name} sm_{cap[0]}{cap[1]}, torch {torch.__version__}, {pkg}", flush=True)
    if _tf is None:
        ROWS.append(("import tilefuse", "fail", pkg, 0.0))
        return finish()
    GEN = torch.Generator(device=DEV)
    GEN.manual_seed(ARGS.seed)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False

    t0 = time.perf_counter()
    for group in (gemm_checks, conv_checks, fp8_checks, nn_checks, tensors_checks, error_checks, host_checks):
        try:
            group(_tf)
        except BaseException as exc:  # a group's own setup failed: one row, then the next group
            if isinstance(exc, KeyboardInterrupt):
                raise
            ROWS.append((f"{group.__name__} (setup)", "fail", f"raised {type(exc).__name__}: {tail_of_traceback(exc)}", 0.0))
    print(f"total {time.perf_counter() - t0:.1f} s", flush=True)
    return finish()


if __name__ == "__main__":
    sys.exit(main())
