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
    replayed._current_stream = lambda: 0  # one stream (no CUDA here)
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


def test_a_call_on_another_stream_waits_for_the_last_replay_before_it_writes_the_buffers():
    """Two callers on different streams share the graph's buffers: the second call's copies must follow the first
    call's replay and clones (else it overwrites inputs the replay still reads: a silently wrong answer)."""
    events = []

    class FakeGraph:
        def replay(self):
            events.append(("replay", stream[0]))

    replayed = ReplayedGraph(lambda *inputs: None)

    def capture(inputs):
        replayed.static, replayed.buffers = [None], [torch.empty(2)]
        replayed.outputs = replayed.buffers[0]
        replayed.graph = FakeGraph()
        replayed._index()
        return True

    stream = [11]
    replayed._capture = capture
    replayed._current_stream = lambda: stream[0]
    replayed._wait_for = lambda raw: events.append(("wait", stream[0], raw))
    replayed._capturing = lambda: False
    for s in (11, 11, 22, 22, 11):
        stream[0] = s
        replayed(torch.full((2,), float(s)))
    assert events == [("replay", 11), ("replay", 11), ("wait", 22, 11), ("replay", 22), ("replay", 22),
                      ("wait", 11, 22), ("replay", 11)]


def test_the_input_buffers_made_under_inference_mode_take_later_calls_outside_it(monkeypatch):
    """A capture's buffers are written by every later call: made as inference tensors (a first call under
    torch.inference_mode), a later call under no_grad would raise on the copy."""
    import tilefuse.backend_graphs as backend_graphs

    class FakeGraph:
        def replay(self):
            pass

    class FakeStream:
        def wait_stream(self, other):
            pass

    class Context:
        def __init__(self, *args, **kwargs):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    class Input(torch.Tensor):  # a CPU tensor that passes the capture's CUDA check
        @property
        def is_cuda(self):
            return True

    fake_cuda = type("cuda", (), {"Stream": FakeStream, "stream": Context, "graph": Context,
                                  "current_stream": staticmethod(lambda *a: FakeStream()),
                                  "current_device": staticmethod(lambda: 0)})
    monkeypatch.setattr(backend_graphs.torch, "cuda", fake_cuda)
    replayed = ReplayedGraph(lambda x: x * 2, graph_factory=FakeGraph)
    replayed._current_stream = lambda: 0
    x = torch.ones(2).as_subclass(Input)
    with torch.inference_mode():
        replayed(x)
    assert replayed.buffers[0] is not None and not replayed.buffers[0].is_inference()
    with torch.no_grad():
        out = replayed(torch.full((2,), 3.0).as_subclass(Input))  # the copy into the buffer
    assert torch.equal(out.as_subclass(torch.Tensor), torch.full((2,), 2.0))  # (the fake graph does not rerun)
