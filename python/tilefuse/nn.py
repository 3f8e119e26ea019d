"""torch.nn modules running tilefuse's fused kernels (through the custom ops of tilefuse.ops).

  tilefuse.nn.Linear   a torch.nn.Linear (a subclass: same parameters, names, shapes, init, state_dict) whose
                       forward(x, residual=None) is act(x @ weight.t() + bias) + residual in one Hopper GEMM
  tilefuse.nn.Conv2d   a torch.nn.Conv2d whose forward(x, residual=None) is act(conv2d(x, weight) + bias) + residual
                       in one tilefuse.Conv2d kernel (channels-last tensors)

Needs PyTorch; Linear's kernels need bf16 / fp16 on an sm_90 GPU (H100 / H200), Conv2d's on sm_80 or newer.
"""
from .errors import require_torch

torch = require_torch("tilefuse.nn")
from . import conv_ops, ops  # noqa: E402 - registers the tilefuse:: custom ops
from .op_common import activation_name  # noqa: E402


class Linear(torch.nn.Linear):
    """Drop-in for torch.nn.Linear with a fused activation and residual:

        y = act(x @ weight.t() + bias) + residual        (torch.ops.tilefuse.linear; differentiable)

    Parameters and initialisation are torch.nn.Linear's (it is a subclass, so state dicts load both ways and
    isinstance(m, torch.nn.Linear) holds). activation: None or one of tilefuse.ops.ACTIVATIONS ("relu", "gelu"
    (erf), "gelu_tanh", "silu", "sigmoid", "hardswish", "relu6").
    residual, when given, must have the output's shape and is added after the activation. Run it in bf16 or
    fp16 on an H100 / H200 (module.to("cuda", torch.bfloat16)), or in float32 under torch.autocast("cuda")
    (inputs and parameters cast to the autocast dtype, as torch.nn.Linear's); float32 otherwise is refused
    with a TensorArgumentError saying so. Tools that treat every torch.nn.Linear as a plain linear layer (and call
    torch.nn.functional.linear themselves) would drop the activation.
    """

    def __init__(self, in_features, out_features, bias=True, activation=None, device=None, dtype=None):
        self.activation = activation_name(activation)  # checked before any parameter is made
        super().__init__(in_features, out_features, bias=bias, device=device, dtype=dtype)

    def forward(self, x, residual=None):
        return ops.linear(x, self.weight, self.bias, residual, self.activation)

    def extra_repr(self):
        return super().extra_repr() + f", activation={self.activation!r}"

    @classmethod
    def from_torch(cls, linear, activation=None):
        """A tilefuse.nn.Linear sharing `linear`'s parameters (no copy: training either trains both)."""
        if not isinstance(linear, torch.nn.Linear):
            raise TypeError(f"Linear.from_torch(linear): linear must be a torch.nn.Linear, got {type(linear).__name__}")
        module = cls(linear.in_features, linear.out_features, bias=linear.bias is not None, activation=activation,
                     device="meta", dtype=linear.weight.dtype)
        module.weight = linear.weight
        module.bias = linear.bias
        module.train(linear.training)
        return module


class Conv2d(torch.nn.Conv2d):
    """Drop-in for torch.nn.Conv2d with a fused activation and residual, on NHWC (channels-last) tensors:

        y = act(conv2d(x, weight) + bias) + residual      (torch.ops.tilefuse.conv2d; differentiable)

    Parameters and initialisation are torch.nn.Conv2d's (a subclass). groups must be 1 and padding_mode
    "zeros"; padding an int, a pair, "valid", or "same" where it is symmetric. x, the weight and the
    residual must be channels-last: convert the model once with model.to(memory_format=torch.channels_last)
    and feed channels-last inputs, or pass layout="convert" to let every call copy what is not (slower). A
    contiguous weight is copied to channels-last at each call (small): FSDP2 (fully_shard) refuses
    channels-last parameters, so under it leave the parameters contiguous and make only the inputs channels-last.
    The output is channels-last. Backward: dgrad and wgrad kernels of tilefuse.Conv2d (tilefuse.ops).
    """

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", activation=None, layout="require", device=None, dtype=None):
        self.activation = activation_name(activation)  # checked before any parameter is made
        if groups != 1 or padding_mode != "zeros":
            raise ValueError(f"groups={groups}, padding_mode={padding_mode!r}: tilefuse.nn.Conv2d runs groups=1 with "
                             "zero padding; use torch.nn.Conv2d for the others")
        if layout not in ("require", "convert"):
            raise ValueError(f"layout={layout!r}: use 'require' or 'convert'")
        self.layout = layout
        super().__init__(in_channels, out_channels, kernel_size, stride=stride, padding=padding, dilation=dilation,
                         groups=groups, bias=bias, padding_mode=padding_mode, device=device, dtype=dtype)
        self._explicit_padding = self._padding_pair()
        # The C++ warm path's key (conv_ops.fast_conv): a call of a signature checked before runs from C++.
        self._fast_key = (tuple(self.stride), tuple(self._explicit_padding), tuple(self.dilation), self.activation,
                          self.layout, "forward")

    def _padding_pair(self):
        if self.padding == "valid":
            return [0, 0]
        if self.padding == "same":
            total = [d * (k - 1) for d, k in zip(self.dilation, self.kernel_size)]
            if any(t % 2 for t in total):
                raise ValueError(f"padding='same' with kernel_size={self.kernel_size}, dilation={self.dilation} pads "
                                 "unevenly; tilefuse.nn.Conv2d pads symmetrically: pass padding as numbers")
            return [t // 2 for t in total]
        return list(self.padding)

    def forward(self, x, residual=None):
        if not torch.compiler.is_compiling():
            fast = conv_ops._FAST.get(getattr(self, "_fast_key", None))
            y = fast(x, self.weight, self.bias, residual) if fast is not None else None
            if y is not None:
                return y
        return conv_ops.conv2d_python(x, self.weight, self.bias, residual, list(self.stride),
                                      list(self._explicit_padding), list(self.dilation), self.activation, self.layout)

    def extra_repr(self):
        return super().extra_repr() + f", activation={self.activation!r}"

    @classmethod
    def from_torch(cls, conv, activation=None, layout="require"):
        """A tilefuse.nn.Conv2d sharing `conv`'s parameters (no copy)."""
        if not isinstance(conv, torch.nn.Conv2d):
            raise TypeError(f"Conv2d.from_torch(conv): conv must be a torch.nn.Conv2d, got {type(conv).__name__}")
        module = cls(conv.in_channels, conv.out_channels, conv.kernel_size, stride=conv.stride, padding=conv.padding,
                     dilation=conv.dilation, groups=conv.groups, bias=conv.bias is not None,
                     padding_mode=conv.padding_mode, activation=activation, layout=layout, device="meta",
                     dtype=conv.weight.dtype)
        module.weight = conv.weight
        module.bias = conv.bias
        module.train(conv.training)
        return module


__all__ = ["Conv2d", "Linear"]
