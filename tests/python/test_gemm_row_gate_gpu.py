"""tilefuse.RowGatedGemm on one sm_90 GPU: every piece flagged at launch, and with own_rows the own rows read from
their own tensor while a's copy of them stays NaN and unflagged (a tile that read them from a, or waited for their
flag, would show NaN or trap). Small integers: exact against torch. The late-arrival cases are the C++ tests'
(tests/gpu/gemm_sm90_row_gate_test.cu) and the two-GPU ones test_parallel_gpu.py's."""
import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] != 9:
    pytest.skip("needs an sm_90 GPU (the row gate is the Hopper kernel's)", allow_module_level=True)

from tilefuse.gemm_row_gate import RowGatedGemm  # noqa: E402
from torch_checks import poison  # noqa: E402


def _integers(*shape, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    return torch.randint(-2, 3, shape, device="cuda", generator=g).to(torch.bfloat16)


@pytest.mark.parametrize("m, n, k, rows_per_flag, first_row, own_rows", [
    (1024, 512, 256, 256, 256, 256),   # one block of four in the middle
    (4096, 1024, 128, 2048, 2048, 2048),  # the last of two blocks
    (1000, 384, 72, 128, 896, 104),    # the own rows end at m, inside a tile
    (512, 256, 64, 128, 0, 512),       # every row is own
])
def test_own_rows_are_read_where_they_lie(m, n, k, rows_per_flag, first_row, own_rows):
    a = _integers(m, k, seed=m + k)
    w = _integers(n, k, seed=n)
    bias = _integers(n, seed=1)
    own = a[first_row:first_row + own_rows].clone()
    gathered = a.clone()
    gathered[first_row:first_row + own_rows] = float("nan")
    pieces = -(-m // rows_per_flag)
    flags = torch.ones(pieces, dtype=torch.uint32, device="cuda")
    for f in range(pieces):  # the pieces wholly inside the own rows: never flagged
        lo, hi = f * rows_per_flag, min(m, (f + 1) * rows_per_flag)
        if lo >= first_row and hi <= first_row + own_rows:
            flags[f] = 0
    gemm = RowGatedGemm(lambda acc, bias: acc + bias, rows_per_flag=rows_per_flag, first_row=first_row,
                        own_rows=own_rows)
    want = (a.float() @ w.float().t() + bias.float()).to(torch.bfloat16)
    for _ in range(2):  # the first call, then the warm one
        poison()  # outputs over NaN: a row the kernel skips must not find an earlier call's right answer
        got = gemm.run(gathered, w.t(), row_flags=flags, own=own, bias=bias)
        torch.cuda.synchronize()
        assert torch.equal(got, want), f"{m}x{n}x{k}, own rows [{first_row}, {first_row + own_rows})"
    other = own * 2  # a new own tensor: its map is encoded again
    a2 = a.clone()
    a2[first_row:first_row + own_rows] = other
    poison()  # the first call's output (equal to this one's outside the own rows) may lie where this one lands
    got = gemm.run(gathered, w.t(), row_flags=flags, own=other, bias=bias)
    assert torch.equal(got, (a2.float() @ w.float().t() + bias.float()).to(torch.bfloat16))


def test_gated_rows_without_own_rows_still_read_a():
    a, w = _integers(768, 64, seed=3), _integers(256, 64, seed=4)
    flags = torch.ones(3, dtype=torch.uint32, device="cuda")
    poison()
    got = RowGatedGemm(rows_per_flag=256, first_row=256).run(a, w.t(), row_flags=flags)
    assert torch.equal(got, (a.float() @ w.float().t()).to(torch.bfloat16))


def test_own_rows_that_split_a_tile_are_refused():
    a, w = _integers(512, 64, seed=5), _integers(256, 64, seed=6)
    flags = torch.ones(8, dtype=torch.uint32, device="cuda")
    gemm = RowGatedGemm(rows_per_flag=64, first_row=64, own_rows=128, tile="128x256")
    from tilefuse.errors import TensorArgumentError

    with pytest.raises(TensorArgumentError, match="whole 128-row tiles"):
        gemm.run(a, w.t(), row_flags=flags, own=a[64:192].clone())
