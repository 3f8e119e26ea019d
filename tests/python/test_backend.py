"""tilefuse.backend (torch.compile(backend="tilefuse")) on a machine without a GPU: the backend is found by
name, and its graph pass rewrites conv chains (BatchNorm folded, activation, residual before or after it)
into tilefuse ops and leaves what it cannot take, saying why. The rewritten graph runs here on CPU kernels
registered for the tilefuse ops for the test only (torch's conv and the same epilogue), against the model."""
import pytest

torch = pytest.importorskip("torch")

import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import tilefuse.backend as tb  # noqa: E402

CL = torch.channels_last
ACT = {"none": lambda z: z, "relu": torch.relu, "silu": F.silu, "gelu": F.gelu, "sigmoid": torch.sigmoid,
       "hardswish": F.hardswish, "relu6": F.relu6,
       "gelu_tanh": lambda z: F.gelu(z, approximate="tanh")}


class Block(nn.Module):
    """A ResNet bottleneck's shape: conv-BN-ReLU, conv-BN + shortcut -> ReLU, a grouped conv, a bare conv."""

    def __init__(self, c=16):
        super().__init__()
        # c -> 2c -> c: a fold that scaled the weight by input channel instead of output channel fails to broadcast
        self.c1, self.b1 = nn.Conv2d(c, 2 * c, 3, padding=1, bias=False), nn.BatchNorm2d(2 * c)
        self.c2, self.b2 = nn.Conv2d(2 * c, c, 1, bias=False), nn.BatchNorm2d(c)
        self.c3 = nn.Conv2d(c, c, 3, padding=1, groups=4)
        self.c4 = nn.Conv2d(c, c, 1, bias=False)
        self.c5 = nn.Conv2d(c, c, 1)

    def forward(self, x):
        y = torch.relu(self.b1(self.c1(x)))
        y = torch.relu(self.b2(self.c2(y)) + x)
        y = self.c3(y)
        y = self.c4(y)
        return F.gelu(self.c5(y)) + x


def capture(model, x):
    """The Dynamo graph and example inputs the backend would get, captured on CPU."""
    seen = {}

    def grab(gm, example_inputs):
        seen["gm"], seen["inputs"] = gm, example_inputs
        return gm.forward

    torch._dynamo.reset()
    torch.compile(model, backend=grab)(x)
    return seen["gm"], seen["inputs"]


@pytest.fixture
def cpu_kernels():
    """CPU kernels for the tilefuse conv ops, this test only: torch's conv and the same epilogue."""
    def conv2d(x, w, b, r, stride, padding, dilation, activation="none", layout="require"):
        assert layout == "convert" or w.is_contiguous(memory_format=CL), "the real kernel needs a channels-last weight"
        y = ACT[activation](F.conv2d(x, w, b, stride, padding, dilation))
        return (y + r if r is not None else y).contiguous(memory_format=CL)

    def add_act(x, w, b, r, stride, padding, dilation, activation="none"):
        assert w.is_contiguous(memory_format=CL), "the real kernel needs a channels-last weight"
        return ACT[activation](F.conv2d(x, w, b, stride, padding, dilation) + r).contiguous(memory_format=CL)

    def inference(x, w, b, r, stride, padding, dilation, activation, residual_first):
        return (add_act if residual_first else conv2d)(x, w, b, r, stride, padding, dilation, activation)

    with torch.library._scoped_library("tilefuse", "IMPL") as lib:
        lib.impl("conv2d", conv2d, "CPU")
        lib.impl("conv2d_add_act", add_act, "CPU")
        lib.impl("conv2d_inference", inference, "CPU")
        lib.impl("linear_inference", reference_linear, "CPU")
        yield


def randomize_batch_norms(model):
    """Statistics and affine parameters far from the identity, so that a fold with a wrong scale shows."""
    for bn in (m for m in model.modules() if isinstance(m, nn.BatchNorm2d)):
        bn.running_mean.uniform_(-0.5, 0.5), bn.running_var.uniform_(0.1, 4.0)
        bn.weight.data.uniform_(0.2, 3.0), bn.bias.data.uniform_(-0.5, 0.5)


