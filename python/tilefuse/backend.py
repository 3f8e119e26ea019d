"""torch.compile(model, backend="tilefuse"): conv chains fused into one tilefuse kernel each, the rest Inductor's.

    model = torch.compile(model, backend="tilefuse")      # registered by the package (an entry point)
    model = tilefuse.backend.optimize(model)              # the same

The backend rewrites the FX graph that TorchDynamo captured, then hands it to Inductor (compile_fx), which
compiles everything tilefuse did not take. An FX pass ahead of Inductor, not Inductor's pattern matcher:
the graph still holds torch-level calls (torch.conv2d, F.batch_norm, relu, +) whose chains are easy to
walk, and the rewrite needs no Inductor internals. The chains taken, on CUDA bf16 / fp16 channels-last tensors:

    conv2d -> [BatchNorm, eval, folded] -> [act] -> [+ residual]    tilefuse::conv2d       act(conv + b) + r
    conv2d -> [BatchNorm, eval, folded] -> + residual -> act        tilefuse::conv2d_add_act act(conv + b + r)
    linear -> [act] -> [+ residual]                                 tilefuse::linear       act(x w^T + b) + r

act: relu, gelu (erf or tanh), silu, sigmoid, hardswish, relu6 (or F.hardtanh / clamp to [0, 6]).
BatchNorm folds (in float32, then cast) only in inference: grad mode off when the model is compiled,
BatchNorm in eval. The fold is part of the graph: with torch._inductor.config.freezing = True (parameters
frozen) Inductor computes it once at compile time; without, it runs as a few small ops per call.
Left to Inductor, and said why at INFO on the logger "tilefuse.backend": groups != 1, string padding, a dtype
or device without a kernel, tensors that are not channels-last, training-mode BatchNorm, an intermediate used
twice, and a bare conv (nothing to fuse: cuDNN's call is as good).
"""
import functools
import hashlib
import json
import logging
import operator
import os
import statistics
import time
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from . import inference_ops, ops  # noqa: F401 - register tilefuse::conv2d, conv2d_add_act, linear and the
#                                    inference forms the frozen graphs use

log = logging.getLogger("tilefuse.backend")

_CONVS = (torch.conv2d, F.conv2d)
_LINEARS = (F.linear, torch._C._nn.linear)
_BATCH_NORMS = (F.batch_norm, torch.batch_norm)
_ADDS = (operator.add, operator.iadd, torch.add)
_DTYPES = (torch.bfloat16, torch.float16)


@dataclass
class Decision:
    """What the pass did with one conv: the chain it saw, whether tilefuse took it, and why."""

    conv: str
    chain: str
    fused: bool
    why: str

    def __str__(self):
        return f"{self.conv}: {self.chain}: {'tilefuse' if self.fused else 'Inductor'} ({self.why})"


def optimize(model, *, measure=True, **compile_kwargs):
    """torch.compile(model, backend="tilefuse", **compile_kwargs); measure=False takes every chain tilefuse
    can run without timing it against torch's own ops (see Chooser)."""
    if measure:
        return torch.compile(model, backend="tilefuse", **compile_kwargs)
    return torch.compile(model, backend=functools.partial(backend, measure=False), **compile_kwargs)


