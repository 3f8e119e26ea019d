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


@pytest.mark.parametrize("in_cpp", [True, False])
def test_a_replay_copies_the_moving_inputs_and_captures_again_when_a_static_one_moves(monkeypatch, in_cpp):
    import tilefuse.backend_graphs as backend_graphs

    if not in_cpp:  # the Python loop a torch build without the C++ check takes
        monkeypatch.setattr(backend_graphs, "_data_ptrs_equal", None)
    captures, replays = [], []

    class FakeGraph:
        def replay(self):
            replays.append(1)

    replayed = ReplayedGraph(lambda *inputs: None)

    def capture(inputs):  # what _capture leaves behind, without CUDA: the graph's output is its input's buffer
        captures.append(1)
        replayed.static = [None, inputs[1].data_ptr()]
        replayed.buffers = [torch.empty(2), None]
        replayed.outputs = (replayed.buffers[0],)
        replayed.graph = FakeGraph()
        replayed._index()
        return True

    replayed._capture = capture
    weight = torch.nn.Parameter(torch.ones(2))
    for value in (3.0, 5.0):
        out = replayed(torch.full((2,), value), weight)
        assert torch.equal(out[0], torch.full((2,), value)) and out[0].data_ptr() != replayed.buffers[0].data_ptr()
    assert len(captures) == 1 and len(replays) == 2
    weight.data = torch.zeros(2)  # the parameter now lies elsewhere: the graph would read the old address
    replayed(torch.full((2,), 7.0), weight)
    assert len(captures) == 2
    replayed(torch.full((2,), 7.0), weight, weight)  # another input count: captured again, never mismatched
    assert len(captures) == 3