def assert_close(got, want):
    """bf16 on both sides (folded weights round differently): the largest error within 1.5% of the largest
    output. A per-element rtol would let a wrong per-channel scale through on the large outputs."""
    error, scale = (got.float() - want.float()).abs().max().item(), want.float().abs().max().item()
    assert error <= 1.5e-2 * scale, (error, scale)


def reference_linear(x, w, b, r, activation="none"):
    y = ACT[activation](F.linear(x, w, b))
    return y + r if r is not None else y


def test_the_backend_is_found_by_name():
    assert torch._dynamo.lookup_backend("tilefuse") is tb.backend


def test_inference_chains_fold_batch_norm_and_fuse(cpu_kernels):
    torch.manual_seed(0)
    model = Block().eval()
    randomize_batch_norms(model)
    model = model.to(torch.bfloat16).to(memory_format=CL)
    x = torch.randn(2, 16, 9, 9).to(torch.bfloat16).contiguous(memory_format=CL)
    with torch.no_grad():
        gm, inputs = capture(model, x)
        decisions = tb.fuse(gm, inputs, require_cuda=False)
        by_chain = {d.chain: d for d in decisions}
        assert by_chain["conv -> BatchNorm -> relu"].fused
        assert by_chain["conv -> BatchNorm -> + residual -> relu"].fused
        assert "BatchNorm folded" in by_chain["conv -> BatchNorm -> + residual -> relu"].why
        assert by_chain["conv -> gelu -> + residual"].fused
        kept = [d for d in decisions if not d.fused]
        assert {d.why.split(":")[0] for d in kept} == {"groups = 4", "a bare conv"}, [str(d) for d in decisions]
        targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
        fused = [n for n in gm.graph.nodes if n.target is torch.ops.tilefuse.conv2d_inference.default]
        assert [n.args[-1] for n in fused] == [False, True, False]  # residual first: only the BN block's
        assert F.batch_norm not in targets
        got = gm(*inputs)[0]
        want = model(x)
    # bf16: the folded weights round differently from BatchNorm applied after the conv
    assert_close(got, want)


def test_the_rewritten_graph_compiles_with_inductor(cpu_kernels):
    """What the backend hands to Inductor compiles and runs: the folded weights are constants of the graph, not
    buffers AOTAutograd would look for among Dynamo's sources."""
    from torch._inductor.compile_fx import compile_fx

    torch.manual_seed(1)
    model = Block().eval()
    randomize_batch_norms(model)
    model = model.to(torch.bfloat16).to(memory_format=CL)
    x = torch.randn(2, 16, 9, 9).to(torch.bfloat16).contiguous(memory_format=CL)
    with torch.no_grad():
        gm, inputs = capture(model, x)
        assert sum(d.fused for d in tb.fuse(gm, inputs, require_cuda=False)) == 3
        got = compile_fx(gm, inputs)(*inputs)[0]
        want = model(x)
    assert_close(got, want)


@pytest.mark.parametrize("freezing", [False, True])
def test_torch_compile_through_the_backend(cpu_kernels, freezing, caplog):
    """The whole path a user takes (Dynamo, the pass, AOTAutograd, Inductor), on CPU: with Inductor's freezing
    the parameters reach the pass as attributes of the graph, without it as inputs; the folded BatchNorm is
    right either way, and stays right when the parameters change (without freezing)."""
    import functools
    import logging

    import torch._inductor.config as inductor_config

    torch.manual_seed(2)
    model = Block().eval()
    randomize_batch_norms(model)
    model = model.to(torch.bfloat16).to(memory_format=CL)
    x = torch.randn(2, 16, 9, 9).to(torch.bfloat16).contiguous(memory_format=CL)
    torch._dynamo.reset()
    backend = functools.partial(tb.backend, measure=False, require_cuda=False)
    with torch.no_grad(), inductor_config.patch(freezing=freezing), \
            caplog.at_level(logging.INFO, logger="tilefuse.backend"):
        compiled = torch.compile(model, backend=backend)
        got, want = compiled(x), model(x)
        assert "3 of 5 conv and linear chains fused" in caplog.text, caplog.text
        assert_close(got, want)
        if not freezing:
            model.b1.running_var.mul_(4.0)
            got, want = compiled(x), model(x)
            assert_close(got, want)


