"""tilefuse.Gemm on a machine without a GPU: the tile model, the layout parser and the refusals that come
before any kernel work."""
import struct
import types

import numpy as np
import pytest

import tilefuse
from tilefuse.errors import TensorArgumentError
from tilefuse.gemm import parse_layout, plan_gemm


def test_tile_model_is_the_cpp_planners():
    # The cases docs/notes/gemm_sm90.md gives for choose_sm90_tile on 132 SMs, through tilefuse._C.
    def tile(m, n, k):
        return plan_gemm(m, n, k, 1, (9, 0, 132))["tile"]
    assert tile(8192, 8192, 8192) == "128x256"
    assert tile(1000, 1000, 1000) == "128x128"
    assert tile(128, 8192, 8192) == "128x64"
    assert tile(1024, 8192, 1024) == "128x256"  # below k = 4096, 128x64 only for m <= 256
    assert tile(128, 8192, 1024) == "128x64"
    assert tile(197, 3072, 768) == "128x64"
    # 64x64 ping-pong where the 128-row tiles leave most SMs idle (docs/notes/gemm_sm90.md, "64-row tiles")
    assert tile(197, 768, 3072) == "64x64"
    assert tile(394, 768, 3072) == "64x64"
    assert tile(197, 768, 768) == "64x64"
    assert tile(1576, 768, 3072) == "128x96"  # 104 tiles in one round against 128x128's 78
    assert tile(1576, 768, 768) == "128x128"  # 128x96 only for k >= 2048
    assert tile(3152, 768, 3072) == "128x160"  # 125 tiles in one round against 128x256's 75
    assert tile(1576, 3072, 768) == "128x128"  # 128x160 would need two rounds
    wide = plan_gemm(1576, 3072, 768, 1, (9, 0, 132), "128x160")
    assert wide["config"] == "Sm90WideConfig" and wide["tile_shape"] == (128, 160, 64)
    short = plan_gemm(197, 768, 3072, 1, (9, 0, 132), "64x64")
    assert short["config"] == "Sm90ShortConfig" and short["tile_shape"] == (64, 64, 64)
    assert plan_gemm(1024, 8192, 1024, 1, (9, 0, 132), "128x64")["config"] == "Sm90NarrowConfig"
    with pytest.raises(ValueError, match="tile='96x96'"):
        tilefuse.Gemm(tile="96x96")


def test_cpu_tensors_are_refused_before_any_kernel_work():
    a = np.zeros((64, 32), np.float16)
    b = np.zeros((64, 32), np.float16).T  # K-major
    with pytest.raises(TensorArgumentError, match="run on a CUDA device"):
        tilefuse.Gemm().run(a, b)


def test_unsupported_dtype_names_the_supported_ones():
    a = np.zeros((64, 32), np.float32)
    with pytest.raises(TensorArgumentError, match="bfloat16"):
        tilefuse.Gemm().run(a, np.zeros((32, 16), np.float32))


def test_bad_tile_is_refused():
    with pytest.raises(ValueError, match="128x256"):
        tilefuse.Gemm(tile="64x128")


def _words(header, nodes, block=(-1,) * 7 + (0,), split=(-1, -1), store=(-1, -1), residual=(0,) + (-1,) * 5,
           kernel=(4, 2, 0, 1), gate=(-1,) * 6):
    words = [8] + header + [len(nodes)] + list(block) + list(split) + list(store) + list(residual) + list(kernel)
    words += list(gate)
    for kind, data, ld, batch_stride, value, name in nodes:
        raw = name.encode().ljust(32, b"\0")
        words += [kind, data, ld, batch_stride, value] + [struct.unpack("<q", raw[i:i + 8])[0] for i in range(0, 32, 8)]
    return words


