"""Where the time of a forward replayed from the backend's CUDA graph goes (ViT-B/16, bf16, eval, no grad):
the same frozen Inductor forward timed four ways in one process, beside eager's hand-captured graph.

  eager graph      eager's forward captured by hand, replayed (what models.py's "eager graph" column runs)
  replay direct    backend_graphs.ReplayedGraph over Inductor's frozen forward, called with Dynamo's inputs
  compiled         torch.compile with a backend returning that ReplayedGraph: the user's call (Dynamo included)
  host only        the compiled call's host time per call, calls back to back, no wait between them

Each "events" column is the median of CUDA events around one call, waited for (host included, as models.py
times it); "GPU" is back-to-back calls' event time over their count. Needs no built tilefuse package: the
replay class is loaded from its file.

    python bench/python/replay_host_cost.py --batch 1 8 --markdown out.md
"""
import argparse
import importlib.util
import pathlib
import statistics
import time

import torch
import torchvision
from models import captured  # bench/python/models.py, beside this script

ROOT = pathlib.Path(__file__).resolve().parents[2]


def load_replayed_graph():
    spec = importlib.util.spec_from_file_location("backend_graphs", ROOT / "python/tilefuse/backend_graphs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.ReplayedGraph


def events_ms(fn, reps=200):
    samples = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end))
    return statistics.median(samples)


def back_to_back_ms(fn, reps=200):
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / reps


def host_only_us(fn, reps=200):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    host = (time.perf_counter() - t0) / reps * 1e6
    torch.cuda.synchronize()
    return host


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch", nargs="+", type=int, default=[1, 8])
    parser.add_argument("--markdown")
    args = parser.parse_args()
    from torch._inductor import config as inductor_config
    from torch._inductor.compile_fx import compile_fx

    ReplayedGraph = load_replayed_graph()
    rows = []
    model = torchvision.models.vit_b_16().eval().cuda().to(torch.bfloat16)
    for batch in args.batch:
        x = torch.randn(batch, 3, 224, 224, device="cuda", dtype=torch.bfloat16)
        with torch.no_grad():
            replay = captured(model, x)  # models.py's hand capture, as its "eager graph" column
            eager_graph = lambda: replay(x)  # noqa: E731

            seen = {}

            def backend(gm, example_inputs):
                compiled = compile_fx(gm, example_inputs)
                replayed = ReplayedGraph(compiled)
                seen["replayed"], seen["inputs"] = replayed, list(example_inputs)
                return replayed

            torch._dynamo.reset()
            inductor_config.freezing = True
            compiled = torch.compile(model, backend=backend)
            for _ in range(5):
                compiled(x)
            inductor_config.freezing = False
            replayed, inputs = seen["replayed"], seen["inputs"]
            direct = lambda: replayed(*inputs)  # noqa: E731
            user = lambda: compiled(x)  # noqa: E731
            for fn in (eager_graph, direct, user):
                for _ in range(20):
                    fn()
            row = {
                "batch": batch,
                "inputs": len(inputs),
                "captures": replayed.captures,
                "why_not": replayed.why_not,
                "eager graph events": events_ms(eager_graph),
                "eager graph GPU": back_to_back_ms(eager_graph),
                "replay direct events": events_ms(direct),
                "replay direct GPU": back_to_back_ms(direct),
                "compiled events": events_ms(user),
                "compiled GPU": back_to_back_ms(user),
                "host only us (compiled)": host_only_us(user),
                "host only us (direct)": host_only_us(direct),
                "host only us (eager graph)": host_only_us(eager_graph),
            }
            row["captures after"] = replayed.captures
            print(row, flush=True)
            rows.append(row)
    if args.markdown:
        keys = list(rows[0])
        lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
        for r in rows:
            lines.append("| " + " | ".join(f"{r[k]:.4f}" if isinstance(r[k], float) else str(r[k]) for k in keys)
                         + " |")
        pathlib.Path(args.markdown).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
