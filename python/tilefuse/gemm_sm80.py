"""tilefuse.Gemm's sm80 family: the mma.sync kernel (gemm::sm80::GemmKernel, any of the four layouts, sm_80 and
newer) where the C++ planner picks it (gemm::plan_gemm: a GPU other than sm_90, or kernel="sm80"), launched as
gemm::Gemm launches it (gemm/device/sm80_launch.hpp: launch_tiled, then the split-K pass when K is split).
"""
import dataclasses
import struct
from dataclasses import dataclass

from .kernel_params import (NODE_WORDS, Launch, kernel_origin, loaded_on, pack_epilogue, parse_header, parse_nodes,
                            split_k_lanes)
from .tensors import ROW_MAJOR

LAYOUT_VERSION, LAYOUT_HEADER, LAYOUT_NODES = 1, 32, 64  # gemm/kernel/sm80_params_layout.h
_FIELDS = ("version", "size", "threads", "smem_bytes", "tile_m", "tile_n", "tile_k", "m", "n", "k", "batch", "a",
           "lda", "batch_stride_a", "b", "ldb", "batch_stride_b", "split_k", "k_per_split", "partials", "tiles_m",
           "tiles_n", "node_count", "reduce_size", "reduce_m", "reduce_n", "reduce_k", "reduce_batch",
           "reduce_split_k", "reduce_partials", "reduce_epilogue", "reduce_node_count")
_PASS_THREADS = 256  # gemm::kSplitKEpilogueThreads


def parse_sm80_layout(words):
    """The dict of an sm80 GEMM layout kernel's output (include/tilefuse/gemm/kernel/sm80_params_layout.h)."""
    layout = parse_header(words, _FIELDS, LAYOUT_VERSION, "sm80 GEMM")
    layout["nodes"] = parse_nodes(words, LAYOUT_HEADER, layout["node_count"])
    layout["reduce_nodes"] = parse_nodes(words, LAYOUT_HEADER + NODE_WORDS * LAYOUT_NODES, layout["reduce_node_count"])
    return layout


@dataclass
class Sm80Operation:
    """A compiled sm80 GEMM kernel for one plan: config and tile, layouts, path, split, the JIT's cached kernel
    and its loads per device. `describe()` says which kernel and why (the planner's words)."""

    element: str
    cpp_tree: str
    cached: object  # tilefuse.jit CachedKernel
    why: str
    config: str
    tile: tuple  # (m, n, k)
    layouts: tuple  # (A's, B's): "row" or "column"
    aligned: bool
    arch: str
    split_k: int = 1
    loaded: dict = None
    strides: tuple = (0, 0, 1, 0, 0)  # (lda, ldb, batch, batch stride a, b) of the plan, for describe()

    def describe(self):
        """gemm::Gemm::describe()'s text of the plan (tilefuse._C.describe_gemm_sm80: config, path and why, split,
        why the Hopper kernel is not used), then the layouts, the architecture and where the kernel came from."""
        from . import _C

        text = _C.describe_gemm_sm80(self.config, self.element, self.aligned, self.split_k, self.why, *self.strides)
        return (f"{text}; A {self.layouts[0]}-major, B {self.layouts[1]}-major, {self.arch}; kernel from the "
                f"{kernel_origin(self.cached)} ({self.cached.path}); epilogue {self.cpp_tree}")

    def kernel_on(self, device):
        """(kernel, split-K pass, layout dict) on `device`, loading the CUBIN there the first time."""
        kernel, others, layout = loaded_on(self, device, LAYOUT_HEADER + NODE_WORDS * LAYOUT_NODES, parse_sm80_layout)
        return kernel, others["split_k"], layout


_COMPILED = {}  # (tree, element, config, layouts, aligned, arch) -> Sm80Operation, shared by every Gemm


def compiled_sm80(tree_text, tree, graph, element, plan, layouts, arch, strides=(0, 0, 1, 0, 0)):
    """The Sm80Operation of the planner's sm80 plan for this tree (compiled once per process, from the disk cache
    or NVRTC), with this problem's split, why and strides ((lda, ldb, batch, batch stride a, b): describe())."""
    from .jit import gemm_sm80_kernel

    aligned = plan["sm80_aligned"]
    key = (tree_text, element, plan["sm80_config"], layouts, aligned, arch)
    if key not in _COMPILED:
        cached = gemm_sm80_kernel(tree, element, plan["sm80_config"], *layouts, aligned, arch=arch)
        operation = Sm80Operation(element, tree_text, cached, "", plan["sm80_config"], tuple(plan["sm80_tile"]),
                                  layouts, aligned, arch, loaded={})
        operation.graph, operation.tree = graph, tree
        _COMPILED[key] = operation
    shared = _COMPILED[key]
    planned = dataclasses.replace(shared, why=plan["why"], split_k=plan["split_k"], strides=tuple(strides))  # loads shared
    planned.graph, planned.tree = shared.graph, shared.tree
    return planned


def layout_names(ops):
    """("row" | "column", "row" | "column") of A and B as the kernel's template names them."""
    return tuple("row" if layout == ROW_MAJOR else "column" for layout in (ops.layout_a, ops.layout_b))


def sm80_launches(operation, kernel, split_kernel, layout, ops, arguments, outputs):
    """The kernel's Launch and, when K is split, the pass's, packed as launch_tiled packs them; with the float32
    elements of the partials' workspace ([split][batch][m][n], not zeroed: every split writes its whole tile)."""
    m, n, k, batch, splits = ops.m, ops.n, ops.k, ops.batch, operation.split_k
    tm, tn, tk = layout["tile_m"], layout["tile_n"], layout["tile_k"]
    params = bytearray(layout["size"])
    for field, value in (("m", m), ("n", n), ("k", k), ("batch", batch), ("lda", ops.lda), ("ldb", ops.ldb),
                         ("batch_stride_a", ops.batch_stride_a), ("batch_stride_b", ops.batch_stride_b),
                         ("k_per_split", -(-(-(-k // tk)) // splits) * tk)):
        struct.pack_into("<q", params, layout[field], value)
    tiles_m, tiles_n = -(-m // tm), -(-n // tn)
    for field, value in (("split_k", splits), ("tiles_m", tiles_m), ("tiles_n", tiles_n)):
        struct.pack_into("<i", params, layout[field], value)
    main = Launch(kernel.kernel, tiles_m * tiles_n, layout["threads"], layout["smem_bytes"], batch * splits)
    main.pointers += [(layout["a"], "a"), (layout["b"], "b")]
    if splits > 1:
        main.pointers.append((layout["partials"], "partials"))
    pack_epilogue(params, layout["nodes"], arguments, outputs, ops.device_index, batch, record=main)
    main.template = bytes(params)
    if splits == 1:
        return [main], 0
    reduce = bytearray(layout["reduce_size"])
    for field, value in (("reduce_m", m), ("reduce_n", n), ("reduce_k", k), ("reduce_batch", batch)):
        struct.pack_into("<q", reduce, layout[field], value)
    struct.pack_into("<i", reduce, layout["reduce_split_k"], splits)
    vectors = batch * m * -(-n // 8)
    blocks = min(-(-vectors * split_k_lanes(vectors, splits) // _PASS_THREADS), 65535)
    second = Launch(split_kernel.kernel, blocks, _PASS_THREADS, 0)
    second.pointers.append((layout["reduce_partials"], "partials"))
    pack_epilogue(reduce, layout["reduce_nodes"], arguments, outputs, ops.device_index, batch, record=second)
    second.template = bytes(reduce)
    return [main, second], splits * batch * m * n
