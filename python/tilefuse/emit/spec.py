"""OpSpec: what tilefuse.emit.pytorch builds an extension for (a GEMM or a conv2d fprop with its epilogue).

    spec = OpSpec("conv2d_fprop", "bfloat16", epilogue=fn, epilogue_specs={"bias": (k,), "residual": (m, k)},
                  stride=(1, 1), padding=(1, 1), dilation=(1, 1))

The epilogue is a Python function traced by tilefuse.epilogue.trace with `epilogue_specs` (the shapes
only say which kind each argument is; the extension takes any size at run time).
"""
import keyword
import numbers
from dataclasses import dataclass, field

from ..dtypes import element_type

KINDS = ("gemm", "conv2d_fprop")
# Operand element types per kind: conv2d's sm80 and Hopper paths read 16-bit floats; the GEMM also
# takes float32 (computed in tf32 by the sm_80 kernel).
ELEMENTS = {"gemm": ("bfloat16", "float16", "float32"), "conv2d_fprop": ("bfloat16", "float16")}
LAYOUTS = ("row", "column")
# The tensor operands of each kind: names the epilogue's arguments may not take.
OPERANDS = {"gemm": ("a", "b"), "conv2d_fprop": ("x", "w")}


class EmitError(ValueError):
    """A spec that tilefuse.emit cannot turn into an extension; the message says what to change."""


@dataclass(frozen=True)
class OpSpec:
    """One operation of an emitted extension.

    kind: "gemm" (D = epilogue(a @ b), a: m x k, b: k x n) or "conv2d_fprop" (y = epilogue(conv2d(x, w)),
      x: (N, C, H, W) and w: (K, C, R, S), both channels-last in memory).
    element: the operands' element type ("bfloat16", "float16"; "float32" for gemm, computed in tf32).
    epilogue: the epilogue function (acc first; see docs/python.md), None for plain D = acc.
    epilogue_specs: trace()'s keywords for its other parameters (numbers, shapes, tensor specs).
    elements: per-name element types of epilogue tensors and outputs (to_cpp's `elements`).
    stride, padding, dilation: conv2d_fprop only, each a tuple (h, w) of ints.
    layout_a, layout_b: gemm only, "row" or "column" (the memory order the extension accepts).
    """

    kind: str
    element: str = "bfloat16"
    epilogue: object = None
    epilogue_specs: dict = field(default_factory=dict)
    elements: dict = field(default_factory=dict)
    stride: tuple = (1, 1)
    padding: tuple = (0, 0)
    dilation: tuple = (1, 1)
    layout_a: str = "row"
    layout_b: str = "column"

    def checked(self):
        """Raises EmitError for anything the emitter cannot build; returns the element's canonical name."""
        if self.kind not in KINDS:
            raise EmitError(f"OpSpec.kind={self.kind!r} is not supported; use one of: {', '.join(KINDS)}")
        try:
            element = element_type(self.element, what="OpSpec.element").name
        except ValueError as error:
            raise EmitError(str(error)) from None
        if element not in ELEMENTS[self.kind]:
            raise EmitError(f"OpSpec.element={self.element!r}: {self.kind} takes {', '.join(ELEMENTS[self.kind])} "
                            f"operands, not {element}")
        if self.kind == "conv2d_fprop":
            for what, value, low in (("stride", self.stride, 1), ("padding", self.padding, 0),
                                     ("dilation", self.dilation, 1)):
                _pair(what, value, low)
        else:
            for what, default in (("stride", (1, 1)), ("padding", (0, 0)), ("dilation", (1, 1))):
                if getattr(self, what) != default:
                    raise EmitError(f"OpSpec.{what}={getattr(self, what)!r} is a conv2d setting; a gemm takes none")
            for what in ("layout_a", "layout_b"):
                if getattr(self, what) not in LAYOUTS:
                    raise EmitError(f"OpSpec.{what}={getattr(self, what)!r}: use \"row\" (row-major) or \"column\" "
                                    "(column-major)")
        if self.epilogue is not None and not callable(self.epilogue):
            raise EmitError(f"OpSpec.epilogue must be a function (acc, ...) or None, got {type(self.epilogue).__name__}")
        if not isinstance(self.epilogue_specs, dict) or not isinstance(self.elements, dict):
            raise EmitError("OpSpec.epilogue_specs and OpSpec.elements must be dicts keyed by argument name")
        return element


