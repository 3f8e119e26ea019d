"""Collectives overlapped with GEMMs on every GPU of the machine (one process each, NCCL, NVLink multicast off):
tilefuse.parallel.all_gather_linear and linear_reduce_scatter beside (a) the collective then the GEMM in
sequence (NCCL, then cuBLAS through torch), (b) torch's async tensor parallelism
(torch.ops.symm_mem.fused_all_gather_matmul / fused_matmul_reduce_scatter, multicast off; and, where torch takes
it, its native all-gather GEMM _async_input_mm, asked for by TORCH_SYMM_MEM_ENABLE_NATIVE_ASYNC_TP), and the ideal
max(GEMM alone, collective alone), all measured in the same run. bf16; CUDA-event timings over rotating operand
sets, each iteration's slowest rank, the median over iterations.

Timing (--timing): "gated" (the default) holds every rank's stream with a sleep, meets the ranks on the GPU (a
one-element all-reduce), then starts the clock: both GPUs start the op together and the host's enqueue is
hidden under the sleep, so the number is the op's GPU time (an iteration whose enqueue outlasted the sleep is
counted as late). "as-called" starts the clock on an idle stream, as before 2026-11-29: it adds the host's
enqueue and the ranks' skew in starting, which swung the small shape's times 1.5x from run to run.

    torchrun --nproc-per-node 2 bench/python/tp_overlap.py [--shapes mlp small] [--iters 30] [--markdown out.md]
        [--timing gated|as-called] [--timeline FILE]  (every rank's GPU activity during one gated call of each tilefuse
        op: which work overlaps)

Shapes (tokens x hidden x intermediate, the intermediate split over the ranks): mlp = 8192 x 8192 x 28672;
small = 4096 x 4096 x 4096 (communication weighs more).
"""
import argparse
import contextlib
import json
import os
import statistics
import time

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")
os.environ.setdefault("NVSHMEM_DISABLE_NVLS", "1")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402

SHAPES = {"mlp": (8192, 8192, 28672), "small": (4096, 4096, 4096)}


# The gate's sleep, in GPU clock cycles (about 1.5 ms): longer than any variant's enqueue on the host.
GATE_CYCLES = 3_000_000


@contextlib.contextmanager
def native_async_tp():
    """torch's native all-gather GEMM (_async_input_mm: one CUTLASS GEMM whose tiles wait for each rank's rows),
    which torch takes only when asked and 2048 < tokens <= 4096: the fair peer of the small shape."""
    os.environ["TORCH_SYMM_MEM_ENABLE_NATIVE_ASYNC_TP"] = "1"
    try:
        yield
    finally:
        del os.environ["TORCH_SYMM_MEM_ENABLE_NATIVE_ASYNC_TP"]


def gate(meet, cycles=GATE_CYCLES):
    """Holds this rank's stream while the host enqueues what follows, then an all-reduce releases every rank
    together (host skew does not show in what the GPUs do next)."""
    torch.cuda._sleep(cycles)
    dist.all_reduce(meet)


def timed(fn, iters, sets, gated):
    """Over iters calls of fn(set), the sets rotating: the median of each iteration's slowest rank's ms between
    CUDA events around the call, the median host ms to enqueue it, and (gated) how many iterations started
    before their enqueue ended."""
    for i in range(3):
        fn(i % sets)
    torch.cuda.synchronize()
    dist.barrier()
    meet = torch.zeros(1, device="cuda")
    times, host, late = [], [], 0
    for i in range(iters):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        if gated:
            gate(meet)
        start.record()
        enqueue = time.perf_counter()
        fn(i % sets)
        host.append((time.perf_counter() - enqueue) * 1e3)
        late += bool(gated and start.query())
        end.record()
        end.synchronize()
        dist.barrier()
        times.append(start.elapsed_time(end))
    every = [None] * dist.get_world_size()
    dist.all_gather_object(every, times)
    slowest = [max(rank_times[i] for rank_times in every) for i in range(iters)]
    return statistics.median(slowest), statistics.median(host), late


def attempt(fn, iters, sets, gated):
    """(ms, host ms, late iterations, None), or (None, None, None, the error)."""
    try:
        return (*timed(fn, iters, sets, gated), None)
    except Exception as error:  # noqa: BLE001 - a peer that cannot run is reported, not fatal
        return None, None, None, f"{type(error).__name__}: {str(error)[:160]}"


