"""Element types: the names the C++ library uses (tilefuse::name_of(DataType)), their C++ spellings,
and what Python users may write for them (torch / numpy dtypes, short aliases, C++ names)."""
from dataclasses import dataclass


@dataclass(frozen=True)
class ElementType:
    name: str  # as tilefuse::name_of(DataType) spells it
    cpp: str  # the C++ type
    epilogue: bool  # usable as an epilogue input or output (the tree converts it to and from float)
    numpy: str | None  # numpy's dtype name, when numpy has one


ELEMENT_TYPES = {
    t.name: t
    for t in (
        ElementType("float16", "tilefuse::half_t", True, "float16"),
        ElementType("bfloat16", "tilefuse::bfloat16_t", True, None),
        ElementType("float8_e4m3", "tilefuse::float_e4m3_t", True, None),
        ElementType("float8_e5m2", "tilefuse::float_e5m2_t", True, None),
        ElementType("tfloat32", "tilefuse::tfloat32_t", True, None),
        ElementType("float32", "float", True, "float32"),
        ElementType("float64", "double", True, "float64"),
        ElementType("int8", "cuda::std::int8_t", False, "int8"),
        ElementType("int32", "cuda::std::int32_t", False, "int32"),
    )
}

_ALIASES = {
    "half": "float16", "fp16": "float16", "f16": "float16", "half_t": "float16",
    "bf16": "bfloat16", "bfloat16_t": "bfloat16",
    "float": "float32", "fp32": "float32", "f32": "float32",
    "double": "float64", "fp64": "float64", "f64": "float64",
    "tf32": "tfloat32", "tfloat32_t": "tfloat32",
    "float8_e4m3fn": "float8_e4m3", "e4m3": "float8_e4m3", "float_e4m3_t": "float8_e4m3",
    "float8_e5m2fnuz": None, "float8_e4m3fnuz": None,  # torch's fnuz variants: a different format
    "float8_e5m2": "float8_e5m2", "e5m2": "float8_e5m2", "float_e5m2_t": "float8_e5m2",
    "int8_t": "int8", "int32_t": "int32",
}


def element_type(dtype, *, what="dtype") -> ElementType:
    """The ElementType for `dtype`: a name ("bfloat16", "bf16", "bfloat16_t", "tilefuse::bfloat16_t"),
    a torch dtype (torch.bfloat16) or a numpy dtype. Raises ValueError naming `what` otherwise."""
    if isinstance(dtype, ElementType):
        return dtype
    text = str(dtype) if not isinstance(dtype, str) else dtype
    text = text.strip()
    for prefix in ("torch.", "tilefuse::", "cuda::std::"):
        if text.startswith(prefix):
            text = text[len(prefix):]
    name = _ALIASES.get(text, text)
    if name not in ELEMENT_TYPES:
        known = ", ".join(ELEMENT_TYPES)
        raise ValueError(f"{what}={dtype!r} is not an element type tilefuse knows; use one of: {known}")
    return ELEMENT_TYPES[name]
