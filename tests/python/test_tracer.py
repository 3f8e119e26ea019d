"""Tracing: what each kind of Python becomes in the graph."""
import numpy as np
import pytest

from tilefuse.epilogue import amax, evaluate, exp, reduce_sum, relu, row, sigmoid, tensor, trace, where


def ops(graph):
    return [n.op for n in graph.nodes]


def test_argument_kinds_are_inferred_from_specs():
    def epi(acc, alpha, bias, per_row, residual):
        return alpha * acc + bias + per_row + residual

    g = trace(epi, acc=(6, 8), alpha=2.0, bias=(8,), per_row=(6, 1), residual=(6, 8))
    assert {n: i.kind for n, i in g.inputs.items()} == {
        "alpha": "scalar", "bias": "row_broadcast", "per_row": "col_broadcast", "residual": "aux_load"}


def test_kinds_without_the_output_shape_and_with_a_batch():
    def epi(acc, bias, per_row, residual):
        return acc + bias + per_row + residual

    g = trace(epi, bias=(1, 8), per_row=(3, 6, 1), residual=(3, 6, 8))
    assert [i.kind for i in g.inputs.values()] == ["row_broadcast", "col_broadcast", "aux_load"]


def test_tensor_like_specs_bring_their_dtype():
    g = trace(lambda acc, bias: acc + bias, bias=np.zeros(8, np.float16))
    assert g.inputs["bias"].dtype == "float16"
    g = trace(lambda acc, bias: acc + bias, bias=tensor((8,), "bf16"))
    assert g.inputs["bias"].dtype == "bfloat16"


def test_reused_intermediates_and_repeated_expressions_are_one_node():
    def epi(acc):
        s = sigmoid(acc)
        return s * s + sigmoid(acc)

    g = trace(epi)
    assert ops(g).count("sigmoid") == 1 and ops(g).count("acc") == 1


def test_constants_and_reflected_operators_keep_their_order():
    g = trace(lambda acc: 1 - 0.5 * acc)
    assert sorted(n.value for n in g.nodes if n.op == "constant") == [0.5, 1.0]
    sub = next(n for n in g.nodes if n.op == "sub")
    assert g.nodes[sub.inputs[0]].value == 1.0 and g.nodes[sub.inputs[1]].op == "mul"


def test_defaults_become_constants():
    def epi(acc, slope=0.25):
        return where(acc < 0, slope * acc, acc)

    g = trace(epi)
    assert g.inputs == {} and 0.25 in [n.value for n in g.nodes]


def test_integer_powers_are_products():
    g = trace(lambda acc: acc ** 3)
    assert ops(g).count("mul") == 2


def test_predicates_combine_with_and_or_not():
    def epi(acc, r0):
        either = (row() < r0) & ~(acc > 0) | (acc < -1)
        return {"D": where(either, acc, 0.0), "p": either, "both": (row() < r0) & (acc < -1)}

    g = trace(epi, acc=(6, 8), r0=3.0)
    acc = np.linspace(-3, 3, 48, dtype=np.float32).reshape(6, 8)
    rows = np.arange(6)[:, None]
    either = ((rows < 3) & ~(acc > 0)) | (acc < -1)
    out = evaluate(g, acc, r0=3.0)
    np.testing.assert_array_equal(out["D"], np.where(either, acc, 0.0))
    # The predicates themselves are 1 or 0: an "or" lowered as a sum would give 2 where both sides hold.
    np.testing.assert_array_equal(out["p"], either.astype(np.float32))
    np.testing.assert_array_equal(out["both"], ((rows < 3) & (acc < -1)).astype(np.float32))


def test_multiple_outputs_and_reductions():
    def epi(acc, bias):
        z = acc + bias
        return {"aux": z, "D": relu(z), "amax": amax(z, dim=0), "rowsum": reduce_sum(z, dim=1)}

    g = trace(epi, bias=(8,))
    assert g.root == "D"
    kinds = {n: (o.kind, o.reduction) for n, o in g.outputs.items()}
    assert kinds == {"aux": ("store", None), "D": ("store", None), "amax": ("col_reduce", "absmax"),
                     "rowsum": ("row_reduce", "sum")}
    assert g.outputs["aux"].node == g.outputs["amax"].node


def test_the_root_is_the_first_store_without_d():
    g = trace(lambda acc: {"amax": amax(acc, dim=1), "out": exp(acc)})
    assert g.root == "out"


def test_unused_nodes_are_dropped_and_unused_inputs_warned_about():
    def epi(acc, bias):
        unused = exp(acc)  # noqa: F841
        return acc

    with pytest.warns(UserWarning, match="bias is never used"):
        g = trace(epi, bias=(8,))
    assert ops(g) == ["acc"] and g.inputs == {}


def test_graph_prints_readably():
    text = str(trace(lambda acc, bias: relu(acc + bias), bias=(8,)))
    assert "%2 = add(%0, %1)" in text and "D = store(%3)  # root" in text
