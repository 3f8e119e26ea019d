"""tilefuse.Conv2d: a convolution (fprop, dgrad or wgrad) with a fused epilogue, from Python.

The layers a call goes down (docs/python.md):
  Conv2d(mode, stride, padding, dilation, epilogue=fn).run(a, b, **arguments)
                                              checks the tensors (NHWC, dtypes, devices, shapes), traces fn
  -> ConvOperation (plan(): cached per signature)   the kernel and tile, from the JIT's disk cache, loaded
                                              once per device, and its parameter layout
  -> tilefuse._C.PreparedLaunch               the packed Params patched and launched on the current torch stream
  -> sm90_gemm_kernel<conv::sm90::{FpropIm2col,Fprop,DgradIm2col,Wgrad}Kernel<...>>   Hopper (sm_90, aligned),
                                              the type the C++ planner spells (conv2d_sm90_launch.hpp)
     sm80_gemm_kernel<TiledKernel<..., ImplicitGemmOperands<...>>>   every mode, sm_80 and newer

Operands are torch tensors in torch's shape convention, stored channels-last (NHWC; a filter (K, C, R, S)
stored channels-last is KRSC):
  fprop  run(x, w)                      x (N, C, H, W), w (K, C, R, S)  -> y  (N, K, P, Q)
  dgrad  run(dy, w, input_size=None)    dy (N, K, P, Q), w (K, C, R, S) -> dx (N, C, H, W)
  wgrad  run(dy, x)                     dy (N, K, P, Q), x (N, C, H, W) -> dw (K, C, R, S)  (kernel_size=)
The epilogue sees the output as the implicit GEMM's row-major matrix, `acc` of shape (rows, cols): rows are
output pixels (fprop N*P*Q, dgrad N*H*W) or filters (wgrad K), columns are channels (fprop K, dgrad C) or
filter taps (wgrad R*S*C). A per-channel vector (cols,) is broadcast along the rows (a bias); a tensor of
the output's shape (a residual) must be channels-last like the output, and row() / col() are the pixel
and channel indices.
"""
import dataclasses
import struct
from dataclasses import dataclass

from . import fast_path
from .conv2d_im2col import Im2colWgrad, Im2colWgradPlan
from .conv2d_phases import PhasedDgrad, PhasedDgradPlan
from .dtypes import element_type
from .errors import TensorArgumentError
from .kernel_params import (IDENTITY, NODE_WORDS, Launch, WarmCall, allocate, workspace, call_key, call_pointers, current_raw_stream,
                            split_k_lanes,
                            device_properties, from_dlpack, kernel_origin, loaded_on, pack_epilogue, parse_nodes,
                            spec_key, torch_module as _torch, tree_facts, check_epilogue_arguments,
                            check_epilogue_function, check_out_dtype, uses_coordinates, jit_arch, parse_header,
                            pack_d_by_tma, pack_residual_by_tma, residual_tma_unaligned)
from .tensors import CONV_LAYOUT_MODES, check_conv_activation, torch_dtype

MODES = ("fprop", "dgrad", "wgrad")
KERNELS = ("auto", "sm80", "sm90")
_ELEMENTS = ("bfloat16", "float16")
_INT_MAX = 2**31 - 1
_LAYOUT_VERSION, _LAYOUT_HEADER, _LAYOUT_NODES = 6, 52, 64  # conv::kConvLayoutVersion, Header, MaxNodes
_LAYOUT_FIELDS = ("version", "family", "size", "threads", "smem_bytes", "geometry", "geometry_bytes", "m", "n", "k",
                  "batch", "split_k", "k_per_split", "partials", "tiles_m", "tiles_n", "tiles", "a", "b", "x", "tma_a",
                  "tma_b", "epilogue", "node_count", "reduce_size", "reduce_m", "reduce_n", "reduce_k", "reduce_batch",
                  "reduce_split_k", "reduce_partials", "reduce_epilogue", "a_tiled", "x_tiled", "sm90_k_per_split",
                  "tma_aux", "batch_mask_aux", "column_by_tma", "tma_d", "d_by_tma", "split_sums", "split_tickets",
                  "flags", "stages", "staged_aux", "staged_column", "ping_pong", "reduce_node_count", "row_map",
                  "beside_previous")


