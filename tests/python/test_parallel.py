"""tilefuse.parallel (tensor-parallel linears over torch.distributed) on CPU: 2 and 4 processes with the gloo
backend, the fused linear stood in for by a float64 reference (the kernels need an sm_90 GPU; the GPU test runs
them under NCCL). Against one process's full MLP: the output, every parameter's gradient shard and the input's
gradient, with the sum reduced to every rank and scattered over rows."""
import os

import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from ranks import spawn  # noqa: E402

if not dist.is_available() or not dist.is_gloo_available():
    pytest.skip("torch.distributed with gloo is not available in this torch build", allow_module_level=True)


def reference_linear(x, w, b, r, activation="none"):
    y = F.linear(x, w, b)
    y = {"none": y, "gelu": F.gelu(y)}[activation or "none"]
    return y + r if r is not None else y


def full_mlp(d, seed):
    torch.manual_seed(seed)
    up, down = torch.nn.Linear(d, 4 * d).double(), torch.nn.Linear(4 * d, d).double()
    x = torch.randn(6, 4, d, dtype=torch.float64)  # 24 rows: split over 2 and 4 ranks
    return up, down, x


def run_rank(rank, world, init_file, d, seed, results):
    import tilefuse.overlap
    import tilefuse.parallel as tp

    tp._linear = tilefuse.overlap._linear = reference_linear
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    try:
        up, down, x = full_mlp(d, seed)
        xr = x.clone().requires_grad_()
        want = down(F.gelu(up(xr))) + xr
        want.square().sum().backward()
        for reduce in ("all", "scatter"):
            col = tp.ColumnParallelLinear.from_full(up, activation="gelu")
            row = tp.RowParallelLinear.from_full(down, reduce=reduce)
            xs = x.clone().requires_grad_()
            got = row(col(xs), residual=xs)
            rows = want.detach().reshape(-1, d)
            expected = want.detach() if reduce == "all" else rows.chunk(world, 0)[rank]
            torch.testing.assert_close(got, expected)
            got.square().sum().backward()
            # Replicated across the group: the gradients of the full backward on every rank (with reduce="all"
            # every rank's loss is the whole loss, so its gradients are the full ones).
            assert_shards_of_full_gradients(col, row, up, down, world, rank)
            torch.testing.assert_close(xs.grad, xr.grad)
        check_sequence_parallel(tp, rank, world, up, down, x, want, xr.grad)
        check_overlapped_ops(tp, rank, world, up, down, x)
        results.put((rank, "ok"))
    except Exception as error:  # noqa: BLE001 - reported to the parent
        results.put((rank, f"{type(error).__name__}: {error}"))
    finally:
        dist.destroy_process_group()


def assert_shards_of_full_gradients(col, row, up, down, world, rank):
    """Each parallel layer's parameter gradients are its shard of the one process's (the column-parallel layer's
    rows, the row-parallel layer's columns; its bias replicated whole)."""
    torch.testing.assert_close(col.weight.grad, up.weight.grad.chunk(world, 0)[rank])
    torch.testing.assert_close(col.bias.grad, up.bias.grad.chunk(world, 0)[rank])
    torch.testing.assert_close(row.weight.grad, down.weight.grad.chunk(world, 1)[rank])
    torch.testing.assert_close(row.bias.grad, down.bias.grad)


