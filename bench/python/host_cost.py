"""Host time per warm call (the enqueue alone, no synchronization) of tilefuse.Conv2d.run, the functional
op (tilefuse.ops.conv2d: the eager path), the custom op it registers (torch.ops.tilefuse.conv2d) and
tilefuse.nn.Conv2d, beside torch's F.conv2d, on one ResNet-50 layer.

    python bench/python/host_cost.py
"""
import time

import torch
import torch.nn.functional as F

import tilefuse
import tilefuse.nn
import tilefuse.ops as ops


def host_us(call, count=300):
    for _ in range(20):
        call()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(count):
        call()
    elapsed = time.perf_counter() - start
    torch.cuda.synchronize()
    return elapsed / count * 1e6


def main():
    cl = torch.channels_last
    x = torch.randn(8, 256, 14, 14, device="cuda", dtype=torch.bfloat16).contiguous(memory_format=cl)
    module = tilefuse.nn.Conv2d(256, 256, 3, padding=1, bias=False).to("cuda", torch.bfloat16).to(memory_format=cl)
    w = module.weight.detach()
    conv = tilefuse.Conv2d(padding=1)
    rows = [("tilefuse.Conv2d.run", lambda: conv.run(x, w)),
            ("tilefuse.ops.conv2d (eager path)", lambda: ops.conv2d(x, w, padding=1)),
            ("torch.ops.tilefuse.conv2d (custom op)", lambda: torch.ops.tilefuse.conv2d(x, w, None, None, [1, 1], [1, 1],
                                                                                         [1, 1], "none", "require")),
            ("tilefuse.nn.Conv2d forward", lambda: module(x)),
            ("torch F.conv2d", lambda: F.conv2d(x, w, padding=1))]
    print("| call | host us per call |\n|---|---|")
    with torch.no_grad():
        for name, call in rows:
            print(f"| {name} | {host_us(call):.1f} |")


if __name__ == "__main__":
    main()
