"""The forward ops without autograd, for frozen inference graphs (registered when tilefuse.backend imports this):

  torch.ops.tilefuse.conv2d_inference(x, weight, bias, residual, stride, padding, dilation, activation,
                                      residual_first) -> y
      act(conv + bias) + residual, or act(conv + bias + residual) when residual_first (tilefuse::conv2d and
      tilefuse::conv2d_add_act's forward);
  torch.ops.tilefuse.linear_inference(x, weight, bias, residual, activation) -> y   (tilefuse::linear's)

Why a second set: torch.library.custom_op's ops carry a Python autograd kernel that runs on every call, grad or
not (about 30 us of host time each on an H100's host, docs/notes/python_path.md). These are defined with
torch.library.Library and have no autograd kernel, so the dispatcher goes from its C++ entry straight to the
CUDA kernel; backward through them is an error, which is why only graphs traced without grad (the
torch.compile backend's frozen graphs) use them.
"""
from typing import List, Optional

import torch
from torch import Tensor

from . import fast_path
from .conv_ops import _conv2d_add_act_fake, _forward_impl
from .ops import _linear_fake, _linear_impl

_LIB = torch.library.Library("tilefuse", "FRAGMENT")
_LIB.define("conv2d_inference(Tensor x, Tensor weight, Tensor? bias, Tensor? residual, int[] stride, "
            "int[] padding, int[] dilation, str activation, bool residual_first) -> Tensor")
_LIB.define("linear_inference(Tensor x, Tensor weight, Tensor? bias, Tensor? residual, str activation) -> Tensor")


def _conv2d_inference(x: Tensor, weight: Tensor, bias: Optional[Tensor], residual: Optional[Tensor],
                      stride: List[int], padding: List[int], dilation: List[int], activation: str,
                      residual_first: bool) -> Tensor:
    return _forward_impl(x, weight, bias, residual, stride, padding, dilation, activation, "require",
                         "add_act" if residual_first else "forward")


def _conv2d_inference_fake(x, weight, bias, residual, stride, padding, dilation, activation, residual_first):
    return _conv2d_add_act_fake(x, weight, bias, residual, stride, padding, dilation, activation)


if fast_path.available():  # C++ kernels that take the warm calls and call these on a miss
    fast_path.module().register_inference_kernels(_conv2d_inference, _linear_impl)
else:
    _LIB.impl("conv2d_inference", _conv2d_inference, "CUDA")
    _LIB.impl("linear_inference", _linear_impl, "CUDA")
torch.library.register_fake("tilefuse::conv2d_inference", _conv2d_inference_fake, lib=_LIB)
torch.library.register_fake("tilefuse::linear_inference", _linear_fake, lib=_LIB)
