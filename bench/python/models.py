"""Whole models in inference: torch eager, torch.compile (Inductor, freezing on) and torch.compile(backend=
"tilefuse"), one process, one GPU. bf16, channels-last, eval, no grad; median of CUDA-event timings of whole
forward passes after warm-up (host time included: what a user's loop sees), the variants of each table taking
turns forward by forward; and like with like under CUDA graphs: eager captured by hand, Inductor and the backend each with
mode="reduce-overhead". Each variant's logits are compared with the same model's
in float32 eager (max abs error / max abs logit), bf16 eager's error beside them.

Models: torchvision ResNet-50 and ViT-B/16, and UNet (below: BatchNorm + ReLU conv blocks, skip
connections by concatenation and by addition).

    python bench/python/models.py --batch 1 8 32 128 --json models.json --markdown models.md
"""
import argparse
import json
import logging
import re
import signal
import statistics
import time

import torch
import torch.nn as nn

CL = torch.channels_last


class ConvBlock(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout)
        self.c2, self.b2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout)
        self.skip = nn.Conv2d(cin, cout, 1, bias=False) if cin != cout else nn.Identity()

    def forward(self, x):
        y = torch.relu(self.b1(self.c1(x)))
        return torch.relu(self.b2(self.c2(y)) + self.skip(x))


class UNet(nn.Module):
    """A small UNet: four levels of residual conv blocks, max-pool down, transposed-conv up, skips by
    concatenation."""

    def __init__(self, channels=(64, 128, 256, 512), cin=3, cout=8):
        super().__init__()
        self.stem = nn.Conv2d(cin, channels[0], 3, padding=1)
        self.down = nn.ModuleList(ConvBlock(a, b) for a, b in zip(channels[:1] + channels[:-1], channels))
        self.up = nn.ModuleList(nn.ConvTranspose2d(b, a, 2, stride=2) for a, b in zip(channels[:-1], channels[1:]))
        self.merge = nn.ModuleList(ConvBlock(2 * a, a) for a in channels[:-1])
        self.head = nn.Conv2d(channels[0], cout, 1)

    def forward(self, x):
        x = self.stem(x)
        skips = []
        for i, block in enumerate(self.down):
            x = block(x)
            if i < len(self.down) - 1:
                skips.append(x)
                x = torch.nn.functional.max_pool2d(x, 2)
        for up, merge in zip(reversed(self.up), reversed(self.merge)):
            x = merge(torch.cat([up(x), skips.pop()], dim=1))
        return self.head(x)


def build(name):
    import torchvision

    if name == "resnet50":
        return torchvision.models.resnet50(), (3, 224, 224)
    if name == "vit_b_16":
        model = torchvision.models.vit_b_16()
        nn.init.normal_(model.heads.head.weight, std=0.02)  # torchvision starts it at zero: all logits 0
        return model, (3, 224, 224)
    return UNet(), (3, 256, 256)


def interleaved_ms(fns, x, count, warmup=5, min_seconds=1.0):
    """{name: median ms of one forward} for fns {name: fn}, CUDA events around each forward (host included),
    the variants taking turns forward by forward, the order reversed every other round: a host's drift (these
    machines swing by tens of percent over seconds) and the slot in the round fall on all of them alike. At
    least `count` forwards each, more for fast forwards (min_seconds of timing per variant): host-bound
    small batches are the noisiest."""
    for fn in fns.values():
        for _ in range(warmup):
            fn(x)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for fn in fns.values():
        fn(x)
    torch.cuda.synchronize()
    each = (time.perf_counter() - start) / max(len(fns), 1)
    count = max(count, min(int(min_seconds / max(each, 1e-6)), 2000))
    times = {name: [] for name in fns}
    order = list(fns.items())
    for round_ in range(count):
        for name, fn in (order if round_ % 2 == 0 else order[::-1]):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn(x)
            end.record()
            end.synchronize()
            times[name].append(start.elapsed_time(end))
    return {name: statistics.median(t) for name, t in times.items()}


