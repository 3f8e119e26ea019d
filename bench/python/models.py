"""Whole models in inference: torch eager, torch.compile (Inductor, freezing on) and torch.compile(backend=
"tilefuse"), one process, one GPU. bf16, channels-last, eval, no grad; median of CUDA-event timings of whole
forward passes after warm-up (host time included: what a user's loop sees), and the same replayed from a
CUDA graph where the compiled model can be captured. Each variant's logits are compared with the same model's
in float32 eager (max abs error / max abs logit), bf16 eager's error beside them.

Models: torchvision ResNet-50 and ViT-B/16, and UNet (below: BatchNorm + ReLU conv blocks, skip
connections by concatenation and by addition).

    python bench/python/models.py --batch 1 8 32 128 --json models.json --markdown models.md
"""
import argparse
import json
import logging
import re
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


def time_forward(fn, x, iters, warmup=5):
    for _ in range(warmup):
        fn(x)
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn(x)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def graph_ms(fn, x, iters):
    """Median ms of a CUDA-graph replay of one forward, or None when it cannot be captured."""
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
    return time_forward(lambda _: graph.replay(), x, iters, warmup=3)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", default=["resnet50", "vit_b_16", "unet"])
    parser.add_argument("--batch", nargs="+", type=int, default=[1, 8, 32, 128])
    parser.add_argument("--iters", type=int, default=30)
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
    rows = []
    for name in args.models:
        for batch in args.batch:
            torch.manual_seed(0)
            model, shape = build(name)
            model = model.cuda().eval().to(memory_format=CL)
            x32 = torch.randn(batch, *shape, device="cuda").contiguous(memory_format=CL)
            row = {"model": name, "batch": batch}
            counter.fused = counter.total = 0
            with torch.no_grad():
                reference = model(x32)
                model = model.to(torch.bfloat16)
                x = x32.to(torch.bfloat16)
                variants = {"eager": model}
                torch._dynamo.reset()
                inductor_config.freezing = True
                variants["inductor"] = torch.compile(model)
                variants["tilefuse"] = torch.compile(model, backend="tilefuse")
                for variant, fn in variants.items():
                    t0 = time.perf_counter()
                    # Compile time from scratch for each variant: no FX-graph, autotuning or Triton kernel
                    # caches (the backend, compiled second, would otherwise reuse Inductor's kernels).
                    with inductor_config.patch(force_disable_caches=True):
                        out = fn(x).float()
                    row[f"{variant}_first_s"] = time.perf_counter() - t0
                    row[f"{variant}_max_rel_err"] = ((out - reference).abs().max() / reference.abs().max()).item()
                    row[f"{variant}_ms"] = time_forward(fn, x, args.iters)
                    row[f"{variant}_graph_ms"] = graph_ms(fn, x, args.iters)
                inductor_config.freezing = False
            row["chains_fused"] = f"{counter.fused} / {counter.total}"
            row["tilefuse_vs_inductor"] = row["inductor_ms"] / row["tilefuse_ms"]
            row["tilefuse_vs_eager"] = row["eager_ms"] / row["tilefuse_ms"]
            rows.append(row)
            print({k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()}, flush=True)
    if args.json:
        json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__, "rows": rows},
                  open(args.json, "w"), indent=1)
    if args.markdown:
        lines = ["| model | batch | eager ms | Inductor ms | tilefuse ms | tilefuse vs faster of eager and Inductor | "
                 "graph: eager / Inductor / tilefuse ms | graph: tilefuse vs faster | "
                 "error vs fp32: eager / Inductor / tilefuse | first call s: Inductor / tilefuse | chains fused |",
                 "|---|---|---:|---:|---:|---:|---|---:|---|---|---:|"]
        for r in rows:
            graphs = " / ".join("-" if r[f"{v}_graph_ms"] is None else f"{r[f'{v}_graph_ms']:.3f}"
                                for v in ("eager", "inductor", "tilefuse"))
            peers = [r[f"{v}_graph_ms"] for v in ("eager", "inductor") if r[f"{v}_graph_ms"] is not None]
            graph_ratio = (f"{min(peers) / r['tilefuse_graph_ms']:.3f}" if peers and r["tilefuse_graph_ms"] else "-")
            errors = " / ".join(f"{r[f'{v}_max_rel_err']:.2g}" for v in ("eager", "inductor", "tilefuse"))
            lines.append(f"| {r['model']} | {r['batch']} | {r['eager_ms']:.3f} | {r['inductor_ms']:.3f} | "
                         f"{r['tilefuse_ms']:.3f} | {min(r['eager_ms'], r['inductor_ms']) / r['tilefuse_ms']:.3f} | "
                         f"{graphs} | {graph_ratio} | {errors} | "
                         f"{r['inductor_first_s']:.1f} / {r['tilefuse_first_s']:.1f} | {r['chains_fused']} |")
        open(args.markdown, "w").write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
