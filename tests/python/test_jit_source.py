"""The generated source of a Hopper GEMM kernel instantiation."""
import pytest

from tilefuse.epilogue import relu, to_cpp, trace
from tilefuse.jit import gemm_sm90_source


def test_source_names_the_kernel_and_its_tree():
    tree = to_cpp(trace(lambda acc, bias: relu(acc + bias), bias=(8,)), "bfloat16")
    kernel = gemm_sm90_source(tree, "float16", "Sm90PingPongConfig")
    assert "#include <tilefuse/gemm/kernel/sm90_gemm.h>" in kernel.source
    assert f"using Epilogue = {tree};" in kernel.source
    assert ("using Kernel = tilefuse::gemm::sm90::GemmKernel<tilefuse::half_t, Epilogue, "
            "tilefuse::gemm::Sm90PingPongConfig>;") in kernel.source
    assert kernel.name_expression == "&tilefuse::gemm::sm90::sm90_gemm_kernel<tilefuse_jit::Kernel>"
    assert kernel.kernel_type.startswith(f"tilefuse::gemm::sm90::GemmKernel<tilefuse::half_t, {tree},")


def test_pretty_and_unqualified_trees_become_one_line():
    graph = trace(lambda acc, bias: relu(acc + bias), bias=(8,))
    pretty = to_cpp(graph, "bfloat16").pretty
    assert gemm_sm90_source(pretty).source == gemm_sm90_source(to_cpp(graph, "bfloat16")).source
    assert 'using Epilogue = Store<"D"' in gemm_sm90_source(to_cpp(graph, "bf16", qualified=False)).source


def test_refuses_what_the_hopper_kernel_cannot_run():
    with pytest.raises(ValueError, match="element='float32': the Hopper GEMM reads bfloat16, float16"):
        gemm_sm90_source("X", "float32")
    with pytest.raises(ValueError, match="config='Sm80LargeConfig': the Hopper GEMM takes an Sm90 config"):
        gemm_sm90_source("X", "bfloat16", "Sm80LargeConfig")
    assert "tilefuse::gemm::Sm90Multicast<tilefuse::gemm::Sm90PingPongConfig>>;" in gemm_sm90_source(
        "X", "bf16", "tilefuse::gemm::Sm90Multicast<tilefuse::gemm::Sm90PingPongConfig>").source