def test_training_graphs_keep_batch_norm(cpu_kernels):
    model = Block().to(torch.bfloat16).to(memory_format=CL)  # train mode, grad on
    x = torch.randn(2, 16, 9, 9).to(torch.bfloat16).contiguous(memory_format=CL)
    gm, inputs = capture(model, x)
    decisions = tb.fuse(gm, inputs, require_cuda=False)
    bn_chains = [d for d in decisions if "BatchNorm" in d.chain]
    assert bn_chains and not any(d.fused for d in bn_chains)
    assert "frozen parameters" in bn_chains[0].why
    assert any(d.fused for d in decisions if d.chain == "conv -> gelu -> + residual")


def test_cpu_and_non_channels_last_graphs_go_to_inductor_untouched():
    model = Block().eval().to(torch.bfloat16)
    x = torch.randn(2, 16, 9, 9).to(torch.bfloat16)
    with torch.no_grad():
        gm, inputs = capture(model, x)
        before = str(gm.graph)
        decisions = tb.fuse(gm, inputs)  # CPU tensors: no kernel
        assert not any(d.fused for d in decisions) and "CUDA" in decisions[0].why
        decisions = tb.fuse(gm, inputs, require_cuda=False)  # NCHW
        assert not any(d.fused for d in decisions) and all(
            "channels-last" in d.why or "groups" in d.why for d in decisions)
        assert str(gm.graph) == before


def test_each_chain_goes_to_whichever_measures_faster_and_is_remembered(cpu_kernels, tmp_path):
    """Chooser: tilefuse's call against torch's ops, timed once per chain and shape, kept on disk."""
    model = Block().eval().to(torch.bfloat16).to(memory_format=CL)
    x = torch.randn(2, 16, 9, 9).to(torch.bfloat16).contiguous(memory_format=CL)
    timed = []

    def timer(ours, theirs):  # (host ms, GPU ms): tilefuse's call 1 and 1, torch's 2 and 2
        timed.append((ours.__name__, theirs.__name__))
        ours(), theirs()
        return (1.0, 1.0), (2.0, 2.0)

    path = tmp_path / "choices.json"
    with torch.no_grad():
        gm, inputs = capture(model, x)
        decisions = tb.fuse(gm, inputs, require_cuda=False, chooser=tb.Chooser(str(path), timer))
    assert timed and path.exists()
    with_bn = [d for d in decisions if d.chain.startswith("conv -> BatchNorm")]
    assert with_bn and all(d.fused and "tilefuse 1.0000 ms GPU, 1.0000 ms host; torch 2.0000 ms GPU" in d.why
                           for d in with_bn), [str(d) for d in decisions]

    def never(ours, theirs):
        raise AssertionError("a remembered chain was timed again")

    with torch.no_grad():
        gm, inputs = capture(model, x)
        again = tb.fuse(gm, inputs, require_cuda=False, chooser=tb.Chooser(str(path), never))
    assert [d.fused for d in again] == [d.fused for d in decisions]

    def slower(ours, theirs):
        ours(), theirs()
        return (3.0, 3.0), (2.0, 2.0)

    with torch.no_grad():
        gm, inputs = capture(model, x)
        lost = tb.fuse(gm, inputs, require_cuda=False, chooser=tb.Chooser(str(tmp_path / "other.json"), slower))
    assert not any(d.fused for d in lost)
    assert any("torch's ops measured faster" in d.why for d in lost)


def timing(ours, theirs):
    """A chain's timings as the Chooser keeps them: (host ms, GPU ms) of tilefuse's call and of torch's."""
    return {"tilefuse": ours, "torch": theirs}


