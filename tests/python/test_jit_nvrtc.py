"""NVRTC through ctypes, and a generated Hopper GEMM kernel compiled for sm_90a and cached (one real
compile per test session; skipped, with the reason, where libnvrtc is not found)."""
import os

import pytest

from tilefuse.epilogue import relu, to_cpp, trace
from tilefuse.jit import (CacheMissError, NvrtcError, NvrtcNotFoundError, gemm_kernel, gemm_sm90_source,
                          key_inputs, nvrtc)
from tilefuse.jit.headers import headers_hash


@pytest.fixture(scope="session")
def nvrtc_version():
    try:
        return nvrtc.version()
    except NvrtcNotFoundError as error:
        pytest.skip(f"NVRTC is not available here: {error}")


@pytest.fixture(scope="session")
def relu_bias_tree():
    # Not one of the prebuilt epilogues (tilefuse.jit.prebuilt), so that the first call really compiles.
    return to_cpp(trace(lambda acc, scale, bias: relu(acc * scale + bias), scale=(256,), bias=(256,)), "bfloat16")


@pytest.fixture(scope="session")
def compiled(nvrtc_version, relu_bias_tree, tmp_path_factory):
    """(cache folder, the kernel as compiled on a miss): the session's one real compile."""
    directory = tmp_path_factory.mktemp("jit-cache")
    return directory, gemm_kernel(relu_bias_tree, "bfloat16", "Sm90LargeConfig", cache_dir=directory,
                                  require_cached=False)


def test_version(nvrtc_version):
    assert nvrtc_version >= (12, 8)


def test_compile_error_raises_with_the_log(nvrtc_version):
    with pytest.raises(NvrtcError, match="NVRTC_ERROR_COMPILATION") as error:
        nvrtc.compile_to_cubin("__global__ void k() { int x = ; }\n", [], ["--gpu-architecture=sm_90a"])
    assert "expected an expression" in error.value.log and error.value.log in str(error.value)


def test_ptx_and_lowered_names_of_a_small_program(nvrtc_version):
    source = "template <class T> __global__ void fill(T* p, T v) { p[threadIdx.x] = v; }\n"
    with nvrtc.Program(source, "fill.cu") as program:
        program.add_name_expression("&fill<float>")
        program.compile(["-std=c++20", "--gpu-architecture=compute_90a"])
        assert program.lowered_name("&fill<float>") == "_Z4fillIfEvPT_S0_"
        assert ".entry _Z4fillIfEvPT_S0_" in program.ptx()


def test_missing_library_names_where_it_looked(monkeypatch):
    monkeypatch.setattr(nvrtc, "find_shared_library", lambda stem: (None, ["/nowhere/lib64", "ldconfig"]))
    with pytest.raises(NvrtcNotFoundError, match=r"libnvrtc .* was not found; searched: /nowhere/lib64, ldconfig\. "
                                                 r"Install the CUDA toolkit"):
        nvrtc.library.__wrapped__()


def test_generated_gemm_kernel_compiles_to_a_cubin(compiled):
    _, kernel = compiled
    assert not kernel.hit
    assert kernel.cubin[:4] == b"\x7fELF"
    assert kernel.lowered_name.startswith("_ZN8tilefuse4gemm4sm9016sm90_gemm_kernel")
    assert kernel.info["inputs"]["arch"] == "sm_90a" and kernel.info["compile_seconds"] > 0


def test_sm80_gemm_kernel_compiles_with_its_layout_kernel_and_split_k_pass(nvrtc_version, relu_bias_tree, tmp_path):
    """The sm80 family's source (tilefuse.Gemm on GPUs other than sm_90): kernel, parameter layout and the
    split-K pass in one CUBIN, for sm_80; a bad layout or config is refused by name."""
    from tilefuse.jit import gemm_sm80_kernel, gemm_sm80_source

    kernel = gemm_sm80_kernel(relu_bias_tree, "bfloat16", "Sm80LargeConfig", "column", "row", False, arch="sm_80",
                              cache_dir=tmp_path, require_cached=False)
    assert kernel.cubin[:4] == b"\x7fELF" and kernel.info["inputs"]["arch"] == "sm_80"
    assert kernel.lowered_name.startswith("_ZN8tilefuse4gemm4sm8016sm80_gemm_kernel")
    assert set(kernel.info["lowered_names"]) == {"layout", "split_k"}
    with pytest.raises(ValueError, match="layout_b='diagonal'"):
        gemm_sm80_source(relu_bias_tree, layout_b="diagonal")
    with pytest.raises(ValueError, match="Sm80LargeConfig"):
        gemm_sm80_source(relu_bias_tree, config="Sm90LargeConfig")


