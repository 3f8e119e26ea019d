"""GEMMs overlapped with the collectives that feed or follow them (forward ops; tilefuse.parallel's modules
train): all_gather_linear and linear_reduce_scatter, re-exported by tilefuse.parallel.

Two transports, chosen by `transport`:
- "copy_engine" (CUDA tensors in an NCCL group): every rank's workspace in torch's symmetric memory
  (torch.distributed._symmetric_memory) is mapped into its peers' address space; a rank pulls its peers' blocks
  with plain device copies on a side stream, which the GPUs' copy engines carry over NVLink, so the transfers
  take no SM from the GEMMs, and each GEMM stores its block of rows in place in the output (no concatenation).
  Point-to-point mappings only: no NVLink multicast.
- "p2p": a ring of torch.distributed point-to-point transfers (any backend: gloo on CPU, NCCL without symmetric
  memory); NCCL's transfers run as kernels beside the GEMMs.
"auto" takes the copy engines where they can run, else the ring. docs/notes/parallel.md has the measurements.
This module holds the entry points, the schedule choice, the halves / steps schedules and the ring; the
signalled schedules are in overlap_signalled, what they all share in overlap_common.
"""

from .errors import require_torch

torch = require_torch("tilefuse.overlap")
import torch.distributed as dist  # noqa: E402

from . import ops, overlap_replay  # noqa: E402
from .overlap_common import (_NO_COPY_ENGINE, _OnDevice, _capability, _event, _group, _into, _peer,  # noqa: E402
                             _per_group, _stream, _world)
from .overlap_signalled import _all_gather_gated, _reduce_scatter_signalled  # noqa: E402
from .op_common import activation_name  # noqa: E402

_linear = ops.linear  # the fused linear (a CPU test substitutes a reference)
TRANSPORTS = ("auto", "copy_engine", "p2p")


SCHEDULES = ("auto", "halves", "gated")  # all_gather_linear's
RS_SCHEDULES = ("auto", "steps", "signalled")  # linear_reduce_scatter's


def all_gather_linear(x, weight, bias=None, activation=None, group=None, transport="auto", replay="auto",
                      schedule="auto"):
    """act(all_gather(x) @ weight^T + bias) with the all-gather overlapped: x is this rank's (rows, k) block of
    rows, weight (n, k); the result (world * rows, n), blocks in rank order. While one block travels, the fused
    linear runs on the one in hand, so the transfers hide under the GEMMs (the ideal: max(all-gather alone,
    GEMM alone)). replay (copy engines only): True, False or "auto" (small GEMMs): from the second call of a
    signature on, the call's operations are replayed from a CUDA graph (tilefuse.overlap_replay), so the host
    enqueues one graph instead of a dozen operations. schedule (copy engines only): "halves", this rank's
    block's GEMM beside the pulls, then one on the pulled blocks; "gated", one GEMM over every block whose tiles
    wait for their block's flag, the blocks pushed by the copy engines and signalled by stream memory operations
    (tilefuse.gemm_row_gate; Hopper only; op by op: never replayed, refused under CUDA graph capture); "auto"
    (the default), "gated" where it can run (_signalled_able) unless replay=True, from a signature's second call
    on (the first, by "halves", readies what a CUDA graph capture would take), else "halves". On 2 H200s
    "gated" takes less GPU time (1.09-1.16x the ideal at 4096 tokens, machine to machine, against 1.27-1.28x)
    and no more host time (docs/notes/parallel.md).
    Every rank must pass tensors of the same shapes, dtypes and layouts (the ranks must choose alike)."""
    _forward_only("all_gather_linear", x, weight, bias)
    _check_transport(transport)
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule={schedule!r}: use one of {', '.join(SCHEDULES)}")
    world, rank = _world(group)
    activation = activation_name(activation)
    asked_replay, replay = replay, overlap_replay.wanted(replay, 2 * world * x.shape[0] * weight.shape[0] * x.shape[-1])
    if world == 1:
        return _linear(x, weight, bias, None, activation)
    if _use_copy_engine(transport, group, x, x.shape[0] * weight.shape[0]):
        with _OnDevice(x.device.index):  # the workspace, the streams and the GEMMs all on x's device
            group = _group(group)
            signature = ("all_gather", group.group_name, x.device, tuple(x.shape), x.dtype, tuple(weight.shape),
                         None if bias is None else bias.dtype, activation)
            if schedule == "gated" or schedule == "auto" and asked_replay is not True and _auto_signalled(
                    signature, x, weight):
                return _all_gather_gated(x.contiguous(), weight, bias, activation, group, world, rank)
            return _all_gather_linear_ce(x.contiguous(), weight, bias, activation, group, world, rank, replay)
    return _all_gather_linear_p2p(x.contiguous(), weight, bias, activation, group, world, rank)


