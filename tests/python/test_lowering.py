"""Lowering details: node names and argument order, sinks placed once, constants spelled exactly."""
import pytest

from tilefuse.epilogue import amax, exp, gelu, reduce_sum, relu, sigmoid, to_cpp, trace
from tilefuse.epilogue.lowering import cpp_float


def cpp(fn, element="float32", **specs):
    return to_cpp(trace(fn, **specs), element, qualified=False)


def test_qualified_names_by_default():
    tree = to_cpp(trace(lambda acc: relu(acc)), "bfloat16_t")
    assert tree == ("tilefuse::epilogue::Store<\"D\", tilefuse::bfloat16_t, "
                    "tilefuse::epilogue::Relu<tilefuse::epilogue::Acc>>")


def test_every_leaf_kind_and_argument_order():
    def epi(acc, alpha, bias, per_row, c):
        return alpha * acc + bias + per_row + c

    tree = cpp(epi, alpha=1.0, bias=(8,), per_row=(4, 1), c=(4, 8))
    assert tree == ('Store<"D", float, Add<Add<Add<Mul<Scalar<"alpha">, Acc>, RowBroadcast<"bias", float>>, '
                    'ColBroadcast<"per_row", float>>, AuxLoad<"c", float>>>')
    # Parents before children, left to right: EpilogueArguments<Tree>::argument_names()'s order.
    assert tree.argument_names == ["D", "alpha", "bias", "per_row", "c"]


def test_reused_values_are_spelled_twice_but_sinks_placed_once():
    def epi(acc):
        s = sigmoid(acc)
        return {"D": s * s, "s": s, "sum": reduce_sum(s, dim=1)}

    tree = cpp(epi)
    assert tree == 'Store<"D", float, Mul<RowReduce<"sum", reduce::Sum, Store<"s", float, Sigmoid<Acc>>>, Sigmoid<Acc>>>'
    assert tree.count("reduce::Sum") == 1


def test_outputs_outside_the_root_expression_ride_on_a_where():
    tree = cpp(lambda acc: {"D": relu(acc), "e": exp(acc)})
    assert tree == 'Store<"D", float, Where<Constant<1.0f>, Relu<Acc>, Store<"e", float, Exp<Acc>>>>'


def test_per_output_and_per_input_element_types():
    def epi(acc, bias):
        z = acc + bias
        return {"D": gelu(z), "aux": z, "amax": amax(z, dim=0)}

    tree = to_cpp(trace(epi, bias=(8,)), "bf16", elements={"aux": "float32", "bias": "float16"}, qualified=False)
    assert 'Store<"aux", float,' in tree and 'RowBroadcast<"bias", tilefuse::half_t>' in tree
    assert 'Store<"D", tilefuse::bfloat16_t' in tree
    assert {a.name: a.dtype for a in tree.arguments} == {"D": "bfloat16", "amax": "float32", "aux": "float32",
                                                         "bias": "float16"}
    with pytest.raises(ValueError, match="'amax' is a reduction"):
        to_cpp(trace(epi, bias=(8,)), elements={"amax": "bf16"})
    with pytest.raises(ValueError, match="'nope' is neither an input nor an output"):
        to_cpp(trace(epi, bias=(8,)), elements={"nope": "bf16"})


@pytest.mark.parametrize("value, literal", [
    (0.5, "0.5f"), (2.0, "2.0f"), (-0.0, "-0.0f"), (0.1, "0.1f"), (1e-5, "1e-05f"), (3.0e38, "3e+38f"),
    (float("inf"), "cuda::std::numeric_limits<float>::infinity()"),
    (float("-inf"), "-cuda::std::numeric_limits<float>::infinity()"),
])
def test_constant_literals_round_trip_through_float(value, literal):
    from tilefuse.epilogue.proxy import float32
    assert cpp_float(float32(value)) == literal


def test_pretty_form_is_the_same_type():
    tree = to_cpp(trace(lambda acc, bias, c: relu(acc + bias) * 0.5 + c, bias=(8,), c=(4, 8)))
    assert "".join(tree.pretty.split()) == "".join(tree.split())
