"""tilefuse._torch_ops, the C++ warm path of the conv ops, without a GPU: it is built and loads for the torch
it was built for (and says why not for another), hands back None (the Python path) for everything it has no
checked call of, and copies exactly the Python warm calls it can repeat."""
import importlib

import pytest

torch = pytest.importorskip("torch")

import tilefuse  # noqa: E402
from tilefuse import _C, conv_ops, fast_path  # noqa: E402
from tilefuse.kernel_params import Launch, WarmCall  # noqa: E402

CL = torch.channels_last


def test_the_extension_is_built_with_torch_and_loads():
    assert fast_path.available(), fast_path.why_unavailable()
    assert fast_path.why_unavailable() is None


def test_another_torch_version_is_refused_with_the_reason(monkeypatch):
    monkeypatch.setattr(torch, "__version__", "0.0.1")
    monkeypatch.setattr(fast_path, "_STATE", {})
    assert fast_path.module() is None
    assert "built for torch" in fast_path.why_unavailable() and "0.0.1" in fast_path.why_unavailable()


def test_calls_without_a_checked_signature_go_to_python():
    fast = conv_ops.fast_conv([1, 1], [1, 1], [1, 1], "none", "require", "forward")
    before = fast.stats()["misses"]
    x = torch.randn(2, 8, 5, 5).contiguous(memory_format=CL)
    w = torch.randn(8, 8, 3, 3).contiguous(memory_format=CL)
    assert fast(x, w, None, None) is None  # CPU tensors: never an entry
    assert fast(x, w, torch.randn(8), torch.randn(2, 8, 5, 5)) is None

    class Sub(torch.Tensor):
        pass

    assert fast(x.as_subclass(Sub), w, None, None) is None  # subclasses keep their own dispatch
    assert fast.stats()["misses"] == before + 2


def test_the_same_arguments_share_one_fast_conv():
    a = conv_ops.fast_conv([2, 2], [0, 0], [1, 1], "relu", "require")
    assert conv_ops.fast_conv((2, 2), (0, 0), (1, 1), "relu", "require") is a
    assert conv_ops.fast_conv([2, 2], [0, 0], [1, 1], "none", "require") is not a
    assert conv_ops.fast_conv([2, 2], [0, 0], [1, 1], "relu", "require", "add_act") is not a


def test_the_frozen_graphs_ops_have_cpp_cuda_kernels_and_linear_a_fast_path():
    importlib.import_module("tilefuse.inference_ops")
    from tilefuse import ops

    for op in ("tilefuse::conv2d_inference", "tilefuse::linear_inference", "tilefuse::linear", "tilefuse::conv2d",
               "tilefuse::conv2d_add_act", "tilefuse::conv2d_dgrad", "tilefuse::conv2d_wgrad"):
        assert torch._C._dispatch_has_kernel_for_dispatch_key(op, "CUDA"), op
    fast = ops.fast_linear("gelu")
    assert ops.fast_linear("gelu") is fast and ops.fast_linear("relu") is not fast
    x, w = torch.randn(4, 8), torch.randn(16, 8)
    misses = fast.stats()["misses"]
    assert fast(x, w, None, None) is None  # CPU tensors: never an entry
    assert fast.stats()["misses"] == misses + 1


def _warm(pointer_keys, scalars=(), outputs=None):
    launch = Launch(kernel=0, grid=1, threads=128, smem_bytes=0, template=bytes(8 * len(pointer_keys) + 8))
    launch.pointers = [(8 * i, key) for i, key in enumerate(pointer_keys)]
    launch.scalars = [(8 * len(pointer_keys), name) for name in scalars]
    outputs = outputs or [("D", "store", (2, 8, 5, 5), torch.bfloat16, True)]
    return WarmCall(0, [launch], outputs)


def test_python_warm_calls_are_copied_where_the_fast_path_can_repeat_them():
    assert fast_path.native_warm_call(_warm(["a", "b", "arg:bias", "out:D"]), ("bias",)) is not None
    assert fast_path.native_warm_call(_warm(["a", "b", "out:D", "partials", "tickets"])) is not None
    # an epilogue scalar, a second output, a reduction, an argument it was not told of: the Python path
    assert fast_path.native_warm_call(_warm(["a", "b", "out:D"], scalars=["alpha"])) is None
    two = [("D", "store", (2, 8, 5, 5), torch.bfloat16, True), ("E", "store", (2, 8, 5, 5), torch.bfloat16, True)]
    assert fast_path.native_warm_call(_warm(["a", "b", "out:D"], outputs=two)) is None
    assert fast_path.native_warm_call(_warm(["a", "b", "out:D"], outputs=[("D", "reduce", (8,), 0.0, False)])) is None
    assert fast_path.native_warm_call(_warm(["a", "b", "arg:scale", "out:D"])) is None
    many = [f"t{i}" for i in range(12)]  # more epilogue tensors than the C++ call's slots
    assert fast_path.native_warm_call(_warm(["a", "b"] + ["arg:" + n for n in many] + ["out:D"]), many) is None


