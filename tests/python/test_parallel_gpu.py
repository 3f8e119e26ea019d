"""tilefuse.parallel on GPUs under NCCL with tilefuse's kernels (bf16, sm_90): one process per GPU on every GPU
of the machine (2 or 4), and a group of one on a single GPU; against the full MLP in one process, within bf16
noise. Skipped, with the reason, where the machine lacks them."""
import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from ranks import spawn  # noqa: E402

if not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] != 9:
    pytest.skip("needs an sm_90 GPU (tilefuse's linear runs the Hopper GEMM)", allow_module_level=True)
if not dist.is_available() or not dist.is_nccl_available():
    pytest.skip("torch.distributed with NCCL is not available", allow_module_level=True)


def close_in_bf16(got, want, what):
    """bf16 outputs against a bf16 reference: within 2% of the largest value (two roundings apart at most
    per element, and the partial sums round once more before the collective)."""
    error, scale = (got.float() - want.float()).abs().max().item(), want.float().abs().max().item()
    assert error <= 2e-2 * scale, f"{what}: max error {error} against max {scale}"


def run_rank(rank, world, init_file, results):
    import os

    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")  # no NVLink multicast on these machines
    import tilefuse.parallel as tp

    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", init_method=f"file://{init_file}", rank=rank, world_size=world,
                            device_id=torch.device("cuda", rank))
    try:
        torch.manual_seed(0)
        d = 256
        up = torch.nn.Linear(d, 4 * d).cuda().bfloat16()
        down = torch.nn.Linear(4 * d, d).cuda().bfloat16()
        x = torch.randn(8, 64, d, device="cuda", dtype=torch.bfloat16)
        xr = x.clone().requires_grad_()
        want = down(F.gelu(up(xr))) + xr
        want.float().square().mean().backward()
        for reduce in ("all", "scatter"):
            col = tp.ColumnParallelLinear.from_full(up, activation="gelu")
            row = tp.RowParallelLinear.from_full(down, reduce=reduce)
            xs = x.clone().requires_grad_()
            got = row(col(xs), residual=xs)
            expected = want.detach() if reduce == "all" else want.detach().reshape(-1, d).chunk(world, 0)[rank]
            close_in_bf16(got, expected, f"{reduce}: output")
            loss = got.float().square().sum() / want.numel()
            loss.backward()
            close_in_bf16(col.weight.grad, up.weight.grad.chunk(world, 0)[rank], f"{reduce}: up.weight.grad")
            close_in_bf16(row.weight.grad, down.weight.grad.chunk(world, 1)[rank], f"{reduce}: down.weight.grad")
            close_in_bf16(row.bias.grad, down.bias.grad, f"{reduce}: down.bias.grad")
            close_in_bf16(xs.grad, xr.grad, f"{reduce}: x.grad")
        # Sequence parallelism: each rank a block of the rows; trained, then without grad (the overlapped ops).
        flat = x.reshape(-1, d)
        col = tp.ColumnParallelLinear.from_full(up, activation="gelu", sequence_parallel=True)
        row = tp.RowParallelLinear.from_full(down, reduce="scatter", sequence_parallel=True)
        mine = flat.chunk(world, 0)[rank].clone().requires_grad_()
        got = row(col(mine), residual=mine)
        close_in_bf16(got, want.detach().reshape(-1, d).chunk(world, 0)[rank], "sequence parallel: output")
        (got.float().square().sum() / want.numel()).backward()
        close_in_bf16(col.weight.grad, up.weight.grad.chunk(world, 0)[rank], "sequence parallel: up.weight.grad")
        close_in_bf16(row.weight.grad, down.weight.grad.chunk(world, 1)[rank], "sequence parallel: down.weight.grad")
        close_in_bf16(row.bias.grad, down.bias.grad, "sequence parallel: down.bias.grad")
        close_in_bf16(mine.grad, xr.grad.reshape(-1, d).chunk(world, 0)[rank], "sequence parallel: x.grad")
        with torch.no_grad():
            for _ in range(3):  # auto's first call by halves / steps, then the signalled schedules on Hopper
                got = row(col(mine), residual=mine)
                close_in_bf16(got, want.detach().reshape(-1, d).chunk(world, 0)[rank], "sequence parallel, no grad")
        with torch.no_grad():  # the forward ops that overlap their collectives with the GEMMs, both transports
            rows = x.reshape(-1, d)
            hidden = F.gelu(F.linear(rows, up.weight, up.bias))
            want = (F.linear(hidden, down.weight, down.bias) + rows).chunk(world, 0)[rank]
            for transport in ("copy_engine", "p2p"):
                for step in range(3):  # again: the workspace is reused, so a missing barrier would show
                    for schedule in ("auto", "halves"):  # auto: gated on Hopper (copy engines), else halves
                        got = tp.all_gather_linear(rows.chunk(world, 0)[rank], up.weight, up.bias, "gelu",
                                                   transport=transport, schedule=schedule)
                        close_in_bf16(got, F.gelu(F.linear(rows, up.weight, up.bias)),
                                      f"all_gather_linear {transport} {schedule}")
                    if transport == "copy_engine":  # one row-gated GEMM over every block
                        scaled = rows * (1 + 0.5 * step)  # new rows each time: a stale flag would read old ones
                        got = tp.all_gather_linear(scaled.chunk(world, 0)[rank], up.weight, up.bias, "gelu",
                                                   transport=transport, schedule="gated")
                        close_in_bf16(got, F.gelu(F.linear(scaled, up.weight, up.bias)), "all_gather_linear gated")
                    for schedule in ("auto", "steps"):  # auto: signalled on Hopper (copy engines), else steps
                        got = tp.linear_reduce_scatter(hidden.chunk(world, 1)[rank],
                                                       down.weight.chunk(world, 1)[rank].contiguous(), down.bias,
                                                       rows.chunk(world, 0)[rank].contiguous(), transport=transport,
                                                       schedule=schedule)
                        close_in_bf16(got, want, f"linear_reduce_scatter {transport} {schedule}")
                    if transport == "copy_engine":  # partials pushed and signalled; new features each time
                        scaled = hidden * (1 + 0.5 * step)
                        got = tp.linear_reduce_scatter(scaled.chunk(world, 1)[rank],
                                                       down.weight.chunk(world, 1)[rank].contiguous(), down.bias,
                                                       rows.chunk(world, 0)[rank].contiguous(), transport=transport,
                                                       schedule="signalled")
                        close_in_bf16(got, (F.linear(scaled, down.weight, down.bias) + rows).chunk(world, 0)[rank],
                                      "linear_reduce_scatter signalled")
            # Calls back to back, nothing awaited between them (each call's GEMM must wait for the flag resets
            # after the one before; few tiles, so its blocks on a peer's rows start at once).
            firsts = [rows * (1 + 0.25 * i) for i in range(4)]
            gots = [tp.all_gather_linear(a.chunk(world, 0)[rank], up.weight, up.bias, "gelu", transport="copy_engine",
                                         schedule="gated") for a in firsts]
            for a, got in zip(firsts, gots):
                close_in_bf16(got, F.gelu(F.linear(a, up.weight, up.bias)), "all_gather_linear gated, back to back")
            # Blocks of rows that are not whole tiles: the own block is copied in, not read in place.
            odd = torch.randn(world * 200, d, device="cuda", dtype=torch.bfloat16)
            dist.broadcast(odd, 0)
            for _ in range(2):
                got = tp.all_gather_linear(odd.chunk(world, 0)[rank], up.weight, up.bias, "gelu",
                                           transport="copy_engine", schedule="gated")
                close_in_bf16(got, F.gelu(F.linear(odd, up.weight, up.bias)), "all_gather_linear gated, 200 rows")
            # More tiles than SMs: every SM holds a GEMM block while the peers' pushes and flags arrive (they
            # must need no SM); twice, so both sets of flags are used.
            wide = torch.nn.Linear(d, 1024).cuda().bfloat16()
            for step in range(2):
                many = torch.randn(world * 4096, d, device="cuda", dtype=torch.bfloat16)
                dist.broadcast(many, 0)
                got = tp.all_gather_linear(many.chunk(world, 0)[rank], wide.weight, wide.bias, "gelu",
                                           transport="copy_engine", schedule="gated")
                close_in_bf16(got, F.gelu(F.linear(many, wide.weight, wide.bias)), "all_gather_linear gated, wide")
            # The first shapes again after their buffers grew: their recorded programs must push into the new
            # allocation (a program of the old one would leave stale rows where the GEMM reads).
            again = rows * -1.5
            got = tp.all_gather_linear(again.chunk(world, 0)[rank], up.weight, up.bias, "gelu",
                                       transport="copy_engine", schedule="gated")
            close_in_bf16(got, F.gelu(F.linear(again, up.weight, up.bias)),
                          "all_gather_linear gated, first shape again")
            w2, block = down.weight.chunk(world, 1)[rank].contiguous(), rows.chunk(world, 0)[rank].contiguous()
            longer = torch.randn(world * 1024, hidden.shape[1], device="cuda", dtype=torch.bfloat16)
            dist.broadcast(longer, 0)
            got = tp.linear_reduce_scatter(longer.chunk(world, 1)[rank], w2, down.bias, None, transport="copy_engine",
                                           schedule="signalled")
            close_in_bf16(got, F.linear(longer, down.weight, down.bias).chunk(world, 0)[rank],
                          "linear_reduce_scatter signalled, larger")
            scaled = hidden * -0.75
            got = tp.linear_reduce_scatter(scaled.chunk(world, 1)[rank], w2, down.bias, block, transport="copy_engine",
                                           schedule="signalled")
            close_in_bf16(got, (F.linear(scaled, down.weight, down.bias) + rows).chunk(world, 0)[rank],
                          "linear_reduce_scatter signalled, first shape again")
            check_inference_then_not(tp, rank, world, d, up, down)
            if world > 1:
                check_replayed(tp, rank, world, rows, hidden, up, down)
                check_captured_by_caller(tp, rank, world, rows, hidden, up, down)
        check_parallelize_module(world, x, d)
        results.put((rank, "ok"))
    except Exception as error:  # noqa: BLE001 - reported to the parent
        results.put((rank, f"{type(error).__name__}: {error}"))
    finally:
        dist.destroy_process_group()