def backend(gm, example_inputs, measure=True, require_cuda=True, mode=None, options=None, chooser=None, **kwargs):
    """The torch.compile backend: fuse(), then Inductor's compile_fx on the rewritten graph. mode and options
    are torch.compile's, applied to Inductor as they would be with backend="inductor"; with CUDA graphs on
    (mode="reduce-overhead", "max-autotune"), host time is no longer paid per call, so the chooser compares GPU
    time alone. Without CUDA graphs, a frozen (inference) graph with fused chains is also compiled without
    them and the two are timed on the example inputs: the faster is returned, so the backend is never slower
    than Inductor alone by more than the timing's noise. require_cuda: as fuse's, for tests on CPU; chooser:
    a Chooser (tests), else one made here when measuring."""
    from torch._inductor import config as inductor_config
    from torch._inductor import list_mode_options
    from torch._inductor.compile_fx import compile_fx

    patches = dict(list_mode_options(mode)) if mode not in (None, "default") else {}
    patches.update(options or {})
    graphs = bool(patches.get("triton.cudagraphs", inductor_config.triton.cudagraphs))
    if measure and chooser is None:
        chooser = Chooser(graphs=graphs)
    race = measure and not graphs and not torch.is_grad_enabled() and _real(example_inputs, require_cuda)
    plain = _graph_copy(gm) if race else None
    decisions = fuse(gm, example_inputs, require_cuda=require_cuda, chooser=chooser if measure else None)
    compiled = compile_fx(gm, example_inputs, config_patches=patches or None, **kwargs)
    verdict = ""
    if plain is not None and any(d.fused for d in decisions):
        alone = compile_fx(plain, example_inputs, config_patches=patches or None, **kwargs)
        fused_ms, alone_ms = chooser.graph_timer(compiled, alone, example_inputs)
        faster = alone_ms < fused_ms
        verdict = (f"; the whole graph: {fused_ms:.3f} ms with them, {alone_ms:.3f} ms Inductor alone: "
                   f"{'Inductor alone kept' if faster else 'kept'}")
        if faster:
            for d in decisions:
                if d.fused:
                    d.fused, d.why = False, "the whole graph ran faster without tilefuse (" + d.why + ")"
            compiled = alone
    if decisions and log.isEnabledFor(logging.INFO):
        taken = sum(d.fused for d in decisions)
        log.info("tilefuse.backend: %d of %d conv and linear chains fused into tilefuse kernels%s\n  %s", taken,
                 len(decisions), verdict, "\n  ".join(str(d) for d in decisions))
    return compiled


def _real(example_inputs, require_cuda):
    """Whether the example inputs are real tensors a graph can run on (CUDA ones unless require_cuda is off)."""
    from torch._subclasses.fake_tensor import FakeTensor

    tensors = [t for t in example_inputs if isinstance(t, torch.Tensor)]
    return bool(tensors) and all(not isinstance(t, FakeTensor) and (t.is_cuda or not require_cuda) for t in tensors)


def _graph_copy(gm):
    """A GraphModule over a copy of gm's graph (the nodes' metadata shared, the module's attributes too): the
    graph before fuse() rewrites gm's, for Inductor alone."""
    graph = torch.fx.Graph()
    graph._codegen = gm.graph._codegen
    graph.output(graph.graph_copy(gm.graph, {}))
    return torch.fx.GraphModule(gm, graph)


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
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            run()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / calls)
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
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn(*inputs)
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end))
    return statistics.median(times[0]), statistics.median(times[1])


@dataclass
class _Candidate:
    """A chain tilefuse can take: its decision if taken, its nodes (the last one's users read the fused op),
    its measurement (signature and race(), or None when it cannot be measured: taken unmeasured), and
    apply(graph, resolve), which rewrites it (resolve maps a node of the original graph to the node that now
    stands for it, where an earlier chain was rewritten)."""

    decision: Decision
    nodes: list
    signature: dict = None
    race: object = None
    apply: object = None


