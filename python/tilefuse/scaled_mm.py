"""tilefuse.scaled_mm: torch._scaled_mm's FP8 scaled GEMM on the Hopper kernel, compiled by the JIT.

    d = tilefuse.scaled_mm(a, b, scale_a, scale_b, bias=None, out_dtype=torch.bfloat16, scale_result=None,
                           use_fast_accum=False)

The same arguments, shapes and rules as torch._scaled_mm: a (m, k) row-major, b (k, n) column-major (the
.t() of a row-major (n, k) weight), each e4m3 or e5m2 (the two may differ); float32 scales, per-tensor (one
value each), row-wise (scale_a (m, 1), scale_b (1, n)) or block-wise (DeepSeek-style: scale_a (m, ceil(k/128))
one per 1 x 128 of a, M-major, i.e. strides (1, m); scale_b (ceil(k/128), ceil(n/128)) one per 128 x 128 of b,
strides (1, ceil(k/128)); bf16 / fp16 / fp32 outputs); bias (n,) in the output dtype (bf16 / fp16 outputs);
out_dtype bf16, fp16, fp32 or an FP8 type (default a's dtype), scale_result (one float32 value) for FP8
outputs (ignored for others, as torch does).
e5m2 x e5m2 is refused, as torch refuses it.
D = convert(scale_result * ((a @ b) * scale_a * scale_b + bias)), with the scales applied by the epilogue
tree to the fp32 accumulator (gemm::ScaledGemm's trees) and the scale tensors read on the device.
use_fast_accum=False (torch's default) adds every k-tile's tensor-core sum into fp32 registers
(Sm90Fp8PromotedConfig); True lets the tensor cores accumulate the whole K (the cooperative tile the wave
model picks, or for row-wise scales with K <= 1024 the ping-pong 128x128 tile, as gemm::ScaledGemm does). Block-wise scales change every 128 of K, so the mainloop applies them
at each k-tile's promotion (Sm90Fp8BlockScaledConfig) whatever use_fast_accum says; the producer warp copies
them beside each k-tile's operands.
"""
import struct

from . import fast_path
from .errors import TensorArgumentError
from .errors import require_torch
from .gemm import Gemm
from .kernel_params import signature

_FP8 = ("float8_e4m3", "float8_e5m2")


def _epilogue(has_bias, has_scale_result, block_wise=False):
    """gemm::ScaledGemm's tree: acc * scale_a * scale_b, then + bias, then * scale_result (block-wise: the
    mainloop has applied the scales; then + bias)."""
    if block_wise:
        if has_bias:
            def scaled(acc, bias):
                return acc + bias
        else:
            def scaled(acc):
                return acc
        return scaled
    if has_bias and has_scale_result:
        def scaled(acc, scale_a, scale_b, bias, scale_result):
            return (acc * scale_a * scale_b + bias) * scale_result
    elif has_bias:
        def scaled(acc, scale_a, scale_b, bias):
            return acc * scale_a * scale_b + bias
    elif has_scale_result:
        def scaled(acc, scale_a, scale_b, scale_result):
            return acc * scale_a * scale_b * scale_result
    else:
        def scaled(acc, scale_a, scale_b):
            return acc * scale_a * scale_b
    return scaled


