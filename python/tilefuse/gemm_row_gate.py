"""tilefuse.gemm_row_gate.RowGatedGemm: the Hopper GEMM whose rows of A arrive while it runs (gemm::Sm90RowGate).

A's rows come in pieces of rows_per_flag rows; the call's `row_flags` (a CUDA uint32 tensor, one flag per piece)
says which are in place: the kernel's producer waits for a tile's pieces to turn nonzero before loading them,
and the blocks walk the tile rows from the first one wholly past first_row (the rows in place at launch), wrapping. What writes the flags must
need no SM while the kernel holds them all: copies on the copy engine, each followed by a stream write
(torch.ops.symm_mem.stream_write_value32_), never a kernel. With own_rows, rows [first_row, first_row + own_rows)
are read from the call's `own` tensor where they lie (this rank's block of an all-gather) and never waited for:
nothing copies them into a first. tilefuse.overlap's gated all-gather uses it.
"""
import struct

from .errors import TensorArgumentError
from .gemm import Gemm


class RowGatedGemm(Gemm):
    """Gemm(epilogue) on the Hopper kernel with its rows of A gated: run(a, b, row_flags=flags, **arguments), or
    with own_rows > 0 run(a, b, row_flags=flags, own=rows, **arguments), `own` the (own_rows, k) rows that stand
    for a's rows from first_row on (contiguous; they must cover whole tiles of the chosen tile's rows; a flag's
    piece that reaches into them from outside is still waited for by the tiles outside it)."""

    _MAINLOOP_ARGUMENTS = ("row_flags", "own")
    _SPLIT_K = 1

    def __init__(self, epilogue=None, *, rows_per_flag, first_row=0, own_rows=0, out_dtype=None, tile="auto"):
        super().__init__(epilogue, out_dtype=out_dtype, tile=tile, kernel="sm90")
        if not isinstance(rows_per_flag, int) or rows_per_flag <= 0:
            raise ValueError(f"rows_per_flag={rows_per_flag!r}: a positive number of rows per flag")
        if not isinstance(first_row, int) or first_row < 0:
            raise ValueError(f"first_row={first_row!r}: a row index >= 0")
        if not isinstance(own_rows, int) or own_rows < 0:
            raise ValueError(f"own_rows={own_rows!r}: a number of rows >= 0")
        self.rows_per_flag = rows_per_flag
        self.first_row = first_row
        self.own_rows = own_rows

    def _strided_copied(self, t):
        """No copy (Gemm's copies a matrix of neither layout): a copy of A made before its rows arrive would be
        read instead of them, so such operands are refused by the checks, as any copy of A is."""
        return t

    def run(self, a, b, out=None, *, row_flags, own=None, **arguments):
        self._check_flags(row_flags, a)
        if self.own_rows:
            self._check_own(own, a)
            arguments["own"] = own
        elif own is not None:
            raise TensorArgumentError("tilefuse.RowGatedGemm: own= given to a gate made without own_rows; pass "
                                      "own_rows=<its rows> to RowGatedGemm(...)")
        return super().run(a, b, out=out, row_flags=row_flags, **arguments)

    def _check_own(self, own, a):
        import torch

        if own is None:
            raise TensorArgumentError(f"tilefuse.RowGatedGemm: made with own_rows={self.own_rows}, so run() needs "
                                      "own=<those rows of a>, a contiguous tensor")
        k = a.shape[-1]
        if not isinstance(own, torch.Tensor) or tuple(own.shape) != (self.own_rows, k) or own.dtype != a.dtype \
                or own.device != a.device or not own.is_contiguous() or own.data_ptr() % 16 != 0:
            got = (tuple(own.shape), own.dtype, str(own.device), own.is_contiguous()) \
                if isinstance(own, torch.Tensor) else type(own).__name__
            raise TensorArgumentError(
                f"tilefuse.RowGatedGemm: own must be a contiguous, 16-byte aligned ({self.own_rows}, {k}) tensor of "
                f"a's dtype ({a.dtype}) on a's device ({a.device}); got {got}")
        if self.first_row + self.own_rows > a.shape[-2]:
            raise TensorArgumentError(f"tilefuse.RowGatedGemm: the own rows [{self.first_row}, "
                                      f"{self.first_row + self.own_rows}) pass a's {a.shape[-2]} rows")

    def _check_flags(self, flags, a):
        import torch

        m = a.shape[-2]
        pieces = -(-m // self.rows_per_flag)
        if not isinstance(flags, torch.Tensor) or flags.dtype != torch.uint32 or flags.dim() != 1 \
                or not flags.is_contiguous() or flags.device != a.device:
            raise TensorArgumentError(
                "tilefuse.RowGatedGemm: row_flags must be a contiguous 1-d torch.uint32 tensor on a's device "
                f"({a.device}), one flag per {self.rows_per_flag} rows of a; got "
                f"{type(flags).__name__ if not isinstance(flags, torch.Tensor) else (flags.dtype, tuple(flags.shape), str(flags.device))}")
        if flags.numel() < pieces:
            raise TensorArgumentError(f"tilefuse.RowGatedGemm: a has {m} rows, {pieces} pieces of "
                                      f"{self.rows_per_flag}, but row_flags holds {flags.numel()} flags")
        if self.first_row >= m:
            raise TensorArgumentError(f"tilefuse.RowGatedGemm: first_row = {self.first_row} is past a's {m} rows")

    def _whole_plan(self, ops, device, arguments):
        """The planner's Hopper plan with no split of K (_SPLIT_K: a split is a batch of K-slices; the gate waits
        per tile row), on the operands as given (a copy of A would not be where the rows land)."""
        if ops.batch != 1:
            raise TensorArgumentError("tilefuse.RowGatedGemm: a batch of one only (a is the rows being gathered)")
        whole = super()._whole_plan(ops, device, arguments)
        if whole["family"] != "sm90" or whole["copy_operands"] or whole["split_k"] != 1:
            raise TensorArgumentError(
                "tilefuse.RowGatedGemm: the gated rows need the Hopper kernel reading a and b where they lie: a "
                "row-major with 16-byte-aligned rows, b K-major (weight.t()), on an sm_90 GPU")
        return whole

    def _choose(self, ops, device, whole):
        tile, config, why, split = super()._choose(ops, device, whole)
        name, tm, tn, tk = config
        qualified = name if "::" in name else "tilefuse::gemm::" + name
        return tile, (f"tilefuse::gemm::Sm90RowGate<{qualified}>", tm, tn, tk), why + "; rows of A gated", split

    def _pack(self, operation, kernel, layout, ops, arguments, outputs, sm_count):
        """Gemm's packing, plus the gate: the flags' pointer (per call), rows per flag and the first tile row."""
        launch = super()._pack(operation, kernel, layout, ops, arguments, outputs, sm_count)
        if layout["row_flags"] < 0:
            raise RuntimeError("tilefuse: the row-gated GEMM kernel's layout has no row gate; clear the JIT cache "
                               "(TILEFUSE_CACHE_DIR) and retry")
        params = bytearray(launch.template)
        struct.pack_into("<Q", params, layout["row_flags"], arguments["row_flags"].data_ptr())
        struct.pack_into("<i", params, layout["rows_per_flag"], self.rows_per_flag)
        # The first tile row wholly inside the rows in place (rounded up), wrapping past the last.
        tm = operation.config[1]
        struct.pack_into("<i", params, layout["first_tile_row"], (-(-self.first_row // tm)) % -(-ops.m // tm))
        launch.pointers.append((layout["row_flags"], "arg:row_flags"))
        if self.own_rows:
            self._pack_own(params, launch, layout, ops, tm, operation.config[3])
        launch.template = bytes(params)
        return launch

    def _pack_own(self, params, launch, layout, ops, tm, tk):
        """The own rows' tile range and tensor map (gemm_sm90.hpp's set_own_rows: whole tiles only)."""
        from . import _C

        if layout.get("tma_own", -1) < 0:
            raise RuntimeError("tilefuse: the row-gated GEMM kernel's layout has no own rows; clear the JIT cache "
                               "(TILEFUSE_CACHE_DIR) and retry")
        end = self.first_row + self.own_rows
        if self.first_row % tm or (end % tm and end != ops.m):
            raise TensorArgumentError(
                f"tilefuse.RowGatedGemm: the own rows [{self.first_row}, {end}) must cover whole {tm}-row tiles of "
                f"the chosen tile (their start a multiple of {tm}, their end too or a's {ops.m} rows)")
        struct.pack_into("<i", params, layout["own_tile_begin"], self.first_row // tm)
        struct.pack_into("<i", params, layout["own_tile_end"], -(-end // tm))
        dtype, k, rows = ops.dtype, ops.k, self.own_rows
        launch.add_map(layout["tma_own"], "arg:own", lambda pointer: _C.encode_sm90_operand(
            "a", dtype, pointer, k, rows, 1, k, 0, tk, tm))