def test_a_host_bound_graph_keeps_the_cheaper_calls_and_a_gpu_bound_one_the_faster_kernels(tmp_path):
    chooser = tb.Chooser(str(tmp_path / "c.json"), timer=None)
    # Host-bound (host 0.04 ms a call, GPU 0.01): a faster kernel with a dearer call would lengthen the forward,
    # and so would one whose call the race measured a little cheaper (it costs more in a compiled graph).
    small = [timing((0.045, 0.008), (0.040, 0.010))] * 4
    assert chooser.choose(small) == [False] * 4
    assert chooser.choose([timing((0.0305, 0.006), (0.0320, 0.010))] * 4) == [False] * 4
    # GPU-bound: the faster kernels are taken while the host stays under the GPU's time; a cheaper call on
    # the host gains nothing there, and a gain within the margin (5% of the chain's time) is a tie: Inductor's.
    large = [timing((0.045, 0.30), (0.040, 0.45)), timing((0.045, 0.50), (0.040, 0.40)),
             timing((0.030, 0.20), (0.040, 0.20)), timing((0.040, 0.195), (0.040, 0.20))]
    assert chooser.choose(large) == [True, False, False, False]
    # Taking both GPU-faster chains would make the host the bound (tilefuse's host time counts 1.6 times: host
    # 0.128 > GPU 0.09; one taken: 0.094 and 0.105): one is taken.
    tight = [timing((0.040, 0.045), (0.030, 0.060))] * 2
    assert chooser.choose(tight) == [True, False]
    # From a CUDA graph the host's time is not paid per call: GPU time alone.
    replayed = tb.Chooser(str(tmp_path / "c.json"), timer=None, graphs=True)
    assert replayed.choose(small) == [True] * 4
    assert replayed.choose(tight) == [True, True]


def ops_called(fn, inputs):
    """(fn(*inputs), the tilefuse ops it called), by torch.profiler."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        out = fn(*inputs)
    return out, {e.name for e in prof.events() if e.name.startswith("tilefuse::")}


class Pick(tb.Chooser):
    """A chooser that takes the chains given, by position, without timing anything."""

    def __init__(self, pattern, graph_ms=(1.0, 2.0)):
        self.pattern, self.known, self.graphs = pattern, {}, False
        self.graph_ms, self.raced = graph_ms, []

    def graph_timer(self, fused, alone, inputs):  # (with tilefuse, Inductor alone) ms; both must run
        self.raced.append(tuple(ops_called(fn, inputs) for fn in (fused, alone)))
        return self.graph_ms


    def timings(self, signature, race):
        return timing((1.0, 1.0), (1.0, 1.0))

    def choose(self, timings):
        return [self.pattern[i % len(self.pattern)] for i in range(len(timings))]

    def save(self):
        pass


class Downsample(nn.Module):
    """A torchvision bottleneck's order: conv3 -> BN3, then the shortcut's conv -> BN, then their sum -> ReLU
    (the add could end either chain; conv3's, first in the graph, takes it)."""

    def __init__(self, c=16):
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)
        self.c3, self.b3 = nn.Conv2d(c, 2 * c, 1, bias=False), nn.BatchNorm2d(2 * c)
        self.cd, self.bd = nn.Conv2d(c, 2 * c, 1, bias=False), nn.BatchNorm2d(2 * c)

    def forward(self, x):
        y = self.b3(self.c3(torch.relu(self.b1(self.c1(x)))))
        return torch.relu(y + self.bd(self.cd(x)))