def linear_reduce_scatter(x, weight, bias=None, residual=None, group=None, transport="auto", replay="auto",
                          schedule="auto"):
    """This rank's block of rows of sum_r(x_r @ weight_r^T) + bias + residual, the reduce-scatter overlapped:
    x is this rank's (world * rows, k_r) slice of the features (every row), weight (n, k_r); residual (rows, n),
    this rank's block. The other ranks' blocks are computed first and travel while the next one computes; this
    rank's own GEMM comes last with the bias and the residual in its epilogue, and the partials received are
    added to it (docs/notes/parallel.md measures this order against others). replay: as all_gather_linear's.
    schedule (copy engines only): "steps", each partial published in this rank's workspace and pulled by its
    owner after a barrier; "signalled", each partial pushed into its owner's buffer and signalled by stream
    memory operations, no barrier (op by op: never replayed, refused under CUDA graph capture); "auto" (the
    default), "signalled" where the gated all-gather would run (_signalled_able) unless replay=True, from a
    signature's second call on, else "steps"."""
    _forward_only("linear_reduce_scatter", x, weight, bias, residual)
    _check_transport(transport)
    if schedule not in RS_SCHEDULES:
        raise ValueError(f"schedule={schedule!r}: use one of {', '.join(RS_SCHEDULES)}")
    world, rank = _world(group)
    rows = _split(x.shape[0], world, "the rows of x")
    asked_replay, replay = replay, overlap_replay.wanted(replay, 2 * x.shape[0] * weight.shape[0] * x.shape[-1])
    if residual is not None and tuple(residual.shape) != (rows, weight.shape[0]):
        raise ValueError(f"residual has shape {tuple(residual.shape)}; it must be this rank's block of the output, "
                         f"{(rows, weight.shape[0])}")
    if world == 1:
        return _linear(x, weight, bias, residual, None)
    x = x.contiguous()
    if _use_copy_engine(transport, group, x, rows * weight.shape[0]):
        with _OnDevice(x.device.index):
            group = _group(group)
            signature = ("reduce_scatter", group.group_name, x.device, tuple(x.shape), x.dtype, tuple(weight.shape),
                         None if bias is None else bias.dtype, None if residual is None else residual.dtype)
            if schedule == "signalled" or schedule == "auto" and asked_replay is not True and _auto_signalled(
                    signature, x, weight):
                return _reduce_scatter_signalled(x, weight, bias, residual, group, world, rank, rows)
            workspace = _workspace(group, (world - 1) * rows * weight.shape[0] * x.element_size())
            if replay:
                out = _reduce_scatter_replayed(x, weight, bias, residual, group, workspace, world, rank, rows)
                if out is not None:
                    return out
            return _reduce_scatter_steps_ce(x, weight, bias, residual, workspace, world, rank, rows)
    return _linear_reduce_scatter_p2p(x, weight, bias, residual, group, world, rank, rows)


# ---- copy engines over symmetric memory ----
#
# Host time matters as much as the GPU's at small shapes (a call is a dozen enqueued operations): the streams,
# events and workspace views are made once and kept, and each GEMM takes the C++ warm path (ops.fast_linear).
# The GEMMs of one call run on two streams so that one's last, partly empty wave shares the SMs with the next
# one's first (a block of rows is a few waves of tiles; docs/notes/parallel.md).

_views = {}  # _address(workspace) -> (the workspace, {(rank, shape, dtype, offset): that rank's buffer})


def _workspace(group, nbytes):
    """The group's symmetric-memory workspace of at least nbytes (torch's, shared with its async-TP ops: every
    user starts and ends with a barrier, so none overwrites what a peer still reads)."""
    import torch.distributed._symmetric_memory as symm_mem

    if not symm_mem.is_symm_mem_enabled_for_group(group.group_name):
        symm_mem.enable_symm_mem_for_group(group.group_name)
    return symm_mem.get_symm_mem_workspace(group.group_name, min_size=nbytes)


