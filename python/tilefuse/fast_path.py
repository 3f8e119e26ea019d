"""The torch ops' warm calls in C++ (tilefuse._torch_ops, built against the install's torch): a call of
tilefuse.nn.Conv2d / tilefuse.ops.conv2d whose tensors have the signature of an earlier checked call runs
from C++ (allocation, launches, and under autograd a C++ backward node whose dgrad and wgrad are warm calls
too), not through Python. The Python path checks, plans and makes the first call of every signature and
hands its launches over here. Without the extension (a build without torch, or another torch than the one
it was built for) every call takes the Python path; `available()` and `why_unavailable()` say which.
"""
import os

from .kernel_params import WarmCall, torch_module as _torch

_STATE = {}  # "module": the extension or None, "why": the reason it is None
_MAX_ARGUMENTS = 11  # epilogue tensors a C++ warm call takes (warm_call.cpp: 16 pointer slots in all)


def module():
    """tilefuse._torch_ops, or None (why_unavailable() says why)."""
    if "module" not in _STATE:
        _STATE["module"], _STATE["why"] = _load()
    return _STATE["module"]


def available():
    return module() is not None


def why_unavailable():
    module()
    return _STATE["why"]


def _load():
    torch = _torch()
    here = os.path.dirname(__file__)
    try:
        with open(os.path.join(here, "torch_ops_version.txt")) as f:
            built_for = f.read().strip()
    except OSError:
        return None, "tilefuse._torch_ops was not built (torch was not importable when tilefuse was installed)"
    if built_for != torch.__version__:
        return None, (f"tilefuse._torch_ops was built for torch {built_for}, this is torch {torch.__version__}: "
                      "reinstall tilefuse (pip install --no-build-isolation .)")
    try:
        from . import _C, _torch_ops
    except ImportError as e:
        return None, f"tilefuse._torch_ops does not import: {e}"
    _torch_ops.set_run_prepared_launch(_C.run_prepared_launch_address)
    _torch_ops.set_zero_async(_C.zero_async_address)
    return _torch_ops, None


def native_warm_call(warm, argument_names=(), packs=()):
    """The C++ copy of a Python WarmCall whose epilogue tensors are `argument_names` in that order, or None
    when the fast path cannot repeat it (no extension; scalars, several outputs or a reduction). packs: the
    packing launches of a call whose operands the planner copies ((operand, launch, elements, dtype), as
    gemm.hopper_operands records them): the C++ call copies the caller's operands first."""
    ops = module()
    if ops is None or not isinstance(warm, WarmCall):
        return None
    if len(warm.outputs) != 1 or len(argument_names) > _MAX_ARGUMENTS:
        return None
    name, kind, shape, dtype, channels_last = warm.outputs[0]
    if name != "D" or kind != "store" or channels_last != (len(shape) == 4):
        return None
    slots = {"a": 0, "b": 1}
    slots.update({"arg:" + n: 2 + i for i, n in enumerate(argument_names)})
    base = 2 + len(argument_names)
    slots.update({"out:D": base, "partials": base + 1, "tickets": base + 2})
    launches = []
    for launch in warm.launches:
        native = launch.native()
        if launch._scalar_names or any(key not in slots for key in launch._pointer_keys):
            return None
        launches.append((native.address, [slots[key] for key in launch._pointer_keys]))
    dtype_name = str(dtype).replace("torch.", "")
    if dtype_name not in ("bfloat16", "float16", "float32"):
        return None
    copies = [(launch.address, operand, numel, str(dtype).replace("torch.", "")) for operand, launch, numel, dtype in packs]
    if any(c[3] not in ("bfloat16", "float16") for c in copies):
        return None
    keep = (warm, tuple(launch for _, launch, _, _ in packs))  # the C++ call holds their addresses
    return ops.WarmCall(warm.device, launches, list(shape), dtype_name, warm.partials_numel, warm.zeroed,
                        warm.tickets_offset, len(argument_names), keep, copies)


def native_phased_dgrad(phased, dy, w):
    """The C++ copy of a PhasedDgrad (conv2d_phases) for dy and w of this signature, or None when a phase's
    fprop has no warm call for them yet."""
    ops = module()
    if ops is None:
        return None
    phases, offset = [], 0
    k, c = phased.filter_size[:2]
    for index, (phase, sub) in enumerate(zip(phased.phases, phased.filters(w))):
        store = phased.store(index, dy, sub)  # the phase stored in place in dx, where its kernel can
        fprop = native_warm_call(store if store is not None else phase.conv.warm_call(dy, sub, {}))
        if fprop is None:
            return None
        th, tw = len(phase.taps[0]), len(phase.taps[1])
        (a, b), (ch, cw), (eh, ew) = phase.phase, phase.crop, phase.extent
        phases.append((fprop, a, b, ch, cw, eh, ew, offset, th, tw, store is not None))
        offset += c * th * tw * k
    sh, sw = phased.stride
    return ops.PhasedDgrad(list(phased.out_size), list(phased.filter_size), sh, sw, phased.zero_fill,
                           phased._gather_index(w.device), phases)


def remember_run(owner, a, b, arguments, warm, packs=()):
    """Hands a checked run() call of a tilefuse.Conv2d or Gemm (`owner`) to its C++ table: later calls of the
    signature go from run()'s first line to the launches (owner._table, owner._names: the argument names'
    ids). a and b are the caller's tensors (packs: their copies' launches, see native_warm_call). Does nothing
    where the fast path cannot repeat the call."""
    ops = module()
    if ops is None:
        return
    names = tuple(arguments)
    native = native_warm_call(warm, names, packs)
    if native is None:
        return
    if owner._table is None:
        owner._table = ops.WarmTable()
    ids = owner._names
    if names not in ids:
        ids[names] = len(ids)
    owner._table.remember(a, b, ids[names], *arguments.values(), warm=native)


def repeat_run(owner, a, b, arguments):
    """The output of run(a, b, **arguments) on a tilefuse.Conv2d or Gemm from its C++ table (remember_run), or
    None where the table has no such call."""
    table = owner._table
    if table is None:
        return None
    names = owner._names.get(tuple(arguments))
    return table(a, b, names, *arguments.values()) if names is not None else None
