"""The Python path's speed, layer by layer, beside tilefuse-bench (the C++ device API) and PyTorch (cuDNN).

Reads the JSON that `tilefuse-bench conv2d ... --json FILE` wrote in the same job on the same GPU, and times
every one of its problems again from Python with the documented API (tilefuse.Conv2d(...).run), and the same
problem through torch (F.conv2d, torch.nn.grad.conv2d_input / conv2d_weight; the fused rows as torch's
conv + bias + residual + relu, unfused). tilefuse-bench's method: random-normal inputs, operand sets rotating
over more than 2 x L2, warm-up, medians. GPU time comes from CUDA-graph replay (a graph of calls over the
rotating sets, timed by CUDA events, median of the replays); the eager time is the wall time of back-to-back
calls synchronized at the end; the host time is the wall time of enqueueing calls (no synchronization),
which is what a call costs the CPU.

    python bench/python/conv_layers.py --cpp-json bench.json --json python.json --markdown python.md
"""
import json
import math
import sys
import time

import torch
import torch.nn.functional as F

import tilefuse
from tilefuse.epilogue import relu

from python_timing import beside_cpp, beside_cpp_arguments, progress_line, summary_line, write_report  # bench/python/python_timing.py

CL = torch.channels_last


def residual_block(acc, bias, residual):
    """tilefuse-bench's bias_relu_residual: y = relu(conv(x, w) + bias[k] + residual)."""
    return relu(acc + bias + residual)


def problem_of(row):
    p = row["problem"]
    return dict(mode=p["mode"], epilogue=p["epilogue"], dtype={"bf16": torch.bfloat16, "fp16": torch.float16}[p["dtype"]],
                N=p["n"], H=p["h"], W=p["w"], C=p["c"], K=p["k"], R=p["r"], S=p["s"],
                padding=(p["pad_h"], p["pad_w"]), stride=(p["stride_h"], p["stride_w"]),
                dilation=(p["dilation_h"], p["dilation_w"]), P=p["p"], Q=p["q"], layer=p["layer"])


def operand_set(p, generator):
    """One set of operands of a problem: (tilefuse call, torch call) closures over fresh random tensors."""
    dt = p["dtype"]

    def randn(*shape):
        return torch.randn(*shape, device="cuda", generator=generator).to(dt).contiguous(memory_format=CL)

    x = randn(p["N"], p["C"], p["H"], p["W"])
    w = randn(p["K"], p["C"], p["R"], p["S"])
    dy = randn(p["N"], p["K"], p["P"], p["Q"])
    geo = dict(padding=p["padding"], stride=p["stride"], dilation=p["dilation"])
    mode = p["mode"]
    if mode == "fprop" and p["epilogue"] != "none":
        bias = torch.randn(p["K"], device="cuda", generator=generator).to(dt)
        residual = randn(p["N"], p["K"], p["P"], p["Q"])
        ours = tilefuse.Conv2d("fprop", epilogue=residual_block, **geo)
        return ((lambda: ours.run(x, w, bias=bias, residual=residual)),
                (lambda: torch.relu(F.conv2d(x, w, **geo) + bias.view(1, -1, 1, 1) + residual)), ours,
                (x, w), dict(bias=bias, residual=residual))
    if mode == "fprop":
        ours = tilefuse.Conv2d("fprop", **geo)
        return (lambda: ours.run(x, w)), (lambda: F.conv2d(x, w, **geo)), ours, (x, w), {}
    if mode == "dgrad":
        ours = tilefuse.Conv2d("dgrad", **geo)
        size = tuple(x.shape)
        return ((lambda: ours.run(dy, w, input_size=size)),
                (lambda: torch.nn.grad.conv2d_input(size, w, dy, **geo)), ours, (dy, w), dict(input_size=size))
    ours = tilefuse.Conv2d("wgrad", kernel_size=(p["R"], p["S"]), **geo)
    return ((lambda: ours.run(dy, x)), (lambda: torch.nn.grad.conv2d_weight(x, tuple(w.shape), dy, **geo)), ours,
            (dy, x), {})


def set_bytes(p):
    e = 2
    return e * (p["N"] * p["H"] * p["W"] * p["C"] + p["K"] * p["R"] * p["S"] * p["C"] + 2 * p["N"] * p["P"] * p["Q"] * p["K"])


def main():
    args = beside_cpp_arguments(__doc__.split("\n\n")[0], "tilefuse-bench conv2d", per_graph=20, budget_s=400.0)
    torch.backends.cudnn.benchmark = True  # torch's peers with their fastest algorithms, as a training user runs them
    cpp = json.load(open(args.cpp_json))
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    generator = torch.Generator(device="cuda").manual_seed(1)
    rows, started = [], time.time()
    for row in cpp["rows"]:
        if time.time() - started > args.budget_s:
            print(f"budget reached: {len(rows)} of {len(cpp['rows'])} rows", file=sys.stderr)
            break
        p = problem_of(row)
        sets = max(2, math.ceil(2 * l2 / set_bytes(p)) + 1)
        made = [operand_set(p, generator) for _ in range(sets)]
        ours_calls, torch_calls = [m[0] for m in made], [m[1] for m in made]
        conv, operands, extra = made[0][2], made[0][3], made[0][4]
        describe = conv.plan(*operands, **extra).describe()
        out = dict(layer=p["layer"], mode=p["mode"], epilogue=p["epilogue"],
                   **beside_cpp(ours_calls, torch_calls, row, args.reps, args.per_graph, 200, "cpp_bench_cudnn_ms"),
                   describe=describe, cpp_describe=row.get("tilefuse_describe", ""))
        rows.append(out)
        print(progress_line(f"{p['layer']:>14} {p['mode']:5} {p['epilogue']:18}", out), flush=True)
        del made, ours_calls, torch_calls
        torch.cuda.empty_cache()
    write_report(args, rows, markdown)


def markdown(rows):
    lines = ["| layer | mode | epilogue | Python ms (events) | C++ bench ms | Python / C++ | side stream / C++ | "
             "interleaved / C++ | Python ms (graph) | torch ms (events) | torch / Python | C++ bench cuDNN ms | "
             "Python eager ms | host us/call | torch host us/call |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['layer']} | {r['mode']} | {r['epilogue']} | {r['python_events_ms']:.4f} | "
                     f"{r['cpp_bench_ms']:.4f} | {r['python_over_cpp']:.3f} | {r['stream_over_cpp']:.3f} | "
                     f"{r.get('interleaved_over_cpp', float('nan')):.3f} | "
                     f"{r['python_graph_ms']:.4f} | "
                     f"{r['torch_events_ms']:.4f} | {r['speedup_vs_torch']:.3f} | {r['cpp_bench_cudnn_ms']:.4f} | "
                     f"{r['python_eager_ms']:.4f} | {r['python_host_us']:.1f} | {r['torch_host_us']:.1f} |")
    lines.append("")
    for key in sorted({(r["mode"], r["epilogue"]) for r in rows}):
        sel = [r for r in rows if (r["mode"], r["epilogue"]) == key]
        lines.append(summary_line(f"{key[0]} {key[1]}: ", sel))
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
