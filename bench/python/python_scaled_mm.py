"""tilefuse.scaled_mm beside torch._scaled_mm (cuBLASLt) in the same process: per-tensor and row-wise scales,
promoted and fast accumulation, bf16 output. CUDA events around each call, warm-up, the median of --repeat
runs, operands rotated over sets larger than L2, random-normal data; TFLOP/s and the ratio (torch time / ours).

    python bench/python/python_scaled_mm.py [--shapes 8192x8192x8192,4096x4096x4096] [--repeat 30]
"""
import argparse
import statistics

import torch

import tilefuse
from python_timing import L2_BYTES, median_ms  # bench/python/python_timing.py

def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", default="8192x8192x8192,4096x4096x4096,4096x14336x4096,16384x8192x1024")
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}; e4m3 operands, bf16 output\n")
    print("| m x n x k | scales | accumulation | tilefuse ms | TFLOP/s | torch._scaled_mm ms | TFLOP/s | ratio |")
    print("|---|---|---|---:|---:|---:|---:|---:|")
    ratios = {}
    for shape in args.shapes.split(","):
        m, n, k = (int(v) for v in shape.split("x"))
        count = max(2, -(-2 * L2_BYTES // (m * k + n * k)))
        sets = []
        for _ in range(count):
            a = torch.randn(m, k, device="cuda").to(torch.float8_e4m3fn)
            b = torch.randn(n, k, device="cuda").to(torch.float8_e4m3fn).t()
            sets.append((a, b))
        for mode in ("per-tensor", "row-wise"):
            if mode == "per-tensor":
                sa, sb = torch.tensor(0.5, device="cuda"), torch.tensor(2.0, device="cuda")
            else:
                sa, sb = torch.rand(m, 1, device="cuda") + 0.5, torch.rand(1, n, device="cuda") + 0.5
            for fast in (False, True):
                ours = median_ms(lambda a, b: tilefuse.scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16,
                                                                 use_fast_accum=fast), sets, args.repeat)
                theirs = median_ms(lambda a, b: torch._scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16,
                                                                 use_fast_accum=fast), sets, args.repeat)
                flops = 2.0 * m * n * k
                ratios.setdefault((mode, fast), []).append(theirs / ours)
                print(f"| {shape} | {mode} | {'fast' if fast else 'promoted'} | {ours:.4f} | {flops / ours / 1e9:.0f} | "
                      f"{theirs:.4f} | {flops / theirs / 1e9:.0f} | {theirs / ours:.3f} |")
        del sets
    print("\ngeometric means (torch time / ours, > 1: tilefuse faster):")
    for (mode, fast), values in ratios.items():
        print(f"- {mode}, {'fast' if fast else 'promoted'} accumulation: {statistics.geometric_mean(values):.3f}")


if __name__ == "__main__":
    main()