def check_inference_then_not(tp, rank, world, d, up, down):
    """Every schedule first called under torch.inference_mode on a new shape, then with the same shape outside it:
    the buffers and views kept between calls must not be inference tensors (writing one outside inference_mode
    raises; a 4-GPU user check found it)."""
    x = torch.randn(world * 96, d, device="cuda", dtype=torch.bfloat16)
    dist.broadcast(x, 0)
    hidden = torch.randn(world * 96, up.weight.shape[0], device="cuda", dtype=torch.bfloat16)
    dist.broadcast(hidden, 0)
    w2, block = down.weight.chunk(world, 1)[rank].contiguous(), x.chunk(world, 0)[rank].contiguous()
    for mode in (torch.inference_mode, torch.no_grad):
        with mode():
            for _ in range(2):  # the second call of halves / steps is captured into a CUDA graph
                for schedule in ("halves", "gated"):
                    got = tp.all_gather_linear(x.chunk(world, 0)[rank], up.weight, up.bias, "gelu",
                                               transport="copy_engine", schedule=schedule)
                    close_in_bf16(got, F.gelu(F.linear(x, up.weight, up.bias)), f"all_gather_linear {schedule}")
                    assert mode is torch.inference_mode or not got.is_inference(), schedule
                for schedule in ("steps", "signalled"):
                    got = tp.linear_reduce_scatter(hidden.chunk(world, 1)[rank], w2, down.bias, block,
                                                   transport="copy_engine", schedule=schedule)
                    close_in_bf16(got, (F.linear(hidden, down.weight, down.bias) + x).chunk(world, 0)[rank],
                                  f"linear_reduce_scatter {schedule}")
                    assert mode is torch.inference_mode or not got.is_inference(), schedule


