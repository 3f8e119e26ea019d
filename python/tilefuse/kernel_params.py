"""Packing a JIT-compiled kernel's Params as bytes: what tilefuse.Gemm and tilefuse.Conv2d share.

A kernel's Params type exists only inside NVRTC's compile, so its CUBIN also holds a layout kernel that
writes where each field lives (gemm/kernel/sm90_params_layout.h, conv/kernel/conv_params_layout.h); the
epilogue part of both layouts is the same (epilogue/params_layout.h) and is read and filled here.
"""
import functools
import re
import struct
import sys
from dataclasses import dataclass, field

from .errors import TensorArgumentError, require_torch

# Where each reduction starts (reduce::Sum / Max / AbsMax::identity() in epilogue/sinks.h), by graph.REDUCTIONS key.
IDENTITY = {"sum": 0.0, "max": float("-inf"), "absmax": 0.0}
# NodeKind (epilogue/fragment.h)
_KIND = {1: "scalar", 3: "row_broadcast", 4: "col_broadcast", 5: "aux_load", 8: "store", 9: "row_reduce",
         10: "col_reduce"}
NODE_WORDS = 9  # epilogue::kNodeLayoutWords
OUTPUT_KINDS = ("store", "row_reduce", "col_reduce")


@functools.lru_cache(maxsize=None)
def device_properties(device):
    """[sm_count, major, minor] of a device, queried once per process."""
    from . import _C
    return tuple(_C.device_properties(device))


_16BIT = ("bfloat16", "float16")


def tree_facts(tree):
    """What the C++ planners need of an epilogue tree (conv::TreeFacts), read off its C++ type (a lowered
    CppEpilogue) as the C++ traits read it: whether it reads tensors (epilogue::reads_memory), and whether the
    Hopper kernel loads its residual by TMA: one 16-bit Store of an elementwise tree holding exactly one 16-bit
    AuxLoad (epilogue::Stores16BitOfElementwise and has_stageable_aux). A parity test compares both sides."""
    text = str(tree)
    outputs = [a for a in tree.arguments if a.is_output]
    aux = [a for a in tree.arguments if a.kind == "aux_load"]
    residual = (len(outputs) == 1 and outputs[0].kind == "store" and outputs[0].dtype in _16BIT
                and text.count("AuxLoad<") == 1 and aux[0].dtype in _16BIT)
    return {"reads_memory": any(k in text for k in ("AuxLoad<", "RowBroadcast<", "ColBroadcast<")),
            "residual_by_tma": residual}


def residual_tma_unaligned(tree, arguments, batch, strides):
    """The planners' residual fact for this call: why TMA cannot read the tree's one staged 16-bit residual (the
    C++ text of gemm::tma_residual_unaligned), "" where it can, None where the tree stages none (tree_facts).
    strides(name, tensor): the residual's (ld, batch stride) in elements as the kernel reads it."""
    if not tree_facts(tree)["residual_by_tma"]:
        return None
    from . import _C

    name = next(arg.name for arg in tree.arguments if arg.kind == "aux_load")
    residual = arguments[name]
    ld, batch_stride = strides(name, residual)
    return _C.tma_residual_unaligned(residual.data_ptr(), ld, batch, batch_stride)


def uses_coordinates(tree):
    """Whether an epilogue tree (its C++ type) reads the element's coordinates (Row, Col, Batch: floats, exact
    below 2^24), as epilogue::uses_coordinates asks of the C++ type."""
    return re.search(r"epilogue::(Row|Col|Batch|Coordinate<[^>]*>)(?=[,> ]|$)", str(tree)) is not None


def torch_module():
    """torch, or a MissingPackageError naming what needs it (tilefuse.Gemm.run, tilefuse.Conv2d.run)."""
    return require_torch("running a tilefuse.Gemm, Conv2d or scaled_mm")


def kernel_origin(cached):
    """Where a JIT kernel came from, for describe(): the prebuilt kernels, the disk cache, or NVRTC now."""
    if "/prebuilt/" in cached.path:
        return "prebuilt kernels"
    return "disk cache" if cached.hit else f"compiled by NVRTC in {cached.info.get('compile_seconds')} s"