@pytest.mark.parametrize("pattern", [[True], [True, False], [False, True]])
@pytest.mark.parametrize("blocks", [(Block, Block), (Downsample, lambda: Block(32))], ids=["blocks", "downsample"])
def test_chains_that_read_each_other_are_right_whichever_are_taken(cpu_kernels, pattern, blocks):
    """The rewrite happens after every chain is chosen: a chain whose input or residual is another chain's
    output reads the fused op where that chain was taken, the original node where it was kept; no two chains
    share a node."""
    torch.manual_seed(4)
    model = nn.Sequential(*(block() for block in blocks)).eval()
    randomize_batch_norms(model)
    model = model.to(torch.bfloat16).to(memory_format=CL)
    x = torch.randn(2, 16, 9, 9).to(torch.bfloat16).contiguous(memory_format=CL)
    with torch.no_grad():
        gm, inputs = capture(model, x)
        decisions = tb.fuse(gm, inputs, require_cuda=False, chooser=Pick(pattern))
        candidates = [d for d in decisions if "groups" not in d.why and "bare" not in d.why]
        assert [d.fused for d in candidates] == [pattern[i % len(pattern)] for i in range(len(candidates))]
        if blocks[0] is Downsample:
            assert [d.chain for d in candidates[:3]] == ["conv -> BatchNorm -> relu",
                                                         "conv -> BatchNorm -> + residual -> relu",
                                                         "conv -> BatchNorm"], [str(d) for d in decisions]
        assert_close(gm(*inputs)[0], model(x))


@pytest.mark.parametrize("how", [dict(mode="reduce-overhead"), dict(options={"triton.cudagraphs": True}), {}])
def test_torch_compile_modes_reach_inductor_and_the_chooser(cpu_kernels, monkeypatch, how):
    """torch.compile(model, backend="tilefuse", mode=...) works as with Inductor; with CUDA graphs on, the
    chooser compares GPU time alone."""
    import torch._inductor.config as inductor_config

    seen = {}

    class Recorder(Pick):
        def __init__(self, graphs=False):
            super().__init__([True])
            seen["graphs"] = graphs

    monkeypatch.setattr(tb, "Chooser", Recorder)
    model = Block().eval().to(torch.bfloat16).to(memory_format=CL)
    x = torch.randn(2, 16, 9, 9).to(torch.bfloat16).contiguous(memory_format=CL)
    torch._dynamo.reset()
    import functools

    with torch.no_grad(), inductor_config.patch(freezing=True):
        got = torch.compile(model, backend=functools.partial(tb.backend, require_cuda=False), **how)(x)
        assert_close(got, model(x))
    assert seen["graphs"] == bool(how)


@pytest.mark.parametrize("faster", ["inductor", "own ops"])
def test_replayed_graphs_race_inductor_against_the_graphs_own_ops(cpu_kernels, monkeypatch, caplog, faster):
    """With CUDA graphs and freezing, the backend replays a frozen graph from its own CUDA graph; measuring, it
    captures Inductor's forward and the rewritten graph's own ops (no Inductor), times both replays and keeps the
    faster; the log says which. (On CPU the replays run uncaptured: what is checked is the race and the answer.)"""
    import functools
    import logging

    import torch._inductor.config as inductor_config

    from tilefuse.backend_graphs import ReplayedGraph

    made = []
    monkeypatch.setattr(tb, "ReplayedGraph", lambda compiled, **kw: made.append(ReplayedGraph(compiled, **kw)) or made[-1])
    torch.manual_seed(7)
    model = Block().eval()
    randomize_batch_norms(model)
    model = model.to(torch.bfloat16).to(memory_format=CL)
    x = torch.randn(2, 16, 9, 9).to(torch.bfloat16).contiguous(memory_format=CL)
    chooser = Pick([True], graph_ms=(1.0, 2.0) if faster == "inductor" else (2.0, 1.0))
    torch._dynamo.reset()
    backend = functools.partial(tb.backend, require_cuda=False, chooser=chooser)
    with torch.no_grad(), inductor_config.patch(freezing=True), \
            caplog.at_level(logging.INFO, logger="tilefuse.backend"):
        got = torch.compile(model, backend=backend, mode="reduce-overhead")(x)
        want = model(x)
    assert len(chooser.raced) == 1 and len(made) == 2, (chooser.raced, made)
    (inductor_out, inductor_ops), (own_out, own_ops) = chooser.raced[0]
    assert inductor_ops == own_ops == {"tilefuse::conv2d_inference"}, (inductor_ops, own_ops)
    assert made[1].compiled.__class__.__name__ == "GraphModule"  # the own ops: the rewritten graph, run as it is
    assert_close(inductor_out[0], want)
    assert_close(own_out[0], want)
    assert_close(got, want)
    kept = "the own ops kept" if faster == "own ops" else "Inductor kept"
    assert "replayed from one CUDA graph: " in caplog.text and kept in caplog.text, caplog.text


