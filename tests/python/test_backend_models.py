"""The backend's graph pass on whole torchvision models of other families than the benchmark's (no GPU): depthwise
and grouped convs, squeeze-and-excitation, hardswish and SiLU, channel shuffles and non-channels-last views. Every
Dynamo graph is rewritten by tilefuse.backend.fuse and run as it is (the tilefuse ops on test_backend.py's CPU
kernels, no Inductor), against the same model in bf16 eager and float32 eager: the rewrite may round
differently from bf16 eager, never be further from float32 than bf16 eager is by more than its own noise.
(A sweep of 21 torchvision families, docs/notes/python_path.md, found no wrong answer; these three cover
patterns the benchmark's models lack. CI installs torchvision with torch: scripts/setup.sh --with-torch.)"""
import pytest

torch = pytest.importorskip("torch")
torchvision = pytest.importorskip("torchvision")

import test_backend  # noqa: E402
import tilefuse.backend as tb  # noqa: E402

cpu_kernels = test_backend.cpu_kernels  # the fixture: test_backend.py's CPU stand-ins for the tilefuse ops

CL = torch.channels_last


@pytest.mark.parametrize("name", ["mobilenet_v3_small", "regnet_y_400mf", "shufflenet_v2_x0_5"])
def test_model_families(cpu_kernels, name):
    torch.manual_seed(0)
    model = getattr(torchvision.models, name)().eval()
    test_backend.randomize_batch_norms(model)
    x32 = torch.randn(2, 3, 64, 64).contiguous(memory_format=CL)
    with torch.no_grad():
        reference = model.to(memory_format=CL)(x32).float()
    model = model.to(torch.bfloat16).to(memory_format=CL)
    x = x32.to(torch.bfloat16).contiguous(memory_format=CL)
    decisions = []

    def backend(gm, inputs):
        decisions.extend(tb.fuse(gm, inputs, require_cuda=False))
        return gm.forward

    torch._dynamo.reset()
    with torch.no_grad():
        got = torch.compile(model, backend=backend)(x).float()
        eager = model(x).float()
    scale = reference.abs().max().item()
    ours, theirs = ((t - reference).abs().max().item() / scale for t in (got, eager))
    # A pass that found nothing would leave bf16 eager's graph, as accurate as bf16 eager: count what it did.
    assert len(decisions) >= 10, [str(d) for d in decisions]
    assert sum(d.fused for d in decisions) >= max(1, len(decisions) // 3), [str(d) for d in decisions]
    assert ours <= 2 * theirs + 4e-3, (ours, theirs)