def load_on(cached, device, header_words):
    """Loads a JIT CUBIN's kernels on `device`: (main kernel, {key: further kernel of
    info["lowered_names"], the split-K pass for example}, the integers its layout kernel writes)."""
    from . import _C
    from .jit.loader import load_kernel

    torch = torch_module()
    names = dict(cached.info["lowered_names"])
    with torch.cuda.device(device):
        kernel = load_kernel(cached.cubin, cached.lowered_name)
        layout_kernel = load_kernel(cached.cubin, names.pop("layout"))
        others = {key: load_kernel(cached.cubin, name) for key, name in names.items()}
    # 64 named nodes at most: a tree is far smaller
    words = _C.read_layout(layout_kernel.kernel, device, header_words + NODE_WORDS * 64)
    others["layout"] = layout_kernel  # kept loaded with the others
    return kernel, others, words


_PLAIN_CACHED = {}  # (compile, element, arch) -> CachedKernel
_PLAIN_LOADED = {}  # (compile, element, arch, device) -> LoadedKernel


def plain_kernel(compile, element, arch, device):
    """The handle on `device` of a kernel whose Params are plain (no layout kernel: the packing copy, the im2col
    gather) that compile(element, arch=arch) gives, compiled (or found in the caches) and loaded the first time."""
    from .jit.loader import load_kernel

    if (compile, element, arch) not in _PLAIN_CACHED:
        _PLAIN_CACHED.setdefault((compile, element, arch), compile(element, arch=arch))
    loaded = _PLAIN_LOADED.get((compile, element, arch, device))
    if loaded is None:  # a second thread's load is dropped, never the one a launch holds
        with torch_module().cuda.device(device):
            loaded = _PLAIN_LOADED.setdefault((compile, element, arch, device),
                                              load_kernel(_PLAIN_CACHED[compile, element, arch]))
    return loaded.kernel


def loaded_on(operation, device, header_words, parse):
    """(main kernel, further kernels, parsed layout) of an operation's CUBIN on `device`, loaded there the
    first time and kept in operation.loaded (device index -> that tuple)."""
    if operation.loaded is None:
        operation.loaded = {}
    if device not in operation.loaded:
        kernel, others, words = load_on(operation.cached, device, header_words)
        operation.loaded[device] = (kernel, others, parse(words))
    return operation.loaded[device]


def jit_arch(major, minor):
    """The JIT's architecture for a compute capability: sm_90a on sm_90 (the Hopper kernels' own), else sm_XY."""
    return f"sm_{major}{minor}" + ("a" if major == 9 else "")


def parse_header(words, fields, version, what):
    """The named header words of a layout kernel's output, after checking its version (a CUBIN in the cache from
    another version of the package would pack wrong bytes). what: the kernel, for the message."""
    if words[0] != version:
        raise RuntimeError(f"tilefuse: the {what} kernel's parameter layout has version {words[0]}, this package "
                           f"reads {version}; clear the JIT cache (TILEFUSE_CACHE_DIR) and retry")
    return dict(zip(fields, words[:len(fields)]))


def pack_d_by_tma(params, launch, layout, d, key, m, n):
    """D by TMA stores where D allows them, for a kernel that has them (layout's d_by_tma and tma_d offsets):
    gemm::encode_sm90_store's rule through _C (d_storable_by_tma: 16-bit D, an aligned base, rows and batch
    entries whole 16-byte pieces apart, n a multiple of 8) sets d_by_tma, and D's tensor map is recorded under
    `key` (encoded again per pointer). d: D as (m, n), or (batch, m, n)."""
    from . import _C
    from .dtypes import element_type

    element = element_type(d.dtype, what="D").name
    batch, batch_stride = (d.shape[0], d.stride(0)) if d.dim() == 3 else (1, 0)
    ld = d.stride(-2)
    storable = element in ("bfloat16", "float16") and _C.d_storable_by_tma(d.data_ptr(), n, ld, batch, batch_stride)
    struct.pack_into("<i", params, layout["d_by_tma"], 1 if storable else 0)
    if storable:
        launch.add_map(layout["tma_d"], key, lambda pointer: _C.encode_sm90_operand(
            "D", element, pointer, n, m, batch, ld, batch_stride, 64, 16))


