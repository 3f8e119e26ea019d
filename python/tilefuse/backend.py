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


def backend(gm, example_inputs, measure=True, require_cuda=True, **kwargs):
    """The torch.compile backend: fuse(), then Inductor's compile_fx on the rewritten graph (require_cuda: as
    fuse's, for tests on CPU)."""
    from torch._inductor.compile_fx import compile_fx

    decisions = fuse(gm, example_inputs, require_cuda=require_cuda, chooser=Chooser() if measure else None)
    if decisions and log.isEnabledFor(logging.INFO):
        taken = sum(d.fused for d in decisions)
        log.info("tilefuse.backend: %d of %d conv and linear chains fused into tilefuse kernels\n  %s", taken,
                 len(decisions), "\n  ".join(str(d) for d in decisions))
    return compile_fx(gm, example_inputs, **kwargs)


class Chooser:
    """Whether tilefuse's kernel beats torch's own ops on one chain on this device: both timed once on random
    tensors of the chain's shapes (CUDA events, median), the answer kept on disk beside the JIT cache
    (<cache>/backend_choices.json, keyed by device, chain and shapes), so each shape is measured once per
    machine. torch's side is what Inductor lowers the chain to, with the BatchNorm already folded: cuDNN's conv
    with its bias, then one pass over the output (see _race)."""

    def __init__(self, path=None, timer=None):
        from .jit.cache import cache_dir

        self.path = path or os.path.join(cache_dir(), "backend_choices.json")
        self.timer = timer or _median_ms
        try:
            with open(self.path) as f:
                self.known = json.load(f)
        except (OSError, ValueError):
            self.known = {}

    def tilefuse_wins(self, signature, ours, theirs):
        """(whether ours is faster, its ms, theirs ms), measured or remembered for `signature`."""
        key = hashlib.sha256(json.dumps(signature, sort_keys=True, default=str).encode()).hexdigest()
        if key not in self.known:
            self.known[key] = {"signature": signature, "tilefuse_ms": self.timer(ours), "torch_ms": self.timer(theirs)}
            self._changed = True
        entry = self.known[key]
        return entry["tilefuse_ms"] <= entry["torch_ms"], entry["tilefuse_ms"], entry["torch_ms"]

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


def _median_ms(fn, reps=15, calls=8):
    """Median ms per call over `reps` loops of `calls` back-to-back calls: the steady rate a model's forward
    sees, host cost included where it exceeds the GPU's time (a lone call between two events would count the
    host's whole enqueue as if nothing overlapped it)."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / calls)
    return statistics.median(times)


def fuse(gm, example_inputs, *, require_cuda=True, chooser=None):
    """Rewrites gm's conv chains into tilefuse ops in place; returns a Decision per conv. require_cuda=False
    lets tests rewrite CPU graphs (whose tilefuse ops then need a CPU kernel registered). chooser: a Chooser
    (or None: take every chain tilefuse can run)."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    values = {n: v for n, v in zip(placeholders, example_inputs)}
    frozen = not torch.is_grad_enabled()
    decisions = []
    for node in list(gm.graph.nodes):
        if node.op == "call_function" and node.target in _CONVS and node.graph is gm.graph:
            decisions.append(_fuse_conv(gm, node, values, frozen, require_cuda, chooser))
        elif node.op == "call_function" and node.target in _LINEARS and node.graph is gm.graph:
            decisions.append(_fuse_linear(gm, node, frozen, require_cuda, chooser))
    if chooser is not None:
        chooser.save()
    gm.graph.lint()
    gm.recompile()
    return decisions


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


def _single_user(node):
    users = list(node.users)
    return users[0] if len(users) == 1 else None


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


