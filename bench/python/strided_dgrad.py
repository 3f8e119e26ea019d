"""ResNet-50's six strided dgrads from Python, beside cuDNN (torch.nn.grad.conv2d_input) in the same process:
tilefuse.Conv2d("dgrad") by the planner's phases with each phase's kernel storing in place in dx (its row map),
and the same phases with their outputs copied into dx by strided copies (what ran before), both checked equal
bit for bit. GPU time by events around each call (python_timing.events_ms), operand sets over 2x L2.

    python bench/python/strided_dgrad.py --batch 64 --markdown strided-dgrad.md
"""
import argparse
import math
import sys

import torch

import tilefuse
from tilefuse.conv2d_phases import PhasedDgrad

from python_timing import events_ms, geomean  # bench/python/python_timing.py

CL = torch.channels_last
# (name, C, H, K, filter, stride): dx is N x C x H x H, the filter K x C x R x R, padding R // 2.
LAYERS = [("layer2.0.conv2", 128, 56, 128, 3, 2), ("layer2.0.downsample", 256, 56, 512, 1, 2),
          ("layer3.0.conv2", 256, 28, 256, 3, 2), ("layer3.0.downsample", 512, 28, 1024, 1, 2),
          ("layer4.0.conv2", 512, 14, 512, 3, 2), ("layer4.0.downsample", 1024, 14, 2048, 1, 2)]


def phased_of(conv):
    """The PhasedDgrad a dgrad Conv2d composed for its (one) problem."""
    return next(op for op in conv._operations.values() if isinstance(op, PhasedDgrad))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--reps", type=int, default=50)
    parser.add_argument("--markdown")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        sys.exit("strided_dgrad.py needs a CUDA GPU")
    torch.backends.cudnn.benchmark = True  # cuDNN's own choice per shape, as a training step runs it
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    lines = [f"GPU: {torch.cuda.get_device_name()}, torch {torch.__version__}, tilefuse {tilefuse.__version__}, "
             f"N = {args.batch}, bf16, channels-last", "",
             "| layer | dx | cuDNN ms | tilefuse in place ms | tilefuse copied ms | in place / copied | "
             "cuDNN / in place | equal |", "|---|---|---:|---:|---:|---:|---:|---|"]
    ratios, gains = [], []
    for name, c, h, k, r, stride in LAYERS:
        pad = r // 2
        p = (h + 2 * pad - r) // stride + 1
        dx_bytes = args.batch * c * h * h * 2
        count = max(2, math.ceil(2 * l2 / (dx_bytes + args.batch * k * p * p * 2)))
        sets = []
        for seed in range(count):
            g = torch.Generator(device="cuda").manual_seed(seed)
            dy = torch.randn(args.batch, k, p, p, device="cuda", generator=g).to(torch.bfloat16).contiguous(
                memory_format=CL)
            w = torch.randn(k, c, r, r, device="cuda", generator=g).to(torch.bfloat16).contiguous(memory_format=CL)
            sets.append((dy, w))
        size = (args.batch, c, h, h)
        in_place = tilefuse.Conv2d("dgrad", stride=stride, padding=pad)
        copied = tilefuse.Conv2d("dgrad", stride=stride, padding=pad)
        plan = in_place.plan(sets[0][0], sets[0][1], input_size=size)
        print(name, plan.describe(), flush=True)
        copied.run(sets[0][0], sets[0][1], input_size=size)
        phased_of(copied).store = lambda *a, **kw: None  # every phase through its own output and a strided copy
        a = in_place.run(sets[0][0], sets[0][1], input_size=size)
        b = copied.run(sets[0][0], sets[0][1], input_size=size)
        equal = torch.equal(a, b)

        def calls(fn):
            return [lambda s=s: fn(*s) for s in sets]

        cudnn = events_ms(calls(lambda dy, w: torch.nn.grad.conv2d_input(size, w, dy, stride=stride, padding=pad)),
                          args.reps)
        ours = events_ms(calls(lambda dy, w: in_place.run(dy, w, input_size=size)), args.reps)
        before = events_ms(calls(lambda dy, w: copied.run(dy, w, input_size=size)), args.reps)
        ratios.append(cudnn / ours)
        gains.append(ours / before)
        lines.append(f"| {name} | {args.batch}x{h}x{h}x{c} | {cudnn:.4f} | {ours:.4f} | {before:.4f} | "
                     f"{ours / before:.3f} | {cudnn / ours:.3f} | {equal} |")
        print(lines[-1], flush=True)
    lines += ["", f"- geomean cuDNN / in place {geomean(ratios):.3f}; in place / copied {geomean(gains):.3f}"]
    print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