def pack_residual_by_tma(params, launch, layout, arguments, m, n, batch, tile_m, strides):
    """The residual's tensor map where the kernel loads it by TMA (layout's tma_aux_kernel: gemm::encode_sm90_aux's
    rules through _C), recorded under "arg:<name>" (encoded again per pointer), its batch mask, and whether its
    column vector (the bias) rides beside it (column_by_tma). strides(node, tensor): the (ld, batch stride) in
    elements of an epilogue argument as the kernel reads it. The planner chose such a kernel only for a residual
    TMA can read, and warm calls keep the decision (their signature holds its strides and alignment)."""
    from . import _C
    from .dtypes import element_type

    if not layout["tma_aux_kernel"]:
        return
    by_offset = {node["data"]: node for node in layout["nodes"]}
    node = by_offset[layout["staged_aux"]]
    residual = arguments[node["name"]]
    ld, batch_stride = strides(node, residual)
    element = element_type(residual.dtype, what=node["name"]).name
    launch.add_map(layout["tma_aux"], "arg:" + node["name"], lambda pointer: _C.encode_sm90_operand(
        "residual", element, pointer, n, m, batch, ld, batch_stride, 64, tile_m))
    struct.pack_into("<i", params, layout["batch_mask_aux"], 0 if batch == 1 or batch_stride == 0 else -1)
    if layout["tma_column_kernel"]:
        node = by_offset[layout["staged_column"]]
        column = arguments[node["name"]]
        _, column_stride = strides(node, column)
        copyable = _C.column_copyable_by_tma(column.data_ptr(), column.element_size(), n, batch, column_stride)
        struct.pack_into("<i", params, layout["column_by_tma"], 1 if copyable else 0)


def parse_nodes(words, start, count):
    """The named epilogue nodes of a layout: dicts of kind, name and the byte offsets of data / ld /
    batch_stride / value (-1: the node has no such field)."""
    nodes = []
    for i in range(count):
        slot = words[start + NODE_WORDS * i: start + NODE_WORDS * (i + 1)]
        raw = b"".join(struct.pack("<q", w) for w in slot[5:9])
        nodes.append({"kind": _KIND.get(slot[0], str(slot[0])), "data": slot[1], "ld": slot[2],
                      "batch_stride": slot[3], "value": slot[4], "name": raw.split(b"\0")[0].decode()})
    return nodes


