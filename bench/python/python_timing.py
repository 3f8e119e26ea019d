"""What the Python benchmarks share: the median time of a call with CUDA events, after warm-up, with its
arguments rotated over sets (so that the sets together are larger than L2; L2_BYTES: how much to exceed);
GPU time by CUDA-graph replay (graph_ms), tilefuse-bench's events method (events_ms; interleaved_ms: our call and
the peer's in turn, as the C++ bench's rounds), eager wall and host time (eager_ms), and a geometric mean."""
import json
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


def events_ms(calls, reps, group=10, stream=None):
    """tilefuse-bench's method: CUDA events around each call, median; a sleep kernel ahead of each group of
    calls keeps the GPU busy while the host enqueues them, so the events time the kernels, not the host.
    stream: run and time everything on that stream (side_stream()), else on the current one (torch's default
    stream unless the caller switched)."""
    if stream is not None:
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            ms = events_ms(calls, reps, group)
        torch.cuda.current_stream().wait_stream(stream)
        return ms
    for call in calls:
        call()
    torch.cuda.synchronize()
    times = []
    _timed_rounds(lambda r: [(times, calls[r % len(calls)])], times, reps, group)
    return statistics.median(times)


def _timed_rounds(rounds, first, reps, group):
    """Runs the calls of rounds(r) -> [(times, call), ...] for r = 0, 1, ..., each between two CUDA events whose
    time goes to its `times`, until `first` holds `reps`; a sleep kernel ahead of each group of rounds keeps the GPU
    busy while the host enqueues them, so the events time the kernels, not the host."""
    r = 0
    while len(first) < reps:
        torch.cuda._sleep(2_000_000)  # about 1 ms: longer than the host takes to enqueue the group
        events = []
        for _ in range(group):
            for times, call in rounds(r):
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                call()
                end.record()
                events.append((times, start, end))
            r += 1
        torch.cuda.synchronize()
        for times, start, end in events:
            times.append(start.elapsed_time(end))


