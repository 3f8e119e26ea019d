"""What tilefuse's PyTorch ops share (tilefuse.ops, its GEMM ops, and tilefuse.conv_ops): dtypes, activation
names, the fused and derivative epilogues, autocast, and whether a call may skip the custom-op dispatcher.
A leaf of the op modules: both import it, it imports neither."""
import math

from .errors import require_torch
from .kernel_params import signature

torch = require_torch("tilefuse's PyTorch ops (tilefuse.ops, tilefuse.nn)")
import torch.utils._python_dispatch  # noqa: E402

from .epilogue import exp, gelu, sigmoid, tanh, where  # noqa: E402
from .epilogue.common import ACTIVATIONS, fused  # noqa: E402

_DTYPES = (torch.bfloat16, torch.float16)
# The activations of ACTIVATIONS as torch computes them (references, and torch's side of a measurement).
ACT_TORCH = {"none": lambda z: z, "relu": torch.relu, "silu": torch.nn.functional.silu,
             "gelu": torch.nn.functional.gelu,
             "gelu_tanh": lambda z: torch.nn.functional.gelu(z, approximate="tanh"), "sigmoid": torch.sigmoid,
             "hardswish": torch.nn.functional.hardswish, "relu6": torch.nn.functional.relu6}


def eager_path(tensors):
    """Whether a call may skip the custom-op dispatcher (plain eager tensors, nothing tracing or transforming
    them): torch.compile, export, fake tensors, dispatch modes and torch.func transforms see the custom op."""
    if torch.compiler.is_compiling() or torch._C._are_functorch_transforms_active():
        return False
    if torch.utils._python_dispatch._get_current_dispatch_mode() is not None:
        return False
    return all(t is None or type(t) in _PLAIN for t in tensors)


_PLAIN = (torch.Tensor, torch.nn.Parameter)


class CheckedCalls:
    """The calls whose arguments an op has checked, by signature (each tensor's shape, strides, dtype, device
    and alignment, plus the op's other arguments), so that a repeated call skips its checks. Bounded: cleared
    when full."""

    def __init__(self, limit=4096):
        self.limit, self.known = limit, {}

    @staticmethod
    def key(tensors, *rest):
        """The signature of a call, or None when a tensor argument is something only the checks handle."""
        parts = tuple(signature(t) if t is not None else () for t in tensors)
        return None if None in parts else (parts, rest)

    def get(self, key):
        return self.known.get(key) if key is not None else None

    def remember(self, key, value):
        if key is None:
            return
        if len(self.known) >= self.limit:
            self.known.clear()
        self.known[key] = value


def channels_to_pad(x, weight):
    """Zero channels to add to x and weight (N or K, C, H, W) so that C makes 16-byte rows: the C++ planner's
    conv::channels_to_pad (an RGB stem's 3 -> 8 puts it on the Hopper kernel / the aligned gathers). 0 for
    anything the op's own checks must see unchanged (not 4-D, another dtype, mismatched C)."""
    if not (isinstance(x, torch.Tensor) and isinstance(weight, torch.Tensor) and x.dim() == 4 and weight.dim() == 4
            and x.dtype in _DTYPES and weight.dtype == x.dtype and x.shape[1] == weight.shape[1]):
        return 0
    return _planned_channels_to_pad(x.shape[1], weight.shape[0], "bfloat16" if x.dtype == torch.bfloat16 else "float16")


@torch.compiler.assume_constant_result  # torch.compile calls it once and keeps the number (it cannot trace _C)
def _planned_channels_to_pad(c, k, element):
    key = (c, k, element)
    if key not in _PADS:
        from . import _C

        _PADS[key] = _C.conv_channels_to_pad(c, k, element)
    return _PADS[key]


_PADS = {}


def pad_channels(t, pad_c):
    """t (N or K, C, H, W) with pad_c zero channels after its C, channels-last (differentiable: the
    gradient of the original channels is the padded one's first C). The result says how many of its channels
    are zeros (zero_channels_of), so that a wgrad over it gathers only the others."""
    out = torch.nn.functional.pad(t, (0, 0, 0, 0, 0, pad_c)).contiguous(memory_format=torch.channels_last)
    out._tilefuse_zero_channels = pad_c
    return out


def zero_channels_of(x):
    """How many of x's last channels pad_channels made zeros (0 for any other tensor)."""
    return getattr(x, "_tilefuse_zero_channels", 0)