def check_epilogue_arguments(epilogue, arguments, op, ignore=()):
    """Every parameter of the epilogue function (but acc and those with defaults) has a run() argument, and
    every run() argument is a parameter: a TensorArgumentError in run()'s words otherwise."""
    import inspect

    try:
        params = inspect.signature(epilogue).parameters
    except (TypeError, ValueError):
        return  # trace() explains what it cannot read
    needed = [n for n, p in params.items() if n != "acc" and p.default is inspect.Parameter.empty
              and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    missing = [n for n in needed if n not in arguments]
    if missing:
        given = ", ".join(f"{n}=..." for n in missing)
        raise TensorArgumentError(f"{op}.run: the epilogue takes {', '.join(repr(n) for n in missing)}, which "
                                  f"{'was' if len(missing) == 1 else 'were'} not passed; call run(a, b, {given})")
    unknown = [n for n in arguments if n not in params and n not in ignore]
    if unknown:
        raise TensorArgumentError(f"{op}.run: {', '.join(repr(n) for n in unknown)} "
                                  f"{'is not a parameter' if len(unknown) == 1 else 'are not parameters'} of the "
                                  f"epilogue {getattr(epilogue, '__name__', '')}({', '.join(params)})")


def check_out_dtype(out_dtype, op):
    """The name of an output element type a Store can write (bf16, fp16, fp32, fp8), or a ValueError."""
    from .dtypes import element_type

    if out_dtype is None:
        return None
    name = element_type(out_dtype, what="out_dtype").name
    if name not in ("bfloat16", "float16", "float32", "float8_e4m3", "float8_e5m2"):
        raise ValueError(f"{op}(out_dtype={out_dtype!r}): the kernels store bfloat16, float16, float32, "
                         "float8_e4m3 or float8_e5m2")
    return name


def check_epilogue_function(epilogue, op):
    """None or a callable, else a TypeError at construction."""
    if epilogue is not None and not callable(epilogue):
        raise TypeError(f"{op}(epilogue={epilogue!r}): pass a Python function of the accumulator, e.g. "
                        "lambda acc, bias: relu(acc + bias), or None for D = acc")


def spec_key(value):
    """What of an argument a plan depends on: a scalar's kind, a tensor's shape and dtype."""
    if isinstance(value, (int, float)):
        return ("scalar",)
    return ("tensor", tuple(getattr(value, "shape", ())), str(getattr(value, "dtype", "")))


def pack_epilogue(params, nodes, arguments, outputs, device_index, batch, record=None):
    """Writes every named node's scalar value, or its tensor's pointer, ld and batch stride, into params.
    Tensors are the (rows, cols) matrices and vectors the epilogue sees (a conv passes matrix views).
    record (a Launch): notes where each pointer and scalar went, for later calls with new values."""
    for node in nodes:
        name, kind = node["name"], node["kind"]
        if kind == "scalar":
            value = arguments[name]
            if is_device_scalar(value):  # read by the kernel from device memory (Scalar's pointer)
                struct.pack_into("<Q", params, node["data"], device_scalar_pointer(name, value, device_index))
                if record is not None:
                    record.pointers.append((node["data"], "arg:" + name))
                continue
            struct.pack_into("<f", params, node["value"], float(value))
            if record is not None:
                record.scalars.append((node["value"], name))
            continue
        output = kind in OUTPUT_KINDS
        tensor = outputs[name] if output else arguments[name]
        data, ld, batch_stride = node_strides(name, kind, tensor, device_index, batch)
        struct.pack_into("<Q", params, node["data"], data)
        if record is not None:
            record.pointers.append((node["data"], ("out:" if output else "arg:") + name))
        if node["ld"] >= 0:
            struct.pack_into("<q", params, node["ld"], ld)
        if node["batch_stride"] >= 0:
            struct.pack_into("<q", params, node["batch_stride"], batch_stride)


def is_device_scalar(value):
    """A 0-dim torch tensor: an epilogue scalar the kernel reads from device memory (e.g. an FP8 scale)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor) and value.dim() == 0


def trace_value(value):
    """What tracing sees of a run() argument: a device scalar traces as a number (Scalar), the rest as is."""
    return 1.0 if is_device_scalar(value) else value


def device_scalar_pointer(name, tensor, device_index):
    torch = torch_module()
    if tensor.dtype != torch.float32 or tensor.device != torch.device("cuda", device_index):
        raise TensorArgumentError(f"epilogue argument {name!r} is a 0-dim tensor ({tensor.dtype} on {tensor.device}): "
                                  f"a device scalar must be float32 on cuda:{device_index}")
    return tensor.data_ptr()


def node_strides(name, kind, tensor, device_index, batch):
    """(data pointer, ld, batch stride) of an epilogue tensor, checked against the problem."""
    torch = torch_module()
    if not isinstance(tensor, torch.Tensor):
        raise TensorArgumentError(f"epilogue argument {name!r} must be a torch tensor on cuda:{device_index}")
    if tensor.device != torch.device("cuda", device_index):
        raise TensorArgumentError(f"epilogue argument {name!r} is on {tensor.device}, the kernel runs on "
                                  f"cuda:{device_index}; move it with .to('cuda:{device_index}')")
    ld, batch_stride = layout_of(name, kind, tuple(tensor.shape), tuple(tensor.stride()), batch)
    return tensor.data_ptr(), ld, batch_stride


def layout_of(name, kind, shape, strides, batch):
    """(ld, batch stride) in elements of an epilogue tensor of `shape` / `strides` for a problem of `batch`
    entries, or a TensorArgumentError when the kernel cannot read it so: the node's kernel reads matrices with
    unit stride along a row and vectors with unit stride along their length, and a leading batch dimension
    must be the problem's batch (then it is walked with its stride) or 1 (shared)."""
    def refuse(what):
        raise TensorArgumentError(f"epilogue argument {name!r} (shape {shape}, strides {strides}) {what}")

    # Which dimension is the batch, and which the length the kernel walks with unit stride:
    # matrices (m, n) / (b, m, n); row vectors (n,), (1, n), (b, n), (b, 1, n); column vectors (m, 1),
    # (b, m, 1); reduction outputs (n,) / (m,), (b, n) / (b, m).
    matrix = kind in ("store", "aux_load")
    if matrix:
        batch_dim = 0 if len(shape) == 3 else None
        length_dim = len(shape) - 1
    elif kind == "col_broadcast":
        batch_dim = 0 if len(shape) == 3 else None
        length_dim = len(shape) - 2 if len(shape) >= 2 else 0
    else:  # row_broadcast, row_reduce, col_reduce
        batch_dim = 0 if len(shape) == 3 or (len(shape) == 2 and shape[0] > 1) else None
        length_dim = len(shape) - 1
    if shape and shape[length_dim] > 1 and strides[length_dim] != 1:
        refuse("must have unit stride along " + ("its rows" if matrix else "its length") + "; pass .contiguous()")
    batch_stride = 0
    if batch_dim is not None and shape[batch_dim] != 1:
        if shape[batch_dim] != batch:
            refuse(f"has a batch dimension of {shape[batch_dim]}, but the problem's batch is {batch}; give one entry "
                   "per batch entry, or 1 to share it")
        batch_stride = strides[batch_dim]
    ld = (strides[-2] if len(shape) >= 2 else shape[-1]) if matrix else 0
    return ld, batch_stride


# ---- warm calls: what a second call with the same signature repeats ----

def signature(value):
    """What of a run() argument decides everything but its pointer and value: a tensor's shape, strides,
    dtype, device and 16-byte alignment; a number's kind. None: not something a fast path can take."""
    torch = sys.modules.get("torch")  # never imports torch: without it, nothing is a torch tensor
    if torch is not None and isinstance(value, torch.Tensor):
        try:
            return (value.shape, value.stride(), value.dtype, value.device, value.data_ptr() % 16)
        except RuntimeError:  # sparse or storage-less tensors: the checked path explains what is wrong
            return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float
    return None


_DLPACK_CUDA = 2  # kDLCUDA


def from_dlpack(value):
    """A CUDA tensor of another framework (anything with __dlpack__ on a CUDA device: CuPy, JAX, ...) as a
    torch tensor sharing its memory; anything else unchanged (torch tensors, numbers, CPU arrays, which the
    checks then explain)."""
    torch = sys.modules.get("torch")
    if torch is None or isinstance(value, torch.Tensor) or not hasattr(value, "__dlpack__"):
        return value
    device = getattr(value, "__dlpack_device__", None)
    if device is None or device()[0] != _DLPACK_CUDA:
        return value
    return torch.from_dlpack(value)


def call_key(a, b, arguments):
    """The signature of a run(a, b, **arguments) call, or None when an argument is something only the checked
    path handles (and explains)."""
    parts = [signature(a), signature(b)]
    parts += [signature(value) for value in arguments.values()]
    if None in parts:
        return None
    return tuple(parts), tuple(arguments)


def allocate(outputs, device, out=None):
    """The outputs of a call, from specs (name, "store" / "reduce", shape, dtype / identity, channels_last):
    stores uninitialized, reductions started at their identity (float32); D is `out` where the caller gives
    one (checked by check_out)."""
    torch = torch_module()
    results = {}
    for name, kind, shape, value, channels_last in outputs:
        if name == "D" and out is not None:
            results[name] = out
        elif kind == "store":
            results[name] = torch.empty(shape, dtype=value, device=device,
                                        memory_format=torch.channels_last if channels_last else torch.contiguous_format)
        else:
            results[name] = torch.full(shape, value, dtype=torch.float32, device=device)
    return results


def check_out(out, outputs, what, device_index):
    """`out`, a caller's tensor for D: D's shape and dtype, contiguous (row-major), on the operands' device, not
    a tensor autograd tracks (the kernel writes it behind autograd's back)."""
    torch = torch_module()
    spec = next((o for o in outputs if o[0] == "D" and o[1] == "store"), None)
    if spec is None:
        raise TensorArgumentError(f"{what}: out= is given but this epilogue stores no D")
    _, _, shape, dtype, _ = spec
    if not isinstance(out, torch.Tensor) or tuple(out.shape) != tuple(shape) or out.dtype != dtype or \
            not out.is_contiguous() or out.device != torch.device("cuda", device_index):
        got = (f"{tuple(out.shape)} {out.dtype} on {out.device}, contiguous={out.is_contiguous()}"
               if isinstance(out, torch.Tensor) else type(out).__name__)
        raise TensorArgumentError(f"{what}: out must be a contiguous tensor of shape {tuple(shape)} and dtype "
                                  f"{dtype} on cuda:{device_index} (the operands' device); got {got}")
    if out.data_ptr() % 16:
        raise TensorArgumentError(f"{what}: out's address must be 16-byte aligned (the kernel stores 16-byte pieces)")
    if out.requires_grad and torch.is_grad_enabled():
        raise TensorArgumentError(f"{what}: out requires grad; autograd cannot see the kernel write it: pass a "
                                  "tensor that does not, or call under torch.no_grad()")


def call_pointers(a, b, arguments, results, partials=None, tickets_offset=0):
    """The pointer of every tensor of a call, by the keys Launch records: "a", "b", "arg:<name>",
    "out:<name>", "partials" (the workspace) and "tickets" (tickets_offset bytes into it)."""
    torch = torch_module()
    pointers = {"a": a.data_ptr(), "b": b.data_ptr()}
    for name, value in arguments.items():
        if isinstance(value, torch.Tensor):
            pointers["arg:" + name] = value.data_ptr()
    for name, value in results.items():
        pointers["out:" + name] = value.data_ptr()
    if partials is not None:
        pointers["partials"] = partials.data_ptr()
        pointers["tickets"] = partials.data_ptr() + tickets_offset
    return pointers


def split_k_lanes(vectors, split_k):
    """Threads that share one output vector in the split-K pass: gemm::split_k_lanes
    (gemm/kernel/split_k_epilogue.h), which the pass derives itself; its grid is sized by it."""
    lanes = 1
    while lanes < 32 and lanes < split_k and vectors * lanes < (1 << 17):
        lanes *= 2
    return lanes


def workspace(numel, zeroed, device):
    """A float32 workspace of numel elements (None for 0), zeroed where the kernel needs it so: by
    cudaMemsetAsync on the current stream (zero_async), as gemm::GemmSm90::run, conv::Conv2d's wgrad and the C++
    warm path zero theirs, not by torch.zeros' fill kernel (another kernel in the call's sequence)."""
    if not numel:
        return None
    torch = torch_module()
    out = torch.empty(numel, dtype=torch.float32, device=device)
    if zeroed:
        index = device.index if device.index is not None else torch.cuda.current_device()
        zero_async(out.data_ptr(), out.numel() * 4, index, current_raw_stream(index), out)
    return out


def zero_async(address, nbytes, device, stream, tensor=None):
    """Zeroes nbytes at address on `stream` by cudaMemsetAsync through tilefuse._C's C entry (zero_async_address,
    the one tilefuse._torch_ops zeroes split workspaces with), called by ctypes: no binding beyond that address.
    A _C without it (an older build): tensor.zero_() where a tensor is given. Raises RuntimeError on a CUDA
    error."""
    entry = _zero_entry()
    if entry is None:
        if tensor is None:
            raise RuntimeError("tilefuse._C has no zero_async entry; reinstall tilefuse")
        tensor.zero_()
        return
    import ctypes

    error = ctypes.create_string_buffer(512)
    if entry(address, nbytes, device, stream, error, len(error)) != 0:
        raise RuntimeError(error.value.decode(errors="replace") or "tilefuse: zeroing a workspace failed")


@functools.lru_cache(maxsize=None)
def _zero_entry():
    """tilefuse._C's zero_async (launch.cpp) as a ctypes function, or None where _C does not export it."""
    import ctypes

    from . import _C
    address = getattr(_C, "zero_async_address", None)
    if not address:
        return None
    prototype = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_uint64, ctypes.c_size_t, ctypes.c_int, ctypes.c_size_t,
                                 ctypes.c_char_p, ctypes.c_size_t)
    return prototype(address)


