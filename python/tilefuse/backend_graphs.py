"""A frozen inference graph replayed from one CUDA graph with little host work per call: the backend's
CUDA-graph mode (mode="reduce-overhead") for inference.

Inductor's CUDA graphs (cudagraph trees) do bookkeeping on the host at every call that a small forward
feels: ViT-B/16 at batch 8 on an H200 took 1.40-1.52 ms through them against 1.13 ms for eager replayed from a
hand-captured graph (bench/results/2026-11-28-h200-vit-attention-pass.md). ReplayedGraph captures the compiled
forward once and then, per call, copies the inputs that are not the model's own tensors into its buffers,
replays, and clones the outputs (so a later call never overwrites what an earlier one returned)."""
import threading

import torch

from .kernel_params import current_raw_stream

# tensors[i].data_ptr() == data_ptrs[i] for every i in indices, in C++ (what torch's cudagraph trees call); a
# Python loop where a torch build lacks it.
_data_ptrs_equal = getattr(torch._C, "_tensors_data_ptrs_at_indices_equal", None)


def static_input(t):
    """Whether a graph input is the model's own tensor (a parameter, or a tensor Dynamo marked static: the
    modules' buffers), which the graph reads where it lies, instead of a copy."""
    return isinstance(t, torch.nn.Parameter) or getattr(t, "_dynamo_static_input_type", None) is not None


class ReplayedGraph:
    """compiled(*inputs), called as Dynamo calls a backend's forward, replayed from a CUDA graph captured at
    the first call. Inputs must be CUDA tensors (else, or if the capture fails, compiled runs as it is,
    and why is kept in `self.why_not`). A static input met at another address is captured again."""

    WARMUP = 2

    def __init__(self, compiled, graph_factory=None, pool=None):
        self.compiled = compiled
        self._graph_factory = graph_factory or torch.cuda.CUDAGraph
        self.pool = pool  # a memory pool shared with graphs replayed one after the other (None: its own)
        self.graph = None
        self.why_not = None
        self.captures = 0
        self.device = None  # the inputs' device (at the capture)
        self._last_stream = None  # the raw stream of the last replay, whose reads and writes a call waits for
        self._lock = threading.Lock()  # one call's copies, replay and clones at a time: they share the buffers

    def _run(self, inputs):
        return self.compiled(*inputs)

    def __call__(self, *inputs):
        if self.why_not is not None:
            return self._run(inputs)
        with self._lock:
            if self.graph is None or not self._same_static_addresses(inputs):
                if not self._capture(inputs):
                    return self._run(inputs)
            stream = self._current_stream()
            if self._last_stream is not None and stream != self._last_stream and not self._capturing():
                self._wait_for(self._last_stream)  # the last call's replay may still read the buffers it wrote
            for i, buffer in self._copies:
                buffer.copy_(inputs[i])
            self.graph.replay()
            self._last_stream = stream
            return _cloned(self.outputs)

    def _current_stream(self):
        """The current stream's raw handle on the graph's device (cheap: a call's host time matters here)."""
        return current_raw_stream(self.device)

    def _capturing(self):
        """Whether the caller is capturing its own CUDA graph (a captured stream cannot wait for work outside it;
        the capture's own ordering is the caller's)."""
        return torch.cuda.is_current_stream_capturing()

    def _wait_for(self, raw_stream):
        """The current stream waits for the work enqueued so far on raw_stream (another caller's stream)."""
        other = torch.cuda.ExternalStream(raw_stream, device=torch.device("cuda", self.device))
        torch.cuda.current_stream(self.device).wait_stream(other)

    def _same_static_addresses(self, inputs):
        """Whether every static input lies where it lay at the capture (a parameter whose storage was swapped, as
        FSDP and `param.data = ...` do, keeps its identity and Dynamo's guards but not its address). On the hot
        path: a model's parameters are most of its graph's inputs (153 for ViT-B/16); torch's C++ check takes
        19 us for them on a CPU where a Python loop took 27-36 (the whole call 52 -> 28-36 us)."""
        if len(inputs) != len(self.static):
            return False
        if _data_ptrs_equal is not None:
            return _data_ptrs_equal(list(inputs), self.static, self._static_indices)
        return all(inputs[i].data_ptr() == self.static[i] for i in self._static_indices)

    def _capture(self, inputs):
        """Captures the compiled forward over buffers for the inputs that are not static; False (and why_not)
        when it cannot."""
        if not all(isinstance(t, torch.Tensor) and t.is_cuda for t in inputs):
            self.why_not = "an input is not a CUDA tensor (a symbolic size or a CPU tensor)"
            return False
        self.device = inputs[0].device.index if inputs else torch.cuda.current_device()
        static = [static_input(t) for t in inputs]
        self.static = [t.data_ptr() if s else None for t, s in zip(inputs, static)]
        with torch.inference_mode(False):  # written by every later call, in whatever mode it runs
            self.buffers = [None if s else torch.empty_strided(t.shape, t.stride(), dtype=t.dtype, device=t.device)
                            for t, s in zip(inputs, static)]
        run_on = [t if b is None else b for t, b in zip(inputs, self.buffers)]
        for t, buffer in zip(inputs, self.buffers):
            if buffer is not None:
                buffer.copy_(t)
        try:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(self.WARMUP):
                    self._run(run_on)
            torch.cuda.current_stream().wait_stream(side)
            graph = self._graph_factory()
            with torch.cuda.graph(graph, pool=self.pool):
                self.outputs = self._run(run_on)
        except Exception as error:  # noqa: BLE001 - a graph that cannot be captured still runs, uncaptured
            self.why_not = f"the capture failed: {type(error).__name__}: {str(error)[:200]}"
            self.graph = None
            return False
        self.graph = graph
        self.captures += 1
        self._index()
        return True

    def _index(self):
        """The per-call lists made from self.static and self.buffers: the static inputs' indices, and the other
        inputs' (index, buffer) pairs."""
        self._static_indices = [i for i, s in enumerate(self.static) if s is not None]
        self._copies = [(i, b) for i, b in enumerate(self.buffers) if b is not None]


def _cloned(outputs):
    if isinstance(outputs, torch.Tensor):
        return outputs.clone()
    if isinstance(outputs, (list, tuple)):
        return type(outputs)(_cloned(o) for o in outputs)
    return outputs
