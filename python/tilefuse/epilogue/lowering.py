"""to_cpp(graph): the C++ type of the epilogue tree, and the named arguments it takes.

The graph is a DAG; a C++ tree is a tree, so a node used twice is written out twice (the C++ type
spells it twice and the tree evaluates it twice; pure math is usually merged by the compiler, loads are
repeated). Outputs other than the root are sinks, which pass their input through: each is wrapped
around the first place (in evaluation order) its value appears in the root's expression, and only
there, so a reduction never counts an element twice. An output whose value is not part of the root's
expression is attached as Where<Constant<1.0f>, Root, Side>: the tree visits both (sinks write) and
keeps the root's value.
"""
import math
from dataclasses import dataclass

from ..dtypes import element_type
from .graph import COMPUTE_OPS, REDUCTIONS, Graph

NS = "tilefuse::epilogue::"


@dataclass(frozen=True)
class Argument:
    """One name EpilogueArguments<Tree>::set takes.

    kind: scalar, row_broadcast, col_broadcast, aux_load (inputs) or store, row_reduce, col_reduce
    (outputs). dtype: the element type name (None for scalars; float32 for reductions).
    """

    name: str
    kind: str
    dtype: str | None

    @property
    def is_output(self):
        return self.kind in ("store", "row_reduce", "col_reduce")


class CppEpilogue(str):
    """The C++ type of the tree (this string), with `arguments` (tuple of Argument, in the order C++'s
    EpilogueArguments<Tree>::argument_names() lists them) and `pretty` (the same type, indented)."""

    arguments: tuple
    pretty: str

    @property
    def argument_names(self):
        return [a.name for a in self.arguments]


@dataclass
class _Type:
    """A C++ template-id under construction: name<args...>; `argument` is set for named nodes."""

    name: str
    args: tuple = ()
    argument: Argument | None = None

    def render(self, indent=None, depth=0):
        if not self.args:
            return self.name
        flat = f"{self.name}<{', '.join(a.render() if isinstance(a, _Type) else a for a in self.args)}>"
        if indent is None or indent * depth + len(flat) <= 100:  # short enough for one line
            return flat
        parts = [a.render(indent, depth + 1) if isinstance(a, _Type) else a for a in self.args]
        pad = " " * (indent * (depth + 1))
        return f"{self.name}<\n" + ",\n".join(pad + p for p in parts) + ">"

    def walk(self):
        yield self
        for a in self.args:
            if isinstance(a, _Type):
                yield from a.walk()


def to_cpp(graph, element="bfloat16", *, elements=None, qualified=True) -> CppEpilogue:
    """The C++ epilogue tree for `graph` (from trace()).

    element: the element type of stored outputs and of tensor inputs whose spec had no dtype
    ("bfloat16", "bfloat16_t", torch.bfloat16, ...). elements: per-name overrides, e.g.
    {"aux": "float32"}. qualified=False drops the tilefuse::epilogue:: prefix (for code that says
    `using namespace tilefuse::epilogue`).
    """
    if not isinstance(graph, Graph):
        raise TypeError(f"to_cpp(graph, ...): graph must be what tilefuse.epilogue.trace returns, got "
                        f"{type(graph).__name__}")
    default = _epilogue_type(element, "element")
    overrides = {}
    for name, dtype in (elements or {}).items():
        if name not in graph.inputs and name not in graph.outputs:
            raise ValueError(f"to_cpp(..., elements=...): {name!r} is neither an input nor an output of the epilogue; "
                             f"its names are: {', '.join([*graph.inputs, *graph.outputs])}")
        if graph.outputs.get(name) is not None and graph.outputs[name].kind != "store":
            raise ValueError(f"to_cpp(..., elements=...): {name!r} is a reduction, whose output is always float32")
        overrides[name] = _epilogue_type(dtype, f"elements[{name!r}]")
    ns = NS if qualified else ""
    lowering = _Lowering(graph, default, overrides, ns)
    tree = lowering.tree()
    cpp = CppEpilogue(tree.render())
    cpp.pretty = tree.render(indent=2)
    seen, arguments = set(), []
    for t in tree.walk():  # parents before children, left to right: argument_names()'s order
        if t.argument is not None and t.argument.name not in seen:
            seen.add(t.argument.name)
            arguments.append(t.argument)
    cpp.arguments = tuple(arguments)
    return cpp


