"""tilefuse.Gemm's skinny family: a few rows (m <= 16) with A row-major and B K-major, 16-byte-aligned rows, where
the C++ planner picks it (gemm::plan_gemm, family "skinny"): B streamed once into mma.sync
(gemm/kernel/skinny_gemm.h), launched as gemm::Gemm launches it (gemm/device/skinny_launch.hpp)."""
import dataclasses
import struct
from dataclasses import dataclass

from .kernel_params import Launch, kernel_origin, loaded_on, pack_epilogue, parse_header, parse_nodes

LAYOUT_VERSION, LAYOUT_HEADER = 1, 16  # gemm/kernel/skinny_params_layout.h
_FIELDS = ("version", "size", "threads", "columns", "max_rows", "m", "n", "k", "batch", "a", "lda", "batch_stride_a",
           "b", "ldb", "batch_stride_b", "node_count")
_MAX_NODES = 64


def parse_skinny_layout(words):
    """The dict of the skinny GEMM's layout kernel's output (include/tilefuse/gemm/kernel/skinny_params_layout.h)."""
    layout = parse_header(words, _FIELDS, LAYOUT_VERSION, "skinny GEMM")
    layout["nodes"] = parse_nodes(words, LAYOUT_HEADER, layout["node_count"])
    return layout


@dataclass
class SkinnyOperation:
    """A compiled skinny GEMM kernel for one tree and element type; `describe()` gives the planner's words."""

    element: str
    cpp_tree: str
    cached: object  # tilefuse.jit CachedKernel
    why: str
    arch: str
    loaded: dict = None

    def describe(self):
        return (f"{self.why}; {self.element} operands, {self.arch}; kernel from the {kernel_origin(self.cached)} "
                f"({self.cached.path}); epilogue {self.cpp_tree}")

    def kernel_on(self, device):
        """(kernel, layout dict) on `device`, loading the CUBIN there the first time."""
        from .kernel_params import NODE_WORDS

        kernel, _, layout = loaded_on(self, device, LAYOUT_HEADER + NODE_WORDS * _MAX_NODES, parse_skinny_layout)
        return kernel, layout


_COMPILED = {}  # (tree, element, arch) -> SkinnyOperation, shared by every Gemm of this process


def compiled_skinny(tree_text, tree, graph, element, why, arch):
    """The SkinnyOperation of a tree (compiled, or from the caches, once per process), with this plan's why."""
    from .jit import gemm_skinny_kernel

    key = (tree_text, element, arch)
    if key not in _COMPILED:
        cached = gemm_skinny_kernel(tree, element, arch=arch)
        operation = SkinnyOperation(element, tree_text, cached, why, arch, loaded={})
        operation.graph, operation.tree = graph, tree
        _COMPILED[key] = operation
    shared = _COMPILED[key]
    planned = dataclasses.replace(shared, why=why)  # the CUBIN's loads shared
    planned.graph, planned.tree = shared.graph, shared.tree
    return planned


def skinny_launch(operation, kernel, layout, ops, arguments, outputs):
    """The kernel's Launch, packed as launch_skinny packs it: grid (ceil(n / columns), 1, batch)."""
    params = bytearray(layout["size"])
    for field, value in (("m", ops.m), ("n", ops.n), ("k", ops.k), ("batch", ops.batch), ("lda", ops.lda),
                         ("ldb", ops.ldb), ("batch_stride_a", ops.batch_stride_a),
                         ("batch_stride_b", ops.batch_stride_b)):
        struct.pack_into("<q", params, layout[field], value)
    launch = Launch(kernel.kernel, -(-ops.n // layout["columns"]), layout["threads"], 0, ops.batch)
    launch.pointers += [(layout["a"], "a"), (layout["b"], "b")]
    pack_epilogue(params, layout["nodes"], arguments, outputs, ops.device_index, ops.batch, record=launch)
    launch.template = bytes(params)
    return launch
