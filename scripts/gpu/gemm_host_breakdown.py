"""Where a warm Gemm.run's host time goes: the whole call beside its parts (the C++ table called directly, the
table's miss path on CPU tensors, the output's allocation) and torch's own calls of the same size.
python scripts/gpu/gemm_host_breakdown.py"""
import time

import torch

import tilefuse
from tilefuse import fast_path


def host_us(call, count=2000):
    for _ in range(50):
        call()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(count):
            call()
        best = min(best, time.perf_counter() - start)
        torch.cuda.synchronize()
    return best / count * 1e6


a = torch.randn(128, 64, device="cuda", dtype=torch.bfloat16)
b = torch.randn(64, 128, device="cuda", dtype=torch.bfloat16).t().contiguous().t()  # K-major b
gemm = tilefuse.Gemm()
gemm.run(a, b)
gemm.run(a, b)
names = gemm._names.get(())
cpu = torch.empty(0)
out = torch.empty(128, 128, device="cuda", dtype=torch.bfloat16)
rows = [
    ("Gemm.run(a, b)", lambda: gemm.run(a, b)),
    ("fast_path.repeat_run(gemm, a, b, {})", lambda: fast_path.repeat_run(gemm, a, b, {})),
    ("gemm._table(a, b, names) (C++ table, hit)", lambda: gemm._table(a, b, names)),
    ("gemm._table(cpu, cpu, names) (binding + miss)", lambda: gemm._table(cpu, cpu, names)),
    ("torch.empty(128, 128) on the GPU", lambda: torch.empty(128, 128, device="cuda", dtype=torch.bfloat16)),
    ("torch.empty_like(out)", lambda: torch.empty_like(out)),
    ("torch.mm(a, b)", lambda: torch.mm(a, b)),
    ("torch.mm(a, b, out=out)", lambda: torch.mm(a, b, out=out)),
    ("a.add_(0) (one elementwise kernel)", lambda: a.add_(0)),
]
print(f"# Gemm.run host breakdown, {torch.cuda.get_device_name()}, torch {torch.__version__}\n")
print("| call | host us (best of 5 x 2000) |\n|---|---:|")
for name, call in rows:
    print(f"| {name} | {host_us(call):.2f} |")
