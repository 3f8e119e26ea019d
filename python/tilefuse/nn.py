"""torch.nn modules running tilefuse's fused kernels (through the custom ops of tilefuse.ops).

  tilefuse.nn.Linear   a torch.nn.Linear (a subclass: same parameters, names, shapes, init, state_dict) whose
                       forward(x, residual=None) is act(x @ weight.t() + bias) + residual in one Hopper GEMM
  tilefuse.nn.Conv2d   planned (see the marked section at the end): it will wrap tilefuse.Conv2d the same way

Needs PyTorch; the kernels need bf16 / fp16 tensors on an sm_90 GPU (H100 / H200).
"""
import torch

from . import ops  # registers the tilefuse:: custom ops
from .ops import activation_name


class Linear(torch.nn.Linear):
    """Drop-in for torch.nn.Linear with a fused activation and residual:

        y = act(x @ weight.t() + bias) + residual        (torch.ops.tilefuse.linear; differentiable)

    Parameters and initialisation are torch.nn.Linear's (it is a subclass, so state dicts load both ways and
    isinstance(m, torch.nn.Linear) holds). activation: None, "relu", "gelu" (erf), "gelu_tanh" or "silu".
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


# ------------------------------------------------------------------------------------------------------
# tilefuse.nn.Conv2d: PLANNED, not implemented here. It will be a torch.nn.Conv2d subclass (same parameters
# and init, forward(x, residual=None) with a fused bias / activation / residual) running tilefuse.Conv2d
# through a torch.library custom op (tilefuse::conv2d, with a fake implementation and register_autograd),
# as Linear runs tilefuse.Gemm through tilefuse::linear; activations channels-last (NHWC).
# ------------------------------------------------------------------------------------------------------


def __getattr__(name):
    if name == "Conv2d":
        raise AttributeError("tilefuse.nn.Conv2d is not available yet (tilefuse.Conv2d from Python is planned); "
                             "use torch.nn.Conv2d for now")
    raise AttributeError(f"module 'tilefuse.nn' has no attribute {name!r}")


__all__ = ["Linear"]
