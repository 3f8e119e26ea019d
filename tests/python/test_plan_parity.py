"""The plan Python gets equals the plan C++ chooses. plan_parity_dump (tests/parity, run by ctest) wrote the C++
planners' plans for random problems, made from conv::Conv2d's own plan input: the tree facts of its C++ type,
its element type and alignment check, on made-up sm_80 and sm_90 device facts. Here each problem is planned as
tilefuse.Conv2d plans it: the Python epilogue of the same kind traced and lowered, its facts read by
kernel_params.tree_facts, the planner asked through tilefuse._C. Every field of every plan must agree. Then the
same problems through the Python ops themselves (tilefuse.Conv2d._plan, tilefuse.Gemm._whole_plan on meta
tensors): the facts Python reads of a user's tensors (alignment, layouts, the residual) lead to the C++ plan."""
import json
import os

import pytest

from tilefuse import _C
from tilefuse.conv2d import ConvProblem, output_extent
from tilefuse.epilogue import gelu, relu, tensor, to_cpp, trace
from tilefuse.kernel_params import tree_facts


def _epilogues():
    """The epilogue kinds of plan_parity_dump.cu, by name: (function, D's dtype or None for the element's)."""
    def bias_residual_relu(acc, bias, residual):
        return relu(acc + bias + residual)

    def residual_after_relu(acc, bias, residual):
        return relu(acc + bias) + residual

    def residual_twice(acc, residual):
        return relu(acc + residual) + residual

    return {
        "none": (lambda acc: acc, None),
        "bias": (lambda acc, bias: acc + bias, None),
        "bias_relu": (lambda acc, bias: relu(acc + bias), None),
        "bias_gelu": (lambda acc, bias: gelu(acc + bias), None),
        "bias_residual_relu": (bias_residual_relu, None),
        "residual_after_relu": (residual_after_relu, None),
        "residual_twice": (residual_twice, None),
        "scaled": (lambda acc, alpha: acc * alpha, None),
        "fp32_residual": (lambda acc, residual: acc + residual, "float32"),
        "row_scale": (lambda acc, scale: acc * scale, None),
    }


def _cases():
    path = os.environ.get("TILEFUSE_PLAN_PARITY_FILE")
    if not path:
        pytest.skip("TILEFUSE_PLAN_PARITY_FILE is not set: scripts/test.sh sets it to the file ctest's "
                    "parity.plan_parity_dump writes (build/plan_parity.json)")
    assert os.path.exists(path), f"{path} is missing: run ctest -R parity.plan_parity_dump first"
    with open(path) as f:
        return json.load(f)


def _conv_facts(case):
    n, h, w, c, k, r, s, ph, pw, sh, sw, dh, dw = case["geometry"]
    p_out, q_out = output_extent(h, ph, dh, r, sh), output_extent(w, pw, dw, s, sw)
    problem = ConvProblem(n, h, w, c, k, r, s, p_out, q_out, (ph, pw), (sh, sw), (dh, dw))
    m, cols, _ = problem.gemm(case["mode"])
    function, out = _epilogues()[case["tree"]]
    element = case["element"]
    specs = {"bias": (cols,), "residual": tensor((m, cols), element), "scale": tensor((m, 1), "float32"), "alpha": 1.0}
    names = function.__code__.co_varnames[1:function.__code__.co_argcount]
    graph = trace(function, acc=(m, cols), **{name: specs[name] for name in names})
    return tree_facts(to_cpp(graph, element=out or element))


def test_at_least_500_conv_plans_and_every_kind_are_compared():
    cases = [c for c in _cases() if c["kind"] == "conv"]
    assert len(cases) >= 500
    assert {c["mode"] for c in cases} == {"fprop", "dgrad", "wgrad"}
    assert {c["tree"] for c in cases} == set(_epilogues())
    assert {tuple(c["device"][:2]) for c in cases} >= {(8, 0), (9, 0)}
    assert {c["plan"]["family"] for c in cases} == {"sm80", "sm90"}
    assert {c["aligned"] for c in cases} == {True, False}
    assert any(c["facts"]["residual_by_tma"] for c in cases)
    assert any(c["residual_unaligned"] for c in cases)  # a residual TMA cannot read: the planner's fact


