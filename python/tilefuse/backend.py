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
or device without a kernel, tensors that are not channels-last, training-mode BatchNorm, and a bare conv
(nothing to fuse: cuDNN's call is as good). A chain ends at a value used more than once (a conv whose output
feeds both its BatchNorm and a shortcut's add: the fused op computes that value, its users read it), and the
log says so where that leaves a bare conv or linear.
"""
import functools
import logging
import operator
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from . import inference_ops, ops  # noqa: F401 - register tilefuse::conv2d, conv2d_add_act, linear and the
#                                    inference forms the frozen graphs use
from .backend_attention import native_attention
from .backend_chooser import Chooser, _race, _race_linear, _signature
from .backend_graphs import ReplayedGraph
from .op_common import channels_to_pad, pad_channels

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
    time alone. Inference graphs first get nn.MultiheadAttention's fused op back (backend_attention.py).
    Without CUDA graphs, a frozen (inference) graph so rewritten is also compiled without the rewrites and the
    two are timed on the example inputs: the faster is returned, so the backend is never slower than Inductor
    alone by more than the timing's noise. With CUDA graphs, a frozen inference graph replays from the backend's
    own graph (ReplayedGraph), training and unfrozen graphs from Inductor's; when measuring, the rewritten graph's
    own ops (no Inductor) are replayed too and the faster of the two replays kept. require_cuda: as fuse's, for tests
    on CPU; chooser:
    a Chooser (tests), else one made here when measuring."""
    from torch._inductor import config as inductor_config
    from torch._inductor import list_mode_options
    from torch._inductor.compile_fx import compile_fx

    patches = dict(list_mode_options(mode)) if mode not in (None, "default") else {}
    patches.update(options or {})
    graphs = bool(patches.get("triton.cudagraphs", inductor_config.triton.cudagraphs))
    # A frozen inference graph replays from the backend's own CUDA graph (backend_graphs.py: less host work per
    # call than Inductor's cudagraph trees); training graphs and unfrozen ones keep Inductor's.
    # Not with symbolic sizes among the inputs (a recompile with dynamic shapes): ReplayedGraph keys its graphs by
    # tensors alone, so that graph keeps Inductor's cudagraph trees.
    replayed = graphs and not torch.is_grad_enabled() and bool(patches.get("freezing", inductor_config.freezing)) \
        and not any(isinstance(v, (torch.SymInt, torch.SymFloat, torch.SymBool)) for v in example_inputs)
    if replayed:
        patches["triton.cudagraphs"] = False
    if measure and chooser is None:
        chooser = Chooser(graphs=graphs)
    timing_inputs = _concrete(example_inputs) if measure and not torch.is_grad_enabled() else None
    race = timing_inputs is not None and _real(timing_inputs, require_cuda)
    plain = _graph_copy(gm) if race and not graphs else None
    attention = [] if torch.is_grad_enabled() else native_attention(gm, require_cuda=require_cuda)
    decisions = fuse(gm, example_inputs, require_cuda=require_cuda, chooser=chooser if measure else None)
    own_ops = _graph_copy(gm) if race and replayed else None
    compiled = compile_fx(gm, example_inputs, config_patches=patches or None, **kwargs)
    verdict = ""
    if own_ops is not None:
        compiled, verdict = _race_replays(compiled, own_ops, timing_inputs, chooser)
    if plain is not None and (any(d.fused for d in decisions) or any(why is None for _, why in attention)):
        alone = compile_fx(plain, example_inputs, config_patches=patches or None, **kwargs)
        fused_ms, alone_ms = chooser.graph_timer(compiled, alone, timing_inputs)
        faster = alone_ms < fused_ms
        verdict = (f"; the whole graph: {fused_ms:.3f} ms with them, {alone_ms:.3f} ms Inductor alone: "
                   f"{'Inductor alone kept' if faster else 'kept'}")
        if faster:
            for d in decisions:
                if d.fused:
                    d.fused, d.why = False, "the whole graph ran faster without tilefuse (" + d.why + ")"
            attention = [(name, why or "the whole graph ran faster without the rewrite") for name, why in attention]
            compiled = alone
    if (decisions or attention) and log.isEnabledFor(logging.INFO):
        taken = sum(d.fused for d in decisions)
        notes = [str(d) for d in decisions] + [
            f"{name}: self-attention: " + ("torch's fused op (nn.MultiheadAttention's fast path)" if why is None
                                           else f"as traced ({why})") for name, why in attention]
        log.info("tilefuse.backend: %d of %d conv and linear chains fused into tilefuse kernels%s%s\n  %s", taken,
                 len(decisions), _attention_summary(attention), verdict, "\n  ".join(notes))
    return ReplayedGraph(compiled) if replayed and own_ops is None else compiled


def _race_replays(compiled, own_ops, example_inputs, chooser):
    """(the faster replayed forward, what the log says): Inductor's compiled forward and the rewritten graph's
    own ops (tilefuse's kernels and torch's eager ones, no Inductor), each replayed from the backend's own CUDA
    graph and timed on the example inputs. Replayed, Inductor's kernels are not always the faster: ViT-B/16 at
    batch 1 and 8 on an H200, eager's cuBLAS GEMMs and flash attention beat them (docs/notes/python_path.md)."""
    # One memory pool for both: their replays run one after the other and each one's outputs are cloned at once.
    pool = torch.cuda.graph_pool_handle() if torch.cuda.is_available() else None
    inductor, eager = ReplayedGraph(compiled, pool=pool), ReplayedGraph(own_ops, pool=pool)
    try:
        inductor_ms, eager_ms = chooser.graph_timer(inductor, eager, example_inputs)
    except Exception as error:  # noqa: BLE001 - the graph's own ops failed: Inductor's forward, as before the race
        return ReplayedGraph(compiled), (f"; replayed from one CUDA graph: Inductor's kernels (the graph's own ops "
                                         f"failed: {type(error).__name__}: {str(error)[:200]})")
    faster = eager_ms < inductor_ms
    return (eager if faster else inductor), (
        f"; replayed from one CUDA graph: {inductor_ms:.3f} ms with Inductor's kernels, {eager_ms:.3f} ms with the "
        f"graph's own ops: {'the own ops' if faster else 'Inductor'} kept")


def _attention_summary(attention):
    if not attention:
        return ""
    return f"; {sum(why is None for _, why in attention)} of {len(attention)} self-attentions in torch's fused op"


def _concrete(example_inputs):
    """The example inputs to time the graphs on: a compile with dynamic shapes (Dynamo's second one at a new
    batch size) passes the symbolic sizes among them as SymInts, which the graphs must be called with as the
    ints they stand for. None where one has no value (nothing is timed then)."""
    from torch.fx.experimental import symbolic_shapes

    hint = getattr(symbolic_shapes, "size_hint", None) or symbolic_shapes.hint_int  # (hint_int: torch < 2.11)

    values = []
    for value in example_inputs:
        if isinstance(value, torch.SymInt):
            try:
                value = hint(value)
            except Exception:  # noqa: BLE001 - a size without a hint: the race is skipped
                return None
        elif isinstance(value, (torch.SymFloat, torch.SymBool)):
            return None
        values.append(value)
    return values


def _real(example_inputs, require_cuda):
    """Whether the example inputs are real tensors a graph can run on (CUDA ones unless require_cuda is off)."""
    from torch._subclasses.fake_tensor import FakeTensor

    tensors = [t for t in example_inputs if isinstance(t, torch.Tensor)]
    return bool(tensors) and all(not isinstance(t, FakeTensor) and (t.is_cuda or not require_cuda) for t in tensors)


def _graph_copy(gm):
    """A GraphModule over a copy of gm's graph (the nodes' metadata shared, the module's tensors too), its
    subgraph modules (the bodies of higher-order ops) copied alike, since Inductor's passes rewrite those in
    place: the graph as it is now, for a second compile or to run as it is."""
    graph = torch.fx.Graph()
    graph._codegen = gm.graph._codegen
    graph.output(graph.graph_copy(gm.graph, {}))
    copy = torch.fx.GraphModule(gm, graph)
    for name, child in gm.named_children():
        if isinstance(child, torch.fx.GraphModule):
            setattr(copy, name, _graph_copy(child))
    return copy


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


def _why_it_ends(last, claimed):
    """Why a chain's walk stopped at `last`, where that is not the graph's shape alone: its value is used more
    than once (the chain may not swallow it), or its one user ends an earlier chain."""
    users = list(last.users)
    if len(users) > 1:
        times = "twice" if len(users) == 2 else f"{len(users)} times"
        return f" (its output is used {times}, by {', '.join(u.name for u in users)}: a chain ends there)"
    if len(users) == 1 and users[0] in claimed:
        return f" (its user {users[0].name} ends an earlier chain)"
    return ""


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
        return keep("conv", "a bare conv: nothing to fuse, cuDNN's call is as good" + _why_it_ends(last, claimed))
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
    pad_c = channels_to_pad(x_value, w_value) if frozen else 0
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
                x_node, w_node = (graph.call_function(pad_channels, (node, pad_c)) for node in (x_node, w_node))
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
        return keep(chain_text, "nothing to fuse: cuBLASLt's bias epilogue is as good" + _why_it_ends(last, claimed))
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


def _replace(graph, nodes, fused):
    """The chain `nodes` (its last node's users) read `fused` instead; the chain's nodes are erased."""
    last = nodes[-1]
    fused.meta.update({k: v for k, v in last.meta.items() if k in ("example_value", "val", "stack_trace")})
    last.replace_all_uses_with(fused)
    for node in reversed(nodes):
        if not node.users:
            graph.erase_node(node)


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
