"""The conv2d custom op (namespace ``tilefuse``), registered when tilefuse.ops is imported:

  torch.ops.tilefuse.conv2d(x, weight, bias, residual, stride, padding, dilation, activation="none",
                            layout="require") -> y
      y = act(conv2d(x, weight) + bias) + residual in one tilefuse.Conv2d fprop (NHWC: x, weight, residual
      and y channels-last; layout="convert" copies inputs that are not). bf16 / fp16 on an sm_80+ GPU.

Backward (register_autograd), with grad_z = dL/d(conv + bias), all on tilefuse.Conv2d kernels:
  - grad_z: "none": grad_y; "relu" without a residual: grad_y where y > 0 (torch.where); otherwise the
    conv recomputed by a fprop whose epilogue is grad_y * act'(acc + bias) (nothing but x and weight kept);
  - grad_x: a dgrad (tilefuse.Conv2d("dgrad")); grad_weight: a wgrad (split-K over N*P*Q);
  - grad_bias = grad_z.sum((0, 2, 3)) and grad_residual = grad_y: torch.
"""
from typing import List, Optional

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable

from . import fast_path
from .conv2d import Conv2d
from .conv2d_phases import PhasedDgrad
from .errors import TensorArgumentError
from .epilogue.common import fused
from .kernel_params import signature
from .op_common import (_DTYPES, CheckedCalls, _dtype_name, activation_name, autocast, channels_to_pad, eager_path,
                        formula_function, grad_epilogue, needs_grad, pad_channels, zero_channels_of)

CL = torch.channels_last
_CONVS = {}  # key -> tilefuse.Conv2d (each caches its plans per shape; kernels are shared process-wide)


def _conv(kind, stride, padding, dilation, layout, activation="none", has_bias=False, has_residual=False,
          kernel_size=None):
    """The tilefuse.Conv2d of a kind: "forward" (act(conv + bias) + residual), "add_act" (act(conv + bias +
    residual)), "grad" (grad_y * act'(conv + bias)), "dgrad", "wgrad"."""
    key = (kind, tuple(stride), tuple(padding), tuple(dilation), layout, activation, has_bias, has_residual,
           kernel_size)
    conv = _CONVS.get(key)
    if conv is None:
        geometry = dict(stride=tuple(stride), padding=tuple(padding), dilation=tuple(dilation), layout=layout)
        if kind in ("forward", "add_act"):
            epilogue = fused(activation, has_bias, has_residual, residual_first=kind == "add_act")
            conv = Conv2d("fprop", epilogue=epilogue, **geometry)
        elif kind == "grad":
            conv = Conv2d("fprop", epilogue=grad_epilogue(activation, has_bias), **geometry)
        else:  # "dgrad" / "wgrad"
            conv = Conv2d(kind, kernel_size=kernel_size, **geometry)
        _CONVS[key] = conv
    return conv


def _pair(values, what):
    values = list(values)
    if len(values) != 2 or not all(isinstance(v, int) for v in values):
        raise TensorArgumentError(f"tilefuse.ops.conv2d: {what}={values!r} must be two ints (height, width)")
    return values


def output_shape(x, weight, stride, padding, dilation):
    """(N, K, P, Q) of the convolution, as torch.nn.functional.conv2d computes it."""
    n, _, h, w = x.shape
    k, _, r, s = weight.shape
    p = (h + 2 * padding[0] - dilation[0] * (r - 1) - 1) // stride[0] + 1
    q = (w + 2 * padding[1] - dilation[1] * (s - 1) - 1) // stride[1] + 1
    return (n, k, p, q)


