"""The emitted conv extension built with torch on any machine (no GPU needed): it must link the C++ runtime
torch runs on, format numbers in its own code, and refuse CPU tensors with a sentence. Skipped without torch,
ninja, nvcc or g++ (CI has no torch). One build, for sm_80 only: about a minute on two cores.

The build uses a stand-in compiler that links libstdc++ statically, like the relocated GCC of the GPU
machine (/opt/gcc: libstdc++.a but no libstdc++.so). An extension built that way carried its own copy of
the C++ runtime next to torch's libstdc++.so.6; the copies disagreed on std::locale's facet ids and the
first number written to a std::ostringstream (Conv2d's planning, in describe() and run()) crashed."""
import ctypes
import importlib.util
import os
import shutil
import stat
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
from torch.utils import cpp_extension  # noqa: E402

from tilefuse.emit import OpSpec, pytorch  # noqa: E402
from tilefuse.epilogue import relu  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NAME = "tilefuse_emit_build_test"

if not sys.platform.startswith("linux"):
    pytest.skip("the libstdc++ checks are Linux-only", allow_module_level=True)
if not cpp_extension.is_ninja_available():
    pytest.skip("ninja is needed by torch.utils.cpp_extension.load", allow_module_level=True)
if not cpp_extension.CUDA_HOME or not os.path.exists(os.path.join(cpp_extension.CUDA_HOME, "bin", "nvcc")):
    pytest.skip("no CUDA toolkit (nvcc) for torch.utils.cpp_extension", allow_module_level=True)
GXX = shutil.which("g++")
if GXX is None:
    pytest.skip("no g++", allow_module_level=True)

# Answers -print-file-name=libstdc++.so with the bare name (not found) and links shared objects with
# -static-libstdc++: what a GCC install holding only libstdc++.a does.
STATIC_GXX = f"""#!/bin/sh
for a in "$@"; do
  case "$a" in -print-file-name=libstdc++.so) echo libstdc++.so; exit 0 ;; esac
done
case " $* " in *" -shared "*) exec {GXX} "$@" -static-libstdc++ ;; esac
exec {GXX} "$@"
"""


def bias_relu_residual(acc, bias, residual):
    return relu(acc + bias) + residual


@pytest.fixture(scope="module")
def ext(tmp_path_factory):
    out = tmp_path_factory.mktemp("emit_build")
    cxx = out / "static-g++"
    cxx.write_text(STATIC_GXX)
    cxx.chmod(cxx.stat().st_mode | stat.S_IXUSR)
    spec = OpSpec("conv2d_fprop", "bfloat16", bias_relu_residual, {"bias": (64,), "residual": (8, 64)},
                  stride=(1, 1), padding=(1, 1), dilation=(1, 1))
    emitted = pytorch(spec, NAME, str(out / "src"), archs=["80"])  # from the installed package, as a user would
    loader = importlib.util.spec_from_file_location(f"{NAME}_setup", os.path.join(emitted.out_dir, "setup.py"))
    setup = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(setup)
    build = out / "build"
    build.mkdir()
    saved = os.environ.get("CXX")
    os.environ["CXX"] = str(cxx)
    try:
        return setup.load(build_directory=str(build))
    finally:
        if saved is None:
            del os.environ["CXX"]
        else:
            os.environ["CXX"] = saved


def test_links_torchs_cxx_runtime(ext):
    readelf = shutil.which("readelf")
    if readelf is None:
        pytest.skip("no readelf")
    dynamic = subprocess.run([readelf, "-d", ext.__file__], capture_output=True, text=True, check=True).stdout
    assert "[libstdc++.so.6]" in dynamic, f"{ext.__file__} carries its own libstdc++:\n{dynamic}"


def test_formats_numbers(ext):
    # tilefuse::to_string(TensorMapTiledArgs const&) (tilefuse_runtime/tensor_map.cpp) writes numbers to a
    # std::ostringstream, as Conv2d's planning does; with a second C++ runtime they were lost (or crashed).
    to_string = getattr(ctypes.CDLL(ext.__file__), "_ZN8tilefuse9to_stringB5cxx11ERKNS_18TensorMapTiledArgsE")
    args = ctypes.create_string_buffer(1024)  # a zeroed TensorMapTiledArgs (smaller than this)
    result = ctypes.create_string_buffer(64)  # the std::string it returns (through a hidden pointer)
    to_string(result, args)
    text = ctypes.cast(result, ctypes.POINTER(ctypes.c_char_p))[0].decode()
    assert "rank=0 global_address=0" in text, text


def cpu_inputs():
    def channels_last(t):
        return t.contiguous(memory_format=torch.channels_last)

    x = channels_last(torch.randn(2, 32, 8, 8).to(torch.bfloat16))
    w = channels_last(torch.randn(64, 32, 3, 3).to(torch.bfloat16))
    bias = torch.randn(64).to(torch.bfloat16)
    residual = channels_last(torch.randn(2, 64, 8, 8).to(torch.bfloat16))
    return x, w, bias, residual


def test_refuses_cpu_tensors(ext):
    assert ext.outputs == ("D",)
    for call in (ext.describe, ext.run):
        with pytest.raises(RuntimeError, match=f"{NAME}: x must be a CUDA tensor, but is on cpu"):
            call(*cpu_inputs())
