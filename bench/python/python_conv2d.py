"""tilefuse.Conv2d from Python beside PyTorch (cuDNN) in the same process: the fused conv + bias + ReLU +
residual of ResNet-50's layers (N=64, bf16, channels-last), and the bare dgrad / wgrad.

Peers: torch's eager `relu(conv2d(x, w, bias) + residual)` (cuDNN conv then elementwise kernels) and the
bare cuDNN calls. CUDA events, warm-up, the median of `--repeat` runs, inputs rotated over sets larger than
L2, random-normal data. Prints a markdown table; `--json` writes the rows.

    python bench/python/python_conv2d.py [--layers 0,3,7] [--repeat 20] [--json out.json]
"""
import argparse
import functools
import json
import statistics
import sys

import torch
import torch.nn.functional as F

import tilefuse
from python_timing import L2_BYTES, median_ms  # bench/python/python_timing.py
from tilefuse.epilogue import relu

# (C, H, W, K, R, S, stride, padding) at N = 64: the distinct ResNet-50 conv layers.
RESNET50 = [
    (64, 56, 56, 64, 1, 1, 1, 0), (64, 56, 56, 64, 3, 3, 1, 1), (64, 56, 56, 256, 1, 1, 1, 0),
    (256, 56, 56, 64, 1, 1, 1, 0), (256, 56, 56, 128, 1, 1, 1, 0), (128, 28, 28, 128, 3, 3, 1, 1),
    (128, 28, 28, 512, 1, 1, 1, 0), (512, 28, 28, 128, 1, 1, 1, 0), (512, 28, 28, 256, 1, 1, 1, 0),
    (256, 14, 14, 256, 3, 3, 1, 1), (256, 14, 14, 1024, 1, 1, 1, 0), (1024, 14, 14, 256, 1, 1, 1, 0),
    (1024, 14, 14, 512, 1, 1, 1, 0), (512, 7, 7, 512, 3, 3, 1, 1), (512, 7, 7, 2048, 1, 1, 1, 0),
    (2048, 7, 7, 512, 1, 1, 1, 0),
]
def layer_sets(layer, n, dtype):
    C, H, W, K, R, S, stride, pad = layer
    bytes_per_set = 2 * (n * C * H * W + K * C * R * S + 2 * n * K * (H // stride) * (W // stride))
    count = max(2, -(-2 * L2_BYTES // bytes_per_set))
    sets = []
    for _ in range(count):
        x = torch.randn(n, C, H, W, device="cuda").to(dtype).contiguous(memory_format=torch.channels_last)
        w = torch.randn(K, C, R, S, device="cuda").to(dtype).contiguous(memory_format=torch.channels_last)
        bias = torch.randn(K, device="cuda").to(dtype)
        y = F.conv2d(x, w, stride=stride, padding=pad)
        residual = torch.randn_like(y).contiguous(memory_format=torch.channels_last)
        sets.append((x, w, bias, residual, y))
    return sets


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", default=",".join(str(i) for i in range(len(RESNET50))))
    parser.add_argument("--n", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--json")
    args = parser.parse_args()
    torch.backends.cudnn.benchmark = True
    dtype = torch.bfloat16
    rows = []
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, "
          f"N = {args.n}, bf16, channels-last\n")
    print("| layer | C,HxW,K,RxS/s | fused ms | torch eager fused ms | ratio | dgrad ms | cuDNN dgrad ms | ratio | "
          "wgrad ms | cuDNN wgrad ms | ratio |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for index in (int(i) for i in args.layers.split(",")):
        layer = RESNET50[index]
        C, H, W, K, R, S, stride, pad = layer
        sets = layer_sets(layer, args.n, dtype)
        fused = tilefuse.Conv2d(stride=stride, padding=pad,
                                epilogue=lambda acc, bias, residual: relu(acc + bias + residual))
        dgrad = tilefuse.Conv2d("dgrad", stride=stride, padding=pad)
        wgrad = tilefuse.Conv2d("wgrad", stride=stride, padding=pad, kernel_size=(R, S))
        x_shape, w_shape = tuple(sets[0][0].shape), tuple(sets[0][1].shape)
        timed = functools.partial(median_ms, sets=sets, repeat=args.repeat, warmup=3)

        t_fused = timed(lambda x, w, b, r, y: fused.run(x, w, bias=b, residual=r))
        t_torch = timed(lambda x, w, b, r, y: torch.relu(F.conv2d(x, w, b, stride=stride, padding=pad) + r))
        t_dgrad = timed(lambda x, w, b, r, y: dgrad.run(r, w, input_size=x_shape))
        t_cudnn_dgrad = timed(lambda x, w, b, r, y: torch.nn.grad.conv2d_input(x_shape, w, r, stride=stride,
                                                                              padding=pad))
        t_wgrad = timed(lambda x, w, b, r, y: wgrad.run(r, x))
        t_cudnn_wgrad = timed(lambda x, w, b, r, y: torch.nn.grad.conv2d_weight(x, w_shape, r, stride=stride,
                                                                               padding=pad))
        row = dict(layer=index, shape=layer, fused_ms=t_fused, torch_fused_ms=t_torch, dgrad_ms=t_dgrad,
                   cudnn_dgrad_ms=t_cudnn_dgrad, wgrad_ms=t_wgrad, cudnn_wgrad_ms=t_cudnn_wgrad,
                   kernel=fused.plan(*sets[0][:2], bias=sets[0][2], residual=sets[0][3]).describe().split(" (wave model")[0])
        rows.append(row)
        print(f"| {index} | {C},{H}x{W},{K},{R}x{S}/{stride} | {t_fused:.4f} | {t_torch:.4f} | {t_torch / t_fused:.2f}x "
              f"| {t_dgrad:.4f} | {t_cudnn_dgrad:.4f} | {t_cudnn_dgrad / t_dgrad:.2f}x | {t_wgrad:.4f} | "
              f"{t_cudnn_wgrad:.4f} | {t_cudnn_wgrad / t_wgrad:.2f}x |")
        sys.stdout.flush()
        del sets
    geo = lambda key_a, key_b: statistics.geometric_mean(r[key_b] / r[key_a] for r in rows)  # noqa: E731
    print(f"\ngeometric mean of speed ratios (peer time / ours): fused vs torch eager {geo('fused_ms', 'torch_fused_ms'):.3f}x, "
          f"dgrad vs cuDNN {geo('dgrad_ms', 'cudnn_dgrad_ms'):.3f}x, wgrad vs cuDNN {geo('wgrad_ms', 'cudnn_wgrad_ms'):.3f}x")
    print("ratios > 1: tilefuse faster. Kernels (fused):")
    for r in rows:
        print(f"- layer {r['layer']}: {r['kernel']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