def _view(workspace, rank, shape, dtype, offset=0):
    """Rank's buffer in the workspace as a tensor, made once per workspace allocation (a larger request makes
    torch allocate a new workspace object: its views are made afresh)."""
    held, views = _views.get(_address(workspace), (None, None))
    if held is None:  # (the entry holds its workspace: its memory stays its own)
        if len(_views) >= 8:
            _views.clear()
        views = {}
        _views[_address(workspace)] = (workspace, views)
    key = (rank, shape, dtype, offset)
    view = views.get(key)
    if view is None:
        with torch.inference_mode(False):  # kept across calls: one made under inference_mode could not be written
            view = views[key] = workspace.get_buffer(rank, shape, dtype, storage_offset=offset)  # outside it
    return view


def _address(workspace):
    """Which workspace allocation this is: torch hands out a new Python object for the same one on every call."""
    return tuple(workspace.buffer_ptrs), workspace.buffer_size


def _runs(rank, world):
    """The other ranks as at most two runs of consecutive ranks, [rank + 1, world) then [0, rank): a run's blocks
    are adjacent both in the output and in a buffer that holds the others' blocks in rank order (slot
    `_slot(rank, r)` for rank r), so one GEMM takes a run."""
    return [(lo, hi) for lo, hi in ((rank + 1, world), (0, rank)) if hi > lo]


def _slot(rank, other):
    return other if other < rank else other - 1


def _all_gather_linear_ce(x, weight, bias, activation, group, world, rank, replay):
    workspace = _workspace(group, x.numel() * x.element_size())
    shape = tuple(x.shape)
    if replay:
        signature = ("all_gather_linear", x.device, shape, x.dtype, _identity(weight), _identity(bias), activation,
                     id(group), world, rank, _address(workspace))
        overlap_replay.after_last(signature)  # a replay on another stream may still read this rank's block
    workspace.barrier(channel=0)  # every peer has finished reading this workspace's previous contents
    mine = _view(workspace, rank, shape, x.dtype)
    mine.copy_(x)
    if replay:  # the rest reads this rank's block from the workspace, where the graph finds it
        out = overlap_replay.run(
            signature, (), lambda: _all_gather_rest(mine, weight, bias, activation, workspace, world, rank),
            _stream(x.device, "capture"), kept=(weight, bias, workspace))
        if out is not None:
            return out
    return _all_gather_rest(x, weight, bias, activation, workspace, world, rank)


def _all_gather_rest(x, weight, bias, activation, workspace, world, rank):
    """After this rank's block is in its workspace: every rank's, the GEMMs on each as it arrives."""
    rows, n = x.shape[0], weight.shape[0]
    device = x.device
    out = torch.empty(world * rows, n, dtype=x.dtype, device=device)
    staged = torch.empty((world - 1) * rows, x.shape[1], dtype=x.dtype, device=device)  # the others', rank order
    shape = tuple(x.shape)
    current, gemm = torch.cuda.current_stream(), _stream(device, "gemm")
    workspace.barrier(channel=1)  # every rank's block is in its workspace
    ready = _event(device, "ready")
    ready.record(current)
    # The own block's GEMM is issued first: the host may wait in a peer copy's enqueue (the 4-GPU timeline).
    _into(x, weight, bias, None, activation, out[rank * rows:(rank + 1) * rows])
    for other in range(world):  # every pull at once, each on its own stream (its own link)
        if other == rank:
            continue
        copies = _stream(device, f"copy{other}")
        copies.wait_event(ready)  # the barrier, not the GEMM issued after it
        with torch.cuda.stream(copies):
            s = _slot(rank, other)
            staged[s * rows:(s + 1) * rows].copy_(_view(workspace, other, shape, x.dtype))
            _event(device, other).record(copies)
    with torch.cuda.stream(gemm):  # beside the GEMM above: fills its last wave
        for lo, hi in _runs(rank, world):
            for other in range(lo, hi):
                gemm.wait_event(_event(device, other))
            s = _slot(rank, lo)
            _into(staged[s * rows:(s + hi - lo) * rows], weight, bias, None, activation, out[lo * rows:hi * rows])
    last = _stream(device, f"copy{(rank + 1) % world}")
    for other in range(world):
        if other != rank:
            last.wait_event(_event(device, other))
    with torch.cuda.stream(last):  # the peers have pulled this rank's block (waits for no GEMM)
        workspace.barrier(channel=0)
    current.wait_stream(gemm)
    current.wait_stream(last)
    return out


