"""ReplayedGraph (tilefuse.backend_graphs) without a GPU: which inputs it reads in place, the fallback where it
cannot capture (said why), outputs cloned. The capture and replay themselves are
checked on the GPU (test_backend_gpu.py)."""
import pytest

torch = pytest.importorskip("torch")

from tilefuse.backend_graphs import ReplayedGraph, _cloned, static_input  # noqa: E402


def test_the_models_own_tensors_are_static():
    assert static_input(torch.nn.Parameter(torch.zeros(2)))
    buffer = torch.zeros(2)
    assert not static_input(buffer)
    buffer._dynamo_static_input_type = "unguarded"  # what Dynamo marks a module's buffers with
    assert static_input(buffer)


def test_cpu_inputs_run_uncaptured_and_say_why():
    calls = []

    def compiled(a, b):
        calls.append((a, b))
        return (a + b, a * b)

    replayed = ReplayedGraph(compiled)
    a, b = torch.ones(3), torch.full((3,), 2.0)
    for _ in range(2):
        out = replayed(a, b)
        assert torch.equal(out[0], a + b) and torch.equal(out[1], a * b)
    assert replayed.graph is None and "not a CUDA tensor" in replayed.why_not and len(calls) == 2


def test_outputs_are_cloned_in_their_structure():
    a, b = torch.ones(2), torch.zeros(2)
    out = _cloned((a, [b, 3]))
    assert isinstance(out, tuple) and isinstance(out[1], list) and out[1][1] == 3
    assert out[0].data_ptr() != a.data_ptr() and torch.equal(out[0], a)