def interleaved_ms(ours_calls, peer_calls, reps, group=5):
    """tilefuse-bench's interleaved rounds (bench/common/round_schedule.hpp): each round runs our call and the
    peer's, each on its own operand set (half the sets apart), ours first in even rounds and second in odd ones,
    CUDA events around each call; a sleep kernel ahead of each group of rounds. The C++ bench times its fused
    rows so, beside cuDNN's calls; events_ms runs ours back to back. Medians (ours, the peer's)."""
    for call in ours_calls + peer_calls:
        call()
    torch.cuda.synchronize()
    sets = min(len(ours_calls), len(peer_calls))
    ours, peer = [], []

    def round_calls(r):
        pair = [(ours, ours_calls[r % sets]), (peer, peer_calls[(r + sets // 2) % sets])]
        return pair if r % 2 == 0 else pair[::-1]

    _timed_rounds(round_calls, ours, reps, group)
    return statistics.median(ours), statistics.median(peer)


def side_stream():
    """A stream of torch's pool: created cudaStreamNonBlocking (c10/cuda/CUDAStream.cpp, kDefaultFlags), as
    tilefuse-bench's (bench/common/main.cpp, bench/conv/conv_run.cpp), where torch's current stream is by default
    the legacy NULL stream, which the C++ bench never uses. Events on both show what that difference costs."""
    return torch.cuda.Stream()


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


def beside_cpp(ours_calls, torch_calls, cpp_row, reps, per_graph, eager_count, peer_key):
    """The Python call's and torch's times (graph replay, events, eager and host) beside what tilefuse-bench's
    row (`cpp_row`, its JSON) measured for the same problem: the fields conv_layers.py, gemm_shapes.py and
    fp8_shapes.py record; the bench's first peer that ran goes under `peer_key`. torch_calls None (torch
    refused the problem): the torch fields are NaN."""
    nan = float("nan")
    ours = graph_ms(ours_calls, reps, per_graph)
    ours_events = events_ms(ours_calls, 5 * reps)
    ours_events_stream = events_ms(ours_calls, 5 * reps, stream=side_stream())  # the C++ bench's kind of stream
    eager, host_us = eager_ms(ours_calls, eager_count)
    if torch_calls is None:
        peer = peer_events = peer_eager = peer_host_us = ours_interleaved = peer_interleaved = nan
    else:
        peer = graph_ms(torch_calls, reps, per_graph)
        peer_events = events_ms(torch_calls, 5 * reps)
        peer_eager, peer_host_us = eager_ms(torch_calls, eager_count)
        ours_interleaved, peer_interleaved = interleaved_ms(ours_calls, torch_calls, 5 * reps)
    cpp_ms = cpp_row["tilefuse"]["median_ms"] if cpp_row["tilefuse"].get("state") == "ok" else float("nan")
    cpp_peer_ms = next((q["median_ms"] for q in cpp_row["peers"] if q.get("state") == "ok"), float("nan"))
    return {"python_graph_ms": ours, "cpp_bench_ms": cpp_ms, "python_events_ms": ours_events,
            "python_over_cpp": ours_events / cpp_ms, "graph_over_cpp": ours / cpp_ms,
            "python_events_stream_ms": ours_events_stream, "stream_over_cpp": ours_events_stream / cpp_ms,
            "python_interleaved_ms": ours_interleaved, "interleaved_over_cpp": ours_interleaved / cpp_ms,
            "torch_interleaved_ms": peer_interleaved,
            "torch_events_ms": peer_events,
            "torch_graph_ms": peer, "speedup_vs_torch": peer_events / ours_events, peer_key: cpp_peer_ms,
            "python_eager_ms": eager, "python_host_us": host_us, "torch_eager_ms": peer_eager,
            "torch_host_us": peer_host_us}


def beside_cpp_arguments(description, bench_command, per_graph=10, budget_s=300.0):
    """The command line every Python-beside-C++ benchmark takes: the C++ bench's JSON of the same job, where to
    write the rows and the table, and the timing's counts and time budget."""
    import argparse

    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--cpp-json", required=True, help=f"{bench_command} --json output of the same job")
    parser.add_argument("--json", help="write the rows here")
    parser.add_argument("--markdown", help="write the table here")
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--per-graph", type=int, default=per_graph)
    parser.add_argument("--budget-s", type=float, default=budget_s, help="stop starting new rows after this")
    return parser.parse_args()


def progress_line(label, out):
    """A row's line on stdout while the benchmark runs."""
    ours, cpp_ms, peer = out["python_events_ms"], out["cpp_bench_ms"], out["torch_events_ms"]
    return (f"{label} python {ours:.4f} ms (graph {out['python_graph_ms']:.4f})  C++ {cpp_ms:.4f} ms "
            f"({ours / cpp_ms:.3f}x)  torch {peer:.4f} ms ({peer / ours:.3f}x)  host {out['python_host_us']:.1f} us")


def summary_line(label, rows):
    """One group's summary: Python's time over the C++ bench's (geomean, range, rows within 3%; a row whose C++
    time is missing is left out), over graph replay where rows have it, torch's over Python's, the host time."""
    ratios = [r["python_over_cpp"] for r in rows if r["python_over_cpp"] == r["python_over_cpp"]]
    graph = [r["graph_over_cpp"] for r in rows if r.get("graph_over_cpp", math.nan) == r.get("graph_over_cpp")]
    side = [r["stream_over_cpp"] for r in rows if r.get("stream_over_cpp", math.nan) == r.get("stream_over_cpp")]
    mixed = [r["interleaved_over_cpp"] for r in rows
             if r.get("interleaved_over_cpp", math.nan) == r.get("interleaved_over_cpp")]
    within = sum(v <= 1.03 for v in ratios)
    return (f"- {label}Python / C++ geomean {geomean(ratios):.3f} (range {min(ratios, default=math.nan):.3f} - "
            f"{max(ratios, default=math.nan):.3f}, {within} of {len(ratios)} within 3%)"
            + (f", on a side stream {geomean(side):.3f} (range {min(side):.3f} - {max(side):.3f}, "
               f"{sum(v <= 1.03 for v in side)} within 3%)" if side else "")
            + (f", interleaved with torch's call {geomean(mixed):.3f} (range {min(mixed):.3f} - {max(mixed):.3f}, "
               f"{sum(v <= 1.03 for v in mixed)} within 3%)" if mixed else "")
            + (f", graph / C++ {geomean(graph):.3f}" if graph else "")
            + f", torch / Python geomean {geomean([r['speedup_vs_torch'] for r in rows]):.3f}, host "
            f"{statistics.median(r['python_host_us'] for r in rows):.1f} us/call (median), {len(rows)} rows")


def write_report(args, rows, markdown):
    """The rows as JSON (args.json) and a markdown table (args.markdown, by markdown(rows)), where asked."""
    if args.json:
        json.dump(dict(device=torch.cuda.get_device_name(), torch=torch.__version__, rows=rows), open(args.json, "w"),
                  indent=1)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(markdown(rows))