_SEEN = set()  # signatures schedule="auto" has run once (by halves / steps)
_CAPTURED = set()  # signatures a CUDA graph capture has held: auto takes halves / steps for them from then on


def _auto_signalled(signature, x, weight):
    """Whether schedule="auto" takes the signalled schedules (gated / signalled) for this call: where they can run
    (_signalled_able), from a signature's second call on, never for a signature a CUDA graph capture has held.
    The ranks must choose alike, or one would wait for signals (or a barrier) that the other never sends: the
    choice reads only what every rank of an SPMD program shares (shapes, dtypes, layouts, the device's kind) and
    what they do in lockstep (their calls; a capture of these ops on every rank). A signature's first call runs
    halves / steps so that their symmetric workspace and kernels exist before any capture (a capture can neither
    allocate symmetric memory nor load a kernel); once a capture held the signature, its eager calls take them
    too, so that a rank replaying the graph and a rank running eagerly (a graph re-captured or refused on one
    rank only) still meet in the same schedule."""
    if torch.cuda.is_current_stream_capturing():
        _CAPTURED.add(signature)
        return False
    if signature in _CAPTURED or not _signalled_able(x, weight):
        return False
    if signature in _SEEN:
        return True
    _SEEN.add(signature)
    return False


def _signalled_able(x, weight):
    """Whether the signalled schedules run this call: on a Hopper GPU (the row-gated GEMM; where they were
    measured), non-empty 16-bit tensors, a contiguous weight of 16-byte rows (the Hopper kernel reads it in
    place; a weight whose base is not 16-byte aligned is copied by the gated path: alignment is a fact of one
    rank, not of the program)."""
    if not x.is_cuda or x.dim() != 2 or min(x.shape) < 1 or weight.numel() < 1:
        return False
    if x.dtype not in (torch.bfloat16, torch.float16) or weight.dtype != x.dtype or weight.device != x.device:
        return False
    if weight.dim() != 2 or not weight.is_contiguous() or weight.shape[1] * weight.element_size() % 16:
        return False
    return _capability(x.device)[0] == 9


def _reduce_scatter_replayed(x, weight, bias, residual, group, workspace, world, rank, rows):
    """_reduce_scatter_steps_ce from a CUDA graph (overlap_replay): x and the residual are read in place. None
    where the call is not replayed (the caller runs it op by op)."""
    signature = ("linear_reduce_scatter", x.device, tuple(x.shape), x.dtype, _identity(weight), _identity(bias),
                 None if residual is None else (tuple(residual.shape), tuple(residual.stride()), residual.dtype),
                 id(group), world, rank, _address(workspace))
    return overlap_replay.run(
        signature, (x, residual),
        lambda x, residual: _reduce_scatter_steps_ce(x, weight, bias, residual, workspace, world, rank, rows),
        _stream(x.device, "capture"), kept=(weight, bias, workspace))


def _identity(tensor):
    """What a graph's signature knows of a tensor it reads where it lies: address, shape, strides, dtype."""
    return None if tensor is None else (tensor.data_ptr(), tuple(tensor.shape), tuple(tensor.stride()), tensor.dtype)


def _reduce_scatter_steps_ce(x, weight, bias, residual, workspace, world, rank, rows):
    """Step s: the partial for rank + s into this rank's workspace (the group's, of (world - 1) partials), a
    barrier, then the pull of rank - s's partial for this rank, which travels while step s + 1's GEMM runs; the
    own block last."""
    n = weight.shape[0]
    device = x.device
    received = torch.empty(world - 1, rows, n, dtype=x.dtype, device=device)
    out = torch.empty(rows, n, dtype=x.dtype, device=device)
    current = torch.cuda.current_stream()
    workspace.barrier(channel=0)
    for step in range(1, world):
        owner, sender = (rank + step) % world, (rank - step) % world
        offset = (step - 1) * rows * n
        _into(x[owner * rows:(owner + 1) * rows], weight, None, None, "none",
              _view(workspace, rank, (rows, n), x.dtype, offset))
        workspace.barrier(channel=1)  # every rank's partial of this step is in its workspace
        copies = _stream(device, f"copy{sender}")
        copies.wait_stream(current)
        with torch.cuda.stream(copies):
            received[step - 1].copy_(_view(workspace, sender, (rows, n), x.dtype, offset))
    _into(x[rank * rows:(rank + 1) * rows], weight, bias, residual, "none", out)
    for step in range(1, world):
        current.wait_stream(_stream(device, f"copy{(rank - step) % world}"))
    out.add_(received[0] if world == 2 else received.sum(0, dtype=torch.float32))  # rounded once to x's dtype
    workspace.barrier(channel=0)  # the peers have pulled this rank's partials
    return out