def check_replayed(tp, rank, world, rows, hidden, up, down):
    """The copy-engine ops replayed from CUDA graphs (tilefuse.overlap_replay): results a caller holds are never
    overwritten by later calls, an op's output feeds the next op, inputs at new addresses are read, and the
    calls after the first two are replays."""
    import tilefuse.overlap_replay as replay

    replay.reset_graphs()
    before = dict(replay.stats)
    mine = rows.chunk(world, 0)[rank].contiguous()
    other = (mine * 0.5).contiguous()
    w2, r = down.weight.chunk(world, 1)[rank].contiguous(), rows.chunk(world, 0)[rank].contiguous()
    ag = lambda block: tp.all_gather_linear(block, up.weight, up.bias, "gelu", transport="copy_engine",  # noqa: E731
                                            replay=True)
    rs = lambda h: tp.linear_reduce_scatter(h, w2, down.bias, r, transport="copy_engine", replay=True)  # noqa: E731
    want_mine = F.gelu(F.linear(rows, up.weight, up.bias))
    halves = torch.cat([block * 0.5 for block in rows.chunk(world, 0)])
    want_other = F.gelu(F.linear(halves, up.weight, up.bias))
    held = [ag(mine) for _ in range(3)]  # op by op, captured, then another graph (the first result is held)
    held.append(ag(other))
    for got in held[:3]:
        close_in_bf16(got, want_mine, "replayed all_gather_linear, held")
    close_in_bf16(held[3], want_other, "replayed all_gather_linear, other input")
    del held
    want_down = (F.linear(hidden, down.weight, down.bias) + rows).chunk(world, 0)[rank]
    up_w, up_b = up.weight.chunk(world, 0)[rank].contiguous(), up.bias.chunk(world, 0)[rank].contiguous()
    for step in range(4):  # the gathered output (this rank's columns of the hidden layer) feeds the reduce-scatter
        h = tp.all_gather_linear(mine, up_w, up_b, "gelu", transport="copy_engine", replay=True)
        close_in_bf16(h, hidden.chunk(world, 1)[rank], f"replayed all_gather_linear, step {step}")
        got = rs(h)
        close_in_bf16(got, want_down, f"replayed linear_reduce_scatter on it, step {step}")
        del h, got
    assert replay.stats["replayed"] - before["replayed"] >= 4, replay.stats
    replay.reset_graphs()


