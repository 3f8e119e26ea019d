"""A ResNet block's conv + bias + residual + ReLU as one tilefuse kernel, from Python: checked against a float64
reference beside torch's own bf16 result (cuDNN's conv, then the pointwise ops), and timed beside torch.

    python examples/python/fused_conv.py [--batch 32] [--channels 256] [--size 14]

Without a CUDA GPU it says so and exits 0. The epilogue is a Python function: tilefuse traces it, the C++
planner picks the kernel, and the JIT compiles it once (or finds it prebuilt)."""
import argparse
import sys

import torch
import torch.nn.functional as F


def cuda_ms(fn, warmup=10, iters=50):
    """Median milliseconds of fn() by CUDA events."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(iters):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return sorted(times)[len(times) // 2]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--channels", type=int, default=256)
    parser.add_argument("--size", type=int, default=14)
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("no CUDA GPU here: this example needs one (tilefuse's kernels run on sm_80 or newer); nothing to do")
        return 0
    import tilefuse
    from tilefuse.epilogue import relu

    n, c, hw = args.batch, args.channels, args.size
    cl = dict(memory_format=torch.channels_last)
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(n, c, hw, hw, device="cuda", generator=g).to(torch.bfloat16).contiguous(**cl)
    w = (torch.randn(c, c, 3, 3, device="cuda", generator=g) * (9 * c) ** -0.5).to(torch.bfloat16).contiguous(**cl)
    b = torch.randn(c, device="cuda", generator=g).to(torch.bfloat16)
    r = torch.randn(n, c, hw, hw, device="cuda", generator=g).to(torch.bfloat16).contiguous(**cl)

    conv = tilefuse.Conv2d(stride=1, padding=1, epilogue=lambda acc, bias, residual: relu(acc + bias + residual))
    y = conv.run(x, w, bias=b, residual=r)
    want = torch.relu(F.conv2d(x.double(), w.double(), b.double(), padding=1) + r.double())
    torch_y = torch.relu(F.conv2d(x, w, b, padding=1) + r)
    scale = want.abs().max().item()
    ours, theirs = (y.double() - want).abs().max().item(), (torch_y.double() - want).abs().max().item()
    print(conv.plan(x, w, bias=b, residual=r).describe())
    print(f"max error against float64: tilefuse {ours:.3g}, torch bf16 {theirs:.3g} (largest value {scale:.3g})")
    if not ours <= 2 * theirs + 1e-3 * scale:
        print("FAILED: tilefuse's error is more than twice torch's")
        return 1
    ms = cuda_ms(lambda: conv.run(x, w, bias=b, residual=r))
    torch_ms = cuda_ms(lambda: torch.relu(F.conv2d(x, w, b, padding=1) + r))
    print(f"{n}x{c}x{hw}x{hw}, 3x3, {c} filters: tilefuse {ms:.4f} ms (one kernel), torch {torch_ms:.4f} ms "
          f"(cuDNN's conv + add + relu): {torch_ms / ms:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
