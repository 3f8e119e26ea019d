"""tilefuse.Gemm: D = epilogue(A @ B) from Python, on the Hopper kernel compiled by the JIT.

The layers a call goes down (docs/python.md):
  Gemm(epilogue=fn).run(a, b, **arguments)     checks the tensors, traces fn for their shapes
  -> Operation (plan(): cached per signature)   the chosen tile, the kernel from the JIT's disk cache,
                                                loaded once per device, and its parameter layout
  -> tilefuse._C.PreparedLaunch                 tensor maps encoded through the C++ host adapter, the
                                                packed Params launched on the current torch stream
  -> sm90_gemm_kernel<GemmKernel<element, tree, config>>   (include/tilefuse/gemm/kernel/sm90_gemm.h)

A is (m, k) or (batch, m, k) with unit column stride (row-major); B is (k, n) or (batch, k, n) with unit
row stride (K-major: `weight.t()` of an (n, k) weight, as torch.nn.Linear holds it). bf16 or fp16.
"""
import dataclasses
import struct
from dataclasses import dataclass

from . import fast_path
from .gemm_pack import pack_k_major
from .errors import TensorArgumentError
from .kernel_params import (IDENTITY, Launch, WarmCall, allocate, workspace, call_key, call_pointers, check_epilogue_arguments,
                            check_epilogue_function, check_out, check_out_dtype, current_raw_stream, device_properties,
                            from_dlpack, kernel_origin, loaded_on, pack_d_by_tma, pack_epilogue, pack_residual_by_tma,
                            parse_nodes, residual_tma_unaligned,
                            layout_of, node_strides, spec_key, torch_module as _torch, trace_value, uses_coordinates, jit_arch,
                            parse_header)
from .dtypes import element_type
from .tensors import COLUMN_MAJOR, ROW_MAJOR, check_gemm_operands, matrix_layouts, torch_dtype

_ELEMENTS = ("bfloat16", "float16")
KERNELS = ("auto", "sm80", "sm90", "skinny")  # the kernel family: the planner's choice, or forced (gemm::GemmFamily)


def plan_gemm(m, n, k, batch, device, tile=None, *, hopper_layouts=True, tma_aligned=True, split_k=0):
    """The C++ planner's GEMM plan (gemm::plan_gemm through tilefuse._C, as gemm::Gemm and tilefuse.Gemm make
    it): a dict of family ("sm90" / "sm80" / "skinny"), copy_operands and padded_k (A and B first copied into the
    Hopper kernel's layouts), config, tile, tile_shape (m, n, k), split_k (K split and summed in the kernel) and
    why. device: (major, minor, SMs); tile: None (the wave model) or a name; split_k: 0 lets the planner choose."""
    from . import _C
    return _C.plan_gemm(m, n, k, batch, device, True, hopper_layouts, tma_aligned, split_k, tile, skinny_code=True)


def _identity(acc):
    return acc