def test_python_conv_plans_equal_the_cpp_plans():
    mismatches = []
    for case in (c for c in _cases() if c["kind"] == "conv"):
        facts = _conv_facts(case)
        if facts != case["facts"]:
            mismatches.append(f"{case['tree']} {case['mode']} {case['element']}: facts {facts} != C++ {case['facts']}")
            continue
        plan = _C.plan_conv2d(case["mode"], tuple(case["geometry"]), case["element"], facts["reads_memory"],
                              facts["residual_by_tma"], tuple(case["device"]), case["aligned"], case["split_k"],
                              case["deterministic"], residual_unaligned=case["residual_unaligned"],
                              **case["overrides"])
        for key, expected in case["plan"].items():
            if plan[key] != expected:
                mismatches.append(f"{case['tree']} {case['mode']} {case['geometry']}: {key} {plan[key]!r} != C++ "
                                  f"{expected!r}")
    assert not mismatches, f"{len(mismatches)} differences, first: " + "\n".join(mismatches[:5])


def test_python_gemm_plans_equal_the_cpp_plans():
    cases = [c for c in _cases() if c["kind"] == "gemm"]
    assert len(cases) >= 100
    for case in cases:
        m, n, k, batch = case["problem"]
        device = tuple(case["device"])
        plain = _C.plan_gemm_sm90(m, n, k, batch, device, None)
        assert (plain["config"], plain["tile"]) == (case["plain"]["config"], case["plain"]["tile"]), case
        r = case["request"]
        whole = _C.plan_gemm(m, n, k, batch, device, r["sixteen_bit"], r["hopper_layouts"], r["tma_aligned"],
                             r["split_k"], None, skinny_code=r["skinny_code"],
                             residual_by_tma=r["residual_by_tma"])
        assert {key: whole[key] for key in case["whole"]} == case["whole"], case
        scaled = _C.plan_scaled_gemm(m, n, k, batch, device, case["scaling"], case["fast_accum"])
        assert (scaled["config"], scaled["tile"]) == (case["scaled"]["config"], case["scaled"]["tile"]), case