def fuse(gm, example_inputs, *, require_cuda=True, chooser=None):
    """Rewrites gm's conv and linear chains into tilefuse ops in place; returns a Decision per conv or linear,
    in graph order. require_cuda=False lets tests rewrite CPU graphs (whose tilefuse ops then need a CPU kernel
    registered). chooser: a Chooser (or None: take every chain tilefuse can run)."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    values = {n: v for n, v in zip(placeholders, example_inputs)}
    frozen = not torch.is_grad_enabled()
    found, claimed = [], set()
    for node in list(gm.graph.nodes):
        if node.op == "call_function" and node.target in _CONVS:
            chain = _conv_chain(node, values, frozen, require_cuda, claimed)
        elif node.op == "call_function" and node.target in _LINEARS:
            chain = _linear_chain(node, frozen, require_cuda, claimed)
        else:
            continue
        found.append(chain)
        if isinstance(chain, _Candidate):
            claimed.update(chain.nodes)
    candidates = [c for c in found if isinstance(c, _Candidate)]
    _decide(candidates, chooser)
    replaced = {}
    for c in candidates:
        if c.decision.fused:
            replaced[c.nodes[-1]] = c.apply(gm.graph, lambda n: replaced.get(n, n))
    gm.graph.lint()
    gm.recompile()
    return [c.decision if isinstance(c, _Candidate) else c for c in found]


def _decide(candidates, chooser):
    """Sets each candidate's decision: taken unmeasured without a chooser (or with symbolic shapes), else as
    the chooser picks for the graph, with both sides' times in the reason."""
    measured = [c for c in candidates if chooser is not None and c.signature is not None]
    if not measured:
        return
    timings = [chooser.timings(c.signature, c.race) for c in measured]
    chooser.save()
    for c, t, take in zip(measured, timings, chooser.choose(timings)):
        text = (f"; tilefuse {t['tilefuse'][1]:.4f} ms GPU, {t['tilefuse'][0]:.4f} ms host; "
                f"torch {t['torch'][1]:.4f} ms GPU, {t['torch'][0]:.4f} ms host")
        if take:
            c.decision.why += text
        else:
            c.decision.fused = False
            c.decision.why = ("torch's ops measured faster here" if t["torch"][1] <= t["tilefuse"][1] or
                              chooser.graphs else "torch's calls cost the host less in a host-bound graph") + text


def _value(node):
    """The example value (a fake tensor) Dynamo recorded for a node's output, or None."""
    return node.meta.get("example_value", node.meta.get("val")) if isinstance(node, torch.fx.Node) else None


def _conv_args(node):
    """(x, w, b, stride, padding, dilation, groups) of a torch.conv2d / F.conv2d call."""
    names = ("input", "weight", "bias", "stride", "padding", "dilation", "groups")
    defaults = (None, None, None, 1, 0, 1, 1)
    args = list(node.args) + [node.kwargs.get(n, d) for n, d in zip(names[len(node.args):], defaults[len(node.args):])]
    return args


def _pair(v):
    return [v, v] if isinstance(v, int) else list(v)


def _single_user(node, claimed):
    """node's only user, where it has one that no earlier chain has claimed (chains never overlap: a
    ResNet block's add could otherwise end both its conv3 chain and its downsample chain)."""
    users = list(node.users)
    return users[0] if len(users) == 1 and users[0] not in claimed else None


def _next(node, nodes, claimed):
    """(the chain's last node, the node after it): node's single unclaimed user, past identities (dropout in
    eval, as torchvision's MLPs put between a linear and its residual add), which join `nodes`."""
    last, nxt = node, _single_user(node, claimed)
    while nxt is not None and _identity(nxt):
        nodes.append(nxt)
        last, nxt = nxt, _single_user(nxt, claimed)
    return last, nxt


def _identity(node):
    """Whether a call is the identity: F.dropout / torch.dropout with training off."""
    if node.op != "call_function" or node.target not in (F.dropout, torch.dropout):
        return False
    training = node.args[2] if len(node.args) > 2 else node.kwargs.get("training", node.kwargs.get("train", True))
    return training is False


def _activation(node):
    """The tilefuse activation name of an activation call, or None."""
    if node.op == "call_function":
        if node.target in (torch.relu, F.relu, torch.relu_):
            return "relu"
        if node.target is F.silu:
            return "silu"
        if node.target in (torch.sigmoid, F.sigmoid):
            return "sigmoid"
        if node.target is F.hardswish:
            return "hardswish"
        if node.target is F.relu6:
            return "relu6"
        if node.target in (F.hardtanh, torch.clamp) and _bounds(node) == (0.0, 6.0):
            return "relu6"
        if node.target is F.gelu:
            return "gelu_tanh" if node.kwargs.get("approximate", "none") == "tanh" else "gelu"
    if node.op == "call_method" and node.target in ("relu", "relu_"):
        return "relu"
    if node.op == "call_method" and node.target == "sigmoid":
        return "sigmoid"
    return None


