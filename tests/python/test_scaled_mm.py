"""tilefuse.scaled_mm without a GPU: torch._scaled_mm's rules (refusals, with torch on the CPU), the generated
FP8 source for two operand types, and the fake implementation of the tilefuse::scaled_mm op."""
import pytest

from tilefuse.epilogue import tensor, to_cpp, trace
from tilefuse.jit import gemm_sm90_source
from tilefuse.scaled_mm import _epilogue


def test_mixed_fp8_source_names_both_operand_types():
    tree = to_cpp(trace(_epilogue(True, False), acc=(64, 64), scale_a=1.0, scale_b=1.0, bias=tensor((64,), "bfloat16")),
                  "bfloat16")
    source = gemm_sm90_source(tree, "float8_e4m3", "Sm90Fp8PromotedConfig", element_b="float8_e5m2")
    assert ("GemmKernel<tilefuse::float_e4m3_t, Epilogue, tilefuse::gemm::Sm90Fp8PromotedConfig, "
            "tilefuse::gemm::sm90::TmaOperands<tilefuse::float_e4m3_t, tilefuse::gemm::Sm90Fp8PromotedConfig>, "
            "tilefuse::float_e5m2_t>") in source.source
    assert 'Scalar<"scale_a">' in str(tree) and 'RowBroadcast<"bias", tilefuse::bfloat16_t>' in str(tree)
    with pytest.raises(ValueError, match="two FP8 types"):
        gemm_sm90_source(tree, "bfloat16", "Sm90LargeConfig", element_b="float16")


def test_row_wise_scales_are_broadcast_vectors():
    tree = str(to_cpp(trace(_epilogue(False, False), acc=(64, 32), scale_a=tensor((64, 1), "float32"),
                            scale_b=tensor((1, 32), "float32")), "float16"))
    assert 'ColBroadcast<"scale_a", float>' in tree and 'RowBroadcast<"scale_b", float>' in tree


def test_block_wise_tree_holds_no_scales():
    # The mainloop applies block-wise scales; the epilogue adds the bias only.
    tree = str(to_cpp(trace(_epilogue(True, False, block_wise=True), acc=(64, 32), bias=tensor((32,), "bfloat16")),
                      "bfloat16"))
    assert "scale" not in tree and 'RowBroadcast<"bias"' in tree


def _fp8(torch, rows, cols, column_major=False):
    t = torch.zeros(cols, rows) if column_major else torch.zeros(rows, cols)
    t = t.to(torch.float8_e4m3fn)
    return t.t() if column_major else t


def test_torch_rules_are_enforced_with_sentences():
    torch = pytest.importorskip("torch")
    from tilefuse.errors import TensorArgumentError
    from tilefuse.scaled_mm import check_scaled_mm

    a, b = _fp8(torch, 32, 256), _fp8(torch, 256, 48, column_major=True)  # k = 256: two 128-blocks
    one = torch.ones((), dtype=torch.float32)
    assert check_scaled_mm(a, b, one, one, out_dtype=torch.bfloat16) == ("per-tensor", "bfloat16")
    assert check_scaled_mm(a, b, torch.ones(32, 1), torch.ones(1, 48), out_dtype=torch.float32)[0] == "row-wise"
    assert check_scaled_mm(a, b, one, one)[1] == "float8_e4m3"  # default: a's dtype
    # torch's leniencies: a (1, n) bias, a scale_result beside a bf16 output (ignored)
    assert check_scaled_mm(a, b, one, one, torch.ones(1, 48, dtype=torch.bfloat16), torch.bfloat16, one)
    # block-wise: scale_a (m, ceil(k/128)) with strides (1, m), scale_b (ceil(k/128), ceil(n/128)) K-block-major
    sa_block, sb_block = torch.ones(2, 32).t(), torch.ones(1, 2).t()
    assert check_scaled_mm(a, b, sa_block, sb_block, out_dtype=torch.bfloat16) == ("block-wise", "bfloat16")
    assert check_scaled_mm(a, b, sa_block, sb_block, torch.ones(48, dtype=torch.float16), torch.float16)[0] == "block-wise"
    cases = [
        ((a, b, torch.ones(32, 2), sb_block), {}, "block-wise scale_a .* has strides"),
        ((a, b, sa_block, sb_block), {"out_dtype": torch.float8_e4m3fn}, "block-wise scales with an"),
        ((a, b, torch.ones(3, 32).t(), sb_block), {}, "block-wise"),
        ((a, b.contiguous(), one, one), {}, "column-major"),
        ((a, _fp8(torch, 256, 40, True), one, one), {}, "multiples of 16"),
        ((a.to(torch.bfloat16), b, one, one), {}, "float8_e4m3fn"),
        ((a, b, torch.ones(32, 1), torch.ones(48, 1)), {}, "neither per-tensor"),
        ((a, b, one, one.double()), {}, "float32"),
        ((a, b, one, one), {"out_dtype": torch.float32, "bias": torch.ones(48)}, "bias goes with"),
        ((a, b, one, one), {"out_dtype": torch.bfloat16, "bias": torch.ones(48, dtype=torch.float16)}, "output's dtype"),
        ((a, b, one, one), {"out_dtype": torch.bfloat16, "scale_result": torch.ones(2)}, "one float32 value"),
        ((a.to(torch.float8_e5m2), b.to(torch.float8_e5m2), one, one), {}, "e5m2 x e5m2"),
        ((a, b, one, one), {"out_dtype": torch.bfloat16, "bias": 1.0}, "bias must be a torch tensor"),
        ((a, b, one, one), {"out_dtype": torch.bfloat16, "bias": torch.ones(2, 48, dtype=torch.bfloat16)}, "n = 48"),
    ]
    for args, kwargs, match in cases:
        with pytest.raises(TensorArgumentError, match=match):
            check_scaled_mm(*args, **kwargs)


def test_op_fake_implementation():
    torch = pytest.importorskip("torch")
    import tilefuse.ops  # noqa: F401 - registers tilefuse::scaled_mm (pyflakes: used by registration)
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        a = torch.empty(200, 128, dtype=torch.float8_e4m3fn, device="cuda")
        b = torch.empty(96, 128, dtype=torch.float8_e5m2, device="cuda").t()
        s = torch.empty((), dtype=torch.float32, device="cuda")
        y = torch.ops.tilefuse.scaled_mm(a, b, s, s, out_dtype=torch.bfloat16)
        assert tuple(y.shape) == (200, 96) and y.dtype == torch.bfloat16


def test_the_rules_are_checked_once_per_signature(monkeypatch):
    torch = pytest.importorskip("torch")
    import importlib

    module = importlib.import_module("tilefuse.scaled_mm")  # the module (tilefuse.scaled_mm is the function)

    calls = []
    monkeypatch.setattr(module, "check_scaled_mm", lambda *args: calls.append(args) or ("per-tensor", "bfloat16"))
    monkeypatch.setattr(module.ScaledGemm, "run", lambda self, a, b, **kw: "ran")
    monkeypatch.setattr(module, "_CHECKED", {})
    a, b = _fp8(torch, 32, 256), _fp8(torch, 256, 48, column_major=True)
    one = torch.ones((), dtype=torch.float32)
    assert module.scaled_mm(a, b, one, one, out_dtype=torch.bfloat16) == "ran"
    module.scaled_mm(a.clone(), b, one.clone(), one, out_dtype=torch.bfloat16)  # same signature: no new check
    assert len(calls) == 1
    module.scaled_mm(_fp8(torch, 64, 256), b, one, one, out_dtype=torch.bfloat16)  # a new shape is checked
    assert len(calls) == 2
