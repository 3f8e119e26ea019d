"""The copy-engine overlapped ops of tilefuse.overlap replayed from CUDA graphs. At small shapes a call's host work
(a dozen operations enqueued through Python: barriers, copies, stream switches, events, two GEMMs; ~0.3 ms on a
slow host) exceeds its GPU work (~0.13 ms at 4096 x 4096 x 4096 on 2 GPUs): one replay enqueues all of it
(docs/notes/parallel.md).

A graph serves one signature (shapes, dtypes, the weights and the workspace, by identity). It reads its inputs in
place at the addresses it was captured with and holds them, so that no other tensor can take those addresses. An
input met at another address is copied into the held one when nothing else still uses the held one's storage;
otherwise another graph is captured (a few per signature), and past that the call runs without one. The output
is handed out as a tensor of the graph's memory: while the caller holds it (or any view of it, or its storage),
that graph is not replayed, since its next replay would overwrite the caller's result."""
import sys
import threading

import torch

MAX_GRAPHS = 4  # per signature
MAX_SIGNATURES = 32
# An op whose GEMMs do at most this many flops is replayed when replay="auto": its GPU work is short beside the
# host's (2 x 4096 x 2048 x 4096 = 6.9e10 on 2 GPUs is host-bound; the MLP shape's 1.9e12 is not).
AUTO_FLOPS = 1 << 38

_signatures = {}  # signature -> _Signature
_outputs = set()  # the storages' addresses of the graphs' outputs
stats = {"replayed": 0, "captured": 0, "copied_inputs": 0, "eager": 0}
_lock = threading.Lock()  # one thread at a time decides which graph is free and replays it


def _capturing():
    return torch.cuda.is_current_stream_capturing()


def _current_stream():
    return torch.cuda.current_stream()


class _Graph:
    __slots__ = ("graph", "inputs", "out", "stream")

    def __init__(self, graph, inputs, out):
        self.graph, self.inputs, self.out, self.stream = graph, inputs, out, None


class _Borrowed:
    """An input that is another graph's output: not held (that graph holds it, and both go together), never
    written into."""
    __slots__ = ("address",)

    def __init__(self, address):
        self.address = address

    def data_ptr(self):
        return self.address


class _Signature:
    __slots__ = ("calls", "graphs", "failed", "kept")

    def __init__(self, kept):
        self.calls, self.graphs, self.failed, self.kept = 0, [], False, kept


def _alias(tensor):
    """A view of tensor: a hold of our own that the storage's use count sees apart from the caller's (anything
    else is held as it is)."""
    return tensor.detach() if isinstance(tensor, torch.Tensor) else tensor  # detach: a new tensor, no _base


def wanted(replay, flops):
    """Whether a call takes the graphs: replay is True, False or "auto" (by the GEMMs' flops); never for empty
    problems."""
    if replay not in (True, False, "auto"):
        raise ValueError(f"replay={replay!r}: use True, False or 'auto'")
    if flops == 0:
        return False
    return flops <= AUTO_FLOPS if replay == "auto" else replay


def _holds(tensor):
    """(storage users, references to its Python storage object) as seen from here."""
    storage = tensor.untyped_storage()
    return torch._C._storage_Use_Count(storage._cdata), sys.getrefcount(storage)


_ALONE = _holds(torch.empty(0))  # a tensor nothing else shares (calibrated: the counts include our own asking)


def used_elsewhere(tensor):
    """Whether anything besides this tensor uses its storage: another tensor or view sharing it, or a caller who
    kept the storage object itself (torch hands out one Python object per storage while it lives, so that hold
    shows only in its reference count)."""
    users, references = _holds(tensor)
    return users > _ALONE[0] or references > _ALONE[1]