def _pair(what, value, low):
    if not isinstance(value, tuple) or len(value) != 2 or not all(
            isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in value):
        raise EmitError(f"OpSpec.{what}={value!r} must be a tuple of two ints (h, w), e.g. {what}=({low}, {low})")
    if min(value) < low:
        raise EmitError(f"OpSpec.{what}={value!r}: each entry must be at least {low}")


def check_name(name, what="name"):
    """An extension name: a Python identifier (it is the module's name) and a C++ one."""
    if not isinstance(name, str) or not name.isidentifier() or not name.isascii() or keyword.iskeyword(name):
        raise EmitError(f"{what}={name!r} must be an ASCII Python identifier (it names the extension module), "
                        "e.g. \"fused_conv\"")
    if name.startswith("tf_") or name.startswith("_") or name in CPP_KEYWORDS:
        raise EmitError(f"{what}={name!r}: names starting with tf_ or _ and C++ keywords are reserved")
    return name


# C++ keywords and names the generated code uses, which an argument may not take.
CPP_KEYWORDS = frozenset("""
alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t char16_t char32_t class compl
concept const consteval constexpr constinit const_cast continue co_await co_return co_yield decltype default
delete do double dynamic_cast else enum explicit export extern false float for friend goto if inline int long
mutable namespace new noexcept not not_eq nullptr operator or or_eq private protected public register
reinterpret_cast requires return short signed sizeof static static_assert static_cast struct switch template
this thread_local throw true try typedef typeid typename union unsigned using virtual void volatile wchar_t
while xor xor_eq at c10 std torch tilefuse m
""".split())


def spec_of(op, element=None, epilogue_specs=None):
    """The OpSpec of an op object: a tilefuse.Gemm or a tilefuse.Conv2d in fprop mode. An op object holds no
    sizes, so the epilogue's arguments are described by `epilogue_specs` (their shapes say which kind each
    is: (k,) per channel, (m, k) a matrix, a number a scalar), and the operand type by `element` (default
    bfloat16; out_dtype, when the op has one, types D)."""
    from ..conv2d import Conv2d
    from ..gemm import Gemm

    if isinstance(op, Conv2d):
        if op.mode != "fprop":
            raise EmitError(f"tilefuse.emit.pytorch: a Conv2d in {op.mode!r} mode; the emitter builds fprop "
                            "convolutions (run dgrad / wgrad with tilefuse.Conv2d itself)")
        kind, settings = "conv2d_fprop", dict(stride=op.stride, padding=op.padding, dilation=op.dilation)
    elif isinstance(op, Gemm):
        kind, settings = "gemm", {}
    else:
        raise EmitError(f"tilefuse.emit.pytorch(op, ...): op must be a tilefuse.emit.OpSpec, a tilefuse.Gemm or a "
                        f"tilefuse.Conv2d, got {type(op).__name__}")
    epilogue = None if getattr(op.epilogue, "__name__", "") == "_identity" else op.epilogue
    specs = dict(epilogue_specs or {})
    if epilogue is not None:
        import inspect

        missing = [p for p in list(inspect.signature(epilogue).parameters)[1:] if p not in specs]
        if missing:
            raise EmitError(f"tilefuse.emit.pytorch: the epilogue's arguments {', '.join(missing)} need "
                            "epilogue_specs={name: shape or number}, e.g. {'bias': (k,), 'residual': (m, k)}: the op "
                            "object holds no sizes")
    elements = {"D": op.out_dtype} if op.out_dtype is not None else {}
    return OpSpec(kind, element or "bfloat16", epilogue, specs, elements, **settings)