def test_layout_parser_reads_fields_and_names():
    header = [512, 0, 128, 256, 260, 272, 280, 288, 296, 480, 484, 488, 384, 200000]
    words = _words(header, [(8, 304, 312, 320, -1, "D"), (3, 336, -1, 344, -1, "bias"),
                            (1, 360, -1, -1, 352, "a_rather_long_name_of_32_chars__")])
    layout = parse_layout(words)
    assert layout["size"] == 512 and layout["tma_b"] == 128 and layout["smem_bytes"] == 200000
    assert [n["name"] for n in layout["nodes"]] == ["D", "bias", "a_rather_long_name_of_32_chars__"]
    assert [n["kind"] for n in layout["nodes"]] == ["store", "row_broadcast", "scalar"]
    assert layout["nodes"][2]["value"] == 352 and layout["nodes"][1]["ld"] == -1
    assert layout["block_scaled"] == 0
    assert (layout["stages"], layout["consumer_warpgroups"], layout["ping_pong"], layout["cluster_m"]) == (4, 2, 0, 1)
    block = parse_layout(_words(header, [], block=(488, 496, 504, 512, 520, 528, 536, 1)))
    assert block["block_scaled"] == 1 and block["block_scale_b"] == 496 and block["block_scale_a_vector"] == 536
    assert block["nodes"] == []
    split = parse_layout(_words(header, [(8, 304, 312, 320, -1, "D")], split=(544, 552)))
    assert (split["split_sums"], split["split_tickets"]) == (544, 552) and split["nodes"][0]["name"] == "D"
    assert layout["split_sums"] == -1
    assert (layout["tma_d"], layout["d_by_tma"]) == (-1, -1)
    stored = parse_layout(_words(header, [(8, 304, 312, 320, -1, "D")], store=(640, 768)))
    assert (stored["tma_d"], stored["d_by_tma"]) == (640, 768) and stored["nodes"][0]["name"] == "D"
    assert not layout["tma_aux_kernel"] and not layout["tma_column_kernel"]
    by_tma = parse_layout(_words(header, [(8, 304, 312, 320, -1, "D")], store=(640, 768),
                                 residual=(3, 800, 928, 932, 304, 336)))
    assert by_tma["tma_aux_kernel"] and by_tma["tma_column_kernel"]
    assert (by_tma["tma_aux"], by_tma["batch_mask_aux"], by_tma["column_by_tma"]) == (800, 928, 932)
    assert (by_tma["staged_aux"], by_tma["staged_column"]) == (304, 336) and by_tma["nodes"][0]["name"] == "D"
    assert (layout["row_flags"], layout["rows_per_flag"], layout["first_tile_row"]) == (-1, -1, -1)
    gated = parse_layout(_words(header, [(8, 304, 312, 320, -1, "D")], gate=(576, 584, 588, 448, 592, 596)))
    assert (gated["row_flags"], gated["rows_per_flag"], gated["first_tile_row"]) == (576, 584, 588)
    assert (gated["tma_own"], gated["own_tile_begin"], gated["own_tile_end"]) == (448, 592, 596)
    assert (layout["tma_own"], layout["own_tile_begin"], layout["own_tile_end"]) == (-1, -1, -1)
    assert gated["nodes"][0]["name"] == "D"


def test_layout_of_another_version_is_refused():
    with pytest.raises(RuntimeError, match="version"):
        parse_layout([1] + [0] * 43)


def test_every_reduction_has_an_identity():
    from tilefuse.epilogue.graph import REDUCTIONS
    from tilefuse.kernel_params import IDENTITY
    assert set(IDENTITY) == set(REDUCTIONS)


def test_epilogue_tensor_layouts_are_checked_against_the_problem():
    from tilefuse.kernel_params import layout_of

    # matrices: ld from the row stride; a batch dimension equal to the problem's, or 1 (shared)
    assert layout_of("r", "aux_load", (64, 32), (40, 1), 1) == (40, 0)
    assert layout_of("r", "aux_load", (4, 64, 32), (2048, 32, 1), 4) == (32, 2048)
    assert layout_of("r", "aux_load", (1, 64, 32), (2048, 32, 1), 4) == (32, 0)
    with pytest.raises(TensorArgumentError, match="batch dimension of 2, but the problem's batch is 4"):
        layout_of("r", "aux_load", (2, 64, 32), (2048, 32, 1), 4)
    with pytest.raises(TensorArgumentError, match="unit stride along its rows"):
        layout_of("r", "aux_load", (64, 32), (1, 64), 1)
    # vectors: unit stride along the length, also for column vectors (m, 1) whose length is the rows
    assert layout_of("bias", "row_broadcast", (32,), (1,), 4) == (0, 0)
    assert layout_of("bias", "row_broadcast", (1, 1, 32), (32, 32, 1), 4) == (0, 0)
    assert layout_of("bias", "row_broadcast", (4, 32), (32, 1), 4) == (0, 32)
    assert layout_of("s", "col_broadcast", (64, 1), (1, 1), 1) == (0, 0)
    with pytest.raises(TensorArgumentError, match="unit stride along its length"):
        layout_of("s", "col_broadcast", (64, 1), (2, 1), 1)  # x[:, :1] of a (64, 2) tensor
    with pytest.raises(TensorArgumentError, match="unit stride along its length"):
        layout_of("s", "col_broadcast", (64, 1), (0, 1), 1)  # an expanded vector
    with pytest.raises(TensorArgumentError, match="batch dimension of 2"):
        layout_of("s", "col_broadcast", (2, 64, 1), (64, 1, 1), 4)