def _bounds(node):
    """(min, max) of an F.hardtanh / torch.clamp call, as floats (None where missing or not a number)."""
    names = ("min_val", "max_val") if node.target is F.hardtanh else ("min", "max")
    defaults = (-1.0, 1.0) if node.target is F.hardtanh else (None, None)
    values = list(node.args[1:3]) + [node.kwargs.get(n, d) for n, d in zip(names[len(node.args) - 1:],
                                                                            defaults[len(node.args) - 1:])]
    try:
        return tuple(float(v) for v in values[:2])
    except (TypeError, ValueError):
        return None


def _channels_last(value):
    return value is not None and value.dim() == 4 and value.is_contiguous(memory_format=torch.channels_last)


def _conv_chain(conv, values, frozen, require_cuda, claimed):
    """The chain that starts at `conv`: a _Candidate tilefuse can take, or a Decision to keep it (and why)."""
    x, w, b, stride, padding, dilation, groups = _conv_args(conv)
    name = conv.name
    out = _value(conv)
    x_value = _value(x)
    w_value = values.get(w) if w in values else _value(w)

    def keep(chain, why):
        return Decision(name, chain, False, why)

    if groups != 1:
        return keep("conv", f"groups = {groups}: tilefuse's convolution runs groups = 1")
    if isinstance(padding, str):
        return keep("conv", f"padding={padding!r}: tilefuse takes numeric padding")
    if out is None or x_value is None or w_value is None:
        return keep("conv", "no example values for the conv's tensors")
    if require_cuda and out.device.type != "cuda":
        return keep("conv", f"tensors on {out.device}: tilefuse's kernels run on CUDA")
    if out.dtype not in _DTYPES:
        return keep("conv", f"dtype {out.dtype}: tilefuse's convolution takes bfloat16 or float16")
    if not _channels_last(x_value):
        return keep("conv", "x is not channels-last (a copy would cost more than the fusion saves)")

    # Walk the chain: [BatchNorm] -> [act] -> [+ residual] -> [act].
    chain, nodes, last = ["conv"], [conv], conv
    bn = act_before = residual = act_after = None
    last, nxt = _next(last, nodes, claimed)
    if nxt is not None and nxt.op == "call_function" and nxt.target in _BATCH_NORMS:
        training = nxt.args[5] if len(nxt.args) > 5 else nxt.kwargs.get("training", False)
        if training or not frozen:
            return keep("conv -> BatchNorm", "BatchNorm in training, or grad mode on: folding needs frozen "
                        "parameters (compile under torch.no_grad() with model.eval())")
        bn = nxt
        chain.append("BatchNorm")
        nodes.append(bn)
        last, nxt = _next(bn, nodes, claimed)
    if nxt is not None and _activation(nxt) is not None:
        act_before = _activation(nxt)
        chain.append(act_before)
        nodes.append(nxt)
        last, nxt = _next(nxt, nodes, claimed)
    if nxt is not None and nxt.op == "call_function" and nxt.target in _ADDS and len(nxt.args) == 2 \
            and not nxt.kwargs:
        other = nxt.args[1] if nxt.args[0] is last else nxt.args[0]
        other_value = _value(other)
        if other_value is not None and tuple(other_value.shape) == tuple(_value(last).shape) and \
                other_value.dtype == out.dtype and _channels_last(other_value):
            residual = other
            chain.append("+ residual")
            nodes.append(nxt)
            last, nxt = _next(nxt, nodes, claimed)
            if act_before is None and nxt is not None and _activation(nxt) is not None:
                act_after = _activation(nxt)
                chain.append(act_after)
                nodes.append(nxt)
                last = nxt
    if len(chain) == 1 and b is None:
        return keep("conv", "a bare conv: nothing to fuse, cuDNN's call is as good")
    if any(len(n.users) > 1 for n in nodes[:-1]):
        return keep(" -> ".join(chain), "an intermediate is used twice")
    if bn is not None and (bn.args[1] is None or bn.args[2] is None or
                           not isinstance(bn.args[7] if len(bn.args) > 7 else bn.kwargs.get("eps", 1e-5), float)):
        return keep(" -> ".join(chain), "BatchNorm without running statistics (track_running_stats=False) or "
                    "with a traced eps: nothing to fold")

    chain_text = " -> ".join(chain)
    if bn is None and not _channels_last(w_value):
        return keep(chain_text, "the weight is not channels-last (model.to(memory_format=torch.channels_last))")
    activation = act_after or act_before or "none"
    residual_first = act_after is not None
    # Channels not a multiple of 8 (an RGB stem's 3) leave only the sm80 kernel's element-wise path; zero
    # channels padded onto x and the weight (a constant in a frozen graph) give the Hopper kernel its 16-byte rows.
    pad_c = -x_value.shape[1] % 8 if frozen else 0
    signature = _signature((x_value, w_value, out), dict(
        chain=chain_text, stride=_pair(stride), padding=_pair(padding), dilation=_pair(dilation),
        activation=activation, residual_first=residual_first, frozen=frozen, pad_channels=pad_c))

    def race():
        return _race(x_value, w_value, b is not None or bn is not None, _value(residual) if residual else None,
                     (_pair(stride), _pair(padding), _pair(dilation)), activation, residual_first, frozen, pad_c)

    def apply(graph, resolve):
        with graph.inserting_before(last):
            if bn is not None:
                w_node, b_node = _fold_nodes(graph, bn, w, b, out.dtype)
            else:
                w_node, b_node = w, b
            x_node = resolve(x)
            if pad_c:
                x_node, w_node = (graph.call_function(_pad_channels, (node, pad_c)) for node in (x_node, w_node))
            args = (x_node, w_node, b_node, resolve(residual), _pair(stride), _pair(padding), _pair(dilation))
            if frozen:  # no grad to trace: the op without a Python autograd kernel (inference_ops.py)
                fused = graph.call_function(torch.ops.tilefuse.conv2d_inference.default,
                                            args + (activation, residual_first))
            elif act_after is not None:
                fused = graph.call_function(torch.ops.tilefuse.conv2d_add_act.default, args + (act_after,))
            else:
                fused = graph.call_function(torch.ops.tilefuse.conv2d.default,
                                            args + (act_before or "none", "require"))
        _replace(graph, nodes, fused)
        return fused

    how = "one kernel" + (", BatchNorm folded" if bn is not None else "") + \
        (f", channels padded {x_value.shape[1]} -> {x_value.shape[1] + pad_c}" if pad_c else "")
    return _Candidate(Decision(name, chain_text, True, how), nodes, signature, race, apply)


