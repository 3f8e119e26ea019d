"""ViT-B/16 (torchvision, bf16, eval): eager, Inductor (freezing) and Inductor after the backend's attention pass
(python/tilefuse/backend_attention.py: nn.MultiheadAttention's fused op put back), with CUDA graphs (eager
captured by hand, Inductor's CUDA graphs) and without, timed as models.py times (the variants take turns
forward by forward, CUDA events around each, host included, medians). Needs torch and torchvision only (the
pass is loaded from its file, no tilefuse build), so it isolates what the pass is worth.

    python3 bench/python/vit_attention.py [--batch 8 128] [--iters 200] [--markdown out.md]
"""
import argparse
import functools
import importlib.util
import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from models import captured, interleaved_ms  # noqa: E402 - bench/python/models.py (torch only at import)

ROOT = pathlib.Path(__file__).resolve().parents[2]


def attention_pass():
    spec = importlib.util.spec_from_file_location("backend_attention",
                                                  ROOT / "python" / "tilefuse" / "backend_attention.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.native_attention


def with_pass(gm, example_inputs, mode=None, found=None):
    from torch._inductor import list_mode_options
    from torch._inductor.compile_fx import compile_fx

    found.extend(attention_pass()(gm))
    patches = dict(list_mode_options(mode)) if mode else {}
    patches["freezing"] = True
    return compile_fx(gm, example_inputs, config_patches=patches)


def with_pass_eager_ops(gm, example_inputs, graphs=False, found=None):
    """The pass, then the graph's own ops (eager kernels, no Inductor codegen): replayed from CUDA graphs by
    torch's "cudagraphs" backend, or run as the FX graph's Python."""
    found.extend(attention_pass()(gm))
    if graphs:
        return torch._dynamo.lookup_backend("cudagraphs")(gm, example_inputs)
    return gm.forward


def main():
    import torchvision

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, nargs="+", default=[8, 128])
    parser.add_argument("--iters", type=int, default=200)
    parser.add_argument("--markdown")
    args = parser.parse_args()
    torch.manual_seed(0)
    model = torchvision.models.vit_b_16().eval().cuda().to(torch.bfloat16)
    lines = [f"ViT-B/16, {torch.cuda.get_device_name()}, torch {torch.__version__}, bf16, eval", "",
             "| batch | CUDA graphs | eager | Inductor | Inductor + attention pass | pass vs faster of eager and Inductor "
             "| the pass, eager ops | eager ops vs the faster | attentions rewritten | max abs diff vs eager |",
             "|---|---|---:|---:|---:|---:|---:|---:|---|---:|"]
    for batch in args.batch:
        x = torch.randn(batch, 3, 224, 224, device="cuda", dtype=torch.bfloat16)
        for graphs in (True, False):
            mode = "reduce-overhead" if graphs else None
            found = []
            torch._dynamo.reset()
            with torch.no_grad():
                inductor = torch.compile(model, options={"freezing": True, "triton.cudagraphs": graphs})
                ours = torch.compile(model, backend=functools.partial(with_pass, mode=mode, found=found))
                ops = torch.compile(model, backend=functools.partial(with_pass_eager_ops, graphs=graphs, found=[]))
                want = model(x)
                diff = (ours(x).float() - want.float()).abs().max().item()
                diff = max(diff, (ops(x).float() - want.float()).abs().max().item())
                eager = captured(model, x) if graphs else model
                ms = interleaved_ms({"eager": eager, "inductor": inductor, "pass": ours, "ops": ops}, x, args.iters)
            rewritten = f"{sum(w is None for _, w in found)} of {len(found)}"
            lines.append(f"| {batch} | {'yes' if graphs else 'no'} | {ms['eager']:.3f} | {ms['inductor']:.3f} | "
                         f"{ms['pass']:.3f} | {min(ms['eager'], ms['inductor']) / ms['pass']:.3f} | {ms['ops']:.3f} | "
                         f"{min(ms['eager'], ms['inductor']) / ms['ops']:.3f} | {rewritten} | "
                         f"{diff:.4f} |")
            print(lines[-1], flush=True)
            if args.markdown:
                pathlib.Path(args.markdown).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
