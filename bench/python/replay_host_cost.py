"""Where the host time of a forward through the backend's CUDA-graph mode goes (ViT-B/16, bf16, channels-last,
eval, no grad): `torch.compile(model, backend="tilefuse", mode="reduce-overhead")` beside eager's hand-captured
graph, and the parts of one call taken apart, in one process.

  eager graph     eager's forward captured by hand, replayed (models.py's "eager graph" column)
  backend         the user's call: Dynamo's frame and guards, then the backend's ReplayedGraph
  replayed        that ReplayedGraph called directly with the inputs Dynamo gave it
  dynamo only     torch.compile with a backend returning a function that does nothing: Dynamo's own cost
  check / copies / replay / clone   the ReplayedGraph's steps, each timed alone

"events ms" is the median of CUDA events around one call, waited for (host included, as models.py times
it); "host us" the median time for the call to return with the GPU idle before it (what delays the GPU's
start in a waited-for forward). A cProfile of the backend's calls is written beside the markdown.

    python bench/python/replay_host_cost.py --batch 1 8 --markdown out.md
"""
import argparse
import cProfile
import io
import pathlib
import pstats
import statistics
import time

import torch
import torchvision
from models import captured  # bench/python/models.py, beside this script

import tilefuse  # noqa: F401 - registers the backend
from tilefuse import backend_graphs

CL = torch.channels_last


def waited_call(fn):
    """(start, end): CUDA events recorded around fn(), the end waited for."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    end.synchronize()
    return start, end


def events_ms(fn, reps=100):
    return statistics.median(start.elapsed_time(end) for start, end in (waited_call(fn) for _ in range(reps)))


def host_us(fn, reps=100):
    """Median host time of one call, the GPU idle before each."""
    samples = []
    for _ in range(reps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1e6)
    torch.cuda.synchronize()
    return statistics.median(samples)


def last_replayed():
    """Patches ReplayedGraph.__call__ to remember the instance and inputs of its latest call."""
    seen = {}
    call = backend_graphs.ReplayedGraph.__call__

    def remembering(self, *inputs):
        seen["graph"], seen["inputs"] = self, inputs
        return call(self, *inputs)

    backend_graphs.ReplayedGraph.__call__ = remembering
    return seen


def split_ms(fn, reps=100):
    """Medians of the GPU timeline of fn() split by events recorded around ReplayedGraph's own call and its
    graph's replay: from the start to the call (Dynamo), the call up to the replay (the address check and the
    input copies), the replay, the output clones, and the rest (where the GPU waits for the host, the stretch
    before it grows)."""
    call = backend_graphs.ReplayedGraph.__call__
    samples = {"lead": [], "copies": [], "replay": [], "clone": [], "after": []}
    marks = []

    def mark():
        event = torch.cuda.Event(enable_timing=True)
        event.record()
        marks.append(event)

    def timed(self, *inputs):
        if self.graph is None or self.why_not is not None:
            return call(self, *inputs)
        replay = self.graph.replay

        def marked_replay():
            mark()
            replay()
            mark()

        self.graph.replay = marked_replay  # an instance attribute over the class's method, for this call
        try:
            mark()
            out = call(self, *inputs)
            mark()
        finally:
            del self.graph.replay
        return out

    backend_graphs.ReplayedGraph.__call__ = timed
    try:
        for _ in range(reps):
            marks.clear()
            start, end = waited_call(fn)
            points = [start, *marks, end]
            for key, (a, b) in zip(samples, zip(points, points[1:])):
                samples[key].append(a.elapsed_time(b))
    finally:
        backend_graphs.ReplayedGraph.__call__ = call
    return {k: statistics.median(v) for k, v in samples.items()}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch", nargs="+", type=int, default=[1, 8])
    parser.add_argument("--markdown", default="replay-host-cost.md")
    args = parser.parse_args()
    from torch._inductor import config as inductor_config

    seen = last_replayed()
    rows, profiles = [], []
    model = torchvision.models.vit_b_16().cuda().eval().to(memory_format=CL).to(torch.bfloat16)
    for batch in args.batch:
        x = torch.randn(batch, 3, 224, 224, device="cuda", dtype=torch.bfloat16).contiguous(memory_format=CL)
        with torch.no_grad():
            replay = captured(model, x)
            torch._dynamo.reset()
            inductor_config.freezing = True
            compiled = torch.compile(model, backend="tilefuse", mode="reduce-overhead")
            for _ in range(5):
                compiled(x)
            inductor_config.freezing = False
            graph, inputs = seen["graph"], seen["inputs"]
            parts = {
                "eager graph": lambda: replay(x),
                "backend": lambda: compiled(x),
                "replayed": lambda: graph(*inputs),
                "check": lambda: graph._same_static_addresses(inputs),
                "copies": lambda: [b.copy_(inputs[i]) for i, b in graph._copies],
                "replay": lambda: graph.graph.replay(),
                "clone": lambda: backend_graphs._cloned(graph.outputs),
            }
            for fn in parts.values():
                for _ in range(10):
                    fn()
            row = {"batch": batch, "inputs": len(inputs), "static": len(graph._static_indices),
                   "copied": len(graph._copies), "captures": graph.captures, "why_not": graph.why_not}
            for name in ("eager graph", "backend", "replayed"):
                row[f"{name} events ms"] = events_ms(parts[name])
            for name, fn in parts.items():
                row[f"{name} host us"] = host_us(fn)
            for name, fn in (("backend", parts["backend"]), ("replayed", parts["replayed"])):
                for step, ms in split_ms(fn).items():
                    row[f"{name}: {step} ms"] = ms
            profiler = cProfile.Profile()
            torch.cuda.synchronize()
            profiler.enable()
            for _ in range(200):
                compiled(x)
                torch.cuda.synchronize()
            profiler.disable()
            text = io.StringIO()
            pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(30)
            profiles.append(f"## batch {batch}: cProfile of 200 backend calls (each followed by a synchronize)\n\n"
                            + text.getvalue())
            # Last: a second compiled entry for the same code would be looked up before the backend's.
            constant = compiled(x)
            nothing = torch.compile(model, backend=lambda gm, example: (lambda *a: (constant,)))
            nothing(x)
            row["dynamo only events ms"] = events_ms(lambda: nothing(x))
            row["dynamo only host us"] = host_us(lambda: nothing(x))
            print(row, flush=True)
            rows.append(row)
    keys = list(rows[0])
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    for r in rows:
        lines.append("| " + " | ".join(f"{r[k]:.4f}" if isinstance(r[k], float) else str(r[k]) for k in keys) + " |")
    pathlib.Path(args.markdown).write_text("\n".join(lines) + "\n")
    pathlib.Path(args.markdown).with_suffix(".profile.txt").write_text("\n".join(profiles))


if __name__ == "__main__":
    main()