def check_conv2d(x, weight, bias, residual, stride, padding, dilation, activation, layout):
    """Validates conv2d's arguments (ranks, dtypes, devices, shapes); used by the real and the fake kernel.
    Memory formats are checked by tilefuse.Conv2d (the real kernel), which converts when layout="convert"."""
    activation_name(activation)
    if layout not in ("require", "convert"):
        raise TensorArgumentError(f"tilefuse.ops.conv2d: layout={layout!r}: use 'require' or 'convert'")
    stride, padding, dilation = (_pair(v, n) for v, n in ((stride, "stride"), (padding, "padding"),
                                                          (dilation, "dilation")))
    for name, t, rank in (("x", x, 4), ("weight", weight, 4), ("bias", bias, 1), ("residual", residual, 4)):
        if t is None:
            continue
        if not isinstance(t, torch.Tensor) or t.dim() != rank:
            shape = tuple(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__
            raise TensorArgumentError(f"tilefuse.ops.conv2d: {name} is {shape}; it must be a {rank}-D tensor")
        if t.dtype != x.dtype:
            raise TensorArgumentError(f"tilefuse.ops.conv2d: {name} has dtype {_dtype_name(t.dtype)} and x "
                                      f"{_dtype_name(x.dtype)}; they must be equal")
        if t.device != x.device:
            raise TensorArgumentError(f"tilefuse.ops.conv2d: {name} is on {t.device} and x on {x.device}")
    if x.dtype not in _DTYPES:
        raise TensorArgumentError(f"tilefuse.ops.conv2d: x has dtype {_dtype_name(x.dtype)}; tilefuse's convolution "
                                  "takes bfloat16 or float16: convert the module, e.g. module.to(torch.bfloat16)")
    if weight.shape[1] != x.shape[1]:
        raise TensorArgumentError(f"tilefuse.ops.conv2d: x has {x.shape[1]} channels and weight {tuple(weight.shape)} "
                                  f"expects {weight.shape[1]}; groups are not supported")
    out = output_shape(x, weight, stride, padding, dilation)
    if min(out[1:]) < 1 or min(stride) < 1 or min(dilation) < 1 or min(padding) < 0:  # N = 0 is torch's too
        raise TensorArgumentError(f"tilefuse.ops.conv2d: x {tuple(x.shape)}, weight {tuple(weight.shape)}, stride "
                                  f"{stride}, padding {padding}, dilation {dilation} give an output of {out}")
    if bias is not None and tuple(bias.shape) != (weight.shape[0],):
        raise TensorArgumentError(f"tilefuse.ops.conv2d: bias has shape {tuple(bias.shape)}; it must be "
                                  f"(out_channels,) = ({weight.shape[0]},)")
    if residual is not None and tuple(residual.shape) != out:
        raise TensorArgumentError(f"tilefuse.ops.conv2d: residual has shape {tuple(residual.shape)}; it must be the "
                                  f"output's {out}")
    return out


def _empty_output(x, out):
    """An uninitialized channels-last output of shape `out` (the fake kernels' result, an empty batch's)."""
    return torch.empty(out, dtype=x.dtype, device=x.device, memory_format=CL)


_CHECKED = CheckedCalls()  # forward calls whose arguments passed the checks -> _Checked


class _Checked:
    """A forward signature that passed the checks: its tilefuse.Conv2d and WarmCall, and once a backward of it
    ran, the grad's signature and the dgrad's and wgrad's warm calls for it (a later backward with that
    signature goes straight to them)."""

    __slots__ = ("conv", "warm", "grad_signature", "dgrad", "wgrad", "fast")

    def __init__(self, conv, warm):
        self.conv, self.warm = conv, warm
        self.grad_signature = self.dgrad = self.wgrad = None
        self.fast = 0  # the C++ fast path's entry for this signature (fast_path), 0: none


def _epilogue_arguments(bias, residual):
    arguments = {}
    if bias is not None:
        arguments["bias"] = bias.contiguous()
    if residual is not None:
        arguments["residual"] = residual
    return arguments


def _forward_impl(x, weight, bias, residual, stride, padding, dilation, activation="none", layout="require",
                  kind="forward"):
    """act(conv + bias) + residual (kind "forward") or act(conv + bias + residual) ("add_act"). A call whose
    signature was checked before goes straight to the kernel's WarmCall (no second signature, no checks).
    A weight in torch's default (contiguous) format is copied to channels-last here, a small copy: FSDP2 and
    other wrappers keep parameters contiguous."""
    return _forward_checked(x, weight, bias, residual, stride, padding, dilation, activation, layout, kind)[0]


def _forward_checked(x, weight, bias, residual, stride, padding, dilation, activation="none", layout="require",
                     kind="forward"):
    """(_forward_impl's output, the call's _Checked or None)."""
    if weight.dim() == 4 and not weight.is_contiguous(memory_format=CL) and weight.is_contiguous():
        weight = weight.contiguous(memory_format=CL)
    key = _CHECKED.key((x, weight, bias, residual), tuple(stride), tuple(padding), tuple(dilation), activation,
                       layout, kind)
    known = _CHECKED.get(key)
    if known is not None and known.warm is not None:
        return known.warm.call(x, weight, _epilogue_arguments(bias, residual)), known
    if known is None:
        out = check_conv2d(x, weight, bias, residual, stride, padding, dilation, activation, layout)
        what = "conv2d" if kind == "forward" else "conv2d_add_act"
        if kind == "add_act" and residual is None:
            raise TensorArgumentError("tilefuse.ops.conv2d_add_act: residual is required (act(conv + bias + "
                                      "residual))")
        if x.device.type != "cuda":
            raise TensorArgumentError(f"tilefuse.ops.{what}: the tensors are on {x.device}; tilefuse's kernels "
                                      "run on a CUDA device: move them with .cuda() (or module.to('cuda'))")
        if out[0] == 0:  # an empty batch: nothing to compute, as torch's conv returns
            return _empty_output(x, out), None
        known = _Checked(_conv(kind, stride, padding, dilation, layout, activation, bias is not None,
                               residual is not None), None)
    arguments = _epilogue_arguments(bias, residual)
    y = known.conv.run(x, weight, **arguments)
    known.warm = known.conv.warm_call(x, weight, arguments)
    _CHECKED.remember(key, known)
    if known.warm is not None and (bias is None or arguments["bias"] is bias):
        known.fast = _remember_fast(x, weight, bias, residual, stride, padding, dilation, activation, layout, kind,
                                    known.warm, tuple(arguments))
    return y, known


# ---- the C++ warm path (fast_path): calls of a checked signature without Python ----

_FAST = {}  # (stride, padding, dilation, activation, layout, kind) -> tilefuse._torch_ops.FastConv


def fast_conv(stride, padding, dilation, activation, layout, kind="forward"):
    """The C++ warm path of conv2d (kind "forward") or conv2d_add_act ("add_act") with these arguments (call it
    with x, weight, bias, residual: the output, or None where Python must take the call), or None without
    tilefuse._torch_ops. The frozen graphs' conv2d_inference kernel takes the "require" ones."""
    key = (tuple(stride), tuple(padding), tuple(dilation), activation, layout, kind)
    fast = _FAST.get(key)
    if fast is None:
        ops = fast_path.module()
        if ops is None:
            return None
        geometry = (list(stride), list(padding), list(dilation))
        trainable = kind == "forward" and activation == "none"  # grad_z is grad_y: the C++ node's backward
        fast = _FAST[key] = ops.FastConv(trainable, lambda *args: _fast_backward(geometry, *args))
        if layout == "require":
            ops.register_inference_conv(*geometry, activation, kind == "add_act", fast)
    return fast


def _remember_fast(x, weight, bias, residual, stride, padding, dilation, activation, layout, kind, warm, names):
    """Hands a checked forward call to the C++ warm path; its entry (0: not taken)."""
    fast = fast_conv(stride, padding, dilation, activation, layout, kind)
    native = fast_path.native_warm_call(warm, names) if fast is not None else None
    return 0 if native is None else fast.remember(x, weight, bias, residual, native)


def _fast_backward(geometry, grad_y, x, weight, needs_x, needs_w, entry):
    """The C++ node's backward when its entry has no warm dgrad / wgrad for grad_y's signature: the kernels
    through Python, then their warm calls handed to the entry."""
    stride, padding, dilation = geometry
    grad = grad_y.contiguous(memory_format=CL)
    grad_x = _dgrad_impl(grad, weight, list(x.shape), stride, padding, dilation) if needs_x else None
    grad_w = _wgrad_impl(grad, x, list(weight.shape), stride, padding, dilation) if needs_w else None
    if needs_x and needs_w and grad is grad_y:
        _remember_fast_grads(entry, x, weight, grad_y, stride, padding, dilation)
    return grad_x, grad_w


def _remember_fast_grads(entry, x, weight, grad_y, stride, padding, dilation):
    """The dgrad's and wgrad's warm calls for grad_y, in C++, on the fast path's entry (when both exist)."""
    ops = fast_path.module()
    if not entry or ops is None:
        return
    dgrad = _conv("dgrad", stride, padding, dilation, "require").warm_call(grad_y, weight, {}, tuple(x.shape))
    wgrad = _conv("wgrad", stride, padding, dilation, "require", kernel_size=tuple(weight.shape[2:])).warm_call(
        grad_y, x, {})
    if isinstance(dgrad, PhasedDgrad):
        native_dgrad = fast_path.native_phased_dgrad(dgrad, grad_y, weight)
    else:
        native_dgrad = fast_path.native_warm_call(dgrad)
    native_wgrad = fast_path.native_warm_call(wgrad)
    if native_dgrad is not None and native_wgrad is not None:
        ops.FastConv.remember_grads(entry, grad_y, native_dgrad, native_wgrad)


@torch.library.custom_op("tilefuse::conv2d", mutates_args=())
def _conv2d(x: Tensor, weight: Tensor, bias: Optional[Tensor], residual: Optional[Tensor], stride: List[int],
            padding: List[int], dilation: List[int], activation: str = "none", layout: str = "require") -> Tensor:
    return _forward_impl(x, weight, bias, residual, stride, padding, dilation, activation, layout)


@_conv2d.register_fake
def _conv2d_fake(x, weight, bias, residual, stride, padding, dilation, activation="none", layout="require"):
    return _empty_output(x, check_conv2d(x, weight, bias, residual, stride, padding, dilation, activation, layout))


def _setup_context(ctx, inputs, output):
    # The dispatcher drops trailing arguments equal to their defaults (activation, layout).
    x, weight, bias, residual, stride, padding, dilation, activation, _ = (list(inputs) + [None] * 9)[:9]
    ctx.geometry = (list(stride), list(padding), list(dilation))
    ctx.activation = activation or "none"
    relu_from_output = ctx.activation == "relu" and residual is None  # z > 0 exactly where y > 0
    recompute = ctx.activation not in ("none",) and not relu_from_output
    ctx.save_for_backward(x, weight, bias if recompute else None, output if relu_from_output else None)


def _backward(ctx, grad_y):
    return _grads(ctx, grad_y, (torch.ops.tilefuse.conv2d_grad_preact, torch.ops.tilefuse.conv2d_dgrad,
                                torch.ops.tilefuse.conv2d_wgrad))


def _grads(ctx, grad_y, kernels):
    """The gradients of conv2d's inputs, by the three backward kernels (the custom ops, or their bodies)."""
    grad_preact, dgrad, wgrad = kernels
    x, weight, bias, y = ctx.saved_tensors
    stride, padding, dilation = ctx.geometry
    needs = tuple(ctx.needs_input_grad) + (False,) * 9
    grad = grad_y.contiguous(memory_format=CL)  # autograd may hand any strides (e.g. an expanded sum's)
    x_cl, w_cl = x.contiguous(memory_format=CL), weight.contiguous(memory_format=CL)
    if ctx.activation == "none":
        grad_z = grad
    elif y is not None:
        grad_z = torch.where(y > 0, grad, torch.zeros((), dtype=grad.dtype, device=grad.device))
        grad_z = grad_z.contiguous(memory_format=CL)
    else:
        grad_z = grad_preact(grad, x_cl, w_cl, bias, stride, padding, dilation, ctx.activation)
    grad_x = grad_w = grad_b = grad_r = None
    if needs[0]:
        grad_x = dgrad(grad_z, w_cl, list(x.shape), stride, padding, dilation)
    if needs[1]:
        grad_w = wgrad(grad_z, x_cl, list(weight.shape), stride, padding, dilation)
    if needs[2]:
        grad_b = grad_z.sum((0, 2, 3))
    if needs[3]:
        grad_r = grad_y
    return grad_x, grad_w, grad_b, grad_r, None, None, None, None, None


_conv2d.register_autograd(_backward, setup_context=_setup_context)


_Conv2dOp = formula_function(torch.ops.tilefuse.conv2d.default, _setup_context, _backward, "_Conv2dOp")


@torch.library.custom_op("tilefuse::conv2d_grad_preact", mutates_args=())
def _conv2d_grad_preact(grad_y: Tensor, x: Tensor, weight: Tensor, bias: Optional[Tensor], stride: List[int],
                        padding: List[int], dilation: List[int], activation: str) -> Tensor:
    return _grad_preact_impl(grad_y, x, weight, bias, stride, padding, dilation, activation)


def _grad_preact_impl(grad_y, x, weight, bias, stride, padding, dilation, activation):
    check_conv2d(x, weight, bias, grad_y, stride, padding, dilation, activation, "require")
    if x.shape[0] == 0:
        return torch.empty_like(grad_y, memory_format=CL)
    conv = _conv("grad", stride, padding, dilation, "require", activation, bias is not None)
    arguments = {"grad": grad_y}
    if bias is not None:
        arguments["bias"] = bias.contiguous()
    return conv.run(x, weight, **arguments)


@_conv2d_grad_preact.register_fake
def _conv2d_grad_preact_fake(grad_y, x, weight, bias, stride, padding, dilation, activation):
    return _empty_output(x, check_conv2d(x, weight, bias, grad_y, stride, padding, dilation, activation, "require"))


def _dgrad_impl(grad_y, weight, input_size, stride, padding, dilation):
    if input_size[0] == 0:
        return torch.empty(tuple(input_size), dtype=grad_y.dtype, device=grad_y.device, memory_format=CL)
    return _conv("dgrad", stride, padding, dilation, "require").run(grad_y, weight, input_size=tuple(input_size))


def _wgrad_impl(grad_y, x, weight_size, stride, padding, dilation):
    if x.shape[0] == 0:  # a sum over no samples
        return torch.empty(tuple(weight_size), dtype=grad_y.dtype, device=grad_y.device, memory_format=CL).zero_()
    conv = _conv("wgrad", stride, padding, dilation, "require", kernel_size=tuple(weight_size[2:]))
    zero = zero_channels_of(x)  # x padded by conv2d_python: the wgrad gathers its real channels only
    return conv.run(grad_y, x, zero_channels=zero) if zero else conv.run(grad_y, x)


# The backward ops have no autograd formula (once differentiable): defined with torch.library.Library, so the
# dispatcher goes from its C++ entry to their CUDA kernel (custom_op would put a Python autograd kernel before it).
_LIB = torch.library.Library("tilefuse", "FRAGMENT")
_LIB.define("conv2d_dgrad(Tensor grad_y, Tensor weight, int[] input_size, int[] stride, int[] padding, "
            "int[] dilation) -> Tensor", tags=(torch.Tag.pt2_compliant_tag,))
_LIB.define("conv2d_wgrad(Tensor grad_y, Tensor x, int[] weight_size, int[] stride, int[] padding, "
            "int[] dilation) -> Tensor", tags=(torch.Tag.pt2_compliant_tag,))
_LIB.impl("conv2d_dgrad", _dgrad_impl, "CompositeExplicitAutograd")
_LIB.impl("conv2d_wgrad", _wgrad_impl, "CompositeExplicitAutograd")


def _dgrad_fake(grad_y, weight, input_size, stride, padding, dilation):
    return torch.empty(tuple(input_size), dtype=grad_y.dtype, device=grad_y.device, memory_format=CL)


def _wgrad_fake(grad_y, x, weight_size, stride, padding, dilation):
    return torch.empty(tuple(weight_size), dtype=grad_y.dtype, device=grad_y.device, memory_format=CL)


torch.library.register_fake("tilefuse::conv2d_dgrad", _dgrad_fake, lib=_LIB)
torch.library.register_fake("tilefuse::conv2d_wgrad", _wgrad_fake, lib=_LIB)


@torch.library.custom_op("tilefuse::conv2d_add_act", mutates_args=())
def _conv2d_add_act(x: Tensor, weight: Tensor, bias: Optional[Tensor], residual: Tensor, stride: List[int],
                    padding: List[int], dilation: List[int], activation: str = "none") -> Tensor:
    """act(conv2d(x, weight) + bias + residual) in one kernel: a ResNet block's last conv with its shortcut
    (the residual before the activation; tilefuse::conv2d adds it after)."""
    return _forward_impl(x, weight, bias, residual, stride, padding, dilation, activation, "require", "add_act")


@_conv2d_add_act.register_fake
def _conv2d_add_act_fake(x, weight, bias, residual, stride, padding, dilation, activation="none"):
    return _empty_output(x, check_conv2d(x, weight, bias, residual, stride, padding, dilation, activation, "require"))


def _add_act_setup_context(ctx, inputs, output):
    x, weight, bias, residual, stride, padding, dilation, activation = (list(inputs) + [None] * 8)[:8]
    ctx.geometry = (list(stride), list(padding), list(dilation))
    ctx.activation = activation or "none"
    ctx.save_for_backward(x, weight, output)


def _add_act_backward(ctx, grad_y):
    """grad_pre = grad_y * act'(conv + bias + residual), exact from the output for none and relu; then
    dgrad, wgrad, the bias's sum, and grad_residual = grad_pre."""
    x, weight, y = ctx.saved_tensors
    stride, padding, dilation = ctx.geometry
    needs = tuple(ctx.needs_input_grad) + (False,) * 8
    grad = grad_y.contiguous(memory_format=CL)
    if ctx.activation == "relu":
        grad = torch.where(y > 0, grad, torch.zeros((), dtype=grad.dtype, device=grad.device))
        grad = grad.contiguous(memory_format=CL)
    elif ctx.activation != "none":
        raise NotImplementedError(f"tilefuse::conv2d_add_act: backward through activation={ctx.activation!r} is "
                                  "not implemented (none and relu are); use tilefuse::conv2d with the residual "
                                  "after the activation, or torch's ops, for training")
    grad_x = grad_w = grad_b = grad_r = None
    if needs[0]:
        grad_x = torch.ops.tilefuse.conv2d_dgrad(grad, weight.contiguous(memory_format=CL), list(x.shape), stride,
                                                 padding, dilation)
    if needs[1]:
        grad_w = torch.ops.tilefuse.conv2d_wgrad(grad, x.contiguous(memory_format=CL), list(weight.shape), stride,
                                                 padding, dilation)
    if needs[2]:
        grad_b = grad.sum((0, 2, 3))
    if needs[3]:
        grad_r = grad
    return grad_x, grad_w, grad_b, grad_r, None, None, None, None


_conv2d_add_act.register_autograd(_add_act_backward, setup_context=_add_act_setup_context)


_AddActOp = formula_function(torch.ops.tilefuse.conv2d_add_act.default, _add_act_setup_context, _add_act_backward,
                             "_AddActOp")


if fast_path.available():  # C++ Autograd kernels in place of custom_op's Python ones
    fast_path.module().register_conv2d_autograd(_Conv2dOp.apply, _AddActOp.apply)


# ---- C++ CUDA kernels of the ops torch.compile's graphs call (fast_path): a checked signature runs from C++,
# anything else through these Python implementations, which hand each new signature's warm calls over ----

def _conv2d_op_python(x, weight, bias, residual, stride, padding, dilation, activation, layout):
    return _forward_impl(x, weight, bias, residual, stride, padding, dilation, activation, layout)


def _add_act_op_python(x, weight, bias, residual, stride, padding, dilation, activation):
    return _forward_impl(x, weight, bias, residual, stride, padding, dilation, activation, "require", "add_act")


def _dgrad_op_python(grad_y, weight, input_size, stride, padding, dilation):
    dx = _dgrad_impl(grad_y, weight, input_size, stride, padding, dilation)
    if input_size[0]:
        warm = _conv("dgrad", stride, padding, dilation, "require").warm_call(grad_y, weight, {}, tuple(input_size))
        native = (fast_path.native_phased_dgrad(warm, grad_y, weight) if isinstance(warm, PhasedDgrad)
                  else fast_path.native_warm_call(warm))
        if native is not None:
            fast_path.module().remember_dgrad(stride, padding, dilation, grad_y, weight, list(input_size), native)
    return dx


def _wgrad_op_python(grad_y, x, weight_size, stride, padding, dilation):
    dw = _wgrad_impl(grad_y, x, weight_size, stride, padding, dilation)
    if x.shape[0]:
        conv = _conv("wgrad", stride, padding, dilation, "require", kernel_size=tuple(weight_size[2:]))
        native = fast_path.native_warm_call(conv.warm_call(grad_y, x, {}))
        if native is not None:
            fast_path.module().remember_wgrad(stride, padding, dilation, grad_y, x, list(weight_size), native)
    return dw


if fast_path.available():
    fast_path.module().register_training_kernels(_conv2d_op_python, _add_act_op_python, _dgrad_op_python,
                                                 _wgrad_op_python)


class _EagerConv2d(torch.autograd.Function):
    """The same op without the custom-op dispatcher, for eager calls: the dispatcher costs about 180 us of host
    time a call on an H100's host (bench/python), several times the kernel; torch.compile and other tracers
    take the custom op (conv2d: eager_path). A training step's backward repeats its first call's dgrad and
    wgrad warm calls when grad_y has the signature it had then (_warm_grads)."""

    @staticmethod
    def forward(ctx, x, weight, bias, residual, stride, padding, dilation, activation, layout):
        y, ctx.checked = _forward_checked(x, weight, bias, residual, stride, padding, dilation, activation, layout)
        _setup_context(ctx, (x, weight, bias, residual, stride, padding, dilation, activation, layout), y)
        return y

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_y):
        fast = _warm_grads(ctx, grad_y)
        if fast is not None:
            return fast
        grads = _grads(ctx, grad_y, (_grad_preact_impl, _dgrad_impl, _wgrad_impl))
        _remember_grads(ctx, grad_y)
        return grads


