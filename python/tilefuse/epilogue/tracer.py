"""trace(fn, **specs): runs an epilogue function on proxy values and returns its Graph."""
import inspect
import keyword
import re
import warnings

from ..errors import EpilogueTraceError
from .graph import Graph, Input, Node, Output
from .location import trace_error, traceback_location
from .proxy import Reduction, Tracer, Value, _active, float32
from . import specs as spec_rules

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
MAX_NAME_LENGTH = 32  # NodeName::kMaxLength in include/tilefuse/epilogue/node_name.h


def trace(fn, **arg_specs) -> Graph:
    """Trace `fn` into an epilogue graph.

    `fn`'s parameter `acc` is the accumulator; `arg_specs` describe the others (see specs.py): a number
    for a scalar, a shape or tensor for a vector or matrix. `acc=(m, n)` (or `(b, m, n)`) gives the
    output's shape, which makes the broadcast checks exact; without it the shapes only have to agree
    with each other. A parameter with a default and no spec is a constant.

    `fn` returns the output D, or a dict {name: value or reduction}; the root of the C++ tree is "D"
    (or the first stored output when there is no "D").
    """
    if not callable(fn):
        raise TypeError(f"trace(fn, ...): fn must be a function, got {type(fn).__name__}")
    name = getattr(fn, "__name__", type(fn).__name__)
    code = getattr(fn, "__code__", None)
    fn_location = (code.co_filename, code.co_firstlineno, name) if code else None
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        raise TypeError(f"trace(fn, ...): cannot read the parameters of {name}; pass a Python function") from None

    params = signature.parameters
    for p in params.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise trace_error(f"{name} takes *{p.name}; an epilogue needs one named parameter per input",
                              fn_location)
    if "acc" not in params:
        raise trace_error(f"{name} has no parameter named acc; the accumulator is passed as `acc`, e.g. "
                          f"def {name}(acc, bias): ...", fn_location)
    unknown = [k for k in arg_specs if k not in params]
    if unknown:
        raise TypeError(f"trace({name}, ...): {', '.join(unknown)} {'is not a parameter' if len(unknown) == 1 else 'are not parameters'} "
                        f"of {name}; its parameters are: {', '.join(params)}")

    out_shape = _output_shape(arg_specs.get("acc"), name)
    tracer = Tracer(name)
    graph = tracer.builder.graph
    arguments, implied = {}, {}
    for pname, p in params.items():
        if pname == "acc":
            arguments[pname] = tracer.value("acc")
            continue
        _check_name(pname, f"parameter {pname} of {name}", fn_location)
        if pname not in arg_specs:
            if p.default is p.empty:
                raise TypeError(f"trace({name}, ...): no spec for parameter {pname}: pass {pname}=<number> for a "
                                f"scalar, {pname}=(n,) per column, (m, 1) per row or (m, n) for a matrix")
            arguments[pname] = _default_constant(tracer, name, pname, p.default)
            continue
        try:
            spec = spec_rules.normalize(arg_specs[pname])
            if spec == "scalar":
                graph.inputs[pname] = Input(pname, "scalar")
                arguments[pname] = tracer.value("scalar", name=pname)
                continue
            kind, implied[pname] = spec_rules.classify(spec, out_shape)
        except ValueError as error:  # SpecError, or a bad dtype / shape
            raise ValueError(f"trace({name}, ...): argument {pname} {_strip(error)}") from None
        graph.inputs[pname] = Input(pname, kind, spec.dtype, spec.shape)
        arguments[pname] = tracer.value(kind, name=pname)
    _check_shapes_agree(implied, name)

    result = _run(fn, signature, arguments, tracer, fn_location)
    outputs = _outputs(result, name, fn_location)
    for oname, value in outputs.items():
        _check_name(oname, f"output {oname!r} of {name}", fn_location)
        if oname in params:
            raise trace_error(f"output {oname!r} has the name of an input parameter; C++ arguments are set by name, "
                              "so give the output another name", fn_location)
        if isinstance(value, Reduction):
            graph.outputs[oname] = Output(oname, value.kind, value._index, value.reduction)
        else:
            graph.outputs[oname] = Output(oname, "store", value._index)
    stores = [o for o in graph.outputs.values() if o.kind == "store"]
    if not stores:
        raise trace_error(f"{name} returns only reductions; the epilogue also needs a stored output, "
                          "e.g. return {\"D\": y, \"amax\": amax(y, dim=0)}", fn_location)
    graph.root = "D" if "D" in graph.outputs and graph.outputs["D"].kind == "store" else stores[0].name
    graph.shape = out_shape
    _prune(graph, name)
    return graph