def _linear_chain(linear, frozen, require_cuda, claimed):
    """The chain that starts at `linear` (a _Candidate or a Decision to keep it): linear -> [act] -> [+ residual] as one tilefuse::linear (act(x @ w.t() + b) + residual; Hopper GEMM)."""
    args = list(linear.args) + [linear.kwargs.get("bias")] * (3 - len(linear.args))
    x, w, b = args[:3]
    out, w_value = _value(linear), _value(w)

    def keep(chain, why):
        return Decision(linear.name, chain, False, why)

    if out is None or w_value is None or _value(x) is None:
        return keep("linear", "no example values for the linear's tensors")
    if require_cuda and (out.device.type != "cuda" or torch.cuda.get_device_capability(out.device) != (9, 0)):
        return keep("linear", f"tensors on {out.device}: tilefuse's GEMM runs on sm_90 (H100 / H200)")
    if out.dtype not in _DTYPES:
        return keep("linear", f"dtype {out.dtype}: tilefuse's GEMM takes bfloat16 or float16")
    chain, nodes, last = ["linear"], [linear], linear
    activation, residual = "none", None
    last, nxt = _next(last, nodes, claimed)
    if nxt is not None and _activation(nxt) is not None:
        activation = _activation(nxt)
        chain.append(activation)
        nodes.append(nxt)
        last, nxt = _next(nxt, nodes, claimed)
    if nxt is not None and nxt.op == "call_function" and nxt.target in _ADDS and len(nxt.args) == 2 and not nxt.kwargs:
        other = nxt.args[1] if nxt.args[0] is last else nxt.args[0]
        other_value = _value(other)
        if other_value is not None and tuple(other_value.shape) == tuple(out.shape) and other_value.dtype == out.dtype:
            residual = other
            chain.append("+ residual")
            nodes.append(nxt)
            last = nxt
    chain_text = " -> ".join(chain)
    if len(chain) == 1:
        return keep(chain_text, "nothing to fuse: cuBLASLt's bias epilogue is as good")
    if any(len(n.users) > 1 for n in nodes[:-1]):
        return keep(chain_text, "an intermediate is used twice")
    signature = _signature((_value(x), w_value, out), dict(chain=chain_text, activation=activation, frozen=frozen))

    def race():
        return _race_linear(_value(x), w_value, b is not None, _value(residual) if residual else None, activation,
                            frozen)

    def apply(graph, resolve):
        with graph.inserting_before(last):
            op = torch.ops.tilefuse.linear_inference if frozen else torch.ops.tilefuse.linear
            fused = graph.call_function(op.default, (resolve(x), w, b, resolve(residual), activation))
        _replace(graph, nodes, fused)
        return fused

    return _Candidate(Decision(linear.name, chain_text, True, "one kernel"), nodes, signature, race, apply)


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


