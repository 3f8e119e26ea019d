"""A pass of the torch.compile backend for inference graphs: nn.MultiheadAttention's fast path, which the traced
graph misses.

In eager inference, nn.MultiheadAttention (batch_first, self-attention, no masks) calls one fused op,
torch._native_multi_head_attention (the QKV projection, the bias and scaling of q, k and v in one kernel, flash
attention, the output projection). Traced by dynamo it becomes F.multi_head_attention_forward between two
transposes, which Inductor lowers op by op, with copies for the head layout: on ViT-B/16 Inductor runs slower
than eager (H200, N = 128: 13.9 against 12.3 ms). This pass puts the fused op back wherever the fast path's own
conditions hold; Inductor calls it as an extern kernel and fuses the rest of the graph around it.
"""
import inspect
import operator

import torch
import torch.nn.functional as F

_SIGNATURE = inspect.signature(F.multi_head_attention_forward)


def native_attention(gm, require_cuda=True):
    """Rewrites gm's eligible self-attention calls in place; returns [(node name, why)] for every
    F.multi_head_attention_forward call, why = None where it was rewritten. require_cuda=False: CPU tensors
    too (tests)."""
    found = []
    autocast = any(n.op == "call_function" and "autocast" in str(n.target) for n in gm.graph.nodes)
    for node in list(gm.graph.nodes):
        if node.op == "call_function" and node.target is F.multi_head_attention_forward:
            why = "autocast in the graph" if autocast else _rewrite(gm.graph, node, require_cuda)
            found.append((node.name, why))
    if any(why is None for _, why in found):
        gm.graph.lint()
        gm.recompile()
    return found


def _rewrite(graph, node, require_cuda):
    """Replaces transpose -> F.multi_head_attention_forward -> [0] -> transpose by the fused op; the reason
    it cannot, or None."""
    try:
        bound = _SIGNATURE.bind(*node.args, **node.kwargs)
    except TypeError as error:
        return f"unrecognized arguments ({error})"
    bound.apply_defaults()
    a = bound.arguments
    why = _not_fast_path(a)
    if why:
        return why
    query = a["query"]
    if not (a["key"] is query and a["value"] is query):
        return "not self-attention (query, key and value differ)"
    source = _transposed_from(query)
    if source is None:
        return "not batch_first (no transpose of a (batch, sequence, embedding) input)"
    if any(not (u.target is operator.getitem and u.args[1] == 0) for u in node.users):
        return "the attention weights are used"
    outputs = list(node.users)
    backs = [b for g in outputs for b in g.users]
    if not outputs or any(_transposed_from(b) is None for b in backs) or any(len(g.users) != 1 for g in outputs):
        return "the output is not transposed back to batch_first"
    why = _tensor_facts(source, a, require_cuda)
    if why:
        return why
    with graph.inserting_before(node):
        fused = graph.call_function(torch._native_multi_head_attention, (
            source, source, source, a["embed_dim_to_check"], a["num_heads"], a["in_proj_weight"], a["in_proj_bias"],
            a["out_proj_weight"], a["out_proj_bias"], None, False, True, None))
        out = graph.call_function(operator.getitem, (fused, 0))
    out.meta.update(_contiguous_like(backs[0]))
    for back in backs:
        back.replace_all_uses_with(out)
        graph.erase_node(back)
    for getter in outputs:
        graph.erase_node(getter)
    graph.erase_node(node)
    if not query.users:
        graph.erase_node(query)
    return None


def _contiguous_like(node):
    """Metadata for the fused op's output: the transposed-back node's, made contiguous (the op's layout)."""
    meta = {k: v for k, v in node.meta.items() if k in ("example_value", "val", "stack_trace")}
    for key in ("example_value", "val"):
        value = meta.get(key)
        if isinstance(value, torch.Tensor):
            try:
                meta[key] = value.new_empty(value.shape)
            except Exception:  # noqa: BLE001 - keep the view's metadata: the shape and dtype are what matter
                pass
    return meta


def _not_fast_path(a):
    """nn.MultiheadAttention's own reasons to leave its fast path, those the call's arguments show."""
    if not torch.backends.mha.get_fastpath_enabled():
        return "torch.backends.mha fast path disabled"
    if torch.is_autocast_enabled("cuda") or torch.is_autocast_enabled("cpu"):
        return "autocast is enabled (the fast path refuses it)"
    if a["training"]:
        return "training"
    if a["need_weights"]:
        return "need_weights=True"
    if a["attn_mask"] is not None or a["key_padding_mask"] is not None or a["is_causal"]:
        return "a mask (the fused op is taken without masks only)"
    if a["use_separate_proj_weight"] or a["in_proj_weight"] is None:
        return "separate q / k / v projection weights"
    if a["in_proj_bias"] is None or a["out_proj_bias"] is None:
        return "a projection without bias"
    if a["bias_k"] is not None or a["bias_v"] is not None or a["add_zero_attn"]:
        return "bias_k / bias_v / add_zero_attn"
    if a["static_k"] is not None or a["static_v"] is not None:
        return "static keys or values"
    if not isinstance(a["num_heads"], int) or a["num_heads"] % 2:
        return "an odd number of heads"
    if not isinstance(a["embed_dim_to_check"], int):
        return "a symbolic embedding size"
    return ""


def _transposed_from(node):
    """x where node is x.transpose(1, 0) (or (0, 1)), else None."""
    if not isinstance(node, torch.fx.Node):
        return None
    if node.op == "call_method" and node.target == "transpose" and len(node.args) == 3:
        x, d0, d1 = node.args
    elif node.op == "call_function" and node.target is torch.transpose and len(node.args) == 3:
        x, d0, d1 = node.args
    else:
        return None
    return x if {d0, d1} == {0, 1} and not node.kwargs else None


def _tensor_facts(source, a, require_cuda):
    """The fast path's conditions on the tensors (from dynamo's example values): 3-D, CUDA, one dtype."""
    tensors = [source, a["in_proj_weight"], a["in_proj_bias"], a["out_proj_weight"], a["out_proj_bias"]]
    values = [t.meta.get("example_value") if isinstance(t, torch.fx.Node) else None for t in tensors]
    if any(not isinstance(v, torch.Tensor) for v in values):
        return "tensors of unknown dtype or device"
    if values[0].dim() != 3:
        return "an unbatched input"
    if require_cuda and any(v.device.type != "cuda" for v in values):
        return "tensors not on a CUDA device"
    if len({v.dtype for v in values}) != 1:
        return "mixed dtypes"
    return ""