def test_operands_of_any_layout_and_k_are_copied_into_the_hopper_layouts():
    """hopper_operands: a row-major, b K-major, k zero-padded to a multiple of 8, copies only where needed;
    the product is unchanged."""
    torch = pytest.importorskip("torch")
    from tilefuse.gemm import hopper_operands

    def product(a, b):
        return a.double() @ b.double()

    cases = {
        "aligned, kernel layouts": (torch.randn(6, 16), torch.randn(5, 16).t()),
        "odd k": (torch.randn(6, 13), torch.randn(5, 13).t()),
        "row-major b": (torch.randn(6, 16), torch.randn(16, 5)),
        "transposed a": (torch.randn(16, 6).t(), torch.randn(5, 16).t()),
        "batched, odd k, strided": (torch.randn(3, 6, 26)[:, :, ::2], torch.randn(3, 13, 5)),
        "shared b (batch stride 0)": (torch.randn(3, 6, 16), torch.randn(1, 5, 16).transpose(-1, -2).expand(3, 16, 5)),
        "k = 0": (torch.randn(6, 0), torch.randn(0, 5)),
    }
    for name, (a, b) in cases.items():
        a2, b2 = hopper_operands(a, b)
        k2 = a2.shape[-1]
        assert k2 % 8 == 0 and b2.shape[-2] == k2, name
        assert a2.stride(-1) == 1 and b2.stride(-2) == 1, name  # a row-major, b K-major
        assert torch.allclose(product(a2, b2), product(a, b)), name
        if name == "aligned, kernel layouts":
            assert a2 is a and b2.data_ptr() == b.data_ptr()  # nothing copied


def test_the_packing_copys_launch_is_the_cpp_one():
    """tilefuse._C.pack_k_major_launch (what tilefuse.gemm_pack launches): gemm::pack_k_major_launch's Params
    bytes with the pointers left to patch, one 256-thread block per 64 x 64 tile, the batches on z up to 65535,
    and a clear error where a grid cannot hold the tiles."""
    import struct

    from tilefuse import _C

    params, src, dst, grid, grid_z, threads = _C.pack_k_major_launch(127, 8191, 8191, 1, 3, 127 * 8191, 8192)
    assert (src, dst, threads) == (0, 8, 256)
    assert grid == 2 * 128 and grid_z == 3
    fields = struct.unpack("<2Q8q", params)
    assert fields == (0, 0, 127, 8191, 8192, 8191, 1, 127 * 8191, 3, 2)  # rows, k, padded_k, strides, batches, row tiles
    assert _C.pack_k_major_launch(64, 13, 1, 64, 70000, 832, 16)[4] == 65535  # blocks step over the rest
    with pytest.raises(ValueError, match="more 64 x 64 tiles than a grid holds"):
        _C.pack_k_major_launch(1 << 40, 64, 64, 1, 1, 0, 1 << 20)


def test_empty_problems_get_their_outputs_from_the_epilogue(monkeypatch):
    """An empty problem's result (tilefuse.Gemm._empty_result) without a GPU: the epilogue traced on the problem
    with every 0 made 1 names the outputs, their dtypes and shapes (stores empty, reductions at their identity);
    allocation stood in for on the CPU."""
    torch = pytest.importorskip("torch")
    import tilefuse.gemm as gemm_module
    from types import SimpleNamespace

    from tilefuse.epilogue import amax, relu

    def cpu_allocate(specs, device, out=None):
        return {name: torch.empty(shape, dtype=value) if kind == "store" else torch.full(shape, value)
                for name, kind, shape, value, _ in specs}

    monkeypatch.setattr(gemm_module, "allocate", cpu_allocate)

    def epi(acc, bias):
        y = relu(acc + bias)
        return {"D": y, "colmax": amax(y, 0), "rowmax": amax(y, 1)}

    ops = SimpleNamespace(m=0, n=40, k=24, batch=1, dtype="bfloat16", device_index=0)
    got = tilefuse.Gemm(epilogue=epi, out_dtype="float32")._empty_result(ops, {"bias": torch.zeros(40,
                                                                                                 dtype=torch.bfloat16)},
                                                                           None)
    assert got["D"].shape == (0, 40) and got["D"].dtype == torch.float32
    assert torch.equal(got["colmax"], torch.zeros(40)) and got["rowmax"].shape == (0,)
    plain = tilefuse.Gemm()._empty_result(ops, {}, None)
    assert plain.shape == (0, 40) and plain.dtype == torch.bfloat16


