"""The emitted conv extension built with torch and run on a GPU, against torch.nn.functional.conv2d + bias +
relu + residual. Skipped without torch or a CUDA device. The build compiles the extension (two archs), which
takes minutes; set TILEFUSE_EMIT_ARCHS (e.g. "90a" or "80") to build fewer."""
import importlib.util
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device for torch", allow_module_level=True)

from tilefuse.emit import OpSpec, pytorch  # noqa: E402
from tilefuse.epilogue import relu  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NAME = "tilefuse_emit_conv_test"


def bias_relu_residual(acc, bias, residual):
    return relu(acc + bias) + residual


@pytest.fixture(scope="module")
def ext(tmp_path_factory):
    out = tmp_path_factory.mktemp("emit")
    archs = os.environ.get("TILEFUSE_EMIT_ARCHS", "90a,80").split(",")
    spec = OpSpec("conv2d_fprop", "bfloat16", bias_relu_residual, {"bias": (64,), "residual": (8, 64)},
                  stride=(1, 1), padding=(1, 1), dilation=(1, 1))
    emitted = pytorch(spec, NAME, str(out / "src"), archs=archs, source_root=REPO)
    loader = importlib.util.spec_from_file_location(f"{NAME}_setup", os.path.join(emitted.out_dir, "setup.py"))
    setup = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(setup)
    from torch.utils.cpp_extension import is_ninja_available

    if is_ninja_available():
        build = out / "build"
        build.mkdir()
        return setup.load(build_directory=str(build))
    # Without ninja: setup.py build_ext --inplace, then import the built module from its folder.
    subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"], cwd=emitted.out_dir, check=True)
    sys.path.insert(0, emitted.out_dir)
    return __import__(NAME)


def reference(x, w, bias, residual, padding, dtype):
    """conv2d + bias, relu, + residual computed by torch in `dtype` (rounded to bf16 at the end)."""
    y = torch.nn.functional.conv2d(x.to(dtype), w.to(dtype), padding=padding)
    y = torch.relu(y + bias.to(dtype).view(1, -1, 1, 1)) + residual.to(dtype)
    return y


def channels_last(t):
    return t.contiguous(memory_format=torch.channels_last)


# (N, C, H, W, K), 3x3 filters, padding 1: C = 64 and 128 reach the Hopper kernel's im2col source on an H100 /
# H200, C = 24 its gather, C = 12 (not a multiple of 8) the sm80 element-wise path.
SHAPES = [(2, 64, 14, 14, 64), (1, 24, 9, 11, 40), (2, 12, 7, 5, 24), (4, 128, 16, 16, 256)]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_matches_torch_conv2d(ext, shape):
    n, c, h, w_, k = shape
    gen = torch.Generator(device="cuda").manual_seed(sum(shape))
    dev = "cuda"
    x = channels_last(torch.randn(n, c, h, w_, device=dev, generator=gen).to(torch.bfloat16))
    w = channels_last((torch.randn(k, c, 3, 3, device=dev, generator=gen) / (c * 9) ** 0.5).to(torch.bfloat16))
    bias = torch.randn(k, device=dev, generator=gen).to(torch.bfloat16)
    residual = channels_last(torch.randn(n, k, h, w_, device=dev, generator=gen).to(torch.bfloat16))
    y = ext.run(x, w, bias, residual)
    torch.cuda.synchronize()
    assert y.shape == (n, k, h, w_) and y.dtype == torch.bfloat16 and y.device == x.device
    assert y.is_contiguous(memory_format=torch.channels_last)
    assert y.stride() == (h * w_ * k, 1, w_ * k, k)  # real channels-last strides
    exact = reference(x, w, bias, residual, 1, torch.float64)
    ours = (y.double() - exact).abs().max().item()
    theirs = (reference(x, w, bias, residual, 1, torch.bfloat16).double() - exact).abs().max().item()
    # torch rounds to bf16 after the conv, the bias and the residual; tilefuse once, at the end (fp32 inside).
    # Allow 2x torch's own error plus one bf16 ulp of the largest value.
    ulp = exact.abs().max().item() * 2.0 ** -7
    assert ours <= 2 * theirs + ulp, (f"max error {ours} vs torch's bf16 {theirs} (ulp {ulp}); "
                                      f"{ext.describe(x, w, bias, residual)}")


def test_describe_and_outputs(ext):
    x, w, bias, residual = inputs()
    text = ext.describe(x, w, bias, residual)
    assert "conv2d fprop" in text or "implicit" in text, text
    assert ext.outputs == ("D",)


def inputs(dev="cuda"):
    x = channels_last(torch.randn(2, 32, 8, 8, device=dev).to(torch.bfloat16))
    w = channels_last(torch.randn(64, 32, 3, 3, device=dev).to(torch.bfloat16))
    bias = torch.randn(64, device=dev).to(torch.bfloat16)
    residual = channels_last(torch.randn(2, 64, 8, 8, device=dev).to(torch.bfloat16))
    return x, w, bias, residual


def test_rejects_non_channels_last_input(ext):
    x, w, bias, residual = inputs()
    with pytest.raises(RuntimeError, match=r"x must be channels-last \(NHWC in memory\).*"
                                           r"x\.contiguous\(memory_format=torch\.channels_last\)"):
        ext.run(x.contiguous(), w, bias, residual)
    with pytest.raises(RuntimeError, match=r"w must be channels-last \(KRSC in memory\)"):
        ext.run(x, w.contiguous(), bias, residual)
    with pytest.raises(RuntimeError, match=r"residual must be channels-last"):
        ext.run(x, w, bias, residual.contiguous())


def test_rejects_wrong_dtype_device_and_shape(ext):
    x, w, bias, residual = inputs()
    with pytest.raises(RuntimeError, match=r"x has dtype .*this extension takes torch\.bfloat16"):
        ext.run(x.half(), w, bias, residual)
    with pytest.raises(RuntimeError, match=r"bias has dtype"):
        ext.run(x, w, bias.float(), residual)
    with pytest.raises(RuntimeError, match=r"bias must be a CUDA tensor"):
        ext.run(x, w, bias.cpu(), residual)
    with pytest.raises(RuntimeError, match=r"x must be a CUDA tensor"):
        ext.run(x.cpu(), w, bias, residual)
    with pytest.raises(RuntimeError, match=r"bias must be one value per output channel"):
        ext.run(x, w, bias[:32], residual)
    with pytest.raises(RuntimeError, match=r"residual must have the output's sizes"):
        ext.run(x, w, bias, residual[:1])
    with pytest.raises(RuntimeError, match=r"w has 16 input channels but x has 32"):
        ext.run(x, channels_last(w[:, :16]), bias, residual)
    if torch.cuda.device_count() > 1:
        with pytest.raises(RuntimeError, match=r"bias is on cuda:1 but the operands are on cuda:0"):
            ext.run(x, w, bias.to("cuda:1"), residual)


def test_runs_on_the_current_stream(ext):
    x, w, bias, residual = inputs()
    stream = torch.cuda.Stream()
    expected = ext.run(x, w, bias, residual)
    with torch.cuda.stream(stream):
        y = ext.run(x, w, bias, residual)
    stream.synchronize()
    assert torch.equal(y, expected)