def captured(fn, x):
    """A function replaying one forward of fn(x) from a CUDA graph (x's contents at capture), or None."""
    try:
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(3):
                fn(x)
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            fn(x)
    except Exception as error:  # noqa: BLE001 - report, do not stop the benchmark
        print(f"  (no CUDA graph: {type(error).__name__}: {str(error)[:120]})")
        return None
    return lambda _: graph.replay()


# The compiled variants: (name, torch.compile keyword arguments). Without CUDA graphs, then each with its own
# (Inductor's and the backend's mode="reduce-overhead"; eager is captured by hand, see captured).
COMPILED = {"inductor": {}, "tilefuse": {"backend": "tilefuse"},
            "inductor_graph": {"mode": "reduce-overhead"},
            "tilefuse_graph": {"backend": "tilefuse", "mode": "reduce-overhead"}}
# Like with like: the backend with the same mode compiles what it does not take (and the graph it races against)
# with max-autotune too, so its row beside Inductor's is the same Inductor on both sides.
MAX_AUTOTUNE = {"inductor_max_autotune": {"mode": "max-autotune-no-cudagraphs"},
                "tilefuse_max_autotune": {"backend": "tilefuse", "mode": "max-autotune-no-cudagraphs"}}


class CompileTimeout(Exception):
    """A variant's first call (its compile) ran past --compile-limit-s."""


class compile_limit:
    """Raises CompileTimeout in this (main) thread after limit seconds; no limit where limit is None."""

    def __init__(self, limit):
        self.limit = limit

    def __enter__(self):
        if self.limit:
            def expire(signum, frame):
                raise CompileTimeout()
            self.previous = signal.signal(signal.SIGALRM, expire)
            signal.setitimer(signal.ITIMER_REAL, self.limit)

    def __exit__(self, *exc):
        if self.limit:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self.previous)
        return False


def timed_out(error):
    """Whether error is, or was raised while handling or from, a CompileTimeout."""
    seen = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, CompileTimeout):
            return True
        seen.add(id(error))
        error = getattr(error, "inner_exception", None) or error.__cause__ or error.__context__
    return False


