"""The copy of a GEMM operand into the Hopper kernel's K-major layout, by the kernel gemm::Gemm copies with
(gemm/kernel/pack_k_major.h): one launch per operand that reads any strides and writes the zeros past k, where
torch's pad is a fill and a copy. The launch (grid, parameters) is tilefuse._C.pack_k_major_launch's, the C++
one's; the kernel is JIT-compiled per element type and architecture (prebuilt for bf16 and fp16 on sm_90a)."""
from .dtypes import element_type
from .kernel_params import current_raw_stream, device_properties, jit_arch, plain_kernel, torch_module

_LAUNCHES = {}  # (dtype, device, rows, k, strides, batches, padded_k) -> PreparedLaunch


def pack_k_major(t, padded_k, record=None):
    """t (..., rows, k) on a CUDA device, any strides -> a new row-major (..., rows, padded_k) tensor, zeros
    past k (padded_k >= k), on the current torch stream. The launch is made once per signature (its element
    type and architecture resolved then); a warm call allocates and launches. record: a list that gets
    (launch, elements of the copy, dtype) of the launch made, for the C++ warm path (fast_path)."""
    from . import _C

    torch = torch_module()
    if t.dim() == 3 and t.shape[0] > 1 and t.stride(0) == 0:  # one matrix for the whole batch: copied once
        return pack_k_major(t[:1], padded_k, record).expand(t.shape[0], -1, -1)
    rows, k = t.shape[-2], t.shape[-1]
    batches = t.shape[0] if t.dim() == 3 else 1
    out = torch.empty((*t.shape[:-1], padded_k), dtype=t.dtype, device=t.device)
    if out.numel() == 0:
        return out
    row_stride, k_stride = t.stride(-2), t.stride(-1)
    batch_stride = t.stride(0) if t.dim() == 3 else 0
    device = t.device.index
    key = (t.dtype, device, rows, k, row_stride, k_stride, batches, batch_stride, padded_k)
    launch = _LAUNCHES.get(key)
    if launch is None:
        params, src_offset, dst_offset, grid, grid_z, threads = _C.pack_k_major_launch(
            rows, k, row_stride, k_stride, batches, batch_stride, padded_k)
        kernel = _kernel(element_type(t.dtype).name, jit_arch(*device_properties(device)[1:]), device)
        launch = _C.PreparedLaunch(kernel, grid, threads, 1, 0, grid_z, params)
        launch.add_pointer(src_offset, 0)
        launch.add_pointer(dst_offset, 1)
        launch = _LAUNCHES.setdefault(key, launch)  # a second thread's launch is dropped, never one in use
    launch.run(device, current_raw_stream(device), [t.data_ptr(), out.data_ptr()], [])
    if record is not None:
        record.append((launch, out.numel(), t.dtype))
    return out


def _kernel(element, arch, device):
    """The packing kernel's handle on `device` (kernel_params.plain_kernel)."""
    from .jit.gemm import pack_k_major_kernel

    return plain_kernel(pack_k_major_kernel, element, arch, device)
