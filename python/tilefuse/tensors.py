"""Tensor arguments: describe what the caller passed and check it before any kernel runs.

What `tilefuse.Gemm(...).run` and `tilefuse.Conv2d(...).run` will call first. It reads

  - torch tensors (``.shape``, ``.stride()``, ``.dtype``, ``.device``, ``.data_ptr()``), and any object
    exposing the same (checked by duck typing, so this module never imports torch to describe a tensor);
  - objects with ``__cuda_array_interface__`` (CuPy, Numba; the device from ``__dlpack_device__`` or
    ``.device.id`` when they have one);
  - numpy arrays (on the CPU: described, then refused by the checks that need a CUDA device).

Every refusal is a :class:`tilefuse.errors.TensorArgumentError` naming the argument, its values and the fix.
Strides are in elements throughout, as torch reports them.
"""
import numbers
import sys
from dataclasses import dataclass

from .dtypes import ELEMENT_TYPES, element_type
from .errors import TensorArgumentError

ROW_MAJOR = "row-major"  # as the C++ layouts spell themselves (RowMajor::kName)
COLUMN_MAJOR = "column-major"
CONV_LAYOUT_MODES = ("require", "convert")
SHAPE_ORDERS = ("NCHW", "NHWC")
CUDA_DEVICE_TYPES = ("cuda", "cuda_managed")  # what the C++ pointer check accepts: device or managed memory
FAST_PATH_ALIGNMENT = 16  # bytes: the 16-byte copies of the sm_80 path and TMA

_ITEMSIZE = {"float16": 2, "bfloat16": 2, "float8_e4m3": 1, "float8_e5m2": 1, "tfloat32": 4, "float32": 4,
             "float64": 8, "int8": 1, "int32": 4}

# DLPack's DLDeviceType values and the names used here (torch.device's type names where they exist).
_DLPACK_DEVICES = {1: "cpu", 2: "cuda", 3: "cuda_host", 4: "opencl", 7: "vulkan", 8: "metal", 9: "vpi",
                   10: "rocm", 11: "rocm_host", 12: "ext_dev", 13: "cuda_managed", 14: "oneapi", 15: "webgpu",
                   16: "hexagon", 17: "maia"}

# __cuda_array_interface__ typestrs (kind + size; the byte-order character is dropped) -> element types.
_TYPESTRS = {"f2": "float16", "f4": "float32", "f8": "float64", "i1": "int8", "i4": "int32"}

_ACCEPTED = ("a torch tensor, an object with __cuda_array_interface__ (CuPy, Numba), "
             "or a numpy array")


@dataclass(frozen=True)
class TensorInfo:
    """One tensor argument as tilefuse sees it."""

    name: str  # the argument's name, for messages ("a", "x")
    shape: tuple
    strides: tuple  # in elements
    dtype: str  # a tilefuse element type name (tilefuse.ELEMENT_TYPES)
    device_type: str  # "cuda", "cpu", "cuda_managed", ...
    device_index: int | None  # None: the CPU, or a CUDA array that does not say which device holds it
    data_ptr: int | None  # address of the first element, where the object gives one
    itemsize: int  # bytes per element
    is_torch: bool  # a real torch.Tensor (only these can be converted)

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def device(self) -> str:
        """torch's spelling: "cuda:1", "cpu"."""
        if self.device_index is None:
            return self.device_type
        return f"{self.device_type}:{self.device_index}"

    @property
    def numel(self) -> int:
        count = 1
        for size in self.shape:
            count *= size
        return count


def _type_name(x) -> str:
    kind = type(x)
    module = kind.__module__
    return kind.__qualname__ if module == "builtins" else f"{module}.{kind.__qualname__}"


def _torch_module():
    """torch if it is already imported (a torch tensor can only exist then), else None."""
    return sys.modules.get("torch")


def _import_torch(what: str):
    try:
        import torch
    except ImportError:
        raise TensorArgumentError(f"{what} needs PyTorch, which is not installed here; install torch "
                                  "(pip install torch) or allocate the tensor yourself") from None
    return torch


