"""The numpy evaluator agrees with each example's formula written plainly (so the C++ test, which uses
the evaluator, checks the tracer too)."""
import numpy as np
import pytest

from examples import examples, random_acc
from tilefuse.epilogue import evaluate, trace


@pytest.mark.parametrize("example", examples(), ids=lambda e: e.name)
def test_evaluate_matches_the_formula(example):
    acc = random_acc()
    got = evaluate(trace(example.fn, **example.specs), acc, **example.data)
    want = example.formula(acc.astype(np.float64), example.data)
    assert set(got) == set(want)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=2e-6, atol=2e-6, err_msg=name)
