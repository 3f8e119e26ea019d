"""tilefuse.overlap's signalled schedules: copy-engine pushes, calls ordered by stream-memory signals, no barrier.

The gated all-gather: one row-gated GEMM, no kernel of the call beside it and no barrier before it. Each rank
pushes its block into every peer's gathered buffer (a copy engine), then writes that peer's flag for the block;
the GEMM's tiles wait for their block's flag (the own block is read from x in place). The signalled
reduce-scatter: each partial for a peer is pushed into that peer's buffer and signalled; the owner adds what
arrived after its own GEMM. Epochs (one per call and op) order the calls: a rank pushes call e's data into a
peer only once that peer has signalled (`consumed`) that it is done with call e - 1's. The gated GEMM's flags
alternate between two sets by the epoch's parity, so a reset never erases a push of the next call, and the next
call's GEMM waits for the reset (an event). The gated GEMM launches only once every peer has signalled that it
reached the call (a late rank delays it rather than trips its spin limit). Every signal is a stream write or
wait, enqueued with the call's events and copies by one C++ call per step (tilefuse._C.StreamProgram: recorded
once per shape, so the host spends the driver's time, not Python's). Writes never go on the caller's stream (one
there holds the stream until the work ahead of it drains); the caller's stream waits for events, and for the
peers' starts itself (3 us sooner than through a side stream and an event, docs/notes/parallel.md). A call
that fails after its epoch was taken turns the schedules off for its group (its peers' epochs may be ahead).
One stream per group's calls, as the workspace.
"""
import math

from .errors import require_torch

torch = require_torch("tilefuse.overlap")
import torch.distributed as dist  # noqa: E402

from .kernel_params import current_raw_stream  # noqa: E402
from .overlap_common import _check_same_on_every_rank, _into, _peers, _stream  # noqa: E402

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
        with torch.inference_mode(False):  # kept across calls (see buffers); a dtype view made under it is
            words = symm_mem.empty(6 * self.world, dtype=torch.int32, device=device)  # an inference tensor too
            self.flag_sets = [words.view(torch.uint32)[p * self.world:(p + 1) * self.world] for p in (0, 1)]
        words.zero_()
        words[self.rank] = words[self.world + self.rank] = 1  # this rank's own block: in place at every launch
        self.words_handle = symm_mem.rendezvous(words, group.group_name)
        self.words = words
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
            # Kept across calls: memory and views made under inference_mode would be inference tensors, which
            # cannot be written outside it.
            with torch.inference_mode(False):
                if held is None or held[0].numel() < nbytes:
                    if held is not None:
                        self.kept.append(held)
                        self.views = {k: v for k, v in self.views.items() if k[0] != name}
                    memory = symm_mem.empty(nbytes, dtype=torch.uint8, device=self.device)
                    held = self.allocations[name] = (memory, symm_mem.rendezvous(memory, self.group.group_name))
                views = self.views[key] = [held[1].get_buffer(r, shape, dtype) for r in range(self.world)]
        return views


def _signal_state(group, device):
    state = _SIGNALS.get((group.group_name, device))
    if state is None or state.group is not group:  # (a new group may reuse a destroyed one's name)
        state = _SIGNALS[(group.group_name, device)] = _SignalState(group, device)
    return state


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
    current = current_raw_stream(device.index)
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
    current = current_raw_stream(device.index)
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
