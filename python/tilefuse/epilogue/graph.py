"""The traced epilogue: a DAG of nodes in which every distinct expression appears once.

Ops (a node's `op`):
  leaves   acc, scalar(name), constant(value), row_broadcast(name), col_broadcast(name), aux_load(name),
           row, col, batch
  compute  the keys of COMPUTE_OPS below (same meaning as the C++ op of the same row)
Outputs are stores (a matrix of the output's shape) or reductions (one value per row or column).
"""
import struct
from dataclasses import dataclass, field

# Python op -> (C++ alias in compute.h, arity). The one table both lowering and docs rely on.
COMPUTE_OPS = {
    "add": ("Add", 2), "sub": ("Sub", 2), "mul": ("Mul", 2), "div": ("Div", 2),
    "floordiv": ("FloorDiv", 2), "mod": ("Mod", 2),
    "minimum": ("Min", 2), "maximum": ("Max", 2),
    "lt": ("Less", 2), "le": ("LessEqual", 2), "gt": ("Greater", 2), "ge": ("GreaterEqual", 2),
    "eq": ("Equal", 2), "ne": ("NotEqual", 2),
    "leaky_relu": ("LeakyRelu", 2),
    "neg": ("Negate", 1), "abs": ("Abs", 1), "exp": ("Exp", 1), "tanh": ("Tanh", 1), "relu": ("Relu", 1),
    "sigmoid": ("Sigmoid", 1), "silu": ("Silu", 1), "gelu": ("GeluErf", 1), "gelu_tanh": ("GeluTanh", 1),
    "clamp": ("Clamp", 3), "where": ("Where", 3),
}
LEAF_OPS = ("acc", "scalar", "constant", "row_broadcast", "col_broadcast", "aux_load", "row", "col", "batch")
NAMED_LEAF_OPS = ("scalar", "row_broadcast", "col_broadcast", "aux_load")

# Reduction kind -> C++ reduce:: struct.
REDUCTIONS = {"sum": "Sum", "max": "Max", "absmax": "AbsMax"}


@dataclass(frozen=True)
class Node:
    """One expression. `inputs` are indices of earlier nodes of the same graph; `name` is set for named
    leaves, `value` for constants."""

    op: str
    inputs: tuple = ()
    name: str | None = None
    value: float | None = None


@dataclass(frozen=True)
class Input:
    """A run-time argument of the epilogue.

    kind: "scalar", "row_broadcast" (one value per output column, e.g. a bias: shape (n,)),
    "col_broadcast" (one per output row: shape (m, 1)) or "aux_load" (the output's shape).
    dtype: the element type name, or None to use the epilogue's element type.
    """

    name: str
    kind: str
    dtype: str | None = None
    shape: tuple | None = None


@dataclass(frozen=True)
class Output:
    """A result: kind "store" (a matrix) or "row_reduce" / "col_reduce" (one float per row / column)."""

    name: str
    kind: str
    node: int
    reduction: str | None = None  # a key of REDUCTIONS for reductions
    dtype: str | None = None  # stores only; None: the epilogue's element type


@dataclass
class Graph:
    """nodes[i] only uses nodes before it. `outputs` are in the order the function returned them;
    `root` names the store that becomes the C++ tree's root (D)."""

    nodes: list = field(default_factory=list)
    inputs: dict = field(default_factory=dict)  # name -> Input, in parameter order
    outputs: dict = field(default_factory=dict)  # name -> Output
    root: str = "D"
    function_name: str = "<epilogue>"
    shape: tuple | None = None  # the output's (m, n) when acc's spec gave it

    def __str__(self):
        lines = [f"epilogue {self.function_name}(" + ", ".join(self._describe_input(i) for i in self.inputs.values()) + ")"]
        for index, node in enumerate(self.nodes):
            args = [f"%{i}" for i in node.inputs]
            if node.name is not None:
                args.append(repr(node.name))
            if node.value is not None:
                args.append(repr(node.value))
            lines.append(f"  %{index} = {node.op}({', '.join(args)})")
        for out in self.outputs.values():
            what = out.kind if out.reduction is None else f"{out.kind}[{out.reduction}]"
            lines.append(f"  {out.name} = {what}(%{out.node})" + ("  # root" if out.name == self.root else ""))
        return "\n".join(lines)

    @staticmethod
    def _describe_input(i):
        return f"{i.name}: {i.kind}" + (f"<{i.dtype}>" if i.dtype else "")

    def users(self, index):
        """How many nodes and outputs use node `index`."""
        count = sum(node.inputs.count(index) for node in self.nodes)
        return count + sum(1 for out in self.outputs.values() if out.node == index)


class GraphBuilder:
    """Adds nodes, returning the index of an equal node when one exists (so an expression written twice,
    or a variable used twice, is one node)."""

    def __init__(self):
        self.graph = Graph()
        self._index = {}

    def add(self, node: Node) -> int:
        # Constants are keyed by their bits: 0.0 and -0.0 differ, and NaN equals itself.
        bits = None if node.value is None else struct.pack("f", node.value)
        key = (node.op, node.inputs, node.name, bits)
        index = self._index.get(key)
        if index is None:
            index = len(self.graph.nodes)
            self.graph.nodes.append(node)
            self._index[key] = index
        return index
