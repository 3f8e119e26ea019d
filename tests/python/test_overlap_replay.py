"""tilefuse.overlap_replay's policy, no GPU: a graph stands in for the CUDA graph (it runs the body again on the
addresses it was recorded with), so every rule shows in the values: first calls run op by op, a held output is
never overwritten, an input at a new address is copied only into a held input nothing else uses, the limits."""
import pytest

torch = pytest.importorskip("torch")

import tilefuse.overlap_replay as replay  # noqa: E402


class Recorded:
    """Replays body into the recorded output, reading its inputs where the graph holds them (as a CUDA graph, it
    holds no tensor itself: a borrowed input is found among the graphs' outputs by its address)."""

    def __init__(self, body, out):
        self.body, self.out = body, out

    def replay(self):
        graphs = [g for entry in replay._signatures.values() for g in entry.graphs]
        held = next(g for g in graphs if g.graph is self)
        outputs = {g.out.data_ptr(): g.out for g in graphs}
        inputs = [outputs[t.data_ptr()] if isinstance(t, replay._Borrowed) else t for t in held.inputs]
        self.out.copy_(self.body(*inputs))


class Stream:
    """A stand-in stream: which one is current, and what waited for what."""
    current = None
    waits = []

    def __init__(self, name):
        self.name = name

    def wait_stream(self, other):
        Stream.waits.append((self.name, other.name))


@pytest.fixture
def recorded(monkeypatch):
    made = []

    def record(body, inputs, stream):
        out = body(*inputs)
        made.append(Recorded(body, out))
        return made[-1], out

    monkeypatch.setattr(replay, "_record", record)
    monkeypatch.setattr(replay, "_capturing", lambda: False)
    monkeypatch.setattr(replay, "_current_stream", lambda: Stream.current)
    replay.reset_graphs()
    yield made
    replay.reset_graphs()


def double(x):
    return x * 2


def call(x, signature="sig", kept=()):
    """A call whose caller runs body itself where run() hands back None (the first call of a signature)."""
    out = replay.run(signature, (x,), double, None, kept=kept)
    return double(x) if out is None else out


def replayed(x, signature="sig", kept=()):
    """A call that must come from a graph: call()'s stand-in would make any value checked after it right."""
    out = replay.run(signature, (x,), double, None, kept=kept)
    assert out is not None, f"{signature}: run() gave the call back to run op by op"
    return out


def test_first_call_op_by_op_then_one_graph(recorded):
    x = torch.arange(4.0)
    assert replay.run("sig", (x,), double, None) is None  # the first call warms the caches op by op
    got = replay.run("sig", (x,), double, None)
    assert torch.equal(got, x * 2) and len(recorded) == 1
    del got
    x.add_(1)  # read where it lies
    assert torch.equal(replay.run("sig", (x,), double, None), x * 2) and len(recorded) == 1


def test_a_held_output_is_never_overwritten(recorded):
    x = torch.arange(4.0)
    call(x)
    first = replayed(x)
    x.add_(10)
    second = replayed(x)  # first is held: another graph
    assert torch.equal(first, torch.arange(4.0) * 2) and torch.equal(second, x * 2)
    assert len(recorded) == 2
    view = second[1:]
    del second
    x.add_(10)
    third = replayed(x)  # a view of second is held too
    assert torch.equal(view, (torch.arange(4.0) + 10)[1:] * 2) and torch.equal(third, x * 2)
    assert len(recorded) == 3


def test_an_input_at_a_new_address(recorded):
    call(torch.arange(4.0))
    replayed(torch.arange(4.0))  # recorded on a temporary the caller dropped: the graph holds it
    copied = replay.stats["copied_inputs"]  # (the stats count over the whole session)
    y = torch.arange(4.0) + 5
    assert torch.equal(replayed(y), y * 2) and len(recorded) == 1 and replay.stats["copied_inputs"] == copied + 1
    z = torch.arange(4.0) + 7
    assert torch.equal(replayed(z), z * 2) and len(recorded) == 1 and replay.stats["copied_inputs"] == copied + 2
    assert torch.equal(y, torch.arange(4.0) + 5)  # y is the caller's: never written


def test_an_input_the_caller_still_holds_is_not_written(recorded):
    a, b = torch.arange(4.0), torch.arange(4.0) + 3
    call(a)
    replayed(a)
    assert torch.equal(replayed(b), b * 2)
    assert len(recorded) == 2 and torch.equal(a, torch.arange(4.0))


