"""Packing a JIT-compiled kernel's Params as bytes: what tilefuse.Gemm and tilefuse.Conv2d share.

A kernel's Params type exists only inside NVRTC's compile, so its CUBIN also holds a layout kernel that
writes where each field lives (gemm/kernel/sm90_params_layout.h, conv/kernel/conv_params_layout.h); the
epilogue part of both layouts is the same (epilogue/params_layout.h) and is read and filled here.
"""
import functools
import struct

from .errors import TensorArgumentError

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


def torch_module():
    import torch
    return torch


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


def spec_key(value):
    """What of an argument a plan depends on: a scalar's kind, a tensor's shape and dtype."""
    if isinstance(value, (int, float)):
        return ("scalar",)
    return ("tensor", tuple(getattr(value, "shape", ())), str(getattr(value, "dtype", "")))


def allocate_reduction(out, length, batch, device):
    """A reduction output of `length` floats per batch entry, started at the reduction's identity."""
    torch = torch_module()
    shape = (batch, length) if batch > 1 else (length,)
    return torch.full(shape, IDENTITY[out.reduction], dtype=torch.float32, device=device)


def pack_epilogue(params, nodes, arguments, outputs, device_index, batch):
    """Writes every named node's scalar value, or its tensor's pointer, ld and batch stride, into params.
    Tensors are the (rows, cols) matrices and vectors the epilogue sees (a conv passes matrix views)."""
    for node in nodes:
        name, kind = node["name"], node["kind"]
        if kind == "scalar":
            struct.pack_into("<f", params, node["value"], float(arguments[name]))
            continue
        tensor = outputs[name] if kind in OUTPUT_KINDS else arguments[name]
        data, ld, batch_stride = node_strides(name, kind, tensor, device_index, batch)
        struct.pack_into("<Q", params, node["data"], data)
        if node["ld"] >= 0:
            struct.pack_into("<q", params, node["ld"], ld)
        if node["batch_stride"] >= 0:
            struct.pack_into("<q", params, node["batch_stride"], batch_stride)


def node_strides(name, kind, tensor, device_index, batch):
    """(data pointer, ld, batch stride) of an epilogue tensor, checked against the problem."""
    torch = torch_module()
    if not isinstance(tensor, torch.Tensor):
        raise TensorArgumentError(f"epilogue argument {name!r} must be a torch tensor on cuda:{device_index}")
    if tensor.device != torch.device("cuda", device_index):
        raise TensorArgumentError(f"epilogue argument {name!r} is on {tensor.device}, the kernel runs on "
                                  f"cuda:{device_index}; move it with .to('cuda:{device_index}')")
    shape, strides = tuple(tensor.shape), tuple(tensor.stride())
    if kind in ("store", "aux_load"):
        if strides[-1] != 1 and shape[-1] != 1:
            raise TensorArgumentError(f"epilogue argument {name!r} (shape {shape}, strides {strides}) must have unit "
                                      "stride along its last dimension; pass .contiguous()")
        ld = strides[-2] if len(shape) >= 2 else shape[-1]
        batch_stride = strides[0] if len(shape) == 3 and shape[0] > 1 else 0
        return tensor.data_ptr(), ld, batch_stride
    # Vectors: a row broadcast is (n,), (1, n), (b, n) or (b, 1, n); a column broadcast (m, 1) or (b, m, 1);
    # a reduction output (n,) / (m,) or (b, n) / (b, m). The first dimension is the batch when there is one.
    if shape and shape[-1] != 1 and strides[-1] != 1:
        raise TensorArgumentError(f"epilogue argument {name!r} (shape {shape}, strides {strides}) must be contiguous "
                                  "along its length; pass .contiguous()")
    has_batch = len(shape) == 3 or (len(shape) == 2 and kind in ("row_broadcast", "row_reduce", "col_reduce")
                                     and shape[0] > 1)
    return tensor.data_ptr(), 0, strides[0] if has_batch and batch > 1 else 0
