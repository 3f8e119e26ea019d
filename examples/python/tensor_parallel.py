"""A transformer MLP block split over GPUs with tilefuse.parallel (Megatron's tensor and sequence parallelism):
each rank holds a block of the tokens; fc1 (+ bias + GELU fused) gathers them, fc2 (+ bias + residual) reduce-
scatters back to them. In inference, as here, the all-gather and the reduce-scatter overlap the GEMMs (copy
engines over NVLink, no NVLink multicast); with grad the same modules train (tests/python/test_parallel*.py).
Checked against a float64 reference, beside the unsplit MLP's own bf16 error.

    torchrun --nproc-per-node 2 examples/python/tensor_parallel.py [--tokens 4096] [--hidden 4096]

Run without torchrun it is a group of one. Without CUDA GPUs it says so and exits 0."""
import argparse
import os
import sys

import torch
import torch.nn.functional as F


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", type=int, default=4096)
    parser.add_argument("--hidden", type=int, default=4096)
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("no CUDA GPU here: this example needs one per rank; nothing to do")
        return 0
    import torch.distributed as dist

    import tilefuse.parallel as tp

    for name, value in (("NCCL_NVLS_ENABLE", "0"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"),
                        ("MASTER_ADDR", "127.0.0.1"), ("MASTER_PORT", "29533")):
        os.environ.setdefault(name, value)  # NVLink multicast stays off; a group of one without torchrun
    rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
    device = torch.device("cuda", torch.cuda.current_device())
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=device)
    try:
        torch.manual_seed(0)  # every rank builds the same full layers and tokens
        d, tokens = args.hidden, args.tokens
        fc1 = torch.nn.Linear(d, 4 * d).cuda().bfloat16()
        fc2 = torch.nn.Linear(4 * d, d).cuda().bfloat16()
        x = torch.randn(tokens, d, device="cuda", dtype=torch.bfloat16)
        up = tp.ColumnParallelLinear.from_full(fc1, activation="gelu", sequence_parallel=True)
        down = tp.RowParallelLinear.from_full(fc2, reduce="scatter", sequence_parallel=True)
        mine = x.chunk(world, 0)[rank].contiguous()  # this rank's tokens
        with torch.no_grad():
            x64, w1, b1, w2, b2 = (t.double() for t in (x, fc1.weight, fc1.bias, fc2.weight, fc2.bias))
            want = (F.linear(F.gelu(F.linear(x64, w1, b1)), w2, b2) + x64).chunk(world, 0)[rank]
            unsplit = (fc2(F.gelu(fc1(x))) + x).chunk(world, 0)[rank]  # torch's own bf16 result
            for _ in range(3):  # the first call of a shape readies its buffers; later ones overlap
                got = down(up(mine), residual=mine)
            err, theirs = ((t.double() - want).abs().max().item() for t in (got, unsplit))
            scale = want.abs().max().item()
        ok = err <= 2 * theirs + 1e-3 * scale
        print(f"rank {rank} of {world}: max error against float64 {err:.3g}, the unsplit bf16 MLP's {theirs:.3g} "
              f"(largest value {scale:.3g}): {'ok' if ok else 'FAILED'}")
        return 0 if ok else 1
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