def check_sequence_parallel(tp, rank, world, up, down, x, want, x_grad):
    """Megatron's sequence parallelism: each rank holds a block of the rows; the column-parallel layer gathers
    them (all_gather_linear without grad), the row-parallel one reduce-scatters back to them and adds the bias and
    this rank's residual rows. Trained, every gradient equals the one process's (the ranks' losses sum to its)."""
    d = x.shape[-1]
    mine = x.reshape(-1, d).chunk(world, 0)[rank].clone().requires_grad_()
    col = tp.ColumnParallelLinear.from_full(up, activation="gelu", sequence_parallel=True)
    row = tp.RowParallelLinear.from_full(down, reduce="scatter", sequence_parallel=True)
    assert "sequence_parallel=True" in repr(col) and "sequence_parallel=True" in repr(row)
    hidden = col(mine)
    assert hidden.shape == (x.reshape(-1, d).shape[0], 4 * d // world)
    got = row(hidden, residual=mine)
    expected = want.detach().reshape(-1, d).chunk(world, 0)[rank]
    torch.testing.assert_close(got, expected)
    got.square().sum().backward()
    assert_shards_of_full_gradients(col, row, up, down, world, rank)
    torch.testing.assert_close(mine.grad, x_grad.reshape(-1, d).chunk(world, 0)[rank])
    with torch.no_grad():  # the overlapped forward ops
        torch.testing.assert_close(row(col(mine), residual=mine), expected)
    with pytest.raises(ValueError, match="this rank's block of the output's rows"):
        row(hidden, residual=x.reshape(-1, d))
    with pytest.raises(ValueError, match="reduce='scatter'"):
        tp.RowParallelLinear(4 * d, d, sequence_parallel=True)


def check_overlapped_ops(tp, rank, world, up, down, x):
    """all_gather_linear and linear_reduce_scatter (forward ops) against the same products in one process."""
    rows = x.reshape(-1, x.shape[-1])
    with torch.no_grad():
        mine = rows.chunk(world, 0)[rank]
        got = tp.all_gather_linear(mine, up.weight, up.bias, "gelu")
        torch.testing.assert_close(got, F.gelu(F.linear(rows, up.weight, up.bias)))
        hidden = F.gelu(F.linear(rows, up.weight, up.bias))
        residual = rows.chunk(world, 0)[rank]
        got = tp.linear_reduce_scatter(hidden.chunk(world, 1)[rank], down.weight.chunk(world, 1)[rank], down.bias,
                                       residual)
        want = (F.linear(hidden, down.weight, down.bias) + rows).chunk(world, 0)[rank]
        torch.testing.assert_close(got, want)
    with pytest.raises(RuntimeError, match="forward op"):
        tp.all_gather_linear(mine.clone().requires_grad_(), up.weight, up.bias)
    with torch.no_grad(), pytest.raises(RuntimeError, match="copy_engine.*cannot run here: the tensors are on cpu"):
        tp.all_gather_linear(mine, up.weight, up.bias, transport="copy_engine")
    with torch.no_grad(), pytest.raises(ValueError, match="transport='nvls'"):
        tp.linear_reduce_scatter(hidden.chunk(world, 1)[rank], down.weight.chunk(world, 1)[rank], transport="nvls")


@pytest.mark.parametrize("world", [2, 4])
def test_tensor_parallel_mlp_matches_one_process(tmp_path, world):
    outcomes = spawn(run_rank, world, (str(tmp_path / "rendezvous"), 8, 3))
    assert outcomes == {rank: "ok" for rank in range(world)}, outcomes


def test_shapes_that_do_not_split_are_refused():
    import tilefuse.parallel as tp

    init_file = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"tilefuse-parallel-{os.getpid()}")
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=0, world_size=1)
    try:
        with pytest.raises(ValueError, match="reduce="):
            tp.RowParallelLinear(8, 8, reduce="gather")
        up = tp.ColumnParallelLinear(8, 32, activation="gelu")
        assert up.weight.shape == (32, 8)
        down = tp.RowParallelLinear(32, 8)
        with pytest.raises(ValueError, match="residual has shape"):
            down(torch.randn(3, 32), residual=torch.randn(3, 4))
    finally:
        dist.destroy_process_group()
        if os.path.exists(init_file):
            os.remove(init_file)


def test_an_unknown_schedule_is_refused():
    import tilefuse.parallel as tp

    with pytest.raises(ValueError, match="schedule='rings'"):
        tp.all_gather_linear(torch.randn(4, 8), torch.randn(16, 8), schedule="rings")
    with pytest.raises(ValueError, match="schedule='gated'.*steps, signalled"):
        tp.linear_reduce_scatter(torch.randn(4, 8), torch.randn(16, 8), schedule="gated")


def cpu_kernels_for_linear_ops():
    """CPU kernels for tilefuse::linear and its backward ops, in this process (the real ones need an sm_90 GPU)."""
    import math

    def linear(x, w, b=None, r=None, activation="none"):
        return reference_linear(x, w, b, r, activation)

    def grad_preact(grad_y, x, w, b, activation):  # gelu'(z) = Phi(z) + z phi(z)
        assert activation == "gelu"
        z = F.linear(x, w, b).float()
        slope = 0.5 * (1 + torch.erf(z / math.sqrt(2))) + z * torch.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)
        return (grad_y.float() * slope).to(grad_y.dtype)

    lib = torch.library.Library("tilefuse", "IMPL")
    lib.impl("linear", linear, "CPU")
    lib.impl("linear_grad_preact", grad_preact, "CPU")
    lib.impl("mm", lambda a, b: a @ b, "CPU")
    return lib