def test_the_launch_entry_and_addresses_are_exported():
    assert isinstance(_C.run_prepared_launch_address, int) and _C.run_prepared_launch_address != 0
    native = _C.PreparedLaunch(0, 1, 128, 1, 0, 1, bytes(16))
    assert native.address != 0
    assert tilefuse.nn.Conv2d(8, 8, 3, padding=1)._fast_key == ((1, 1), (1, 1), (1, 1), "none", "require", "forward")


def _reference_kernels():
    """CPU kernels for tilefuse::conv2d and its backward ops (float64 torch), in a Library removed afterwards:
    the autograd wiring runs on the CPU through them."""
    F = torch.nn.functional
    lib = torch.library.Library("tilefuse", "IMPL")

    def conv2d(x, weight, bias, residual, stride, padding, dilation, activation="none", layout="require"):
        y = F.conv2d(x, weight, bias, stride, padding, dilation)
        y = torch.relu(y) if activation == "relu" else y
        return (y if residual is None else y + residual).contiguous(memory_format=CL)

    def dgrad(grad_y, weight, input_size, stride, padding, dilation):
        return torch.nn.grad.conv2d_input(input_size, weight, grad_y, stride, padding, dilation)

    def wgrad(grad_y, x, weight_size, stride, padding, dilation):
        return torch.nn.grad.conv2d_weight(x, weight_size, grad_y, stride, padding, dilation)

    def add_act(x, weight, bias, residual, stride, padding, dilation, activation="none"):
        y = F.conv2d(x, weight, bias, stride, padding, dilation) + residual
        return (torch.relu(y) if activation == "relu" else y).contiguous(memory_format=CL)

    lib.impl("conv2d", conv2d, "CPU")
    lib.impl("conv2d_add_act", add_act, "CPU")
    lib.impl("conv2d_dgrad", dgrad, "CPU")
    lib.impl("conv2d_wgrad", wgrad, "CPU")
    return lib


def leaf(g, *shape):
    """A float64 tensor that requires grad (channels-last where it has 4 dimensions), for gradcheck."""
    t = torch.randn(*shape, dtype=torch.float64, generator=g)
    return (t.contiguous(memory_format=CL) if t.dim() == 4 else t).requires_grad_()


@pytest.mark.parametrize("activation,residual", [("none", False), ("none", True), ("relu", False)])
def test_the_conv_ops_cpp_autograd_kernel_takes_the_formula_with_grad_and_goes_below_without(activation, residual):
    lib = _reference_kernels()
    try:
        g = torch.Generator().manual_seed(3)
        x = leaf(g, 2, 4, 6, 5)
        w = leaf(g, 6, 4, 3, 3)
        b = leaf(g, 6)
        r = leaf(g, 2, 6, 3, 3) if residual else None

        def op(x, w, b, *rest):
            return torch.ops.tilefuse.conv2d(x, w, b, rest[0] if rest else None, [2, 2], [1, 1], [1, 1], activation)

        inputs = (x, w, b) + ((r,) if residual else ())
        assert torch.autograd.gradcheck(op, inputs)  # the formula, reached through the C++ Autograd kernel
        with torch.no_grad():  # below autograd straight from C++: no node
            assert op(*inputs).grad_fn is None
        assert op(*inputs).grad_fn is not None
    finally:
        lib._destroy()


@pytest.mark.parametrize("activation", ["none", "relu"])
def test_conv2d_add_acts_cpp_autograd_kernel_takes_its_formula(activation):
    lib = _reference_kernels()
    try:
        g = torch.Generator().manual_seed(4)
        x = leaf(g, 2, 4, 5, 5)
        w = leaf(g, 6, 4, 3, 3)
        b = leaf(g, 6)
        r = leaf(g, 2, 6, 5, 5)

        def op(x, w, b, r):
            return torch.ops.tilefuse.conv2d_add_act(x, w, b, r, [1, 1], [1, 1], [1, 1], activation)

        assert torch.autograd.gradcheck(op, (x, w, b, r))
        with torch.no_grad():
            assert op(x, w, b, r).grad_fn is None
    finally:
        lib._destroy()


def test_the_linear_ops_cpp_autograd_kernel_takes_the_formula_with_grad():
    from tilefuse import ops

    assert torch._C._dispatch_has_kernel_for_dispatch_key("tilefuse::linear", "Autograd")
    assert ops._LinearOp is not None and conv_ops._Conv2dOp is not None and conv_ops._AddActOp is not None
    for op in ("tilefuse::conv2d", "tilefuse::conv2d_add_act", "tilefuse::linear"):
        assert "module.cpp" in torch._C._dispatch_dump(op).split("Autograd[alias]:")[1].split("\n")[0], op