def _element(dtype, name: str, x) -> str:
    try:
        return element_type(dtype).name
    except ValueError:
        known = ", ".join(ELEMENT_TYPES)
        raise TensorArgumentError(f"{name} has dtype {dtype} ({_type_name(x)}), which tilefuse has no element type "
                                  f"for; convert it to one of: {known}") from None


def _ints(values, what: str, name: str, x) -> tuple:
    try:
        out = tuple(int(v) for v in values)
    except (TypeError, ValueError):
        raise TensorArgumentError(f"{name} ({_type_name(x)}) has {what} {values!r}, which is not a tuple of "
                                  "integers; pass a tensor") from None
    return out


def _device_of_torch_like(device, name: str, x):
    """(type, index) from a torch.device, an object with .type/.index, or a string such as "cuda:1"."""
    if isinstance(device, str):
        kind, _, index = device.partition(":")
        if index and not index.isdigit():
            raise TensorArgumentError(f"{name} ({_type_name(x)}) reports device {device!r}, which is not "
                                      "'type' or 'type:index'")
        return kind, int(index) if index else None
    kind = getattr(device, "type", None)
    if not isinstance(kind, str):
        raise TensorArgumentError(f"{name} ({_type_name(x)}) reports device {device!r}, which has no .type; "
                                  "pass a torch tensor or an object with __cuda_array_interface__")
    index = getattr(device, "index", None)
    return kind, None if index is None else int(index)


def _dlpack_device(x, name: str):
    """(type, index) from __dlpack_device__(), or None when the object has none."""
    probe = getattr(x, "__dlpack_device__", None)
    if probe is None:
        return None
    try:
        code, index = probe()
    except Exception as error:  # a third-party object's bug: say whose
        raise TensorArgumentError(f"{name} ({_type_name(x)}): its __dlpack_device__() failed with {error!r}") from None
    code = int(code)
    kind = _DLPACK_DEVICES.get(code, f"dlpack_device_{code}")
    return kind, (None if kind == "cpu" else int(index))


def _from_torch_like(x, name: str, is_torch: bool) -> TensorInfo:
    if is_torch and x.layout is not _torch_module().strided:
        raise TensorArgumentError(f"{name} is a {x.layout} tensor; tilefuse takes dense (torch.strided) tensors: "
                                  f"pass {name}.to_dense()")
    shape = _ints(x.shape, "shape", name, x)
    strides = _ints(x.stride(), "strides", name, x)
    if len(strides) != len(shape):
        raise TensorArgumentError(f"{name} ({_type_name(x)}) has shape {shape} but strides {strides}: one stride "
                                  "per dimension is needed")
    dtype = _element(x.dtype, name, x)
    device_type, device_index = _device_of_torch_like(x.device, name, x)
    if device_type == "cpu":
        device_index = None
    try:
        pointer = int(x.data_ptr())
    except Exception:  # e.g. a tensor without storage (meta): no address to report
        pointer = None
    return TensorInfo(name, shape, strides, dtype, device_type, device_index, pointer, _ITEMSIZE[dtype], is_torch)


