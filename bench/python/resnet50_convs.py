"""Where a ResNet-50 training step's convolution time goes: every distinct conv of torchvision's ResNet-50 at
one batch size, in each of its training modes (fprop, dgrad, wgrad), through the functions tilefuse.nn.Conv2d
calls and through cuDNN (F.conv2d; aten.convolution_backward with one output asked for, as autograd calls
it), with the kernel tilefuse's planner picked (an RGB stem padded to 8 channels and a strided dgrad by phases,
as tilefuse.nn.Conv2d runs them). GPU time by CUDA-graph replay over operand sets larger than
2 x L2 (conv_layers.graph_ms); a step's sum weights each conv by how often the model runs it. The stem's dgrad
is not run in training (its input needs no gradient) and is left out of the sums.

    python bench/python/resnet50_convs.py --batch 64 --markdown convs.md --json convs.json
"""
import argparse
import json
import math
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from python_timing import graph_ms  # noqa: E402

from tilefuse import conv_ops  # noqa: E402
from tilefuse.op_common import channels_to_pad, pad_channels  # noqa: E402

CL = torch.channels_last


def model_convs(batch):
    """[(problem, count)] of torchvision's ResNet-50 at this batch, in first-use order; a problem is
    (x shape, weight shape, stride, padding, dilation)."""
    import torchvision

    model = torchvision.models.resnet50().to("cuda", torch.bfloat16).to(memory_format=CL)
    seen = {}

    def hook(module, inputs, _):
        key = (tuple(inputs[0].shape), tuple(module.weight.shape), tuple(module.stride), tuple(module.padding),
               tuple(module.dilation))
        seen[key] = seen.get(key, 0) + 1

    for m in model.modules():
        if isinstance(m, torch.nn.Conv2d):
            m.register_forward_hook(hook)
    with torch.no_grad():
        model(torch.zeros(batch, 3, 224, 224, device="cuda", dtype=torch.bfloat16).contiguous(memory_format=CL))
    return list(seen.items())


def calls(problem, mode, sets, generator):
    """(tilefuse calls, cuDNN calls, describe) of one mode of a problem over `sets` operand sets."""
    xs, ws, stride, padding, dilation = problem
    geo = (list(stride), list(padding), list(dilation))
    ys = conv_ops.output_shape(torch.empty(xs, device="meta"), torch.empty(ws, device="meta"), *geo)

    def randn(shape):
        return torch.randn(shape, device="cuda", generator=generator).to(torch.bfloat16).contiguous(memory_format=CL)

    ours, peer = [], []
    pad_c = channels_to_pad(torch.empty(xs, dtype=torch.bfloat16, device="meta"),
                            torch.empty(ws, dtype=torch.bfloat16, device="meta"))
    for _ in range(sets):
        x, w, dy = randn(xs), randn(ws), randn(ys)
        if mode == "fprop":  # the op pads an RGB stem's channels itself
            ours.append(lambda x=x, w=w: conv_ops.conv2d(x, w, None, None, *geo))
            peer.append(lambda x=x, w=w: F.conv2d(x, w, None, *geo))
        elif mode == "dgrad":
            ours.append(lambda dy=dy, w=w: conv_ops._dgrad_impl(dy, w, list(xs), *geo))
            peer.append(lambda dy=dy, x=x, w=w: torch.ops.aten.convolution_backward(
                dy, x, w, None, *geo, False, [0, 0], 1, [True, False, False]))
        elif pad_c:  # training computes the padded weight's gradient from the padded x (autograd slices it)
            x_padded, ws_padded = pad_channels(x, pad_c), [ws[0], ws[1] + pad_c, *ws[2:]]
            ours.append(lambda dy=dy, x=x_padded: conv_ops._wgrad_impl(dy, x, ws_padded, *geo))
            peer.append(lambda dy=dy, x=x, w=w: torch.ops.aten.convolution_backward(
                dy, x, w, None, *geo, False, [0, 0], 1, [False, True, False]))
        else:
            ours.append(lambda dy=dy, x=x: conv_ops._wgrad_impl(dy, x, list(ws), *geo))
            peer.append(lambda dy=dy, x=x, w=w: torch.ops.aten.convolution_backward(
                dy, x, w, None, *geo, False, [0, 0], 1, [False, True, False]))
    x, w, dy = randn(xs), randn(ws), randn(ys)
    if pad_c and mode != "dgrad":
        x, w = pad_channels(x, pad_c), pad_channels(w, pad_c)
    if mode == "fprop":
        describe = conv_ops._conv("forward", *geo, "require").plan(x, w).describe()
    elif mode == "dgrad":
        describe = conv_ops._conv("dgrad", *geo, "require").plan(dy, w, input_size=xs).describe()
    else:
        describe = conv_ops._conv("wgrad", *geo, "require", kernel_size=tuple(ws[2:])).plan(dy, x).describe()
    return ours, peer, describe


