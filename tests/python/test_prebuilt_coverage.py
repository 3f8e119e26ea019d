"""Cold start (no GPU needed): every kernel that a torchvision-shaped ResNet-50 asks for on an H100 is in the
prebuilt set, so its first forward compiles nothing: inference through the torch.compile backend (BatchNorm
folded: conv + bias + ReLU, conv + bias + shortcut + ReLU, conv + bias) and a training step through tilefuse.nn
(fprop without epilogue, dgrad, wgrad), at batch sizes that are and are not tile multiples. Each call is planned
as Conv2d's first call plans it, with the H100's device facts: the RGB stem padded to the planner's channels, the
calls the planner composes of other kernels (a strided dgrad by phases, the stem's wgrad by im2col + GEMM) taken
apart into those kernels, the others by Conv2d._plan; the conv and GEMM JITs are replaced by recorders."""
import pytest

torch = pytest.importorskip("torch")

import tilefuse  # noqa: E402
from tilefuse import _C, tensors  # noqa: E402
from tilefuse import conv2d as conv_module  # noqa: E402
from tilefuse import gemm as gemm_module  # noqa: E402
from tilefuse import jit as jit_package  # noqa: E402
from tilefuse.conv2d_im2col import Im2colWgrad  # noqa: E402
from tilefuse.conv2d_phases import PhasedDgrad  # noqa: E402
from tilefuse.epilogue.common import fused  # noqa: E402
from tilefuse.jit.prebuilt import common_kernels  # noqa: E402

H100 = (132, 9, 0)  # SMs, major, minor
CL = torch.channels_last


def resnet50_convs(n):
    """(N, H, W, C, K, R, stride, padding, role) of each conv of torchvision's ResNet-50 at 224 x 224."""
    convs = [(n, 224, 224, 3, 64, 7, 2, 3, "stem")]
    h, cin = 56, 64
    for stage, (blocks, width) in enumerate(zip((3, 4, 6, 3), (64, 128, 256, 512))):
        for i in range(blocks):
            stride = 2 if i == 0 and stage > 0 else 1
            out = h // stride
            convs += [(n, h, h, cin, width, 1, 1, 0, "reduce"), (n, h, h, width, width, 3, stride, 1, "middle"),
                      (n, out, out, width, 4 * width, 1, 1, 0, "expand")]
            if i == 0:
                convs.append((n, h, h, cin, 4 * width, 1, stride, 0, "downsample"))
            h, cin = out, 4 * width
    return convs


def meta(*shape, memory_format=CL):
    return torch.empty(shape, dtype=torch.bfloat16, device="meta").contiguous(memory_format=memory_format)


class _Recorded(Exception):
    """Raised by the GEMM JIT's recorders: the job is noted, nothing is built (planning stops there)."""


@pytest.fixture
def requested(monkeypatch):
    """The kernels a first call asks the JITs for, as prebuilt jobs, on an H100 (nothing is compiled)."""
    jobs = []

    def sm80(tree_text, mode, family, config, tile, element, aligned, arch, graph, tree):
        jobs.append(("conv80", tree_text, element, mode, config, aligned, arch))

    def sm90(tree_text, mode, planned, element, graph, tree):
        jobs.append(("conv90", tree_text, planned["sm90_kernel"], planned["sm90_kernel_tree"], planned["sm90_split"]))

    def gemm(tree, element, config, element_b=None):
        jobs.append(("gemm", str(tree), element, config))
        raise _Recorded

    def skinny(tree, element, arch=None):
        jobs.append(("skinny", str(tree), element))
        raise _Recorded

    monkeypatch.setattr(conv_module, "device_properties", lambda device: H100)
    monkeypatch.setattr(gemm_module, "device_properties", lambda device: H100)
    monkeypatch.setattr(tensors, "CUDA_DEVICE_TYPES", tensors.CUDA_DEVICE_TYPES + ("meta",))  # the GEMM's checks
    monkeypatch.setattr(conv_module, "_compiled", sm80)
    monkeypatch.setattr(conv_module, "_compiled_sm90", sm90)
    monkeypatch.setattr(jit_package, "gemm_kernel", gemm)
    monkeypatch.setattr(jit_package, "gemm_skinny_kernel", skinny)
    return jobs


def stem_channels():
    """The stem's channels as tilefuse.nn and the backend run it: 3 padded to what the planner asks for."""
    return 3 + _C.conv_channels_to_pad(3, 64, "bfloat16")


def plan(jobs, mode, conv, epilogue=None, composed=None, **arguments):
    """Plans one ResNet-50 conv as Conv2d's first call does (meta tensors: shapes, strides and 16-byte alignment
    only). jobs: the `requested` fixture's list, which the call must add at least one kernel to (a call that asked
    the JITs for nothing at planning time, say one that compiles on its first run, would be checked for nothing).
    composed: a list that gets the type name of each call the planner composes of other kernels."""
    before = len(jobs)
    _plan(mode, conv, epilogue, composed, **arguments)
    assert len(jobs) > before, f"{mode} {conv} asked the JITs for no kernel: the coverage check saw nothing of it"


