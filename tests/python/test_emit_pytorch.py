"""tilefuse.emit.pytorch: golden files of the generated extension (TILEFUSE_UPDATE_GOLDEN=1 rewrites them),
what every generated file must contain, setup.py's link flags, and the errors of specs the emitter cannot
build. No torch needed: the generated code is compiled by test_emit_pytorch_build.py (torch, no GPU) and the
GPU test (test_emit_pytorch_gpu.py)."""
import ast
import importlib.util
import os
import re
import stat
import sys

import pytest

from tilefuse.emit import EmitError, OpSpec, pytorch
from tilefuse.epilogue import amax, relu

GOLDEN = os.path.join(os.path.dirname(__file__), "golden")
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def bias_relu(acc, bias):
    return relu(acc + bias)


def bias_relu_residual(acc, bias, residual):
    return relu(acc + bias) + residual


def cases():
    return {
        "gemm_bias_relu": OpSpec("gemm", "bfloat16", bias_relu, {"acc": (96, 64), "bias": (64,)}),
        "conv_bias_relu_residual": OpSpec("conv2d_fprop", "bfloat16", bias_relu_residual,
                                          {"acc": (392, 64), "bias": (64,), "residual": (392, 64)},
                                          stride=(1, 1), padding=(1, 1), dilation=(1, 1)),
    }


def emit(spec, name, tmp_path, **kwargs):
    return pytorch(spec, name, str(tmp_path / name), source_root=REPO, **kwargs)


def read(ext, relative):
    with open(os.path.join(ext.out_dir, relative)) as f:
        return f.read()


@pytest.mark.parametrize("case", list(cases()), ids=str)
def test_generated_extension_matches_golden(case, tmp_path):
    ext = emit(cases()[case], case, tmp_path)
    folder = os.path.join(GOLDEN, f"emit_{case}")
    texts = {f"{case}.cu": read(ext, f"{case}.cu"), f"{case}_binding.cpp": read(ext, f"{case}_binding.cpp"),
             "setup.py.txt": read(ext, "setup.py"),
             "README.txt": read(ext, "README.txt")}
    if os.environ.get("TILEFUSE_UPDATE_GOLDEN"):
        os.makedirs(folder, exist_ok=True)
        for relative, text in texts.items():
            with open(os.path.join(folder, relative), "w") as f:
                f.write(text)
    for relative, text in texts.items():
        path = os.path.join(folder, relative)
        if not os.path.exists(path):
            pytest.fail(f"{path} is missing: run with TILEFUSE_UPDATE_GOLDEN=1 to write it, then review it")
        with open(path) as f:
            assert text == f.read(), f"generated {relative} changed; if intended, run with TILEFUSE_UPDATE_GOLDEN=1 and review {path}"


def test_files_written(tmp_path):
    ext = emit(cases()["conv_bias_relu_residual"], "conv", tmp_path)
    assert set(ext.files) == {"conv.cu", "conv_binding.cpp", "setup.py", "README.txt", "tilefuse_runtime/status.cpp",
                              "tilefuse_runtime/host_adapter.cpp", "tilefuse_runtime/default_host_adapter.cpp",
                              "tilefuse_runtime/tensor_map.cpp"}
    for relative in ext.files:
        assert os.path.getsize(os.path.join(ext.out_dir, relative)) > 0
    assert ext.parameters == ("x", "w", "bias", "residual")
    assert ext.outputs == ("D",)
    with open(os.path.join(REPO, "src", "runtime", "tensor_map.cpp")) as f:
        assert read(ext, "tilefuse_runtime/tensor_map.cpp") == f.read()
    # the headers travel with the extension: its folder builds without tilefuse
    with open(os.path.join(REPO, "include", "tilefuse", "conv", "device", "conv2d.hpp")) as f:
        assert read(ext, "tilefuse_include/tilefuse/conv/device/conv2d.hpp") == f.read()


def test_emits_from_the_installed_package_without_a_checkout(tmp_path, monkeypatch):
    """No source_root, no TILEFUSE_SOURCE_DIR: the wheel carries the headers and the runtime sources."""
    import tilefuse

    monkeypatch.delenv("TILEFUSE_SOURCE_DIR", raising=False)
    installed = os.path.dirname(os.path.abspath(tilefuse.__file__))
    if not os.path.isdir(os.path.join(installed, "include")):
        pytest.skip("tilefuse runs from a checkout here, not from an installed package")
    assert os.path.isfile(os.path.join(installed, "src", "runtime", "tensor_map.cpp"))
    ext = pytorch(cases()["gemm_bias_relu"], "gemm", str(tmp_path / "gemm"))
    assert os.path.isfile(os.path.join(ext.out_dir, "tilefuse_include", "tilefuse", "gemm", "device", "gemm.hpp"))
    assert installed not in read(ext, "setup.py")