def _fuse_conv(gm, conv, values, frozen, require_cuda, chooser=None):
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
    nxt = _single_user(last)
    if nxt is not None and nxt.op == "call_function" and nxt.target in _BATCH_NORMS:
        training = nxt.args[5] if len(nxt.args) > 5 else nxt.kwargs.get("training", False)
        if training or not frozen:
            return keep("conv -> BatchNorm", "BatchNorm in training, or grad mode on: folding needs frozen "
                        "parameters (compile under torch.no_grad() with model.eval())")
        bn = nxt
        chain.append("BatchNorm")
        nodes.append(bn)
        last, nxt = bn, _single_user(bn)
    if nxt is not None and _activation(nxt) is not None:
        act_before = _activation(nxt)
        chain.append(act_before)
        nodes.append(nxt)
        last, nxt = nxt, _single_user(nxt)
    if nxt is not None and nxt.op == "call_function" and nxt.target in _ADDS and len(nxt.args) == 2 \
            and not nxt.kwargs:
        other = nxt.args[1] if nxt.args[0] is last else nxt.args[0]
        other_value = _value(other)
        if other_value is not None and tuple(other_value.shape) == tuple(_value(last).shape) and \
                other_value.dtype == out.dtype and _channels_last(other_value):
            residual = other
            chain.append("+ residual")
            nodes.append(nxt)
            last, nxt = nxt, _single_user(nxt)
            if act_before is None and nxt is not None and _activation(nxt) is not None:
                act_after = _activation(nxt)
                chain.append(act_after)
                nodes.append(nxt)
                last = nxt
    if len(nodes) == 1 and b is None:
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
    wins, measured = _measure(chooser, (x_value, w_value, out), dict(
        chain=chain_text, stride=_pair(stride), padding=_pair(padding), dilation=_pair(dilation),
        activation=activation, residual_first=residual_first, frozen=frozen, pad_channels=pad_c),
        lambda: _race(x_value, w_value, b is not None or bn is not None, _value(residual) if residual else None,
                      (_pair(stride), _pair(padding), _pair(dilation)), activation, residual_first, frozen, pad_c))
    if not wins:
        return keep(chain_text, "torch's ops measured faster here" + measured)

    graph = gm.graph
    with graph.inserting_before(last):
        if bn is not None:
            w_node, b_node = _fold_nodes(graph, bn, w, b, out.dtype)
        else:
            w_node, b_node = w, b
        x_node = x
        if pad_c:
            x_node, w_node = (graph.call_function(_pad_channels, (node, pad_c)) for node in (x, w_node))
        args = (x_node, w_node, b_node, residual, _pair(stride), _pair(padding), _pair(dilation))
        if frozen:  # no grad to trace: the op without a Python autograd kernel (inference_ops.py)
            fused = graph.call_function(torch.ops.tilefuse.conv2d_inference.default,
                                        args + (activation, residual_first))
        elif act_after is not None:
            fused = graph.call_function(torch.ops.tilefuse.conv2d_add_act.default, args + (act_after,))
        else:
            fused = graph.call_function(torch.ops.tilefuse.conv2d.default, args + (act_before or "none", "require"))
    _replace(graph, nodes, fused)
    how = "one kernel" + (", BatchNorm folded" if bn is not None else "") + \
        (f", channels padded {x_value.shape[1]} -> {x_value.shape[1] + pad_c}" if pad_c else "")
    return Decision(name, chain_text, True, how + measured)


def _fuse_linear(gm, linear, frozen, require_cuda, chooser):
    """linear -> [act] -> [+ residual] as one tilefuse::linear (act(x @ w.t() + b) + residual; Hopper GEMM)."""
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
    nxt = _single_user(last)
    if nxt is not None and _activation(nxt) is not None:
        activation = _activation(nxt)
        chain.append(activation)
        nodes.append(nxt)
        last, nxt = nxt, _single_user(nxt)
    if nxt is not None and nxt.op == "call_function" and nxt.target in _ADDS and len(nxt.args) == 2 and not nxt.kwargs:
        other = nxt.args[1] if nxt.args[0] is last else nxt.args[0]
        other_value = _value(other)
        if other_value is not None and tuple(other_value.shape) == tuple(out.shape) and other_value.dtype == out.dtype:
            residual = other
            chain.append("+ residual")
            nodes.append(nxt)
            last = nxt
    chain_text = " -> ".join(chain)
    if len(nodes) == 1:
        return keep(chain_text, "nothing to fuse: cuBLASLt's bias epilogue is as good")
    if any(len(n.users) > 1 for n in nodes[:-1]):
        return keep(chain_text, "an intermediate is used twice")
    wins, measured = _measure(chooser, (_value(x), w_value, out),
                              dict(chain=chain_text, activation=activation, frozen=frozen),
                              lambda: _race_linear(_value(x), w_value, b is not None,
                                                   _value(residual) if residual else None, activation, frozen))
    if not wins:
        return keep(chain_text, "torch's ops measured faster here" + measured)
    graph = gm.graph
    with graph.inserting_before(last):
        op = torch.ops.tilefuse.linear_inference if frozen else torch.ops.tilefuse.linear
        fused = graph.call_function(op.default, (x, w, b, residual, activation))
    _replace(graph, nodes, fused)
    return Decision(linear.name, chain_text, True, "one kernel" + measured)


# What a measurement compares; a choice remembered under another method is measured again.
_RACE = "the graph's op vs cuDNN / cuBLASLt + one pass"


def _measure(chooser, tensors, fields, race):
    """(whether tilefuse takes the chain, the timings in words) by the chooser: the chain's tensors (x, w,
    output) give the shapes of the signature, race() the two calls. Without a chooser, or with symbolic
    shapes, tilefuse takes it unmeasured."""
    if chooser is None or not all(isinstance(d, int) for v in tensors for d in v.shape):
        return True, ""
    x_value, w_value, out = tensors
    device = torch.cuda.get_device_name(out.device) if out.device.type == "cuda" else str(out.device)
    signature = {"device": device, "x": _spec(x_value), "w": _spec(w_value), "race": _RACE, **fields}
    wins, ours_ms, theirs_ms = chooser.tilefuse_wins(signature, *race())
    return wins, f"; tilefuse {ours_ms:.4f} ms, torch {theirs_ms:.4f} ms"


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