def run_dtensor_rank(rank, world, init_file, results):
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    import tilefuse.nn as tnn
    import tilefuse.parallel  # noqa: F401 - registers the DTensor sharding of tilefuse's linear ops

    lib = cpu_kernels_for_linear_ops()  # noqa: F841 - kept alive
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    try:
        class Mlp(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.up = tnn.Linear(16, 64, activation="gelu")
                self.down = tnn.Linear(64, 16, bias=False)

            def forward(self, x):
                return self.down(self.up(x))

        torch.manual_seed(5)
        model, reference = Mlp().to(torch.bfloat16), Mlp().to(torch.bfloat16)
        reference.load_state_dict(model.state_dict())
        parallelize_module(model, init_device_mesh("cpu", (world,)), {"up": ColwiseParallel(), "down": RowwiseParallel()})
        x = torch.randn(6, 16, dtype=torch.bfloat16)
        got, want = model(x), reference(x)
        torch.testing.assert_close(got, want, rtol=2e-2, atol=2e-2)
        got.float().square().sum().backward()
        want.float().square().sum().backward()
        for name in ("up.weight", "up.bias", "down.weight"):
            mine = model.get_parameter(name).grad.full_tensor()
            torch.testing.assert_close(mine, reference.get_parameter(name).grad, rtol=3e-2, atol=3e-2)
        results.put((rank, "ok"))
    except Exception as error:  # noqa: BLE001 - reported to the parent
        results.put((rank, f"{type(error).__name__}: {error}"))
    finally:
        dist.destroy_process_group()


def test_parallelize_module_with_tilefuse_linears(tmp_path):
    """torch.distributed.tensor.parallel's ColwiseParallel / RowwiseParallel on tilefuse.nn.Linear modules: the
    sharding tilefuse.parallel registers for its ops lets DTensor split them; forward and gradients as one
    process's."""
    outcomes = spawn(run_dtensor_rank, 2, (str(tmp_path / "rendezvous"),))
    assert outcomes == {0: "ok", 1: "ok"}, outcomes


def test_the_copy_engine_check_runs_for_cuda_tensors(monkeypatch):
    """The check that picks the copy engines, walked through for a CUDA tensor on a host without one (a slip in
    it showed only on GPUs: a bare `import torch.distributed...` inside it made `torch` a local name)."""
    import tilefuse.overlap as overlap

    class CudaBlock:  # what the check reads of x
        is_cuda = True

        def dim(self):
            return 2

        def element_size(self):
            return 2

    monkeypatch.setattr(overlap, "_NO_COPY_ENGINE", {})  # (no default group here: nothing is cached anyway)
    monkeypatch.setattr(dist, "get_backend", lambda group=None: "nccl")
    monkeypatch.setattr(dist, "get_world_size", lambda group=None: 2)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert overlap._copy_engine_able(None, CudaBlock(), 8 * 4096) == (True, "")
    able, why = overlap._copy_engine_able(None, CudaBlock(), 7)
    assert not able and "16-byte" in why
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    able, why = overlap._copy_engine_able(None, CudaBlock(), 8 * 4096)
    assert not able and "more than this node's 1 GPUs" in why


def test_a_groups_facts_are_asked_once_and_again_once_it_is_destroyed(tmp_path):
    """The overlapped ops ask a process group's size, rank and copy-engine facts once (each query costs host
    time a small call cannot spare); a group destroyed since is asked again, so torch's own error says so
    instead of a call running over a group that is gone."""
    import weakref

    import tilefuse.overlap as overlap

    asked = []

    def ask(group):
        asked.append(group)
        return (1, 0)

    cache = weakref.WeakKeyDictionary()
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'rendezvous'}", rank=0, world_size=1)
    try:
        group = dist.group.WORLD
        assert overlap._per_group(cache, None, ask) == (1, 0) and overlap._per_group(cache, group, ask) == (1, 0)
        assert asked == [None]  # None stands for the default group: the same entry
        assert overlap._world(group) == (1, 0)
    finally:
        dist.destroy_process_group()
    assert overlap._per_group(cache, group, ask) == (1, 0) and len(asked) == 2
    with pytest.raises(ValueError, match="process group has not been initialized"):  # torch's own words
        overlap._world(group)