def test_a_replay_race_that_fails_keeps_inductors_forward(cpu_kernels, caplog):
    """If running or capturing the graph's own ops fails, the compile still succeeds with Inductor's forward (as
    before the race), and the log says why."""
    import functools
    import logging

    import torch._inductor.config as inductor_config

    class Failing(Pick):
        def graph_timer(self, inductor, own, inputs):
            raise RuntimeError("no capture here")

    model = Block().eval().to(torch.bfloat16).to(memory_format=CL)
    x = torch.randn(2, 16, 9, 9).to(torch.bfloat16).contiguous(memory_format=CL)
    torch._dynamo.reset()
    backend = functools.partial(tb.backend, require_cuda=False, chooser=Failing([True]))
    with torch.no_grad(), inductor_config.patch(freezing=True), \
            caplog.at_level(logging.INFO, logger="tilefuse.backend"):
        got = torch.compile(model, backend=backend, mode="reduce-overhead")(x)
        assert_close(got, model(x))
    assert "the graph's own ops failed: RuntimeError: no capture here" in caplog.text, caplog.text


class Mlp(nn.Module):
    def __init__(self, d=32):
        super().__init__()
        self.up, self.down, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d), nn.Linear(d, d)

    def forward(self, x):
        y = self.down(F.gelu(self.up(x))) + x  # linear -> gelu, then linear -> + residual
        return self.out(y)                     # a bare linear: left to Inductor


def test_linear_chains_fuse(cpu_kernels):
    torch.manual_seed(0)
    model = Mlp().eval().to(torch.bfloat16)
    x = torch.randn(4, 8, 32).to(torch.bfloat16)
    with torch.no_grad():
        gm, inputs = capture(model, x)
        decisions = tb.fuse(gm, inputs, require_cuda=False)
        by_chain = {d.chain: d for d in decisions}
        assert by_chain["linear -> gelu"].fused and by_chain["linear -> + residual"].fused
        assert not by_chain["linear"].fused and "nothing to fuse" in by_chain["linear"].why
        targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
        assert targets.count(torch.ops.tilefuse.linear_inference.default) == 2
        got, want = gm(*inputs)[0], model(x)
    assert torch.allclose(got.float(), want.float(), rtol=2e-2, atol=2e-2), (got - want).abs().max()


class SharedOutput(nn.Module):
    """A conv (no bias) whose output feeds both its BatchNorm and an add of another branch."""

    def __init__(self, c=16):
        super().__init__()
        self.conv, self.bn = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)

    def forward(self, x):
        y = self.conv(x)
        return torch.relu(self.bn(y)) + y


def test_a_value_used_twice_ends_its_chain_and_the_log_says_so(cpu_kernels):
    """The chain walk stops at a value with several users (swallowing it would lose what the others read); where
    that leaves a bare conv, the reason names the users, not "nothing to fuse" alone. The output stays right."""
    torch.manual_seed(8)
    model = SharedOutput().eval()
    randomize_batch_norms(model)
    model = model.to(torch.bfloat16).to(memory_format=CL)
    x = torch.randn(2, 16, 9, 9).to(torch.bfloat16).contiguous(memory_format=CL)
    with torch.no_grad():
        gm, inputs = capture(model, x)
        decisions = tb.fuse(gm, inputs, require_cuda=False, chooser=Pick([True]))
        conv = [d for d in decisions if d.chain == "conv"]
        assert len(conv) == 1 and not conv[0].fused, [str(d) for d in decisions]
        assert "its output is used twice, by" in conv[0].why and "a chain ends there" in conv[0].why, conv[0].why
        assert_close(gm(*inputs)[0], model(x))


