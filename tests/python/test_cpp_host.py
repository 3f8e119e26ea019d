"""The generated C++ compiles, takes exactly the arguments to_cpp lists, and computes (through the C++
host driver) what the numpy evaluation of the same traced function computes."""
import numpy as np
import pytest

import cpp_host
from examples import B, M, N, examples, random_acc
from tilefuse.epilogue import evaluate, to_cpp, trace

compiler, why = cpp_host.find_toolchain()
pytestmark = pytest.mark.skipif(compiler is None, reason=f"cannot compile the generated C++: {why}")

EXAMPLES = examples()
# Relative error allowed for outputs stored in each type: half an ulp of rounding plus float32 noise.
TOLERANCE = {"float32": 1e-5, "float16": 2.0 ** -10, "bfloat16": 2.0 ** -7}


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    trees = [to_cpp(trace(e.fn, **e.specs), e.element) for e in EXAMPLES]
    return cpp_host.build(trees, str(tmp_path_factory.mktemp("cpp"))), trees


def quantize(x, dtype):
    """x (float32) rounded to `dtype` the way tilefuse::convert does (nearest even), back as float32."""
    x = np.asarray(x, np.float32)
    if dtype == "float16":
        return x.astype(np.float16).astype(np.float32)
    if dtype == "bfloat16":
        bits = x.view(np.uint32).astype(np.uint64)
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
        return bits.astype(np.uint32).view(np.float32)
    return x


def batched(value, kind):
    value = np.asarray(value, np.float32)
    shape = {"row_broadcast": (B, N), "col_broadcast": (B, M), "aux_load": (B, M, N)}[kind]
    return np.broadcast_to(value.reshape(-1, *shape[1:]) if value.ndim > 1 or kind != "row_broadcast" else value,
                           shape).copy()


@pytest.mark.parametrize("index", range(len(EXAMPLES)), ids=[e.name for e in EXAMPLES])
def test_cpp_host_driver_matches_numpy(program, index, tmp_path):
    binary, trees = program
    example, tree = EXAMPLES[index], trees[index]
    graph = trace(example.fn, **example.specs)
    kinds = {a.name: a for a in tree.arguments}
    # Inputs as C++ will see them: rounded to their element type.
    data = {k: quantize(v, kinds[k].dtype) if kinds[k].kind != "scalar" else v for k, v in example.data.items()}
    arrays = {k: batched(v, kinds[k].kind) for k, v in data.items() if kinds[k].kind != "scalar"}
    scalars = {k: v for k, v in data.items() if kinds[k].kind == "scalar"}
    acc = random_acc(seed=index)

    names, outputs = cpp_host.run(binary, index, str(tmp_path), acc, arrays, scalars)
    assert names == tree.argument_names
    want = evaluate(graph, acc, **data)
    assert set(outputs) == set(want)
    for name, expected in want.items():
        dtype = kinds[name].dtype
        expected = quantize(expected, dtype) if kinds[name].kind == "store" else expected
        got = outputs[name].reshape(expected.shape)
        tol = TOLERANCE[dtype]
        np.testing.assert_allclose(got, expected, rtol=tol, atol=tol, err_msg=f"{example.name}: output {name}")
