"""PyTorch custom ops (namespace ``tilefuse``) running tilefuse.Gemm, with autograd and fake (meta)
implementations, so that they work in eager mode, under autograd and inside ``torch.compile(fullgraph=True)``.

Importing this module registers the ops (``import tilefuse.ops``; ``tilefuse.nn`` imports it):

  torch.ops.tilefuse.linear(x, weight, bias=None, residual=None, activation="none") -> y
      y = act(x @ weight.t() + bias) + residual, one fused Hopper GEMM. x: (..., k), weight: (n, k) as
      torch.nn.Linear holds it, bias: (n,), residual: y's shape (..., n); activation one of ACTIVATIONS.
  torch.ops.tilefuse.gemm(a, b, bias=None, residual=None, activation="none") -> act(a @ b + bias) + residual
      b: (k, n); tilefuse::linear with weight = b.t() (CompositeImplicitAutograd: it decomposes into linear).
  torch.ops.tilefuse.mm(a, b) -> a @ b         2-D, any strides (copied into the kernel's layouts).
  torch.ops.tilefuse.scaled_mm(a, b, scale_a, scale_b, bias=None, out_dtype=None, scale_result=None,
                               use_fast_accum=False)   torch._scaled_mm's FP8 GEMM (tilefuse.scaled_mm); no autograd.
  torch.ops.tilefuse.linear_grad_preact(grad_y, x, weight, bias, activation) -> grad_y * act'(x @ weight.t() + bias)
      The backward's recomputation GEMM, with the activation's derivative fused in its epilogue.

``linear(...)`` and ``mm(...)`` below are the Python spellings (``activation=None`` means "none").

Kernels: every GEMM is tilefuse.Gemm (sm_90, bf16 / fp16). Backward of linear, with grad_z = dL/d(pre-activation):
  - grad_z: "none": grad_y itself; "relu" without a residual: grad_y where y > 0 (torch.where, no GEMM);
    otherwise tilefuse::linear_grad_preact: x @ weight.t() recomputed by tilefuse.Gemm with the epilogue
    grad_y * act'(acc + bias) (no pre-activation is kept from the forward: memory for one extra GEMM);
  - grad_x = grad_z @ weight and grad_weight = grad_z.t() @ x: tilefuse::mm (tilefuse.Gemm after copying the
    operands into its layouts: a row-major, b K-major, k zero-padded to a multiple of 8 elements);
  - grad_bias = grad_z.sum(0) and grad_residual = grad_y: torch.
tilefuse::mm falls back to torch.mm for dtypes other than bf16 / fp16 (float32, float64); linear itself
refuses them. Double backward is not supported (linear_grad_preact has no autograd formula).
"""
from typing import Optional

try:
    import torch
    from torch import Tensor
except ImportError as error:  # pragma: no cover - exercised only without torch
    from .errors import MissingPackageError
    raise MissingPackageError("tilefuse.ops and tilefuse.nn need PyTorch (pip install torch, 2.11 tested); the rest "
                              "of tilefuse (tilefuse.Gemm's planning, tilefuse.epilogue, tilefuse.jit) works "
                              "without it") from error

from . import fast_path
from .errors import TensorArgumentError
from .gemm import Gemm
from .kernel_params import check_out
from .epilogue.common import ACTIVATIONS
from .op_common import (_DTYPES, _dtype_name, activation_name, autocast, eager_path, forward_epilogue,  # noqa: F401
                        formula_function, grad_epilogue, needs_grad, CheckedCalls)
_ALIGN = 8  # elements: 16 bytes of bf16 / fp16, what TMA needs of every leading dimension and pointer


# ---------------------------------------------------------------------------------------------- epilogues

_GEMMS = {}  # key -> tilefuse.Gemm (each caches its plans per shape; kernels are shared process-wide)


def _gemm(kind, activation="none", has_bias=False, has_residual=False):
    key = (kind, activation, has_bias, has_residual)
    gemm = _GEMMS.get(key)
    if gemm is None:
        if kind == "forward":
            gemm = Gemm(epilogue=forward_epilogue(activation, has_bias, has_residual))
        elif kind == "grad":
            gemm = Gemm(epilogue=grad_epilogue(activation, has_bias))
        else:
            gemm = Gemm()
        _GEMMS[key] = gemm
    return gemm


# ---------------------------------------------------------------------------------------------- checks