@pytest.mark.parametrize("case", list(cases()), ids=str)
def test_setup_py_is_valid_python(case, tmp_path):
    ext = emit(cases()[case], case, tmp_path, archs=["90a", "80", "89"])
    source = read(ext, "setup.py")
    compile(source, "setup.py", "exec")
    tree = ast.parse(source)
    values = {t.id: n.value for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    assert ast.literal_eval(values["ARCHS"]) == ["90a", "80", "89"]
    assert ast.literal_eval(values["SOURCES"])[:2] == [f"{case}.cu", f"{case}_binding.cpp"]
    assert REPO not in source, "setup.py must not name the emitting machine's folders"
    for flag in ("-std=c++20", "--expt-relaxed-constexpr", "-gencode=arch=compute_%s,code=sm_%s", "CUDAExtension",
                 "BuildExtension", "TILEFUSE_INCLUDE_DIR", "extra_ldflags=link_flags()",
                 "extra_link_args=link_flags()"):
        assert flag in source


def load_setup(ext):
    """The emitted setup.py as a module (its top level imports only os and subprocess)."""
    loader = importlib.util.spec_from_file_location(f"{ext.name}_setup", os.path.join(ext.out_dir, "setup.py"))
    module = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(module)
    return module


def fake_compiler(folder, answers):
    """A stand-in $CXX that answers -print-file-name=<library> from `answers` (the bare name when missing, as
    g++ does for a library it cannot find)."""
    lines = ["#!/bin/sh", 'case "$1" in']
    lines += [f"  -print-file-name={library}) echo '{path}' ;;" for library, path in answers.items()]
    lines += ['  -print-file-name=*) echo "${1#-print-file-name=}" ;;', "  *) exit 1 ;;", "esac", ""]
    path = folder / "fake-g++"
    path.write_text("\n".join(lines))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="libstdc++ link flags: Linux only")
def test_setup_links_the_shared_cxx_runtime(tmp_path, monkeypatch):
    # A compiler that finds only libstdc++.a (a relocated GCC, as on the GPU machine) would put a second C++
    # runtime into the extension, which crashed describe() and run() beside torch's libstdc++.so.6: setup.py
    # names the shared library on the link line instead.
    setup = load_setup(emit(cases()["conv_bias_relu_residual"], "conv", tmp_path))
    libs = tmp_path / "lib"
    libs.mkdir()
    for library in ("libstdc++.a", "libstdc++.so", "libstdc++.so.6"):
        (libs / library).write_text("")
    static = fake_compiler(tmp_path, {"libstdc++.a": libs / "libstdc++.a", "libstdc++.so.6": libs / "libstdc++.so.6"})
    monkeypatch.setenv("CXX", static)
    assert setup.link_flags() == [str(libs / "libstdc++.so.6")]
    # Without libstdc++.so.6 where the compiler looks: the one this process loaded, or a clear refusal.
    monkeypatch.setenv("CXX", fake_compiler(tmp_path, {"libstdc++.a": libs / "libstdc++.a"}))
    monkeypatch.setattr(setup, "loaded_libstdcxx", lambda: "/opt/lib/libstdc++.so.6")
    assert setup.link_flags() == ["/opt/lib/libstdc++.so.6"]
    monkeypatch.setattr(setup, "loaded_libstdcxx", lambda: None)
    with pytest.raises(SystemExit, match="links libstdc\\+\\+ only statically"):
        setup.link_flags()
    # A compiler that links libstdc++.so (the usual case), one without libstdc++ (libc++), or none: no flags.
    monkeypatch.setenv("CXX", fake_compiler(tmp_path, {"libstdc++.so": libs / "libstdc++.so",
                                                       "libstdc++.a": libs / "libstdc++.a"}))
    assert setup.link_flags() == []
    monkeypatch.setenv("CXX", fake_compiler(tmp_path, {}))
    assert setup.link_flags() == []
    monkeypatch.setenv("CXX", str(tmp_path / "no-such-compiler"))
    assert setup.link_flags() == []


