"""What the torch.compile backend (tilefuse.backend) measures to choose: each chain's tilefuse call against what
Inductor lowers it to (the races below, on random tensors of the chain's shapes), host and GPU time apart, kept on
disk per device and shape (Chooser), and the whole compiled graph with and without tilefuse (_forward_ms).
Imports nothing of the backend: the backend imports it."""
import functools
import hashlib
import json
import os
import statistics
import time

import torch
import torch.nn.functional as F

from .op_common import pad_channels

class Chooser:
    """Which chains tilefuse takes in one graph, from measurements: each chain's tilefuse call and what Inductor
    lowers it to (cuDNN / cuBLASLt with the bias, then one pass over the output; see _race) are timed on random
    tensors of its shapes, host time (the enqueue) and GPU time (a CUDA-graph replay) apart; the timings are
    kept on disk beside the JIT cache (<cache>/backend_choices.json, keyed by device, chain and shapes), so each
    shape is measured once per machine. choose() then picks per graph (see there)."""

    MARGIN = 0.05
    # tilefuse's call costs more host time in a compiled graph than back to back in the race (a Python-heavy
    # call among fifty others; Inductor checks each fallback op's output after it): ResNet-50 N = 1 on an H200
    # host, 19 chains at a race-measured 30.5 us each cost 24 us more each in the graph (docs/notes/python_path.md).
    IN_GRAPH_HOST = 1.6

    def __init__(self, path=None, timer=None, graphs=False, graph_timer=None):
        from .jit.cache import cache_dir

        self.path = path or os.path.join(cache_dir(), "backend_choices.json")
        self.timer = timer or _host_and_gpu_ms
        self.graph_timer = graph_timer or _forward_ms
        self.graphs = graphs
        try:
            with open(self.path) as f:
                self.known = json.load(f)
        except (OSError, ValueError):
            self.known = {}

    def timings(self, signature, race):
        """{"tilefuse": (host ms, GPU ms), "torch": (host ms, GPU ms)} of one chain, measured (race() gives the
        two calls) or remembered for `signature`."""
        key = hashlib.sha256(json.dumps(signature, sort_keys=True, default=str).encode()).hexdigest()
        if key not in self.known:
            ours, theirs = self.timer(*race())
            self.known[key] = {"signature": signature, "tilefuse": list(ours), "torch": list(theirs)}
            self._changed = True
        entry = self.known[key]
        return {"tilefuse": tuple(entry["tilefuse"]), "torch": tuple(entry["torch"])}

    def choose(self, timings):
        """Which chains to take, given their timings, so that the graph's time is least: GPU time alone when the
        graph runs from a CUDA graph; otherwise a forward takes about max(host, GPU) summed over its chains, so
        chains are taken one at a time, the best first, while that estimate falls (a host-bound graph keeps
        Inductor's cheaper calls; a GPU-bound one takes faster kernels until the host becomes the bound).
        tilefuse's host time counts IN_GRAPH_HOST times over. A chain is taken only where it gains more than
        MARGIN of its own time: a tie (host times within the host's noise) stays with Inductor."""
        if self.graphs:
            return [t["tilefuse"][1] < (1 - self.MARGIN) * t["torch"][1] for t in timings]
        timings = [{"tilefuse": (t["tilefuse"][0] * self.IN_GRAPH_HOST, t["tilefuse"][1]), "torch": t["torch"]}
                   for t in timings]
        taken = [False] * len(timings)
        host = sum(t["torch"][0] for t in timings)
        gpu = sum(t["torch"][1] for t in timings)
        while True:
            best = None
            for i, t in enumerate(timings):
                if taken[i]:
                    continue
                h = host - t["torch"][0] + t["tilefuse"][0]
                g = gpu - t["torch"][1] + t["tilefuse"][1]
                gain = max(host, gpu) - max(h, g)
                if gain > self.MARGIN * max(t["torch"]) and (best is None or (max(h, g), h + g) < best[0]):
                    best = ((max(h, g), h + g), i, h, g)
            if best is None:
                return taken
            _, i, host, gpu = best
            taken[i] = True

    def save(self):
        """Writes what was measured since the last save (one write per graph, not per chain)."""
        if not getattr(self, "_changed", False):
            return
        self._changed = False
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        temporary = f"{self.path}.{os.getpid()}.tmp"
        with open(temporary, "w") as f:
            json.dump(self.known, f, indent=1)
        os.replace(temporary, self.path)  # readers see a whole file


