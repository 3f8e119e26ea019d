"""The backend's attention pass (python/tilefuse/backend_attention.py) on CPU graphs: nn.MultiheadAttention
calls that dynamo traced as F.multi_head_attention_forward get torch._native_multi_head_attention back where
the module's fast path would take it (same outputs), and are left as traced, with the reason, where it would
not. The backend applies it to inference graphs only and logs it."""
import functools
import logging

import pytest

torch = pytest.importorskip("torch")
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from tilefuse.backend_attention import native_attention  # noqa: E402


class Encoder(nn.Module):
    """torchvision's ViT encoder block's attention half: LayerNorm, self-attention, dropout, residual."""

    def __init__(self, d=32, heads=4, batch_first=True, mask=False, weights=False, cross=False):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.attention = nn.MultiheadAttention(d, heads, batch_first=batch_first)
        self.drop = nn.Dropout(0.1)
        self.mask, self.weights, self.cross = mask, weights, cross

    def forward(self, x):
        y = self.ln(x)
        mask = torch.ones(x.shape[1], x.shape[1], dtype=torch.bool).triu(1) if self.mask else None
        kv = y * 2 if self.cross else y
        y, w = self.attention(y, kv, kv, need_weights=self.weights, attn_mask=mask)
        out = x + self.drop(y)
        return out + w.sum() if self.weights else out


def graph_of(model, x, inputs=False):
    """Dynamo's graph of model(x) under no_grad (and its example inputs: the parameters and x)."""
    seen = {}

    def grab(gm, example_inputs):
        seen["gm"], seen["inputs"] = gm, example_inputs
        return gm.forward

    torch._dynamo.reset()
    with torch.no_grad():
        torch.compile(model, backend=grab)(x)
    return (seen["gm"], seen["inputs"]) if inputs else seen["gm"]


def targets(gm):
    return [n.target for n in gm.graph.nodes if n.op == "call_function"]


def test_self_attention_gets_the_fused_op_and_the_same_output():
    torch.manual_seed(0)
    model = nn.Sequential(Encoder(), Encoder()).eval()
    x = torch.randn(3, 7, 32)
    gm, inputs = graph_of(model, x, inputs=True)
    assert targets(gm).count(F.multi_head_attention_forward) == 2
    found = native_attention(gm, require_cuda=False)
    assert [why for _, why in found] == [None, None]
    assert targets(gm).count(torch._native_multi_head_attention) == 2
    assert F.multi_head_attention_forward not in targets(gm)
    with torch.no_grad():
        torch.testing.assert_close(gm(*inputs)[0], model(x), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kwargs,why", [
    (dict(batch_first=False), "not batch_first"),
    (dict(mask=True), "a mask"),
    (dict(weights=True), "need_weights=True"),
    (dict(cross=True), "not self-attention"),
    (dict(heads=1), "odd number of heads"),
])
def test_left_as_traced_with_the_reason(kwargs, why):
    torch.manual_seed(1)
    model = Encoder(**kwargs).eval()
    x = torch.randn(5, 3, 32) if kwargs.get("batch_first") is False else torch.randn(3, 5, 32)
    gm = graph_of(model, x)
    before = targets(gm)
    found = native_attention(gm, require_cuda=False)
    assert len(found) == 1 and found[0][1] and why in found[0][1], found
    assert targets(gm) == before


def test_autocast_is_refused_as_the_fast_path_refuses_it():
    gm = graph_of(Encoder().eval(), torch.randn(2, 5, 32))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        found = native_attention(gm, require_cuda=False)
    assert "autocast" in found[0][1]


def test_training_graphs_and_cpu_tensors_are_left_alone():
    model = Encoder().train()
    gm = graph_of(model, torch.randn(2, 5, 32))
    assert "training" in native_attention(gm, require_cuda=False)[0][1]
    gm = graph_of(Encoder().eval(), torch.randn(2, 5, 32))
    assert "CUDA" in native_attention(gm)[0][1]  # the real backend takes CUDA graphs only


def test_the_backend_rewrites_inference_graphs_and_says_so(caplog):
    import tilefuse.backend as tb

    torch.manual_seed(2)
    model = nn.Sequential(Encoder(), nn.Linear(32, 8)).eval()
    x = torch.randn(2, 9, 32)
    torch._dynamo.reset()
    backend = functools.partial(tb.backend, require_cuda=False, measure=False)
    with torch.no_grad(), caplog.at_level(logging.INFO, logger="tilefuse.backend"):
        got = torch.compile(model, backend=backend)(x)
        want = model(x)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
    assert "1 of 1 self-attentions in torch's fused op" in caplog.text, caplog.text
    assert "nn.MultiheadAttention's fast path" in caplog.text