@dataclass
class Operation:
    """A compiled GEMM kernel for one signature: the tile, the JIT's cached kernel, its loaded handles
    per device and its parameter layout. `describe()` says which kernel and why."""

    tile: str
    element: str
    cpp_tree: str
    cached: object  # tilefuse.jit CachedKernel
    why: str
    config: tuple = None  # (C++ config, tile m, tile n, tile k)
    element_b: str = None  # B's type when it differs from A's (FP8)
    loaded: dict = None  # kernel_params.loaded_on: device index -> (kernel, further kernels, layout)
    split_k: int = 1  # >= 2: K split that many ways, summed in the kernel (a Sm90SplitReduce config)
    split_bytes: int = 0  # the split's zeroed workspace: fp32 sums, then tickets from tickets_offset
    tickets_offset: int = 0
    problem: tuple = None  # (m, n, batch, SMs, device, D's element) of the plan, for describe()

    def for_problem(self, why, split_k=1, split_bytes=0, tickets_offset=0, problem=None):
        """This kernel as one problem's plan: the planner's why and split (the CUBIN and its loads shared)."""
        planned = dataclasses.replace(self, why=why, split_k=split_k, split_bytes=split_bytes,
                                      tickets_offset=tickets_offset, problem=problem)
        planned.graph, planned.tree = self.graph, self.tree
        return planned

    def describe(self):
        """gemm::GemmSm90::describe()'s text (tilefuse._C.describe_gemm_sm90: the kernel's constants from its
        layout, the plan's tiles, grid, D store and split as the launch makes them; D as run() allocates it),
        then the operands, the planner's reason for the tile and where the kernel came from."""
        from . import _C

        name, tm, tn, tk = self.config
        source = kernel_origin(self.cached)
        operands = self.element if not self.element_b else f"{self.element} x {self.element_b}"
        tail = f"{operands} operands; {self.why}; kernel from the {source} ({self.cached.path}); epilogue {self.cpp_tree}"
        if self.problem is None:  # made outside a plan (no problem to describe the launch of)
            return f"sm90 TMA + WGMMA GEMM (warp-specialized, persistent), tile {tm}x{tn}x{tk} ({name}), {tail}"
        m, n, batch, sm_count, device, d_element = self.problem
        _, layout = self.kernel_on(device)
        tiles = -(-m // tm) * -(-n // tn) * batch * self.split_k
        stores = [node for node in layout["nodes"] if node["kind"] == "store"]
        d_by_tma = (layout["d_by_tma"] >= 0 and len(stores) == 1 and stores[0]["name"] == "D"
                    and d_element in ("bfloat16", "float16") and _C.d_storable_by_tma(0, n, n, batch, m * n))
        text = _C.describe_gemm_sm90(tm, tn, tk, layout["stages"], layout["consumer_warpgroups"],
                                     layout["ping_pong"] == 1, layout["cluster_m"], layout["tma_aux_kernel"],
                                     layout["split_sums"] >= 0, tiles, min(tiles, sm_count), d_by_tma,
                                     batch * self.split_k)
        return f"{text}; {tail}"

    def kernel_on(self, device):
        """(kernel handle, layout dict) on `device`, loading the CUBIN there the first time."""
        kernel, _, layout = loaded_on(self, device, LAYOUT_HEADER_WORDS, parse_layout)
        return kernel, layout


LAYOUT_VERSION, LAYOUT_HEADER_WORDS = 8, 44  # sm90_params_layout.h's kLayoutVersion and kLayoutHeader


def parse_layout(words):
    """The dict of a layout kernel's output (include/tilefuse/gemm/kernel/sm90_params_layout.h)."""
    names = ("version", "size", "tma_a", "tma_b", "batch_mask_a", "batch_mask_b", "m", "n", "k", "batch", "tiles_m",
             "tiles_n", "tiles", "threads", "smem_bytes")
    layout = parse_header(words, names, LAYOUT_VERSION, "Hopper GEMM")
    block_names = ("block_scale_a", "block_scale_b", "block_scale_a_row", "block_scale_a_kblock",
                   "block_scale_b_kblock", "block_scale_b_nblock", "block_scale_a_vector", "block_scaled")
    layout.update(zip(block_names, words[16:24]))
    layout["split_sums"], layout["split_tickets"] = words[24], words[25]  # -1: the config does not split
    layout["tma_d"], layout["d_by_tma"] = words[26], words[27]  # -1: the kernel's lanes always store D
    flags = max(words[28], 0)  # the residual by TMA (Sm90TmaResidual configs): its map, and the bias beside it
    layout["tma_aux_kernel"], layout["tma_column_kernel"] = bool(flags & 1), bool(flags & 2)
    (layout["tma_aux"], layout["batch_mask_aux"], layout["column_by_tma"], layout["staged_aux"],
     layout["staged_column"]) = words[29:34]
    layout["stages"], layout["consumer_warpgroups"], layout["ping_pong"], layout["cluster_m"] = words[34:38]
    # the row gate (Sm90RowGate configs, tilefuse.gemm_row_gate): -1 where the kernel has none
    layout["row_flags"], layout["rows_per_flag"], layout["first_tile_row"] = words[38:41]
    layout["tma_own"], layout["own_tile_begin"], layout["own_tile_end"] = words[41:44]  # its own rows' map
    layout["nodes"] = parse_nodes(words, LAYOUT_HEADER_WORDS, words[15])
    return layout


class Gemm:
    """D = epilogue(A @ B), with the epilogue a Python function of the accumulator and named arguments
    (tilefuse.epilogue), compiled once per signature by the JIT, on the kernel the C++ planner picks
    (gemm::plan_gemm, as gemm::Gemm): the Hopper kernel on an H100 / H200, the sm80 kernel on other GPUs, the
    skinny kernel for a few rows (m <= 16, B streamed into mma.sync) on any of them.

        gemm = tilefuse.Gemm(epilogue=lambda acc, bias: relu(acc + bias))
        d = gemm.run(a, w.t(), bias=b)          # a: (m, k), w: (n, k), b: (n,)

    run() returns D, or a dict of every output when the epilogue returns a dict. out_dtype: D's dtype
    (default: the operands'). tile: "auto" (the C++ planner's wave model, gemm::choose_sm90_tile) or "128x256",
    "128x128", "128x64", "64x64", "128x96", "128x160" (the Hopper kernel's; 64x64 runs ping-pong; 64x64, 128x96
    and 128x160 take 16-bit operands only). kernel: "auto"
    (the planner's family), "sm80", "sm90" or "skinny" (forced: an error where that family cannot run).
    """

    def __init__(self, epilogue=None, *, out_dtype=None, tile="auto", kernel="auto"):
        check_epilogue_function(epilogue, f"tilefuse.{type(self).__name__}")
        check_out_dtype(out_dtype, f"tilefuse.{type(self).__name__}")
        if tile != "auto":
            try:
                plan_gemm(1, 1, 1, 1, (9, 0, 132), tile)  # the planner knows its tiles
            except ValueError as e:
                raise ValueError(str(e).removeprefix("tilefuse: ")) from None
        if kernel not in KERNELS:
            raise ValueError(f"kernel={kernel!r}: use one of {', '.join(KERNELS)}")
        self.epilogue = epilogue or _identity
        self.out_dtype = out_dtype
        self.tile = tile
        self.kernel = kernel
        self._operations = {}  # plan key -> Operation
        self._last_trace = None  # (shapes key, (graph, tree)) of the last trace (_traced)
        self._warm = {}  # call signature -> WarmCall
        self._table = None  # the same calls in C++ (fast_path.remember_run), made at the first one it takes
        self._names = {}  # the epilogue argument names of those calls -> their id in the table

    # ---- planning ----

    def plan(self, a, b, **arguments):
        """The Operation that run(a, b, **arguments) launches (compiled or taken from the cache)."""
        a, b = self._strided_copied(from_dlpack(a)), self._strided_copied(from_dlpack(b))
        arguments = {name: from_dlpack(value) for name, value in arguments.items()}
        check_epilogue_arguments(self.epilogue, arguments, "tilefuse.Gemm", ignore=self._MAINLOOP_ARGUMENTS)
        ops = self._check(a, b)
        if min(ops.m, ops.n, ops.batch) == 0:
            raise TensorArgumentError(f"tilefuse.Gemm.plan: the problem (m, n, batch) = ({ops.m}, {ops.n}, "
                                      f"{ops.batch}) is empty: run() returns its empty result without a kernel, so "
                                      "there is no plan")
        sm_count, major, minor = device_properties(ops.device_index or 0)
        whole = self._whole_plan(ops, (major, minor, sm_count), arguments)
        if whole["family"] == "sm80":
            a, b, ops = self._sm80_operands(a, b, ops)
            return self._plan_sm80(whole, ops, arguments, (major, minor))
        if whole["family"] == "skinny":
            return self._plan_skinny(whole, ops, arguments, (major, minor))
        if whole["copy_operands"]:
            ops = self._check(*hopper_operands(a, b))  # as run() copies them
        return self._plan(ops, arguments, whole)

    def _whole_plan(self, ops, device, arguments):
        """The C++ planner's plan for these operands (gemm::plan_gemm, as gemm::Gemm asks it): the kernel family,
        whether the operands are first copied into the Hopper kernel's layouts, and whether the residual comes by
        TMA."""
        if not self._CONVERTS:  # FP8: the Hopper kernel only, on the operands as given (their scales index k)
            if device[0] != 9:
                raise TensorArgumentError(f"tilefuse's FP8 GEMM runs on sm_90 (H100 / H200); this GPU is sm_"
                                          f"{device[0]}{device[1]}: use torch._scaled_mm there")
            if not ops.aligned or ops.layout_a != ROW_MAJOR or ops.layout_b != COLUMN_MAJOR:
                raise TensorArgumentError("the Hopper GEMM needs 16-byte-aligned operands: "
                                          + "; ".join(ops.alignment_notes) + ". Pad k to a multiple of 8 elements or "
                                          "copy the tensors")
            return {"family": "sm90", "copy_operands": False}
        from . import _C
        residual_by_tma = self._residual_by_tma(ops, arguments)  # (its argument errors are the caller's, as raised)
        try:
            return _C.plan_gemm(ops.m, ops.n, ops.k, ops.batch, device, True,
                                ops.layout_a == ROW_MAJOR and ops.layout_b == COLUMN_MAJOR, ops.aligned,
                                self._SPLIT_K, None if self.tile == "auto" else self.tile, self.kernel, skinny_code=True,
                                residual_by_tma=residual_by_tma)
        except ValueError as e:  # a forced family that cannot run here
            raise TensorArgumentError(f"tilefuse.Gemm(kernel={self.kernel!r}): {str(e).removeprefix('tilefuse: ')}") from None

    # What the op takes and how it picks its kernel (tilefuse.scaled_mm's FP8 op changes these).
    _OPERAND_DTYPES = _ELEMENTS
    _MIXED_FP8 = False
    _CONVERTS = True  # operands of other layouts or unaligned k are copied (not for FP8: its scales index k)
    # Arguments the mainloop reads (block-wise FP8 scales), not inputs of the epilogue function.
    _MAINLOOP_ARGUMENTS = ()
    _SPLIT_K = 0  # the planner's split_k: 0 lets it choose (tilefuse.gemm_row_gate forbids a split: 1)
    _EMPTY = True  # m, n or the batch 0: an empty result, as torch's (not for FP8: its scales are checked first)

    def _strided_copied(self, t):
        """t, or a contiguous copy where its last two dimensions are neither row- nor column-major (a view such as
        x[:, ::2], or rows that overlap: expand()), as torch.matmul takes them; the copy is what the call keys
        and reads. Not for FP8 (_CONVERTS off: torch._scaled_mm's layouts are its rules)."""
        if not self._CONVERTS or getattr(t, "dim", None) is None or t.dim() < 2:
            return t
        if matrix_layouts(t.shape, t.stride()):  # (tensors.py's rule: what the checks take as it is)
            return t
        return t.new_empty(t.shape) if t.numel() == 0 else t.contiguous()  # (torch calls any empty one contiguous)

    def _check(self, a, b):
        return check_gemm_operands(a, b, allowed_dtypes=self._OPERAND_DTYPES, mixed_fp8=self._MIXED_FP8,
                                   empty_k=self._CONVERTS, empty_mn=self._EMPTY)

    def _choose(self, ops, device, whole):
        """(tile name, (C++ config, tile m, n, k), why, (split_k, workspace bytes, tickets offset)) for the
        problem: the Hopper part of the C++ planner's plan (`whole`, made for the operands before any copy)."""
        split = (whole["split_k"], whole["split_workspace_bytes"], whole["split_tickets_offset"])
        return whole["tile"], (whole["config"], *whole["tile_shape"]), whole["why"], split

    def _residual_by_tma(self, ops, arguments):
        """GemmRequest::residual_by_tma, as gemm::Gemm finds it: the traced tree stages one 16-bit residual
        (kernel_params.tree_facts, the C++ trait's rule) and this call's residual has a 16-byte-aligned base,
        leading dimension and batch stride (kernel_params.residual_tma_unaligned)."""
        if not any(getattr(v, "dim", lambda: 0)() >= 2 and str(v.dtype) in ("torch.bfloat16", "torch.float16")
                   for v in arguments.values()):
            return False  # no 16-bit tensor that could be a residual: no need to trace
        _, tree = self._traced(ops, arguments)
        return residual_tma_unaligned(tree, arguments, ops.batch, lambda name, residual: layout_of(
            name, "aux_load", tuple(residual.shape), tuple(residual.stride()), ops.batch)) == ""

    def _traced(self, ops, arguments):
        """(graph, C++ tree) of the epilogue traced on this problem's accumulator and arguments (a 0-dim tensor is
        a scalar the kernel reads from device memory, traced as a number); the last one is kept for the same
        shapes (the planner's residual fact traces first)."""
        from .epilogue import to_cpp, trace

        trace_key = (ops.dtype, ops.m, ops.n, ops.batch, _arguments_key(arguments))
        if self._last_trace is not None and self._last_trace[0] == trace_key:
            return self._last_trace[1]

        acc_shape = (ops.batch, ops.m, ops.n) if ops.batch > 1 else (ops.m, ops.n)
        traced = {name: trace_value(value) for name, value in arguments.items()
                  if name not in self._MAINLOOP_ARGUMENTS}
        graph = trace(self.epilogue, acc=acc_shape, **traced)
        tree = to_cpp(graph, element=self._out_dtype(ops.dtype))
        if uses_coordinates(tree) and max(ops.m, ops.n, ops.batch) >= 1 << 24:  # as gemm::Gemm refuses it
            raise TensorArgumentError(f"tilefuse.Gemm: the epilogue reads element coordinates (row(), col(), "
                                      f"batch()), which are exact only below 2^24, but the problem is {ops.m} x "
                                      f"{ops.n} x {ops.batch}; split it, or pass the coordinates as a vector")
        self._last_trace = (trace_key, (graph, tree))
        return graph, tree

    def _plan(self, ops, arguments, whole):
        if ops.layout_a != ROW_MAJOR or ops.layout_b != COLUMN_MAJOR:
            raise TensorArgumentError(
                f"the Hopper GEMM reads a row-major (unit stride along k) and b K-major (unit stride along k, "
                f"e.g. weight.t() of an (n, k) weight); got a {ops.layout_a} and b {ops.layout_b}. Pass "
                "a.contiguous() and b.t().contiguous().t()")
        sm_count, major, minor = device_properties(ops.device_index or 0)
        tile, config, why, split = self._choose(ops, (major, minor, sm_count), whole)
        element_b = ops.b.dtype if ops.b.dtype != ops.dtype else None
        # The plan key holds every shape, so a call with new shapes is traced (and its arguments' shapes
        # checked) again; the kernel itself is shared by every plan with the same tree and tile.
        key = (ops.dtype, element_b, self._out_dtype(ops.dtype), ops.m, ops.n, ops.k, ops.batch, config, sm_count,
               whole["copy_operands"], _arguments_key(arguments))
        operation = self._operations.get(key)
        if operation is None:
            graph, tree = self._traced(ops, arguments)
            operation = _compiled(str(tree), ops.dtype, element_b, tile, config, why, graph, tree)
            operation = operation.for_problem(why, *split, problem=(ops.m, ops.n, ops.batch, sm_count,
                                                                    ops.device_index or 0, self._out_dtype(ops.dtype)))
            self._operations[key] = operation
        return operation

    def _out_dtype(self, operand_dtype):
        if self.out_dtype is None:
            return operand_dtype
        return element_type(self.out_dtype, what="out_dtype").name

    # ---- running ----

    def run(self, a, b, out=None, **arguments):
        """Runs D = epilogue(a @ b) on a's device and the current torch stream; returns D (or a dict of
        the outputs when the epilogue returns a dict). out: a contiguous tensor of D's shape and dtype to store
        D into (e.g. a block of rows of a larger output); a new tensor when None.

        A call whose tensors have the shapes, strides, dtypes, devices and alignment of an earlier call (and
        numbers where it had numbers) repeats that call's checked plan: only pointers and scalars are new.
        CUDA tensors of other frameworks (anything with __dlpack__: CuPy, JAX, ...) are taken through DLPack
        without a copy; outputs are torch tensors."""
        if out is None:  # the C++ warm path (fast_path): None where it has no such call
            d = fast_path.repeat_run(self, a, b, arguments)
            if d is not None:
                return d
        a, b = self._strided_copied(from_dlpack(a)), self._strided_copied(from_dlpack(b))
        arguments = {name: from_dlpack(value) for name, value in arguments.items()}
        key = call_key(a, b, arguments)  # of the tensors the kernel reads (a strided view's copy)
        warm = self._warm.get(key) if key is not None else None
        if warm is not None:
            if out is not None:
                check_out(out, warm.outputs, "tilefuse.Gemm.run", warm.device)
            return warm.call(a, b, arguments, out)
        return self._first_call(a, b, arguments, key, out)

    def warm_call(self, a, b, arguments):
        """The WarmCall that run(a, b, **arguments) repeats for this signature once a first run checked it, or
        None. The torch ops, which key their own checked calls, call it directly."""
        key = call_key(a, b, arguments)
        return self._warm.get(key) if key is not None else None

    def _first_call(self, a, b, arguments, key, out=None):
        """Checks, plans, packs and launches; remembers the call for later ones with the same signature."""
        check_epilogue_arguments(self.epilogue, arguments, "tilefuse.Gemm", ignore=self._MAINLOOP_ARGUMENTS)
        ops = self._check(a, b)
        if ops.device_index is None:
            if str(ops.a.device).startswith("cuda"):  # __cuda_array_interface__ does not say which device
                raise TensorArgumentError("tilefuse.Gemm: a and b expose __cuda_array_interface__, which does not "
                                          "say which device holds them; pass torch tensors "
                                          "(torch.as_tensor(x, device='cuda')) or objects with __dlpack__")
            raise TensorArgumentError("tilefuse.Gemm runs on a CUDA device: a and b are on "
                                      f"{ops.a.device}; move them with .cuda()")
        if min(ops.m, ops.n, ops.batch) == 0:
            return self._empty_result(ops, arguments, out)
        sm_count, major, minor = device_properties(ops.device_index)
        whole = self._whole_plan(ops, (major, minor, sm_count), arguments)
        if whole["family"] == "sm80":
            return self._run_sm80(whole, a, b, ops, arguments, key, out, (major, minor))
        if whole["family"] == "skinny":
            return self._run_skinny(whole, a, b, ops, arguments, key, out, (major, minor))
        converted, packs, callers = False, [], (a, b)
        if whole["copy_operands"]:
            # Any layout and any k run, as torch.matmul's do: the planner has the operands copied into the
            # kernel's layouts, k zero-padded to whole 16-byte pieces (the sum is unchanged).
            a, b = hopper_operands(a, b, packs)
            ops = self._check(a, b)
            converted = True
        operation = self._plan(ops, arguments, whole)
        kernel, layout = operation.kernel_on(ops.device_index)
        specs, outputs = self._outputs(operation, ops, out)
        launch = self._pack(operation, kernel, layout, ops, arguments, outputs, sm_count)
        numel = -(-operation.split_bytes // 4)  # the split's sums and tickets, zeroed per call
        return self._launch(key, ops, a, b, arguments, specs, outputs, [launch], numel, numel > 0,
                            operation.tickets_offset, copied=converted, packs=(callers, packs))

    def _outputs(self, operation, ops, out):
        """(specs, outputs) of a call of `operation`: what it allocates, allocated (or `out`, checked)."""
        specs = self._output_specs(operation.graph, operation.tree, ops)
        if out is not None:
            check_out(out, specs, "tilefuse.Gemm.run", ops.device_index)
        return specs, allocate(specs, _torch().device("cuda", ops.device_index), out)

    def _launch(self, key, ops, a, b, arguments, specs, outputs, launches, numel, zeroed, tickets_offset=0,
                copied=False, fast=True, packs=None):
        """Runs the launches on the current stream with a float32 workspace of numel elements and remembers the
        call under `key` for the warm path (a copied call copies again; the C++ warm path takes the others
        where `fast`, and a copied call with its packing launches: packs = ((the caller's a, b), [(operand,
        launch, elements, dtype), ...])). Returns D, or the dict of outputs."""
        device = ops.device_index
        partials = workspace(numel, zeroed, _torch().device("cuda", device))
        pointers = call_pointers(a, b, arguments, outputs, partials, tickets_offset)
        stream = current_raw_stream(device)
        for launch in launches:
            launch.run(device, stream, pointers, arguments)
        if key is not None:
            warm = WarmCall(device, launches, specs, numel, zeroed, tickets_offset)
            if copied:  # the signature is the caller's tensors': each warm call copies them again
                self._warm[key] = CopyingWarmCall(warm)
                if fast and packs is not None and packs[1]:
                    fast_path.remember_run(self, *packs[0], arguments, warm, packs[1])
            else:
                self._warm[key] = warm
                if fast:
                    fast_path.remember_run(self, a, b, arguments, warm)
        return outputs["D"] if set(outputs) == {"D"} else outputs

    # ---- the sm80 family (gemm_sm80.py) ----

    def _sm80_operands(self, a, b, ops):
        """(a, b, ops) for the sm80 kernel, which reads any layout but needs k >= 1: k = 0 runs on 8 zeros."""
        if ops.k == 0:
            a, b = hopper_operands(a, b)
            ops = self._check(a, b)
        return a, b, ops

    def _plan_sm80(self, whole, ops, arguments, capability):
        from .gemm_sm80 import compiled_sm80, layout_names

        major, minor = capability
        arch = jit_arch(major, minor)
        layouts = layout_names(ops)
        strides = (ops.lda, ops.ldb, ops.batch, ops.batch_stride_a, ops.batch_stride_b)
        key = ("sm80", ops.dtype, self._out_dtype(ops.dtype), ops.m, ops.n, ops.k, ops.batch, layouts,
               whole["sm80_aligned"], whole["split_k"], arch, strides, _arguments_key(arguments))
        operation = self._operations.get(key)
        if operation is None:
            graph, tree = self._traced(ops, arguments)
            operation = compiled_sm80(str(tree), tree, graph, ops.dtype, whole, layouts, arch, strides)
            self._operations[key] = operation
        return operation

    def _run_sm80(self, whole, a, b, ops, arguments, key, out, capability):
        """The sm80 kernel's run, as gemm::Gemm launches it (and its split-K pass); remembered for warm calls."""
        from .gemm_sm80 import sm80_launches

        a_in = a
        a, b, ops = self._sm80_operands(a, b, ops)
        operation = self._plan_sm80(whole, ops, arguments, capability)
        kernel, split_kernel, layout = operation.kernel_on(ops.device_index)
        torch = _torch()
        limit = getattr(torch.cuda.get_device_properties(ops.device_index), "shared_memory_per_block_optin", None)
        if limit and layout["smem_bytes"] > limit:  # gemm::Gemm's check_shared_memory: say so, not a launch error
            raise TensorArgumentError(f"tilefuse.Gemm: the sm80 kernel's {operation.config} needs {layout['smem_bytes']} "
                                      f"bytes of shared memory per block and cuda:{ops.device_index} allows {limit}; "
                                      "use torch.matmul on this GPU")
        specs, outputs = self._outputs(operation, ops, out)
        launches, numel = sm80_launches(operation, kernel, split_kernel, layout, ops, arguments, outputs)
        # (a workspace not zeroed: every split writes its whole tile; the Python warm path only, as before)
        return self._launch(key, ops, a, b, arguments, specs, outputs, launches, numel, False,
                            copied=a is not a_in, fast=False)

    # ---- the skinny family (gemm_skinny.py) ----

    def _plan_skinny(self, whole, ops, arguments, capability):
        from .gemm_skinny import compiled_skinny

        major, minor = capability
        arch = jit_arch(major, minor)
        key = ("skinny", ops.dtype, self._out_dtype(ops.dtype), ops.m, ops.n, ops.k, ops.batch, arch,
               _arguments_key(arguments))
        operation = self._operations.get(key)
        if operation is None:
            graph, tree = self._traced(ops, arguments)
            operation = compiled_skinny(str(tree), tree, graph, ops.dtype, whole["why"], arch)
            self._operations[key] = operation
        return operation

    def _run_skinny(self, whole, a, b, ops, arguments, key, out, capability):
        """The skinny kernel's run, as gemm::Gemm launches it; remembered for warm calls (and the C++ warm path)."""
        from .gemm_skinny import skinny_launch

        operation = self._plan_skinny(whole, ops, arguments, capability)
        kernel, layout = operation.kernel_on(ops.device_index)
        specs, outputs = self._outputs(operation, ops, out)
        launch = skinny_launch(operation, kernel, layout, ops, arguments, outputs)
        return self._launch(key, ops, a, b, arguments, specs, outputs, [launch], 0, False)

    def _empty_result(self, ops, arguments, out):
        """run()'s result where m, n or the batch is 0, as torch's: empty stores, row and column reductions at
        their identity (a sum over no rows is 0); nothing launched. The epilogue is traced on the problem with
        every 0 made 1 (and its tensors' shapes alike) to learn its outputs and their dtypes."""
        from .epilogue import to_cpp, trace
        from .epilogue.specs import tensor as tensor_spec

        torch = _torch()
        ones = lambda shape: tuple(max(int(d), 1) for d in shape)  # noqa: E731
        traced = {}
        for name, value in arguments.items():
            if name in self._MAINLOOP_ARGUMENTS:
                continue
            if isinstance(value, torch.Tensor) and value.dim() > 0:
                traced[name] = tensor_spec(ones(value.shape), str(value.dtype).removeprefix("torch."))
            else:
                traced[name] = trace_value(value)
        shape = (ops.batch, ops.m, ops.n) if ops.batch != 1 else (ops.m, ops.n)
        graph = trace(self.epilogue, acc=ones(shape), **traced)
        specs = self._output_specs(graph, to_cpp(graph, element=self._out_dtype(ops.dtype)), ops)
        if out is not None:
            check_out(out, specs, "tilefuse.Gemm.run", ops.device_index)
        outputs = allocate(specs, torch.device("cuda", ops.device_index), out)
        return outputs["D"] if set(outputs) == {"D"} else outputs

    def _output_specs(self, graph, tree, ops):
        """What every call allocates (kernel_params.allocate): D and auxiliary stores, reduction vectors, from
        the traced epilogue and its C++ tree (the stores' dtypes). A batch of one gives (m, n); of 0, (0, m, n)."""
        batched = ops.batch != 1
        specs = []
        for name, out in graph.outputs.items():
            if out.kind == "store":
                dtype = torch_dtype(next(a.dtype for a in tree.arguments if a.name == name))
                shape = (ops.batch, ops.m, ops.n) if batched else (ops.m, ops.n)
                specs.append((name, "store", shape, dtype, False))
            else:
                length = ops.m if out.kind == "row_reduce" else ops.n
                specs.append((name, "reduce", (ops.batch, length) if batched else (length,), IDENTITY[out.reduction],
                              False))
        return specs

    def _pack(self, operation, kernel, layout, ops, arguments, outputs, sm_count):
        """The kernel's Launch: Params packed (problem, tiles, every epilogue node's fields) and where the
        tensor maps, pointers and scalars of each call go."""
        from . import _C

        params = bytearray(layout["size"])
        _, tm, tn, tk = operation.config
        struct.pack_into("<i", params, layout["batch_mask_a"], 0 if ops.batch > 1 and ops.batch_stride_a == 0 else -1)
        struct.pack_into("<i", params, layout["batch_mask_b"], 0 if ops.batch > 1 and ops.batch_stride_b == 0 else -1)
        # With the split, split s is batch entry s of K-slices k / splits long (views of A and B); the epilogue
        # sees the one output.
        splits = operation.split_k
        dtype, m, n, k, batch = ops.dtype, ops.m, ops.n, ops.k // splits, ops.batch * splits
        lda, ldb, stride_a, stride_b = ops.lda, ops.ldb, ops.batch_stride_a, ops.batch_stride_b
        if splits > 1:
            if layout["split_sums"] < 0:
                raise RuntimeError("tilefuse: the split-K GEMM kernel's layout has no split sums; clear the JIT cache "
                                   "(TILEFUSE_CACHE_DIR) and retry")
            stride_a = stride_b = k
            struct.pack_into("<i", params, layout["batch_mask_a"], -1)
            struct.pack_into("<i", params, layout["batch_mask_b"], -1)
        for field, value in (("m", m), ("n", n), ("k", k), ("batch", batch)):
            struct.pack_into("<q", params, layout[field], value)
        tiles_m, tiles_n = -(-m // tm), -(-n // tn)
        struct.pack_into("<i", params, layout["tiles_m"], tiles_m)
        struct.pack_into("<i", params, layout["tiles_n"], tiles_n)
        tiles = tiles_m * tiles_n * batch
        struct.pack_into("<i", params, layout["tiles"], tiles)
        # persistent: at most one block per SM
        launch = Launch(kernel.kernel, min(tiles, sm_count), layout["threads"], layout["smem_bytes"],
                        after_previous_early=True)
        if splits > 1:
            launch.pointers += [(layout["split_sums"], "partials"), (layout["split_tickets"], "tickets")]
        launch.add_map(layout["tma_a"], "a", lambda pointer: _C.encode_sm90_operand(
            "a", dtype, pointer, k, m, batch, lda, stride_a, tk, tm))
        dtype_b = operation.element_b or dtype
        launch.add_map(layout["tma_b"], "b", lambda pointer: _C.encode_sm90_operand(
            "b", dtype_b, pointer, k, n, batch, ldb, stride_b, tk, tn))
        pack_epilogue(params, layout["nodes"], arguments, outputs, ops.device_index, ops.batch, record=launch)
        pack_residual_by_tma(params, launch, layout, arguments, ops.m, ops.n, ops.batch, tm, lambda node, tensor:
                             node_strides(node["name"], node["kind"], tensor, ops.device_index, ops.batch)[1:])
        self._pack_d_store(params, launch, layout, ops, outputs)
        launch.template = bytes(params)
        return launch

    @staticmethod
    def _pack_d_store(params, launch, layout, ops, outputs):
        """D by TMA stores where the kernel has them and D allows them (kernel_params.pack_d_by_tma); trees with
        more than one store keep the lanes' stores. Warm calls keep the decision: every D they get is 16-byte
        aligned (allocated, or an `out` that check_out / the C++ warm path's fits_out accepts), and its ld and
        batch stride follow from the signature's shape."""
        stores = [node for node in layout["nodes"] if node["kind"] == "store"]
        if layout["d_by_tma"] >= 0 and len(stores) == 1 and stores[0]["name"] == "D":
            pack_d_by_tma(params, launch, layout, outputs["D"], "out:D", ops.m, ops.n)


class CopyingWarmCall:
    """The warm call of operands the planner copies into the Hopper kernel's layouts (another layout, unaligned
    rows, odd k): copy them as the first call did, then the kernel's WarmCall on the copies."""

    def __init__(self, warm):
        self.warm = warm
        self.device, self.outputs = warm.device, warm.outputs

    def call(self, a, b, arguments, out=None):
        a, b = hopper_operands(a, b)
        return self.warm.call(a, b, arguments, out)


def _arguments_key(arguments):
    """The epilogue arguments' part of a plan key: each name with its shape, dtype and broadcast (spec_key)."""
    return tuple(sorted((name, spec_key(value)) for name, value in arguments.items()))


def hopper_operands(a, b, packs=None):
    """(a, b) in the Hopper GEMM's layouts, copied only where needed: a (..., m, k) row-major and b (..., k, n)
    K-major (b.transpose(-1, -2) row-major), both with k zero-padded to a multiple of 8 elements (at least 8:
    k = 0 becomes zeros) and 16-byte aligned leading dimensions and bases. Torch tensors (a copy needs torch).
    packs: a list that gets (operand, launch, elements, dtype) of each packing launch (operand 0: a, 1: b)."""
    if not (hasattr(a, "new_zeros") and hasattr(b, "new_zeros")):
        raise TensorArgumentError("tilefuse.Gemm: these operands are not in the Hopper GEMM's layouts (a row-major, b "
                                  "K-major, k a multiple of 8), and copying them needs torch tensors")
    torch = _torch()
    pad = torch.nn.functional.pad
    k = a.shape[-1]
    kp = max(-(-k // 8) * 8, 8)  # k = 0 pads to 8 zeros: the kernel then gives acc = 0, as torch's a @ b

    def fits(t):  # (..., rows, k) with unit stride along k, rows 16 bytes apart, an aligned base
        rows_apart = t.stride(-2) if t.shape[-2] > 1 else kp
        batch_ok = t.dim() == 2 or t.shape[0] == 1 or t.stride(0) % 8 == 0
        return t.shape[-1] == kp and t.stride(-1) == 1 and rows_apart % 8 == 0 and batch_ok and t.data_ptr() % 16 == 0

    def copied(t, operand):  # t: (..., rows, k) -> packed (..., rows, kp), zeros beyond k
        if fits(t):
            return t
        if t.is_cuda:  # gemm::Gemm's packing kernel: one launch, the zeros written by it
            record = []
            out = pack_k_major(t, kp, record)
            if packs is not None:
                packs.extend((operand, *made) for made in record)
            return out
        if kp == k:  # a packed copy (one kernel)
            return t.clone(memory_format=torch.contiguous_format)
        out = pad(t, (0, kp - k))  # zeros past k and the copy in one call (torch allocates it row-major)
        return out if out.is_contiguous() else out.contiguous()

    return copied(a, 0), copied(b.transpose(-1, -2), 1).transpose(-1, -2)


_COMPILED = {}  # (tree, element, element_b, config) -> Operation, shared by every Gemm of this process


def _compiled(tree_text, element, element_b, tile, config, why, graph, tree):
    from .jit import gemm_kernel

    key = (tree_text, element, element_b, config)
    if key not in _COMPILED:
        cached = gemm_kernel(tree, element, config[0], element_b=element_b)
        operation = Operation(tile, element, tree_text, cached, why, config, element_b, loaded={})
        operation.graph, operation.tree = graph, tree
        _COMPILED[key] = operation
    return _COMPILED[key]
