"""ResNet-50's six strided dgrads from Python, beside cuDNN (aten.convolution_backward, x channels-last as a training step passes it) in the same process:
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
             "| layer | dx | cuDNN ms | tilefuse in place ms | in place, phases in turn ms | tilefuse copied ms | "
             "beside / in turn | in place / copied | cuDNN / in place | equal |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---|"]
    ratios, gains, besides = [], [], []
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
        in_turn = tilefuse.Conv2d("dgrad", stride=stride, padding=pad)
        plan = in_place.plan(sets[0][0], sets[0][1], input_size=size)
        print(name, plan.describe(), flush=True)
        copied.run(sets[0][0], sets[0][1], input_size=size)
        phased_of(copied).store = lambda *a, **kw: None  # every phase through its own output and a strided copy
        in_turn.run(sets[0][0], sets[0][1], input_size=size)
        for phase in phased_of(in_turn).phases:  # each phase after the one before (no beside_previous)
            phase.conv.row_mapped_call = lambda *a, beside_previous=False, call=phase.conv.row_mapped_call: call(*a)
        phased_of(in_turn)._stores.clear()
        a = in_place.run(sets[0][0], sets[0][1], input_size=size)
        b = copied.run(sets[0][0], sets[0][1], input_size=size)
        turned = in_turn.run(sets[0][0], sets[0][1], input_size=size)
        equal = torch.equal(a, b) and torch.equal(a, turned)

        def calls(fn):
            return [lambda s=s: fn(*s) for s in sets]

        # As a training step's backward asks cuDNN: x channels-last (torch.nn.grad.conv2d_input passes an expanded
        # NCHW stand-in for x, which sends cuDNN to slower NCHW kernels: 2-3x on the 3x3 rows).
        x_like = torch.empty(size, dtype=torch.bfloat16, device="cuda", memory_format=CL)

        def cudnn_dgrad(dy, w):
            return torch.ops.aten.convolution_backward(dy, x_like, w, None, (stride, stride), (pad, pad), (1, 1), False,
                                                       (0, 0), 1, (True, False, False))[0]

        cudnn = events_ms(calls(cudnn_dgrad), args.reps)
        ours = events_ms(calls(lambda dy, w: in_place.run(dy, w, input_size=size)), args.reps)
        before = events_ms(calls(lambda dy, w: copied.run(dy, w, input_size=size)), args.reps)
        turn = events_ms(calls(lambda dy, w: in_turn.run(dy, w, input_size=size)), args.reps)
        ratios.append(cudnn / ours)
        gains.append(ours / before)
        besides.append(ours / turn)
        lines.append(f"| {name} | {args.batch}x{h}x{h}x{c} | {cudnn:.4f} | {ours:.4f} | {turn:.4f} | {before:.4f} | "
                     f"{ours / turn:.3f} | {ours / before:.3f} | {cudnn / ours:.3f} | {equal} |")
        print(lines[-1], flush=True)
    lines += ["", f"- geomean cuDNN / in place {geomean(ratios):.3f}; in place / copied {geomean(gains):.3f}; "
              f"phases beside / in turn {geomean(besides):.3f}"]
    print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