def test_a_signalled_call_that_raises_after_its_epoch_breaks_the_state(monkeypatch):
    """A failure between a signalled call's epoch and its last signal marks the group's state broken (its peers'
    epochs may be ahead), so the next call refuses instead of waiting forever."""
    import tilefuse.overlap_signalled as signalled

    state = object.__new__(signalled._SignalState)  # the bookkeeping only (no symmetric memory on a CPU host)
    state.broken, state.epochs = None, {}
    state.buffers = lambda name, shape, dtype: [torch.zeros(shape, dtype=dtype) for _ in range(2)]

    class Program:
        def run(self, *arguments):
            pass

    state.program_set = lambda key, build: {"push1": Program(), "arrivals": Program(), "end": Program()}
    monkeypatch.setattr(signalled, "_signal_state", lambda group, device: state)
    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: False)
    monkeypatch.setattr(torch._C, "_cuda_getCurrentRawStream", lambda index: 0)

    def failing_gemm(*arguments):
        raise RuntimeError("the launch failed")

    monkeypatch.setattr(signalled, "_into", failing_gemm)
    with pytest.raises(RuntimeError, match="the launch failed"):
        signalled._reduce_scatter_signalled(torch.zeros(4, 8), torch.zeros(3, 8), None, None, None, 2, 0, 2)
    assert state.epochs == {"reduce_scatter": 1} and "the launch failed" in state.broken
    with pytest.raises(RuntimeError, match="failed part way"):
        state.next_epoch("reduce_scatter")


def test_auto_takes_the_signalled_schedules_on_hopper_only_where_they_run(monkeypatch):
    """schedule='auto' takes gated / signalled only from facts every rank shares (else a rank would wait for
    signals its peer never sends): Hopper, non-empty 16-bit tensors, a contiguous weight of 16-byte rows; and
    from what the ranks do in lockstep: a signature's calls, its captures."""
    import tilefuse.overlap as overlap

    class Cuda(torch.Tensor):  # CPU tensors that say they are CUDA ones (no GPU in this test)
        is_cuda = True

    def cuda(t):
        return t.as_subclass(Cuda)

    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: False)
    monkeypatch.setattr(overlap, "_capability", lambda device: (9, 0))
    x, w = cuda(torch.zeros(64, 256, dtype=torch.bfloat16)), cuda(torch.zeros(512, 256, dtype=torch.bfloat16))
    assert overlap._signalled_able(x, w)
    assert not overlap._signalled_able(torch.zeros(64, 256, dtype=torch.bfloat16), w)  # CPU tensors
    assert not overlap._signalled_able(cuda(x.float()), cuda(w.float()))  # no 32-bit row-gated GEMM
    assert not overlap._signalled_able(x, cuda(torch.zeros(256, 512, dtype=torch.bfloat16).t()))  # not contiguous
    assert not overlap._signalled_able(cuda(torch.zeros(64, 250, dtype=torch.bfloat16)),
                                       cuda(torch.zeros(512, 250, dtype=torch.bfloat16)))  # rows of 500 bytes
    monkeypatch.setattr(overlap, "_capability", lambda device: (8, 0))
    assert not overlap._signalled_able(x, w)  # the row-gated GEMM is Hopper's
    monkeypatch.setattr(overlap, "_capability", lambda device: (9, 0))
    assert not overlap._signalled_able(cuda(torch.zeros(0, 256, dtype=torch.bfloat16)), w)  # no rows
    assert not overlap._signalled_able(x, cuda(torch.zeros(0, 256, dtype=torch.bfloat16)))  # no features
    # A signature's first call by halves / steps (it readies what a capture needs), then the signalled ones;
    # under capture halves / steps, and for that signature from then on (a rank replaying its graph and a rank
    # running eagerly must still meet in one schedule).
    monkeypatch.setattr(overlap, "_SEEN", set())
    monkeypatch.setattr(overlap, "_CAPTURED", set())
    assert [overlap._auto_signalled("one", x, w) for _ in range(3)] == [False, True, True]
    assert overlap._auto_signalled("two", x, w) is False
    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: True)
    assert overlap._auto_signalled("one", x, w) is False
    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: False)
    assert overlap._auto_signalled("one", x, w) is False and overlap._auto_signalled("two", x, w) is True