def graph_variant(name):
    """Whether a variant replays a CUDA graph (the second table's rows)."""
    return name.endswith("_graph")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", default=["resnet50", "vit_b_16", "unet"],
                        choices=["resnet50", "vit_b_16", "unet"])
    parser.add_argument("--batch", nargs="+", type=int, default=[1, 8, 32, 128])
    parser.add_argument("--iters", type=int, default=60, help="timed forwards per variant (taking turns)")
    parser.add_argument("--max-autotune", action="store_true",
                        help="also Inductor, and the backend, with mode='max-autotune-no-cudagraphs' (minutes of compile per row)")
    parser.add_argument("--compile-limit-s", type=float,
                        help="give up a compiled variant whose first call takes longer (the issue's \"where its "
                        "compile ends within 10 minutes\" for max-autotune); the row records it and goes on")
    parser.add_argument("--warm-caches", action="store_true",
                        help="compile every row with Inductor's caches on (the first call's time is then not a "
                        "compile time; by default each model's first batch compiles from scratch, the others warm)")
    parser.add_argument("--variants", nargs="+", choices=sorted({**COMPILED, **MAX_AUTOTUNE}),
                        help="only these compiled variants (default all; eager and eager's graph always run)")
    parser.add_argument("--one-loop", action="store_true",
                        help="time every variant in one loop (default: the variants with CUDA graphs take turns "
                             "among themselves, the others among themselves)")
    parser.add_argument("--json")
    parser.add_argument("--markdown")
    parser.add_argument("--log", action="store_true", help="print the backend's choice for every chain")
    args = parser.parse_args()
    if args.log:
        logging.basicConfig(format="%(message)s")
        logging.getLogger("tilefuse.backend").setLevel(logging.INFO)
    import torch._inductor.config as inductor_config

    import tilefuse.backend  # noqa: F401 - the backend's logger; the backend itself is found by name

    class FusedCount(logging.Handler):
        """Sums the backend's "N of M ... chains fused" over a model's graphs (the report's fused column)."""

        def __init__(self):
            super().__init__(logging.INFO)
            self.fused = self.total = 0

        def emit(self, record):
            found = re.search(r"(\d+) of (\d+) conv and linear chains fused", record.getMessage())
            if found:
                self.fused += int(found.group(1))
                self.total += int(found.group(2))

    counter = FusedCount()
    backend_log = logging.getLogger("tilefuse.backend")
    backend_log.addHandler(counter)
    if not args.log:
        backend_log.setLevel(logging.INFO)
        backend_log.propagate = False  # counted, not printed

    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False  # the float32 reference is float32
    compiled = dict(COMPILED, **(MAX_AUTOTUNE if args.max_autotune else {}))
    if args.variants:
        compiled = {v: how for v, how in compiled.items() if v in args.variants}
    rows = []
    for name in args.models:
        for batch in args.batch:
            torch.manual_seed(0)
            model, shape = build(name)
            model = model.cuda().eval().to(memory_format=CL)
            x32 = torch.randn(batch, *shape, device="cuda").contiguous(memory_format=CL)
            cold = batch == args.batch[0] and not args.warm_caches
            row = {"model": name, "batch": batch, "cold_compile": cold}
            with torch.no_grad():
                reference = model(x32)
                model = model.to(torch.bfloat16)
                x = x32.to(torch.bfloat16)
                variants = {"eager": model}
                torch._dynamo.reset()
                inductor_config.freezing = True
                for variant, how in compiled.items():
                    counter.fused = counter.total = 0
                    fn = variants[variant] = torch.compile(model, **how)
                    t0 = time.perf_counter()
                    # Compile time from scratch for each variant at a model's first batch: no FX-graph,
                    # autotuning or Triton kernel caches (the backend would otherwise reuse Inductor's kernels).
                    # tilefuse's own choices (timed per shape and device) are not cached from an earlier run.
                    try:
                        with inductor_config.patch(force_disable_caches=cold), compile_limit(args.compile_limit_s):
                            out = fn(x).float()
                    except Exception as error:  # Inductor wraps the alarm's CompileTimeout in its InductorError
                        if not timed_out(error):
                            raise
                        row[f"{variant}_note"] = f"compile not done in {args.compile_limit_s:.0f} s"
                        print(f"  {name} {batch} {variant}: {row[f'{variant}_note']}", flush=True)
                        del variants[variant]  # no reset: the row's other compiled variants stay compiled
                        continue
                    row[f"{variant}_first_s"] = time.perf_counter() - t0
                    row[f"{variant}_max_rel_err"] = ((out - reference).abs().max() / reference.abs().max()).item()
                    if variant.startswith("tilefuse"):
                        row[f"{variant}_chains_fused"] = f"{counter.fused} / {counter.total}"
                out = model(x).float()
                row["eager_max_rel_err"] = ((out - reference).abs().max() / reference.abs().max()).item()
                timed = dict(variants, eager_graph=captured(model, x))
                timed = {v: fn for v, fn in timed.items() if fn is not None}
                # Each table's variants take turns among themselves: a forward replayed from a CUDA graph that
                # follows an uncompiled eager forward starts with the host's caches cold, which costs the
                # variants with Python before their replay (Dynamo's frame and guards: 0.585 -> 0.670 ms on
                # ViT-B/16 at batch 1) and not eager's hand replay (docs/notes/python_path.md). --one-loop: all
                # variants in one loop, as before.
                if args.one_loop:
                    medians = interleaved_ms(timed, x, args.iters)
                else:
                    medians = {}
                    for graphs in (False, True):
                        group = {v: fn for v, fn in timed.items() if graph_variant(v) == graphs}
                        medians.update(interleaved_ms(group, x, args.iters) if group else {})
                for variant in timed:
                    row[f"{variant}_ms"] = medians.get(variant)
                inductor_config.freezing = False
            def ratio(peers, ours):
                found = [row[p] for p in peers if row.get(p) is not None]
                return min(found) / row[ours] if found and row.get(ours) else None

            row["tilefuse_vs_faster"] = ratio(("eager_ms", "inductor_ms"), "tilefuse_ms")
            row["tilefuse_graph_vs_faster"] = ratio(("eager_graph_ms", "inductor_graph_ms"), "tilefuse_graph_ms")
            row["tilefuse_vs_inductor"] = ratio(("inductor_ms",), "tilefuse_ms")
            row["tilefuse_graph_vs_inductor_graph"] = ratio(("inductor_graph_ms",), "tilefuse_graph_ms")
            rows.append(row)
            print({k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()}, flush=True)
            if args.json:  # after every row: a run cut short keeps what it measured
                json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": rows},
                          open(args.json, "w"), indent=1)
            if args.markdown:
                open(args.markdown, "w").write(markdown(rows))