def run(world, shape, iters, gated, gated_sweep=False):
    import tilefuse.parallel as tp

    tokens, hidden, inter = shape
    local = inter // world
    rows = tokens // world
    bf16 = dict(device="cuda", dtype=torch.bfloat16)
    sets = 2  # operand sets of these sizes already exceed L2 many times over
    # all-gather + GEMM: x rows split over the ranks, w1 split along its outputs (column parallel)
    xs = [torch.randn(rows, hidden, **bf16) for _ in range(sets)]
    w1 = torch.randn(local, hidden, **bf16) * hidden ** -0.5
    b1 = torch.randn(local, **bf16)
    gathered = [torch.empty(tokens, hidden, **bf16) for _ in range(sets)]
    # GEMM + reduce-scatter: h split along its features, w2 along its inputs (row parallel)
    hs = [torch.randn(tokens, local, **bf16) for _ in range(sets)]
    w2 = torch.randn(hidden, local, **bf16) * inter ** -0.5
    partials = [torch.randn(tokens, hidden, **bf16) for _ in range(sets)]
    scattered = torch.empty(rows, hidden, **bf16)
    residual = torch.randn(rows, hidden, **bf16)
    group = dist.group.WORLD
    results = {}
    with torch.no_grad():
        results["all-gather alone"] = attempt(
            lambda s: dist.all_gather_into_tensor(gathered[s], xs[s]), iters, sets, gated)
        results["GEMM alone (ag side)"] = attempt(
            lambda s: tp._linear(gathered[s], w1, b1, None, "gelu"), iters, sets, gated)
        results["sequential: NCCL all-gather, cuBLAS + GELU"] = attempt(
            lambda s: (dist.all_gather_into_tensor(gathered[s], xs[s]), F.gelu(F.linear(gathered[s], w1, b1))),
            iters, sets, gated)
        results["tilefuse all_gather_linear"] = attempt(  # the default: schedule="auto"
            lambda s: tp.all_gather_linear(xs[s], w1, b1, "gelu"), iters, sets, gated)
        results["tilefuse all_gather_linear, schedule='halves' (replayed)"] = attempt(
            lambda s: tp.all_gather_linear(xs[s], w1, b1, "gelu", schedule="halves"), iters, sets, gated)
        results["tilefuse all_gather_linear, halves op by op (replay=False)"] = attempt(
            lambda s: tp.all_gather_linear(xs[s], w1, b1, "gelu", schedule="halves", replay=False), iters, sets,
            gated)
        results["tilefuse all_gather_linear, transport p2p (NCCL ring)"] = attempt(
            lambda s: tp.all_gather_linear(xs[s], w1, b1, "gelu", transport="p2p"), iters, sets, gated)
        results["reduce-scatter alone"] = attempt(
            lambda s: dist.reduce_scatter_tensor(scattered, partials[s]), iters, sets, gated)
        results["GEMM alone (rs side)"] = attempt(lambda s: tp._linear(hs[s], w2, None, None, None), iters, sets, gated)
        results["sequential: cuBLAS, NCCL reduce-scatter, add"] = attempt(
            lambda s: (dist.reduce_scatter_tensor(scattered, F.linear(hs[s], w2)), scattered.add_(residual)),
            iters, sets, gated)
        results["tilefuse linear_reduce_scatter"] = attempt(  # the default: schedule="auto"
            lambda s: tp.linear_reduce_scatter(hs[s], w2, None, residual), iters, sets, gated)
        results["tilefuse linear_reduce_scatter, schedule='steps' (replayed)"] = attempt(
            lambda s: tp.linear_reduce_scatter(hs[s], w2, None, residual, schedule="steps"), iters, sets, gated)
        results["tilefuse linear_reduce_scatter, steps op by op (replay=False)"] = attempt(
            lambda s: tp.linear_reduce_scatter(hs[s], w2, None, residual, schedule="steps", replay=False), iters,
            sets, gated)
        results["tilefuse linear_reduce_scatter, transport p2p (NCCL ring)"] = attempt(
            lambda s: tp.linear_reduce_scatter(hs[s], w2, None, residual, transport="p2p"), iters, sets, gated)
        try:
            import torch.distributed._symmetric_memory as symm_mem

            symm_mem.enable_symm_mem_for_group(group.group_name)
            results["torch async-TP fused_all_gather_matmul (+ GELU)"] = attempt(
                lambda s: F.gelu(torch.ops.symm_mem.fused_all_gather_matmul(
                    xs[s], [w1.t()], gather_dim=0, group_name=group.group_name)[1][0] + b1), iters, sets, gated)
            try:
                with native_async_tp():
                    takes_native = symm_mem._should_use_fused_all_gather_matmul_native(
                        xs[0], [w1.t()], 0, group.group_name)
            except AttributeError:  # another torch: no such path
                takes_native = False
            if takes_native:
                def fused_native(s):
                    with native_async_tp():
                        return F.gelu(torch.ops.symm_mem.fused_all_gather_matmul(
                            xs[s], [w1.t()], gather_dim=0, group_name=group.group_name)[1][0] + b1)
                results["torch async-TP native (_async_input_mm) (+ GELU)"] = attempt(fused_native, iters, sets, gated)
            results["torch async-TP fused_matmul_reduce_scatter (+ add)"] = attempt(
                lambda s: torch.ops.symm_mem.fused_matmul_reduce_scatter(
                    hs[s], w2.t(), "sum", scatter_dim=0, group_name=group.group_name) + residual, iters, sets, gated)
        except Exception as error:  # noqa: BLE001
            results["torch async-TP"] = (None, None, None, f"{type(error).__name__}: {str(error)[:160]}")
        # The signalled schedules named (the default takes them on Hopper from a signature's second call on).
        results["tilefuse all_gather_linear, one row-gated GEMM (schedule='gated')"] = attempt(
            lambda s: tp.all_gather_linear(xs[s], w1, b1, "gelu", schedule="gated"), iters, sets, gated)
        results["tilefuse linear_reduce_scatter, signalled (schedule='signalled')"] = attempt(
            lambda s: tp.linear_reduce_scatter(hs[s], w2, None, residual, schedule="signalled"), iters, sets, gated)
        if not gated_sweep:
            return results
        import tilefuse.overlap as overlap

        world_, rank_ = dist.get_world_size(), dist.get_rank()
        results["copy-engine pull of the peers' blocks alone"] = attempt(
            lambda s: pull_alone(overlap, xs[s], group, world_, rank_), iters, sets, gated)
        workspace = overlap._workspace(group, world_ * xs[0].numel() * xs[0].element_size())
        results["three symmetric-memory barriers alone (as the halves schedule makes)"] = attempt(
            lambda s: [workspace.barrier(channel=c) for c in (0, 1, 0)], iters, sets, gated)
        import tilefuse
        from tilefuse.epilogue.common import fused

        for tile in ("128x128", "128x256"):
            whole = tilefuse.Gemm(fused("gelu", True, False), tile=tile)
            results[f"GEMM alone (ag side), tilefuse.Gemm tile {tile}"] = attempt(
                lambda s, whole=whole: whole.run(gathered[s], w1.t(), bias=b1), iters, sets, gated)
        from tilefuse.gemm_row_gate import RowGatedGemm

        alone = RowGatedGemm(fused("gelu", True, False), rows_per_flag=rows, first_row=rank_ * rows)
        every_flag = torch.ones(world_, dtype=torch.uint32, device="cuda")
        results["row-gated GEMM alone, every flag set (no transfer)"] = attempt(
            lambda s: alone.run(gathered[s], w1.t(), row_flags=every_flag, bias=b1), iters, sets, gated)
        want = tp.all_gather_linear(xs[0], w1, b1, "gelu").float()
        for tile in ("128x128", "128x256"):
            def variant(s, t=tile):
                return overlap._all_gather_gated(xs[s], w1, b1, "gelu", group, world_, rank_, tile=t)
            name = f"row-gated GEMM, tile {tile}"
            error = (variant(0).float() - want).abs().max().item()  # the same products: equal but for order
            results[name] = attempt(variant, iters, sets, gated)
            if error > 0.05 * want.abs().max().item():
                results[name] = (*results[name][:3], f"WRONG: max error {error:.3g}")
    return results


