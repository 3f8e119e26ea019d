#!/usr/bin/env python3
"""A user's acceptance check of tilefuse's torch.compile backend (`backend="tilefuse"`).

Written from README.md and docs/python.md ("Whole models: torch.compile(model, backend="tilefuse")" and
"PyTorch ops, autograd and tilefuse.nn") alone, as a user who takes those pages at their word:

1. One small hand-written model per pattern (bf16, channels-last, eval, CUDA): what the docs say is taken
   (conv -> [bias] -> [BN] -> [act] -> [+ residual] and conv -> [bias] -> [BN] -> + residual -> act,
   linear -> [bias] -> [act] -> [eval dropout] -> [+ residual], every listed activation, a C = 3 7x7 stem, fp16) and what they say is left to Inductor with a reason at
   INFO on the logger `tilefuse.backend` (depthwise, an intermediate used twice, float32, an input that is
   not channels-last, string padding). Each output against the same model in float32 on the same input:
   the compiled error must be within 2x bf16 eager's own error (+ 1e-3 of the output's scale). What was
   taken is read from the torch profiler: a taken conv / linear leaves no `aten::convolution` /
   `aten::mm|addmm` behind and a `tilefuse::*` op runs in its place.
2. torchvision resnet18, eval, bf16, channels-last: `torch.compile(model, backend="tilefuse")` with
   freezing (the docs' example) and a second batch size (Dynamo's automatic dynamic shapes); the same through
   `tilefuse.backend.optimize(model, measure=False)`; the measured path with dynamic=False.
3. Training: a small conv net (BN in training mode, fusable conv / linear chains, a linear head), 5 SGD steps
   compiled (optimize(measure=False), then the measured default) against eager bf16 and eager fp32 from the
   same initial weights; BN-train not folded; forward and backward on tilefuse's ops (profiler).
4. Options: measure=False versus the measured default at batch 1, the measured choices' file
   (`<cache>/backend_choices.json`), freezing off (the fold follows parameter changes), mode="reduce-overhead"
   (outputs of earlier calls are not overwritten), the logger.
5. Timing (reported; gated only on the docs' "never slower" promise against Inductor with freezing, with
   10% allowance): resnet50 batch 32, 224x224, bf16 channels-last eval: eager, Inductor (freezing), the backend.

Usage:  python scripts/gpu/user_check_backend.py [--markdown FILE] [--only 1,2,3,4,5] [--timing-batch 32]
Without a GPU it prints "no GPU" and exits 0. Exit status 1 when any row failed.
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import json
import logging
import math
import os
import statistics
import sys
import time
import traceback

ROWS: list[tuple[str, str, str]] = []   # (name, PASS / FAIL / SKIP, detail)
T_START = time.time()


MARKDOWN: list[str] = []  # --markdown's file, rewritten after every row: a run cut short keeps the rows done


def add_row(name: str, status: str, detail: str) -> None:
    detail = " ".join(str(detail).split())
    ROWS.append((name, status, detail))
    print(f"[{time.time() - T_START:6.1f} s] {status:4s} {name}: {detail}", flush=True)
    if MARKDOWN:
        with open(MARKDOWN[0], "w") as f:
            f.write("# tilefuse torch.compile backend: user acceptance check (rows so far)\n\n" + markdown_table())


class Row:
    """`with Row("name") as r: ...; r.detail = "..."; r.ok = bool` -- an exception is a FAIL with its text."""

    def __init__(self, name: str):
        self.name, self.ok, self.detail, self.status = name, True, "", None

    def __enter__(self):
        return self

    def __exit__(self, et, ev, tb):
        if et is not None:
            tail = traceback.format_exception_only(et, ev)[-1].strip()
            where = traceback.extract_tb(tb)[-1] if tb is not None else None
            loc = f" (at {os.path.basename(where.filename)}:{where.lineno})" if where else ""
            msg = (self.detail + "; " if self.detail else "") + f"raised {tail[:600]}{loc}"
            add_row(self.name, "FAIL", msg)
            print("".join(traceback.format_exception(et, ev, tb))[-3000:], file=sys.stderr, flush=True)
            return True  # never stop at the first failure
        add_row(self.name, self.status or ("PASS" if self.ok else "FAIL"), self.detail)
        return False


def markdown_table() -> str:
    lines = ["| check | result | detail |", "|---|---|---|"]
    for name, status, detail in ROWS:
        lines.append(f"| {name} | {status} | {detail.replace('|', '/')} |")
    n_pass = sum(s == "PASS" for _, s, _ in ROWS)
    n_fail = sum(s == "FAIL" for _, s, _ in ROWS)
    n_skip = sum(s == "SKIP" for _, s, _ in ROWS)
    lines.append("")
    lines.append(f"{n_pass} passed, {n_fail} failed, {n_skip} skipped, {len(ROWS)} rows, "
                 f"{time.time() - T_START:.0f} s")
    return "\n".join(lines) + "\n"


def finish(args) -> int:
    table = markdown_table()
    print()
    print(table)
    if args.markdown:
        os.makedirs(os.path.dirname(os.path.abspath(args.markdown)), exist_ok=True)
        with open(args.markdown, "w") as f:
            f.write("# tilefuse torch.compile backend: user acceptance check\n\n")
            try:
                import torch
                f.write(f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}\n\n")
            except Exception:  # noqa: BLE001
                pass
            f.write(table)
    return 1 if any(s == "FAIL" for _, s, _ in ROWS) else 0


# ----------------------------------------------------------------------------------------------------------
# Everything below needs torch; it is defined inside main() paths only after the GPU check.
# ----------------------------------------------------------------------------------------------------------

def build_helpers():
    import torch
    import torch.nn as nn

    g = {}

    class ListHandler(logging.Handler):
        def __init__(self):
            super().__init__(level=logging.DEBUG)
            self.records: list[logging.LogRecord] = []

        def emit(self, record):
            self.records.append(record)

    @contextlib.contextmanager
    def capture_logs(level=logging.INFO, name="tilefuse.backend"):
        """What a user does to see the backend's reasons: a handler on the documented logger at INFO."""
        lg = logging.getLogger(name)
        h = ListHandler()
        h.setLevel(level)
        old = lg.level
        lg.setLevel(level)
        lg.addHandler(h)
        try:
            yield h.records
        finally:
            lg.removeHandler(h)
            lg.setLevel(old)

    def messages(records, min_level=logging.INFO):
        out = []
        for r in records:
            if r.levelno >= min_level:
                try:
                    out.append(r.getMessage())
                except Exception:  # noqa: BLE001
                    out.append(str(r.msg))
        return out

    def profile_counts(fn):
        """Names of every op / kernel the call runs (torch profiler), with counts."""
        from torch.profiler import ProfilerActivity, profile
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            fn()
            torch.cuda.synchronize()
        counts = {}
        for e in prof.key_averages():
            counts[e.key] = counts.get(e.key, 0) + e.count
        return counts

    def n_aten_conv(c):
        return max(c.get("aten::convolution", 0), c.get("aten::_convolution", 0),
                   c.get("aten::cudnn_convolution", 0))

    def n_aten_mm(c):
        return c.get("aten::mm", 0) + c.get("aten::addmm", 0) + c.get("aten::bmm", 0) + c.get("aten::_addmm_activation", 0)

    def tf_ops(c):
        """tilefuse's custom ops as the profiler names them (tilefuse::...)."""
        return {k: v for k, v in c.items() if k.startswith("tilefuse::")}

    def tf_any(c):
        return {k: v for k, v in c.items() if "tilefuse" in k.lower()}

    def rel_errs(y, ref):
        y = y.detach().float()
        ref = ref.detach().float()
        d = y - ref
        scale = max(ref.abs().max().item(), 1e-12)
        return d.abs().max().item() / scale, d.norm().item() / max(ref.norm().item(), 1e-12)

    def finite(t):
        return bool(torch.isfinite(t.detach().float()).all().item())

    def accuracy_verdict(y_c, y_e, ref, factor=2.0, floor=1e-3):
        """Compiled bf16 error vs fp32 must be within factor x eager bf16's own error (+ floor)."""
        cm, cl = rel_errs(y_c, ref)
        em, el = rel_errs(y_e, ref)
        ok = finite(y_c) and cm <= factor * em + floor and cl <= factor * el + floor
        detail = (f"compiled vs fp32: max {cm:.2e}, L2 {cl:.2e}; eager {str(y_e.dtype).split('.')[-1]} vs fp32: "
                  f"max {em:.2e}, L2 {el:.2e}; bound {factor:g}x eager + {floor:g}; finite {finite(y_c)}")
        return ok, detail

    def randomize_bn(model, seed=0):
        gen = torch.Generator().manual_seed(seed)
        for m in model.modules():
            if isinstance(m, nn.modules.batchnorm._BatchNorm):
                n = m.num_features
                with torch.no_grad():
                    m.weight.copy_(0.75 + 0.5 * torch.rand(n, generator=gen))
                    m.bias.copy_(0.1 * torch.randn(n, generator=gen))
                    m.running_mean.copy_(0.1 * torch.randn(n, generator=gen))
                    m.running_var.copy_(0.5 + torch.rand(n, generator=gen))
        return model

    def chlast(t):
        return t.contiguous(memory_format=torch.channels_last) if t.dim() == 4 else t

    g.update(locals())
    return g


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--markdown", help="write the Markdown table here")
    ap.add_argument("--only", default="1,2,3,4,5", help="comma-separated check groups to run (1-5)")
    ap.add_argument("--timing-batch", type=int, default=32)
    ap.add_argument("--timing-res", type=int, default=224)
    ap.add_argument("--budget-s", type=float, default=330.0,
                    help="when this much time has passed before the timing row, time batch 8 instead; "
                         "past budget + 120 s the timing row is skipped")
    args = ap.parse_args()
    if args.markdown:
        os.makedirs(os.path.dirname(os.path.abspath(args.markdown)), exist_ok=True)
        MARKDOWN.append(args.markdown)
    only = {int(s) for s in args.only.split(",") if s.strip()}

    try:
        import torch
    except Exception:  # noqa: BLE001
        print("no GPU (torch is not importable)")
        return 0
    if not torch.cuda.is_available():
        print("no GPU")
        return 0

    import torch.nn as nn
    import torch.nn.functional as F
    import torch._dynamo
    import torch._inductor.config

    H = build_helpers()
    capture_logs, messages, profile_counts = H["capture_logs"], H["messages"], H["profile_counts"]
    n_aten_conv, n_aten_mm, tf_ops, tf_any = H["n_aten_conv"], H["n_aten_mm"], H["tf_ops"], H["tf_any"]
    rel_errs, finite, accuracy_verdict = H["rel_errs"], H["finite"], H["accuracy_verdict"]
    randomize_bn, chlast = H["randomize_bn"], H["chlast"]

    dev = torch.device("cuda")
    cap = torch.cuda.get_device_capability()
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name(0)} (sm_{cap[0]}{cap[1]})", flush=True)
    # The fp32 references must be fp32: no TF32 in cuDNN's convs or cuBLAS.
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch._dynamo.config.cache_size_limit = max(64, getattr(torch._dynamo.config, "cache_size_limit", 8))
    if hasattr(torch._dynamo.config, "recompile_limit"):
        torch._dynamo.config.recompile_limit = max(64, torch._dynamo.config.recompile_limit)

    tilefuse_backend = None
    with Row("0. import tilefuse.backend; backend name 'tilefuse' registered") as r:
        import tilefuse.backend as tilefuse_backend  # noqa: F811
        from torch._dynamo import list_backends
        names = list_backends(exclude_tags=())
        r.ok = "tilefuse" in names and hasattr(tilefuse_backend, "optimize")
        r.detail = (f"'tilefuse' in torch._dynamo.list_backends(): {'tilefuse' in names}; "
                    f"tilefuse.backend.optimize present: {hasattr(tilefuse_backend, 'optimize')}")

    # ------------------------------------------------------------------------------------------------------
    # Helpers to compile a model for inference in the documented ways.
    # ------------------------------------------------------------------------------------------------------
    def compile_model(model, how, **kw):
        torch._dynamo.reset()
        if how == "optimize":            # tilefuse.backend.optimize(model, measure=False): every chain, no timing
            return tilefuse_backend.optimize(model, **kw)
        if how == "backend":             # torch.compile(model, backend="tilefuse", ...): measured
            return torch.compile(model, backend="tilefuse", **kw)
        if how == "inductor":
            return torch.compile(model, **kw)
        raise ValueError(how)

    def run_inference(model, x, how="optimize", freezing=True, profile=True, log_level=logging.INFO, **kw):
        """First call (compiles) under the logger, a second call, then one profiled call."""
        f = compile_model(model, how, **kw)
        with capture_logs(log_level) as recs, torch.no_grad(), torch._inductor.config.patch(freezing=freezing):
            t0 = time.time()
            y = f(x)
            torch.cuda.synchronize()
            t_compile = time.time() - t0
            y = y.clone()
            f(x)
        counts = {}
        if profile:
            with torch.no_grad(), torch._inductor.config.patch(freezing=freezing):
                counts = profile_counts(lambda: f(x))
        return f, y, counts, recs, t_compile

    def fusion_summary(counts):
        ops = tf_ops(counts)
        s = ", ".join(f"{k} x{v}" for k, v in sorted(ops.items())) or "no tilefuse:: op"
        return f"aten conv {n_aten_conv(counts)}, aten mm/addmm {n_aten_mm(counts)}; {s}"

    def reason_lines(recs, keywords, min_level=logging.INFO):
        """(every line the logger said at min_level or above, the lines naming one of the keywords)."""
        lines = [ln.strip() for m in messages(recs, min_level) for ln in m.splitlines() if ln.strip()]
        hits = [ln for ln in lines if any(k in ln.lower() for k in keywords)]
        return lines, hits

    def short(s, n=220):
        s = " ".join(str(s).split())
        return s if len(s) <= n else s[: n - 3] + "..."

    # Model builders --------------------------------------------------------------------------------------
    class ConvAct(nn.Module):
        def __init__(self, act, c=64, bn=False, bias=True):
            super().__init__()
            self.conv = nn.Conv2d(c, c, 3, padding=1, bias=bias)
            self.bn = nn.BatchNorm2d(c) if bn else nn.Identity()
            self.act = act

        def forward(self, x):
            return self.act(self.bn(self.conv(x)))

    class Clamp06(nn.Module):
        def forward(self, x):
            return torch.clamp(x, 0.0, 6.0)

    class BasicBlock(nn.Module):   # conv + bias + BN + relu, conv + bias + BN + residual + relu
        def __init__(self, c=64):
            super().__init__()
            self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=True)
            self.bn1 = nn.BatchNorm2d(c)
            self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=True)
            self.bn2 = nn.BatchNorm2d(c)

        def forward(self, x):
            y = F.relu(self.bn1(self.conv1(x)))
            return F.relu(self.bn2(self.conv2(y)) + x)

    class ActThenResidual(nn.Module):   # act(BN(conv(x))) + x
        def __init__(self, c=64):
            super().__init__()
            self.conv = nn.Conv2d(c, c, 3, padding=1, bias=False)
            self.bn = nn.BatchNorm2d(c)

        def forward(self, x):
            return F.silu(self.bn(self.conv(x))) + x

    class UsedTwice(nn.Module):   # the conv's raw output feeds BN -> relu and the add: BN cannot be folded
        def __init__(self, c=64):
            super().__init__()
            self.conv = nn.Conv2d(c, c, 3, padding=1, bias=False)
            self.bn = nn.BatchNorm2d(c)

        def forward(self, x):
            y = self.conv(x)
            return F.relu(self.bn(y)) + y

    class LinAct(nn.Module):
        def __init__(self, k, n, act, residual=False, bias=True):
            super().__init__()
            self.lin = nn.Linear(k, n, bias=bias)
            self.act, self.residual = act, residual

        def forward(self, x):
            y = self.act(self.lin(x))
            return y + x if self.residual else y

    class LinDropRes(nn.Module):   # torchvision's MLP order: linear -> act -> dropout (eval) -> + residual
        def __init__(self, c):
            super().__init__()
            self.lin = nn.Linear(c, c)
            self.drop = nn.Dropout(0.1)

        def forward(self, x):
            return self.drop(F.gelu(self.lin(x))) + x

    def conv_bn_relu(cin=64, cout=64, k=3, stride=1, padding=1, groups=1):
        return nn.Sequential(nn.Conv2d(cin, cout, k, stride=stride, padding=padding, groups=groups, bias=False),
                             nn.BatchNorm2d(cout), nn.ReLU())

    def prepare(model_fp32, dtype, channels_last=True):
        """(model in dtype, fp32 twin), both eval on CUDA, same weights."""
        model_fp32 = randomize_bn(model_fp32).eval().to(dev)
        if channels_last:
            model_fp32 = model_fp32.to(memory_format=torch.channels_last)
        ref = copy.deepcopy(model_fp32).float()
        m = copy.deepcopy(model_fp32).to(dtype)
        return m, ref

    def make_input(shape, dtype, channels_last=True, seed=1):
        gen = torch.Generator(device="cuda").manual_seed(seed)
        x = torch.randn(*shape, device=dev, generator=gen).to(dtype)
        return chlast(x) if channels_last else x.contiguous()

    # ======================================================================================================
    # 1. Patterns
    # ======================================================================================================
    if 1 in only and tilefuse_backend is not None:
        conv_shape = (4, 64, 32, 32)
        cases = []
        # name, model ctor, dtype, input shape, input channels-last, expect ("taken"/"kept"), kind, reason keywords
        acts = {
            "relu": nn.ReLU(), "gelu": nn.GELU(), "gelu_tanh": nn.GELU(approximate="tanh"), "silu": nn.SiLU(),
            "sigmoid": nn.Sigmoid(), "hardswish": nn.Hardswish(), "relu6 (nn.ReLU6)": nn.ReLU6(),
            "clamp(0, 6)": Clamp06(),
        }
        cases.append(("conv+BN+relu", lambda: conv_bn_relu(), torch.bfloat16, conv_shape, True, "taken", "conv", None))
        cases.append(("ResNet basic block: conv+bias+BN+relu, conv+bias+BN+residual+relu", lambda: BasicBlock(),
                      torch.bfloat16, conv_shape, True, "taken", "conv", None))
        cases.append(("conv+BN+silu then +residual", lambda: ActThenResidual(), torch.bfloat16, conv_shape, True,
                      "taken", "conv", None))
        for an, a in acts.items():
            cases.append((f"conv+bias+{an}", (lambda a=a: ConvAct(copy.deepcopy(a))), torch.bfloat16, conv_shape,
                          True, "taken", "conv", None))
        cases.append(("conv+BN+relu fp16", lambda: conv_bn_relu(), torch.float16, conv_shape, True, "taken", "conv",
                      None))
        cases.append(("stem 7x7 s2, 3 input channels, +BN+relu",
                      lambda: conv_bn_relu(3, 64, 7, 2, 3), torch.bfloat16, (4, 3, 128, 128), True, "taken", "conv",
                      None))
        cases.append(("linear+bias+gelu", lambda: LinAct(256, 512, nn.GELU()), torch.bfloat16, (4, 16, 256), True,
                      "taken", "linear", None))
        cases.append(("linear+bias+gelu(tanh)", lambda: LinAct(256, 512, nn.GELU(approximate="tanh")), torch.bfloat16,
                      (4, 16, 256), True, "taken", "linear", None))
        cases.append(("linear+bias+silu+residual", lambda: LinAct(256, 256, nn.SiLU(), residual=True), torch.bfloat16,
                      (4, 16, 256), True, "taken", "linear", None))
        cases.append(("linear+bias+gelu, eval dropout, +residual", lambda: LinDropRes(256), torch.bfloat16,
                      (4, 16, 256), True, "taken", "linear", None))
        cases.append(("depthwise conv (groups=C)+BN+relu", lambda: conv_bn_relu(groups=64), torch.bfloat16,
                      conv_shape, True, "kept", "conv", ["group", "depthwise"]))
        cases.append(("intermediate used twice (conv out -> BN+relu and -> add)", lambda: UsedTwice(), torch.bfloat16,
                      conv_shape, True, "kept", "conv", ["twice", "users", "more than one use", "multiple uses"]))
        cases.append(("float32 model conv+BN+relu", lambda: conv_bn_relu(), torch.float32, conv_shape, True, "kept",
                      "conv", ["dtype", "float32"]))
        cases.append(("non-channels-last input (model channels-last) conv+BN+relu", lambda: conv_bn_relu(),
                      torch.bfloat16, conv_shape, False, "kept", "conv",
                      ["channels-last", "channels_last", "channels last", "layout", "stride", "contiguous"]))
        cases.append(("string padding ('same') conv+BN+relu",
                      lambda: nn.Sequential(nn.Conv2d(64, 64, 3, padding="same", bias=False), nn.BatchNorm2d(64),
                                            nn.ReLU()),
                      torch.bfloat16, conv_shape, True, "kept", "conv", ["padding", "string", "'same'"]))

        for name, ctor, dtype, shape, cl_in, expect, kind, keywords in cases:
            tag = f"1. {name}"
            state = {}
            with Row(f"{tag}: accuracy") as r:
                torch.manual_seed(0)
                model, ref = prepare(ctor(), dtype)
                x = make_input(shape, dtype, channels_last=cl_in)
                with torch.no_grad():
                    y_ref = ref(x.float())
                    y_eager = model(x)
                f, y, counts, recs, tc = run_inference(model, x, how="optimize", measure=False)
                state.update(counts=counts, recs=recs)
                if dtype == torch.float32:
                    cm, cl = rel_errs(y, y_ref)
                    r.ok = finite(y) and cm <= 1e-3 and cl <= 1e-3
                    r.detail = f"fp32 compiled vs fp32 eager: max {cm:.2e}, L2 {cl:.2e} (bound 1e-3); compile {tc:.1f} s"
                else:
                    r.ok, d = accuracy_verdict(y, y_eager, y_ref)
                    r.detail = f"{d}; out {tuple(y.shape)} {y.dtype}; compile {tc:.1f} s"
            with Row(f"{tag}: {'taken by tilefuse' if expect == 'taken' else 'left to Inductor'}") as r:
                if "counts" not in state:
                    raise RuntimeError("nothing to inspect: the accuracy step failed")
                counts, recs = state["counts"], state["recs"]
                left = n_aten_conv(counts) if kind == "conv" else n_aten_mm(counts)
                ops = tf_ops(counts)
                lines, _ = reason_lines(recs, [])
                if expect == "taken":
                    r.ok = left == 0 and len(ops) > 0
                else:
                    r.ok = left >= 1 and not ops
                r.detail = f"{fusion_summary(counts)}; log: {short(' / '.join(lines[1:] or lines), 260) or 'nothing'}"
            if expect == "kept":
                with Row(f"{tag}: the reason is logged at INFO on 'tilefuse.backend'") as r:
                    if "recs" not in state:
                        raise RuntimeError("nothing to inspect: the accuracy step failed")
                    lines, hits = reason_lines(state["recs"], keywords)
                    r.ok = bool(hits)
                    shown = hits[0] if hits else (" / ".join(lines) or "no INFO record on logger tilefuse.backend")
                    r.detail = f"{'a line names' if hits else 'NO line names'} one of {keywords}: {short(shown, 260)}"

    # ======================================================================================================
    # 4. Options (before the big models: small and quick)
    # ======================================================================================================
    if 4 in only and tilefuse_backend is not None:
        # 4a measure=False takes a host-bound batch-1 chain; the measured default decides, and says so.
        with Row("4a. optimize(model, measure=False) at batch 1 takes conv+BN+relu") as r:
            torch.manual_seed(0)
            model, ref = prepare(conv_bn_relu(), torch.bfloat16)
            x = make_input((1, 64, 32, 32), torch.bfloat16)
            with torch.no_grad():
                y_ref, y_eager = ref(x.float()), model(x)
            f, y, counts, recs, tc = run_inference(model, x, how="optimize", measure=False)
            ok_acc, d = accuracy_verdict(y, y_eager, y_ref)
            r.ok = ok_acc and n_aten_conv(counts) == 0 and bool(tf_ops(counts))
            r.detail = f"{fusion_summary(counts)}; {d}"
        with Row("4b. torch.compile(backend='tilefuse') measured default at batch 1: correct, the log says what "
                 "it chose") as r:
            f, y, counts, recs, tc = run_inference(model, x, how="backend")
            ok_acc, d = accuracy_verdict(y, y_eager, y_ref)
            lines, _ = reason_lines(recs, [])
            r.ok = ok_acc and len(lines) > 0
            r.detail = (f"{fusion_summary(counts)}; {d}; compile {tc:.1f} s; log: "
                        + (short(" / ".join(lines), 400) if lines else "the logger said nothing at INFO"))
        with Row("4c. measured choices kept in <cache>/backend_choices.json") as r:
            cache = os.environ.get("TILEFUSE_CACHE_DIR") or os.path.join(
                os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "tilefuse")
            path = os.path.join(cache, "backend_choices.json")
            r.ok = os.path.isfile(path)
            if r.ok:
                with open(path) as fh:
                    data = json.load(fh)
                n = len(data) if hasattr(data, "__len__") else -1
                r.ok = n > 0
                r.detail = f"{path}: {os.path.getsize(path)} bytes, {n} top-level entries"
            else:
                found = []
                for root, _dirs, files in os.walk(cache) if os.path.isdir(cache) else []:
                    found += [os.path.join(root, fn) for fn in files if "choice" in fn]
                r.detail = f"{path} missing; files named *choice* under {cache}: {found[:3]}"
        with Row("4d. freezing off: the BatchNorm fold follows a parameter change made after compiling") as r:
            torch.manual_seed(0)
            model, ref = prepare(conv_bn_relu(), torch.bfloat16)
            x = make_input((4, 64, 32, 32), torch.bfloat16)
            f, y0, counts, recs, tc = run_inference(model, x, how="optimize", freezing=False, measure=False)
            with torch.no_grad():
                for mm in (model, ref):
                    mm[1].weight.mul_(-1.5)
                    mm[1].running_var.mul_(3.0)
                    mm[1].running_mean.add_(0.25)
                y_ref, y_eager = ref(x.float()), model(x)
                with torch._inductor.config.patch(freezing=False):
                    y1 = f(x)
            ok_acc, d = accuracy_verdict(y1, y_eager, y_ref)
            changed = rel_errs(y0, y1)[1] > 0.1
            r.ok = ok_acc and changed and n_aten_conv(counts) == 0
            r.detail = f"after the change: {d}; output changed {changed}; {fusion_summary(counts)}"
        with Row("4e. mode='reduce-overhead' with freezing: correct, an earlier call's output not overwritten") as r:
            torch.manual_seed(0)
            model, ref = prepare(BasicBlock(), torch.bfloat16)
            x1 = make_input((8, 64, 32, 32), torch.bfloat16, seed=3)
            x2 = make_input((8, 64, 32, 32), torch.bfloat16, seed=4)
            f = compile_model(model, "backend", mode="reduce-overhead")
            with torch.no_grad(), torch._inductor.config.patch(freezing=True):
                ya = f(x1)
                yb = f(x2)
                yc = f(x1)
                yd = f(x2)
                torch.cuda.synchronize()
                r1, r2 = ref(x1.float()), ref(x2.float())
                e1, e2 = model(x1), model(x2)
            oks, ds = [], []
            for nm, yy, rr, ee in (("call1(x1)", ya, r1, e1), ("call2(x2)", yb, r2, e2), ("call3(x1)", yc, r1, e1),
                                   ("call4(x2)", yd, r2, e2)):
                ok_, d_ = accuracy_verdict(yy, ee, rr)
                oks.append(ok_)
                ds.append(f"{nm} {'ok' if ok_ else 'BAD: ' + d_}")
            r.ok = all(oks)
            r.detail = "; ".join(ds)

    # ======================================================================================================
    # 3. Training
    # ======================================================================================================
    if 3 in only and tilefuse_backend is not None:
        class TrainNet(nn.Module):
            def __init__(self):
                super().__init__()
                self.stem = nn.Conv2d(3, 32, 3, padding=1, bias=False)
                self.bn0 = nn.BatchNorm2d(32)
                self.c1 = nn.Conv2d(32, 64, 3, stride=2, padding=1, bias=True)
                self.c2 = nn.Conv2d(64, 64, 3, padding=1, bias=True)
                self.c3 = nn.Conv2d(64, 64, 3, padding=1, bias=False)
                self.bn3 = nn.BatchNorm2d(64)
                self.fc1 = nn.Linear(64, 128)
                self.fc2 = nn.Linear(128, 10)

            def forward(self, x):
                x = F.relu(self.bn0(self.stem(x)))          # conv + BN(train) + relu: must not be folded
                x = F.relu(self.c1(x))                      # conv + bias + relu
                x = F.relu(self.c2(x) + x)                  # conv + bias + residual + relu
                x = F.relu(self.bn3(self.c3(x)))            # conv + BN(train) + relu
                x = x.mean((2, 3))
                x = F.gelu(self.fc1(x))                     # linear + bias + gelu
                return self.fc2(x)                          # the head

        steps, lr = 5, 0.05
        gen = torch.Generator(device="cuda").manual_seed(7)
        xb = torch.randn(8, 3, 32, 32, device=dev, generator=gen)
        tb = torch.randint(0, 10, (8,), device=dev, generator=gen)
        torch.manual_seed(0)
        base = TrainNet().to(dev).to(memory_format=torch.channels_last).train()

        def train(model, compiled_fn, dtype, prof_last=False):
            opt = torch.optim.SGD(model.parameters(), lr=lr)
            x = chlast(xb.to(dtype))
            losses, grads0, all_finite = [], None, True
            for i in range(steps):
                out = compiled_fn(x)
                loss = F.cross_entropy(out.float(), tb)
                loss.backward()
                gs = [p.grad.detach().float().flatten() for p in model.parameters()]
                all_finite &= all(finite(gg) for gg in gs) and math.isfinite(loss.item())
                if i == 0:
                    grads0 = torch.cat(gs)
                losses.append(loss.item())
                opt.step()
                opt.zero_grad(set_to_none=True)
            counts = None
            if prof_last:
                def step():
                    out = compiled_fn(x)
                    F.cross_entropy(out.float(), tb).backward()
                    opt.zero_grad(set_to_none=True)
                counts = profile_counts(step)
            return losses, grads0, all_finite, counts

        st = {}
        with Row("3a. training: 5 SGD steps compiled (optimize, measure=False) vs eager bf16 / fp32: losses") as r:
            m32 = copy.deepcopy(base).float()
            mbf = copy.deepcopy(base).to(torch.bfloat16)
            mc = copy.deepcopy(base).to(torch.bfloat16)
            l32, g32, fin32, _ = train(m32, m32, torch.float32)
            lbf, gbf, finbf, _ = train(mbf, mbf, torch.bfloat16)
            torch._dynamo.reset()
            fc = tilefuse_backend.optimize(mc, measure=False)
            with capture_logs(logging.INFO) as recs:
                t0 = time.time()
                lc, gc, finc, counts = train(mc, fc, torch.bfloat16, prof_last=True)
                tc = time.time() - t0
            st.update(recs=recs, counts=counts, mc=mc, mbf=mbf, m32=m32, gc=gc, gbf=gbf, g32=g32, finc=finc)
            noise = max(abs(a - b) for a, b in zip(lbf, l32))
            bound = 2 * noise + 0.01 * statistics.mean(abs(v) for v in l32)
            st.update(l32=l32, bound=bound)
            dev_c = max(abs(a - b) for a, b in zip(lc, l32))
            r.ok = dev_c <= bound and finc and lc[-1] < lc[0]
            r.detail = (f"losses compiled {[round(v, 4) for v in lc]}, eager bf16 {[round(v, 4) for v in lbf]}, "
                        f"fp32 {[round(v, 4) for v in l32]}; max |compiled - fp32| {dev_c:.4f} <= bound {bound:.4f} "
                        f"(2 x max |bf16 eager - fp32| {noise:.4f} + 1% of the mean fp32 loss); loss falls "
                        f"{lc[-1] < lc[0]}; compile+steps {tc:.1f} s")
        with Row("3b. training: gradients finite, first step's gradients within 2x bf16 eager's error vs fp32") as r:
            if "gc" not in st:
                raise RuntimeError("3a failed before gradients existed")
            cl = (st["gc"] - st["g32"]).norm().item() / st["g32"].norm().item()
            el = (st["gbf"] - st["g32"]).norm().item() / st["g32"].norm().item()
            r.ok = st["finc"] and cl <= 2 * el + 1e-3
            r.detail = f"all steps finite {st['finc']}; grad rel L2 vs fp32: compiled {cl:.2e}, eager bf16 {el:.2e}"
        with Row("3c. training: BN in training mode not folded (stats updated like eager, conv kept, reason logged)") as r:
            if "mc" not in st:
                raise RuntimeError("3a failed")
            mc, mbf, m32 = st["mc"], st["mbf"], st["m32"]
            # The compiled model took 5 steps and one profiled forward + backward (no optimizer step): give eager
            # bf16 that 6th forward too, so both BatchNorms have seen the same 6 batches with the same weights.
            mbf(chlast(xb.to(torch.bfloat16)))
            rm_c, rm_e = mc.bn3.running_mean.float(), mbf.bn3.running_mean.float()
            rv_c, rv_e = mc.bn3.running_var.float(), mbf.bn3.running_var.float()
            moved = rm_c.abs().max().item() > 0 and (rv_c - 1).abs().max().item() > 0
            d_mean = (rm_c - rm_e).norm().item() / max(rm_e.norm().item(), 1e-12)
            d_var = (rv_c - rv_e).norm().item() / max(rv_e.norm().item(), 1e-12)
            msgs, hits = reason_lines(st["recs"], ["train"])
            counts = st["counts"]
            r.ok = moved and d_mean < 0.1 and d_var < 0.1 and n_aten_conv(counts) >= 2 and bool(hits)
            r.detail = (f"bn3 running stats moved {moved}; rel diff to eager bf16: mean {d_mean:.2e}, var {d_var:.2e} "
                        f"(< 0.1); aten convs in a step {n_aten_conv(counts)} (the 2 BN-train convs expected kept); "
                        f"reason: {short(hits[0]) if hits else 'no INFO line mentions training'}")
        with Row("3d. training: forward and backward run through tilefuse's kernels") as r:
            counts = st.get("counts")
            if counts is None:
                raise RuntimeError("3a failed before profiling")
            ops = tf_ops(counts)
            fwd = {k for k in ops if not any(s in k for s in ("grad", "dgrad", "wgrad", "mm"))}
            bwd = {k for k in ops if any(s in k for s in ("grad", "dgrad", "wgrad", "::mm"))}
            r.ok = bool(fwd) and bool(bwd)
            r.detail = (f"forward ops {sorted(fwd) or 'none'}; backward ops {sorted(bwd) or 'none'}; "
                        f"all tilefuse events {sorted(tf_any(counts))[:12]}")

        with Row("3e. training through torch.compile(model, backend='tilefuse') (measured default): 5 steps") as r:
            if "m32" not in st:
                raise RuntimeError("3a failed")
            md = copy.deepcopy(base).to(torch.bfloat16)
            torch._dynamo.reset()
            fd = torch.compile(md, backend="tilefuse")
            with capture_logs(logging.INFO) as recs:
                ld, _gd, find, counts = train(md, fd, torch.bfloat16, prof_last=True)
            l32 = st["l32"]
            dev_d = max(abs(a - b) for a, b in zip(ld, l32))
            r.ok = dev_d <= st["bound"] and find
            lines, _ = reason_lines(recs, [])
            r.detail = (f"losses {[round(v, 4) for v in ld]}; max |compiled - fp32| {dev_d:.4f} <= {st['bound']:.4f}; "
                        f"finite {find}; tilefuse ops {sorted(tf_ops(counts))}; log: {short(lines[0] if lines else '-', 160)}")

    # ======================================================================================================
    # 2. torchvision resnet18
    # ======================================================================================================
    if 2 in only and tilefuse_backend is not None:
        st2 = {}
        with Row("2a. resnet18 eval bf16 channels-last, torch.compile(backend='tilefuse') + freezing, batch 4 "
                 "128x128: logits") as r:
            import torchvision
            torch.manual_seed(0)
            model, ref = prepare(torchvision.models.resnet18(weights=None), torch.bfloat16)
            x = make_input((4, 3, 128, 128), torch.bfloat16, seed=11)
            with torch.no_grad():
                y_ref, y_eager = ref(x.float()), model(x)
            f, y, counts, recs, tc = run_inference(model, x, how="backend")
            st2.update(f=f, model=model, ref=ref)
            r.ok, d = accuracy_verdict(y, y_eager, y_ref)
            r.detail = f"{d}; {fusion_summary(counts)}; compile {tc:.1f} s"
        with Row("2b. resnet18 through the same compiled model, a new batch size (6)") as r:
            if "f" not in st2:
                raise RuntimeError("2a failed")
            f, model, ref = st2["f"], st2["model"], st2["ref"]
            x6 = make_input((6, 3, 128, 128), torch.bfloat16, seed=12)
            with torch.no_grad(), torch._inductor.config.patch(freezing=True):
                t0 = time.time()
                y6 = f(x6).clone()
                torch.cuda.synchronize()
                tc = time.time() - t0
                counts = profile_counts(lambda: f(x6))
                y_ref, y_eager = ref(x6.float()), model(x6)
            r.ok, d = accuracy_verdict(y6, y_eager, y_ref)
            r.detail = f"{d}; {fusion_summary(counts)}; first call {tc:.1f} s"
        with Row("2c. resnet18 via tilefuse.backend.optimize(model, measure=False): logits, convs taken") as r:
            import torchvision
            torch.manual_seed(0)
            model, ref = prepare(torchvision.models.resnet18(weights=None), torch.bfloat16)
            x = make_input((4, 3, 128, 128), torch.bfloat16, seed=11)
            with torch.no_grad():
                y_ref, y_eager = ref(x.float()), model(x)
            f, y, counts, recs, tc = run_inference(model, x, how="optimize", measure=False)
            ok_acc, d = accuracy_verdict(y, y_eager, y_ref)
            n_conv = sum(isinstance(m, nn.Conv2d) for m in model.modules())
            taken = n_conv - n_aten_conv(counts)
            # 20 convs: the stem, 16 in blocks (all chains), 3 downsample conv+BN: the stem and the 16 must go.
            r.ok = ok_acc and taken >= 17
            r.detail = f"{d}; convs {n_conv}, taken {taken} (>= 17 expected); {fusion_summary(counts)}; compile {tc:.1f} s"

        with Row("2d. resnet18 via optimize(model, measure=False): batch 4 then batch 6 (recompile, dynamic)") as r:
            import torchvision
            torch.manual_seed(0)
            model, ref = prepare(torchvision.models.resnet18(weights=None), torch.bfloat16)
            f = compile_model(model, "optimize", measure=False)
            ds, oks = [], []
            with torch.no_grad(), torch._inductor.config.patch(freezing=True):
                for n in (4, 6):
                    x = make_input((n, 3, 128, 128), torch.bfloat16, seed=30 + n)
                    y = f(x).clone()
                    counts = profile_counts(lambda: f(x))
                    ok_, d_ = accuracy_verdict(y, model(x), ref(x.float()))
                    oks.append(ok_)
                    ds.append(f"batch {n}: {'ok' if ok_ else d_}, {fusion_summary(counts)}")
            r.ok = all(oks)
            r.detail = "; ".join(ds)
        with Row("2e. resnet18 torch.compile(backend='tilefuse', dynamic=False) + freezing: batch 4 then 6") as r:
            import torchvision
            torch.manual_seed(0)
            model, ref = prepare(torchvision.models.resnet18(weights=None), torch.bfloat16)
            f = compile_model(model, "backend", dynamic=False)
            ds, oks = [], []
            with torch.no_grad(), torch._inductor.config.patch(freezing=True):
                for n in (4, 6):
                    x = make_input((n, 3, 128, 128), torch.bfloat16, seed=40 + n)
                    y = f(x).clone()
                    ok_, d_ = accuracy_verdict(y, model(x), ref(x.float()))
                    oks.append(ok_)
                    ds.append(f"batch {n}: {'ok' if ok_ else d_}")
            r.ok = all(oks)
            r.detail = "; ".join(ds)

    # ======================================================================================================
    # 5. Timing
    # ======================================================================================================
    if 5 in only and tilefuse_backend is not None:
        with Row("5. timing resnet50 eval bf16 channels-last: eager / Inductor(freezing) / tilefuse backend") as r:
            import torchvision
            elapsed = time.time() - T_START
            batch, res = args.timing_batch, args.timing_res
            if elapsed > args.budget_s + 120:
                r.status, r.detail = "SKIP", f"{elapsed:.0f} s already spent (budget {args.budget_s:.0f} + 120 s)"
            else:
                if elapsed > args.budget_s and batch > 8:
                    batch = 8
                torch.manual_seed(0)
                base = randomize_bn(torchvision.models.resnet50(weights=None)).eval().to(dev).to(
                    memory_format=torch.channels_last).to(torch.bfloat16)
                x = make_input((batch, 3, res, res), torch.bfloat16, seed=21)

                def bench(fn, iters=20, warm=10):
                    """(median of per-call CUDA-event times, mean per call by wall clock with a device-wide
                    synchronize: the second also counts work on streams other than the current one)."""
                    with torch.no_grad(), torch._inductor.config.patch(freezing=True):
                        for _ in range(warm):
                            fn(x)
                        torch.cuda.synchronize()
                        ts = []
                        for _ in range(iters):
                            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                            s.record()
                            fn(x)
                            e.record()
                            e.synchronize()
                            ts.append(s.elapsed_time(e))
                        torch.cuda.synchronize()
                        t0 = time.perf_counter()
                        for _ in range(iters):
                            fn(x)
                        torch.cuda.synchronize()
                        wall = (time.perf_counter() - t0) * 1e3 / iters
                    return statistics.median(ts), wall

                m_eager = copy.deepcopy(base)
                t_eager, w_eager = bench(m_eager)
                with torch.no_grad():
                    y_e = m_eager(x)
                m_ind = copy.deepcopy(base)
                f_ind = compile_model(m_ind, "inductor")
                t0 = time.time()
                with torch.no_grad(), torch._inductor.config.patch(freezing=True):
                    f_ind(x)
                c_ind = time.time() - t0
                t_ind, w_ind = bench(f_ind)
                del f_ind, m_ind
                m_tf = copy.deepcopy(base)
                f_tf = compile_model(m_tf, "backend")
                t0 = time.time()
                with capture_logs(logging.INFO) as recs, torch.no_grad(), \
                        torch._inductor.config.patch(freezing=True):
                    y_tf = f_tf(x).clone()
                c_tf = time.time() - t0
                t_tf, w_tf = bench(f_tf)
                t_eager2, w_eager2 = bench(m_eager)   # eager again: the clocks' drift shows in the two
                with torch.no_grad(), torch._inductor.config.patch(freezing=True):
                    counts = profile_counts(lambda: f_tf(x))
                lines, _ = reason_lines(recs, [])
                err = rel_errs(y_tf, y_e)[1]
                sane = finite(y_tf) and err < 0.05
                slow = max(t_tf / t_ind, w_tf / w_ind)
                r.ok = sane and slow <= 1.10
                r.detail = (f"batch {batch}, {res}x{res}; per call, CUDA-event median of 20 / wall mean of 20 with "
                            f"device sync: eager {t_eager:.2f} / {w_eager:.2f} ms (again at the end {t_eager2:.2f} / "
                            f"{w_eager2:.2f}), Inductor+freezing {t_ind:.2f} / {w_ind:.2f} ms (compile {c_ind:.0f} s), "
                            f"tilefuse {t_tf:.2f} / {w_tf:.2f} ms (compile {c_tf:.0f} s); tilefuse speed-up vs eager "
                            f"{t_eager / t_tf:.2f}x / {w_eager / w_tf:.2f}x, vs Inductor {t_ind / t_tf:.2f}x / "
                            f"{w_ind / w_tf:.2f}x; gate: tilefuse <= 1.10 x Inductor by both clocks (docs: 'never "
                            f"slower than torch's ops') and logits within 5% L2 of eager ({err:.2e}); the backend's "
                            f"graph: {fusion_summary(counts)}; log: {short(lines[0] if lines else '-', 240)}")

    return finish(args)


if __name__ == "__main__":
    try:
        rc = main()
    except SystemExit:
        raise
    except BaseException:  # noqa: BLE001 - a crash outside a row is still a report
        traceback.print_exc()
        add_row("harness", "FAIL", "the check script itself crashed: " + traceback.format_exc(limit=1)[-300:])
        rc = 1
    sys.exit(rc)