def test_another_graphs_output_as_input(recorded):
    x = torch.arange(4.0)
    call(x, "first")
    h = replayed(x, "first")
    call(h, "second")
    out = replayed(h, "second")
    assert torch.equal(out, x * 4)
    del h, out
    for step in range(3):  # the second graph borrows the first's output: neither piles up graphs
        x.add_(1)
        h = replayed(x, "first")
        out = replayed(h, "second")
        assert torch.equal(out, x * 4)
        del h, out
    assert len(recorded) == 2


def test_limits_and_failures(recorded, monkeypatch):
    x = torch.arange(4.0)
    call(x)
    held = [replayed(x) for _ in range(replay.MAX_GRAPHS)]
    assert len(recorded) == replay.MAX_GRAPHS
    assert all(torch.equal(h, x * 2) for h in held)
    # every graph's output held: the calls past the limit run op by op (None), capturing nothing more
    assert [replay.run("sig", (x,), double, None) for _ in range(2)] == [None, None]
    assert len(recorded) == replay.MAX_GRAPHS

    tried = []

    def fail(body, inputs, stream):
        tried.append(1)
        raise RuntimeError("not capturable")

    monkeypatch.setattr(replay, "_record", fail)
    call(x, "other")
    # a capture that failed is not tried again: the signature's later calls run op by op at once
    assert [replay.run("other", (x,), double, None) for _ in range(3)] == [None, None, None]
    assert len(tried) == 1, f"the failed capture was tried {len(tried)} times"


def test_a_kept_storage_object_counts_as_held(recorded):
    x = torch.arange(4.0)
    call(x)
    storage = replayed(x).untyped_storage()  # the caller keeps only the storage object
    x.add_(100)
    assert torch.equal(replayed(x), x * 2) and len(recorded) == 2
    assert torch.equal(torch.tensor([], dtype=torch.float32).set_(storage), torch.arange(4.0) * 2)


def test_a_replay_on_another_stream_waits_for_the_last(recorded):
    x = torch.arange(4.0)
    Stream.current, Stream.waits = Stream("main"), []
    call(x)
    replayed(x)
    Stream.current = Stream("side")
    replayed(x)
    assert Stream.waits == [("side", "main")]


def test_inside_a_capture_of_the_callers_nothing_is_replayed(recorded, monkeypatch):
    x = torch.arange(4.0)
    call(x)
    monkeypatch.setattr(replay, "_capturing", lambda: True)
    assert replay.run("sig", (x,), double, None) is None and len(recorded) == 0
    monkeypatch.setattr(replay, "_capturing", lambda: False)
    assert torch.equal(replayed(x), x * 2) and len(recorded) == 1  # that call did not count


def test_wanted():
    assert replay.wanted("auto", 2 * 4096 * 2048 * 4096) and not replay.wanted("auto", 2 * 8192 * 14336 * 8192)
    assert replay.wanted(True, 1e15) and not replay.wanted(False, 1) and not replay.wanted(True, 0)
    with pytest.raises(ValueError, match="replay="):
        replay.wanted("yes", 1)


def test_a_graph_captured_under_inference_mode_hands_later_callers_normal_tensors(recorded):
    """The captured output is what every later replay returns: captured under torch.inference_mode it would be an
    inference tensor for callers outside it too (no autograd, no in-place writes)."""
    x = torch.arange(4.0)
    with torch.inference_mode():
        call(x)
        got = replayed(x)  # the capture
    assert len(recorded) == 1 and not got.is_inference()
    del got
    got = replayed(x)  # replayed outside inference mode: usable as any tensor
    got[0] = -1.0
    assert not got.is_inference()


def test_after_last_orders_the_current_stream_after_the_last_replay_on_another(recorded):
    """A caller that rewrites what the graph reads (the all-gather's workspace block) before run() must first wait
    for a replay on another stream."""
    x = torch.arange(4.0)
    Stream.current, Stream.waits = Stream("s1"), []
    call(x, "ws")
    got = replayed(x, "ws")  # captured and replayed on s1
    del got
    Stream.current = Stream("s2")
    replay.after_last("ws")
    assert Stream.waits == [("s2", "s1")]
    replay.after_last("unknown signature")  # nothing to wait for
    assert Stream.waits == [("s2", "s1")]
    Stream.current = None
