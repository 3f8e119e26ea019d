"""Runs a function in `world` spawned processes (one per rank) and collects what each put on the queue: the
multi-process tests of tilefuse.parallel and torch.distributed (CPU under gloo, GPUs under NCCL)."""


def spawn(target, world, args, timeout=240):
    """{rank: result} of target(rank, world, *args, results) in `world` processes; each rank puts (rank, result)
    on `results`, the queue passed as its last argument."""
    import torch.multiprocessing as mp

    context = mp.get_context("spawn")
    results = context.Queue()
    processes = [context.Process(target=target, args=(rank, world, *args, results)) for rank in range(world)]
    for p in processes:
        p.start()
    outcomes = dict(results.get(timeout=timeout) for _ in processes)
    for p in processes:
        p.join(timeout=60)
    return outcomes
