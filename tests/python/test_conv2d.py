"""tilefuse.Conv2d on a machine without a GPU: the problem arithmetic, the C++ planner's tile models as Python
reaches them (tilefuse._C.plan_conv2d), the layout parser,
the generated conv sources (and one NVRTC compile of each kernel family), and the refusals that come before
any kernel work."""
import pytest

import tilefuse
from tilefuse import _C
from tilefuse.conv2d import _LAYOUT_FIELDS, _LAYOUT_HEADER, _LAYOUT_VERSION, ConvProblem, output_extent, parse_conv_layout
from tilefuse.epilogue import relu, to_cpp, trace
from tilefuse.jit import NvrtcNotFoundError, conv_kernel, conv_sm90_kernel, conv_sm90_source, conv_source, nvrtc


def test_output_extent_is_torchs_formula():
    assert output_extent(224, 3, 1, 7, 2) == 112   # ResNet-50's first layer
    assert output_extent(56, 1, 1, 3, 1) == 56
    assert output_extent(9, 2, 2, 3, 1) == 9       # dilation 2
    assert output_extent(7, 0, 1, 3, 1) == 5


def test_implicit_gemm_extents_of_each_mode():
    p = ConvProblem(N=2, H=9, W=8, C=16, K=24, R=3, S=3, P=9, Q=8, pad=(1, 1), stride=(1, 1), dilation=(1, 1))
    assert p.gemm("fprop") == (2 * 9 * 8, 24, 9 * 16)
    assert p.gemm("dgrad") == (2 * 9 * 8, 16, 9 * 24)
    assert p.gemm("wgrad") == (24, 9 * 16, 2 * 9 * 8)
    assert p.geometry() == (2, 9, 8, 16, 24, 3, 3, 9, 8, 1, 1, 1, 1, 1, 1)
    assert p.output_size("wgrad") == (24, 16, 3, 3) and p.output_size("dgrad") == (2, 16, 9, 8)