def test_a_new_batch_size_recompiled_with_dynamic_shapes_is_raced_on_real_sizes(cpu_kernels):
    """Dynamo's second compile at a new batch size makes the batch symbolic: the graph then takes a SymInt among
    its inputs, and the race must run the graphs on the size it stands for (it once passed the SymInt on, and
    the call failed in the generated code's allocation)."""
    import functools

    import torch._inductor.config as inductor_config

    torch.manual_seed(7)
    model = Block().eval()
    randomize_batch_norms(model)
    model = model.to(torch.bfloat16).to(memory_format=CL)
    chooser = Pick([True])
    torch._dynamo.reset()
    compiled = torch.compile(model, backend=functools.partial(tb.backend, require_cuda=False, chooser=chooser))
    with torch.no_grad(), inductor_config.patch(freezing=True):
        for batch in (2, 3, 5):
            x = torch.randn(batch, 16, 9, 9).to(torch.bfloat16).contiguous(memory_format=CL)
            assert_close(compiled(x), model(x))
    assert len(chooser.raced) >= 2, chooser.raced  # the first compile and the dynamic one


@pytest.mark.parametrize("faster", ["fused", "alone"])
def test_the_whole_graph_is_raced_against_inductor_alone(cpu_kernels, caplog, faster):
    """Without CUDA graphs, a frozen graph with fused chains is compiled twice (with them, and Inductor alone)
    and the faster on the example inputs is what the model runs; the log says which."""
    import functools
    import logging

    import torch._inductor.config as inductor_config

    torch.manual_seed(6)
    model = Block().eval()
    randomize_batch_norms(model)
    model = model.to(torch.bfloat16).to(memory_format=CL)
    x = torch.randn(2, 16, 9, 9).to(torch.bfloat16).contiguous(memory_format=CL)
    chooser = Pick([True], graph_ms=(1.0, 2.0) if faster == "fused" else (2.0, 1.0))
    torch._dynamo.reset()
    backend = functools.partial(tb.backend, require_cuda=False, chooser=chooser)
    with torch.no_grad(), inductor_config.patch(freezing=True), \
            caplog.at_level(logging.INFO, logger="tilefuse.backend"):
        got = torch.compile(model, backend=backend)(x)
        want = model(x)
    assert len(chooser.raced) == 1
    (with_tilefuse, tilefuse_ops), (alone, alone_ops) = chooser.raced[0]
    assert tilefuse_ops == {"tilefuse::conv2d_inference"} and not alone_ops, (tilefuse_ops, alone_ops)
    assert_close(with_tilefuse[0], want)
    assert_close(alone[0], want)
    assert_close(got, want)
    if faster == "fused":
        assert "3 of 5 conv and linear chains fused" in caplog.text and "kept" in caplog.text, caplog.text
    else:
        assert "0 of 5 conv and linear chains fused" in caplog.text, caplog.text
        assert "Inductor alone kept" in caplog.text and "ran faster without tilefuse" in caplog.text


class TorchvisionMlp(nn.Module):
    """torchvision's ViT MLP block: Linear, GELU, Dropout, Linear, Dropout, then the residual add."""

    def __init__(self, d=32):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Dropout(0.1), nn.Linear(4 * d, d), nn.Dropout(0.1))

    def forward(self, x):
        return x + self.mlp(x)


def test_linear_chains_see_through_eval_dropout(cpu_kernels):
    torch.manual_seed(0)
    model = TorchvisionMlp().eval().to(torch.bfloat16)
    x = torch.randn(4, 8, 32).to(torch.bfloat16)
    with torch.no_grad():
        gm, inputs = capture(model, x)
        decisions = tb.fuse(gm, inputs, require_cuda=False)
        assert [(d.chain, d.fused) for d in decisions] == [("linear -> gelu", True), ("linear -> + residual", True)]
        assert not [n for n in gm.graph.nodes if n.target is F.dropout]
        got, want = gm(*inputs)[0], model(x)
    assert torch.allclose(got.float(), want.float(), rtol=2e-2, atol=2e-2), (got - want).abs().max()
    train = TorchvisionMlp().to(torch.bfloat16)  # dropout in training is not the identity: the chain stops there
    gm, inputs = capture(train, x)
    assert [d.chain for d in tb.fuse(gm, inputs, require_cuda=False)] == ["linear -> gelu", "linear"]


