"""Host cost of one warm call of tilefuse.Gemm.run / tilefuse.Conv2d.run / the torch ops: the Python work
(checks, plan lookup, output allocation, parameter packing) plus the launch, on problems so small that the
GPU waits for the host. Prints microseconds per call (mean over --calls back-to-back calls, the GPU queue
drained before and after) beside torch's own fused eager equivalent, and with --profile the functions
that cost the most (cProfile).

    python bench/python/python_overhead.py [--calls 2000] [--profile]
"""
import argparse
import cProfile
import pstats
import time

import torch
import torch.nn.functional as F

import tilefuse
import tilefuse.ops
from tilefuse.epilogue import relu


def per_call_us(fn, calls):
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / calls * 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    bf16, cl = torch.bfloat16, torch.channels_last
    a = torch.randn(128, 64, device="cuda", dtype=bf16)
    w = torch.randn(128, 64, device="cuda", dtype=bf16)
    bias = torch.randn(128, device="cuda", dtype=bf16)
    gemm = tilefuse.Gemm(epilogue=lambda acc, bias: relu(acc + bias))
    x = torch.randn(1, 64, 8, 8, device="cuda", dtype=bf16).contiguous(memory_format=cl)
    wc = torch.randn(64, 64, 3, 3, device="cuda", dtype=bf16).contiguous(memory_format=cl)
    bc = torch.randn(64, device="cuda", dtype=bf16)
    residual = torch.randn(1, 64, 8, 8, device="cuda", dtype=bf16).contiguous(memory_format=cl)
    conv = tilefuse.Conv2d(padding=1, epilogue=lambda acc, bias, residual: relu(acc + bias) + residual)
    cases = {
        "tilefuse.Gemm.run (128x128x64, bias+relu)": lambda: gemm.run(a, w.t(), bias=bias),
        "torch relu(F.linear) (same)": lambda: torch.relu(F.linear(a, w, bias)),
        "tilefuse.ops.linear (same, custom op)": lambda: tilefuse.ops.linear(a, w, bias, activation="relu"),
        "tilefuse.Conv2d.run (1x64x8x8, 3x3, bias+relu+residual)": lambda: conv.run(x, wc, bias=bc, residual=residual),
        "torch relu(F.conv2d + b) + r (same)": lambda: torch.relu(F.conv2d(x, wc, bc, padding=1)) + residual,
        "tilefuse.ops.conv2d (bias+relu+residual, custom op)":
            lambda: tilefuse.ops.conv2d(x, wc, bc, residual, padding=1, activation="relu"),
    }
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}; {args.calls} warm calls each\n")
    print("| call | us per call |\n|---|---|")
    for name, fn in cases.items():
        print(f"| {name} | {per_call_us(fn, args.calls):.1f} |")
    if args.profile:
        for name in ("tilefuse.Gemm.run (128x128x64, bias+relu)", "tilefuse.Conv2d.run (1x64x8x8, 3x3, bias+relu+residual)"):
            fn = cases[name]
            profiler = cProfile.Profile()
            profiler.enable()
            for _ in range(args.calls):
                fn()
            profiler.disable()
            torch.cuda.synchronize()
            print(f"\n## {name}: cProfile, top 25 by own time\n```")
            pstats.Stats(profiler).sort_stats("tottime").print_stats(25)
            print("```")


if __name__ == "__main__":
    main()