def run(signature, inputs, body, stream, kept=()):
    """body(*inputs) -> a tensor, enqueued on the current stream, from a CUDA graph of it where one can serve;
    returns the output, or None where the caller should run body itself (the signature's first call, which warms
    every cache body touches, calls made while the caller captures a CUDA graph of its own, and the calls no graph
    can take). stream: the side stream captures run on; kept: the tensors the signature names by address
    (weights, bias, workspace), held so that none other takes their addresses.

    A result consumed on another stream must be kept alive until that stream is done with it (record_stream
    does not protect it: a graph's memory is rewritten by its next replay, not reallocated)."""
    if _capturing():
        return None  # replaying, copying or capturing here would be baked into the caller's graph
    with _lock:
        entry = _signatures.get(signature)
        if entry is None:
            if len(_signatures) >= MAX_SIGNATURES:
                reset_graphs()  # their graphs go; outputs callers hold keep their memory
            entry = _signatures[signature] = _Signature([_alias(t) for t in kept])
        entry.calls += 1
        if entry.calls == 1 or entry.failed:
            stats["eager"] += 1
            return None
        for held in entry.graphs:
            if used_elsewhere(held.out):
                continue
            _after_last(held)  # before the inputs' copies too: the last replay may still read them
            if _take_inputs(held, inputs):
                stats["replayed"] += 1
                return _replay(held)
        if len(entry.graphs) >= MAX_GRAPHS:
            stats["eager"] += 1
            return None
        held = _capture(body, inputs, stream)
        if held is None:
            entry.failed = True
            stats["eager"] += 1
            return None
        entry.graphs.append(held)
        stats["captured"] += 1
        return _replay(held)


def after_last(signature):
    """Orders the current stream after the last replays of signature's graphs: for a caller that writes what
    they read (a workspace block) before it calls run(). Not under a caller's capture (run() replays nothing
    there, and a captured stream cannot wait for work outside its graph)."""
    if _capturing():
        return
    with _lock:
        entry = _signatures.get(signature)
        for held in entry.graphs if entry is not None else ():
            _after_last(held)


def _after_last(held):
    """Orders the current stream after the graph's last replay, which may have been on another stream."""
    current = _current_stream()
    if held.stream is not None and held.stream != current:
        current.wait_stream(held.stream)


def _replay(held):
    held.graph.replay()  # on the current stream
    held.stream = _current_stream()
    return held.out.detach()  # a tensor of its own: the caller's hold shows in the storage's use count


def _take_inputs(held, inputs):
    """Whether the graph can read these inputs: each at its held address, or copied there (on the current stream,
    before the replay) where only the graph still uses the held one."""
    moved = [i for i, (mine, theirs) in enumerate(zip(held.inputs, inputs)) if not _same(mine, theirs)]
    if any(mine is None or isinstance(mine, _Borrowed) or used_elsewhere(mine)
           or (mine.is_inference() and not torch.is_inference_mode_enabled())  # copy_ into one would raise
           for mine in (held.inputs[i] for i in moved)):
        return False
    for i in moved:
        held.inputs[i].copy_(inputs[i])
        stats["copied_inputs"] += 1
    return True


def _same(mine, theirs):
    if mine is None or theirs is None:
        return mine is theirs
    return mine.data_ptr() == theirs.data_ptr()  # the held tensor keeps its address from every other tensor


def _capture(body, inputs, stream):
    try:
        # The output is handed to every later replay's caller: made under inference_mode it would be an inference
        # tensor for callers outside it too (no autograd, no in-place writes). Grad stays off (forward ops).
        with torch.inference_mode(False), torch.no_grad():
            graph, out = _record(body, inputs, stream)
    except Exception as error:  # noqa: BLE001 - the call runs without a graph, and says why once
        import logging

        logging.getLogger("tilefuse.overlap").warning("tilefuse.overlap: no CUDA graph for this call (%s: %s); "
                                                      "it runs op by op", type(error).__name__, str(error)[:200])
        return None
    _outputs.add(out.untyped_storage().data_ptr())
    return _Graph(graph, [_Borrowed(t.data_ptr()) if t is not None and t.untyped_storage().data_ptr() in _outputs
                          else _alias(t) for t in inputs], out)


def _record(body, inputs, stream):
    """(graph, output) of body(*inputs) captured, not run (a CPU test replaces this)."""
    graph = torch.cuda.CUDAGraph()
    current = torch.cuda.current_stream()
    try:
        # thread_local: NCCL's watchdog thread queries events while this thread captures
        with torch.cuda.graph(graph, stream=stream, capture_error_mode="thread_local"):
            out = body(*inputs)
    finally:
        torch.cuda.set_stream(current)  # a failed capture's exit raises before it restores the stream
    return graph, out


def reset_graphs():
    """Drops every graph (tests; a process that wants its memory back)."""
    _signatures.clear()
    _outputs.clear()