@pytest.mark.parametrize("element, arch", [("bfloat16", "sm_90a"), ("float16", "sm_80")])
def test_the_skinny_gemm_kernel_compiles_with_its_layout_kernel(nvrtc_version, relu_bias_tree, tmp_path, element, arch):
    """The skinny family's source (tilefuse.Gemm for m <= 16): kernel and parameter layout in one CUBIN, for the
    Hopper and the sm80 generations; other element types are refused by name."""
    from tilefuse.jit import gemm_skinny_kernel
    from tilefuse.jit.source import gemm_skinny_source

    kernel = gemm_skinny_kernel(relu_bias_tree, element, arch=arch, cache_dir=tmp_path, require_cached=False)
    assert kernel.cubin[:4] == b"\x7fELF" and kernel.info["inputs"]["arch"] == arch
    assert kernel.lowered_name.startswith("_ZN8tilefuse4gemm6skinny18skinny_gemm_kernel")
    assert set(kernel.info["lowered_names"]) == {"layout"}
    with pytest.raises(ValueError, match="float8_e4m3"):
        gemm_skinny_source(relu_bias_tree, "float8_e4m3")


@pytest.mark.parametrize("element, arch", [("bfloat16", "sm_90a"), ("float16", "sm_80")])
def test_the_operand_packing_kernel_compiles_without_a_layout_kernel(nvrtc_version, tmp_path, element, arch):
    """tilefuse.Gemm copies operands TMA cannot read with gemm::Gemm's packing kernel (tilefuse.gemm_pack): it
    compiles alone (its Params are plain: no layout kernel), for the Hopper and the sm80 families."""
    from tilefuse.jit import pack_k_major_kernel

    kernel = pack_k_major_kernel(element, arch=arch, cache_dir=tmp_path, require_cached=False)
    assert kernel.cubin[:4] == b"\x7fELF" and kernel.info["inputs"]["arch"] == arch
    assert kernel.lowered_name.startswith("_ZN8tilefuse4gemm19pack_k_major_kernel")
    assert kernel.info["lowered_names"] == {}
    assert pack_k_major_kernel(element, arch=arch, cache_dir=tmp_path, require_cached=True).hit


def test_the_im2col_gather_kernel_compiles_without_a_layout_kernel(nvrtc_version, tmp_path):
    """The wgrad of few channels gathers x with conv/kernel/gather_columns.h (tilefuse.conv2d_im2col): it compiles
    alone (plain Params, packed by tilefuse._C.gather_columns_launch)."""
    from tilefuse.jit import gather_columns_kernel

    kernel = gather_columns_kernel("bfloat16", cache_dir=tmp_path, require_cached=False)
    assert kernel.cubin[:4] == b"\x7fELF" and kernel.info["lowered_names"] == {}
    assert kernel.lowered_name.startswith("_ZN8tilefuse4conv21gather_columns_kernel")


def test_second_call_hits_and_require_cached_allows_hits(compiled, relu_bias_tree):
    directory, first = compiled
    again = gemm_kernel(relu_bias_tree, "bfloat16", "Sm90LargeConfig", cache_dir=directory, require_cached=True)
    assert again.hit and again.cubin == first.cubin and again.lowered_name == first.lowered_name


def test_require_cached_refuses_a_new_kernel(compiled):
    directory, _ = compiled
    other = to_cpp(trace(lambda acc: relu(acc)), "bfloat16")
    with pytest.raises(CacheMissError, match=r"GemmKernel<tilefuse::bfloat16_t, .*Relu<tilefuse::epilogue::Acc>.*"
                                             r"arch sm_90a.*is not in the cache"):
        gemm_kernel(other, "bfloat16", "Sm90MediumConfig", cache_dir=directory, require_cached=True)


def test_the_precompiled_header_is_asked_for_where_nvrtc_has_it(nvrtc_version, monkeypatch):
    """-pch (NVRTC 12.8+) speeds compiles and leaves the code as it is, so it is passed to NVRTC and not keyed."""
    import tilefuse.jit.gemm as jit_gemm

    assert jit_gemm.speed_flags() == (["-pch"] if nvrtc_version >= (12, 8) else [])
    monkeypatch.setattr(jit_gemm, "nvrtc_version", lambda: (12, 4))
    assert jit_gemm.speed_flags() == []
    assert "-pch" not in jit_gemm.BASE_FLAGS  # the cache key's flags