class ScaledGemm(Gemm):
    """The FP8 GEMM behind scaled_mm: FP8 operands (two types allowed), the accumulation's configs."""

    _OPERAND_DTYPES = _FP8
    _MIXED_FP8 = True
    _CONVERTS = False  # scaled_mm's rules fix the layouts (torch._scaled_mm's); its scales index k
    _EMPTY = False  # its scales' shapes follow m and n: an empty problem is refused with the sizes

    def __init__(self, *, has_bias, has_scale_result, out_dtype, fast_accum, mode):
        block_wise = mode == "block-wise"
        super().__init__(_epilogue(has_bias, has_scale_result, block_wise), out_dtype=out_dtype)
        self.fast_accum = fast_accum
        self.mode = mode
        if block_wise:
            self._MAINLOOP_ARGUMENTS = ("scale_a", "scale_b")

    def _choose(self, ops, device, whole):
        """The C++ planner's plan (gemm::plan_scaled_gemm, as gemm::ScaledGemm picks it)."""
        from . import _C

        plan = _C.plan_scaled_gemm(ops.m, ops.n, ops.k, ops.batch, device, self.mode, self.fast_accum)
        return plan["tile"], (plan["config"], *plan["tile_shape"]), plan["why"], (1, 0, 0)

    def _pack(self, operation, kernel, layout, ops, arguments, outputs, sm_count):
        """Gemm's packing, plus (block-wise) the scales' pointers and strides for the mainloop."""
        launch = super()._pack(operation, kernel, layout, ops, arguments, outputs, sm_count)
        if self.mode != "block-wise":
            return launch
        if not layout["block_scaled"]:
            raise RuntimeError("tilefuse: the block-wise scaled_mm kernel's layout says it is not block-scaled; "
                               "clear the JIT cache (TILEFUSE_CACHE_DIR) and retry")
        params = bytearray(launch.template)
        sa, sb = arguments["scale_a"], arguments["scale_b"]
        for field, value in (("block_scale_a_row", sa.stride(0)), ("block_scale_a_kblock", sa.stride(1)),
                             ("block_scale_b_kblock", sb.stride(0)), ("block_scale_b_nblock", sb.stride(1))):
            struct.pack_into("<q", params, layout[field], value)
        # Rows copied 4 at a time when a k-block's scales are contiguous 16-byte-aligned runs (the call's
        # signature keeps strides and the pointer's alignment, so warm calls agree).
        vector = sa.stride(0) == 1 and sa.stride(1) % 4 == 0 and sa.data_ptr() % 16 == 0
        struct.pack_into("<i", params, layout["block_scale_a_vector"], int(vector))
        for field, key, tensor in (("block_scale_a", "arg:scale_a", sa), ("block_scale_b", "arg:scale_b", sb)):
            struct.pack_into("<Q", params, layout[field], tensor.data_ptr())
            launch.pointers.append((layout[field], key))
        launch.template = bytes(params)
        return launch


_OPS = {}  # (bias?, scale_result?, out dtype, fast?, mode) -> ScaledGemm


def _torch():
    return require_torch("tilefuse.scaled_mm")