def _ceil(a, b):
    return -(-a // b)


def _pair(value, what):
    if isinstance(value, int) and not isinstance(value, bool):
        return (value, value)
    if (isinstance(value, (tuple, list)) and len(value) == 2
            and all(isinstance(v, int) and not isinstance(v, bool) for v in value)):
        return tuple(value)
    raise ValueError(f"{what}={value!r}: pass an int or a pair of ints (height, width)")


@dataclass(frozen=True)
class ConvProblem:
    """The sizes of one convolution (Conv2dProblem's fields; groups = 1)."""

    N: int
    H: int
    W: int
    C: int
    K: int
    R: int
    S: int
    P: int
    Q: int
    pad: tuple
    stride: tuple
    dilation: tuple

    def gemm(self, mode):
        """(m, n, k) of the implicit GEMM (Conv2dProblem::gemm_extent)."""
        npq, rs = self.N * self.P * self.Q, self.R * self.S
        if mode == "dgrad":
            return self.N * self.H * self.W, self.C, rs * self.K
        if mode == "wgrad":
            return self.K, rs * self.C, npq
        return npq, self.K, rs * self.C

    def planner_geometry(self):
        """N, H, W, C, K, R, S, pad, stride, dilation as tilefuse._C.plan_conv2d takes them."""
        return (self.N, self.H, self.W, self.C, self.K, self.R, self.S, *self.pad, *self.stride, *self.dilation)

    def geometry(self):
        """ConvGeometry's 15 ints in declaration order (conv/implicit_gemm.h)."""
        return (self.N, self.H, self.W, self.C, self.K, self.R, self.S, self.P, self.Q, *self.pad, *self.stride,
                *self.dilation)

    def output_size(self, mode):
        """The output's shape in torch's convention (N, C, H, W) / (K, C, R, S)."""
        if mode == "dgrad":
            return (self.N, self.C, self.H, self.W)
        if mode == "wgrad":
            return (self.K, self.C, self.R, self.S)
        return (self.N, self.K, self.P, self.Q)


def output_extent(size, pad, dilation, filter_size, stride):
    """P (or Q): how many filter positions fit along one input dimension."""
    return (size + 2 * pad - dilation * (filter_size - 1) - 1) // stride + 1


@dataclass
class ConvOperation:
    """A compiled convolution kernel for one signature: family (sm80 / sm90), tile, the JIT's cached kernel,
    its loaded handles and parameter layout per device."""

    mode: str
    family: str
    config: str  # the C++ config (sm80) or the whole kernel type the C++ planner spelled (sm90)
    tile: tuple  # (tile m, tile n, tile k)
    element: str
    aligned: bool
    arch: str
    cpp_tree: str
    cached: object  # tilefuse.jit CachedKernel
    loaded: dict = None
    source: str = ""  # the Hopper kernel's operand source, in words

    def origin(self):
        """Where the kernel came from and the epilogue it runs, for describe()."""
        return f"kernel from the {kernel_origin(self.cached)} ({self.cached.path}); epilogue {self.cpp_tree}"

    def kernel_on(self, device):
        """(kernel, split-K pass or None, layout dict) on `device`, loading the CUBIN there the first time."""
        kernel, others, layout = loaded_on(self, device, _LAYOUT_HEADER + 2 * NODE_WORDS * _LAYOUT_NODES,
                                           parse_conv_layout)
        return kernel, others.get("split_k"), layout


@dataclass
class ConvPlan:
    """What run() launches for one signature: the compiled operation, how many ways K is split, and the
    C++ planner's plan it came from (conv::plan_conv2d through tilefuse._C: its choices and reasons), on the
    device whose loaded kernel describe() reads."""

    operation: ConvOperation
    split_k: int = 1
    planner: dict = None
    device: int = 0

    def __getattr__(self, name):  # family, tile, aligned, ... of the operation
        return getattr(self.__dict__["operation"], name)

    def describe(self):
        """The C++ planner's text (conv::Conv2d::describe()'s, with the stages and schedule the compiled kernel
        reports), then where the kernel came from and its epilogue."""
        layout = self.operation.kernel_on(self.device)[2]
        text = self.planner["describe"](stages=layout["stages"], ping_pong=layout["ping_pong"] == 1,
                                        tma_aux=layout["tma_aux_kernel"])
        return f"{text}; {self.operation.origin()}"


def parse_conv_layout(words):
    """The dict of a conv layout kernel's output (include/tilefuse/conv/kernel/conv_params_layout.h)."""
    layout = parse_header(words, _LAYOUT_FIELDS, _LAYOUT_VERSION, "conv")
    if layout["geometry_bytes"] != 60:
        raise RuntimeError(f"tilefuse: ConvGeometry is {layout['geometry_bytes']} bytes, this package packs 15 ints")
    layout["nodes"] = parse_nodes(words, _LAYOUT_HEADER, layout["node_count"])
    if layout["reduce_size"] > 0:  # the tree's nodes inside the split-K pass's SplitKEpilogueParams
        layout["reduce_nodes"] = parse_nodes(words, _LAYOUT_HEADER + NODE_WORDS * _LAYOUT_NODES,
                                             layout["reduce_node_count"])
    flags = max(layout["flags"], 0)
    layout["tma_aux_kernel"], layout["tma_column_kernel"], layout["tma_store_kernel"] = (
        bool(flags & 1), bool(flags & 2), bool(flags & 4))
    return layout


def _identity(acc):
    return acc


class Conv2d:
    """A 2-D convolution with a fused epilogue, NHWC, bf16 / fp16, on an sm_80 or newer GPU.

        conv = tilefuse.Conv2d(stride=1, padding=1, epilogue=lambda acc, bias, residual: relu(acc + bias) + residual)
        y = conv.run(x, w, bias=b, residual=r)     # x, w, r channels-last; b (K,); y channels-last

    mode: "fprop", "dgrad" or "wgrad" (operands: the module docstring). kernel_size: (R, S), needed by wgrad
    (dgrad and fprop read it from w). layout: "require" refuses tensors that are not channels-last,
    "convert" copies them. kernel: "auto" (the C++ planner's choice: the Hopper kernel of the mode on sm_90
    where it can take the problem, else the sm80 kernel), "sm80" or "sm90" (an error when it cannot run the
    problem). split_k: "auto" lets the planner split the reduction when the output has too few tiles to fill
    the GPU (wgrad's long N*P*Q sums: summed in the kernel or by a second pass that applies the epilogue), or
    an int (the sm80 kernel's split; the Hopper kernel takes a forced split for wgrad only).
    run() returns the output (channels-last), or a dict of every output when the epilogue returns a dict.
    """

    def __init__(self, mode="fprop", *, stride=1, padding=0, dilation=1, kernel_size=None, epilogue=None,
                 out_dtype=None, layout="require", kernel="auto", split_k="auto"):
        if mode not in MODES:
            raise ValueError(f"mode={mode!r}: use one of {', '.join(MODES)}")
        if kernel not in KERNELS:
            raise ValueError(f"kernel={kernel!r}: use one of {', '.join(KERNELS)}")
        if layout not in CONV_LAYOUT_MODES:
            raise ValueError(f"layout={layout!r}: use one of {', '.join(CONV_LAYOUT_MODES)}")
        self.mode = mode
        self.stride = _pair(stride, "stride")
        self.padding = _pair(padding, "padding")
        self.dilation = _pair(dilation, "dilation")
        if min(self.stride) < 1 or min(self.dilation) < 1 or min(self.padding) < 0:
            raise ValueError(f"stride={stride!r}, dilation={dilation!r} must be >= 1 and padding={padding!r} >= 0")
        self.kernel_size = None if kernel_size is None else _pair(kernel_size, "kernel_size")
        check_epilogue_function(epilogue, "tilefuse.Conv2d")
        check_out_dtype(out_dtype, "tilefuse.Conv2d")
        self.epilogue = epilogue or _identity
        self.out_dtype = out_dtype
        self.layout = layout
        self.kernel = kernel
        if split_k != "auto" and not (isinstance(split_k, int) and 1 <= split_k <= 128):
            raise ValueError(f"split_k={split_k!r}: use \"auto\" or an int from 1 to 128")
        self.split_k = split_k
        self._operations = {}  # plan key -> ConvPlan
        self._warm = {}  # call signature -> WarmCall
        self._table = None  # the same calls in C++ (fast_path.remember_run), made at the first one it takes
        self._names = {}  # the epilogue argument names of those calls -> their id in the table

    # ---- operands ----

    def _operands(self, a, b, input_size):
        """(a, b as NHWC tensors, the problem, dtype name, device index) after every check."""
        torch = _torch()
        names = {"fprop": ("x", "w"), "dgrad": ("dy", "w"), "wgrad": ("dy", "x")}[self.mode]
        for name, t in zip(names, (a, b)):
            if not isinstance(t, torch.Tensor):
                raise TensorArgumentError(f"conv2d {self.mode}: {name} must be a torch tensor, got {type(t).__name__}")
            if t.dim() != 4:
                raise TensorArgumentError(f"conv2d {self.mode}: {name} has shape {tuple(t.shape)}; it must be 4-D "
                                          f"({'(K, C, R, S)' if name == 'w' else '(N, C, H, W)'})")
        if a.dtype != b.dtype:
            raise TensorArgumentError(f"conv2d {self.mode}: {names[0]} is {a.dtype} and {names[1]} is {b.dtype}; "
                                      "both must have the same dtype (bfloat16 or float16)")
        try:
            dtype = element_type(a.dtype, what=names[0]).name
        except ValueError:
            dtype = None
        if dtype not in _ELEMENTS:
            raise TensorArgumentError(f"conv2d {self.mode}: dtype {a.dtype} is not supported; use torch.bfloat16 or "
                                      "torch.float16")
        if a.device != b.device or a.device.type != "cuda":
            raise TensorArgumentError(f"conv2d {self.mode}: {names[0]} is on {a.device} and {names[1]} on {b.device}; "
                                      "both must be on the same CUDA device")
        a = check_conv_activation(a, names[0], layout=self.layout)
        b = check_conv_activation(b, names[1], layout=self.layout)
        problem = self._problem(tuple(a.shape), tuple(b.shape), input_size)
        for name, t in zip(names, (a, b)):
            if t.numel() > _INT_MAX:
                raise TensorArgumentError(f"conv2d {self.mode}: {name} has {t.numel()} elements, above 2^31 - 1; split "
                                          "the batch")
        return a, b, problem, dtype, a.device.index

    def _given_input_size(self, a, b, input_size):
        """input_size as run() keys and plans the call: None where it is the size dgrad infers without one (the
        same call, so the same warm calls, the C++ table's among them); as given otherwise (ints only: anything
        else reaches _problem's check)."""
        if (isinstance(input_size, (tuple, list)) and all(type(v) is int for v in input_size)
                and self._implied_input_size(a, b) == tuple(input_size)):
            return None
        return input_size

    def _implied_input_size(self, a, b):
        """dgrad's dx size when input_size is not given (torch's output_padding = 0), or None (another mode, or
        operands without a 4-D shape: the checked path says what is wrong)."""
        a_shape, b_shape = getattr(a, "shape", ()), getattr(b, "shape", ())
        if self.mode != "dgrad" or len(a_shape) != 4 or len(b_shape) != 4:
            return None
        (n, _, p, q), (_, c, r, s) = a_shape, b_shape
        (ph, pw), (sh, sw), (dh, dw) = self.padding, self.stride, self.dilation
        return (n, c, (p - 1) * sh - 2 * ph + dh * (r - 1) + 1, (q - 1) * sw - 2 * pw + dw * (s - 1) + 1)

    def _problem(self, a_shape, b_shape, input_size):
        (ph, pw), (sh, sw), (dh, dw) = self.padding, self.stride, self.dilation
        mode = self.mode
        if mode == "fprop":
            (N, C, H, W), (K, C2, R, S) = a_shape, b_shape
            if C2 != C:
                raise TensorArgumentError(f"conv2d fprop: x has C = {C} channels (shape {a_shape}) but w has C = {C2} "
                                          f"(shape {b_shape}, (K, C, R, S)); groups are not supported")
        elif mode == "dgrad":
            (N, K, P, Q), (K2, C, R, S) = a_shape, b_shape
            if K2 != K:
                raise TensorArgumentError(f"conv2d dgrad: dy has K = {K} channels (shape {a_shape}) but w has K = {K2} "
                                          f"filters (shape {b_shape})")
            if input_size is None:  # the smallest input whose output is P x Q (torch's output_padding = 0)
                H = (P - 1) * sh - 2 * ph + dh * (R - 1) + 1
                W = (Q - 1) * sw - 2 * pw + dw * (S - 1) + 1
            else:
                if (len(input_size) != 4 or not all(isinstance(v, int) for v in input_size) or input_size[0] != N
                        or input_size[1] != C):
                    raise TensorArgumentError(f"conv2d dgrad: input_size={tuple(input_size)} must be (N, C, H, W) with "
                                              f"N = {N} (dy) and C = {C} (w)")
                H, W = input_size[2], input_size[3]
        else:
            (N, K, P, Q), (N2, C, H, W) = a_shape, b_shape
            if N2 != N:
                raise TensorArgumentError(f"conv2d wgrad: dy has N = {N} (shape {a_shape}) but x has N = {N2} "
                                          f"(shape {b_shape})")
            if self.kernel_size is None:
                raise TensorArgumentError("conv2d wgrad: the filter size is not implied by dy and x; pass "
                                          "kernel_size=(R, S) to Conv2d(mode=\"wgrad\", ...)")
            R, S = self.kernel_size
        P_of, Q_of = output_extent(H, ph, dh, R, sh), output_extent(W, pw, dw, S, sw)
        # The gathers mark a position outside the image by moving it 2^29 away (conv/implicit_gemm.h:
        # kFarOutside), so image extents stay well below that.
        if max(H, W, R * self.dilation[0], S * self.dilation[1]) >= 1 << 28:
            raise TensorArgumentError(f"conv2d {mode}: H={H}, W={W} or a dilated filter extent is 2^28 or more; the "
                                      "kernels index images below that")
        if min(N, C, K, H, W, R, S) < 1 or P_of < 1 or Q_of < 1:
            raise TensorArgumentError(
                f"conv2d {mode}: N={N} C={C} H={H} W={W} K={K} R={R} S={S} with padding {self.padding}, stride "
                f"{self.stride}, dilation {self.dilation} gives an output of {P_of} x {Q_of}; every size must be >= 1")
        if mode != "fprop" and (P_of, Q_of) != (P, Q):
            raise TensorArgumentError(
                f"conv2d {mode}: dy is {P} x {Q} (P x Q) but an input of {H} x {W} with a {R} x {S} filter, padding "
                f"{self.padding}, stride {self.stride}, dilation {self.dilation} gives {P_of} x {Q_of}"
                + ("; pass input_size=(N, C, H, W)" if mode == "dgrad" else ""))
        return ConvProblem(N, H, W, C, K, R, S, P_of, Q_of, self.padding, self.stride, self.dilation)

    def _as_matrix(self, t):
        """The (rows, cols) matrix the epilogue sees of a channels-last tensor of the output's shape."""
        n, c, h, w = t.shape
        nhwc = t.permute(0, 2, 3, 1)
        return nhwc.reshape(n, h * w * c) if self.mode == "wgrad" else nhwc.reshape(n * h * w, c)

    def _epilogue_arguments(self, arguments, problem):
        """The epilogue's arguments as the matrix view sees them: output-shaped 4-D tensors become
        (rows, cols) matrices (channels-last, or converted when layout="convert")."""
        torch = _torch()
        out_size = problem.output_size(self.mode)
        converted = {}
        for name, value in arguments.items():
            if isinstance(value, torch.Tensor) and value.dim() == 4:
                if tuple(value.shape) != out_size:
                    raise TensorArgumentError(f"epilogue argument {name!r} has shape {tuple(value.shape)}; a 4-D "
                                              f"argument must have the output's shape {out_size}")
                value = self._as_matrix(check_conv_activation(value, name, layout=self.layout))
            converted[name] = value
        return converted

    # ---- planning ----

    def plan(self, a, b, *, input_size=None, zero_channels=0, **arguments):
        """The ConvPlan that run(a, b, **arguments) launches: the compiled kernel (the JIT's cache or NVRTC)
        and the split of K."""
        check_epilogue_arguments(self.epilogue, arguments, "tilefuse.Conv2d")
        if getattr(a, "shape", (1,))[:1] == (0,):
            raise TensorArgumentError("tilefuse.Conv2d.plan: the batch is empty (N = 0): run() returns its result "
                                      "without a kernel of that shape, so there is no plan")
        a, b, problem, dtype, device = self._operands(a, b, input_size)
        self._check_zero_channels(zero_channels, problem)
        composed = self._composed(a, b, problem, dtype, device, arguments, zero_channels)
        if isinstance(composed, PhasedDgrad):
            return PhasedDgradPlan(composed.planned["why"], [(p.phase, plan) for p, plan in
                                                             zip(composed.phases, composed.plans(a, b))],
                                   in_place=composed.stores_in_place(a, b))
        if isinstance(composed, Im2colWgrad):
            return Im2colWgradPlan(composed.planned["why"], composed.gemm_plan(a, b), composed.planned["gemm_family"])
        return self._plan(a, b, problem, dtype, device, self._epilogue_arguments(arguments, problem))

    def _check_zero_channels(self, zero_channels, problem):
        if zero_channels == 0:
            return
        if self.mode != "wgrad":
            raise TensorArgumentError(f"conv2d {self.mode}: zero_channels is a wgrad's (x's channels known to be zero)")
        if type(zero_channels) is not int or not 0 < zero_channels < problem.C:
            raise TensorArgumentError(f"conv2d wgrad: zero_channels={zero_channels!r} must be an int in [0, C) with "
                                      f"C = {problem.C} (x's last channels that are zero, e.g. a channel padding)")

    def _composed(self, a, b, problem, dtype, device, arguments, zero_channels=0):
        """The call the C++ planner composes of other kernels, else None: a strided dgrad by phases
        (PhasedDgrad) or a wgrad of few channels by im2col + GEMM (Im2colWgrad); both for the identity
        epilogue and the auto kernel; the wgrad for the auto split, the dgrad also for split_k = 1 (as
        conv::Conv2d: its phases do not split)."""
        if (self.mode == "fprop" or self.kernel != "auto" or self.epilogue is not _identity
                or self.out_dtype is not None or arguments):
            return None
        if self.mode == "wgrad":
            return self._im2col_wgrad(a, b, problem, dtype, device, zero_channels) if self.split_k == "auto" else None
        if problem.stride == (1, 1) or self.split_k not in ("auto", 1):
            return None
        key = ("phases", problem, dtype, device)
        if key not in self._operations:
            from . import _C

            sm_count, major, minor = device_properties(device)
            planned = _C.plan_dgrad_phases(problem.planner_geometry(), dtype, True, (major, minor, sm_count),
                                           a.data_ptr() % 16 == 0 and b.data_ptr() % 16 == 0)
            self._operations[key] = PhasedDgrad(planned, problem, self._phase_fprop) if planned["use"] else None
        return self._operations[key]

    def _im2col_wgrad(self, a, b, problem, dtype, device, zero_channels):
        """The Im2colWgrad of a wgrad of few channels that the C++ planner runs as im2col + the Hopper GEMM
        (conv::plan_wgrad_im2col; planned for the channels x does not have as zeros), else None."""
        key = ("im2col", problem, dtype, device, zero_channels)
        if key not in self._operations:
            from . import _C

            sm_count, major, minor = device_properties(device)
            real = dataclasses.replace(problem, C=problem.C - zero_channels)
            planned = _C.plan_wgrad_im2col(real.planner_geometry(), dtype, True, (major, minor, sm_count),
                                           a.data_ptr() % 16 == 0 and b.data_ptr() % 16 == 0)
            self._operations[key] = Im2colWgrad(planned, problem, zero_channels) if planned["use"] else None
        return self._operations[key]

    def _phase_fprop(self, padding):
        return Conv2d("fprop", stride=1, padding=padding)

    def row_mapped_call(self, a, b, out, row_map, beside_previous=False):
        """The WarmCall of this bare fprop storing its output pixels into `out` (channels-last) where `row_map`
        says (gemm::sm90::OutputRowMap's fourteen fields, from the planner: conv::phase_row_map) instead of as a
        tensor of its own; call(a, b, {}, out=out) runs it. None where the planned kernel cannot (not the
        Hopper kernel, a split, or no row map in its epilogue): the caller then stores by a copy. A strided
        dgrad by phases (PhasedDgrad) stores each phase in place in dx this way. beside_previous: the call
        touches nothing a kernel still running before it writes, and writes nothing such a kernel reads (a
        later phase), so it may run beside the kernel before it."""
        if self.mode != "fprop" or self.epilogue is not _identity or self.out_dtype is not None:
            return None
        a, b, problem, dtype, device = self._operands(a, b, None)
        plan = self._plan(a, b, problem, dtype, device, {})
        operation = plan.operation
        if operation.family != "sm90" or plan.planner["sm90_split"] != "none":
            return None
        kernel, _, layout = operation.kernel_on(device)
        if layout["row_map"] < 0:
            return None
        views = {"D": out.permute(0, 2, 3, 1).reshape(-1, out.shape[1])}  # D's ld; the row map places the rows
        launch = self._pack_sm90(operation, kernel, layout, problem, {}, views, device, plan.planner,
                                 store_by_tma=False)
        params = bytearray(launch.template)
        struct.pack_into(f"<{len(row_map)}q", params, layout["row_map"], *row_map)
        if beside_previous and layout["beside_previous"] >= 0:
            struct.pack_into("<i", params, layout["beside_previous"], 1)
        launch.template = bytes(params)
        return WarmCall(device, [launch], self._output_specs(operation, problem))

    def _plan_input(self, a, b, problem, dtype, device, tree, arguments):
        """The C++ planner's plan (a dict; conv::plan_conv2d) for this call, from the facts of its tensors."""
        from . import _C

        sm_count, major, minor = device_properties(device)
        facts = tree_facts(tree)
        return _C.plan_conv2d(self.mode, problem.planner_geometry(), dtype, facts["reads_memory"],
                              facts["residual_by_tma"], (major, minor, sm_count),
                              a.data_ptr() % 16 == 0 and b.data_ptr() % 16 == 0,
                              0 if self.split_k == "auto" else self.split_k,
                              family="sm80" if self.kernel == "sm80" else None,
                              residual_unaligned=residual_tma_unaligned(tree, arguments, 1, _residual_strides) or "")

    def _plan(self, a, b, problem, dtype, device, arguments):
        from .epilogue import to_cpp, trace

        out = dtype if self.out_dtype is None else element_type(self.out_dtype, what="out_dtype").name
        m, n, k = problem.gemm(self.mode)
        aligned_bases = a.data_ptr() % 16 == 0 and b.data_ptr() % 16 == 0
        # The device is in the key: two GPUs of one arch may differ in SMs, and so in tile and split choices;
        # so is each tensor argument's alignment (a residual TMA cannot read sends the call to the sm80 kernel).
        key = (dtype, out, problem, aligned_bases, device,
               tuple(sorted((name, spec_key(value), _alignment(value)) for name, value in arguments.items())))
        plan = self._operations.get(key)
        if plan is None:
            graph = trace(self.epilogue, acc=(m, n), **arguments)
            tree = to_cpp(graph, element=out)
            if uses_coordinates(tree) and max(m, n) >= 1 << 24:  # as conv::Conv2d refuses it
                raise TensorArgumentError(f"conv2d {self.mode}: the epilogue reads element coordinates (row(), col()), "
                                          f"which are exact only below 2^24, but its GEMM is {m} x {n}; split the "
                                          "batch, or pass the coordinates as a vector")
            planned = self._plan_input(a, b, problem, dtype, device, tree, arguments)
            hopper = planned["family"] == "sm90"
            if self.kernel == "sm90" and not hopper:
                raise TensorArgumentError(f"conv2d {self.mode}: kernel=\"sm90\" cannot run this problem: "
                                          f"{planned['why_not_hopper']}")
            major, minor = device_properties(device)[1:]
            if hopper:
                operation = _compiled_sm90(str(tree), self.mode, planned, dtype, graph, tree)
            else:
                arch = jit_arch(major, minor)
                operation = _compiled(str(tree), self.mode, planned["family"], planned["sm80_config"],
                                      planned["sm80_tile"], dtype, planned["aligned"], arch, graph, tree)
            plan = self._operations[key] = ConvPlan(operation, planned["split_k"], planned, device)
        return plan

    # ---- running ----

    def run(self, a, b, *, input_size=None, zero_channels=0, **arguments):
        """Runs the convolution and its epilogue on the tensors' device and the current torch stream;
        returns the output (channels-last), or a dict of the outputs when the epilogue returns a dict.

        A call whose tensors have the shapes, strides, dtypes, devices and alignment of an earlier call (and
        numbers where it had numbers) repeats that call's checked plan: only pointers and scalars are new.
        CUDA tensors of other frameworks (anything with __dlpack__: CuPy, JAX, ...) are taken through DLPack
        without a copy; outputs are torch tensors."""
        if type(zero_channels) is not int:  # checked before any warm key: True or 5.0 would hash as an int
            raise TensorArgumentError(f"conv2d {self.mode}: zero_channels={zero_channels!r} must be an int")
        input_size = self._given_input_size(a, b, input_size)
        if input_size is None and not zero_channels:  # the C++ warm path (fast_path): None where it has no such call
            y = fast_path.repeat_run(self, a, b, arguments)
            if y is not None:
                return y
        a, b = from_dlpack(a), from_dlpack(b)
        arguments = {name: from_dlpack(value) for name, value in arguments.items()}
        key = _call_key(a, b, input_size, arguments)
        if key is not None and zero_channels:
            key = key + (("zero_channels", zero_channels),)
        warm = self._warm.get(key) if key is not None else None
        if warm is not None:
            return warm.call(a, b, arguments)
        return self._first_call(a, b, input_size, arguments, key, zero_channels)

    def warm_call(self, a, b, arguments, input_size=None):
        """The WarmCall that run(a, b, input_size=..., **arguments) repeats for this signature once a first run
        checked it, or None. The torch ops, which key their own checked calls, call it directly."""
        key = _call_key(a, b, self._given_input_size(a, b, input_size), arguments)
        return self._warm.get(key) if key is not None else None

    def _first_call(self, a, b, input_size, arguments, key, zero_channels=0):
        """Checks, plans, packs and launches; remembers the call for later ones with the same signature."""
        check_epilogue_arguments(self.epilogue, arguments, "tilefuse.Conv2d")
        torch = _torch()
        if isinstance(a, torch.Tensor) and a.dim() == 4 and a.shape[0] == 0:
            return self._empty_batch(a, b, input_size, arguments)
        a_in, b_in = a, b
        a, b, problem, dtype, device = self._operands(a, b, input_size)
        self._check_zero_channels(zero_channels, problem)
        composed = self._composed(a, b, problem, dtype, device, arguments, zero_channels)
        if composed is not None:
            out = composed.call(a, b, arguments)
            if key is not None and a is a_in and b is b_in:
                self._warm[key] = composed
            return out
        matrices = self._epilogue_arguments(arguments, problem)
        plan = self._plan(a, b, problem, dtype, device, matrices)
        operation = plan.operation
        kernel, split_kernel, layout = operation.kernel_on(device)
        cuda = torch.device("cuda", device)
        m, n, k = problem.gemm(self.mode)
        outputs = self._output_specs(operation, problem)
        results = allocate(outputs, cuda)
        views = {name: (self._as_matrix(t) if t.dim() == 4 else t) for name, t in results.items()}
        # The workspace: the sm80 kernel's split-K partials, or the Hopper wgrad's (the pass's partials, or the
        # in-kernel split's zeroed sums and tickets), sized by the planner.
        planner = plan.planner
        hopper = operation.family == "sm90"
        split = planner["sm90_split"] if hopper else ("pass" if plan.split_k > 1 else "none")
        splits = planner["sm90_splits"] if hopper else plan.split_k
        numel = (-(-planner["sm90_workspace_bytes"] // 4) if hopper else (splits * m * n if split == "pass" else 0))
        zeroed, tickets_offset = split == "kernel", planner["sm90_tickets_offset"]
        partials = workspace(numel, zeroed, cuda)
        if hopper:
            main = self._pack_sm90(operation, kernel, layout, problem, matrices, views, device, planner)
        else:
            main = self._pack(operation, kernel, layout, problem, matrices, views, device, plan.split_k, partials)
        launches = [main]
        if split == "pass":  # the second pass: sum the partials, apply the epilogue
            reduce = bytearray(layout["reduce_size"])
            for field, value in (("reduce_m", m), ("reduce_n", n), ("reduce_k", k), ("reduce_batch", 1)):
                struct.pack_into("<q", reduce, layout[field], value)
            struct.pack_into("<i", reduce, layout["reduce_split_k"], splits)
            vectors = m * _ceil(n, 8)
            second = Launch(split_kernel.kernel, min(_ceil(vectors * split_k_lanes(vectors, splits), 256), 65535),
                            256, 0)
            second.pointers.append((layout["reduce_partials"], "partials"))
            pack_epilogue(reduce, layout["reduce_nodes"], matrices, views, device, 1, record=second)
            second.template = bytes(reduce)
            launches.append(second)
        warm = WarmCall(device, launches, outputs, numel, zeroed, tickets_offset)
        pointers = call_pointers(a, b, matrices, results, partials, tickets_offset)
        stream = current_raw_stream(device)
        for launch in launches:
            launch.run(device, stream, pointers, arguments)
        converted = a is not a_in or b is not b_in or any(
            isinstance(v, torch.Tensor) and v.data_ptr() != matrices[name].data_ptr() for name, v in arguments.items())
        if key is not None and not converted:
            self._warm[key] = warm
            if input_size is None:
                fast_path.remember_run(self, a, b, arguments, warm)
        return results["D"] if set(results) == {"D"} else results

    def _empty_batch(self, a, b, input_size, arguments):
        """run()'s result for N = 0, as torch's conv gives it: fprop and dgrad outputs are empty (a reduction over
        rows empty too, one over columns at its identity); wgrad's accumulator is the sum over no samples, 0, so
        its result is the epilogue on zeros, which one zero image gives exactly. Everything is checked as for
        N = 1 (the same call with one image)."""
        torch = _torch()

        def one_image(t):
            if isinstance(t, torch.Tensor) and t.dim() == 4 and t.shape[0] == 0:
                return t.new_zeros((1,) + tuple(t.shape[1:])).contiguous(memory_format=torch.channels_last)
            return t

        size = None if input_size is None else (1,) + tuple(input_size[1:])
        ones = {name: one_image(value) for name, value in arguments.items()}
        if self.mode == "wgrad":
            return self.run(one_image(a), one_image(b), input_size=size, **ones)
        a1, b1, problem, dtype, device = self._operands(one_image(a), b, size)
        empty = dataclasses.replace(problem, N=0)
        cuda = torch.device("cuda", device)
        if self.epilogue is _identity and self.out_dtype is None and not arguments:
            return torch.empty(empty.output_size(self.mode), dtype=a.dtype, device=cuda,
                               memory_format=torch.channels_last)
        operation = self._plan(a1, b1, problem, dtype, device, self._epilogue_arguments(ones, problem)).operation
        results = allocate(self._output_specs(operation, empty), cuda)
        return results["D"] if set(results) == {"D"} else results

    def _output_specs(self, operation, problem):
        """What a call of `operation` on `problem` allocates (kernel_params.allocate): each store of the
        output's shape, channels-last, in its dtype from the C++ tree; each reduction over the rows (m) or the
        columns (n), started at its identity."""
        m, n, _ = problem.gemm(self.mode)
        specs = []
        for name, out in operation.graph.outputs.items():
            if out.kind == "store":
                out_dtype = torch_dtype(next(arg.dtype for arg in operation.tree.arguments if arg.name == name))
                specs.append((name, "store", problem.output_size(self.mode), out_dtype, True))
            else:
                specs.append((name, "reduce", (m if out.kind == "row_reduce" else n,), IDENTITY[out.reduction], False))
        return specs

    def _pack(self, operation, kernel, layout, problem, arguments, outputs, device, split_k, partials):
        """The sm80 kernel's Launch: its Params packed (the pointers of this call included) and where each
        pointer and scalar goes."""
        params = bytearray(layout["size"])
        m, n, k = problem.gemm(self.mode)
        struct.pack_into("<15i", params, layout["geometry"], *problem.geometry())
        for field, value in (("m", m), ("n", n), ("k", k), ("batch", 1)):
            struct.pack_into("<q", params, layout[field], value)
        tm, tn, tk = operation.tile
        struct.pack_into("<i", params, layout["split_k"], split_k)
        struct.pack_into("<q", params, layout["k_per_split"], _ceil(_ceil(k, tk), split_k) * tk)
        tiles_m, tiles_n = _ceil(m, tm), _ceil(n, tn)
        launch = Launch(kernel.kernel, tiles_m * tiles_n, layout["threads"], layout["smem_bytes"], split_k)
        launch.pointers += [(layout["a"], "a"), (layout["b"], "b")]
        if partials is not None:
            launch.pointers.append((layout["partials"], "partials"))
        struct.pack_into("<i", params, layout["tiles_m"], tiles_m)
        struct.pack_into("<i", params, layout["tiles_n"], tiles_n)
        pack_epilogue(params, layout["nodes"], arguments, outputs, device, 1, record=launch)
        launch.template = bytes(params)
        return launch

    def _pack_sm90(self, operation, kernel, layout, problem, arguments, outputs, device, planner, store_by_tma=True):
        """The Hopper kernel's Launch, filled as conv::Conv2d fills it (launch_sm90; conv2d_sm90_wgrad_launch.hpp): the
        operands' tensor maps (conv2d_sm90_launch.hpp, through tilefuse._C), the problem (the wgrad's K in
        splits of k_per_split pixels, the split as the batch), the residual's and D's tensor maps where the
        kernel reads or writes them by TMA (D by lane stores where not store_by_tma), the split-K workspace, and
        the epilogue."""
        from . import _C

        params = bytearray(layout["size"])
        m, n, k = problem.gemm(self.mode)
        tm, tn, _ = operation.tile
        split = planner["sm90_split"]
        batch = planner["sm90_splits"] if split != "none" else 1  # the kernel's batch: the splits
        mode, element, geometry13 = self.mode, operation.element, problem.planner_geometry()
        # dgrad runs as an fprop of dy over the flipped filter: the kernel's geometry is that fprop's
        struct.pack_into("<15i", params, layout["geometry"], *_C.conv_sm90_geometry(mode, geometry13))
        if self.mode == "wgrad":
            k = planner["sm90_k_per_split"]
            struct.pack_into("<i", params, layout["sm90_k_per_split"], k)
        for field, value in (("m", m), ("n", n), ("k", k), ("batch", batch)):
            struct.pack_into("<q", params, layout[field], value)
        tiles_m, tiles_n = _ceil(m, tm), _ceil(n, tn)
        struct.pack_into("<i", params, layout["tiles_m"], tiles_m)
        struct.pack_into("<i", params, layout["tiles_n"], tiles_n)
        struct.pack_into("<i", params, layout["tiles"], tiles_m * tiles_n * batch)
        launch = Launch(kernel.kernel, min(tiles_m * tiles_n * batch, planner["sm_count"]), layout["threads"],
                        layout["smem_bytes"], after_previous_early=True)
        tile, im2col, half_k, pointwise = (planner["sm90_tile"], planner["im2col"], planner["half_k"],
                                           planner["pointwise"])

        def operand_maps(a, b):
            map_a, map_b, _ = _C.encode_conv_sm90_operands(mode, geometry13, element, tile, im2col, half_k, pointwise, a, b)
            return (map_a, map_b) if map_a else (map_b,)

        tiled = 1 if pointwise else 0
        tiled_field = layout["x_tiled"] if self.mode == "wgrad" else layout["a_tiled"]
        if tiled_field >= 0:
            struct.pack_into("<i", params, tiled_field, tiled)
        if layout["tma_a"] >= 0 and layout["x"] < 0:
            launch.add_maps((layout["tma_a"], layout["tma_b"]), ("a", "b"), operand_maps)
        else:  # the gathering fprop reads x by pointer
            launch.add_maps((layout["tma_b"],), ("a", "b"), operand_maps)
            launch.pointers.append((layout["x"], "a"))
        if split == "kernel":
            launch.pointers += [(layout["split_sums"], "partials"), (layout["split_tickets"], "tickets")]
        if split == "pass":  # the kernel stores fp32 partials, one m x n matrix per split
            (node,) = layout["nodes"]
            launch.pointers.append((node["data"], "partials"))
            struct.pack_into("<q", params, node["ld"], n)
            struct.pack_into("<q", params, node["batch_stride"], m * n)
        else:
            pack_epilogue(params, layout["nodes"], arguments, outputs, device, 1, record=launch)
            self._pack_epilogue_maps(launch, params, layout, arguments, outputs, m, n, tm, store_by_tma)
        launch.template = bytes(params)
        return launch

    @staticmethod
    def _pack_epilogue_maps(launch, params, layout, arguments, outputs, m, n, tile_m, store_by_tma=True):
        """The residual's tensor map (and whether its column vector rides beside it) where the kernel loads it by
        TMA, and D's where TMA can store it (gemm::encode_sm90_aux / encode_sm90_store's rules, through _C)."""
        # one image-batch matrix (the GEMM's batch is 1): rows stride(0) apart, vectors shared
        pack_residual_by_tma(params, launch, layout, arguments, m, n, 1, tile_m,
                             lambda node, tensor: (tensor.stride(0), 0))
        if layout["tma_store_kernel"] and store_by_tma:
            node = next(node for node in layout["nodes"] if node["kind"] == "store")
            pack_d_by_tma(params, launch, layout, outputs[node["name"]], "out:" + node["name"], m, n)


def _residual_strides(name, residual):
    """A conv residual's (ld, batch stride) as the kernel reads it: one matrix of the output's rows."""
    return (residual.stride(0) if residual.dim() == 2 else residual.shape[-1]), 0


def _alignment(value):
    """A tensor argument's base modulo 16 bytes (whether TMA can read it), None for a number."""
    return value.data_ptr() % 16 if hasattr(value, "data_ptr") else None


def _call_key(a, b, input_size, arguments):
    """The signature of a run() call (kernel_params.call_key), or None when an argument is something only the
    checked path handles (its error message)."""
    key = call_key(a, b, arguments)
    return None if key is None else (key, None if input_size is None else tuple(input_size))


_COMPILED = {}  # (tree, mode, family, config, element, aligned, arch) -> ConvOperation, shared by the process


def _compiled(tree_text, mode, family, config, tile, element, aligned, arch, graph, tree):
    from .jit import conv_kernel

    key = (tree_text, mode, family, config, element, aligned, arch)
    if key not in _COMPILED:
        cached = conv_kernel(tree, element, mode, config, aligned, arch=arch)
        operation = ConvOperation(mode, family, config, tuple(tile), element, aligned, arch, tree_text, cached)
        operation.graph, operation.tree = graph, tree
        _COMPILED[key] = operation
    return _COMPILED[key]


def _compiled_sm90(tree_text, mode, planned, element, graph, tree):
    """The Hopper kernel the C++ planner chose and spelled (planned["sm90_kernel"]), compiled once per process."""
    from .jit import conv_sm90_kernel

    kernel_type = planned["sm90_kernel"]
    key = (tree_text, kernel_type, planned["sm90_split"])
    if key not in _COMPILED:
        cached = conv_sm90_kernel(tree, kernel_type, planned["sm90_kernel_tree"], planned["sm90_split"])
        operation = ConvOperation(mode, "sm90", kernel_type, tuple(planned["sm90_tile_shape"]), element, True, "sm_90a",
                                  tree_text, cached, source=_source_words(mode, planned))
        operation.graph, operation.tree = graph, tree
        _COMPILED[key] = operation
    return _COMPILED[key]


def _source_words(mode, planned):
    """How the Hopper kernel loads its operands, for describe()."""
    act = "tiled TMA" if planned["pointwise"] else "TMA im2col"
    if mode == "wgrad":
        return f"dy by TMA (A MN-major), x by {act} (B MN-major)"
    if mode == "dgrad":
        return f"dy by {act} over the equivalent fprop, w by TMA (B MN-major, flipped taps)"
    if not planned["im2col"]:
        return "x gathered by 16-byte cp.async of the producer warpgroup, w by TMA"
    return f"x by {act}, w by TMA"
