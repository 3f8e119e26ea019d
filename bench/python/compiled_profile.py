"""Where a compiled model's forward spends its host time: torch.compile with Inductor (freezing on) beside the
tilefuse backend (as it chooses, and taking every chain), one model and batch, bf16, channels-last, no grad.
Per variant: the forward's median ms (CUDA events around one forward, host included), the host's enqueue
alone (perf_counter, no synchronization) and the ops with the most host time under torch.profiler.

    python bench/python/compiled_profile.py --model resnet50 --batch 1 [--top 25] [--markdown out.md]

Run it with TORCH_LOGS=output_code to see the wrapper code Inductor generates around tilefuse's ops.
"""
import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from models import build, interleaved_ms  # noqa: E402


def host_ms(fn, x, iters):
    """Median host time of one forward's enqueue (synchronized between forwards, not inside)."""
    times = []
    for _ in range(iters):
        torch.cuda.synchronize()
        start = time.perf_counter()
        fn(x)
        times.append((time.perf_counter() - start) * 1e3)
    torch.cuda.synchronize()
    return statistics.median(times)


def profile_table(fn, x, top):
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(10):
            fn(x)
        torch.cuda.synchronize()
    return prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=top)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="resnet50")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--iters", type=int, default=50)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--markdown")
    args = parser.parse_args()
    import torch._inductor.config as inductor_config

    import tilefuse.backend

    torch.backends.cudnn.benchmark = True
    torch.manual_seed(0)
    model, shape = build(args.model)
    model = model.cuda().eval().to(memory_format=torch.channels_last).to(torch.bfloat16)
    x = torch.randn(args.batch, *shape, device="cuda", dtype=torch.bfloat16).contiguous(
        memory_format=torch.channels_last)
    inductor_config.freezing = True
    lines = [f"# {args.model} N = {args.batch}, {torch.cuda.get_device_name()}, torch {torch.__version__}", ""]
    with torch.no_grad():
        from torch._inductor.compile_fx import compile_fx

        def compile_fx_alone(gm, example_inputs):  # Inductor behind a custom backend, nothing rewritten
            return compile_fx(gm, example_inputs)

        variants = {"eager": model, "inductor": torch.compile(model),
                    "compile_fx as a custom backend": torch.compile(model, backend=compile_fx_alone),
                    "tilefuse": torch.compile(model, backend="tilefuse"),
                    "tilefuse (every chain)": tilefuse.backend.optimize(model, measure=False)}
        for fn in variants.values():
            fn(x)
        forward = interleaved_ms(variants, x, args.iters)
        host = {name: host_ms(fn, x, args.iters) for name, fn in variants.items()}
        lines += ["| variant | forward ms (CUDA events, variants taking turns) | host enqueue ms |", "|---|---:|---:|"]
        for name in variants:
            lines.append(f"| {name} | {forward[name]:.3f} | {host[name]:.3f} |")
        for name, fn in variants.items():
            lines += ["", f"## {name}: top {args.top} ops by self CPU time (10 forwards)", "", "```",
                      profile_table(fn, x, args.top), "```"]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.markdown:
        Path(args.markdown).write_text(text)


if __name__ == "__main__":
    main()
