"""What the GPU tests share (import after pytest.importorskip("torch")): NaN-poisoned free memory, the error
bound against a float64 reference relative to torch's own error in the same dtype, and a producer that offers
nothing but DLPack."""
import torch


def poison():
    """Fill free cached memory with NaN so that an element the kernel forgets to write shows up."""
    free = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")
    free.fill_(0xFF)  # 0xFFFF is NaN in bf16 and fp16
    del free


def check(ours, reference64, torch_same_dtype, what, factor=2.0, slack=1e-3):
    """ours has the reference's shape, no NaN, and a max error within factor x torch's own (same inputs, same
    dtype) plus slack x the reference's largest magnitude."""
    assert ours.shape == reference64.shape, f"{what}: shape {tuple(ours.shape)}, expected {tuple(reference64.shape)}"
    ours64, torch64 = ours.double(), torch_same_dtype.double()
    assert not torch.isnan(ours64).any(), f"{what}: NaN in the output (an element left unwritten?)"
    err = (ours64 - reference64).abs().max().item()
    torch_err = (torch64 - reference64).abs().max().item()
    scale = reference64.abs().max().item() + 1e-30
    assert err <= factor * torch_err + slack * scale, f"{what}: max error {err:.3e}, torch's {torch_err:.3e}"


class DLPackOnly:
    """A producer that offers nothing but DLPack (as CuPy or JAX arrays do)."""

    def __init__(self, tensor):
        self._tensor = tensor

    def __dlpack__(self, *args, **kwargs):
        return self._tensor.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return self._tensor.__dlpack_device__()


def has_triton():
    """Whether inductor can compile here (it needs triton)."""
    try:
        import triton  # noqa: F401 - only whether it imports
    except ImportError:
        return False
    return True
