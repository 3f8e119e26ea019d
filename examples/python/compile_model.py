"""A whole model faster in one line: torch.compile(model, backend="tilefuse") (or tilefuse.optimize(model)) on
torchvision's ResNet-50 in inference, bf16, channels-last: BatchNorm folded into the convs, each conv with its
bias, activation and residual one tilefuse kernel, the rest compiled by Inductor. Checked against float32 eager
(beside bf16 eager's own error) and timed beside eager and Inductor (with frozen parameters).

    python examples/python/compile_model.py [--batch 32] [--size 224]

Without a CUDA GPU (or torchvision) it says so and exits 0. Compiling takes a minute or two the first time."""
import argparse
import sys

import torch

from fused_conv import cuda_ms


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--size", type=int, default=224)
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("no CUDA GPU here: this example needs one; nothing to do")
        return 0
    try:
        import torchvision
    except ImportError:
        print("torchvision is not installed (pip install torchvision); nothing to do")
        return 0
    import torch._inductor.config as inductor_config

    import tilefuse

    torch.manual_seed(0)
    full = torchvision.models.resnet50().cuda().eval()
    model = torchvision.models.resnet50().cuda().eval()
    model.load_state_dict(full.state_dict())
    model = model.to(torch.bfloat16).to(memory_format=torch.channels_last)
    x = torch.randn(args.batch, 3, args.size, args.size, device="cuda")
    xb = x.to(torch.bfloat16).contiguous(memory_format=torch.channels_last)
    with torch.no_grad(), inductor_config.patch(freezing=True):
        want = full(x).double()
        eager_out = model(xb)
        fused = tilefuse.optimize(model)
        inductor = torch.compile(model)
        got = fused(xb)
        inductor(xb)
        scale = want.abs().max().item()
        ours, theirs = (got.double() - want).abs().max().item(), (eager_out.double() - want).abs().max().item()
        print(f"logits' max error against float32 eager: tilefuse backend {ours:.3g}, bf16 eager {theirs:.3g} "
              f"(largest logit {scale:.3g})")
        if not ours <= 2 * theirs + 1e-3 * scale:
            print("FAILED: the backend's error is more than twice bf16 eager's")
            return 1
        eager_ms, inductor_ms, fused_ms = (cuda_ms(lambda f=f: f(xb), warmup=5, iters=20)
                                           for f in (model, inductor, fused))
    print(f"ResNet-50, batch {args.batch}, {args.size}x{args.size}, bf16 channels-last: eager {eager_ms:.3f} ms, "
          f"Inductor (freezing) {inductor_ms:.3f} ms, tilefuse backend {fused_ms:.3f} ms "
          f"({inductor_ms / fused_ms:.2f}x Inductor, {eager_ms / fused_ms:.2f}x eager)")
    print("what the backend took and why: logging.getLogger('tilefuse.backend').setLevel(logging.INFO)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
