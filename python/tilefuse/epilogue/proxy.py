"""Proxy values: what an epilogue function computes with while it is traced. Arithmetic and
comparisons record graph nodes; everything that would need a concrete number (`if`, `float()`,
`math.exp`, numpy, torch) raises EpilogueTraceError saying what to write instead."""
import contextvars
import math
import numbers
import struct

from .graph import COMPUTE_OPS, GraphBuilder, Node
from .location import source_line, trace_error, user_location

_active = contextvars.ContextVar("tilefuse_epilogue_tracer", default=None)


def float32(x: float) -> float:
    """x rounded to the nearest float32 (the tree computes in float)."""
    try:
        return struct.unpack("f", struct.pack("f", x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


class Tracer:
    """The state of one trace: the graph under construction. Active (for row() and friends) only while
    the user's function runs."""

    def __init__(self, function_name):
        self.builder = GraphBuilder()
        self.builder.graph.function_name = function_name

    def value(self, op, inputs=(), *, name=None, value=None, predicate=False):
        return Value(self, self.builder.add(Node(op, tuple(inputs), name, value)), predicate)

    def operand(self, x, function, argument):
        """The node index of an operand: a traced value, or a number that becomes a Constant."""
        if isinstance(x, Value):
            if x._tracer is not self:
                raise trace_error(f"{function}(): {argument} is a value from a different trace; an epilogue can "
                                  "only use its own arguments and values computed from them")
            return x._index
        if isinstance(x, Reduction):
            raise trace_error(f"{function}(): {argument} is a reduction ({x._what}), which is an output, not a "
                              "value: return it in the output dict, e.g. return {\"D\": y, \"amax\": amax(y, dim=0)}")
        if isinstance(x, numbers.Real):
            return self.value("constant", value=float32(float(x)))._index
        hint = "pass it to the function as an argument (trace(fn, name=shape))"
        if hasattr(x, "shape"):
            hint = "arrays and tensors cannot be captured by an epilogue: " + hint
        raise trace_error(f"{function}(): {argument} is a {type(x).__name__}; an epilogue works on traced values "
                          f"and Python numbers only: {hint}")

    def compute(self, op, *operands, function=None, names=None, predicate=False):
        function = function or op
        names = names or [f"argument {i + 1}" for i in range(len(operands))]
        assert COMPUTE_OPS[op][1] == len(operands)
        indices = [self.operand(x, function, n) for x, n in zip(operands, names)]
        return self.value(op, indices, predicate=predicate)


def active_tracer(function):
    tracer = _active.get()
    if tracer is None:
        raise trace_error(f"tilefuse.epilogue.{function}() can only be used inside an epilogue function while "
                          "tilefuse.epilogue.trace(fn, ...) runs it")
    return tracer


def tracer_of(function, *operands):
    """The tracer of the first traced operand, else the active one."""
    for x in operands:
        if isinstance(x, (Value, Reduction)):
            return x._tracer
    return active_tracer(function)


def _truth_hint(line):
    """What to write instead, judged from the source line that asked a traced value for a bool."""
    padded = f" {line} "
    if line.startswith(("if ", "elif ")) or " if " in padded and " else " in padded:
        return ("a traced value has no True/False while tracing, so `if` cannot branch on it: use "
                "tilefuse.epilogue.where(cond, a, b) instead of if")
    if line.startswith("while "):
        return "a loop cannot depend on a traced value: loops must run a fixed number of times"
    if " and " in padded or " or " in padded or " not " in padded or line.startswith("not "):
        return ("`and` / `or` / `not` need a True/False, which a traced value has not: combine conditions "
                "with & | ~ (e.g. (row() < r0) & (acc > 0)), and select with tilefuse.epilogue.where")
    for builtin, instead in (("min(", "minimum"), ("max(", "maximum"), ("sorted(", None)):
        if builtin in line and instead:
            return (f"Python's built-in {builtin[:-1]}() compares values to pick one, which a traced value "
                    f"cannot: use tilefuse.epilogue.{instead}(a, b)")
    if "assert" in line:
        return "assert cannot check a traced value; remove it from the epilogue"
    return ("a traced value has no True/False while tracing: use tilefuse.epilogue.where(cond, a, b) "
            "instead of if, & | ~ instead of and/or/not, minimum/maximum instead of min/max")


def _number_hint(line, conversion):
    for module in ("math.", "cmath."):
        start = line.find(module)
        if start >= 0:
            name = line[start + len(module):].split("(")[0]
            return (f"{module}{name}() needs a concrete number and cannot be traced: use tilefuse.epilogue."
                    f"{name if name in _FUNCTION_NAMES else '<function>'}(...) instead "
                    f"(available: {', '.join(sorted(_FUNCTION_NAMES))})")
    return (f"{conversion}() needs a concrete number, which a traced value is not while tracing: keep it as "
            "a value and use tilefuse.epilogue functions on it")


# Set by functions.py: the names users may call, for "use ... instead" hints.
_FUNCTION_NAMES = set()


def _unsupported_operator(symbol, instead):
    def method(self, *args):
        raise trace_error(f"the operator {symbol} is not supported in epilogues{': ' + instead if instead else ''}")
    return method


class Value:
    """A traced value: one element of the output (or of an intermediate) as a function of its inputs."""

    __slots__ = ("_tracer", "_index", "_predicate")
    __array_priority__ = 1000  # numpy defers binary operators to us instead of broadcasting
    __hash__ = None  # == builds a predicate, so a Value cannot be a dict key or set member

    def __init__(self, tracer, index, predicate=False):
        self._tracer = tracer
        self._index = index
        self._predicate = predicate

    def __repr__(self):
        node = self._tracer.builder.graph.nodes[self._index]
        return f"<traced epilogue value %{self._index}: {node.op}>"

    # ---- arithmetic ----
    def _binary(self, op, other, reverse=False, symbol=None):
        a, b = (other, self) if reverse else (self, other)
        return self._tracer.compute(op, a, b, function=f"the operator {symbol}", names=["left operand", "right operand"])

    def __add__(self, o): return self._binary("add", o, symbol="+")
    def __radd__(self, o): return self._binary("add", o, True, "+")
    def __sub__(self, o): return self._binary("sub", o, symbol="-")
    def __rsub__(self, o): return self._binary("sub", o, True, "-")
    def __mul__(self, o): return self._binary("mul", o, symbol="*")
    def __rmul__(self, o): return self._binary("mul", o, True, "*")
    def __truediv__(self, o): return self._binary("div", o, symbol="/")
    def __rtruediv__(self, o): return self._binary("div", o, True, "/")
    def __neg__(self): return self._tracer.compute("neg", self)
    def __pos__(self): return self
    def __abs__(self): return self._tracer.compute("abs", self)

    def __pow__(self, exponent):
        # Small whole powers are products (x ** 3 in hand-written GELU); anything else has no node.
        if isinstance(exponent, numbers.Integral) and not isinstance(exponent, bool) and 1 <= exponent <= 4:
            result = self
            for _ in range(int(exponent) - 1):
                result = result * self
            return result
        raise trace_error(f"x ** {exponent!r} is not supported in epilogues: only whole powers 1 to 4 "
                          "(x ** 2 becomes x * x); write exp(y * log_value) by hand for other powers")

    __rpow__ = _unsupported_operator("** (number ** value)", "use exp(value * math.log(number))")
    # Python's // and % on whole numbers (coordinates, extents): C++ FloorDiv and Mod, exact in integers.
    def __floordiv__(self, o): return self._binary("floordiv", o, symbol="//")
    def __rfloordiv__(self, o): return self._binary("floordiv", o, True, "//")
    def __mod__(self, o): return self._binary("mod", o, symbol="%")
    def __rmod__(self, o): return self._binary("mod", o, True, "%")
    __matmul__ = __rmatmul__ = _unsupported_operator("@", "an epilogue works on one element at a time")
    __lshift__ = __rshift__ = __xor__ = _unsupported_operator("<< >> ^", None)

    # ---- comparisons: predicates (1.0 or 0.0) for where() ----
    def _compare(self, op, other, symbol):
        return self._tracer.compute(op, self, other, function=f"the comparison {symbol}",
                                    names=["left operand", "right operand"], predicate=True)

    def __lt__(self, o): return self._compare("lt", o, "<")
    def __le__(self, o): return self._compare("le", o, "<=")
    def __gt__(self, o): return self._compare("gt", o, ">")
    def __ge__(self, o): return self._compare("ge", o, ">=")
    def __eq__(self, o): return self._compare("eq", o, "==")
    def __ne__(self, o): return self._compare("ne", o, "!=")

    # ---- combining predicates: & is both, | is either, ~ is not (predicates are 1.0 or 0.0) ----
    def _require_predicate(self, other, symbol):
        for x in (self, other):
            if isinstance(x, Value) and not x._predicate:
                raise trace_error(f"{symbol} combines conditions (comparisons such as acc > 0), but an operand "
                                  "is a plain value: compare it first, e.g. (x != 0)")
            if not isinstance(x, Value):
                raise trace_error(f"{symbol} combines two conditions; the other operand is a {type(x).__name__}")

    def __and__(self, o):
        self._require_predicate(o, "&")
        return self._tracer.compute("mul", self, o, function="&", predicate=True)

    def __or__(self, o):
        self._require_predicate(o, "|")
        return self._tracer.compute("maximum", self, o, function="|", predicate=True)

    __rand__, __ror__ = __and__, __or__

    def __invert__(self):
        self._require_predicate(self, "~")
        return self._tracer.compute("eq", self, 0.0, function="~", predicate=True)

    # ---- everything that needs a concrete value ----
    def __bool__(self):
        location = user_location()
        raise trace_error(_truth_hint(source_line(location)), location)

    def _needs_number(conversion):
        def method(self, *args):
            location = user_location()
            raise trace_error(_number_hint(source_line(location), conversion), location)
        return method

    __float__ = _needs_number("float")
    __int__ = _needs_number("int")
    __index__ = _needs_number("index")
    __complex__ = _needs_number("complex")
    __round__ = _needs_number("round")
    __trunc__ = __floor__ = __ceil__ = _needs_number("math.trunc/floor/ceil")
    del _needs_number

    def __iter__(self):
        raise trace_error("a traced value is one element, not a sequence: it cannot be iterated or unpacked")

    def __len__(self):
        raise trace_error("a traced value is one element and has no length; shapes are not visible inside an epilogue")

    def __getitem__(self, key):
        raise trace_error("a traced value is one element and cannot be indexed: use row(), col() and batch() for "
                          "the element's coordinates, and pass per-row or per-column vectors as arguments")

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)  # protocol probes (numpy, copy, pickle) must see a plain AttributeError
        hint = f"tilefuse.epilogue.{name}(x)" if name in _FUNCTION_NAMES else "a tilefuse.epilogue function"
        raise trace_error(f"traced values have no attribute .{name}: use {hint} instead")

    def __array__(self, *args, **kwargs):
        raise trace_error("a traced value cannot become a numpy array: use tilefuse.epilogue functions on it")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        raise trace_error(_library_hint("numpy", ufunc.__name__))

    def __array_function__(self, func, types, args, kwargs):
        raise trace_error(_library_hint("numpy", func.__name__))

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", str(func))
        raise trace_error(_library_hint("torch", name))


_NUMPY_EQUIVALENTS = {"maximum": "maximum", "minimum": "minimum", "clip": "clamp", "absolute": "abs",
                      "negative": "-x", "add": "+", "subtract": "-", "multiply": "*", "true_divide": "/",
                      "divide": "/", "less": "<", "greater": ">", "where": "where", "clamp": "clamp",
                      "erf": "gelu (which uses erf)", "fabs": "abs", "amax": "amax", "sum": "reduce_sum"}


def _library_hint(library, name):
    instead = _NUMPY_EQUIVALENTS.get(name, name if name in _FUNCTION_NAMES else None)
    use = (f"use tilefuse.epilogue.{instead}" if instead and instead[0].isalpha() else
           f"use the operator {instead}" if instead else
           f"use tilefuse.epilogue functions ({', '.join(sorted(_FUNCTION_NAMES))})")
    return f"{library}.{name}() cannot be traced into an epilogue: {use} instead"


class Reduction:
    """A reduction of a traced value over rows or columns: an output, returned in the output dict."""

    __slots__ = ("_tracer", "_index", "kind", "reduction", "_what")

    def __init__(self, tracer, index, kind, reduction, what):
        self._tracer, self._index, self.kind, self.reduction, self._what = tracer, index, kind, reduction, what

    def __repr__(self):
        return f"<traced epilogue reduction {self._what}>"

    def _not_a_value(self, *args):
        raise trace_error(f"{self._what} is a reduction, which is an output of the epilogue, not a value to compute "
                          "with: return it in the output dict, e.g. return {\"D\": y, \"amax\": amax(y, dim=0)}")

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _not_a_value
    __neg__ = __abs__ = __lt__ = __le__ = __gt__ = __ge__ = __bool__ = __float__ = _not_a_value
    __hash__ = None