def _replace(graph, nodes, fused):
    """The chain `nodes` (its last node's users) read `fused` instead; the chain's nodes are erased."""
    last = nodes[-1]
    fused.meta.update({k: v for k, v in last.meta.items() if k in ("example_value", "val", "stack_trace")})
    last.replace_all_uses_with(fused)
    for node in reversed(nodes):
        if not node.users:
            graph.erase_node(node)


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


def _pad_channels(t, pad_c):
    """t (N or K, C, H, W) with pad_c zero channels after its C, channels-last."""
    return F.pad(t, (0, 0, 0, 0, 0, pad_c)).contiguous(memory_format=torch.channels_last)


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
        w_in = _pad_channels(w, pad_c) if pad_c else w

        def ours():
            x_in = _pad_channels(x, pad_c) if pad_c else x
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


def _fold_nodes(graph, bn, w, b, dtype):
    """Nodes that compute the conv's weight and bias with eval BatchNorm folded in, from the graph's own values,
    in float32 and then cast: w' = w * gamma / sqrt(var + eps), b' = (b - mean) * gamma / sqrt(var + eps) + beta.
    With frozen parameters (Inductor's freezing) they are constants that Inductor folds at compile time; with
    parameters as inputs they run as a few small elementwise ops a call, and stay right when the parameters
    change."""
    mean, var, gamma, beta = bn.args[1:5]
    eps = bn.args[7] if len(bn.args) > 7 else bn.kwargs.get("eps", 1e-5)
    call, method = graph.call_function, graph.call_method
    scale = call(torch.rsqrt, (call(torch.add, (method("float", (var,)), eps)),))
    if gamma is not None:
        scale = call(torch.mul, (scale, method("float", (gamma,))))
    weight = call(torch.mul, (method("float", (w,)), method("view", (scale, -1, 1, 1, 1))))
    weight = method("contiguous", (method("to", (weight, dtype)),), {"memory_format": torch.channels_last})
    shift = call(torch.neg, (method("float", (mean,)),)) if b is None else \
        call(torch.sub, (method("float", (b,)), method("float", (mean,))))
    bias = call(torch.mul, (shift, scale))
    if beta is not None:
        bias = call(torch.add, (bias, method("float", (beta,))))
    return weight, method("to", (bias, dtype))
