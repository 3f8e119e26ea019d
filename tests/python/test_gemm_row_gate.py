"""tilefuse.gemm_row_gate.RowGatedGemm's checks and plan, without a GPU (the kernel's own tests are
tests/gpu/gemm_sm90_row_gate_test.cu; the gated all-gather's, test_parallel_gpu.py)."""
import pytest

torch = pytest.importorskip("torch")

from tilefuse.errors import TensorArgumentError  # noqa: E402
from tilefuse.gemm_row_gate import RowGatedGemm  # noqa: E402


def _operands(m=256, k=64, n=128):
    return torch.zeros(m, k, dtype=torch.bfloat16), torch.zeros(n, k, dtype=torch.bfloat16).t()


def test_bad_gates_are_refused_when_made():
    with pytest.raises(ValueError, match="rows_per_flag=0"):
        RowGatedGemm(rows_per_flag=0)
    with pytest.raises(ValueError, match="first_row=-1"):
        RowGatedGemm(rows_per_flag=64, first_row=-1)


@pytest.mark.parametrize("flags, match", [
    (torch.zeros(4, dtype=torch.int32), "torch.uint32"),
    (torch.zeros(4, 2, dtype=torch.uint32), "1-d"),
    (torch.zeros(8, dtype=torch.uint32)[::2], "contiguous"),
    (torch.zeros(3, dtype=torch.uint32), "holds 3 flags"),
    ([0, 0, 0, 0], "torch.uint32"),
])
def test_bad_flags_name_what_to_pass(flags, match):
    a, b = _operands()
    with pytest.raises(TensorArgumentError, match=match):
        RowGatedGemm(rows_per_flag=64).run(a, b, row_flags=flags)


def test_a_first_row_past_the_rows_is_refused():
    a, b = _operands()
    with pytest.raises(TensorArgumentError, match="first_row = 256 is past"):
        RowGatedGemm(rows_per_flag=64, first_row=256).run(a, b, row_flags=torch.zeros(4, dtype=torch.uint32))


def test_good_flags_on_the_cpu_reach_the_gemms_device_check():
    a, b = _operands()
    with pytest.raises(TensorArgumentError, match="CUDA device"):
        RowGatedGemm(rows_per_flag=64).run(a, b, row_flags=torch.zeros(4, dtype=torch.uint32))


def test_the_plan_is_an_unsplit_hopper_tile_wrapped_in_the_gate():
    from types import SimpleNamespace

    from tilefuse.tensors import COLUMN_MAJOR, ROW_MAJOR

    # 256 x 256 x 16384 is split 16 ways by the planner when it may; the gate forbids the split.
    gemm = RowGatedGemm(rows_per_flag=128, first_row=128)
    ops = SimpleNamespace(m=256, n=256, k=16384, batch=1, layout_a=ROW_MAJOR, layout_b=COLUMN_MAJOR, aligned=True)
    whole = gemm._whole_plan(ops, (9, 0, 132), {})
    assert whole["family"] == "sm90" and whole["split_k"] == 1 and not whole["copy_operands"]
    tile, config, why, split = gemm._choose(ops, (9, 0, 132), whole)
    assert config[0].startswith("tilefuse::gemm::Sm90RowGate<tilefuse::gemm::Sm90") and split[0] == 1
    assert "gated" in why
    # operands the kernel cannot read where they lie (a copy would not be where the rows land) are refused
    with pytest.raises(TensorArgumentError, match="where they lie"):
        gemm._whole_plan(SimpleNamespace(m=256, n=256, k=100, batch=1, layout_a=COLUMN_MAJOR, layout_b=COLUMN_MAJOR,
                                         aligned=False), (9, 0, 132), {})


def test_own_rows_are_checked_before_any_kernel_work():
    a, b = _operands()
    flags = torch.zeros(4, dtype=torch.uint32)
    with pytest.raises(ValueError, match="own_rows=-1"):
        RowGatedGemm(rows_per_flag=64, own_rows=-1)
    with pytest.raises(TensorArgumentError, match="needs own="):
        RowGatedGemm(rows_per_flag=64, first_row=128, own_rows=128).run(a, b, row_flags=flags)
    with pytest.raises(TensorArgumentError, match="without own_rows"):
        RowGatedGemm(rows_per_flag=64).run(a, b, row_flags=flags, own=a[:128])
    for bad in (torch.zeros(64, 64, dtype=torch.bfloat16), torch.zeros(128, 64, dtype=torch.float16),
                torch.zeros(64, 128, dtype=torch.bfloat16).t(), a[:128, :32]):
        with pytest.raises(TensorArgumentError, match=r"own must be a contiguous, 16-byte aligned \(128, 64\)"):
            RowGatedGemm(rows_per_flag=64, first_row=128, own_rows=128).run(a, b, row_flags=flags, own=bad)
    with pytest.raises(TensorArgumentError, match=r"own rows \[192, 320\) pass a's 256 rows"):
        RowGatedGemm(rows_per_flag=64, first_row=192, own_rows=128).run(a, b, row_flags=flags, own=a[:128].clone())


@pytest.mark.parametrize("first_row, own_rows, m, ok", [
    (128, 128, 256, True), (0, 256, 256, True), (128, 100, 228, True),  # whole tiles, or ending at m
    (64, 128, 256, False), (128, 100, 256, False),  # starting or ending inside a 128-row tile
])
def test_own_rows_must_cover_whole_tiles(first_row, own_rows, m, ok):
    from types import SimpleNamespace

    gemm = RowGatedGemm(rows_per_flag=64, first_row=first_row, own_rows=own_rows)
    layout = {"tma_own": 0, "own_tile_begin": 128, "own_tile_end": 132}
    params, launch = bytearray(136), SimpleNamespace(maps=[], add_map=lambda *m: launch.maps.append(m))
    ops = SimpleNamespace(m=m, k=64, dtype="bfloat16")
    if ok:
        gemm._pack_own(params, launch, layout, ops, 128, 64)
        begin, end = int.from_bytes(params[128:132], "little"), int.from_bytes(params[132:136], "little")
        assert (begin, end) == (first_row // 128, -(-(first_row + own_rows) // 128))
        assert [m[1] for m in launch.maps] == ["arg:own"]
    else:
        with pytest.raises(TensorArgumentError, match="whole 128-row tiles"):
            gemm._pack_own(params, launch, layout, ops, 128, 64)