class MobileBlock(nn.Module):
    """MobileNet-style activations: conv-BN-hardswish, conv-BN-ReLU6 (nn.ReLU6 is hardtanh(0, 6)), conv-sigmoid."""

    def __init__(self, c=16):
        super().__init__()
        self.c1, self.b1, self.a1 = nn.Conv2d(c, c, 1, bias=False), nn.BatchNorm2d(c), nn.Hardswish()
        self.c2, self.b2, self.a2 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c), nn.ReLU6()
        self.c3 = nn.Conv2d(c, c, 1)

    def forward(self, x):
        return torch.sigmoid(self.c3(self.a2(self.b2(self.c2(self.a1(self.b1(self.c1(x))))))))


def test_mobile_activations_fuse(cpu_kernels):
    torch.manual_seed(1)
    model = MobileBlock().eval()
    randomize_batch_norms(model)
    model = model.to(torch.bfloat16).to(memory_format=CL)
    x = (3 * torch.randn(2, 16, 9, 9)).to(torch.bfloat16).contiguous(memory_format=CL)
    with torch.no_grad():
        gm, inputs = capture(model, x)
        decisions = tb.fuse(gm, inputs, require_cuda=False)
        assert [d.chain for d in decisions if d.fused] == ["conv -> BatchNorm -> hardswish",
                                                           "conv -> BatchNorm -> relu6", "conv -> sigmoid"], \
            [str(d) for d in decisions]
        got, want = gm(*inputs)[0], model(x)
    assert_close(got, want)


class Stem(nn.Module):
    """An RGB stem: 3 input channels, which the Hopper kernel takes only padded to 8."""

    def __init__(self):
        super().__init__()
        self.conv, self.bn = nn.Conv2d(3, 16, 7, stride=2, padding=3, bias=False), nn.BatchNorm2d(16)

    def forward(self, x):
        return torch.relu(self.bn(self.conv(x)))


@pytest.mark.parametrize("freezing", [False, True])
def test_channels_not_a_multiple_of_8_are_padded(cpu_kernels, freezing, caplog):
    """The stem's x and weight get zero channels up to 8 (x per call, the weight folded with the BatchNorm);
    the answer is the model's, through the whole torch.compile path."""
    import functools
    import logging

    import torch._inductor.config as inductor_config

    torch.manual_seed(4)
    model = Stem().eval()
    randomize_batch_norms(model)
    model = model.to(torch.bfloat16).to(memory_format=CL)
    x = torch.randn(2, 3, 17, 19).to(torch.bfloat16).contiguous(memory_format=CL)
    with torch.no_grad():
        gm, inputs = capture(model, x)
        decision, = tb.fuse(gm, inputs, require_cuda=False)
        assert decision.fused and "channels padded 3 -> 8" in decision.why, str(decision)
        assert_close(gm(*inputs)[0], model(x))
        torch._dynamo.reset()
        backend = functools.partial(tb.backend, measure=False, require_cuda=False)
        with inductor_config.patch(freezing=freezing), caplog.at_level(logging.INFO, logger="tilefuse.backend"):
            got = torch.compile(model, backend=backend)(x)
        assert "1 of 1 conv and linear chains fused" in caplog.text, caplog.text
        assert_close(got, model(x))


def test_the_one_line_entry_points():
    """`import tilefuse` registers the backend name with Dynamo; tilefuse.optimize is the backend's optimize."""
    import tilefuse

    assert tilefuse.optimize is tb.optimize
    assert "tilefuse" in torch._dynamo.list_backends()
    assert tilefuse.parallel.all_gather_linear is not None and tilefuse.backend is tb
