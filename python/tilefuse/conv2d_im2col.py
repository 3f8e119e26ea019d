"""A wgrad of few channels (ResNet's RGB stem) run as the C++ planner's im2col + the Hopper wgrad of a 1x1
(conv::plan_wgrad_im2col, conv2d_wgrad_im2col.hpp): x gathered once into an NHWC image of R*S*C channels (a
pixel's filter window in the filter's (r, s, c) order, zero channels up to a multiple of 64) by the kernel
conv/kernel/gather_columns.h, then tilefuse.Conv2d("wgrad") of a 1x1 over it, which reads dy as it is and
splits K in the kernel; dw is its first R*S*C columns. The Hopper wgrad needs C in multiples of 64, and the
sm80 kernel's C = 3 padded to 8 staged element by element is 3x cuDNN's time (docs/notes/conv_sm90.md, "the
stem's wgrad"). tilefuse.Conv2d("wgrad") takes this path for the identity epilogue where the planner says so;
gather_columns below is the gather's torch reference (the CPU tests)."""
from dataclasses import dataclass

from .dtypes import element_type
from .kernel_params import current_raw_stream, device_properties, jit_arch
from .kernel_params import torch_module as _torch

_CACHED = {}  # (element, arch) -> CachedKernel of the gather
_LOADED = {}  # (element, arch, device) -> LoadedKernel
_LAUNCHES = {}  # (dtype, device, problem, channels, columns) -> PreparedLaunch


def gather_columns(x, out, kernel_size, padding, stride, dilation, channels):
    """out (N, P, Q, columns) = the im2col of x (N, C, H, W), channels-last: column (r * S + s) * c + ch of
    pixel (n, p, q) holds x[n, ch, p * stride - pad + r * dilation, ...] (0 outside the image) for the first
    `channels` channels, zeros in the columns past R * S * channels."""
    torch = _torch()
    (r, s), (ph, pw), (sh, sw), (dh, dw) = kernel_size, padding, stride, dilation
    n, p, q, columns = out.shape
    nhwc = x.permute(0, 2, 3, 1)[..., :channels]
    padded = torch.nn.functional.pad(nhwc, (0, 0, pw, pw, ph, ph))  # contiguous (N, H + 2ph, W + 2pw, c)
    hp, wp, c = padded.shape[1], padded.shape[2], channels
    taps = padded.as_strided((n, p, q, r, s, c), (hp * wp * c, sh * wp * c, sw * c, dh * wp * c, dw * c, 1))
    out[..., :r * s * c].view(n, p, q, r, s, c).copy_(taps)
    out[..., r * s * c:].zero_()


def launch_gather(x, out, problem, channels):
    """out (N, P, Q, columns), contiguous = the im2col of x (channels-last, contiguous) by the gather kernel,
    on the current torch stream; the launch is made once per signature."""
    from . import _C

    pr, device = problem, x.device.index
    columns = out.shape[-1]
    key = (x.dtype, device, pr, channels, columns)
    launch = _LAUNCHES.get(key)
    if launch is None:
        sizes = [pr.N, pr.H, pr.W, pr.C, channels, pr.R, pr.S, pr.P, pr.Q, *pr.pad, *pr.stride, *pr.dilation]
        params, src, dst, grid, threads = _C.gather_columns_launch(sizes, columns)
        kernel = _gather_kernel(element_type(x.dtype).name, jit_arch(*device_properties(device)[1:]), device)
        launch = _C.PreparedLaunch(kernel, grid, threads, 1, 0, 1, params)
        launch.add_pointer(src, 0)
        launch.add_pointer(dst, 1)
        launch = _LAUNCHES.setdefault(key, launch)
    launch.run(device, current_raw_stream(device), [x.data_ptr(), out.data_ptr()], [])


def _gather_kernel(element, arch, device):
    """The gather kernel's handle on `device`, compiled (or found in the caches) and loaded the first time."""
    from .jit.gemm import gather_columns_kernel
    from .jit.loader import load_kernel

    if (element, arch) not in _CACHED:
        _CACHED.setdefault((element, arch), gather_columns_kernel(element, arch=arch))
    loaded = _LOADED.get((element, arch, device))
    if loaded is None:
        with _torch().cuda.device(device):
            loaded = _LOADED.setdefault((element, arch, device), load_kernel(_CACHED[element, arch]))
    return loaded.kernel


class Im2colWgrad:
    """The warm call of a wgrad by im2col: call(dy, x, {}) -> dw (K, C, R, S) channels-last. zero_channels:
    x's last channels that the caller knows are zero (its own padding): not gathered, their dw is 0.
    one_by_one: the tilefuse.Conv2d("wgrad", kernel_size=(1, 1)) that runs over the gathered image."""

    def __init__(self, planned, problem, zero_channels, one_by_one):
        self.planned = planned
        self.problem = problem
        self.zero_channels = zero_channels
        self.one_by_one = one_by_one

    def image(self, x):
        """The gathered image (N, padded columns, P, Q), channels-last."""
        torch = _torch()
        pr = self.problem
        cols = torch.empty((pr.N, pr.P, pr.Q, self.planned["padded_columns"]), dtype=x.dtype, device=x.device)
        channels = pr.C - self.zero_channels
        if x.is_cuda:
            launch_gather(x, cols, pr, channels)
        else:
            gather_columns(x, cols, (pr.R, pr.S), pr.pad, pr.stride, pr.dilation, channels)
        return cols.permute(0, 3, 1, 2)

    def call(self, dy, x, arguments):
        torch = _torch()
        pr = self.problem
        wide = self.one_by_one.run(dy, self.image(x))  # (K, padded columns, 1, 1)
        c = pr.C - self.zero_channels
        dw = torch.empty((pr.K, pr.C, pr.R, pr.S), dtype=dy.dtype, device=dy.device, memory_format=torch.channels_last)
        krsc = dw.permute(0, 2, 3, 1)
        if self.zero_channels:
            krsc[..., c:].zero_()
        krsc[..., :c].copy_(wide.reshape(pr.K, -1)[:, :self.planned["columns"]].view(pr.K, pr.R, pr.S, c))
        return dw

    def wgrad_plan(self, dy, x):
        return self.one_by_one.plan(dy, self.image(x))


@dataclass
class Im2colWgradPlan:
    """plan()'s answer for a wgrad by im2col: the planner's reason and the 1x1 wgrad's plan."""

    why: str
    wgrad: object
    family: str = "sm90"

    def describe(self):
        return f"conv2d wgrad by im2col ({self.why}); the 1x1 wgrad: {self.wgrad.describe()}"
