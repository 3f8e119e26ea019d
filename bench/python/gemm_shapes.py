"""The Python GEMM's speed, shape by shape, beside tilefuse-bench (the C++ device API) and torch (cuBLAS).

Reads the JSON that `tilefuse-bench gemm ... --json FILE` wrote in the same job on the same GPU and times each
of its problems again from Python with the documented API (tilefuse.Gemm(...).run, operands in the layouts
the bench row names: a layout tilefuse's Hopper kernel does not read is copied first, as Gemm.run does), and
the same problem through torch (torch.mm; the fused rows as addmm + gelu(tanh) + residual, unfused).
tilefuse-bench's method: random-normal inputs, operand sets rotating over more than 2 x L2, warm-up, medians;
GPU time also by CUDA-graph replay, eager and host time per call (python_timing.py).

    python bench/python/gemm_shapes.py --cpp-json gemm.json --json python-gemm.json --markdown python-gemm.md
"""
import json
import math
import sys
import time

import torch
import torch.nn.functional as F

import tilefuse
from tilefuse.epilogue.common import fused

from python_timing import beside_cpp, beside_cpp_arguments, progress_line, summary_line, write_report  # bench/python/python_timing.py

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


def operand_set(p, generator):
    """(tilefuse call, torch call, Gemm, operands, arguments) over fresh random tensors of a bench row's problem:
    a (m, k) and b (k, n), each row- or column-major as the row's layout letters say (t: row-major)."""
    dt, m, n, k = DTYPES[p["dtype"]], p["m"], p["n"], p["k"]

    def randn(*shape):
        return torch.randn(*shape, device="cuda", generator=generator).to(dt)

    a = randn(m, k) if p["layout"][0] == "t" else randn(k, m).t()
    b = randn(k, n) if p["layout"][1] == "t" else randn(n, k).t()
    if p["epilogue"] == "none":
        gemm = tilefuse.Gemm()
        return (lambda: gemm.run(a, b)), (lambda: torch.mm(a, b)), gemm, (a, b), {}
    bias, residual = randn(n), randn(m, n)
    gemm = tilefuse.Gemm(fused("gelu_tanh", True, True))
    return ((lambda: gemm.run(a, b, bias=bias, residual=residual)),
            (lambda: F.gelu(torch.addmm(bias, a, b), approximate="tanh") + residual), gemm, (a, b),
            dict(bias=bias, residual=residual))


def set_bytes(p):
    return 2 * (p["m"] * p["k"] + p["k"] * p["n"] + (3 if p["epilogue"] != "none" else 1) * p["m"] * p["n"])


def main():
    args = beside_cpp_arguments(__doc__.split("\n\n")[0], "tilefuse-bench gemm")
    cpp = json.load(open(args.cpp_json))
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    generator = torch.Generator(device="cuda").manual_seed(1)
    rows, started = [], time.time()
    for row in cpp["rows"]:
        p = dict(row["problem"])
        if time.time() - started > args.budget_s:
            print(f"budget reached: {len(rows)} of {len(cpp['rows'])} rows", file=sys.stderr)
            break
        if p["dtype"] not in DTYPES or p.get("batch", 1) != 1:
            continue  # tf32 and batched rows: not in tilefuse.Gemm's Python dtypes / this script's shapes
        sets = max(2, math.ceil(2 * l2 / set_bytes(p)) + 1)
        made = [operand_set(p, generator) for _ in range(sets)]
        ours_calls, torch_calls = [m[0] for m in made], [m[1] for m in made]
        gemm, operands, extra = made[0][2], made[0][3], made[0][4]
        try:
            describe = gemm.plan(*operands, **extra).describe()
        except tilefuse.TensorArgumentError as e:  # a layout run() copies first: what plan() says of it
            describe = f"copied into the Hopper kernel's layouts ({e})"
        shape = f"{p['m']}x{p['n']}x{p['k']}"
        out = dict(shape=shape, layout=p["layout"], epilogue=p["epilogue"], dtype=p["dtype"],
                   **beside_cpp(ours_calls, torch_calls, row, args.reps, args.per_graph, 100, "cpp_bench_cublas_ms"),
                   describe=describe, cpp_describe=row.get("tilefuse_describe", ""))
        rows.append(out)
        print(progress_line(f"{shape:>18} {p['layout']} {p['epilogue']:18}", out), flush=True)
        del made, ours_calls, torch_calls
        torch.cuda.empty_cache()
    write_report(args, rows, markdown)


def markdown(rows):
    lines = ["| shape (m x n x k) | layout | epilogue | Python ms (events) | C++ bench ms | Python / C++ | side stream / C++ "
             "| interleaved / C++ | Python ms (graph) | torch ms (events) | torch / Python | C++ bench cuBLAS ms "
             "| host us/call | torch host us/call |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['shape']} | {r['layout']} | {r['epilogue']} | {r['python_events_ms']:.4f} | "
                     f"{r['cpp_bench_ms']:.4f} | {r['python_over_cpp']:.3f} | {r['stream_over_cpp']:.3f} | "
                     f"{r.get('interleaved_over_cpp', float('nan')):.3f} | "
                     f"{r['python_graph_ms']:.4f} | "
                     f"{r['torch_events_ms']:.4f} | {r['speedup_vs_torch']:.3f} | {r['cpp_bench_cublas_ms']:.4f} | "
                     f"{r['python_host_us']:.1f} | {r['torch_host_us']:.1f} |")
    if rows:
        lines += ["", summary_line("", rows)]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