def current_raw_stream(device):
    """The current torch stream of `device` as an integer handle (torch's private fast accessor when present:
    torch.cuda.current_stream costs ~9 us a call)."""
    torch = torch_module()
    fast = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    return fast(device) if fast is not None else torch.cuda.current_stream(device).cuda_stream


@dataclass
class Launch:
    """One kernel launch whose parameter bytes were packed once: later calls with the same signature
    change only the recorded pointers (keys such as "a", "arg:bias", "out:D", "partials"), scalars (by
    argument name) and tensor maps (re-encoded from their tensors' pointers; the last few kept). The patching
    and the launch happen in C++ (tilefuse._C.PreparedLaunch, made at the first run): a warm call's host cost."""

    kernel: int
    grid: int
    threads: int
    smem_bytes: int
    grid_z: int = 1
    # The kernel waits for the previous kernel's writes itself (the Hopper kernel: arch/grid_dependency.h), so
    # it is launched to start while that kernel finishes.
    after_previous_early: bool = False
    template: bytes = b""
    pointers: list = field(default_factory=list)  # (offset, key)
    scalars: list = field(default_factory=list)   # (offset, argument name)
    maps: list = field(default_factory=list)      # (offsets, keys, encode: pointers -> 128 bytes per offset)
    _native: object = field(default=None, repr=False)
    _pointer_keys: list = field(default_factory=list, repr=False)  # the native launch's pointer slots
    _scalar_names: list = field(default_factory=list, repr=False)  # and its scalar slots

    def add_map(self, offset, key, encode):
        """A tensor map at `offset`, encode(pointer of key) -> 128 bytes, re-encoded when the pointer changes."""
        self.maps.append(((offset,), (key,), lambda pointer: (encode(pointer),)))

    def add_maps(self, offsets, keys, encode):
        """Tensor maps at `offsets` encoded together: encode(*pointers of keys) -> one 128-byte map per offset."""
        self.maps.append((tuple(offsets), tuple(keys), encode))

    def native(self):
        """The C++ launch (made once, after the template, pointers, scalars and maps are all recorded)."""
        if self._native is None:
            from . import _C

            keys = list(dict.fromkeys([key for _, key in self.pointers] +
                                      [key for _, group, _ in self.maps for key in group]))
            names = list(dict.fromkeys(name for _, name in self.scalars))
            native = _C.PreparedLaunch(self.kernel, self.grid, self.threads, 1, self.smem_bytes, self.grid_z,
                                       self.template, self.after_previous_early)
            for offset, key in self.pointers:
                native.add_pointer(offset, keys.index(key))
            for offset, name in self.scalars:
                native.add_scalar(offset, names.index(name))
            for offsets, group, encode in self.maps:
                native.add_maps(list(offsets), [keys.index(key) for key in group], encode)
            self._native, self._pointer_keys, self._scalar_names = native, keys, names
        return self._native

    def slots(self, pointers, arguments):
        """(pointers, scalars) of a call in the native launch's slot order."""
        return ([pointers[key] for key in self._pointer_keys],
                [float(arguments[name]) for name in self._scalar_names])

    def run(self, device, stream, pointers, arguments):
        native = self._native or self.native()
        native.run(device, stream, *self.slots(pointers, arguments))


@dataclass
class WarmCall:
    """A checked call, repeated for new tensors of the same signature: allocate the outputs, patch the
    pointers and scalars, launch."""

    device: int
    launches: list
    outputs: list  # specs for allocate()
    partials_numel: int = 0  # float32 elements of the workspace
    zeroed: bool = False     # the workspace starts at zero (the in-kernel split-K's sums and tickets)
    tickets_offset: int = 0

    def __post_init__(self):
        self._cuda = torch_module().device("cuda", self.device)  # made once, not per call

    def call(self, a, b, arguments, out=None):
        results = allocate(self.outputs, self._cuda, out)
        partials = workspace(self.partials_numel, self.zeroed, self._cuda)
        pointers = call_pointers(a, b, arguments, results, partials, self.tickets_offset)
        stream = current_raw_stream(self.device)
        for launch in self.launches:
            launch.run(self.device, stream, pointers, arguments)
        return results["D"] if len(results) == 1 and "D" in results else results