def _warm_grads(ctx, grad_y):
    """The gradients by the warm calls a first backward of this forward signature left (_remember_grads), or
    None: activation "none" (grad_z is grad_y), x and the weight channels-last as checked in the forward, and
    grad_y of the signature the warm calls were made for."""
    checked = getattr(ctx, "checked", None)
    if checked is None or checked.grad_signature is None or checked.grad_signature != signature(grad_y):
        return None
    x, weight, _, _ = ctx.saved_tensors
    if not weight.is_contiguous(memory_format=CL):  # the forward's key saw the weight's channels-last copy
        return None
    needs = ctx.needs_input_grad
    grad_x = checked.dgrad.call(grad_y, weight, {}) if needs[0] else None
    grad_w = checked.wgrad.call(grad_y, x, {}) if needs[1] else None
    grad_b = grad_y.sum((0, 2, 3)) if needs[2] else None
    return grad_x, grad_w, grad_b, grad_y if needs[3] else None, None, None, None, None, None


def _remember_grads(ctx, grad_y):
    """After a checked backward: the dgrad's and wgrad's warm calls for this grad_y, where the fast path may
    take them (activation "none", channels-last x, weight and grad_y, both kernels wanted and warm)."""
    checked = getattr(ctx, "checked", None)
    if checked is None or ctx.activation != "none" or not all(ctx.needs_input_grad[:2]):
        return
    x, weight, _, _ = ctx.saved_tensors
    if not all(t.is_contiguous(memory_format=CL) for t in (x, weight, grad_y)):
        return
    stride, padding, dilation = ctx.geometry
    dgrad = _conv("dgrad", stride, padding, dilation, "require").warm_call(grad_y, weight, {}, tuple(x.shape))
    wgrad = _conv("wgrad", stride, padding, dilation, "require", kernel_size=tuple(weight.shape[2:])).warm_call(
        grad_y, x, {})
    if dgrad is not None and wgrad is not None:
        checked.dgrad, checked.wgrad, checked.grad_signature = dgrad, wgrad, signature(grad_y)
        _remember_fast_grads(checked.fast, x, weight, grad_y, stride, padding, dilation)