def _plan(mode, conv, epilogue, composed, **arguments):
    n, h, w, c, k, r, stride, padding, role = conv
    op = tilefuse.Conv2d(mode, stride=stride, padding=padding, epilogue=epilogue,
                         kernel_size=(r, r) if mode == "wgrad" else None)
    p = q = (h + 2 * padding - r) // stride + 1
    x, weight, dy = meta(n, c, h, w), meta(k, c, r, r), meta(n, k, p, q)
    a, b = {"fprop": (x, weight), "dgrad": (dy, weight), "wgrad": (dy, x)}[mode]
    problem = op._problem(tuple(a.shape), tuple(b.shape), (n, c, h, w) if mode == "dgrad" else None)
    matrices = op._epilogue_arguments(arguments, problem)
    zero_channels = c - 3 if role == "stem" and mode == "wgrad" else 0  # tilefuse.nn's padded stem
    call = op._composed(a, b, problem, "bfloat16", 0, matrices, zero_channels)
    if call is None:
        op._plan(a, b, problem, "bfloat16", 0, matrices)
    elif isinstance(call, PhasedDgrad):  # one stride-1 fprop per phase
        for phase, sub in zip(call.phases, call.filters(weight)):
            phase.conv._plan(dy, sub, phase.conv._problem(tuple(dy.shape), tuple(sub.shape), None), "bfloat16", 0, {})
    else:  # Im2colWgrad: dy packed K-major, x gathered, then the GEMM
        assert isinstance(call, Im2colWgrad), type(call)
        with pytest.raises(_Recorded):
            call.gemm_plan(dy, x)
    if call is not None and composed is not None:
        composed.append(type(call).__name__)


@pytest.mark.parametrize("batch", [1, 3, 64, 128])
def test_resnet50_needs_only_prebuilt_kernels(requested, batch):
    prebuilt = {tuple(job) for job in common_kernels()}
    composed = []
    for conv in resnet50_convs(batch):
        if conv[-1] == "stem":
            conv = conv[:3] + (stem_channels(),) + conv[4:]
        n, _, _, _, k, r, stride, padding, role = conv
        p = (conv[1] + 2 * padding - r) // stride + 1
        bias = meta(k, memory_format=torch.contiguous_format)
        # inference through the backend (BatchNorm folded into a bias)
        if role == "expand":
            plan(requested, "fprop", conv, fused("relu", True, True, residual_first=True), bias=bias,
                 residual=meta(n, k, p, p))
        elif role == "downsample":
            plan(requested, "fprop", conv, fused("none", True, False), bias=bias)
        else:
            plan(requested, "fprop", conv, fused("relu", True, False), bias=bias)
        # training through tilefuse.nn.Conv2d (BatchNorm stays torch's): fprop, dgrad (not the stem's), wgrad
        plan(requested, "fprop", conv)
        if role != "stem":
            plan(requested, "dgrad", conv, composed=composed)
        plan(requested, "wgrad", conv, composed=composed)
    # The paths a test that stopped taking them apart would miss: phases of the strided dgrads, the stem's im2col.
    assert "PhasedDgrad" in composed and "Im2colWgrad" in composed, composed
    assert {("pack", "bfloat16"), ("gather", "bfloat16")} <= prebuilt  # the im2col wgrad's own two kernels
    missing = []
    for job in requested:
        key = job[:-1] if job[0] == "conv80" else job
        if job[0] == "conv80" and job[-1] != "sm_90a" or key not in prebuilt:
            missing.append(job)
    assert not missing, f"{len(missing)} of {len(requested)} requested kernels are not prebuilt, e.g. {missing[:3]}"


@pytest.mark.parametrize("batch", [1, 8, 64])
def test_vit_b16_linears_need_only_prebuilt_tiles(batch):
    """ViT-B/16's linears (the MLP's, the attention's projections, the head) at 197 tokens a sample: the tile
    the planner picks on an H100 is one the prebuilt set builds for the linear op's epilogues."""
    from tilefuse import _C
    from tilefuse.gemm import plan_gemm

    kinds = {kind for kind, *_ in common_kernels()}
    m = 197 * batch
    for n, k in ((3072, 768), (768, 3072), (2304, 768), (768, 768), (1000, 768)):
        rows = batch if n == 1000 else m  # the head reads the class token only
        plan = plan_gemm(rows, n, k, 1, (9, 0, 132))
        if plan["family"] == "skinny":  # the head at batch <= 8
            assert rows <= 8 and "skinny" in kinds, (rows, n, k)
        else:
            assert plan["config"] in _C.gemm_sm90_config_choices(False), (rows, n, k, plan["config"])