def formula_function(op, setup_context, backward, name):
    """The autograd.Function an op's C++ Autograd kernel (fast_path) calls with grad: `op` (the OpOverload) below
    autograd, then the op's registered setup_context and backward. AOTAutograd traces it with fake tensors as it
    traced torch.library.custom_op's own autograd kernel."""

    def forward(ctx, *inputs):
        with torch._C._AutoDispatchBelowAutograd():
            y = op(*inputs)
        setup_context(ctx, inputs, y)
        return y

    return type(name, (torch.autograd.Function,), {"__doc__": f"{op} with grad, as its C++ Autograd kernel calls it.",
                                                    "forward": staticmethod(forward),
                                                    "backward": staticmethod(backward)})


def needs_grad(tensors):
    """Whether autograd would record a call on these tensors (grad mode on and one of them requires grad)."""
    return torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in tensors)


def activation_name(activation) -> str:
    """The op's spelling of an activation: None -> "none"; anything else must be one of ACTIVATIONS."""
    if activation is None:
        return "none"
    if not isinstance(activation, str) or activation not in ACTIVATIONS:
        raise ValueError(f"activation={activation!r}: use None or one of {', '.join(repr(a) for a in ACTIVATIONS)} "
                         "(gelu is the exact erf form, gelu_tanh torch's approximate='tanh')")
    return activation



_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_KAPPA = 0.044715


def _dact(activation, z, grad):
    """grad * act'(z), in the epilogue language (torch's own backward formulas)."""
    if activation == "none":
        return grad
    if activation == "relu":
        return where(z > 0.0, grad, 0.0)  # threshold_backward: 0 where z <= 0
    if activation == "silu":
        s = sigmoid(z)
        return grad * (s * (1.0 + z * (1.0 - s)))
    if activation == "gelu":
        # Phi(z) + z * phi(z); Phi(z) = gelu(z) / z (no erf among the epilogue functions), 0.5 at z = 0.
        cdf = where(z == 0.0, 0.5, gelu(z) / z)
        return grad * (cdf + z * (exp(-0.5 * z * z) * _INV_SQRT_2PI))
    if activation == "sigmoid":
        s = sigmoid(z)
        return grad * (s * (1.0 - s))
    if activation == "hardswish":  # torch's hardswish_backward: 0 below -3, z / 3 + 1 / 2 up to 3, 1 above
        return grad * where(z < -3.0, 0.0, where(z <= 3.0, z * (1.0 / 3.0) + 0.5, 1.0))
    if activation == "relu6":  # hardtanh_backward: the gradient where 0 < z < 6, 0 elsewhere
        return where(z <= 0.0, 0.0, where(z >= 6.0, 0.0, grad))
    if activation == "gelu_tanh":
        t = tanh(_SQRT_2_OVER_PI * (z + _KAPPA * z * z * z))
        left = 0.5 * (1.0 + t)
        right = 0.5 * z * (1.0 - t * t) * (_SQRT_2_OVER_PI * (1.0 + 3.0 * _KAPPA * z * z))
        return grad * (left + right)
    raise ValueError(f"activation={activation!r}")  # activation_name() let it through: a bug here


def forward_epilogue(activation, has_bias, has_residual):
    """The epilogue of linear: act(acc + bias) + residual (tilefuse.epilogue.common.fused, which the
    install-time prebuilt kernels use too)."""
    return fused(activation, has_bias, has_residual)


def grad_epilogue(activation, has_bias):
    """The epilogue of linear_grad_preact: grad * act'(acc + bias)."""
    if has_bias:
        def linear_grad_epilogue(acc, bias, grad):
            return _dact(activation, acc + bias, grad)
    else:
        def linear_grad_epilogue(acc, grad):
            return _dact(activation, acc, grad)
    return linear_grad_epilogue


def _dtype_name(dtype):
    return str(dtype).replace("torch.", "")


def autocast(*tensors):
    """The tensors cast to the CUDA autocast dtype when torch.autocast("cuda") is on (float CUDA tensors only),
    as torch casts nn.Linear's inputs; unchanged otherwise. The custom ops do not cast by themselves."""
    if not torch.is_autocast_enabled("cuda"):
        return tensors
    dtype = torch.get_autocast_dtype("cuda")
    return tuple(t.to(dtype) if t is not None and t.is_floating_point() and t.device.type == "cuda" else t
                 for t in tensors)