def check_scaled_mm(a, b, scale_a, scale_b, bias=None, out_dtype=None, scale_result=None):
    """torch._scaled_mm's rules, each refusal a sentence; returns (mode, out dtype name). Needs torch."""
    from .dtypes import element_type

    torch = _torch()
    for name, t in (("a", a), ("b", b), ("scale_a", scale_a), ("scale_b", scale_b), ("bias", bias),
                    ("scale_result", scale_result)):
        if not isinstance(t, torch.Tensor) and not (t is None and name in ("bias", "scale_result")):
            raise TensorArgumentError(f"scaled_mm: {name} must be a torch tensor, got {type(t).__name__}")
    if a.dim() != 2 or b.dim() != 2:
        raise TensorArgumentError(f"scaled_mm: a {tuple(a.shape)} and b {tuple(b.shape)} must be 2-D (m, k) and (k, n)")
    names = []
    for name, t in (("a", a), ("b", b)):
        try:
            names.append(element_type(t.dtype).name)
        except ValueError:
            names.append(str(t.dtype))
        if names[-1] not in _FP8:
            raise TensorArgumentError(f"scaled_mm: {name} has dtype {t.dtype}; it must be torch.float8_e4m3fn or "
                                      "torch.float8_e5m2")
    if names == ["float8_e5m2", "float8_e5m2"]:
        raise TensorArgumentError("scaled_mm: e5m2 x e5m2 is not supported (torch._scaled_mm refuses it too); make "
                                  "one operand e4m3")
    (m, k), n = a.shape, b.shape[1]
    if b.shape[0] != k:
        raise TensorArgumentError(f"scaled_mm: a is {tuple(a.shape)} and b {tuple(b.shape)}: a's columns must equal "
                                  "b's rows")
    if b.stride(0) != 1 and k > 1:
        raise TensorArgumentError(f"scaled_mm: b (strides {b.stride()}) must be column-major, as torch._scaled_mm "
                                  "requires: pass w.t() of a row-major (n, k) w")
    if k % 16 or n % 16:
        raise TensorArgumentError(f"scaled_mm: k = {k} and n = {n} must be multiples of 16 (torch._scaled_mm's rule; "
                                  "the FP8 tensor cores and TMA read 16-byte rows)")
    for name, t in (("scale_a", scale_a), ("scale_b", scale_b), ("scale_result", scale_result)):
        if t is not None and (t.dtype != torch.float32 or t.device != a.device):
            raise TensorArgumentError(f"scaled_mm: {name} is {t.dtype} on {t.device}; scales are float32 on a's "
                                      f"device ({a.device})")
    if scale_a.numel() == 1 and scale_b.numel() == 1:
        mode = "per-tensor"
    elif tuple(scale_a.shape) == (m, 1) and tuple(scale_b.shape) == (1, n):
        mode = "row-wise"
        if not (scale_a.is_contiguous() and scale_b.is_contiguous()):
            raise TensorArgumentError("scaled_mm: row-wise scales must be contiguous")
    else:
        blocks, n_blocks = -(-k // 128), -(-n // 128)
        if tuple(scale_a.shape) != (m, blocks) or tuple(scale_b.shape) != (blocks, n_blocks):
            raise TensorArgumentError(
                f"scaled_mm: scale_a {tuple(scale_a.shape)} and scale_b {tuple(scale_b.shape)} are neither per-tensor "
                f"(one value each), row-wise ((m, 1) = ({m}, 1) and (1, n) = (1, {n})) nor block-wise ((m, ceil(k/128)) "
                f"= ({m}, {blocks}) and (ceil(k/128), ceil(n/128)) = ({blocks}, {n_blocks}))")
        mode = "block-wise"
        _check_block_strides("scale_a", scale_a, (1, m), "scale_a = s.t().contiguous().t() of a row-major s")
        _check_block_strides("scale_b", scale_b, (1, blocks), "scale_b = s.t().contiguous().t() of a row-major s")
    out = element_type(out_dtype if out_dtype is not None else a.dtype, what="out_dtype").name
    if out not in ("bfloat16", "float16", "float32") + _FP8:
        raise TensorArgumentError(f"scaled_mm: out_dtype {out_dtype} is not one of bfloat16, float16, float32, "
                                  "float8_e4m3fn, float8_e5m2")
    if mode == "block-wise" and out in _FP8:
        raise TensorArgumentError(f"scaled_mm: block-wise scales with an {out} output are not supported (no amax or "
                                  "scale_result path for them); take a bf16 output and quantize it")
    if bias is not None:
        if out == "float32" or out in _FP8 and bias.dtype not in (torch.bfloat16, torch.float16):
            raise TensorArgumentError("scaled_mm: a bias goes with bf16 / fp16 outputs (torch._scaled_mm's rule); add "
                                      "it afterwards for float32 outputs")
        if out in ("bfloat16", "float16") and element_type(bias.dtype).name != out:
            raise TensorArgumentError(f"scaled_mm: bias is {bias.dtype}; it must have the output's dtype ({out})")
        if bias.numel() != n or bias.dim() > 2 or (bias.dim() == 2 and bias.shape[0] != 1):
            raise TensorArgumentError(f"scaled_mm: bias has shape {tuple(bias.shape)}; it must hold n = {n} values, "
                                      f"(n,) or (1, n)")
    if scale_result is not None and scale_result.numel() != 1:
        raise TensorArgumentError("scaled_mm: scale_result must be one float32 value")
    return mode, out


def _check_block_strides(name, scale, strides, fix):
    """torch's block-wise scale layout: strides must match along every extent above one."""
    got = scale.stride()
    if any(size > 1 and stride != want for size, stride, want in zip(scale.shape, got, strides)):
        raise TensorArgumentError(f"scaled_mm: block-wise {name} {tuple(scale.shape)} has strides {got}; torch's "
                                  f"layout is {strides} (blocks along k outermost). Pass {fix}")


_CHECKED = {}  # signature of the tensors and settings -> (mode, out dtype): the rules hold for every such call
# (out_dtype, use_fast_accum, bias given, scale_result given) -> the C++ table (fast_path) of checked calls
# with those settings, keyed by the caller's own tensors' signatures, and whether scale_result reaches the kernel;
# None where the C++ warm call cannot repeat such calls
_FAST = {}
_NATIVE = {}  # id(Python WarmCall) -> its C++ copy


def scaled_mm(a, b, scale_a, scale_b, bias=None, out_dtype=None, scale_result=None, use_fast_accum=False):
    """torch._scaled_mm on tilefuse's Hopper kernel (module docstring). Returns the (m, n) output. A call whose
    tensors have the shapes, strides, dtypes, devices and alignment of an earlier one is not checked again: it
    runs from C++ where the fast path has it."""
    settings = (out_dtype, bool(use_fast_accum), bias is not None, scale_result is not None)
    fast = _FAST.get(settings)
    if fast is not None:
        table, passes_result = fast
        extra = ((bias,) if bias is not None else ()) + ((scale_result,) if passes_result else ())
        out = table(a, b, 0, scale_a, scale_b, *extra)
        if out is not None:
            return out
    tensors = (a, b, scale_a, scale_b, bias, scale_result)
    parts = tuple(signature(t) if t is not None else "none" for t in tensors)
    key = None if None in parts else (parts, out_dtype, bool(use_fast_accum))
    checked = _CHECKED.get(key) if key is not None else None
    if checked is None:
        checked = check_scaled_mm(a, b, scale_a, scale_b, bias, out_dtype, scale_result)
        if key is not None:
            _CHECKED[key] = checked
    mode, out = checked
    fast = bool(use_fast_accum) and mode != "block-wise"  # block-wise always promotes (module docstring)
    op_key = (bias is not None, scale_result is not None and out in _FP8, out, fast, mode)
    op = _OPS.get(op_key)
    if op is None:
        op = _OPS[op_key] = ScaledGemm(has_bias=op_key[0], has_scale_result=op_key[1], out_dtype=out,
                                       fast_accum=op_key[3], mode=op_key[4])
    if mode == "block-wise":
        arguments = {"scale_a": scale_a, "scale_b": scale_b}
    else:
        # One row (m = 1): row-wise scale_a is a single value, read as a device scalar like a per-tensor one.
        arguments = {"scale_a": scale_a.reshape(()) if mode == "per-tensor" or a.shape[0] == 1 else scale_a,
                     "scale_b": scale_b.reshape(()) if mode == "per-tensor" else scale_b}
    originals = [scale_a, scale_b]  # the caller's tensors behind each argument (the same pointers)
    if bias is not None:
        arguments["bias"] = bias.reshape(-1)
        originals.append(bias)
    if op_key[1]:  # torch ignores scale_result for other outputs
        arguments["scale_result"] = scale_result.reshape(())
        originals.append(scale_result)
    result = op.run(a, b, **arguments)
    if key is not None:
        _remember(settings, op_key[1], op, a, b, arguments, originals)
    return result


def _remember(settings, passes_result, op, a, b, arguments, originals):
    """Hands the call just made to the C++ table of its settings, keyed by the caller's tensors (whose
    signatures imply the checks and the plan: out's dtype follows from out_dtype and a's dtype)."""
    if settings in _FAST and _FAST[settings] is None:
        return
    if settings[3] and not passes_result:  # a scale_result torch checks but ignores: the table would not see it
        _FAST[settings] = None
        return
    warm = op.warm_call(a, b, arguments)
    native = _NATIVE.get(id(warm))  # (made once: a call the table refuses, e.g. under autocast, comes back here)
    if native is None:
        native = fast_path.native_warm_call(warm, tuple(arguments))
        if native is None:  # e.g. an FP8 output, which the C++ warm call does not allocate: so for these settings
            _FAST.setdefault(settings, None)
            return
        _NATIVE[id(warm)] = native  # (op keeps every WarmCall for good: the id stays its own)
    if _FAST.get(settings) is None:
        _FAST[settings] = (fast_path.module().WarmTable(), passes_result)
    _FAST[settings][0].remember(a, b, 0, *originals, warm=native)