@pytest.mark.parametrize("case", list(cases()), ids=str)
def test_every_tensor_and_argument_is_checked(case, tmp_path):
    spec = cases()[case]
    ext = emit(spec, case, tmp_path)
    cu = read(ext, f"{case}.cu")
    binding = read(ext, f"{case}_binding.cpp")
    tensors = ["x", "w", "bias", "residual"] if spec.kind == "conv2d_fprop" else ["a", "b", "bias"]
    for t in tensors:
        assert re.search(rf'tf_check_tensor\({t}, "{t}", at::kBFloat16, "torch.bfloat16", tf_device\);', cu), t
        assert f'py::arg("{t}")' in binding
    for name in [n for n in ext.parameters if n not in ("x", "w", "a", "b")] + list(ext.outputs):
        assert f'.set("{name}", ' in cu, name
    if spec.kind == "conv2d_fprop":
        assert 'tf_check_channels_last(x, "x", "NHWC");' in cu
        assert 'tf_check_channels_last(w, "w", "KRSC");' in cu
        assert 'tf_check_channels_last(residual, "residual", "NHWC");' in cu
        assert "memory_format(at::MemoryFormat::ChannelsLast)" in cu
        assert "tf_problem.pad_h = 1;" in cu
    else:
        assert 'tf_leading_dim(a, "a", true)' in cu and 'tf_leading_dim(b, "b", false)' in cu
        assert "tilefuse::gemm::Gemm<Element, tilefuse::RowMajor, tilefuse::ColumnMajor, Epilogue>" in cu
    for needed in ("c10::cuda::CUDAGuard", "at::cuda::getCurrentCUDAStream()", "Op::can_implement(call.args)",
                   "TORCH_CHECK(tf_can.ok()", "#include <tilefuse/"):
        assert needed in cu
    assert "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m)" in binding


def test_scalars_layouts_and_several_outputs(tmp_path):
    def epi(acc, alpha, residual, scale):
        y = relu(alpha * acc + residual) * scale
        return {"D": y, "amax": amax(y, dim=0)}

    spec = OpSpec("gemm", "float16", epi, {"acc": (32, 48), "alpha": 1.0, "residual": (32, 48), "scale": (32, 1)},
                  layout_a="column", layout_b="row")
    ext = emit(spec, "gemm_multi", tmp_path)
    cu = read(ext, "gemm_multi.cu")
    assert ext.parameters == ("a", "b", "alpha", "residual", "scale")
    assert ext.outputs == ("D", "amax")
    assert "std::vector<at::Tensor> run(at::Tensor const& a, at::Tensor const& b, double alpha, " in cu
    assert '.set("alpha", static_cast<float>(alpha))' in cu
    assert 'tf_leading_dim(a, "a", false)' in cu and 'tf_leading_dim(b, "b", true)' in cu
    assert 'tf_check_vector(scale, "scale", tf_m, "one value per output row");' in cu
    assert '.set("residual", reinterpret_cast<tilefuse::half_t const*>(residual.data_ptr()), {.ld = tf_ld_residual})' in cu
    assert "at::Tensor tf_out_amax = at::empty({tf_n}, tf_options.dtype(at::kFloat));" in cu
    assert "tilefuse::gemm::Gemm<Element, tilefuse::ColumnMajor, tilefuse::RowMajor, Epilogue>" in cu
    assert 'm.attr("outputs") = py::make_tuple("D", "amax");' in read(ext, "gemm_multi_binding.cpp")


def test_plain_epilogue(tmp_path):
    ext = emit(OpSpec("conv2d_fprop", "float16", stride=(2, 2)), "plain_conv", tmp_path)
    cu = read(ext, "plain_conv.cu")
    assert ext.parameters == ("x", "w") and ext.outputs == ("D",)
    assert "tf_problem.stride_h = 2;" in cu
    assert "at::Tensor run(at::Tensor const& x, at::Tensor const& w) {" in cu


@pytest.mark.parametrize("spec, message", [
    (OpSpec("conv3d"), "kind='conv3d' is not supported; use one of: gemm, conv2d_fprop"),
    (OpSpec("conv2d_fprop", "float32"), "conv2d_fprop takes bfloat16, float16 operands, not float32"),
    (OpSpec("gemm", "int8"), "gemm takes bfloat16, float16, float32 operands, not int8"),
    (OpSpec("gemm", "complex64"), "is not an element type tilefuse knows"),
    (OpSpec("conv2d_fprop", stride=[1, 1]), "stride=[1, 1] must be a tuple of two ints (h, w)"),
    (OpSpec("conv2d_fprop", stride=2), "stride=2 must be a tuple of two ints"),
    (OpSpec("conv2d_fprop", padding=(1, 1, 1)), "padding=(1, 1, 1) must be a tuple of two ints"),
    (OpSpec("conv2d_fprop", padding=(-1, 0)), "padding=(-1, 0): each entry must be at least 0"),
    (OpSpec("conv2d_fprop", dilation=(0, 1)), "dilation=(0, 1): each entry must be at least 1"),
    (OpSpec("conv2d_fprop", stride=(1.5, 1)), "must be a tuple of two ints"),
    (OpSpec("gemm", stride=(2, 2)), "stride=(2, 2) is a conv2d setting; a gemm takes none"),
    (OpSpec("gemm", layout_a="nhwc"), "layout_a='nhwc': use \"row\""),
    (OpSpec("gemm", epilogue="relu"), "OpSpec.epilogue must be a function"),
], ids=lambda v: v if isinstance(v, str) else "")
def test_unsupported_specs(spec, message, tmp_path):
    with pytest.raises(EmitError, match=re.escape(message)):
        emit(spec, "op", tmp_path)
    assert not os.path.exists(tmp_path / "op")