def check_linear(x, weight, bias, residual, activation):
    """Validates linear's arguments (shapes, dtypes, devices); used by the real and the fake kernel."""
    activation_name(activation)
    for name, t in (("x", x), ("weight", weight), ("bias", bias), ("residual", residual)):
        if t is not None and not isinstance(t, torch.Tensor):
            raise TensorArgumentError(f"tilefuse.ops.linear: {name} must be a torch.Tensor, got {type(t).__name__}")
    if weight.dim() != 2:
        raise TensorArgumentError(f"tilefuse.ops.linear: weight has shape {tuple(weight.shape)}; it must be "
                                  "(out_features, in_features), as torch.nn.Linear holds it")
    n, k = weight.shape
    if x.dim() < 1 or x.shape[-1] != k:
        raise TensorArgumentError(f"tilefuse.ops.linear: x has shape {tuple(x.shape)} and weight {tuple(weight.shape)}: "
                                  f"x's last dimension must be in_features = {k}")
    if x.dtype not in _DTYPES:
        raise TensorArgumentError(f"tilefuse.ops.linear: x has dtype {_dtype_name(x.dtype)}; tilefuse's Hopper GEMM "
                                  "takes bfloat16 or float16: convert the module or tensors, e.g. "
                                  "module.to(torch.bfloat16)")
    out_shape = (*x.shape[:-1], n)
    for name, t, shape in (("weight", weight, None), ("bias", bias, (n,)), ("residual", residual, out_shape)):
        if t is None:
            continue
        if t.dtype != x.dtype:
            raise TensorArgumentError(f"tilefuse.ops.linear: {name} has dtype {_dtype_name(t.dtype)} and x "
                                      f"{_dtype_name(x.dtype)}; they must be equal: pass {name}.to(x.dtype)")
        if t.device != x.device:
            raise TensorArgumentError(f"tilefuse.ops.linear: {name} is on {t.device} and x on {x.device}; put them "
                                      f"on one device: {name}.to(x.device)")
        if shape is not None and tuple(t.shape) != tuple(shape):
            what = "(out_features,)" if name == "bias" else "the output's shape (*x.shape[:-1], out_features)"
            raise TensorArgumentError(f"tilefuse.ops.linear: {name} has shape {tuple(t.shape)}; it must be {what} = "
                                      f"{tuple(shape)} (no broadcasting: expand and .contiguous() it yourself)")
    if n == 0 or k == 0:
        raise TensorArgumentError(f"tilefuse.ops.linear: weight has shape {tuple(weight.shape)}; in_features and "
                                  "out_features must be at least 1")


def _check_cuda(what, tensor):
    if tensor.device.type != "cuda":
        raise TensorArgumentError(f"tilefuse.ops.{what}: the tensors are on {tensor.device}; tilefuse's kernels run on "
                                  "a CUDA device (H100 / H200, sm_90): move them with .cuda() (or "
                                  "module.to('cuda'))")


def _row_major_ok(t):
    """t (rows, cols) is a row-major operand the Hopper kernel reads as it is."""
    rows, cols = t.shape
    return (t.stride(1) == 1 or cols == 1) and t.stride(0) >= cols and t.stride(0) % _ALIGN == 0 \
        and t.data_ptr() % 16 == 0 and cols % _ALIGN == 0


