"""What the Python benchmarks share: the median time of a call with CUDA events, after warm-up, with its
arguments rotated over sets (so that the sets together are larger than L2; L2_BYTES: how much to exceed);
GPU time by CUDA-graph replay (graph_ms), tilefuse-bench's events method (events_ms), eager wall and host
time (eager_ms), and a geometric mean."""
import math
import statistics
import time

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


def graph_ms(calls, reps, per_graph):
    """Median GPU time of one call, from replays of a CUDA graph of per_graph calls cycling over `calls`."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for call in calls:  # warm: plans, JIT, the warm path
            call()
            call()
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(per_graph):
            calls[i % len(calls)]()
    for _ in range(3):
        graph.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / per_graph)
    del graph
    return statistics.median(times)


def events_ms(calls, reps, group=10):
    """tilefuse-bench's method: CUDA events around each call, median; a sleep kernel ahead of each group of
    calls keeps the GPU busy while the host enqueues them, so the events time the kernels, not the host."""
    for call in calls:
        call()
    torch.cuda.synchronize()
    times, i = [], 0
    while len(times) < reps:
        torch.cuda._sleep(2_000_000)  # about 1 ms: longer than the host takes to enqueue the group
        events = []
        for _ in range(group):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            calls[i % len(calls)]()
            end.record()
            events.append((start, end))
            i += 1
        torch.cuda.synchronize()
        times += [start.elapsed_time(end) for start, end in events]
    return statistics.median(times)


def eager_ms(calls, count):
    """Wall time per call of `count` back-to-back calls, synchronized at the end, and host time per call
    (the enqueue alone)."""
    for call in calls:
        call()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for i in range(count):
        calls[i % len(calls)]()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    t2 = time.perf_counter()
    return (t2 - t0) * 1e3 / count, (t1 - t0) * 1e6 / count


def geomean(values):
    values = [v for v in values if v == v and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")