def _epilogue_type(dtype, what):
    t = element_type(dtype, what=what)
    if not t.epilogue:
        raise ValueError(f"{what}={dtype!r}: {t.name} cannot be an epilogue's input or output; use a floating "
                         "type (float16, bfloat16, float32, float64, float8_e4m3, float8_e5m2, tfloat32)")
    return t


def cpp_float(value: float) -> str:
    """A C++ float expression equal to `value` (already a float32): the shortest literal that round-trips."""
    if math.isnan(value):
        return "cuda::std::numeric_limits<float>::quiet_NaN()"
    if math.isinf(value):
        return ("-" if value < 0 else "") + "cuda::std::numeric_limits<float>::infinity()"
    from .proxy import float32
    for digits in range(1, 10):
        text = f"{value:.{digits}g}"
        if float32(float(text)) == value:
            break
    if "e" not in text and "." not in text and "n" not in text:
        text += ".0"
    return text + "f"


class _Lowering:
    def __init__(self, graph, default, overrides, ns):
        self.graph, self.default, self.overrides, self.ns = graph, default, overrides, ns
        self.pending = {}  # node index -> outputs (not the root) still to be placed there
        for out in graph.outputs.values():
            if out.name != graph.root:
                self.pending.setdefault(out.node, []).append(out)

    def tree(self):
        root = self.graph.outputs[self.graph.root]
        expr = self.emit(root.node)
        # Outputs whose values are not part of the root's expression ride along on a Where.
        for index in list(self.pending):
            if self.pending.get(index):
                side = self.emit(index)
                expr = _Type(self.ns + "Where", (self.constant(1.0), expr, side))
        return self.sink(root, expr)

    def emit(self, index):
        node = self.graph.nodes[index]
        expr = self.leaf(node) if not node.inputs and node.op not in COMPUTE_OPS else _Type(
            self.ns + COMPUTE_OPS[node.op][0], tuple(self.emit(i) for i in node.inputs))
        for out in self.pending.pop(index, []):
            expr = self.sink(out, expr)
        return expr

    def constant(self, value):
        return _Type(self.ns + "Constant", (cpp_float(value),))

    def element(self, name, fallback=None):
        t = self.overrides.get(name) or (fallback and _epilogue_type(fallback, name)) or self.default
        return t

    def leaf(self, node):
        ns, op = self.ns, node.op
        if op == "acc":
            return _Type(ns + "Acc")
        if op == "constant":
            return self.constant(node.value)
        if op in ("row", "col", "batch"):
            return _Type(ns + op.capitalize())
        name = f'"{node.name}"'
        if op == "scalar":
            return _Type(ns + "Scalar", (name,), Argument(node.name, "scalar", None))
        spec = self.graph.inputs[node.name]
        t = self.element(node.name, spec.dtype)
        cpp = {"row_broadcast": "RowBroadcast", "col_broadcast": "ColBroadcast", "aux_load": "AuxLoad"}[op]
        return _Type(ns + cpp, (name, t.cpp), Argument(node.name, op, t.name))

    def sink(self, out, expr):
        name = f'"{out.name}"'
        if out.kind == "store":
            t = self.element(out.name)
            return _Type(self.ns + "Store", (name, t.cpp, expr), Argument(out.name, "store", t.name))
        cpp = "RowReduce" if out.kind == "row_reduce" else "ColReduce"
        reduction = f"{self.ns}reduce::{REDUCTIONS[out.reduction]}"
        return _Type(self.ns + cpp, (name, reduction, expr), Argument(out.name, out.kind, "float32"))