def _run(fn, signature, arguments, tracer, fn_location):
    bound = signature.bind_partial()
    for pname, p in signature.parameters.items():
        bound.arguments[pname] = arguments[pname]
    token = _active.set(tracer)
    try:
        return fn(*bound.args, **bound.kwargs)
    except EpilogueTraceError:
        raise
    except Exception as error:  # noqa: BLE001 - any failure inside the user's code is reported at its line
        location = traceback_location(error.__traceback__, getattr(fn, "__code__", None)) or fn_location
        raise trace_error(f"tracing stopped with {type(error).__name__}: {error}. An epilogue may use + - * /, "
                          "comparisons and the tilefuse.epilogue functions on its arguments; other calls need "
                          "concrete numbers, which do not exist while tracing", location) from error
    finally:
        _active.reset(token)


def _outputs(result, name, fn_location):
    if isinstance(result, (Value, Reduction)):
        result = {"D": result}
    if not isinstance(result, dict):
        what = "None (did you forget `return`?)" if result is None else f"a {type(result).__name__}"
        raise trace_error(f"{name} returned {what}; return the output value (stored as D) or a dict "
                          "{name: value}, e.g. {\"D\": y, \"aux\": z}", fn_location)
    if not result:
        raise trace_error(f"{name} returned an empty dict; it needs at least the output D", fn_location)
    for oname, value in result.items():
        if not isinstance(oname, str):
            raise trace_error(f"{name} returned a dict with the key {oname!r}; output names are strings", fn_location)
        if not isinstance(value, (Value, Reduction)):
            raise trace_error(f"output {oname!r} of {name} is a {type(value).__name__}, not a value computed from "
                              "the arguments (a constant output would be the same everywhere: fill it directly)",
                              fn_location)
    return result


def _output_shape(spec, name):
    if spec is None:
        return None
    shape = getattr(spec, "shape", spec)
    try:
        dims = spec_rules._shape(shape, "acc")
    except ValueError as error:
        raise ValueError(f"trace({name}, ...): {error}") from None
    if len(dims) not in (2, 3):
        raise ValueError(f"trace({name}, ...): acc={shape!r} must be the output's shape (m, n) or (b, m, n)")
    return dims[-2:]


def _check_shapes_agree(implied, name):
    seen = {}
    for pname, dims in implied.items():
        for axis, size in zip(("rows", "columns"), dims):
            if size is None:
                continue
            other = seen.setdefault(axis, (pname, size))
            if other[1] != size:
                raise ValueError(f"trace({name}, ...): arguments {other[0]} and {pname} disagree on the output's "
                                 f"{axis} ({other[1]} vs {size}); pass acc=(m, n) to say which is right")


def _default_constant(tracer, name, pname, default):
    if isinstance(default, bool) or not isinstance(default, (int, float)):
        raise TypeError(f"trace({name}, ...): parameter {pname} has the default {default!r} and no spec; a default "
                        f"must be a number (it becomes a constant), or pass {pname}=<spec>")
    return tracer.value("constant", value=float32(float(default)))


def _check_name(text, what, location):
    if not _NAME.match(text) or keyword.iskeyword(text):
        raise trace_error(f"{what}: names must be identifiers (letters, digits, _), not {text!r}", location)
    if len(text) > MAX_NAME_LENGTH:
        raise trace_error(f"{what} is {len(text)} characters long; C++ epilogue names are at most "
                          f"{MAX_NAME_LENGTH}: use a shorter name", location)


def _strip(error):
    text = str(error)
    return text[0].lower() + text[1:] if text else text


def _prune(graph, name):
    """Drop nodes no output uses (and warn about inputs that end up unused), renumbering the rest."""
    live = set()
    stack = [o.node for o in graph.outputs.values()]
    while stack:
        index = stack.pop()
        if index not in live:
            live.add(index)
            stack.extend(graph.nodes[index].inputs)
    order = sorted(live)
    renumber = {old: new for new, old in enumerate(order)}
    graph.nodes = [Node(n.op, tuple(renumber[i] for i in n.inputs), n.name, n.value)
                   for n in (graph.nodes[i] for i in order)]
    graph.outputs = {k: Output(o.name, o.kind, renumber[o.node], o.reduction, o.dtype) for k, o in graph.outputs.items()}
    used = {n.name for n in graph.nodes if n.name is not None}
    for pname in [p for p in graph.inputs if p not in used]:
        warnings.warn(f"trace({name}, ...): parameter {pname} is never used by the outputs, so the epilogue "
                      "does not take it", stacklevel=3)
        del graph.inputs[pname]