def _meta(shape, dtype, offset_bytes=0):
    """A meta tensor (shape, strides and the base's alignment only) of a row-major layout, offset_bytes off 16."""
    import torch

    strides, step = [], 1
    for size in reversed(shape):
        strides.insert(0, step)
        step *= size
    element = torch.empty((), dtype=dtype).element_size()
    base = torch.empty(step + 8, dtype=dtype, device="meta")
    return base.as_strided(tuple(shape), tuple(strides), offset_bytes // element)


def test_conv2d_objects_plan_as_cpp_conv2d(monkeypatch):
    """The same problems planned by tilefuse.Conv2d itself (Conv2d._plan on meta tensors: the tree traced from
    the Python epilogue, the alignment read from the tensors, split_k and kernel as a user passes them, the
    device facts of the case), wherever a Conv2d can express the C++ call (16-bit operands, no override but
    the sm80 family, non-deterministic sums): its plan equals C++ conv::Conv2d's field by field."""
    torch = pytest.importorskip("torch")
    import tilefuse
    from tilefuse import conv2d as conv_module

    dtypes = {"bfloat16": torch.bfloat16, "float16": torch.float16}
    device = {}
    monkeypatch.setattr(conv_module, "device_properties", lambda _: (device["sms"], device["major"], device["minor"]))
    monkeypatch.setattr(conv_module, "_compiled", lambda *args: None)
    monkeypatch.setattr(conv_module, "_compiled_sm90", lambda *args: None)
    compared, mismatches = 0, []
    for case in (c for c in _cases() if c["kind"] == "conv"):
        if (case["element"] not in dtypes or case["deterministic"]
                or set(case["overrides"]) - {"family"}):
            continue
        n, h, w, c, k, r, s, ph, pw, sh, sw, dh, dw = case["geometry"]
        mode, dtype = case["mode"], dtypes[case["element"]]
        function, out = _epilogues()[case["tree"]]
        device["major"], device["minor"], device["sms"] = case["device"]
        op = tilefuse.Conv2d(mode, stride=(sh, sw), padding=(ph, pw), dilation=(dh, dw),
                             kernel_size=(r, s) if mode == "wgrad" else None, epilogue=function,
                             out_dtype=torch.float32 if out else None,
                             kernel="sm80" if case["overrides"] else "auto",
                             split_k="auto" if case["split_k"] == 0 else case["split_k"])
        p_out, q_out = output_extent(h, ph, dh, r, sh), output_extent(w, pw, dw, s, sw)
        misaligned = 0 if case["aligned"] else 2  # plan_parity_dump puts operand A 2 bytes off
        x, weight, dy = (n, c, h, w), (k, c, r, s), (n, k, p_out, q_out)
        a_shape, b_shape = {"fprop": (x, weight), "dgrad": (dy, weight), "wgrad": (dy, x)}[mode]
        a, b = _meta(a_shape, dtype, misaligned), _meta(b_shape, dtype)
        problem = op._problem(tuple(a.shape), tuple(b.shape), x if mode == "dgrad" else None)
        m, cols, _ = problem.gemm(mode)
        residual_offset = 0 if case["residual_aligned"] else 2  # plan_parity_dump's residual 2 bytes off 16
        arguments = {"bias": _meta((cols,), dtype), "residual": _meta((m, cols), dtype, residual_offset),
                     "scale": _meta((m, 1), torch.float32), "alpha": 1.0}
        names = function.__code__.co_varnames[1:function.__code__.co_argcount]
        plan = op._plan(a, b, problem, case["element"], 0, {name: arguments[name] for name in names})
        compared += 1
        for key, expected in case["plan"].items():
            if plan.planner[key] != expected:
                mismatches.append(f"{case['tree']} {mode} {case['geometry']} {case['device']}: {key} "
                                  f"{plan.planner[key]!r} != C++ {expected!r}")
    assert compared >= 200, f"only {compared} cases a Conv2d can express"
    assert not mismatches, f"{len(mismatches)} differences, first: " + "\n".join(mismatches[:5])


def test_gemm_objects_plan_as_cpp_gemm(monkeypatch):
    """The dump's GEMM requests made as a user makes them: a tilefuse.Gemm (plain, or with a residual epilogue)
    run on meta tensors whose layouts and alignment give the request's facts (B K-major or row-major, A 2 bytes
    off 16, a residual of D's shape), planned by Gemm._whole_plan from what tilefuse.tensors reads of them:
    the plan equals C++ gemm::plan_gemm's. Requests a tensor cannot express (8-bit, a split asked for, no skinny
    code, an alignment the shape contradicts) are skipped."""
    torch = pytest.importorskip("torch")
    import tilefuse
    from tilefuse import tensors

    monkeypatch.setattr(tensors, "CUDA_DEVICE_TYPES", tensors.CUDA_DEVICE_TYPES + ("meta",))
    bf16 = torch.bfloat16

    def residual_block(acc, residual):
        return relu(acc) + residual

    compared, mismatches = 0, []
    for case in (c for c in _cases() if c["kind"] == "gemm"):
        m, n, k, batch = case["problem"]
        r = case["request"]
        if not r["sixteen_bit"] or r["split_k"] != 0 or not r["skinny_code"]:
            continue
        natural = k % 8 == 0 and (r["hopper_layouts"] or n % 8 == 0)  # every leading dimension whole 16 bytes
        if (r["tma_aligned"] and not natural) or (r["residual_by_tma"] and n % 8 != 0):
            continue
        lead = (batch,) if batch > 1 else ()
        a = _meta(lead + (m, k), bf16, 0 if r["tma_aligned"] or not natural else 2)
        if r["hopper_layouts"]:
            b = _meta(lead + (n, k), bf16).transpose(-1, -2)  # (k, n) K-major, as nn.Linear's weight.t()
        else:
            b = _meta(lead + (k, n), bf16)
        gemm = tilefuse.Gemm(epilogue=residual_block if r["residual_by_tma"] else None)
        arguments = {"residual": _meta(lead + (m, n), bf16)} if r["residual_by_tma"] else {}
        ops = gemm._check(a, b)
        whole = gemm._whole_plan(ops, tuple(case["device"]), arguments)
        compared += 1
        got = {key: whole[key] for key in case["whole"]}
        if got != case["whole"]:
            mismatches.append(f"{case['problem']} {r}: {got} != C++ {case['whole']}")
    assert compared >= 60, f"only {compared} requests a Gemm can express"
    assert not mismatches, f"{len(mismatches)} differences, first: " + "\n".join(mismatches[:3])
