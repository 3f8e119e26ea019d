"""A wgrad of few channels (ResNet's RGB stem) run as the C++ planner's im2col + Hopper GEMM
(conv::plan_wgrad_im2col, conv2d_wgrad_im2col.hpp): x gathered once into columns colsT (R*S*C rows in the
filter's (r, s, c) order, padded to a multiple of 8, by the pixels N*P*Q padded likewise) and dy transposed
into dyT (K by the same pixels), both K-major as the Hopper GEMM reads them; then dw = dyT x colsT^T, K split
in the kernel. The Hopper wgrad needs C in multiples of 64, and the sm80 kernel's C = 3 padded to 8 staged
element by element is 3x cuDNN's time (docs/notes/conv_sm90.md, "the stem's wgrad").
tilefuse.Conv2d("wgrad") takes this path for the identity epilogue where the planner says so. On the GPU both
copies are tilefuse kernels (dy by gemm_pack.pack_k_major, x by conv/kernel/gather_columns.h: torch's strided
copies took 0.88 and 0.37 ms of a 0.30 ms cuDNN call); gather_columns below is their torch reference."""
from dataclasses import dataclass

from .dtypes import element_type
from .gemm_pack import pack_k_major
from .kernel_params import current_raw_stream, device_properties, jit_arch, plain_kernel
from .kernel_params import torch_module as _torch

_LAUNCHES = {}  # (dtype, device, problem, channels, rows, padded_k) -> PreparedLaunch


def gather_columns(x, out, kernel_size, padding, stride, dilation, channels):
    """out[:R*S*c, :N*P*Q] = the im2col of x (N, C, H, W), channels-last: row (r * S + s) * c + ch, column
    (n * P + p) * Q + q holds x[n, ch, p * stride - pad + r * dilation, ...] (0 outside the image), for the
    first `channels` channels. out is (rows, pixels) row-major with room for both; the rest is left as it is."""
    torch = _torch()
    (r, s), (ph, pw), (sh, sw), (dh, dw) = kernel_size, padding, stride, dilation
    n, _, h, w = x.shape
    p, q = (h + 2 * ph - dh * (r - 1) - 1) // sh + 1, (w + 2 * pw - dw * (s - 1) - 1) // sw + 1
    nhwc = x.permute(0, 2, 3, 1)[..., :channels]
    padded = torch.nn.functional.pad(nhwc, (0, 0, pw, pw, ph, ph))  # contiguous (N, H + 2ph, W + 2pw, c)
    hp, wp, c = padded.shape[1], padded.shape[2], channels
    taps = padded.as_strided((r, s, c, n, p, q), (dh * wp * c, dw * c, 1, hp * wp * c, sh * wp * c, sw * c))
    out[:r * s * c, :n * p * q].view(r, s, c, n, p, q).copy_(taps)


def launch_gather(x, out, problem, channels):
    """out (rows, padded_k) = the im2col of x (channels-last, contiguous) by the gather kernel, every padding
    zero, on the current torch stream; the launch is made once per signature."""
    from . import _C

    pr, device = problem, x.device.index
    rows, padded_k = out.shape
    key = (x.dtype, device, pr, channels, rows, padded_k)
    launch = _LAUNCHES.get(key)
    if launch is None:
        sizes = [pr.N, pr.H, pr.W, pr.C, channels, pr.R, pr.S, pr.P, pr.Q, *pr.pad, *pr.stride, *pr.dilation]
        params, src, dst, grid, threads = _C.gather_columns_launch(sizes, rows, padded_k)
        kernel = _gather_kernel(element_type(x.dtype).name, jit_arch(*device_properties(device)[1:]), device)
        launch = _C.PreparedLaunch(kernel, grid, threads, 1, 0, 1, params)
        launch.add_pointer(src, 0)
        launch.add_pointer(dst, 1)
        launch = _LAUNCHES.setdefault(key, launch)
    launch.run(device, current_raw_stream(device), [x.data_ptr(), out.data_ptr()], [])


def _gather_kernel(element, arch, device):
    """The gather kernel's handle on `device` (kernel_params.plain_kernel)."""
    from .jit.gemm import gather_columns_kernel

    return plain_kernel(gather_columns_kernel, element, arch, device)


class Im2colWgrad:
    """The warm call of a wgrad by im2col: call(dy, x, {}) -> dw (K, C, R, S) channels-last. zero_channels:
    x's last channels that the caller knows are zero (its own padding): not gathered, their dw is 0."""

    def __init__(self, planned, problem, zero_channels):
        from .gemm import Gemm

        self.planned = planned
        self.problem = problem
        self.zero_channels = zero_channels
        self.gemm = Gemm()

    def operands(self, dy, x):
        """(dyT, colsT): dy transposed and x gathered, K-major, every padding zero."""
        torch = _torch()
        pr = self.problem
        pixels, kp = pr.N * pr.P * pr.Q, self.planned["padded_k"]
        columns, rows = self.planned["columns"], self.planned["padded_columns"]
        cols = torch.empty((rows, kp), dtype=x.dtype, device=x.device)
        if dy.is_cuda:
            dyt = pack_k_major(dy.permute(0, 2, 3, 1).reshape(pixels, pr.K).t(), kp)
            launch_gather(x, cols, pr, pr.C - self.zero_channels)
            return dyt, cols
        dyt = torch.empty((pr.K, kp), dtype=dy.dtype, device=dy.device)  # the torch reference (CPU tests)
        if kp > pixels:
            dyt[:, pixels:].zero_()
            cols[:columns, pixels:].zero_()
        if rows > columns:
            cols[columns:].zero_()
        dyt[:, :pixels].view(pr.K, pr.N, pr.P, pr.Q).copy_(dy.permute(1, 0, 2, 3))
        gather_columns(x, cols, (pr.R, pr.S), pr.pad, pr.stride, pr.dilation, pr.C - self.zero_channels)
        return dyt, cols

    def call(self, dy, x, arguments):
        torch = _torch()
        pr = self.problem
        dyt, cols = self.operands(dy, x)
        d = self.gemm.run(dyt, cols.t())  # (K, padded columns)
        c = pr.C - self.zero_channels
        dw = torch.empty((pr.K, pr.C, pr.R, pr.S), dtype=dy.dtype, device=dy.device, memory_format=torch.channels_last)
        krsc = dw.permute(0, 2, 3, 1)
        if self.zero_channels:
            krsc[..., c:].zero_()
        krsc[..., :c].copy_(d[:, :self.planned["columns"]].view(pr.K, pr.R, pr.S, c))
        return dw

    def gemm_plan(self, dy, x):
        """The GEMM's plan, from operands of its shapes (allocated, not filled: planning launches nothing)."""
        torch = _torch()
        pr, kp = self.problem, self.planned["padded_k"]
        dyt = torch.empty((pr.K, kp), dtype=dy.dtype, device=dy.device)
        cols = torch.empty((self.planned["padded_columns"], kp), dtype=x.dtype, device=x.device)
        return self.gemm.plan(dyt, cols.t())


@dataclass
class Im2colWgradPlan:
    """plan()'s answer for a wgrad by im2col: the planner's reason and the GEMM's plan."""

    why: str
    gemm: object
    family: str = "sm90"  # the GEMM's family (the planner's gemm_family: "sm90" or "skinny")

    def describe(self):
        return f"conv2d wgrad by im2col ({self.why}); GEMM: {self.gemm.describe()}"