def check_captured_by_caller(tp, rank, world, rows, hidden, up, down):
    """The default schedules inside the caller's own CUDA graph (as torch.compile's reduce-overhead makes one), on
    a shape no call has used yet: eager calls first (the first by halves / steps, the next two by the signalled
    schedules on Hopper: their epochs advance), then a capture, where "auto" takes halves / steps (whose
    workspace and kernels the first call left ready; no epoch taken); replays read the static inputs' new values;
    an eager call after the capture keeps to halves / steps for that shape."""
    import tilefuse.overlap_signalled as signalled

    d = rows.shape[1]
    fresh = torch.randn(world * 96, d, device="cuda", dtype=torch.bfloat16)
    deep = torch.randn(world * 96, hidden.shape[1], device="cuda", dtype=torch.bfloat16)
    dist.broadcast(fresh, 0), dist.broadcast(deep, 0)
    # clone, not contiguous: a block of rows is contiguous already, and x's in-place updates would change fresh
    w2, r = down.weight.chunk(world, 1)[rank].contiguous(), fresh.chunk(world, 0)[rank].clone()
    x = fresh.chunk(world, 0)[rank].clone()
    h = deep.chunk(world, 1)[rank].clone()
    ag = lambda: tp.all_gather_linear(x, up.weight, up.bias, "gelu", transport="copy_engine")  # noqa: E731
    rs = lambda: tp.linear_reduce_scatter(h, w2, down.bias, r, transport="copy_engine")  # noqa: E731
    state = signalled._signal_state(dist.group.WORLD, x.device)
    hopper = torch.cuda.get_device_capability()[0] == 9
    before = dict(state.epochs)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up, as torch.cuda.graph's documentation asks
        for _ in range(3):
            ag(), rs()
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    taken = {op: state.epochs.get(op, 0) - before.get(op, 0) for op in ("all_gather", "reduce_scatter")}
    assert taken == ({"all_gather": 2, "reduce_scatter": 2} if hopper else {"all_gather": 0, "reduce_scatter": 0}), \
        f"auto's eager calls took the signalled schedules {taken} times"
    warm = dict(state.epochs)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        gathered, scattered = ag(), rs()
    for scale in (1.0, -0.5):
        x.copy_(fresh.chunk(world, 0)[rank] * scale)
        h.copy_(deep.chunk(world, 1)[rank] * scale)
        graph.replay()
        close_in_bf16(gathered, F.gelu(F.linear(fresh * scale, up.weight, up.bias)),
                      f"all_gather_linear in the caller's graph, x {scale}")
        close_in_bf16(scattered, (F.linear(deep * scale, down.weight, down.bias) + fresh).chunk(world, 0)[rank],
                      f"linear_reduce_scatter in the caller's graph, x {scale}")
    close_in_bf16(ag(), F.gelu(F.linear(fresh * -0.5, up.weight, up.bias)), "all_gather_linear after the capture")
    assert state.epochs == warm, "a captured signature must keep to halves / steps, eager calls included"
    del graph


def check_parallelize_module(world, x, d):
    """DTensor's ColwiseParallel / RowwiseParallel on tilefuse.nn.Linear modules (the sharding tilefuse.parallel
    registers), forward and backward, against the same modules unsplit."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

    import tilefuse.nn as tnn

    def mlp():
        torch.manual_seed(1)
        return torch.nn.ModuleDict({"up": tnn.Linear(d, 4 * d, activation="gelu"),
                                    "down": tnn.Linear(4 * d, d, bias=False)}).cuda().bfloat16()

    model, reference = mlp(), mlp()
    parallelize_module(model, init_device_mesh("cuda", (world,)), {"up": ColwiseParallel(), "down": RowwiseParallel()})
    got = model["down"](model["up"](x))
    want = reference["down"](reference["up"](x))
    close_in_bf16(got, want, "parallelize_module: output")
    got.float().square().mean().backward()
    want.float().square().mean().backward()
    for name in ("up.weight", "up.bias", "down.weight"):
        close_in_bf16(model.get_parameter(name).grad.full_tensor(), reference.get_parameter(name).grad,
                      f"parallelize_module: {name}.grad")


def run_on(world, tmp_path):
    outcomes = spawn(run_rank, world, (str(tmp_path / "rendezvous"),), timeout=300)
    assert outcomes == {rank: "ok" for rank in range(world)}, outcomes


def test_a_group_of_one(tmp_path):
    run_on(1, tmp_path)


def test_every_gpu_of_the_machine(tmp_path):
    world = torch.cuda.device_count()
    if world < 2:
        pytest.skip(f"needs 2 or more GPUs (this machine has {world}); run on an nvidia-h100-x2 / -x4 machine")
    run_on(world, tmp_path)
