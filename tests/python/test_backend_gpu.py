"""torch.compile(model, backend="tilefuse") on a GPU: a ResNet block in inference (BatchNorm folded, conv +
bias + ReLU and conv + bias + shortcut + ReLU each one tilefuse kernel) and a training step through the fused
forward, against eager PyTorch."""
import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] < 8:
    pytest.skip("needs an sm_80 or newer GPU for torch", allow_module_level=True)

import logging  # noqa: E402

import torch.nn as nn  # noqa: E402

import tilefuse.backend  # noqa: E402

CL = torch.channels_last


class Bottleneck(nn.Module):
    def __init__(self, c=64, mid=32):
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(c, mid, 1, bias=False), nn.BatchNorm2d(mid)
        self.c2, self.b2 = nn.Conv2d(mid, mid, 3, padding=1, bias=False), nn.BatchNorm2d(mid)
        self.c3, self.b3 = nn.Conv2d(mid, c, 1, bias=False), nn.BatchNorm2d(c)

    def forward(self, x):
        y = torch.relu(self.b1(self.c1(x)))
        y = torch.relu(self.b2(self.c2(y)))
        return torch.relu(self.b3(self.c3(y)) + x)


def model_and_input(seed=0):
    torch.manual_seed(seed)
    model = Bottleneck().cuda()
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-0.2, 0.2), m.running_var.uniform_(0.5, 1.5)
    model = model.to(torch.bfloat16).to(memory_format=CL)
    x = torch.randn(4, 64, 28, 28, device="cuda").to(torch.bfloat16).contiguous(memory_format=CL)
    return model, x


def test_inference_block_matches_eager(caplog):
    """Every chain taken (measure=False: at these small shapes the host's cost may decide the race)."""
    model, x = model_and_input()
    model.eval()
    torch._dynamo.reset()
    with torch.no_grad(), caplog.at_level(logging.INFO, logger="tilefuse.backend"):
        want = model(x)
        got = tilefuse.backend.optimize(model, measure=False)(x)
    assert "3 of 3 conv and linear chains fused" in caplog.text, caplog.text
    assert torch.allclose(got.float(), want.float(), rtol=5e-2, atol=5e-2), (got - want).abs().max()


def test_measured_backend_matches_eager_and_says_why(caplog, tmp_path, monkeypatch):
    """The documented entry point (measured): whatever it picks is right, and each choice gives both times."""
    monkeypatch.setenv("TILEFUSE_CACHE_DIR", str(tmp_path))
    model, x = model_and_input(seed=3)
    model.eval()
    torch._dynamo.reset()
    with torch.no_grad(), caplog.at_level(logging.INFO, logger="tilefuse.backend"):
        want = model(x)
        got = torch.compile(model, backend="tilefuse")(x)
    assert caplog.text.count(" ms host; torch ") == 3, caplog.text
    assert (tmp_path / "backend_choices.json").exists()
    assert torch.allclose(got.float(), want.float(), rtol=5e-2, atol=5e-2), (got - want).abs().max()


def test_measured_backend_with_cuda_graphs(tmp_path, monkeypatch):
    """mode="reduce-overhead" (Inductor's CUDA graphs) through the backend: the chooser times GPU time alone, the
    replayed forward is right."""
    monkeypatch.setenv("TILEFUSE_CACHE_DIR", str(tmp_path))
    model, x = model_and_input(seed=5)
    model.eval()
    torch._dynamo.reset()
    with torch.no_grad():
        want = model(x)
        compiled = torch.compile(model, backend="tilefuse", mode="reduce-overhead")
        for _ in range(3):  # recorded, then replayed
            got = compiled(x).clone()
    assert torch.allclose(got.float(), want.float(), rtol=5e-2, atol=5e-2), (got - want).abs().max()


def test_frozen_graphs_replay_from_the_backends_own_cuda_graph(tmp_path, monkeypatch):
    """mode="reduce-overhead" with freezing: the backend captures the compiled forward and the graph's own ops
    once each (ReplayedGraph), keeps the faster and replays it; each call's output is its own (a later call does
    not overwrite it) and right for its input."""
    from torch._inductor import config as inductor_config

    import tilefuse.backend as backend_module
    from tilefuse.backend_graphs import ReplayedGraph

    monkeypatch.setenv("TILEFUSE_CACHE_DIR", str(tmp_path))
    made = []
    monkeypatch.setattr(backend_module, "ReplayedGraph", lambda compiled, **kw: made.append(ReplayedGraph(compiled, **kw)) or made[-1])
    model, x = model_and_input(seed=6)
    model.eval()
    torch._dynamo.reset()
    inputs = [torch.randn_like(x).contiguous(memory_format=torch.channels_last) for _ in range(4)]
    with torch.no_grad(), inductor_config.patch(freezing=True):
        wants = [model(t) for t in inputs]
        compiled = torch.compile(model, backend="tilefuse", mode="reduce-overhead")
        gots = [compiled(t) for t in inputs]
    # two captured (Inductor's forward and the graph's own ops, raced), each once
    assert len(made) == 2 and all(m.why_not is None and m.captures == 1 for m in made), [m.why_not for m in made]
    for got, want in zip(gots, wants):
        assert torch.allclose(got.float(), want.float(), rtol=5e-2, atol=5e-2), (got - want).abs().max()
    assert len({g.data_ptr() for g in gots}) == len(gots)


def test_the_chooser_times_host_and_gpu_apart():
    """The timer's two sides: a long kernel costs GPU time, not host time; many tiny calls the reverse."""
    from tilefuse.backend_chooser import _host_and_gpu_ms

    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8, device="cuda")
    (host, gpu), (tiny_host, tiny_gpu) = _host_and_gpu_ms(lambda: a @ a, lambda: [b.add_(1.0) for _ in range(20)])
    assert 0 < host < gpu, (host, gpu)
    assert 0 < tiny_gpu < tiny_host, (tiny_host, tiny_gpu)


class TrainBlock(nn.Module):
    """No BatchNorm (training-mode BatchNorm stays torch's): conv + bias + ReLU, conv + bias + shortcut + ReLU."""

    def __init__(self, c=64):
        super().__init__()
        self.c1, self.c2 = nn.Conv2d(c, c, 3, padding=1), nn.Conv2d(c, c, 3, padding=1)

    def forward(self, x):
        return torch.relu(self.c2(torch.relu(self.c1(x))) + x)


def test_training_step_through_the_backend(caplog):
    torch.manual_seed(1)
    model = TrainBlock().cuda().to(torch.bfloat16).to(memory_format=CL)
    reference = TrainBlock().cuda().to(torch.bfloat16).to(memory_format=CL)
    reference.load_state_dict(model.state_dict())
    x = torch.randn(4, 64, 28, 28, device="cuda").to(torch.bfloat16).contiguous(memory_format=CL)
    torch._dynamo.reset()
    with caplog.at_level(logging.INFO, logger="tilefuse.backend"):
        compiled = tilefuse.backend.optimize(model, measure=False)
        compiled(x).float().square().mean().backward()
    assert "2 of 2 conv and linear chains fused" in caplog.text, caplog.text
    reference(x).float().square().mean().backward()
    # Within 3% of each gradient's largest magnitude: these are ~1e-3 to 2e-2 (a mean over 200704 outputs), so a
    # fixed atol of 1e-2 passed zero or negated weight gradients. A fused forward (one bf16 rounding per chain)
    # moves them by under 1% (simulated on the CPU).
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        error, scale = (p.grad.float() - q.grad.float()).abs().max().item(), q.grad.float().abs().max().item()
        assert scale > 0 and error <= 3e-2 * scale, (name, error, scale)