def test_the_signalled_schedules_refuse_graph_capture(monkeypatch):
    """Its signals carry a new epoch each call: a captured call replayed would wait on stale values."""
    import tilefuse.overlap_signalled as signalled

    monkeypatch.setattr(torch.cuda, "is_current_stream_capturing", lambda: True)
    with pytest.raises(RuntimeError, match="cannot be captured in a CUDA graph"):
        signalled._all_gather_gated(torch.zeros(4, 8), torch.zeros(8, 8), None, "none", None, 2, 0)
    with pytest.raises(RuntimeError, match="cannot be captured in a CUDA graph"):
        signalled._reduce_scatter_signalled(torch.zeros(4, 8), torch.zeros(8, 8), None, None, None, 2, 0, 2)


def test_a_signalled_call_that_fails_part_way_turns_the_schedules_off():
    """After a failure between a call's epoch and its last signal the ranks' epochs may disagree, so a later wait
    could never end: later calls refuse, saying why, instead of hanging."""
    import tilefuse.overlap_signalled as signalled

    state = object.__new__(signalled._SignalState)  # the bookkeeping only (no symmetric memory on a CPU host)
    state.broken, state.epochs = None, {}
    assert state.next_epoch("all_gather") == 1 and state.next_epoch("all_gather") == 2
    assert state.next_epoch("reduce_scatter") == 1
    state.epochs["all_gather"] = 0xFFFFFFFF
    assert state.next_epoch("all_gather") == 0  # 32-bit words, compared with wrap-around
    state.broke(MemoryError("out of memory"))  # what a signalled call does when it raises after its epoch
    with pytest.raises(RuntimeError, match="failed part way .*MemoryError: out of memory"):
        state.next_epoch("all_gather")


def run_shape_check_rank(rank, world, init_file, results):
    import tilefuse.overlap_signalled as signalled

    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    try:
        signalled._check_same_on_every_rank(None, "shape", ((8, 4), "torch.bfloat16"))  # agreed: passes
        try:
            signalled._check_same_on_every_rank(None, "shape", ((8 + rank, 4), "torch.bfloat16"))
            results.put((rank, "a disagreement passed"))
        except ValueError as error:
            results.put((rank, "refused" if "rank 0: ((8, 4)" in str(error) and "rank 1: ((9, 4)" in str(error)
                         else f"unclear: {error}"))
    except Exception as error:  # noqa: BLE001 - reported to the parent
        results.put((rank, f"{type(error).__name__}: {error}"))
    finally:
        dist.destroy_process_group()


def test_the_signalled_schedules_refuse_ranks_that_disagree_on_shapes(tmp_path):
    """Ranks passing different rows would push past each other's buffers: every rank refuses, none is left waiting."""
    outcomes = spawn(run_shape_check_rank, 2, (str(tmp_path / "rendezvous"),))
    assert outcomes == {0: "refused", 1: "refused"}, outcomes


class _FakeState:
    """What the signalled schedules' operation builders read of a _SignalState: rank, world, word addresses (the
    word layout its own; the tests below spell the indices out, so a changed layout fails them)."""

    def __init__(self, rank, world):
        from tilefuse.overlap_signalled import _SignalState

        for name in ("AG_CONSUMED", "RS_READY", "RS_CONSUMED", "AG_STARTED"):
            setattr(self, name, getattr(_SignalState, name))
        self.rank, self.world = rank, world

    def word(self, rank, index):
        return 0x10000 * (rank + 1) + 4 * index