def _operands(a, b):
    """(a, b) of a @ b in the Hopper kernel's layouts: a (m, k) row-major, b (k, n) K-major, k a multiple of 8
    (zero-padded: the sum is unchanged) and 16-byte-aligned pointers and leading dimensions. Copies only what
    does not fit already."""
    m, k = a.shape
    n = b.shape[1]
    kp = -(-k // _ALIGN) * _ALIGN
    if not _row_major_ok(a):
        padded = a.new_zeros((m, kp)) if kp != k else a.new_empty((m, kp))
        padded[:, :k] = a
        a = padded
    if not _row_major_ok(b.t()):
        padded = b.new_zeros((n, kp)) if kp != k else b.new_empty((n, kp))
        padded[:, :k] = b.t()
        b = padded.t()
    return a, b


# ---------------------------------------------------------------------------------------------- linear

_CHECKED = CheckedCalls()  # linear calls whose arguments passed the checks -> the GEMM's WarmCall (or None)


def _linear_impl(x, weight, bias=None, residual=None, activation="none", out=None):
    """out: a contiguous (m, out_features) tensor to store into (tilefuse.overlap's blocks of rows), or None."""
    key = _CHECKED.key((x, weight, bias, residual), activation)
    known = _CHECKED.get(key)
    if known is None:
        check_linear(x, weight, bias, residual, activation)
        _check_cuda("linear", x)
    n, k = weight.shape
    lead = x.shape[:-1]
    m = x.numel() // k
    if m == 0:
        return x.new_empty((*lead, n))
    a, b = _operands(x.reshape(m, k), weight.t())
    arguments = {}
    if bias is not None:
        arguments["bias"] = bias.contiguous()
    if residual is not None:
        arguments["residual"] = residual.reshape(m, n).contiguous()
    if known:  # a signature checked and run before: its WarmCall, without Gemm.run's second signature
        if out is not None:
            check_out(out, known.outputs, "tilefuse.ops.linear", known.device)
        return known.call(a, b, arguments, out).reshape(*lead, n)
    gemm = _gemm("forward", activation, bias is not None, residual is not None)
    y = gemm.run(a, b, out=out, **arguments)
    warm = gemm.warm_call(a, b, arguments)
    _CHECKED.remember(key, warm or False)
    if warm is not None and _reads_in_place((x, a), (weight, b), (bias, arguments.get("bias")),
                                            (residual, arguments.get("residual"))):
        fast = fast_linear(activation)
        native = fast_path.native_warm_call(warm, tuple(arguments)) if fast is not None else None
        if native is not None:
            fast.remember(x, weight, bias, residual, native)
    return y.reshape(*lead, n)


def _reads_in_place(*pairs):
    """Whether each (tensor, what the kernel read of it) shares its storage start: the C++ warm path passes the
    tensors themselves."""
    return all(t is None or t.data_ptr() == read.data_ptr() for t, read in pairs)


_FAST_LINEAR = {}  # activation -> tilefuse._torch_ops.FastLinear


def fast_linear(activation):
    """The C++ warm path of linear without autograd for an activation (call it with x, weight, bias, residual:
    the output, or None where Python must take the call), or None without tilefuse._torch_ops. The frozen
    graphs' linear_inference kernel takes it too."""
    fast = _FAST_LINEAR.get(activation)
    if fast is None:
        ops = fast_path.module()
        if ops is None:
            return None
        fast = _FAST_LINEAR[activation] = ops.FastLinear()
        ops.register_inference_linear(activation, fast)
    return fast


@torch.library.custom_op("tilefuse::linear", mutates_args=())
def _linear(x: Tensor, weight: Tensor, bias: Optional[Tensor] = None, residual: Optional[Tensor] = None,
            activation: str = "none") -> Tensor:
    return _linear_impl(x, weight, bias, residual, activation)


@_linear.register_fake
def _linear_fake(x, weight, bias=None, residual=None, activation="none"):
    check_linear(x, weight, bias, residual, activation)
    return x.new_empty((*x.shape[:-1], weight.shape[0]))


def _linear_setup_context(ctx, inputs, output):
    x, weight, bias, residual, activation = inputs
    ctx.activation = activation
    relu_from_output = activation == "relu" and residual is None  # z > 0 exactly where y > 0
    recompute = activation != "none" and not relu_from_output  # linear_grad_preact needs the bias
    ctx.save_for_backward(x, weight, bias if recompute else None, output if relu_from_output else None)


def _linear_backward(ctx, grad_y):
    x, weight, bias, y = ctx.saved_tensors
    # The dispatcher drops trailing arguments equal to their defaults, and needs_input_grad with them.
    needs = tuple(ctx.needs_input_grad) + (False,) * 4
    n, k = weight.shape
    grad = grad_y.reshape(-1, n)
    x2 = x.reshape(-1, k)
    if ctx.activation == "none":
        grad_z = grad
    elif y is not None:  # relu without a residual: z > 0 exactly where y > 0
        grad_z = torch.where(y.reshape(-1, n) > 0, grad, torch.zeros((), dtype=grad.dtype, device=grad.device))
    else:
        grad_z = torch.ops.tilefuse.linear_grad_preact(grad, x2, weight, bias, ctx.activation)
    grad_x = grad_w = grad_b = grad_r = None
    if needs[0]:
        grad_x = torch.ops.tilefuse.mm(grad_z, weight).reshape(x.shape)
    if needs[1]:
        grad_w = torch.ops.tilefuse.mm(grad_z.t(), x2)
    if needs[2]:
        grad_b = grad_z.sum(0)
    if needs[3]:
        grad_r = grad_y
    return grad_x, grad_w, grad_b, grad_r, None


_linear.register_autograd(_linear_backward, setup_context=_linear_setup_context)


_LinearOp = formula_function(torch.ops.tilefuse.linear.default, _linear_setup_context, _linear_backward, "_LinearOp")
if fast_path.available():  # C++ Autograd and CUDA kernels (FastLinear's calls; _linear_impl on a miss)
    fast_path.module().register_linear_autograd(_LinearOp.apply)
    fast_path.module().register_linear_kernel(_linear_impl)


@torch.library.custom_op("tilefuse::linear_grad_preact", mutates_args=())
def _linear_grad_preact(grad_y: Tensor, x: Tensor, weight: Tensor, bias: Optional[Tensor],
                        activation: str) -> Tensor:
    _check_grad_preact(grad_y, x, weight, bias, activation)
    _check_cuda("linear_grad_preact", x)
    m, n = grad_y.shape
    if activation == "none":
        return grad_y.clone()  # act' = 1 (a copy: an op's output may not alias its input)
    if m == 0:
        return x.new_empty((0, n))
    a, b = _operands(x, weight.t())
    arguments = {"grad": grad_y.contiguous()}
    if bias is not None:
        arguments["bias"] = bias.contiguous()
    return _gemm("grad", activation, bias is not None).run(a, b, **arguments)


def _check_grad_preact(grad_y, x, weight, bias, activation):
    check_linear(x, weight, bias, None, activation)
    if x.dim() != 2 or tuple(grad_y.shape) != (x.shape[0], weight.shape[0]) or grad_y.dtype != x.dtype:
        raise TensorArgumentError(f"tilefuse.ops.linear_grad_preact: grad_y has shape {tuple(grad_y.shape)} "
                                  f"({_dtype_name(grad_y.dtype)}), x {tuple(x.shape)} ({_dtype_name(x.dtype)}), "
                                  f"weight {tuple(weight.shape)}: grad_y must be (m, out_features) of x's dtype "
                                  "and x (m, in_features)")


@_linear_grad_preact.register_fake
def _linear_grad_preact_fake(grad_y, x, weight, bias, activation):
    _check_grad_preact(grad_y, x, weight, bias, activation)
    return x.new_empty((x.shape[0], weight.shape[0]))


# ---------------------------------------------------------------------------------------------- mm

def _check_mm(a, b):
    for name, t in (("a", a), ("b", b)):
        if not isinstance(t, torch.Tensor) or t.dim() != 2:
            shape = tuple(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__
            raise TensorArgumentError(f"tilefuse.ops.mm: {name} is {shape}; a and b must be 2-D tensors (m, k), (k, n)")
    if a.shape[1] != b.shape[0]:
        raise TensorArgumentError(f"tilefuse.ops.mm: a has shape {tuple(a.shape)} and b {tuple(b.shape)}: a's columns "
                                  "must equal b's rows")
    if a.dtype != b.dtype or a.device != b.device:
        raise TensorArgumentError(f"tilefuse.ops.mm: a is {_dtype_name(a.dtype)} on {a.device}, b "
                                  f"{_dtype_name(b.dtype)} on {b.device}; they must agree")


@torch.library.custom_op("tilefuse::mm", mutates_args=())
def _mm(a: Tensor, b: Tensor) -> Tensor:
    _check_mm(a, b)
    if a.dtype not in _DTYPES:
        return torch.mm(a, b)  # documented fallback: tilefuse's Hopper GEMM reads bf16 / fp16 only
    _check_cuda("mm", a)
    (m, k), n = a.shape, b.shape[1]
    if m == 0 or n == 0:
        return a.new_empty((m, n))
    if k == 0:
        return a.new_zeros((m, n))
    a, b = _operands(a, b)
    return _gemm("mm").run(a, b)


@_mm.register_fake
def _mm_fake(a, b):
    _check_mm(a, b)
    return a.new_empty((a.shape[0], b.shape[1]))


def _mm_setup_context(ctx, inputs, output):
    ctx.save_for_backward(*inputs)


def _mm_backward(ctx, grad):
    a, b = ctx.saved_tensors
    grad_a = torch.ops.tilefuse.mm(grad, b.t()) if ctx.needs_input_grad[0] else None
    grad_b = torch.ops.tilefuse.mm(a.t(), grad) if ctx.needs_input_grad[1] else None
    return grad_a, grad_b


_mm.register_autograd(_mm_backward, setup_context=_mm_setup_context)


# ---------------------------------------------------------------------------------------------- gemm

# tilefuse::gemm(a, b, ...) = act(a @ b + bias) + residual: linear with weight = b.t(), so it needs no kernel,
# fake implementation or backward of its own (CompositeImplicitAutograd: it decomposes into tilefuse::linear,
# under autograd and torch.compile alike).
torch.library.define("tilefuse::gemm", "(Tensor a, Tensor b, Tensor? bias=None, Tensor? residual=None, "
                     "str activation='none') -> Tensor")


@torch.library.impl("tilefuse::gemm", "CompositeImplicitAutograd")
def _gemm_composite(a, b, bias=None, residual=None, activation="none"):
    if not isinstance(b, torch.Tensor) or b.dim() != 2:
        raise TensorArgumentError(f"tilefuse.ops.gemm: b must be a 2-D tensor (k, n), got "
                                  f"{tuple(b.shape) if isinstance(b, torch.Tensor) else type(b).__name__}")
    return torch.ops.tilefuse.linear(a, b.t(), bias, residual, activation)


# ---------------------------------------------------------------------------------------------- scaled_mm

@torch.library.custom_op("tilefuse::scaled_mm", mutates_args=())
def _scaled_mm(a: Tensor, b: Tensor, scale_a: Tensor, scale_b: Tensor, bias: Optional[Tensor] = None,
               out_dtype: Optional[torch.dtype] = None, scale_result: Optional[Tensor] = None,
               use_fast_accum: bool = False) -> Tensor:
    from .scaled_mm import scaled_mm
    return scaled_mm(a, b, scale_a, scale_b, bias, out_dtype, scale_result, use_fast_accum)


@_scaled_mm.register_fake
def _scaled_mm_fake(a, b, scale_a, scale_b, bias=None, out_dtype=None, scale_result=None, use_fast_accum=False):
    from .scaled_mm import check_scaled_mm
    from .tensors import torch_dtype

    _, out = check_scaled_mm(a, b, scale_a, scale_b, bias, out_dtype, scale_result)
    return a.new_empty((a.shape[0], b.shape[1]), dtype=torch_dtype(out))


# ---------------------------------------------------------------------------------------------- Python API

def linear(x, weight, bias=None, residual=None, activation=None):
    """y = act(x @ weight.t() + bias) + residual on tilefuse's Hopper GEMM (torch.ops.tilefuse.linear), as
    torch.nn.functional.linear with a fused activation and residual. x: (..., in_features); weight:
    (out_features, in_features); bias: (out_features,) or None; residual: y's shape or None; activation: None,
    "relu", "gelu", "gelu_tanh", "silu", "sigmoid", "hardswish" or "relu6". bf16 / fp16 on an sm_90 GPU (or float32 under
    torch.autocast("cuda"), cast to its dtype); differentiable."""
    activation = activation_name(activation)
    if not torch.compiler.is_compiling():  # a checked signature without autograd: from C++ (fast_path)
        fast = _FAST_LINEAR.get(activation)
        y = fast(x, weight, bias, residual) if fast is not None else None
        if y is not None:
            return y
    tensors = autocast(x, weight, bias, residual)
    # Nothing to differentiate and nothing tracing: the kernel alone, without the custom-op dispatcher.
    op = _linear_impl if eager_path(tensors) and not needs_grad(tensors) else torch.ops.tilefuse.linear
    return op(*tensors, activation)


def gemm(a, b, bias=None, residual=None, activation=None):
    """act(a @ b + bias) + residual (torch.ops.tilefuse.gemm, which is tilefuse::linear with weight = b.t()):
    a (..., k), b (k, n) with any strides (a weight's .t() is read in place), bias (n,), residual the output's
    shape. Differentiable."""
    return torch.ops.tilefuse.gemm(*autocast(a, b, bias, residual), activation_name(activation))


def mm(a, b):
    """a @ b for 2-D tensors on tilefuse's Hopper GEMM (torch.ops.tilefuse.mm); any strides (operands are copied
    into the kernel's layouts when needed); torch.mm for dtypes other than bf16 / fp16. Differentiable."""
    return torch.ops.tilefuse.mm(a, b)


from .conv_ops import conv2d  # noqa: E402 - registers tilefuse::conv2d and its backward ops (conv_ops.py)

__all__ = ["ACTIVATIONS", "activation_name", "autocast", "conv2d", "gemm", "linear", "mm"]
