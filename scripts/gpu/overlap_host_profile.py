"""Where the host's time goes in one warm call of the overlapped ops (defaults), rank 0's cProfile.
torchrun --nproc-per-node 2 scripts/gpu/overlap_host_profile.py [tokens] [calls]"""
import cProfile
import os
import pstats
import sys
import time

import torch
import torch.distributed as dist

rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
torch.cuda.set_device(rank)
dist.init_process_group("nccl", device_id=torch.device("cuda", rank))
import tilefuse.parallel as tp  # noqa: E402

torch.set_grad_enabled(False)
tokens = int(sys.argv[1]) if len(sys.argv) > 1 else 4096
calls = int(sys.argv[2]) if len(sys.argv) > 2 else 200
hidden = inter = tokens
x = torch.randn(tokens // world, hidden, device="cuda", dtype=torch.bfloat16)
w1 = torch.randn(inter // world, hidden, device="cuda", dtype=torch.bfloat16) * 0.02
b1 = torch.randn(inter // world, device="cuda", dtype=torch.bfloat16)
h = torch.randn(tokens, inter // world, device="cuda", dtype=torch.bfloat16)
w2 = torch.randn(hidden, inter // world, device="cuda", dtype=torch.bfloat16) * 0.02
b2 = torch.randn(hidden, device="cuda", dtype=torch.bfloat16)
ag = lambda: tp.all_gather_linear(x, w1, b1, "gelu")  # noqa: E731
rs = lambda: tp.linear_reduce_scatter(h, w2, b2, x)  # noqa: E731
meet = torch.zeros(1, device="cuda")
for name, fn in (("all_gather_linear", ag), ("linear_reduce_scatter", rs), ("both", lambda: (ag(), rs()))):
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    hosts = []
    profile = cProfile.Profile()
    for i in range(calls):
        torch.cuda._sleep(2_000_000)  # the stream held: the host's enqueue alone is timed
        dist.all_reduce(meet)
        start = time.perf_counter()
        if i >= calls // 2:
            profile.enable()
        fn()
        if i >= calls // 2:
            profile.disable()
        hosts.append((time.perf_counter() - start) * 1e6)
        torch.cuda.synchronize()
        dist.barrier()
    plain = sorted(hosts[:calls // 2])[calls // 4]
    profiled = sorted(hosts[calls // 2:])[calls // 4]
    if rank == 0:
        print(f"== {name}, {tokens} tokens: host us per call, median {plain:.1f} (under cProfile {profiled:.1f})")
        stats = pstats.Stats(profile)
        stats.sort_stats("tottime").print_stats(22)
        if name != "both":
            stats.sort_stats("cumulative").print_stats(18)
dist.destroy_process_group()