def test_the_gated_all_gathers_stream_operations():
    """Rank 1 of 2: the push to rank 0 after its start is signalled and rank 0's last GEMM is done, the flag of the
    epoch's parity after the copy; the caller's stream waits for rank 0's start and the last flag reset; after the
    GEMM the next parity's flags are reset on the signals stream before rank 0 is told it may push."""
    from tilefuse import overlap_signalled as signalled

    state, streams = _FakeState(1, 2), {"push0": 11, "signals": 12, "arrivals": 13}
    ops = signalled._gated_ops(state, streams, [0xA000, 0xB000], 4096, own=True)
    assert set(ops) == {"before0", "after0", "before1", "after1"}
    w = state.word
    E = signalled._Events
    assert ops["before1"] == [
        ("record", 0, E.START, 0, 0),
        ("wait_event", 11, E.START, 0, 0),
        ("write", 11, w(0, 5 * 2 + 1), 0, 1),  # rank 0's start word for rank 1: the epoch
        ("wait", 11, w(1, 2 * 2 + 0), -1, 1),  # rank 0 consumed the last call: the epoch - 1
        ("copy", 11, 0xA000, 4096, 0),
        ("write", 11, w(0, 1 * 2 + 1), 1, 0),  # flag set 1 (odd epochs) for rank 1's block
        ("record", 11, E.pushed(0), 0, 0),
        ("wait", 0, w(1, 5 * 2 + 0), 0, 1),  # rank 0 reached this call
        ("wait_event", 0, E.FLAGS_RESET, 0, 0)]
    assert ops["after1"] == [
        ("record", 0, E.DONE, 0, 0), ("wait_event", 12, E.DONE, 0, 0),
        ("write", 12, w(1, 0 * 2 + 0), 0, 0),  # the next (even) call's flag for rank 0's block reset
        ("record", 12, E.FLAGS_RESET, 0, 0),
        ("write", 12, w(0, 2 * 2 + 1), 0, 1),  # rank 0 may push the next call
        ("wait_event", 0, E.pushed(0), 0, 0)]
    assert ops["before0"][3:6] == [("wait", 11, w(1, 2 * 2 + 0), -1, 1), ("copy", 11, 0xA000, 4096, 0),
                                   ("write", 11, w(0, 0 * 2 + 1), 1, 0)]  # flag set 0 for even epochs
    assert ("write", 12, w(1, 1 * 2 + 0), 0, 0) in ops["after0"]  # resets set 1 for the next (odd) call
    three = signalled._gated_ops(_FakeState(0, 3), {"push1": 31, "push2": 32, "signals": 33}, [1, 2, 3], 64, True)
    pushes = [op for op in three["before0"] if op[0] == "copy"]
    assert pushes == [("copy", 31, 2, 64, 0), ("copy", 32, 3, 64, 0)]  # each peer on its stream, nearest first
    copied = signalled._gated_ops(state, streams, [0xA000, 0xB000], 4096, own=False)["before0"]
    assert ("copy", 0, 0xB000, 4096, 0) in copied  # the own block copied in on the caller's stream
    assert copied.index(("copy", 0, 0xB000, 4096, 0)) < copied.index(("wait_event", 0, E.FLAGS_RESET, 0, 0))


def test_the_signalled_reduce_scatters_stream_operations():
    from tilefuse import overlap_signalled as signalled

    state = _FakeState(0, 3)
    streams = {"push1": 21, "push2": 22, "signals": 23, "arrivals": 24}
    ops = signalled._rs_ops(state, streams, [0xA0, 0xB0, 0xC0], 512)
    w, E = state.word, signalled._Events
    assert set(ops) == {"push1", "push2", "arrivals", "end"}
    assert ops["push2"] == [
        ("record", 0, E.computed(3, 2), 0, 0), ("wait_event", 22, E.computed(3, 2), 0, 0),
        ("wait", 22, w(0, 4 * 3 + 2), -1, 1),  # rank 2 added the last call's partial from rank 0
        ("copy", 22, 0xC0, 512, 0),
        ("write", 22, w(2, 3 * 3 + 0), 0, 1),  # rank 2's arrival word for rank 0
        ("record", 22, E.pushed(2), 0, 0)]
    assert ops["arrivals"] == [("wait", 24, w(0, 3 * 3 + 2), 0, 1), ("wait", 24, w(0, 3 * 3 + 1), 0, 1),
                               ("record", 24, E.ARRIVED, 0, 0), ("wait_event", 0, E.ARRIVED, 0, 0)]
    assert ops["end"][:2] == [("record", 0, E.ADDED, 0, 0), ("wait_event", 23, E.ADDED, 0, 0)]
    assert ops["end"][2:4] == [("write", 23, w(2, 4 * 3 + 0), 0, 1), ("write", 23, w(1, 4 * 3 + 0), 0, 1)]
    assert ops["end"][4:] == [("wait_event", 0, E.pushed(1), 0, 0), ("wait_event", 0, E.pushed(2), 0, 0)]
    indices = {op[2] for program in ops.values() for op in program if op[0] in ("record", "wait_event")}
    assert max(indices) < E.count(3)  # every event in the pool
    every = [E.START, E.DONE, E.FLAGS_RESET, E.ARRIVED, E.ADDED] + [E.pushed(r) for r in range(3)] + \
        [E.computed(3, r) for r in range(3)]
    assert sorted(every) == list(range(E.count(3)))  # no two events share an index