def _plan(mode, n, h, w, c, k, r, device=(9, 0, 132), **overrides):
    """The C++ planner's plan of a bf16 problem with r x r filters, padding r // 2, stride 1, aligned operands."""
    return _C.plan_conv2d(mode, (n, h, w, c, k, r, r, r // 2, r // 2, 1, 1, 1, 1), "bfloat16", False, False, device,
                          True, 0, **overrides)


def test_sm80_tile_model_through_the_planner():
    sm80 = (8, 0, 132)
    assert _plan("fprop", 64, 56, 56, 64, 256, 1, sm80)["sm80_config"] == "Sm80LargeConfig"
    assert _plan("fprop", 64, 7, 7, 512, 512, 1, sm80)["sm80_config"] == "Sm80NarrowConfig"
    assert _plan("fprop", 64, 14, 14, 256, 256, 1, sm80)["sm80_config"] == "Sm80NarrowConfig"
    plan = _plan("fprop", 10, 10, 10, 64, 64, 1, sm80)
    assert plan["family"] == "sm80" and plan["sm80_tile"] == (128, 64, 32)
    assert "sm_80" in plan["why_not_hopper"]


def test_sm90_tile_model_through_the_planner():
    def tile(*problem):
        plan = _plan("fprop", *problem, sm90_source="gather")
        assert plan["family"] == "sm90" and not plan["im2col"], plan
        return plan["sm90_tile"]
    assert tile(64, 56, 56, 64, 256, 3) == "large"
    # 50 large tiles (one per SM, 256 wide) cost more than 100 medium ones (one per SM, 128 wide)
    assert tile(64, 7, 7, 512, 512, 3) == "medium"
    assert tile(2, 14, 14, 64, 64, 3) == "narrow"
    # With im2col (the default where it is valid) the planner picks the ping-pong schedule for 128x64.
    plan = _plan("fprop", 2, 14, 14, 64, 64, 3)
    assert plan["im2col"] and plan["sm90_config"] == "Sm90ConvIm2colPingPongNarrowConfig", plan


def _words(family, fields, nodes=(), reduce_nodes=()):
    header = {"version": _LAYOUT_VERSION, "family": family, "size": 512, "threads": 256, "smem_bytes": 1000,
              "geometry": 8, "geometry_bytes": 60, **fields, "node_count": len(nodes),
              "reduce_node_count": len(reduce_nodes)}
    words = [header.get(n, -1) for n in _LAYOUT_FIELDS]
    words += [-1] * (_LAYOUT_HEADER - len(words))  # the header's unused words
    words += [w for node in nodes for w in node] + [0] * (9 * (64 - len(nodes)))
    return words + [w for node in reduce_nodes for w in node]


def test_layout_parser_reads_header_and_nodes():
    name = int.from_bytes(b"bias".ljust(8, b"\0"), "little")
    fields = {"m": 72, "a": 100, "epilogue": 160, "reduce_size": 120, "reduce_epilogue": 40, "flags": 5,
              "staged_aux": 300, "row_map": 416}
    layout = parse_conv_layout(_words(80, fields, [(3, 200, -1, 208, -1, name, 0, 0, 0)],
                                      [(3, 80, -1, 88, -1, name, 0, 0, 0)]))
    assert layout["family"] == 80 and layout["m"] == 72 and layout["a"] == 100 and layout["tma_b"] == -1
    assert layout["nodes"] == [{"kind": "row_broadcast", "data": 200, "ld": -1, "batch_stride": 208, "value": -1,
                                "name": "bias"}]
    # the split-K pass's parameters hold the epilogue's nodes at their own offsets
    assert layout["reduce_nodes"] == [{"kind": "row_broadcast", "data": 80, "ld": -1, "batch_stride": 88,
                                       "value": -1, "name": "bias"}]
    assert layout["tma_aux_kernel"] and not layout["tma_column_kernel"] and layout["tma_store_kernel"]
    assert layout["staged_aux"] == 300 and layout["row_map"] == 416
    assert "reduce_nodes" not in parse_conv_layout(_words(90, {"epilogue": 160}))
    with pytest.raises(RuntimeError, match="version"):
        parse_conv_layout([1] + [0] * 60)
    with pytest.raises(RuntimeError, match="15 ints"):
        parse_conv_layout(_words(80, {"geometry_bytes": 64}))


def test_the_planner_spells_the_hopper_kernel_of_every_mode():
    fused = dict(reads_memory=True, residual_by_tma=True)

    def plan(mode, *problem, tree=None, **overrides):
        tree = tree or dict(reads_memory=False, residual_by_tma=False)
        n, h, w, c, k, r = problem
        return _C.plan_conv2d(mode, (n, h, w, c, k, r, r, r // 2, r // 2, 1, 1, 1, 1), "bfloat16", tree["reads_memory"],
                              tree["residual_by_tma"], (9, 0, 132), True, 0, **overrides)

    # ResNet-50's fused block conv: the im2col source, its residual by TMA on a cooperative tile
    p = plan("fprop", 64, 56, 56, 64, 256, 1, tree=fused, sm90_tile="large")
    assert p["family"] == "sm90" and p["sm90_residual_by_tma"], p
    assert p["sm90_kernel"] == ("tilefuse::conv::sm90::FpropIm2colKernel<tilefuse::bfloat16_t, tilefuse_jit::Epilogue, "
                                "tilefuse::conv::sm90::Sm90ConvTmaAux<tilefuse::conv::sm90::Sm90ConvConfigFor<"
                                "tilefuse::bfloat16_t, tilefuse::conv::sm90::Sm90ConvIm2colLargeConfig>>>")
    assert plan("fprop", 64, 56, 56, 64, 256, 3, sm90_source="gather")["sm90_kernel"].startswith(
        "tilefuse::conv::sm90::FpropKernel<")
    assert "DgradIm2colKernel<" in plan("dgrad", 64, 56, 56, 64, 64, 3)["sm90_kernel"]
    # wgrad: many splits summed in the kernel (a zeroed workspace of sums and tickets), few by a pass
    p = plan("wgrad", 64, 56, 56, 64, 64, 1)
    assert p["sm90_split"] == "kernel" and "gemm::Sm90SplitReduce<" in p["sm90_kernel"], p
    assert p["sm90_workspace_bytes"] > 64 * 64 * 4 and p["sm90_tickets_offset"] == 64 * 64 * 4
    p = plan("wgrad", 64, 14, 14, 256, 256, 3)
    assert p["sm90_split"] == "pass" and p["sm90_splits"] == p["split_k"] > 1, p
    assert p["sm90_kernel_tree"] == 'tilefuse::epilogue::Store<"D", float, tilefuse::epilogue::Acc>'
    assert p["sm90_kernel"].count("tilefuse_jit::Epilogue") == 0 and p["sm90_k_per_split"] % 64 == 0
    assert p["sm90_workspace_bytes"] == p["sm90_splits"] * 256 * 2304 * 4
    assert plan("wgrad", 64, 7, 7, 512, 512, 3, split_reduction="pass")["sm90_kernel_tree"] in (
        "tilefuse_jit::Epilogue", 'tilefuse::epilogue::Store<"D", float, tilefuse::epilogue::Acc>')
    assert plan("fprop", 2, 8, 8, 4, 4, 3)["sm90_kernel"] == ""  # C = 4: the sm80 kernel


def test_split_k_model_through_the_planner():
    # wgrad of ResNet-50's first layers on the sm80 kernel: one or nine output tiles and a reduction over
    # N*P*Q = 200704.
    sm80 = (8, 0, 132)
    assert _plan("wgrad", 64, 56, 56, 64, 64, 1, sm80)["split_k"] == 128
    assert _plan("wgrad", 64, 56, 56, 64, 64, 3, sm80)["split_k"] == 29
    assert _plan("wgrad", 64, 7, 7, 512, 512, 3, sm80)["split_k"] == 1
    # The Hopper wgrad picks its own split by its wave model, and sums 12 or more in the kernel.
    plan = _plan("wgrad", 64, 56, 56, 64, 64, 1)
    assert plan["family"] == "sm90" and plan["split_k"] >= 12 and plan["split_in_kernel"], plan
    assert not _plan("wgrad", 64, 56, 56, 64, 64, 1, split_reduction="pass")["split_in_kernel"]


def test_planner_refuses_bad_values_with_a_sentence():
    with pytest.raises(ValueError, match="no Hopper conv tile named"):
        _plan("fprop", 1, 8, 8, 64, 64, 3, sm90_tile="huge")
    with pytest.raises(ValueError, match="not fprop, dgrad or wgrad"):
        _plan("forward", 1, 8, 8, 64, 64, 3)
    with pytest.raises(ValueError, match=r"C = 0 is not positive; set C to the number of input channels"):
        _plan("fprop", 1, 8, 8, 0, 64, 3)


def test_sources_name_the_kernel_of_each_family():
    tree = to_cpp(trace(lambda acc, bias: relu(acc + bias), acc=(100, 64), bias=(64,)), "bfloat16")
    sm80 = conv_source(tree, "bfloat16", "dgrad", "Sm80SmallConfig", aligned=False)
    assert "ImplicitGemmOperands<tilefuse::bfloat16_t, tilefuse::ConvMode::kDgrad, false>" in sm80.source
    assert sm80.name_expression == "&tilefuse::gemm::sm80::sm80_gemm_kernel<tilefuse_jit::Kernel>"
    assert sm80.layout_expression.endswith("tilefuse_jit::Epilogue, 80, tilefuse_jit::Epilogue>")
    sm90 = conv_source(tree, "float16", "fprop", "Sm90ConvMediumConfig")
    assert "conv::sm90::FpropKernel<tilefuse::half_t, Epilogue, tilefuse::conv::sm90::Sm90ConvMediumConfig>" in sm90.source
    assert sm90.layout_expression.endswith(", 90>")
    with pytest.raises(ValueError, match="aligned fprop only"):
        conv_source(tree, "bfloat16", "wgrad", "Sm90ConvLargeConfig")
    with pytest.raises(ValueError, match="operands"):
        conv_source(tree, "float32", "fprop")
    with pytest.raises(ValueError, match="mode"):
        conv_source(tree, "bfloat16", "backward")


@pytest.mark.parametrize("mode,config,aligned,arch", [("wgrad", "Sm80NarrowConfig", False, "sm_80"),
                                                      ("fprop", "Sm90ConvNarrowConfig", True, "sm_90a")])
def test_conv_kernels_compile_with_nvrtc(tmp_path, mode, config, aligned, arch):
    try:
        nvrtc.version()
    except NvrtcNotFoundError as error:
        pytest.skip(f"NVRTC is not available here: {error}")
    # (not a prebuilt epilogue, so the first call compiles)
    tree = to_cpp(trace(lambda acc, bias, residual: relu(acc + bias) + 2.0 * residual, acc=(100, 64), bias=(64,),
                        residual=(100, 64)), "bfloat16")
    kernel = conv_kernel(tree, "bfloat16", mode, config, aligned, arch=arch, cache_dir=tmp_path)
    assert not kernel.hit and kernel.cubin[:4] == b"\x7fELF"
    assert "conv_params_layout_kernel" in kernel.info["lowered_names"]["layout"]
    assert ("split_k_epilogue_kernel" in kernel.info["lowered_names"].get("split_k", "")) == config.startswith("Sm80")
    again = conv_kernel(tree, "bfloat16", mode, config, aligned, arch=arch, cache_dir=tmp_path)
    assert again.hit and again.cubin == kernel.cubin


@pytest.mark.parametrize("mode,problem,tree_kind", [("fprop", (64, 56, 56, 64, 256, 1), "residual"),
                                                     ("wgrad", (64, 14, 14, 256, 256, 3), "bias")])
def test_hopper_conv_kernels_compile_with_nvrtc(tmp_path, mode, problem, tree_kind):
    """The kernels the planner spells compile: fprop's im2col + TMA residual, wgrad's pass-reduced split."""
    try:
        nvrtc.version()
    except NvrtcNotFoundError as error:
        pytest.skip(f"NVRTC is not available here: {error}")
    n, h, w, c, k, r = problem
    m_, n_ = (n * h * w, k) if mode == "fprop" else (k, r * r * c)
    if tree_kind == "residual":
        tree = to_cpp(trace(lambda acc, bias, residual: relu(acc + bias + residual), acc=(m_, n_), bias=(n_,),
                            residual=(m_, n_)), "bfloat16")
    else:
        tree = to_cpp(trace(lambda acc, bias: acc + bias, acc=(m_, n_), bias=(n_,)), "bfloat16")
    from tilefuse.kernel_params import tree_facts
    facts = tree_facts(tree)
    plan = _C.plan_conv2d(mode, (n, h, w, c, k, r, r, r // 2, r // 2, 1, 1, 1, 1), "bfloat16", facts["reads_memory"],
                          facts["residual_by_tma"], (9, 0, 132), True, 0)
    assert plan["family"] == "sm90", plan
    kernel = conv_sm90_kernel(tree, plan["sm90_kernel"], plan["sm90_kernel_tree"], plan["sm90_split"],
                              cache_dir=tmp_path)
    assert kernel.cubin[:4] == b"\x7fELF" and "conv_params_layout_kernel" in kernel.info["lowered_names"]["layout"]
    assert ("split_k" in kernel.info["lowered_names"]) == (plan["sm90_split"] == "pass")
    source = conv_sm90_source(tree, plan["sm90_kernel"], plan["sm90_kernel_tree"], plan["sm90_split"])
    assert source.kernel_type.startswith("tilefuse::conv::sm90::") and "tilefuse_jit" not in source.kernel_type


def test_settings_are_checked_when_the_operation_is_made():
    with pytest.raises(ValueError, match="mode"):
        tilefuse.Conv2d("backward")
    with pytest.raises(ValueError, match="stride"):
        tilefuse.Conv2d(stride=(1, 2, 3))
    with pytest.raises(ValueError, match=">= 1"):
        tilefuse.Conv2d(stride=0)
    with pytest.raises(ValueError, match="kernel"):
        tilefuse.Conv2d(kernel="sm70")
    with pytest.raises(ValueError, match="layout"):
        tilefuse.Conv2d(layout="nchw")
    with pytest.raises(ValueError, match="split_k"):
        tilefuse.Conv2d("wgrad", split_k=0)
    with pytest.raises(ValueError, match="Hopper kernel: compile it for sm_90a"):
        conv_kernel("Store<D>", "bfloat16", "fprop", "Sm90ConvLargeConfig", arch="sm_80")


def test_problem_checks_name_the_inconsistent_sizes():
    from tilefuse.errors import TensorArgumentError

    fprop = tilefuse.Conv2d(stride=2, padding=1)
    p = fprop._problem((2, 16, 9, 9), (24, 16, 3, 3), None)
    assert (p.P, p.Q) == (5, 5) and p.gemm("fprop") == (50, 24, 144)
    with pytest.raises(TensorArgumentError, match="x has C = 16 channels"):
        fprop._problem((2, 16, 9, 9), (24, 8, 3, 3), None)
    with pytest.raises(TensorArgumentError, match="every size must be >= 1"):
        tilefuse.Conv2d()._problem((1, 4, 2, 2), (4, 4, 3, 3), None)
    with pytest.raises(TensorArgumentError, match="2\\^28"):
        tilefuse.Conv2d()._problem((1, 1, 1 << 28, 1), (1, 1, 1, 1), None)
    dgrad = tilefuse.Conv2d("dgrad", stride=2, padding=1)
    assert (dgrad._problem((2, 24, 5, 5), (24, 16, 3, 3), None).H) == 9  # the smallest input giving 5 x 5
    assert (dgrad._problem((2, 24, 5, 5), (24, 16, 3, 3), (2, 16, 10, 10)).H) == 10
    with pytest.raises(TensorArgumentError, match="input_size"):
        dgrad._problem((2, 24, 5, 5), (24, 16, 3, 3), (2, 16, 10.0, 10))
    with pytest.raises(TensorArgumentError, match="gives 4 x 4"):
        dgrad._problem((2, 24, 5, 5), (24, 16, 3, 3), (2, 16, 7, 7))
    # run(dy, w, input_size=...) with the size dgrad infers anyway is the call without it (the C++ warm path)
    class Shaped:
        def __init__(self, *shape):
            self.shape = shape

    for geo, dy in (((2, 1, 1), (2, 24, 5, 5)), ((1, 0, 1), (3, 24, 7, 6)), ((2, 3, 2), (1, 24, 4, 9))):
        conv = tilefuse.Conv2d("dgrad", stride=geo[0], padding=geo[1], dilation=geo[2])
        problem = conv._problem(dy, (24, 16, 3, 3), None)
        assert conv._implied_input_size(Shaped(*dy), Shaped(24, 16, 3, 3)) == (dy[0], 16, problem.H, problem.W)
    assert tilefuse.Conv2d("fprop")._implied_input_size(Shaped(1, 8, 4, 4), Shaped(8, 8, 1, 1)) is None
    # only a size of ints that equals the inferred one is dropped: anything else reaches _problem's checks
    dgrad1 = tilefuse.Conv2d("dgrad", stride=2, padding=1)
    dy, w = Shaped(2, 24, 5, 5), Shaped(24, 16, 3, 3)
    assert dgrad1._given_input_size(dy, w, (2, 16, 9, 9)) is None
    assert dgrad1._given_input_size(dy, w, [2, 16, 9, 9]) is None
    assert dgrad1._given_input_size(dy, w, (2, 16, 10, 10)) == (2, 16, 10, 10)
    assert dgrad1._given_input_size(dy, w, (2, 16, 9.0, 9)) == (2, 16, 9.0, 9)
    wgrad = tilefuse.Conv2d("wgrad", padding=1, kernel_size=3)
    assert wgrad._problem((2, 24, 9, 9), (2, 16, 9, 9), None).gemm("wgrad") == (24, 144, 162)
    with pytest.raises(TensorArgumentError, match="kernel_size"):
        tilefuse.Conv2d("wgrad")._problem((2, 24, 9, 9), (2, 16, 9, 9), None)


def test_split_k_lanes_matches_the_kernel_rule():
    # gemm::split_k_lanes: powers of two up to one warp, no more than the splits need, and no more
    # than it takes to reach 2^17 threads. The kernel derives the same count; the launch sizes its grid by it.
    from tilefuse.conv2d import split_k_lanes
    assert split_k_lanes(512, 131) == 32      # wgrad 64 x 64 outputs, 131 splits: a warp per vector
    assert split_k_lanes(8192, 33) == 16      # 512 x 128 outputs: 2^17 threads reached at 16
    assert split_k_lanes(8192, 3) == 4        # 3 splits: 4 lanes, one of them idle
    assert split_k_lanes(300000, 4) == 1      # enough vectors to fill the GPU one thread each
    assert split_k_lanes(10, 1) == 1


def test_describe_is_the_planners_text():
    """describe() asks the plan tilefuse._C made for conv::Conv2d::describe()'s text: the plan's reasons, with the
    stages and schedule the compiled kernel reports (here made up, to see that they are the ones said)."""
    plan = _plan("fprop", 64, 56, 56, 64, 64, 3)
    hopper = plan["describe"](stages=7, ping_pong=True, tma_aux=False)
    assert hopper.startswith("sm90 TMA + WGMMA implicit-GEMM conv2d fprop (GEMM 200704 x 64 x 576; "
                             "warp-specialized, persistent, ping-pong)"), hopper
    assert "7 stages" in hopper and plan["why_tile"] in hopper and plan["why_source"] in hopper, hopper
    cooperative = plan["describe"](stages=4, ping_pong=False, tma_aux=False)
    assert "ping-pong" not in cooperative.split("tile")[0] and "4 stages" in cooperative, cooperative
    strided = _C.plan_conv2d("dgrad", (8, 16, 16, 64, 64, 3, 3, 1, 1, 2, 2, 1, 1), "bfloat16", False, False,
                             (9, 0, 132), True, 0)
    sm80 = strided["describe"](stages=0, ping_pong=False, tma_aux=False)
    assert sm80.startswith("sm80 mma.sync implicit-GEMM conv2d dgrad") and "[Hopper kernel not used: " in sm80, sm80
    assert "the strides are 2x2" in sm80, sm80