def fmt(v, digits=3):
    return "-" if v is None else f"{v:.{digits}f}"


def table(rows, graph):
    """One markdown table: the variants without CUDA graphs, or (graph) each with its own."""
    x = "_graph" if graph else ""
    errored = ("inductor", "tilefuse") if graph else ("eager", "inductor", "tilefuse")  # eager's graph: same
    lines = ["| model | batch | eager | Inductor | tilefuse | vs faster of eager and Inductor | vs Inductor | "
             f"chains fused | error vs fp32: {' / '.join(n.replace('inductor', 'Inductor') for n in errored)} | "
             "first call s: Inductor / tilefuse |", "|---|---|---:|---:|---:|---:|---:|---:|---|---|"]
    for r in rows:
        if r.get(f"tilefuse{x}_ms") is None:
            continue  # that variant was not run (--variants)
        errors = " / ".join(fmt(r.get(f"{v}{x}_max_rel_err" if v != "eager" else "eager_max_rel_err"), 2)
                            for v in errored)
        vs_inductor = r.get(f"tilefuse{x}_vs_inductor" if x else "tilefuse_vs_inductor")
        lines.append(f"| {r['model']} | {r['batch']}{' (cold)' if r['cold_compile'] else ''} | "
                     f"{fmt(r.get(f'eager{x}_ms'))} | {fmt(r.get(f'inductor{x}_ms'))} | {fmt(r[f'tilefuse{x}_ms'])} | "
                     f"{fmt(r.get(f'tilefuse{x}_vs_faster'))} | "
                     f"{fmt(r.get('tilefuse_graph_vs_inductor_graph') if x else vs_inductor)} | "
                     f"{r.get(f'tilefuse{x}_chains_fused', '-')} | {errors} | "
                     f"{fmt(r.get(f'inductor{x}_first_s'), 1)} / {fmt(r.get(f'tilefuse{x}_first_s'), 1)} |")
    return lines


def markdown(rows):
    lines = ["Without CUDA graphs (median ms of one forward, host included; first call s: the compile from "
             "scratch where the row's batch says cold, else with Inductor's caches warm):", "", *table(rows, False),
             "", "With CUDA graphs (eager captured by hand; Inductor's and the backend's mode=\"reduce-overhead\"):",
             "", *table(rows, True)]
    if any(f"{v}_{k}" in r for r in rows for v in MAX_AUTOTUNE for k in ("ms", "note")):
        lines += ["", "mode=\"max-autotune-no-cudagraphs\" (no CUDA graphs; timed with the first table's variants): "
                  "Inductor, and the backend given the same mode (Inductor max-autotune for what it does not take)",
                  "", "| model | batch | Inductor max-autotune ms | tilefuse ms | vs it | tilefuse max-autotune ms | vs it "
                  "| first call s: Inductor / tilefuse max-autotune |", "|---|---|---:|---:|---:|---:|---:|---|"]

        def first(r, v):
            return fmt(r[f"{v}_first_s"], 1) if r.get(f"{v}_first_s") is not None else r.get(f"{v}_note", "-")

        for r in rows:
            ms, ours, ours_ma = r.get("inductor_max_autotune_ms"), r.get("tilefuse_ms"), r.get("tilefuse_max_autotune_ms")
            lines.append(f"| {r['model']} | {r['batch']} | {fmt(ms)} | {fmt(ours)} | "
                         f"{fmt(ms / ours if ms and ours else None)} | {fmt(ours_ma)} | "
                         f"{fmt(ms / ours_ma if ms and ours_ma else None)} | "
                         f"{first(r, 'inductor_max_autotune')} / {first(r, 'tilefuse_max_autotune')} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
