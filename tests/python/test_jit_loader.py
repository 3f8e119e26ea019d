"""Loading needs a GPU and says so without one; importing tilefuse needs no NVRTC, CUDA runtime or GPU."""
import os
import subprocess
import sys

import pytest

from tilefuse.jit import NoCudaDeviceError, load_kernel


def test_importing_loads_neither_nvrtc_nor_the_cuda_runtime():
    code = "import tilefuse, tilefuse.jit; print(open('/proc/self/maps').read())"
    maps = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "libnvrtc" not in maps and "libcudart.so" not in maps and "libcuda.so" not in maps


@pytest.mark.skipif(os.path.exists("/dev/nvidiactl"), reason="this machine has a GPU")
def test_loading_without_a_gpu_says_so():
    with pytest.raises(NoCudaDeviceError, match="no CUDA device is available"):
        load_kernel(b"\x7fELF not loaded", "_Z1kv")