def _host_and_gpu_ms(ours, theirs, reps=11, calls=8):
    """((host ms, GPU ms) of ours, the same of theirs) per call, medians over `reps` loops of `calls`
    back-to-back calls, the two sides alternating loop by loop (a host's drift then falls on both): the host's
    enqueue alone (no synchronization inside a loop), and the GPU's time by replaying the calls from a CUDA
    graph (no host in it). Where the calls cannot be captured, the GPU's side is CUDA events around
    back-to-back calls."""
    sides = (ours, theirs)
    for fn in sides:
        for _ in range(3):
            fn()
    torch.cuda.synchronize()
    host = ([], [])
    for _ in range(reps):
        for fn, times in zip(sides, host):
            start = time.perf_counter()
            for _ in range(calls):
                fn()
            times.append((time.perf_counter() - start) * 1e3 / calls)
            torch.cuda.synchronize()
    runs = []
    for fn in sides:
        run = functools.partial(lambda f: [f() for _ in range(calls)], fn)
        try:
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                run()
            run = graph.replay
        except RuntimeError:
            torch.cuda.synchronize()
        runs.append(run)
    gpu = ([], [])
    for _ in range(reps):
        for run, times in zip(runs, gpu):
            times.append(_event_ms(run) / calls)
    return tuple((statistics.median(h), statistics.median(g)) for h, g in zip(host, gpu))


def _forward_ms(first, second, inputs, reps=15):
    """(ms of first(*inputs), ms of second(*inputs)): medians over `reps` calls each, the two taking turns,
    CUDA events around each call (host included, as a forward without CUDA graphs pays it)."""
    for _ in range(3):
        first(*inputs)
        second(*inputs)
    torch.cuda.synchronize()
    times = ([], [])
    for _ in range(reps):
        for fn, samples in zip((first, second), times):
            samples.append(_event_ms(lambda: fn(*inputs)))  # noqa: B023 - called at once
    return statistics.median(times[0]), statistics.median(times[1])


def _event_ms(run):
    """ms of run() between two CUDA events, waited for."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    run()
    end.record()
    end.synchronize()
    return start.elapsed_time(end)


# What a measurement compares; a choice remembered under another method is measured again.
_RACE = "host and GPU, alternating: the graph's op vs cuDNN / cuBLASLt + one pass"


def _signature(tensors, fields):
    """What a chain's measurement is remembered by: the device, the shapes of its tensors (x, w, output) and
    `fields`; None with symbolic shapes (the chain is then taken unmeasured)."""
    if not all(isinstance(d, int) for v in tensors for d in v.shape):
        return None
    x_value, w_value, out = tensors
    device = torch.cuda.get_device_name(out.device) if out.device.type == "cuda" else str(out.device)
    return {"device": device, "x": _spec(x_value), "w": _spec(w_value), "race": _RACE, **fields}


def _random_like(value, channels_last=False):
    """A random tensor of an example value's (static) shape, dtype and device, for a measurement."""
    t = torch.randn([int(d) for d in value.shape], dtype=value.dtype, device=value.device)
    return t.contiguous(memory_format=torch.channels_last) if channels_last else t


def _race_linear(x_value, w_value, has_bias, residual_value, activation, frozen):
    """(tilefuse's call, torch's calls) of one linear chain on random tensors of its shapes, for Chooser."""
    x, w = _random_like(x_value), _random_like(w_value)
    b = torch.randn(w.shape[0], dtype=w.dtype, device=w.device) if has_bias else None
    r = _random_like(residual_value) if residual_value is not None else None

    op = torch.ops.tilefuse.linear_inference if frozen else torch.ops.tilefuse.linear

    def ours():  # the op the graph will call
        return op(x, w, b, r, activation)

    def theirs():  # Inductor's lowering: cuBLASLt with its bias, then one pass
        return _one_pass(F.linear(x, w, b), r, activation)
    return ours, theirs


def _spec(value):
    return [list(value.shape), str(value.dtype), list(value.stride())]


def _race(x_value, w_value, has_bias, residual_value, geometry, activation, residual_first, frozen, pad_c=0):
    """(tilefuse's call, torch's calls) of one chain on random tensors of its shapes, for Chooser: the op the
    graph will call, and what Inductor lowers the chain to (cuDNN's conv with its bias, then one pass over the
    output with the add and the activations fused into it, stood in for by one in-place op of the same
    memory traffic)."""
    stride, padding, dilation = geometry

    x, w = _random_like(x_value, True), _random_like(w_value, True)
    b = torch.randn(w.shape[0], dtype=w.dtype, device=w.device) if has_bias else None
    r = _random_like(residual_value, True) if residual_value is not None else None
    if frozen:
        # Padded channels: x padded every call (in the graph, Inductor's one copy kernel), the weight once.
        w_in = pad_channels(w, pad_c) if pad_c else w

        def ours():
            x_in = pad_channels(x, pad_c) if pad_c else x
            return torch.ops.tilefuse.conv2d_inference(x_in, w_in, b, r, stride, padding, dilation, activation,
                                                       residual_first)
    elif residual_first:
        def ours():
            return torch.ops.tilefuse.conv2d_add_act(x, w, b, r, stride, padding, dilation, activation)
    else:
        def ours():
            return torch.ops.tilefuse.conv2d(x, w, b, r, stride, padding, dilation, activation, "require")

    def theirs():
        return _one_pass(F.conv2d(x, w, b, stride, padding, dilation), r, activation)
    return ours, theirs


def _one_pass(y, r, activation):
    """Inductor's one pass over a conv's or GEMM's output (the add and the activations fused), stood in for by
    one in-place op of the same memory traffic: y += r reads y and r and writes y; else an activation."""
    if r is not None:
        return y.add_(r)
    return y.relu_() if activation != "none" else y