def test_prebuilt_workers_leave_no_precompiled_header_behind(nvrtc_version, tmp_path, monkeypatch):
    """The install's parallel prebuild compiles in worker processes; NVRTC's automatic precompiled header
    (__nvrtc_auto_pch_<pid>_0, ~125 MB) must be cleaned up when each worker ends (a forked worker's os._exit
    skipped that and filled the temp folder)."""
    if nvrtc_version < (12, 8):
        pytest.skip("NVRTC before 12.8 has no automatic precompiled header")
    from tilefuse.jit.prebuilt import build

    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))  # NVRTC's folder for the header; the workers inherit it
    # Not among the prebuilt kernels, so that each worker really compiles (and makes a header).
    tree = to_cpp(trace(lambda acc, bias: relu(acc - bias), acc=(128, 256), bias=(256,)), "bfloat16")
    jobs = [("gemm", tree, "bfloat16", config) for config in ("Sm90MediumConfig", "Sm90NarrowConfig")]
    assert build(str(tmp_path / "cache"), jobs=2, kernels=jobs) == (2, 2)
    left = [name for name in os.listdir(temp) if name.startswith("__nvrtc")]
    assert not left, f"the prebuild's workers left NVRTC's precompiled headers behind: {left}"


def test_key_inputs_name_every_dependency(nvrtc_version, relu_bias_tree):
    import tilefuse

    source = gemm_sm90_source(relu_bias_tree)
    inputs = key_inputs(source.source, source.name_expression, ["-std=c++20"], "sm_90a")
    assert inputs["source"] == source.source and inputs["name_expression"] == source.name_expression
    assert inputs["headers"] == headers_hash() and inputs["nvrtc"] == "%d.%d" % nvrtc_version
    assert inputs["tilefuse"] == tilefuse.__version__ and inputs["arch"] == "sm_90a"


def test_common_epilogues_come_prebuilt_with_the_installed_package(nvrtc_version, tmp_path):
    """pip install . builds the common kernels (tilefuse.jit.prebuilt); a process with an empty cache finds
    them there instead of compiling."""
    from tilefuse.jit.prebuilt import common_kernels, prebuilt_dir

    if not os.path.isdir(prebuilt_dir()):
        pytest.skip("this install has no prebuilt kernels (a source checkout, or TILEFUSE_PREBUILT=OFF)")
    kinds = {kind for kind, *_ in common_kernels()}
    assert kinds == {"gemm", "conv90", "conv80", "pack", "gather", "skinny"}
    from tilefuse.jit import pack_k_major_kernel

    assert pack_k_major_kernel("bfloat16", cache_dir=tmp_path, require_cached=True).path.startswith(prebuilt_dir())
    tree = to_cpp(trace(lambda acc, bias: relu(acc + bias), acc=(128, 256), bias=(256,)), "float16")
    kernel = gemm_kernel(tree, "float16", "Sm90MediumConfig", cache_dir=tmp_path, require_cached=True)
    assert kernel.hit and kernel.path.startswith(prebuilt_dir())
    assert not os.path.exists(os.path.join(tmp_path, "kernels")), "a prebuilt hit must not write the user cache"
    # the conv kernels the planner picks for a ResNet-50 block, fused forward and both backward modes
    from tilefuse import _C
    from tilefuse.jit import conv_sm90_kernel
    from tilefuse.kernel_params import tree_facts

    block = to_cpp(trace(lambda acc, bias, residual: relu(acc + bias + residual), acc=(128, 256), bias=(256,),
                         residual=(128, 256)), "bfloat16")
    plain = to_cpp(trace(lambda acc: acc, acc=(128, 256)), "bfloat16")
    for mode, tree, layer in (("fprop", block, (64, 56, 56, 64, 256, 1, 1, 0, 0, 1, 1, 1, 1)),
                              ("dgrad", plain, (64, 14, 14, 256, 256, 3, 3, 1, 1, 1, 1, 1, 1)),
                              ("wgrad", plain, (64, 56, 56, 64, 64, 1, 1, 0, 0, 1, 1, 1, 1)),
                              ("wgrad", plain, (64, 14, 14, 256, 256, 3, 3, 1, 1, 1, 1, 1, 1))):
        facts = tree_facts(tree)
        plan = _C.plan_conv2d(mode, layer, "bfloat16", facts["reads_memory"], facts["residual_by_tma"], (9, 0, 132),
                              True, 0)
        kernel = conv_sm90_kernel(tree, plan["sm90_kernel"], plan["sm90_kernel_tree"], plan["sm90_split"],
                                  cache_dir=tmp_path, require_cached=True)
        assert kernel.hit and kernel.path.startswith(prebuilt_dir()), (mode, plan["sm90_kernel"])
