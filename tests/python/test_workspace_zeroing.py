"""The Python path's split-K workspace (kernel_params.workspace): zeroed by cudaMemsetAsync through tilefuse._C's
zero_async entry, as gemm::GemmSm90::run, conv::Conv2d's wgrad and the C++ warm path (warm_call.cpp) zero theirs,
not by torch.zeros' fill kernel, so that a first call or a call without tilefuse._torch_ops enqueues the C++
sequence (a memset, then the kernel). No GPU needed: the allocation and the entry are stood in for, and the
entry itself is called where no GPU is (it must report the runtime's error, not crash)."""
import pytest

from tilefuse import _C, kernel_params


class FakeTensor:
    def __init__(self, numel, address=0x7f0000001000):
        self._numel, self.address, self.zeroed_by_torch = numel, address, False

    def numel(self):
        return self._numel

    def data_ptr(self):
        return self.address

    def zero_(self):
        self.zeroed_by_torch = True
        return self


class FakeDevice:
    def __init__(self, index):
        self.index = index


class FakeTorch:
    float32 = "float32"

    def __init__(self):
        self.calls = []

    def empty(self, numel, dtype, device):
        self.calls.append(("empty", numel, dtype, device.index))
        return FakeTensor(numel)

    def zeros(self, *args, **kwargs):  # the fill kernel the workspace must not launch
        raise AssertionError("torch.zeros called for a split workspace")


@pytest.fixture
def fake(monkeypatch):
    torch = FakeTorch()
    zeroed = []
    monkeypatch.setattr(kernel_params, "torch_module", lambda: torch)
    monkeypatch.setattr(kernel_params, "current_raw_stream", lambda device: 0x5000 + device)
    monkeypatch.setattr(kernel_params, "zero_async",
                        lambda address, nbytes, device, stream, tensor=None: zeroed.append((address, nbytes, device, stream)))
    return torch, zeroed


def test_a_zeroed_workspace_is_empty_then_memset_on_the_current_stream(fake):
    torch, zeroed = fake
    out = kernel_params.workspace(1000, True, FakeDevice(1))
    assert torch.calls == [("empty", 1000, "float32", 1)]
    assert zeroed == [(out.data_ptr(), 4000, 1, 0x5001)]  # every byte, device 1's current stream
    assert not out.zeroed_by_torch


def test_an_unzeroed_workspace_and_none_enqueue_nothing(fake):
    torch, zeroed = fake
    assert kernel_params.workspace(0, True, FakeDevice(0)) is None
    out = kernel_params.workspace(64, False, FakeDevice(0))
    assert out.numel() == 64 and zeroed == [] and torch.calls == [("empty", 64, "float32", 0)]


def test_without_the_entry_the_tensor_is_zeroed_by_torch(monkeypatch):
    monkeypatch.setattr(kernel_params, "_zero_entry", lambda: None)
    t = FakeTensor(8)
    kernel_params.zero_async(t.data_ptr(), 32, 0, 0, t)
    assert t.zeroed_by_torch
    with pytest.raises(RuntimeError, match="zero_async"):
        kernel_params.zero_async(t.data_ptr(), 32, 0, 0)


def test_the_entry_is_the_one_the_cpp_warm_path_zeroes_with():
    entry = kernel_params._zero_entry()
    assert entry is not None and hasattr(_C, "zero_async_address")
    import ctypes

    assert ctypes.cast(entry, ctypes.c_void_p).value == _C.zero_async_address


def _gpu_present():
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


@pytest.mark.skipif(_gpu_present(), reason="calls the entry with a made-up address: only where no GPU can run it")
def test_the_entry_reports_the_runtimes_error_without_a_gpu():
    with pytest.raises(RuntimeError, match="cuda"):
        kernel_params.zero_async(0x1000, 64, 0, 0)
