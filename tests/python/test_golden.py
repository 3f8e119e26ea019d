"""Golden files of the generated C++ for the shared examples. TILEFUSE_UPDATE_GOLDEN=1 rewrites them."""
import os

import pytest

from examples import examples
from tilefuse.epilogue import to_cpp, trace

GOLDEN = os.path.join(os.path.dirname(__file__), "golden")


def render(example):
    tree = to_cpp(trace(example.fn, **example.specs), example.element)
    arguments = "\n".join(f"//   {a.name}: {a.kind}" + (f" <{a.dtype}>" if a.dtype else "") for a in tree.arguments)
    return (f"// {example.name}, element {example.element}; arguments (EpilogueArguments::set):\n{arguments}\n"
            f"using Tree = {tree.pretty};\n")


@pytest.mark.parametrize("example", examples(), ids=lambda e: e.name)
def test_generated_cpp_matches_golden(example):
    path = os.path.join(GOLDEN, f"{example.name}.hpp")
    text = render(example)
    if os.environ.get("TILEFUSE_UPDATE_GOLDEN"):
        with open(path, "w") as f:
            f.write(text)
    if not os.path.exists(path):
        pytest.fail(f"{path} is missing: run with TILEFUSE_UPDATE_GOLDEN=1 to write it, then review it")
    with open(path) as f:
        assert text == f.read(), f"generated C++ changed; if intended, run with TILEFUSE_UPDATE_GOLDEN=1 and review {path}"
