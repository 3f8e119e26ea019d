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
"""
import math
import weakref

from .errors import require_torch

torch = require_torch("tilefuse.overlap")
import torch.distributed as dist  # noqa: E402

from . import ops, overlap_replay  # noqa: E402
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

_streams = {}  # (device, role) -> a side stream: "gemm", or "copy<i>" (one per peer: pulls run at once)
_events = {}  # (device, rank or name) -> an event, re-recorded each call
_views = {}  # _address(workspace) -> (the workspace, {(rank, shape, dtype, offset): that rank's buffer})


def _stream(device, role):
    stream = _streams.get((device, role))
    if stream is None:
        stream = _streams[(device, role)] = torch.cuda.Stream(device)
    return stream


def _event(device, i):
    event = _events.get((device, i))
    if event is None:
        event = _events[(device, i)] = torch.cuda.Event()
    return event


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
        view = views[key] = workspace.get_buffer(rank, shape, dtype, storage_offset=offset)
    return view


def _address(workspace):
    """Which workspace allocation this is: torch hands out a new Python object for the same one on every call."""
    return tuple(workspace.buffer_ptrs), workspace.buffer_size


def _into(x, weight, bias, residual, activation, out):
    """The fused linear storing into `out` (a contiguous block of rows of a larger output): the C++ warm path
    where it has the call, else the Python one (which checks, plans and hands the call to C++)."""
    fast = ops.fast_linear(activation)
    if fast is None or fast(x, weight, bias, residual, out) is None:
        ops._linear_impl(x, weight, bias, residual, activation, out=out)


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
    workspace.barrier(channel=0)  # every peer has finished reading this workspace's previous contents
    mine = _view(workspace, rank, shape, x.dtype)
    mine.copy_(x)
    if replay:  # the rest reads this rank's block from the workspace, where the graph finds it
        signature = ("all_gather_linear", x.device, shape, x.dtype, _identity(weight), _identity(bias), activation,
                     id(group), world, rank, _address(workspace))
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


# ---- signalled schedules: copy-engine pushes, calls ordered by stream-memory signals, no barrier ----
#
# The gated all-gather: one row-gated GEMM, no kernel of the call beside it and no barrier before it. Each rank
# pushes its block into every peer's gathered buffer (a copy engine), then writes that peer's flag for the block;
# the GEMM's tiles wait for their block's flag (the own block is read from x in place). The signalled
# reduce-scatter: each partial for a peer is pushed into that peer's buffer and signalled; the owner adds what
# arrived after its own GEMM. Epochs (one per call and op) order the calls: a rank pushes call e's data into a
# peer only once that peer has signalled (`consumed`) that it is done with call e - 1's. The gated GEMM's flags
# alternate between two sets by the epoch's parity, so a reset never erases a push of the next call, and the next
# call's GEMM waits for the reset (an event). The gated GEMM launches only once every peer has signalled that it
# reached the call (a late rank delays it rather than trips its spin limit). Every signal is a stream write or
# wait, enqueued with the call's events and copies by one C++ call per step (tilefuse._C.StreamProgram: recorded
# once per shape, so the host spends the driver's time, not Python's). Writes never go on the caller's stream (one
# there holds the stream until the work ahead of it drains); the caller's stream waits for events, and for the
# peers' starts itself (3 us sooner than through a side stream and an event, docs/notes/parallel.md). A call
# that fails after its epoch was taken turns the schedules off for its group (its peers' epochs may be ahead).
# One stream per group's calls, as the workspace.

_GATED = {}  # (device, world, rank, rows, k, n, dtype, tile, activation, bias dtype, own?) -> RowGatedGemm
_PLANNED = set()  # (_GATED key, gathered buffer) whose GEMM was planned and loaded before a call's epoch
_TILE_ROWS = 128  # a multiple of every Hopper tile's rows: own rows that are whole tiles of any of them
_SIGNALS = {}  # (group name, device) -> _SignalState
_MASK = 0xFFFFFFFF  # epochs are 32-bit words compared with wrap-around


class _SignalState:
    """One group's symmetric memory for the signalled schedules on one device: the buffers peers push into (grown
    by a new allocation when a call needs more; the old ones are kept, a peer may still be writing them) and the
    signal words, in units of `world` words: [0, 2) the gated GEMM's flags (two sets), 2 the all-gather's consumed
    signals, 3 the reduce-scatter's arrivals, 4 its consumed signals, 5 the all-gather's starts (a peer's host
    and stream have reached the call: the GEMM, which spins on its flags holding every SM, is launched only then,
    so that a late rank delays its peers instead of tripping their GEMMs' spin limit)."""

    AG_CONSUMED, RS_READY, RS_CONSUMED, AG_STARTED = 2, 3, 4, 5

    def __init__(self, group, device):
        import torch.distributed._symmetric_memory as symm_mem

        self.group, self.device = group, device
        self.world, self.rank = dist.get_world_size(group), dist.get_rank(group)
        if not symm_mem.is_symm_mem_enabled_for_group(group.group_name):
            symm_mem.enable_symm_mem_for_group(group.group_name)
        words = symm_mem.empty(6 * self.world, dtype=torch.int32, device=device)
        words.zero_()
        words[self.rank] = words[self.world + self.rank] = 1  # this rank's own block: in place at every launch
        self.words_handle = symm_mem.rendezvous(words, group.group_name)
        self.words = words
        self.flag_sets = [words.view(torch.uint32)[p * self.world:(p + 1) * self.world] for p in (0, 1)]
        self.epochs = {}
        self.allocations, self.kept, self.views = {}, [], {}
        self.broken = None  # why a call failed after its signals began: the ranks' epochs may disagree
        self.programs = {}  # key -> the StreamPrograms of a call of one shape (made once, each enqueued in C++)
        self.events = None  # their events (_Events), shared: a call's flag reset is the next call's wait
        self.words_handle.barrier(channel=0)  # every rank's words are zero before anyone signals (once)

    def streams(self):
        """The raw handles of this group's side streams: push<r> (one per peer), signals, arrivals (the stream
        objects kept here too, as long as the programs that name them)."""
        tag = self.group.group_name
        roles = [f"push{r}" for r in _peers(self.rank, self.world)] + ["signals", "arrivals"]
        self.held_streams = {role: _stream(self.device, f"{role} {tag}") for role in roles}
        return {role: stream.cuda_stream for role, stream in self.held_streams.items()}

    def program_set(self, key, build):
        """The StreamPrograms `build()` describes for `key` (once): build returns {name: list of operations}. The
        key names the buffers' allocation: programs hold its addresses, and a regrown buffer is a new one."""
        programs = self.programs.get(key)
        if programs is None:
            from . import _C

            if self.events is None:
                self.events = _C.StreamEvents(_Events.count(self.world))
            programs = self.programs[key] = {name: _C.StreamProgram(self.events, ops)
                                             for name, ops in build().items()}
        return programs

    def next_epoch(self, op):
        if self.broken is not None:
            raise RuntimeError(f"tilefuse.overlap: an earlier signalled call failed part way ({self.broken}), so "
                               "the ranks' epochs may disagree and a wait could never end; the signalled schedules "
                               "are off for this process group: pass schedule='halves' (all_gather_linear) or "
                               "'steps' (linear_reduce_scatter) on every rank, or use a new process group")
        self.epochs[op] = epoch = (self.epochs.get(op, 0) + 1) & _MASK
        return epoch

    def broke(self, error):
        """Marks this state broken: a call raised after its epoch, its signals may be half sent."""
        self.broken = f"{type(error).__name__}: {error}"

    def word(self, rank, index):
        """The address of word `index` of rank's signal words (this rank's or a peer's, mapped here)."""
        return self.words_handle.buffer_ptrs[rank] + 4 * index

    def buffers(self, name, shape, dtype):
        """Every rank's buffer `name` of this shape, in symmetric memory, as tensors here (views made once; the
        allocation collective the first time a size is needed: every rank calls with the same shapes)."""
        key = (name, shape, dtype)
        views = self.views.get(key)
        if views is None:
            import torch.distributed._symmetric_memory as symm_mem

            _check_same_on_every_rank(self.group, f"shape of {name} rows", (shape, str(dtype)))

            nbytes = math.prod(shape) * torch.empty((), dtype=dtype).element_size()
            held = self.allocations.get(name)
            if held is None or held[0].numel() < nbytes:
                if held is not None:
                    self.kept.append(held)
                    self.views = {k: v for k, v in self.views.items() if k[0] != name}
                memory = symm_mem.empty(nbytes, dtype=torch.uint8, device=self.device)
                held = self.allocations[name] = (memory, symm_mem.rendezvous(memory, self.group.group_name))
            views = self.views[key] = [held[1].get_buffer(r, shape, dtype) for r in range(self.world)]
        return views


def _check_same_on_every_rank(group, what, value):
    """Raises on every rank unless all passed the same value: a host collective, run when a shape is new to this
    rank's signalled schedule, so it catches ranks that disagree at a shape's first use on every rank (a rank that
    alone passes a new shape later waits here for peers that will not come, until NCCL's timeout)."""
    values = [None] * dist.get_world_size(group)
    dist.all_gather_object(values, value, group=group)
    if any(v != values[0] for v in values):
        raise ValueError(f"tilefuse.overlap: every rank must pass the same {what}; the ranks passed "
                         + ", ".join(f"rank {r}: {v}" for r, v in enumerate(values)))


def _signal_state(group, device):
    state = _SIGNALS.get((group.group_name, device))
    if state is None or state.group is not group:  # (a new group may reuse a destroyed one's name)
        state = _SIGNALS[(group.group_name, device)] = _SignalState(group, device)
    return state


def _peers(rank, world):
    """The other ranks, nearest after this one first."""
    return [(rank + step) % world for step in range(1, world)]


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


def _refuse_capture(what):
    if torch.cuda.is_current_stream_capturing():
        raise RuntimeError(f"{what} cannot be captured in a CUDA graph: its signals carry a new epoch each call, "
                           "which a replay would not. Use schedule='auto' (under capture it takes 'halves' or "
                           "'steps', which a graph can hold), or call this one outside the capture")


def _all_gather_gated(x, weight, bias, activation, group, world, rank, tile="auto"):
    """One GEMM over every rank's block, each block pushed into every peer's gathered buffer by the copy engines
    and flagged there by a stream write; the GEMM's tiles wait for their block's flag and its walk starts at
    this rank's own block, read from x where it lies (a second tensor map; copied in first where its rows do not
    cover whole tiles). See the section comment for the epochs."""
    _refuse_capture("all_gather_linear(schedule='gated')")
    rows, k = x.shape
    device = x.device
    state = _signal_state(group, device)
    # What can fail comes before the epoch: a failure after it leaves this rank's signals half sent.
    buffers = state.buffers("gathered", (world * rows, k), x.dtype)
    own = rows % _TILE_ROWS == 0 and x.data_ptr() % 16 == 0  # whole tiles of any Hopper tile: read in place
    if weight.data_ptr() % 16:  # (a view at an odd offset) the kernel reads it by TMA: a copy of this rank's own
        weight = weight.clone()
    key = (device, world, rank, rows, k, weight.shape[0], x.dtype, tile, activation,
           None if bias is None else bias.dtype, own)
    arguments = {} if bias is None else {"bias": bias}
    if own:
        arguments["own"] = x
    gemm = _GATED.get(key)
    if gemm is None:
        from .epilogue.common import fused
        from .gemm_row_gate import RowGatedGemm

        gemm = _GATED[key] = RowGatedGemm(fused(activation, bias is not None, False), rows_per_flag=rows,
                                          first_row=rank * rows, own_rows=rows if own else 0, tile=tile)
    if (key, buffers[rank].data_ptr()) not in _PLANNED:  # a new GEMM: its checks, plan and kernel load (which
        for flags in state.flag_sets:  # synchronizes the device) before the epoch, for both sets of flags
            gemm.plan(buffers[rank], weight.t(), row_flags=flags, **arguments).kernel_on(device.index)
        _PLANNED.add((key, buffers[rank].data_ptr()))
    nbytes = x.numel() * x.element_size()
    programs_key = ("all_gather", tuple(x.shape), x.dtype, own, buffers[rank].data_ptr())  # see program_set
    programs = state.program_set(programs_key, lambda: _gated_ops(
        state, state.streams(), [buffers[r][rank * rows:].data_ptr() for r in range(world)], nbytes, own))
    current = torch._C._cuda_getCurrentRawStream(device.index)
    epoch = state.next_epoch("all_gather")
    parity = epoch % 2
    try:
        programs[f"before{parity}"].run(current, epoch, x.data_ptr())
        out = gemm.run(buffers[rank], weight.t(), row_flags=state.flag_sets[parity], **arguments)
        programs[f"after{parity}"].run(current, epoch)
    except BaseException as error:
        state.broke(error)
        raise
    return out


def _reduce_scatter_signalled(x, weight, bias, residual, group, world, rank, rows):
    """Each peer's partial computed in turn (nearest first) and pushed into that peer's buffer at this rank's
    slot, then signalled; this rank's own GEMM (bias, residual) last, then the partials that arrived added. The
    arrivals are awaited on a side stream (the caller's waits for its event), and this rank tells each sender it
    may push the next call's partial once the add is done. See the section comment for the epochs."""
    _refuse_capture("linear_reduce_scatter(schedule='signalled')")
    n = weight.shape[0]
    device = x.device
    state = _signal_state(group, device)
    # What can fail comes before the epoch (a failure after it leaves this rank's signals half sent).
    received = state.buffers("received", (world, rows, n), x.dtype)  # slot s: the partial from rank s
    sent = [torch.empty(rows, n, dtype=x.dtype, device=device) for _ in range(world - 1)]  # freed on the
    out = torch.empty(rows, n, dtype=x.dtype, device=device)  # caller's stream after it waits for the pushes
    programs_key = ("reduce_scatter", rows, n, x.dtype, received[rank].data_ptr())  # see program_set
    programs = state.program_set(programs_key, lambda: _rs_ops(
        state, state.streams(), [received[r][rank].data_ptr() for r in range(world)], rows * n * x.element_size()))
    current = torch._C._cuda_getCurrentRawStream(device.index)
    epoch = state.next_epoch("reduce_scatter")
    try:
        for owner, partial in zip(_peers(rank, world), sent):
            _into(x[owner * rows:(owner + 1) * rows], weight, None, None, "none", partial)
            programs[f"push{owner}"].run(current, epoch, partial.data_ptr())
        _into(x[rank * rows:(rank + 1) * rows], weight, bias, residual, "none", out)
        programs["arrivals"].run(current, epoch)
        if world == 2:
            out.add_(received[rank][1 - rank])
        else:
            others = torch.cat([received[rank][:rank], received[rank][rank + 1:]])
            out.add_(others.sum(0, dtype=torch.float32))  # rounded once to x's dtype
        programs["end"].run(current, epoch)
    except BaseException as error:
        state.broke(error)
        raise
    return out


class _Events:
    """Indices of the signalled schedules' events in a group's pool (_C.StreamEvents)."""

    START, DONE, FLAGS_RESET, ARRIVED, ADDED = range(5)

    @staticmethod
    def pushed(rank):
        return 5 + rank

    @staticmethod
    def computed(world, rank):
        return 5 + world + rank

    @staticmethod
    def count(world):
        return 5 + 2 * world


def _gated_ops(state, streams, destinations, nbytes, own):
    """The gated all-gather's stream operations around its GEMM, for each parity of the epoch: {"before0",
    "after0", "before1", "after1"}: lists of (kind, stream, a, b, c) for _C.StreamProgram (stream 0: the call's;
    a write's or wait's value b, plus the epoch where c is 1; a copy's source: the call's x). destinations[r]:
    where this rank's block goes in rank r's gathered buffer."""
    rank, world = state.rank, state.world
    word = state.word
    epoch, minus_one = (0, 1), (-1, 1)  # (b, c): the epoch, the epoch - 1
    programs = {}
    for parity in (0, 1):
        following = 1 - parity
        before = [("record", 0, _Events.START, 0, 0)]
        for other in _peers(rank, world):  # every peer's copy engine at once; the nearest peers first
            push = streams[f"push{other}"]
            before += [
                ("wait_event", push, _Events.START, 0, 0),  # x is ready, earlier work queued before this call
                ("write", push, word(other, state.AG_STARTED * world + rank), *epoch),  # this rank reached it
                # the peer's GEMM of the last call is done and its flags for this call reset
                ("wait", push, word(rank, state.AG_CONSUMED * world + other), *minus_one),
                ("copy", push, destinations[other], nbytes, 0),
                ("write", push, word(other, parity * world + rank), 1, 0),  # the block's flag
                ("record", push, _Events.pushed(other), 0, 0)]
        if not own:  # (its flag is always set: the GEMM follows on this stream)
            before.append(("copy", 0, destinations[rank], nbytes, 0))
        # every peer has reached this call (on the caller's stream itself: a hop fewer than an event), and this
        # call's flags were reset after the last call's GEMM (before any reset: an event never recorded, which a
        # stream's wait passes at once)
        before += [("wait", 0, word(rank, state.AG_STARTED * world + other), *epoch) for other in _peers(rank, world)]
        before.append(("wait_event", 0, _Events.FLAGS_RESET, 0, 0))
        # Off the caller's stream: once the GEMM is done, the next call's flags of the peers' blocks are reset (the
        # next GEMM waits for that) and each peer is told it may push; the caller's stream waits for the pushes.
        signals = streams["signals"]
        after = [("record", 0, _Events.DONE, 0, 0), ("wait_event", signals, _Events.DONE, 0, 0)]
        after += [("write", signals, word(rank, following * world + other), 0, 0) for other in _peers(rank, world)]
        after.append(("record", signals, _Events.FLAGS_RESET, 0, 0))
        after += [("write", signals, word(other, state.AG_CONSUMED * world + rank), *epoch)
                  for other in _peers(rank, world)]
        after += [("wait_event", 0, _Events.pushed(other), 0, 0) for other in _peers(rank, world)]
        programs[f"before{parity}"], programs[f"after{parity}"] = before, after
    return programs


def _rs_ops(state, streams, destinations, nbytes):
    """The signalled reduce-scatter's stream operations: "push<owner>" after the partial for owner (the copy's
    source: that partial), "arrivals" after the own GEMM (before the add), "end" after the add. destinations[r]:
    this rank's slot in rank r's received buffer."""
    rank, world = state.rank, state.world
    word = state.word
    epoch, minus_one = (0, 1), (-1, 1)
    programs = {}
    for owner in _peers(rank, world):
        push = streams[f"push{owner}"]
        programs[f"push{owner}"] = [
            ("record", 0, _Events.computed(world, owner), 0, 0),
            ("wait_event", push, _Events.computed(world, owner), 0, 0),
            # the owner has added the last call's partial from this rank
            ("wait", push, word(rank, state.RS_CONSUMED * world + owner), *minus_one),
            ("copy", push, destinations[owner], nbytes, 0),
            ("write", push, word(owner, state.RS_READY * world + rank), *epoch),
            ("record", push, _Events.pushed(owner), 0, 0)]
    senders = [(rank - step) % world for step in range(1, world)]
    arrivals = streams["arrivals"]  # waited for there, the caller's stream waits for its event
    programs["arrivals"] = [("wait", arrivals, word(rank, state.RS_READY * world + sender), *epoch)
                            for sender in senders]
    programs["arrivals"] += [("record", arrivals, _Events.ARRIVED, 0, 0), ("wait_event", 0, _Events.ARRIVED, 0, 0)]
    signals = streams["signals"]
    programs["end"] = [("record", 0, _Events.ADDED, 0, 0), ("wait_event", signals, _Events.ADDED, 0, 0)]
    programs["end"] += [("write", signals, word(sender, state.RS_CONSUMED * world + rank), *epoch)
                        for sender in senders]
    programs["end"] += [("wait_event", 0, _Events.pushed(owner), 0, 0) for owner in _peers(rank, world)]
    return programs


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

_WORLDS = weakref.WeakKeyDictionary()  # process group -> (its size, this rank)
_NO_COPY_ENGINE = weakref.WeakKeyDictionary()  # process group -> why the copy engines cannot serve it ("" if none)


def _per_group(cache, group, ask):
    """ask(group), asked once per process group: each torch.distributed query costs microseconds of host time,
    and a small overlapped call is host-bound (docs/notes/parallel.md). A group destroyed since is asked again,
    so torch raises its own error, as without a default group."""
    resolved = dist.group.WORLD if group is None else group
    cacheable = isinstance(resolved, dist.ProcessGroup)
    known = cache.get(resolved) if cacheable else None
    if known is not None and resolved not in _registered_groups():
        del cache[resolved]
        known = None
    if known is None:
        known = ask(group)
        if cacheable:
            cache[resolved] = known
    return known


def _registered_groups():
    """torch's live process groups (a dict keyed by them: a lookup costs what a dict's does)."""
    from torch.distributed.distributed_c10d import _world as registry

    return registry.pg_map


def _world(group):
    return _per_group(_WORLDS, group, lambda g: (dist.get_world_size(g), dist.get_rank(g)))


class _OnDevice:
    """torch.cuda.device(index) for a tensor's device index, without its argument parsing (microseconds a call)."""

    __slots__ = ("index", "previous")

    def __init__(self, index):
        self.index = index

    def __enter__(self):
        self.previous = torch.cuda._exchange_device(self.index)

    def __exit__(self, *error):
        torch.cuda._maybe_exchange_device(self.previous)
        return False


_CAPABILITIES = {}  # device index -> (major, minor)


def _capability(device):
    capability = _CAPABILITIES.get(device.index)
    if capability is None:
        capability = _CAPABILITIES[device.index] = torch.cuda.get_device_capability(device)
    return capability


def _group(group):
    return dist.group.WORLD if group is None else group


def _peer(group, rank):
    return rank if group is None else dist.get_global_rank(group, rank)


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