def test_the_sm80_family_plans_compiles_and_packs_as_launch_tiled():
    """tilefuse.Gemm's sm80 family without a GPU: the planner's sm80 plan (an sm_80 device, unaligned operands of
    two layouts, K split), the operation NVRTC compiles for it, and the bytes packed for the kernel and the split-K
    pass as gemm::detail::launch_tiled / launch_split_k_epilogue fill them."""
    import struct
    from types import SimpleNamespace

    from tilefuse.gemm_sm80 import sm80_launches
    from tilefuse.jit import NvrtcNotFoundError, nvrtc
    from tilefuse.tensors import ROW_MAJOR

    try:
        nvrtc.version()
    except NvrtcNotFoundError as error:
        pytest.skip(f"NVRTC is not available here: {error}")
    m, n, k = 127, 255, 8191
    ops = SimpleNamespace(m=m, n=n, k=k, batch=1, dtype="bfloat16", layout_a=ROW_MAJOR, layout_b=ROW_MAJOR,
                          aligned=False, device_index=0, lda=k, ldb=n, batch_stride_a=m * k, batch_stride_b=k * n)
    gemm = tilefuse.Gemm(kernel="sm80")
    whole = gemm._whole_plan(ops, (8, 0, 108), {})
    assert (whole["family"], whole["sm80_config"], whole["sm80_aligned"]) == ("sm80", "Sm80LargeConfig", False)
    splits = whole["split_k"]
    assert splits > 1
    operation = gemm._plan_sm80(whole, ops, {}, (8, 0))
    assert operation.split_k == splits and operation.arch == "sm_80"
    # gemm::Gemm::describe()'s words (lda = 8191: the leading dimension is the element-wise path's reason)
    assert operation.describe().startswith(
        "sm80 mma.sync GEMM (bf16 inputs), tile 128x256x64, 8 warps, 3 stages, element-wise path (lda = 8191 or "
        f"ldb = 255 is not a multiple of 8 elements), split-K {splits} (Hopper kernel refused: "), operation.describe()
    assert "A row-major, B row-major, sm_80" in operation.describe(), operation.describe()
    # Packing, with made-up offsets: 8 bytes apart, so each field is read back where it was put.
    names = ("m", "n", "k", "batch", "lda", "ldb", "batch_stride_a", "batch_stride_b", "k_per_split", "split_k",
             "tiles_m", "tiles_n", "a", "b", "partials")
    layout = {name: 8 * i for i, name in enumerate(names)}
    reduce_names = ("reduce_m", "reduce_n", "reduce_k", "reduce_batch", "reduce_split_k", "reduce_partials")
    layout.update({name: 8 * i for i, name in enumerate(reduce_names)})
    layout.update(size=8 * len(names), reduce_size=8 * len(reduce_names), tile_m=128, tile_n=256, tile_k=64,
                  threads=256, smem_bytes=147456, nodes=[], reduce_nodes=[])
    kernel, pass_kernel = SimpleNamespace(kernel=11), SimpleNamespace(kernel=12)
    (main, second), numel = sm80_launches(operation, kernel, pass_kernel, layout, ops, {}, {})
    q = lambda t, name: struct.unpack_from("<q", t, layout[name])[0]  # noqa: E731
    i = lambda t, name: struct.unpack_from("<i", t, layout[name])[0]  # noqa: E731
    assert [q(main.template, f) for f in ("m", "n", "k", "batch", "lda", "ldb", "batch_stride_a", "batch_stride_b")] \
        == [m, n, k, 1, k, n, m * k, k * n]
    assert q(main.template, "k_per_split") == -(-(-(-k // 64)) // splits) * 64
    assert [i(main.template, f) for f in ("split_k", "tiles_m", "tiles_n")] == [splits, 1, 1]
    assert (main.grid, main.grid_z, main.threads, main.smem_bytes) == (1, splits, 256, 147456)
    assert sorted(key for _, key in main.pointers) == ["a", "b", "partials"]
    assert [q(second.template, f) for f in ("reduce_m", "reduce_n", "reduce_k", "reduce_batch")] == [m, n, k, 1]
    assert i(second.template, "reduce_split_k") == splits and second.pointers == [(layout["reduce_partials"], "partials")]
    assert numel == splits * m * n


def test_the_skinny_family_plans_compiles_and_packs_as_launch_skinny():
    """tilefuse.Gemm's skinny family without a GPU: the planner picks it for m <= 16 aligned (on sm_90 and sm_80
    facts alike) and not past 8 or for unaligned rows; the operation NVRTC compiles; the bytes packed as
    gemm::launch_skinny fills them, grid (ceil(n / 8), 1, batch)."""
    import struct
    from types import SimpleNamespace

    from tilefuse.gemm_skinny import skinny_launch
    from tilefuse.jit import NvrtcNotFoundError, nvrtc
    from tilefuse.tensors import COLUMN_MAJOR, ROW_MAJOR

    try:
        nvrtc.version()
    except NvrtcNotFoundError as error:
        pytest.skip(f"NVRTC is not available here: {error}")

    def facts(m, aligned=True):
        return SimpleNamespace(m=m, n=1001, k=4100, batch=3, dtype="bfloat16", layout_a=ROW_MAJOR,
                               layout_b=COLUMN_MAJOR, aligned=aligned, device_index=0, lda=4104, ldb=4112,
                               batch_stride_a=m * 4104, batch_stride_b=0)

    gemm = tilefuse.Gemm()
    for device in ((9, 0, 132), (8, 0, 108)):
        assert gemm._whole_plan(facts(8), device, {})["family"] == "skinny"  # 126 blocks x 3 batches
        few = facts(8)
        few.batch = 1  # 126 blocks: fewer than the SMs
        assert gemm._whole_plan(few, device, {})["family"] == ("skinny" if device[2] <= 126 else "sm90"), device
        assert gemm._whole_plan(facts(17), device, {})["family"] != "skinny"
        assert gemm._whole_plan(facts(4, aligned=False), device, {})["family"] != "skinny"
    ops = facts(5)
    whole = gemm._whole_plan(ops, (9, 0, 132), {})
    operation = gemm._plan_skinny(whole, ops, {}, (9, 0))
    assert operation.arch == "sm_90a" and operation.describe().startswith("skinny kernel: m = 5 rows"), operation.describe()
    names = ("m", "n", "k", "batch", "a", "lda", "batch_stride_a", "b", "ldb", "batch_stride_b")
    layout = {name: 8 * i for i, name in enumerate(names)}
    layout.update(size=8 * len(names), threads=128, columns=8, nodes=[])
    launch = skinny_launch(operation, SimpleNamespace(kernel=11), layout, ops, {}, {})
    q = lambda name: struct.unpack_from("<q", launch.template, layout[name])[0]  # noqa: E731
    assert [q(f) for f in ("m", "n", "k", "batch", "lda", "batch_stride_a", "ldb", "batch_stride_b")] == \
        [5, 1001, 4100, 3, 4104, 5 * 4104, 4112, 0]
    assert (launch.grid, launch.grid_z, launch.threads, launch.smem_bytes) == (126, 3, 128, 0)
    assert sorted(key for _, key in launch.pointers) == ["a", "b"]


def test_epilogues_reading_coordinates_are_refused_past_2_24():
    """row() / col() / batch() are floats, exact below 2^24: tilefuse.Gemm refuses larger problems for such a
    tree, as gemm::Gemm does, and takes the same tree below it and other trees at any size."""
    from types import SimpleNamespace

    import tilefuse
    from tilefuse.epilogue import relu, row, where
    from tilefuse.errors import TensorArgumentError

    gemm = tilefuse.Gemm(epilogue=lambda acc: where(row() < 4, relu(acc), acc))
    big = SimpleNamespace(batch=1, m=1 << 24, n=8, dtype="bfloat16")
    with pytest.raises(TensorArgumentError, match=r"coordinates .* exact only below 2\^24"):
        gemm._traced(big, {})
    gemm._traced(SimpleNamespace(batch=1, m=(1 << 24) - 1, n=8, dtype="bfloat16"), {})
    tilefuse.Gemm(epilogue=lambda acc: relu(acc))._traced(big, {})


def test_the_residual_fact_follows_the_tree_and_the_residuals_strides():
    """Gemm._residual_by_tma, the planner's GemmRequest::residual_by_tma as gemm::Gemm finds it: a tree with one
    16-bit residual whose rows TMA can read (16-byte base, ld a multiple of 8), whatever else the tree reads."""
    torch = pytest.importorskip("torch")
    from tilefuse.epilogue import relu

    bf16 = torch.bfloat16
    m, n = 64, 48
    gemm = tilefuse.Gemm(epilogue=lambda acc, bias, residual: relu(acc + bias + residual))
    ops = types.SimpleNamespace(m=m, n=n, k=32, batch=1, dtype="bfloat16", device_index=None)  # (no GPU to check on)
    storage = torch.zeros(m * (n + 1) + 8, dtype=bf16)
    assert storage.data_ptr() % 16 == 0
    bias = torch.zeros(n, dtype=bf16)
    aligned = storage[:m * n].view(m, n)
    assert gemm._residual_by_tma(ops, {"bias": bias, "residual": aligned})
    assert gemm._residual_by_tma(ops, {"bias": bias.view(1, n), "residual": aligned})  # a 2-D bias is no residual
    assert not gemm._residual_by_tma(ops, {"bias": bias, "residual": storage[:m * (n + 1)].view(m, n + 1)[:, :n]})
    assert not gemm._residual_by_tma(ops, {"bias": bias, "residual": storage[1:m * n + 1].view(m, n)})
    assert not gemm._residual_by_tma(ops, {"bias": bias, "residual": aligned.float()})  # a 32-bit residual
    plain = tilefuse.Gemm(epilogue=lambda acc, bias: relu(acc + bias))
    assert not plain._residual_by_tma(ops, {"bias": bias})
    twice = tilefuse.Gemm(epilogue=lambda acc, residual: acc + residual * residual)  # read twice: not staged
    assert not twice._residual_by_tma(ops, {"residual": aligned})


@pytest.mark.parametrize("make", [
    lambda torch, bf16: torch.arange(64.).to(bf16).reshape(8, 8)[:, ::2],  # no unit stride
    lambda torch, bf16: torch.arange(4.).to(bf16).reshape(1, 4).expand(6, 4),  # rows that overlap (stride 0)
    lambda torch, bf16: torch.arange(4.).to(bf16).reshape(4, 1).expand(4, 6),  # columns that overlap
    lambda torch, bf16: torch.zeros(40, 1, dtype=bf16).as_strided((40, 0), (1, 2)),  # empty k: strides (1, 2)
    lambda torch, bf16: torch.arange(80.).to(bf16).reshape(2, 8, 5)[:, :, ::2],  # a batch of them
], ids=["step2", "expand_rows", "expand_cols", "empty_k", "batched"])
def test_matrices_of_neither_layout_are_copied_contiguous_as_torch_matmul_takes_them(make):
    """Gemm.run / plan copy a matrix that is neither row- nor column-major (the kernels' layout check refuses it),
    and the copy is what the call keys and reads (tests/python/test_gemm_gpu.py runs such calls); a matrix of
    either layout is passed through as it is; FP8 keeps torch._scaled_mm's layout rules (no copy)."""
    torch = pytest.importorskip("torch")

    t = make(torch, torch.bfloat16)
    gemm = tilefuse.Gemm()
    copied = gemm._strided_copied(t)
    assert copied is not t and copied.is_contiguous() and torch.equal(copied, t)
    rows, cols = copied.shape[-2:]
    assert copied.stride()[-1] == 1 and copied.stride()[-2] >= cols  # row-major, rows apart
    for either in (copied, copied.transpose(-1, -2).contiguous().transpose(-1, -2)):  # row-, column-major
        assert gemm._strided_copied(either) is either
    from tilefuse.gemm_row_gate import RowGatedGemm

    assert RowGatedGemm(rows_per_flag=8)._strided_copied(t) is t  # a copy of A would not be where the rows land
    fp8 = object.__new__(tilefuse.Gemm)
    fp8._CONVERTS = False
    assert tilefuse.Gemm._strided_copied(fp8, t) is t