# ---- a ring of torch.distributed point-to-point transfers ----

def _all_gather_linear_p2p(x, weight, bias, activation, group, world, rank):
    here, arriving = x, torch.empty_like(x)
    blocks = [None] * world
    for step in range(world):
        source = (rank - step) % world  # whose block `here` is
        pending = []
        if step < world - 1:  # pass it on, take the next one from the previous rank
            pending = dist.batch_isend_irecv([
                dist.P2POp(dist.isend, here, _peer(group, (rank + 1) % world), group),
                dist.P2POp(dist.irecv, arriving, _peer(group, (rank - 1) % world), group)])
        blocks[source] = _linear(here, weight, bias, None, activation)
        for request in pending:
            request.wait()
        here, arriving = arriving, (torch.empty_like(x) if step == 0 else here)
    return torch.cat(blocks)


def _linear_reduce_scatter_p2p(x, weight, bias, residual, group, world, rank, rows):
    block = lambda j: x[j * rows:(j + 1) * rows]  # noqa: E731
    received = [None] * world
    pending = []
    for step in range(1, world):
        owner, sender = (rank + step) % world, (rank - step) % world
        partial = _linear(block(owner), weight, None, None, None)
        received[sender] = torch.empty_like(partial)
        pending += dist.batch_isend_irecv([
            dist.P2POp(dist.isend, partial, _peer(group, owner), group),
            dist.P2POp(dist.irecv, received[sender], _peer(group, sender), group)])
    out = _linear(block(rank), weight, bias, residual, None)
    for request in pending:
        request.wait()
    others = torch.stack([r for r in received if r is not None]).sum(0, dtype=torch.float32)
    return out.add_(others)


# ---- helpers ----

def _split(size, world, what):
    if size % world:
        raise ValueError(f"{what} = {size} does not split over {world} ranks: make it a multiple of the group's size")
    return size // world


def _check_transport(transport):
    if transport not in TRANSPORTS:
        raise ValueError(f"transport={transport!r}: use one of {', '.join(TRANSPORTS)}")


def _use_copy_engine(transport, group, x, block):
    """Whether to take the copy engines; `block` is the elements of one output block (or partial) of rows."""
    if transport == "p2p":
        return False
    able, why = _copy_engine_able(group, x, block)
    if transport == "copy_engine" and not able:
        raise RuntimeError(f"transport='copy_engine' cannot run here: {why}; use transport='p2p' or 'auto'")
    return able


def _copy_engine_able(group, x, block):
    if not x.is_cuda:
        return False, f"the tensors are on {x.device}"
    why = _per_group(_NO_COPY_ENGINE, group, _why_no_copy_engine)
    if why:
        return False, why
    if x.dim() != 2:
        return False, f"x has {x.dim()} dimensions; the copy engines take (rows, features) blocks"
    if block * x.element_size() % 16:
        return False, (f"a block of {block} elements is not a whole number of 16-byte pieces (the GEMMs store "
                       "each block in place, 16 bytes at a time)")
    return True, ""


def _why_no_copy_engine(group):
    """Why the copy engines cannot serve this group ("" where they can): the group's own facts."""
    if "nccl" not in str(dist.get_backend(group)):
        return f"the group's backend is {dist.get_backend(group)}, not nccl"
    if dist.get_world_size(group) > torch.cuda.device_count():
        return (f"the group's {dist.get_world_size(group)} ranks are more than this node's "
                f"{torch.cuda.device_count()} GPUs (symmetric memory maps peers on one node)")
    try:
        import torch.distributed._symmetric_memory as _  # noqa: F401 - `as`: a bare import would make torch local
    except ImportError as error:
        return f"torch's symmetric memory is missing ({error})"
    return ""


def _wants_grad(*tensors):
    """Whether autograd would record an op on these tensors (grad mode on, one of them requiring grad)."""
    return torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in tensors)


def _forward_only(what, *tensors):
    if _wants_grad(*tensors):
        raise RuntimeError(f"tilefuse.parallel.{what} is a forward op (no autograd): call it under torch.no_grad(), "
                           "or train with ColumnParallelLinear / RowParallelLinear")


__all__ = ["all_gather_linear", "linear_reduce_scatter"]