def _from_cuda_array_interface(x, name: str) -> TensorInfo:
    try:
        interface = x.__cuda_array_interface__
    except Exception as error:  # torch raises for tensors that need grad, for example
        raise TensorArgumentError(f"{name} ({_type_name(x)}): reading its __cuda_array_interface__ failed with "
                                  f"{error!r}") from None
    if not isinstance(interface, dict) or "shape" not in interface or "typestr" not in interface:
        raise TensorArgumentError(f"{name} ({_type_name(x)}) has a __cuda_array_interface__ without 'shape' and "
                                  f"'typestr': {interface!r}")
    shape = _ints(interface["shape"], "shape", name, x)
    typestr = str(interface["typestr"])
    dtype = _TYPESTRS.get(typestr[1:])
    if dtype is None and hasattr(x, "dtype"):  # bfloat16 / fp8 arrays: the typestr is a void ("<V2")
        dtype = _element(x.dtype, name, x)
    if dtype is None:
        known = ", ".join(sorted(set(_TYPESTRS.values())))
        raise TensorArgumentError(f"{name} ({_type_name(x)}) has typestr {typestr!r} in its "
                                  f"__cuda_array_interface__, which tilefuse has no element type for; use one of: "
                                  f"{known} (or pass a torch tensor for bfloat16 and float8)")
    itemsize = _ITEMSIZE[dtype]
    byte_strides = interface.get("strides")
    if byte_strides is None:  # C-contiguous
        strides, step = [], 1
        for size in reversed(shape):
            strides.append(step)
            step *= size
        strides = tuple(reversed(strides))
    else:
        byte_strides = _ints(byte_strides, "strides", name, x)
        if len(byte_strides) != len(shape) or any(s % itemsize for s in byte_strides):
            raise TensorArgumentError(f"{name} ({_type_name(x)}) has byte strides {byte_strides} for shape {shape} "
                                      f"and {itemsize}-byte {dtype} elements; each stride must be a whole number "
                                      "of elements, one per dimension")
        strides = tuple(s // itemsize for s in byte_strides)
    data = interface.get("data")
    pointer = int(data[0]) if isinstance(data, (tuple, list)) and data and data[0] is not None else None
    device = _dlpack_device(x, name)
    if device is None:
        device_id = getattr(getattr(x, "device", None), "id", None)  # CuPy's cupy.cuda.Device
        device = ("cuda", int(device_id) if isinstance(device_id, numbers.Integral) else None)
    return TensorInfo(name, shape, strides, dtype, device[0], device[1], pointer, itemsize, False)


def _from_numpy(x, name: str) -> TensorInfo:
    dtype = _element(x.dtype, name, x)
    itemsize = int(x.itemsize)
    return TensorInfo(name, tuple(int(s) for s in x.shape), tuple(int(s) // itemsize for s in x.strides), dtype,
                      "cpu", None, int(x.ctypes.data), itemsize, False)


def _looks_like_torch(x) -> bool:
    return all(hasattr(x, attr) for attr in ("shape", "dtype", "device")) and \
        callable(getattr(x, "stride", None)) and callable(getattr(x, "data_ptr", None))


def describe(x, name: str = "tensor") -> TensorInfo:
    """A TensorInfo for `x`; a TensorArgumentError saying what `x` is when it is no tensor tilefuse reads."""
    torch = _torch_module()
    if torch is not None and isinstance(x, torch.Tensor):
        return _from_torch_like(x, name, is_torch=True)
    if hasattr(x, "__cuda_array_interface__"):
        return _from_cuda_array_interface(x, name)
    numpy = sys.modules.get("numpy")
    if numpy is not None and isinstance(x, numpy.ndarray):
        return _from_numpy(x, name)
    if _looks_like_torch(x):
        return _from_torch_like(x, name, is_torch=False)
    if hasattr(x, "__dlpack__") or hasattr(x, "__dlpack_device__"):
        raise TensorArgumentError(f"{name} has type {_type_name(x)}, which offers DLPack but neither torch's "
                                  "stride()/data_ptr() nor __cuda_array_interface__; pass torch.from_dlpack("
                                  f"{name}) or cupy.from_dlpack({name}) instead")
    raise TensorArgumentError(f"{name} has type {_type_name(x)} ({x!r:.60}), which is not a tensor; pass {_ACCEPTED}")


# ----------------------------------------------------------------------------------------------- GEMM


@dataclass(frozen=True)
class GemmOperands:
    """What check_gemm_operands found: the problem, each operand's layout and strides, and the device.

    D[l] = A[l] @ B[l] for l < batch, A: m x k, B: k x n, D: m x n. A batch stride of 0 means one matrix
    shared by the whole batch (a rank-2 operand, or a batch size of 1, beside rank-3 ones)."""

    m: int
    n: int
    k: int
    batch: int
    dtype: str  # of a and b
    device_index: int | None
    layout_a: str  # ROW_MAJOR or COLUMN_MAJOR
    layout_b: str
    lda: int
    ldb: int
    batch_stride_a: int
    batch_stride_b: int
    a: TensorInfo
    b: TensorInfo
    aligned: bool  # every data pointer, leading dimension and batch stride is a multiple of 16 bytes
    alignment_notes: tuple  # why not, one sentence per reason; the element-wise path runs either way
    layout_d: str | None = None
    ldd: int | None = None
    batch_stride_d: int | None = None
    d: TensorInfo | None = None

    def summary(self) -> str:
        """One line per operand and the alignment verdict, for describe() and error reports."""
        lines = [f"gemm m={self.m} n={self.n} k={self.k} batch={self.batch} {self.dtype} on cuda:"
                 f"{'?' if self.device_index is None else self.device_index}"]
        operands = [("a", self.layout_a, self.lda, self.batch_stride_a, self.a),
                    ("b", self.layout_b, self.ldb, self.batch_stride_b, self.b)]
        if self.d is not None:
            operands.append(("d", self.layout_d, self.ldd, self.batch_stride_d, self.d))
        for name, layout, ld, stride, info in operands:
            lines.append(f"  {name}: {layout} {'x'.join(map(str, info.shape))}, ld{name} = {ld}, "
                         f"batch stride {stride}")
        if self.aligned:
            lines.append("  16-byte aligned: yes (the 16-byte copy path can run)")
        else:
            lines.append("  16-byte aligned: no (the element-wise path runs): " + "; ".join(self.alignment_notes))
        return "\n".join(lines)


def matrix_layouts(shape, strides) -> dict:
    """{layout: ld} for every layout (ROW_MAJOR, COLUMN_MAJOR) a matrix of these last two sizes and strides is
    in; empty where it is in neither (no unit stride, or rows / columns that overlap).

    A dimension of size 1 has no meaningful stride (torch reports any value there), so a matrix with one
    row or one column is both layouts."""
    rows, cols = shape[-2:]
    row_stride, col_stride = strides[-2:]
    candidates = {}
    if cols == 1 or col_stride == 1:
        if rows == 1:
            candidates[ROW_MAJOR] = max(row_stride, cols)
        elif row_stride >= cols:
            candidates[ROW_MAJOR] = row_stride
    if rows == 1 or row_stride == 1:
        if cols == 1:
            candidates[COLUMN_MAJOR] = max(col_stride, rows)
        elif col_stride >= rows:
            candidates[COLUMN_MAJOR] = col_stride
    return candidates


def _matrix_layout(info: TensorInfo, prefer: str):
    """(layout, ld) of the last two dimensions of `info` (matrix_layouts; `prefer` picks where both fit: what
    the fast kernels want), or raise saying why neither layout fits."""
    candidates = matrix_layouts(info.shape, info.strides)
    if prefer in candidates:
        return prefer, candidates[prefer]
    if candidates:
        layout, ld = next(iter(candidates.items()))
        return layout, ld
    name, shape, strides = info.name, info.shape, info.strides
    rows, cols = shape[-2:]
    row_stride, col_stride = strides[-2:]
    if col_stride == 1 or row_stride == 1:
        layout, ld, packed = (ROW_MAJOR, row_stride, cols) if col_stride == 1 else (COLUMN_MAJOR, col_stride, rows)
        raise TensorArgumentError(f"{name} (shape {shape}, strides {strides}) is {layout} with leading dimension "
                                  f"{ld}, smaller than {packed}: its {'rows' if layout == ROW_MAJOR else 'columns'} "
                                  f"overlap (a stride of 0 comes from expand()); pass {name}.contiguous()")
    raise TensorArgumentError(f"{name} (shape {shape}, strides {strides}) has no dimension of stride 1 among its last "
                              f"two, so it is neither row-major nor column-major; pass {name}.contiguous() "
                              f"(row-major) or {name}.t().contiguous().t() (column-major)")


def _batch_stride(info: TensorInfo, batch: int, layout: str, ld: int, output: bool) -> int:
    rows, cols = info.shape[-2:]
    matrix = (rows if layout == ROW_MAJOR else cols) * ld
    if info.rank == 2 or batch == 1:
        return 0 if info.rank == 2 and batch > 1 else matrix
    if info.shape[0] == 1:
        return 0  # broadcast over the batch
    stride = info.strides[0]
    if stride < 0 or (stride != 0 and stride < matrix) or (output and stride == 0):
        least = f"at least {matrix}" if output else f"0 (one matrix shared) or at least {matrix}"
        raise TensorArgumentError(f"{info.name} (shape {info.shape}, strides {info.strides}) has batch stride "
                                  f"{stride}, which overlaps its {batch} matrices of {matrix} elements; it must be "
                                  f"{least}: pass {info.name}.contiguous()")
    return stride


def _alignment_notes(info: TensorInfo, ld: int, batch_stride: int, batch: int) -> list:
    notes = []
    if info.data_ptr is None:
        notes.append(f"{info.name}'s data pointer is unknown")
    elif info.data_ptr % FAST_PATH_ALIGNMENT:
        notes.append(f"{info.name}'s data pointer {info.data_ptr:#x} is not 16-byte aligned")
    if (ld * info.itemsize) % FAST_PATH_ALIGNMENT:
        notes.append(f"ld{info.name} = {ld} ({ld * info.itemsize} bytes) is not a multiple of 16 bytes")
    if batch > 1 and batch_stride and (batch_stride * info.itemsize) % FAST_PATH_ALIGNMENT:
        notes.append(f"{info.name}'s batch stride {batch_stride} ({batch_stride * info.itemsize} bytes) is not a "
                     "multiple of 16 bytes")
    return notes


def _check_devices(infos) -> int | None:
    for info in infos:
        if info.device_type not in CUDA_DEVICE_TYPES:
            target = next((i.device for i in infos if i.device_type in CUDA_DEVICE_TYPES and i.device_index
                           is not None), "cuda")
            raise TensorArgumentError(f"{info.name} is on {info.device}, but tilefuse's kernels run on a CUDA device; "
                                      f"move it there first (torch: {info.name}.to('{target}'), numpy: "
                                      f"cupy.asarray({info.name}))")
    known = [info for info in infos if info.device_index is not None]
    if len({info.device_index for info in known}) > 1:
        where = ", ".join(f"{info.name} on {info.device}" for info in infos)
        first = known[0]
        moves = ", ".join(f"{i.name}.to('{first.device}')" for i in known if i.device_index != first.device_index)
        raise TensorArgumentError(f"the operands are on different devices ({where}); put them all on one CUDA "
                                  f"device, e.g. {moves}")
    return known[0].device_index if known else None


def _dtype_set(allowed_dtypes) -> tuple:
    if isinstance(allowed_dtypes, str) or not hasattr(allowed_dtypes, "__iter__"):
        allowed_dtypes = (allowed_dtypes,)
    return tuple(dict.fromkeys(element_type(d, what="allowed_dtypes entry").name for d in allowed_dtypes))


def check_gemm_operands(a, b, d=None, *, allowed_dtypes, out_dtypes=None, mixed_fp8=False,
                        empty_k=False, empty_mn=False) -> GemmOperands:
    """Check a GEMM's operands D = A @ B: A (m, k), B (k, n), D (m, n), each optionally with a batch size in
    front (a rank-2 operand, or a batch size of 1, is shared by the batch). `allowed_dtypes`: the element
    types the operation takes for a and b (names or torch / numpy dtypes); `out_dtypes`: the same for d;
    (None: any). empty_k: k = 0 is allowed (the caller pads k, so that the epilogue sees acc = 0, as torch's
    a @ b is 0); empty_mn: m, n or the batch may be 0 (nothing to read or write: layouts and alignment are not
    checked, and the result has no layouts). Raises TensorArgumentError for what the kernels cannot take; misalignment is reported in
    the result (`aligned`, `alignment_notes`), not refused. mixed_fp8: a and b may be different FP8 types
    (e4m3 x e5m2, as torch._scaled_mm allows); the result's dtype is a's, b's is b.dtype."""
    infos = [describe(a, "a"), describe(b, "b")] + ([describe(d, "d")] if d is not None else [])
    ia, ib = infos[0], infos[1]
    for info, dims in ((ia, "(m, k)"), (ib, "(k, n)")):
        if info.rank not in (2, 3):
            raise TensorArgumentError(f"{info.name} has shape {info.shape} (rank {info.rank}); a GEMM operand is "
                                      f"{dims} or (batch, {dims[1:-1]}) with a batch size in front")
    m, k = ia.shape[-2:]
    kb, n = ib.shape[-2:]
    if k != kb:
        raise TensorArgumentError(f"a has shape {ia.shape} and b has shape {ib.shape}: a's columns (k = {k}) must "
                                  f"equal b's rows ({kb}) for a @ b; transpose or reshape one of them")
    batches = {info.shape[0] for info in (ia, ib) if info.rank == 3} - {1}
    if len(batches) > 1:
        raise TensorArgumentError(f"a has shape {ia.shape} and b has shape {ib.shape}: their batch sizes "
                                  f"{sorted(batches)} differ; they must be equal (or 1, or the operand rank 2, "
                                  "to share one matrix)")
    batch = batches.pop() if batches else 1
    batched = ia.rank == 3 or ib.rank == 3
    empty = min(m, n, batch) < 1
    if (empty and not empty_mn) or (k < 1 and not empty_k):
        raise TensorArgumentError(f"a has shape {ia.shape} and b has shape {ib.shape}: the problem (m, n, k, batch)"
                                  f" = ({m}, {n}, {k}, {batch}) is empty; tilefuse needs every size >= 1 (skip the "
                                  "call, or fill d yourself when k = 0)")

    fp8 = ("float8_e4m3", "float8_e5m2")
    if ia.dtype != ib.dtype and not (mixed_fp8 and ia.dtype in fp8 and ib.dtype in fp8):
        raise TensorArgumentError(f"a has dtype {ia.dtype} and b has dtype {ib.dtype}; both operands must have the "
                                  "same element type: convert one (torch: b.to(a.dtype))")
    allowed = _dtype_set(allowed_dtypes)
    if ia.dtype not in allowed or ib.dtype not in allowed:
        raise TensorArgumentError(f"a and b have dtype {ia.dtype}, which this operation does not take; use one of: "
                                  f"{', '.join(allowed)}")
    device_index = _check_devices(infos)
    if empty:
        return GemmOperands(m=m, n=n, k=k, batch=batch, dtype=ia.dtype, device_index=device_index, layout_a=None,
                            layout_b=None, lda=None, ldb=None, batch_stride_a=None, batch_stride_b=None, a=ia, b=ib,
                            aligned=True, alignment_notes=(), layout_d=None, ldd=None, batch_stride_d=None, d=None)

    layout_a, lda = _matrix_layout(ia, ROW_MAJOR)
    layout_b, ldb = _matrix_layout(ib, COLUMN_MAJOR)  # row-major A with column-major B is the Hopper kernel's
    stride_a = _batch_stride(ia, batch, layout_a, lda, output=False)
    stride_b = _batch_stride(ib, batch, layout_b, ldb, output=False)
    notes = _alignment_notes(ia, lda, stride_a, batch) + _alignment_notes(ib, ldb, stride_b, batch)

    layout_d = ldd = stride_d = id_ = None
    if d is not None:
        id_ = infos[2]
        expected = (batch, m, n) if batched else (m, n)
        if id_.shape != expected:
            raise TensorArgumentError(f"d has shape {id_.shape}, but a {ia.shape} @ b {ib.shape} gives {expected}; "
                                      f"allocate d with shape {expected}")
        if out_dtypes is not None and id_.dtype not in _dtype_set(out_dtypes):
            raise TensorArgumentError(f"d has dtype {id_.dtype}, which this operation cannot store; use one of: "
                                      f"{', '.join(_dtype_set(out_dtypes))}")
        layout_d, ldd = _matrix_layout(id_, ROW_MAJOR)
        stride_d = _batch_stride(id_, batch, layout_d, ldd, output=True)
        notes += _alignment_notes(id_, ldd, stride_d, batch)

    return GemmOperands(m=m, n=n, k=k, batch=batch, dtype=ia.dtype, device_index=device_index,
                        layout_a=layout_a, layout_b=layout_b, lda=lda, ldb=ldb, batch_stride_a=stride_a,
                        batch_stride_b=stride_b, a=ia, b=ib, aligned=not notes, alignment_notes=tuple(notes),
                        layout_d=layout_d, ldd=ldd, batch_stride_d=stride_d, d=id_)


# ----------------------------------------------------------------------------------------------- Conv


def _dense_in_order(shape, strides, order) -> bool:
    """Whether the tensor is packed with dimension order[0] fastest, order[1] next, ...; dimensions of size 1
    are skipped, as torch's is_contiguous(memory_format=...) skips them (their stride never matters). The same
    rule as torch's, including for empty tensors, so that torch and duck-typed inputs get the same answer."""
    expected = 1
    for dim in order:
        if shape[dim] == 1:
            continue
        if strides[dim] != expected:
            return False
        expected *= shape[dim]
    return True


_CHANNELS_LAST_ORDER = (1, 3, 2, 0)  # shape (N, C, H, W) stored NHWC: C fastest, then W, H, N
_ROW_MAJOR_ORDER = (3, 2, 1, 0)


def is_channels_last(info: TensorInfo, shape_order: str = "NCHW") -> bool:
    """Whether a 4-D tensor is NHWC in memory and packed. shape_order "NCHW": its shape is (N, C, H, W) as
    torch reports a channels-last tensor (strides (H*W*C, 1, W*C, C)); "NHWC": its shape is (N, H, W, C)
    and it is row-major contiguous (strides (H*W*C, W*C, C, 1)). Sizes of 1 (C = 1, or H = W = 1) make
    both memory formats the same bytes; such tensors count as NHWC, as torch counts them."""
    order = _CHANNELS_LAST_ORDER if shape_order == "NCHW" else _ROW_MAJOR_ORDER
    return info.rank == 4 and _dense_in_order(info.shape, info.strides, order)


def _expected_strides(shape, order) -> tuple:
    strides, step = [0] * 4, 1
    for dim in order:
        strides[dim] = step
        step *= shape[dim]
    return tuple(strides)


def _nhwc_view(info):
    """Whether an (N, C, H, W) tensor is laid out NHWC in memory, gaps allowed: channels innermost with unit
    stride, then W, H and N, each stepping past the one inside it (a view of channels-last storage)."""
    dims = [(size, stride) for axis in (1, 3, 2, 0)  # C, W, H, N: innermost first
            for size, stride in [(info.shape[axis], info.strides[axis])] if size > 1]
    if info.shape[1] > 1 and info.strides[1] != 1:
        return False
    reach = 1
    for size, stride in dims:
        if stride < reach:
            return False
        reach = stride * size
    return True


def check_conv_activation(x, name: str = "x", *, layout: str = "require", shape_order: str = "NCHW"):
    """Return `x` as an NHWC tensor for a convolution: `x` itself when it already is one, a channels-last
    copy when `layout="convert"` (torch tensors only), else a TensorArgumentError naming the expected
    memory format and the fix. shape_order="NHWC" is for arrays whose shape itself is (N, H, W, C)
    (CuPy, Numba); torch's convention is the default, (N, C, H, W) stored channels-last."""
    if layout not in CONV_LAYOUT_MODES:
        raise TensorArgumentError(f"layout={layout!r} is not a layout mode; use one of: "
                                  f"{', '.join(repr(m) for m in CONV_LAYOUT_MODES)} ('require' refuses tensors "
                                  "that are not NHWC in memory, 'convert' copies them to channels-last)")
    if shape_order not in SHAPE_ORDERS:
        raise TensorArgumentError(f"shape_order={shape_order!r} is not a shape order; use one of: "
                                  f"{', '.join(repr(s) for s in SHAPE_ORDERS)}")
    info = describe(x, name)
    dims = "(N, C, H, W)" if shape_order == "NCHW" else "(N, H, W, C)"
    if info.rank != 4:
        raise TensorArgumentError(f"{name} has shape {info.shape} (rank {info.rank}); a convolution's activation is "
                                  f"4-D, {dims}, stored NHWC")
    torch = _torch_module() if info.is_torch else None
    if torch is not None and shape_order == "NCHW":
        ok = x.is_contiguous(memory_format=torch.channels_last)
    else:
        ok = is_channels_last(info, shape_order)
    if ok:
        return x
    if torch is not None and shape_order == "NCHW" and _nhwc_view(info):
        # A strided or sliced view of channels-last storage (x[:, :, 1:], a crop, every other image): NHWC
        # in memory order, not packed. torch's own conv copies such a view; so does this, into packed NHWC.
        return x.contiguous(memory_format=torch.channels_last)
    order = _CHANNELS_LAST_ORDER if shape_order == "NCHW" else _ROW_MAJOR_ORDER
    want = _expected_strides(info.shape, order)
    if layout == "require":
        if shape_order == "NCHW":
            found = ("NCHW-contiguous (torch.contiguous_format)"
                     if _dense_in_order(info.shape, info.strides, _ROW_MAJOR_ORDER) else "neither NHWC nor NCHW packed")
            fix = (f"{name} = {name}.contiguous(memory_format=torch.channels_last), or pass layout=\"convert\" to let "
                   "tilefuse copy it" if info.is_torch else
                   "make it NHWC yourself (e.g. an (N, H, W, C) C-contiguous array, passed with shape_order=\"NHWC\"); "
                   "layout=\"convert\" needs a torch tensor")
            raise TensorArgumentError(f"{name} must be NHWC in memory (torch.channels_last memory format): for shape "
                                      f"{info.shape} {dims} the strides must be {want}, but they are {info.strides}, "
                                      f"{found}; {fix}")
        fix = (f"{name} = {name}.contiguous(), or pass layout=\"convert\"" if info.is_torch else
               f"make it C-contiguous (cupy.ascontiguousarray({name})); layout=\"convert\" needs a torch tensor")
        raise TensorArgumentError(f"{name} has shape {info.shape} {dims} and must be packed row-major (NHWC): strides "
                                  f"{want}, but they are {info.strides}; {fix}")
    if not info.is_torch:
        raise TensorArgumentError(f"{name} has type {_type_name(x)}; layout=\"convert\" needs a torch tensor "
                                  f"(conversion needs torch). Make it NHWC yourself: strides {want} for shape "
                                  f"{info.shape} {dims}")
    if shape_order == "NCHW":
        return x.contiguous(memory_format=torch.channels_last)
    return x.contiguous()


def torch_dtype(dtype):
    """The torch dtype of a tilefuse element type (a name, alias, or a torch dtype, which is returned as is)."""
    torch = _import_torch("torch_dtype")
    if isinstance(dtype, torch.dtype):
        return dtype
    try:
        name = element_type(dtype).name
    except ValueError as error:
        raise TensorArgumentError(str(error)) from None
    if name == "tfloat32":
        raise TensorArgumentError("dtype tfloat32 has no torch dtype: tf32 data is stored as torch.float32; "
                                  "pass \"float32\"")
    return getattr(torch, {"float8_e4m3": "float8_e4m3fn"}.get(name, name))


def empty_channels_last(shape_nchw, dtype, device):
    """A new uninitialized torch tensor of shape (N, C, H, W) stored NHWC (torch.channels_last), for a
    convolution's output. `device`: "cuda:1", a torch.device, or a CUDA device index. Needs torch."""
    torch = _import_torch("empty_channels_last")
    try:
        shape = tuple(shape_nchw)
    except TypeError:
        shape = None
    if shape is None or len(shape) != 4 or not all(isinstance(s, numbers.Integral) and not isinstance(s, bool)
                                                    and s >= 0 for s in shape):
        raise TensorArgumentError(f"shape_nchw={shape_nchw!r} is not a 4-D shape; pass (N, C, H, W) as "
                                  "non-negative integers")
    if isinstance(device, numbers.Integral) and not isinstance(device, bool):
        device = f"cuda:{int(device)}"
    return torch.empty(tuple(int(s) for s in shape), dtype=torch_dtype(dtype), device=device,
                       memory_format=torch.channels_last)
