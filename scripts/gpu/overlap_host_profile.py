"""Where the host's time goes in one warm call of the overlapped ops (defaults): rank 0's cProfile, and with
--before FILE an A/B of the host time against an earlier overlap.py (loaded as tilefuse.overlap_before, calls
interleaved; make one with `git show <commit>:python/tilefuse/overlap.py > FILE`).
torchrun --nproc-per-node 2 scripts/gpu/overlap_host_profile.py [--tokens N] [--calls N] [--before FILE]"""
import argparse
import cProfile
import importlib.util
import os
import pstats
import statistics
import time

import torch
import torch.distributed as dist

parser = argparse.ArgumentParser()
parser.add_argument("--tokens", type=int, default=4096)
parser.add_argument("--calls", type=int, default=200)
parser.add_argument("--before", help="an earlier tilefuse/overlap.py to time beside the installed one")
parser.add_argument("--no-profile", action="store_true")
args = parser.parse_args()
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
torch.cuda.set_device(rank)
dist.init_process_group("nccl", device_id=torch.device("cuda", rank))
import tilefuse.overlap as overlap  # noqa: E402

torch.set_grad_enabled(False)
tokens = hidden = inter = args.tokens
x = torch.randn(tokens // world, hidden, device="cuda", dtype=torch.bfloat16)
w1 = torch.randn(inter // world, hidden, device="cuda", dtype=torch.bfloat16) * 0.02
b1 = torch.randn(inter // world, device="cuda", dtype=torch.bfloat16)
h = torch.randn(tokens, inter // world, device="cuda", dtype=torch.bfloat16)
w2 = torch.randn(hidden, inter // world, device="cuda", dtype=torch.bfloat16) * 0.02
b2 = torch.randn(hidden, device="cuda", dtype=torch.bfloat16)
meet = torch.zeros(1, device="cuda")
modules = {"now": overlap}
if args.before:
    spec = importlib.util.spec_from_file_location("tilefuse.overlap_before", args.before)
    before = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(before)
    modules = {"before": before, "now": overlap}


def ops(module):
    ag = lambda: module.all_gather_linear(x, w1, b1, "gelu")  # noqa: E731
    rs = lambda: module.linear_reduce_scatter(h, w2, b2, x)  # noqa: E731
    return {"all_gather_linear": ag, "linear_reduce_scatter": rs, "both": lambda: (ag(), rs())}


def host_us(fn, profile=None):
    torch.cuda._sleep(2_000_000)  # the stream held: the host's enqueue alone is timed
    dist.all_reduce(meet)
    start = time.perf_counter()
    if profile:
        profile.enable()
    fn()
    if profile:
        profile.disable()
    spent = (time.perf_counter() - start) * 1e6
    torch.cuda.synchronize()
    dist.barrier()
    return spent


table = {name: {op: [] for op in ops(overlap)} for name in modules}
calls = {name: ops(module) for name, module in modules.items()}
for name in modules:
    for fn in calls[name].values():
        for _ in range(5):
            fn()
torch.cuda.synchronize()
for i in range(args.calls):
    for op in table["now"]:
        for name in modules:  # interleaved: both forms see the same host
            table[name][op].append(host_us(calls[name][op]))
if rank == 0:
    print(f"== host us per warm call, {tokens} tokens, {world} ranks, median of {args.calls} (interleaved)")
    print("| op | " + " | ".join(modules) + " |")
    for op in table["now"]:
        print(f"| {op} | " + " | ".join(f"{statistics.median(table[name][op]):.1f}" for name in modules) + " |")
if not args.no_profile:
    for op, fn in calls["now"].items():
        profile = cProfile.Profile()
        for _ in range(100):
            host_us(fn, profile)
        if rank == 0:
            print(f"== cProfile, {op} (now), 100 calls")
            pstats.Stats(profile).sort_stats("tottime").print_stats(16)
dist.destroy_process_group()
