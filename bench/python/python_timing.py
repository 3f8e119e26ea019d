"""What the Python benchmarks share: the median time of a call with CUDA events, after warm-up, with its
arguments rotated over sets (so that the sets together are larger than L2). L2_BYTES: how much to exceed."""
import statistics

import torch

L2_BYTES = 64 << 20


def median_ms(fn, sets, repeat, warmup=5):
    """Median milliseconds of fn(*sets[i % len(sets)]) over `repeat` calls, each between two CUDA events."""
    for i in range(warmup):
        fn(*sets[i % len(sets)])
    times = []
    for i in range(repeat):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        args = sets[i % len(sets)]
        start.record()
        fn(*args)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)