def test_epilogue_errors(tmp_path):
    def uses_x(acc, x):
        return acc + x

    with pytest.raises(EmitError, match="has the name of the conv2d_fprop operand 'x'"):
        emit(OpSpec("conv2d_fprop", epilogue=uses_x, epilogue_specs={"x": (8,)}), "op", tmp_path)

    def per_pixel(acc, s):
        return acc * s

    with pytest.raises(EmitError, match="one value per output pixel"):
        emit(OpSpec("conv2d_fprop", epilogue=per_pixel, epilogue_specs={"acc": (32, 8), "s": (32, 1)}), "op", tmp_path)

    def batched(acc, bias):
        return acc + bias

    with pytest.raises(EmitError, match="unbatched"):
        emit(OpSpec("gemm", epilogue=batched, epilogue_specs={"acc": (2, 4, 8), "bias": (8,)}), "op", tmp_path)
    with pytest.raises(EmitError, match="tfloat32, which has no torch dtype"):
        emit(OpSpec("gemm", "float32", bias_relu, {"bias": (8,)}, elements={"D": "tfloat32"}), "op", tmp_path)

    def keyword(acc, new):
        return acc + new

    with pytest.raises(EmitError, match="C\\+\\+ keyword"):
        emit(OpSpec("gemm", epilogue=keyword, epilogue_specs={"new": (8,)}), "op", tmp_path)
    with pytest.raises(EmitError, match="a tilefuse.emit.OpSpec"):
        pytorch({"kind": "gemm"}, "op", str(tmp_path / "op"))


@pytest.mark.parametrize("name", ["1op", "my-op", "class", "", "tf_op", "café"])
def test_bad_names(name, tmp_path):
    with pytest.raises(EmitError, match="name="):
        emit(OpSpec("gemm"), name, tmp_path)


@pytest.mark.parametrize("archs", ["90a", [], ["sm_90x"], [75.5]])
def test_bad_archs(archs, tmp_path):
    with pytest.raises(EmitError, match="archs"):
        emit(OpSpec("gemm"), "op", tmp_path, archs=archs)


def test_missing_sources(tmp_path):
    with pytest.raises(EmitError, match="source_root"):
        pytorch(OpSpec("gemm"), "op", str(tmp_path / "op"), source_root=str(tmp_path))


def test_op_objects_emit_what_their_specs_emit(tmp_path):
    """tilefuse.emit.pytorch(op, ...) with a tilefuse.Conv2d / tilefuse.Gemm writes the same extension as the
    OpSpec a user would write for it (the epilogue's argument kinds come from epilogue_specs)."""
    import tilefuse

    conv = tilefuse.Conv2d(padding=1, epilogue=bias_relu_residual)
    specs = {"acc": (392, 64), "bias": (64,), "residual": (392, 64)}
    from_op = emit(conv, "conv_bias_relu_residual", tmp_path / "op", epilogue_specs=specs)
    from_spec = emit(cases()["conv_bias_relu_residual"], "conv_bias_relu_residual", tmp_path / "spec")
    for name in ("conv_bias_relu_residual.cu", "conv_bias_relu_residual_binding.cpp", "setup.py"):
        assert read(from_op, name) == read(from_spec, name)
    gemm = emit(tilefuse.Gemm(epilogue=bias_relu), "gemm_bias_relu", tmp_path / "gemm",
                epilogue_specs={"acc": (96, 64), "bias": (64,)})
    golden = emit(cases()["gemm_bias_relu"], "gemm_bias_relu", tmp_path / "gemm_spec")
    assert read(gemm, "gemm_bias_relu.cu") == read(golden, "gemm_bias_relu.cu")
    with pytest.raises(EmitError, match="need epilogue_specs"):
        emit(conv, "x", tmp_path / "x")
    with pytest.raises(EmitError, match="fprop"):
        emit(tilefuse.Conv2d("dgrad"), "y", tmp_path / "y")
    with pytest.raises(EmitError, match="OpSpec, a tilefuse.Gemm or a tilefuse.Conv2d"):
        emit(object(), "z", tmp_path / "z")
    with pytest.raises(EmitError, match="go with an op object"):
        emit(cases()["gemm_bias_relu"], "w", tmp_path / "w", element="float16")
