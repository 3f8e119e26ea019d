"""Which kernels the peer (cuBLAS through torch.mm) and tilefuse.Gemm launch for given GEMM shapes, and their GPU
time per call from torch.profiler. cuBLAS's Hopper kernels (nvjet) name their tile and split in the kernel
name, so this answers "what tile does the peer use here" before a tile is built to match it.

    python bench/python/peer_kernels.py --shapes 1576x768x3072,197x768x3072 --markdown peers.md

Operands: a row-major (m, k), b = (n, k) row-major transposed (the bench's "tn"), bf16, random normal; each
shape is run 5 times to warm up and 20 times under the profiler.
"""
import argparse
import collections
import sys

import torch
from torch.profiler import ProfilerActivity, profile

try:
    import tilefuse
except ImportError:  # the peer's kernels alone
    tilefuse = None


def kernel_times(fn, calls):
    """{kernel name: (launches per call, us per call)} of fn's GPU kernels over `calls` profiled calls."""
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    totals = collections.defaultdict(lambda: [0, 0.0])
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            totals[event.name][0] += 1
            totals[event.name][1] += event.device_time
    return {name: (count / calls, us / calls) for name, (count, us) in totals.items()}


def describe(times):
    rows = sorted(times.items(), key=lambda kv: -kv[1][1])
    return "<br>".join(f"`{name[:110]}` x{count:g} {us:.1f} us" for name, (count, us) in rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", required=True, help="comma-separated MxNxK")
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--markdown", help="write the table here too")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        sys.exit("peer_kernels.py needs a CUDA GPU")
    lines = [f"GPU: {torch.cuda.get_device_name()}, torch {torch.__version__}", "",
             "| shape (m x n x k) | cuBLAS us | cuBLAS kernels | tilefuse us | tilefuse kernels |",
             "|---|---:|---|---:|---|"]
    for shape in args.shapes.split(","):
        m, n, k = (int(v) for v in shape.lower().split("x"))
        a = torch.randn(m, k, device="cuda").to(torch.bfloat16)
        b = torch.randn(n, k, device="cuda").to(torch.bfloat16).t()
        peer = kernel_times(lambda: torch.mm(a, b), args.calls)
        ours = kernel_times(lambda gemm=tilefuse.Gemm(): gemm.run(a, b), args.calls) if tilefuse else {}
        lines.append(f"| {m}x{n}x{k} | {sum(t for _, t in peer.values()):.1f} | {describe(peer)} | "
                     f"{sum(t for _, t in ours.values()):.1f} | {describe(ours)} |")
        print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
