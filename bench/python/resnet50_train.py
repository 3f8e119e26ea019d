"""A ResNet-50 training step with every convolution a tilefuse.nn.Conv2d, beside torch eager (cuDNN).

torchvision's ResNet-50, bf16, channels-last, batch 64, SGD with momentum; BatchNorm stays torch's. Both
models start from the same weights and see the same batches: the losses of the first steps must agree
within bf16 noise. Step time: CUDA events around each step after warm-up, median. The per-kernel
breakdown (torch.profiler, GPU time per kernel name over a few steps) shows where the time goes.

    python bench/python/resnet50_train.py --markdown resnet50_train.md --json resnet50_train.json
"""
import argparse
import copy
import json
import statistics
import time

import torch
import torch.nn.functional as F

import tilefuse
import tilefuse.nn

CL = torch.channels_last


def with_tilefuse_convs(model):
    """Every torch.nn.Conv2d of `model` replaced by a tilefuse.nn.Conv2d sharing its parameters."""
    for name, child in model.named_children():
        if type(child) is torch.nn.Conv2d:
            setattr(model, name, tilefuse.nn.Conv2d.from_torch(child))
        else:
            with_tilefuse_convs(child)
    return model


def train(model, batches, steps, warmup, host_times=None):
    """(losses, step ms by CUDA events); host_times, when a list, gets each timed step's host ms (the wall time
    until opt.step() returns, before the step's synchronization: what the CPU spends enqueueing it)."""
    opt = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
    losses, times = [], []
    for i in range(warmup + steps):
        x, y = batches[i % len(batches)]
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t0 = time.perf_counter()
        start.record()
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x).float(), y)
        loss.backward()
        opt.step()
        end.record()
        t1 = time.perf_counter()
        end.synchronize()
        losses.append(loss.item())
        if i >= warmup:
            times.append(start.elapsed_time(end))
            if host_times is not None:
                host_times.append((t1 - t0) * 1e3)
    return losses, times


def host_profile(model, batches, path, steps=5, top=30):
    """cProfile of `steps` training steps (after one untimed), the top functions by their own time, to `path`."""
    import cProfile
    import io
    import pstats

    train(model, batches, 1, 0)
    torch.cuda.synchronize()
    profiler = cProfile.Profile()
    profiler.enable()
    train(model, batches, steps, 0)
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(top)
    open(path, "w").write(out.getvalue())


def kernel_table(model, batch, steps=3, top=12):
    """(kernel name, ms per step) of the GPU kernels of `steps` training steps, largest first."""
    opt = torch.optim.SGD(model.parameters(), lr=0.0)
    x, y = batch
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            opt.zero_grad(set_to_none=True)
            F.cross_entropy(model(x).float(), y).backward()
            opt.step()
        torch.cuda.synchronize()
    rows = {}
    for event in prof.key_averages():
        if event.device_type == torch.autograd.DeviceType.CUDA or getattr(event, "device_time_total", 0):
            total = getattr(event, "device_time_total", None) or getattr(event, "cuda_time_total", 0)
            if total:
                rows[event.key] = rows.get(event.key, 0.0) + total / 1e3 / steps
    return sorted(rows.items(), key=lambda kv: -kv[1])[:top], sum(rows.values())


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--json")
    parser.add_argument("--markdown")
    parser.add_argument("--compile", action="store_true", help="also time both under torch.compile")
    parser.add_argument("--host-profile", help="write a cProfile of tilefuse's steps (top functions) here")
    parser.add_argument("--kernel-rows", type=int, default=12, help="kernels listed per model (largest first)")
    parser.add_argument("--phases-copied", action="store_true",
                        help="A/B: the strided dgrads' phases through their own outputs and strided copies, as "
                             "before their kernels stored in place")
    args = parser.parse_args()
    if args.phases_copied:
        from tilefuse.conv2d_phases import PhasedDgrad

        PhasedDgrad.store = lambda self, *a, **kw: None
    import torchvision

    torch.backends.cudnn.benchmark = True
    torch.manual_seed(0)
    base = torchvision.models.resnet50().to("cuda", torch.bfloat16).to(memory_format=CL)
    g = torch.Generator(device="cuda").manual_seed(1)
    batches = [(torch.randn(args.batch, 3, 224, 224, device="cuda", generator=g).to(torch.bfloat16)
                .contiguous(memory_format=CL), torch.randint(0, 1000, (args.batch,), device="cuda", generator=g))
               for _ in range(4)]
    results = {}
    models = {"torch": copy.deepcopy(base), "tilefuse": with_tilefuse_convs(copy.deepcopy(base))}
    # the same weights and batches: the first steps' losses, in order, no warm-up (no timing)
    loss_curves = {}
    for name, model in models.items():
        loss_curves[name], _ = train(copy.deepcopy(model), batches, args.steps, 0)
    host = {}
    for name, model in models.items():
        host[name] = []
        _, times = train(model, batches, args.steps, args.warmup, host[name])
        results[name] = statistics.median(times)
        host[name] = statistics.median(host[name])
        print(f"{name}: {results[name]:.2f} ms per step (host {host[name]:.2f} ms)", flush=True)
    if args.host_profile:
        host_profile(models["tilefuse"], batches, args.host_profile)
    tables = {name: kernel_table(model, batches[0], top=args.kernel_rows) for name, model in models.items()}
    if args.compile:
        for name, model in list(models.items()):
            compiled = torch.compile(model)
            _, times = train(compiled, batches, args.steps, args.warmup)
            results[name + " + torch.compile"] = statistics.median(times)
            print(f"{name} + torch.compile: {results[name + ' + torch.compile']:.2f} ms per step", flush=True)
    worst = max(abs(a - b) / max(abs(b), 1e-6) for a, b in zip(loss_curves["tilefuse"], loss_curves["torch"]))
    out = dict(device=torch.cuda.get_device_name(), torch=torch.__version__, batch=args.batch,
               phases_copied=args.phases_copied, step_ms=results,
               host_ms=host,
               speedup=results["torch"] / results["tilefuse"], losses=loss_curves, worst_loss_rel_diff=worst,
               kernels={name: dict(rows=rows, total_ms=total) for name, (rows, total) in tables.items()})
    print(f"tilefuse / torch step-time speedup {out['speedup']:.3f}; worst relative loss difference over "
          f"{args.steps} steps {worst:.4f}")
    if args.json:
        json.dump(out, open(args.json, "w"), indent=1)
    if args.markdown:
        lines = [f"ResNet-50 training step, bf16, channels-last, batch {args.batch}, SGD, {torch.cuda.get_device_name()}",
                 "", "| model | step ms (median of %d) | host ms until opt.step() returns |" % args.steps, "|---|---|---|"]
        lines += [f"| {name} | {ms:.2f} | {host[name]:.2f} |" if name in host else f"| {name} | {ms:.2f} | |"
                  for name, ms in results.items()]
        lines += ["", f"tilefuse / torch eager speedup: **{out['speedup']:.3f}**; losses of {args.steps} steps from the "
                  f"same weights and batches: worst relative difference {worst:.4f}", ""]
        for step, (a, b) in enumerate(zip(loss_curves["torch"], loss_curves["tilefuse"])):
            lines.append(f"- step {step}: torch {a:.4f}, tilefuse {b:.4f}")
        for name, (rows, total) in tables.items():
            lines += ["", f"GPU kernels of one {name} step ({total:.2f} ms of kernel time):", "",
                      "| kernel | ms per step |", "|---|---|"]
            lines += [f"| `{key[:110]}` | {ms:.3f} |" for key, ms in rows]
        open(args.markdown, "w").write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