def pull_alone(overlap, x, group, world, rank):
    """The copy engines' pulls alone (no GEMM, no barrier): every peer's block copied from its slot of the
    symmetric workspace into this rank's, on a side stream."""
    import tilefuse.overlap_common as overlap_common

    rows, k = x.shape
    workspace = overlap._workspace(group, world * rows * k * x.element_size())
    gathered = overlap._view(workspace, rank, (world * rows, k), x.dtype)
    current = torch.cuda.current_stream()
    pull = overlap._stream(x.device, "pull")
    pull.wait_stream(current)
    with torch.cuda.stream(pull):
        for other in overlap_common._peers(rank, world):
            blocks = slice(other * rows, (other + 1) * rows)
            gathered[blocks].copy_(overlap._view(workspace, other, (world * rows, k), x.dtype)[blocks])
    current.wait_stream(pull)


def timeline(world, shape, path):
    """Every rank's kernels and copies during one call of each overlapped op (torch.profiler), by start time: the
    stream, start and duration in us from the moment the ranks leave the gate (as in the gated timing: the call
    enqueued while a sleep holds the stream, then an all-reduce releases every rank together, so host skew does
    not show), and the name."""
    import tilefuse.parallel as tp
    from torch.profiler import ProfilerActivity, profile

    tokens, hidden, inter = shape
    local, rows = inter // world, tokens // world
    bf16 = dict(device="cuda", dtype=torch.bfloat16)
    x, w1, b1 = torch.randn(rows, hidden, **bf16), torch.randn(local, hidden, **bf16), torch.randn(local, **bf16)
    h, w2, r = torch.randn(tokens, local, **bf16), torch.randn(hidden, local, **bf16), torch.randn(rows, hidden, **bf16)
    calls = {"all_gather_linear halves": lambda: tp.all_gather_linear(x, w1, b1, "gelu", schedule="halves"),
             "all_gather_linear gated": lambda: tp.all_gather_linear(x, w1, b1, "gelu", schedule="gated"),
             "linear_reduce_scatter steps": lambda: tp.linear_reduce_scatter(h, w2, None, r, schedule="steps"),
             "linear_reduce_scatter signalled": lambda: tp.linear_reduce_scatter(h, w2, None, r, schedule="signalled")}
    lines = []
    meet = torch.zeros(1, device="cuda")
    with torch.no_grad():
        for name, call in calls.items():
            for _ in range(3):
                call()
            torch.cuda.synchronize()
            dist.barrier()
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                gate(meet, 4 * GATE_CYCLES)  # longer: the profiler slows the enqueue
                call()
                torch.cuda.synchronize()
            dist.barrier()
            events = sorted((e for e in prof.events() if e.device_type.name == "CUDA"), key=lambda e: e.time_range.start)
            collectives = [e for e in events if "nccl" in e.name.lower()]
            if not collectives:
                continue
            release = collectives[0]  # the gate's all-reduce
            t0 = release.time_range.end  # the ranks leave the gate
            after = [e for e in events if e.time_range.start >= release.time_range.start and e is not release]
            lines += [f"## {name}, {world} GPUs, {' x '.join(map(str, shape))}, rank {dist.get_rank()}", "",
                      "| stream | start us | us | activity |", "|---:|---:|---:|---|"]
            lines += [f"| {getattr(e, 'device_resource_id', '?')} | {e.time_range.start - t0:.0f} | "
                      f"{e.time_range.elapsed_us():.0f} | {e.name[:70]} |" for e in after]
            lines.append("")
    every = [None] * dist.get_world_size()
    dist.all_gather_object(every, lines)
    if dist.get_rank() == 0:
        open(path, "w").write("\n".join(line for rank_lines in every for line in rank_lines) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", nargs="+", default=["mlp", "small"], choices=sorted(SHAPES))
    parser.add_argument("--iters", type=int, default=30)
    parser.add_argument("--markdown")
    parser.add_argument("--json")
    parser.add_argument("--timing", choices=["gated", "as-called"], default="gated",
                        help="gated: the ops' GPU time, both ranks started together (default); as-called: the host's "
                        "enqueue and the ranks' skew included")
    parser.add_argument("--gated-sweep", action="store_true",
                        help="also time the gated schedule's parts: the pulls alone, three symmetric-memory "
                        "barriers, the GEMM on 128x128 and 128x256 tiles, the row-gated GEMM with every flag set")
    parser.add_argument("--timeline", help="write every rank's GPU activity during one gated call of each op (the first of "
                        "--shapes) here")
    args = parser.parse_args()
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
    dist.init_process_group("nccl", device_id=torch.device("cuda", torch.cuda.current_device()))
    if args.timeline:
        timeline(world, SHAPES[args.shapes[0]], args.timeline)
        dist.destroy_process_group()
        return
    gated = args.timing == "gated"
    report = {"device": torch.cuda.get_device_name(), "world": world, "torch": torch.__version__,
              "timing": args.timing, "iters": args.iters, "shapes": {}}
    lines = [f"# Overlapped collectives, {world} x {report['device']}, torch {torch.__version__}", "",
             f"Timing: {args.timing} ("
             f"{'GPU time, the ranks started together' if gated else 'the host enqueue and the ranks skew included'}); "
             f"each iteration's slowest rank, median of {args.iters}.", ""]
    for name in args.shapes:
        results = run(world, SHAPES[name], args.iters, gated, args.gated_sweep)
        report["shapes"][name] = {k: {"ms": v[0], "host_ms": v[1], "late": v[2], "error": v[3]}
                                  for k, v in results.items()}
        ms = {k: v[0] for k, v in results.items()}
        lines += [f"## {name}: tokens x hidden x intermediate = {' x '.join(map(str, SHAPES[name]))}", "",
                  "| variant | ms | host ms to enqueue | late iterations |", "|---|---:|---:|---:|"]
        lines += [f"| {k} | {'-' if v[0] is None else f'{v[0]:.3f}'}{'' if v[3] is None else ' (' + v[3] + ')'} | "
                  f"{'-' if v[1] is None else f'{v[1]:.3f}'} | {'-' if v[2] is None else v[2]} |"
                  for k, v in results.items()]
        for side, coll, gemm, ours, torch_op, seq in (
                ("all-gather + GEMM", "all-gather alone", "GEMM alone (ag side)", "tilefuse all_gather_linear",
                 "torch async-TP fused_all_gather_matmul (+ GELU)", "sequential: NCCL all-gather, cuBLAS + GELU"),
                ("GEMM + reduce-scatter", "reduce-scatter alone", "GEMM alone (rs side)",
                 "tilefuse linear_reduce_scatter", "torch async-TP fused_matmul_reduce_scatter (+ add)",
                 "sequential: cuBLAS, NCCL reduce-scatter, add")):
            if ms.get(ours) and ms.get(coll) and ms.get(gemm):
                ideal = max(ms[coll], ms[gemm])
                parts = [f"ideal max(collective, GEMM) {ideal:.3f} ms: tilefuse (default) at {ms[ours] / ideal:.3f}x "
                         "the ideal"]
                older = ours + (", schedule='halves' (replayed)" if side.startswith("all-gather")
                                else ", schedule='steps' (replayed)")
                if ms.get(older):
                    parts.append(f"{older.split(', ')[1]} at {ms[older] / ideal:.3f}x")
                if ms.get(torch_op):
                    parts.append(f"{ms[torch_op] / ms[ours]:.3f}x torch async-TP")
                gated_op = "tilefuse all_gather_linear, one row-gated GEMM (schedule='gated')"
                if side.startswith("all-gather") and ms.get(gated_op):
                    parts.append(f"the row-gated schedule at {ms[gated_op] / ideal:.3f}x the ideal")
                    if ms.get(torch_op):
                        parts.append(f"{ms[torch_op] / ms[gated_op]:.3f}x torch async-TP")
                signalled_op = "tilefuse linear_reduce_scatter, signalled (schedule='signalled')"
                if side.startswith("GEMM +") and ms.get(signalled_op):
                    parts.append(f"the signalled schedule at {ms[signalled_op] / ideal:.3f}x the ideal")
                    if ms.get(torch_op):
                        parts.append(f"{ms[torch_op] / ms[signalled_op]:.3f}x torch async-TP")
                native_op = "torch async-TP native (_async_input_mm) (+ GELU)"
                if side.startswith("all-gather") and ms.get(native_op):
                    parts.append(f"{ms[native_op] / ms[ours]:.3f}x torch's native async-TP")
                if ms.get(seq):
                    parts.append(f"{ms[seq] / ms[ours]:.3f}x the sequential pair")
                lines.append(f"\n{side}: " + "; ".join(parts) + ".")
        lines.append("")
    import tilefuse.overlap_replay as replay

    lines.append(f"Rank {rank}'s CUDA graphs of the copy-engine ops (tilefuse.overlap_replay): {replay.stats}")
    if rank == 0:
        text = "\n".join(lines) + "\n"
        print(text)
        if args.markdown:
            open(args.markdown, "w").write(text)
        if args.json:
            json.dump(report, open(args.json, "w"), indent=1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