def kernel_of(describe):
    """The kernel family and tile in a describe() text, short."""
    head = describe.split(" (wave model")[0].split("; kernel from")[0].split("\n")[0]
    return head[:90]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--per-graph", type=int, default=10)
    parser.add_argument("--json")
    parser.add_argument("--markdown")
    args = parser.parse_args()
    torch.backends.cudnn.benchmark = True
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    generator = torch.Generator(device="cuda").manual_seed(1)
    rows = []
    for index, (problem, count) in enumerate(model_convs(args.batch)):
        xs, ws = problem[0], problem[1]
        ys = conv_ops.output_shape(torch.empty(xs, device="meta"), torch.empty(ws, device="meta"),
                                   *(list(v) for v in problem[2:]))
        set_bytes = 2 * (math.prod(xs) + math.prod(ws) + math.prod(ys))
        sets = max(2, math.ceil(2 * l2 / set_bytes) + 1)
        for mode in ("fprop", "dgrad", "wgrad"):
            if mode == "dgrad" and index == 0:
                continue  # the stem: its input needs no gradient
            ours_calls, peer_calls, describe = calls(problem, mode, sets, generator)
            ours = graph_ms(ours_calls, args.reps, args.per_graph)
            peer = graph_ms(peer_calls, args.reps, args.per_graph)
            row = dict(conv=index, x=list(xs), w=list(ws), stride=list(problem[2]), padding=list(problem[3]), mode=mode,
                       count=count, tilefuse_ms=ours, cudnn_ms=peer, ratio=peer / ours, describe=describe)
            rows.append(row)
            print(f"#{index:<2} x{count} {str(xs):>20} {str(ws):>18} s{problem[2][0]} {mode:5} tilefuse {ours:.4f} "
                  f"cuDNN {peer:.4f} ({peer / ours:.3f}x)  {kernel_of(describe)}", flush=True)
            del ours_calls, peer_calls
            torch.cuda.empty_cache()
    sums = {}
    for mode in ("fprop", "dgrad", "wgrad", "all"):
        sel = [r for r in rows if mode in (r["mode"], "all") and r["count"]]
        sums[mode] = dict(tilefuse_ms=sum(r["tilefuse_ms"] * r["count"] for r in sel),
                          cudnn_ms=sum(r["cudnn_ms"] * r["count"] for r in sel))
        print(f"per step {mode}: tilefuse {sums[mode]['tilefuse_ms']:.3f} ms, cuDNN {sums[mode]['cudnn_ms']:.3f} ms",
              flush=True)
    if args.json:
        json.dump(dict(device=torch.cuda.get_device_name(), torch=torch.__version__, batch=args.batch, rows=rows,
                       per_step=sums), open(args.json, "w"), indent=1)
    if args.markdown:
        lines = [f"ResNet-50 convs at batch {args.batch}, bf16, channels-last, {torch.cuda.get_device_name()}: GPU ms "
                 "per call (CUDA-graph replay), cuDNN / tilefuse", "",
                 "| conv | x | w | stride | mode | count | tilefuse ms | cuDNN ms | cuDNN / tilefuse | (count x) lost ms "
                 "| tilefuse kernel |", "|---|---|---|---|---|---:|---:|---:|---:|---:|---|"]
        for r in rows:
            lost = (r["tilefuse_ms"] - r["cudnn_ms"]) * r["count"]
            lines.append(f"| #{r['conv']} | {tuple(r['x'])} | {tuple(r['w'])} | {r['stride'][0]} | {r['mode']} | "
                         f"{r['count']} | {r['tilefuse_ms']:.4f} | {r['cudnn_ms']:.4f} | {r['ratio']:.3f} | {lost:+.3f} "
                         f"| {kernel_of(r['describe'])} |")
        lines += [""] + [f"- per step, {m}: tilefuse {s['tilefuse_ms']:.3f} ms, cuDNN {s['cudnn_ms']:.3f} ms "
                         f"({s['cudnn_ms'] / s['tilefuse_ms']:.3f}x)" for m, s in sums.items()]
        open(args.markdown, "w").write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
