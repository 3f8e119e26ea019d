"""The wgrad of few channels (ResNet-50's stem: x N x 3 x 224 x 224, 7 x 7, stride 2, K = 64) from Python, beside
cuDNN (torch.nn.grad.conv2d_weight) in the same process: tilefuse.Conv2d("wgrad") by the planner's im2col +
Hopper GEMM, its parts (dy transposed by gemm_pack.pack_k_major, x gathered by conv/kernel/gather_columns.h, the GEMM), and the direct sm80 kernel over x padded to
C = 8 (what ran before). GPU time by events around each call (python_timing.events_ms), two operand sets.

    python bench/python/stem_wgrad.py --batch 64 --markdown stem.md
"""
import argparse
import sys

import torch

import tilefuse
from tilefuse.conv2d_im2col import Im2colWgrad, launch_gather
from tilefuse.gemm_pack import pack_k_major

from python_timing import events_ms  # bench/python/python_timing.py

CL = torch.channels_last


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, nargs="+", default=[64])
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--markdown")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        sys.exit("stem_wgrad.py needs a CUDA GPU")
    lines = [f"GPU: {torch.cuda.get_device_name()}, torch {torch.__version__}, tilefuse {tilefuse.__version__}", "",
             "| N | cuDNN ms | tilefuse (im2col + GEMM) ms | cuDNN / tilefuse | dy transposed ms | x gathered ms | "
             "GEMM ms | direct sm80 (C = 8) ms |", "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for n in args.batch:
        sets = []
        for seed in range(2):
            g = torch.Generator(device="cuda").manual_seed(seed)
            x = torch.randn(n, 3, 224, 224, device="cuda", generator=g).to(torch.bfloat16).contiguous(memory_format=CL)
            dy = torch.randn(n, 64, 112, 112, device="cuda", generator=g).to(torch.bfloat16).contiguous(
                memory_format=CL)
            x8 = torch.nn.functional.pad(x, (0, 0, 0, 0, 0, 5)).contiguous(memory_format=CL)
            sets.append((x, dy, x8))
        conv = tilefuse.Conv2d("wgrad", padding=3, stride=2, kernel_size=(7, 7))
        direct = tilefuse.Conv2d("wgrad", padding=3, stride=2, kernel_size=(7, 7))
        print(conv.plan(sets[0][1], sets[0][0]).describe(), flush=True)

        def calls(fn):
            return [lambda s=s: fn(*s) for s in sets]

        cudnn = events_ms(calls(lambda x, dy, _: torch.nn.grad.conv2d_weight(x, (64, 3, 7, 7), dy, stride=2,
                                                                              padding=3)), args.reps)
        ours = events_ms(calls(lambda x, dy, _: conv.run(dy, x)), args.reps)
        wgrad = next(w for w in conv._warm.values() if isinstance(w, Im2colWgrad))
        pr = wgrad.problem
        pixels = pr.N * pr.P * pr.Q
        dyt, cols = wgrad.operands(sets[0][1], sets[0][0])
        transpose = events_ms(calls(lambda x, dy, _: pack_k_major(dy.permute(0, 2, 3, 1).reshape(pixels, pr.K).t(),
                                                                 dyt.shape[1])), args.reps)
        gather = events_ms(calls(lambda x, dy, _: launch_gather(x, cols, pr, 3)), args.reps)
        gemm = events_ms([lambda: wgrad.gemm.run(dyt, cols.t())], args.reps)
        sm80 = events_ms(calls(lambda x, dy, x8: direct.run(dy, x8)), args.reps)
        lines.append(f"| {n} | {cudnn:.4f} | {ours:.4f} | {cudnn / ours:.3f} | {transpose:.4f} | {gather:.4f} | "
                     f"{gemm:.4f} | {sm80:.4f} |")
        print(lines[-1], flush=True)
        print("GEMM:", wgrad.gemm.plan(dyt, cols.t()).describe(), flush=True)
    text = "\n".join(lines) + "\n"
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
