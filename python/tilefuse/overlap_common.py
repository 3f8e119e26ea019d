"""What tilefuse.overlap's schedules share: the side streams and events (made once and kept: a small call is
host-bound), the fused linear into a block of rows, a process group's facts asked once, the device switched by
index, and the ranks' agreement on a shape."""
import weakref

from .errors import require_torch

torch = require_torch("tilefuse.overlap")
import torch.distributed as dist  # noqa: E402
from torch.distributed.distributed_c10d import _world as _REGISTRY  # noqa: E402 - torch's process groups

from . import ops  # noqa: E402
from .kernel_params import device_properties  # noqa: E402

_streams = {}  # (device, role) -> a side stream: "gemm", or "copy<i>" (one per peer: pulls run at once)
_events = {}  # (device, rank or name) -> an event, re-recorded each call


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


def _into(x, weight, bias, residual, activation, out):
    """The fused linear storing into `out` (a contiguous block of rows of a larger output): the C++ warm path
    where it has the call, else the Python one (which checks, plans and hands the call to C++)."""
    fast = ops.fast_linear(activation)
    if fast is None or fast(x, weight, bias, residual, out) is None:
        ops._linear_impl(x, weight, bias, residual, activation, out=out)


def _peers(rank, world):
    """The other ranks, nearest after this one first."""
    return [(rank + step) % world for step in range(1, world)]


def _check_same_on_every_rank(group, what, value):
    """Raises on every rank unless all passed the same value: a host collective, run when a shape is new to this
    rank's signalled schedule, so it catches ranks that disagree at a shape's first use on every rank (a rank that
    alone passes a new shape later waits here for peers that will not come, until NCCL's timeout)."""
    values = [None] * dist.get_world_size(group)
    dist.all_gather_object(values, value, group=group)
    if any(v != values[0] for v in values):
        raise ValueError(f"tilefuse.overlap: every rank must pass the same {what}; the ranks passed "
                         + ", ".join(f"rank {r}: {v}" for r, v in enumerate(values)))


_WORLDS = weakref.WeakKeyDictionary()  # process group -> (its size, this rank)
_NO_COPY_ENGINE = weakref.WeakKeyDictionary()  # process group -> why the copy engines cannot serve it ("" if none)


def _per_group(cache, group, ask):
    """ask(group), asked once per process group: each torch.distributed query costs microseconds of host time,
    and a small overlapped call is host-bound (docs/notes/parallel.md). A group destroyed since is asked again,
    so torch raises its own error, as without a default group."""
    resolved = _group(group)
    cacheable = isinstance(resolved, dist.ProcessGroup)
    known = cache.get(resolved) if cacheable else None
    if known is not None and resolved not in _REGISTRY.pg_map:  # torch's live groups (a dict keyed by them)
        del cache[resolved]
        known = None
    if known is None:
        known = ask(group)
        if cacheable:
            cache[resolved] = known
    return known


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


def _capability(device):
    """(major, minor) of a CUDA device, asked once per process (kernel_params.device_properties)."""
    return device_properties(device.index)[1:]


def _group(group):
    return dist.group.WORLD if group is None else group


def _peer(group, rank):
    return rank if group is None else dist.get_global_rank(group, rank)