def conv2d(x, weight, bias=None, residual=None, stride=1, padding=0, dilation=1, activation=None, layout="require"):
    """y = act(conv2d(x, weight) + bias) + residual (torch.ops.tilefuse.conv2d; differentiable), as
    torch.nn.functional.conv2d with a fused activation and residual; y is channels-last. x (N, C, H, W) and
    weight (K, C, R, S) channels-last (layout="convert" copies them otherwise); bias (K,); residual y's shape.
    bf16 / fp16 on an sm_80+ GPU (float32 under torch.autocast("cuda") is cast to its dtype). Channels that
    do not make 16-byte rows (an RGB image's 3) are padded with zeros on x and the weight where the planner
    says so (conv::channels_to_pad): a copy of x, then the aligned kernels. A call whose tensors have the
    signature of an earlier one runs from C++ (fast_path) where tilefuse._torch_ops is built."""
    def pair(v):
        return [v, v] if isinstance(v, int) else list(v)

    stride, padding, dilation = pair(stride), pair(padding), pair(dilation)
    activation = activation_name(activation)
    if not torch.compiler.is_compiling():
        fast = _FAST.get((tuple(stride), tuple(padding), tuple(dilation), activation, layout, "forward"))
        y = fast(x, weight, bias, residual) if fast is not None else None
        if y is not None:
            return y
    return conv2d_python(x, weight, bias, residual, stride, padding, dilation, activation, layout)


def conv2d_python(x, weight, bias, residual, stride, padding, dilation, activation, layout):
    """conv2d through Python (the first call of a signature, and whatever the C++ path does not take): stride,
    padding and dilation as lists, activation by its op name."""
    tensors = autocast(x, weight, bias, residual)
    pad_c = channels_to_pad(*tensors[:2])
    if pad_c and (layout == "convert" or tensors[0].is_contiguous(memory_format=CL)):
        # zero channels on x and the weight (torch ops: autograd slices the weight's gradient back)
        tensors = (pad_channels(tensors[0], pad_c), pad_channels(tensors[1], pad_c)) + tuple(tensors[2:])
    if not eager_path(tensors):
        op = torch.ops.tilefuse.conv2d
    elif needs_grad(tensors):
        op = _EagerConv2d.apply
    else:  # nothing to differentiate: the kernel alone, as torch's ops do under no_grad
        op = _forward_impl
    return op(*tensors, stride, padding, dilation, activation, layout)
