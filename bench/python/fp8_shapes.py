"""The Python FP8 GEMM's speed, shape by shape, beside tilefuse-fp8-bench (the C++ device API) and torch (cuBLASLt).

Reads the JSON that `tilefuse-fp8-bench --json FILE` wrote in the same job on the same GPU and times each of its
rows again from Python with the documented API (tilefuse.scaled_mm: e4m3 a (m, k) row-major and b (k, n)
column-major, the row's scales, use_fast_accum as its accumulation says, bf16 output, as the bench runs them), and
the same call through torch._scaled_mm (cuBLASLt; block-wise scales where this torch takes them). A row that
scaled_mm cannot express (a fixed C++ kernel config, amax) is listed with the reason, not timed.
tilefuse-fp8-bench's method: random-normal inputs quantized to e4m3, scales uniform in [0.5, 2], operand sets
rotating over more than 2 x L2, warm-up, medians; GPU time also by CUDA-graph replay, eager and host time per
call (python_timing.py).

    python bench/python/fp8_shapes.py --cpp-json cpp-fp8.json --json py-fp8.json --markdown py-fp8.md
"""
import json
import math
import sys
import time

import torch

import tilefuse

from python_timing import (beside_cpp, beside_cpp_arguments, progress_line,  # bench/python
                           summary_line, write_report)

# The bench's accumulation names that scaled_mm expresses -> use_fast_accum. Both run the planner's kernel for
# the mode (gemm::plan_scaled_gemm, as gemm::ScaledGemm picks it with no Config); block-wise always promotes.
FAST_ACCUM = {"fast (default)": True, "promoted": False}
MODES = ("per-tensor", "row-wise", "block-wise")
NAN = float("nan")


def not_expressed(row):
    """Why scaled_mm cannot run this bench row, or None when it can."""
    if row["scales"] not in MODES:
        return f"scales {row['scales']!r}: not one of scaled_mm's modes"
    if "amax" in row["accumulation"]:
        return "amax (the epilogue reduces max abs(y) over D): scaled_mm returns no amax"
    if row["accumulation"] not in FAST_ACCUM:
        return ("a fixed C++ kernel config (ScaledGemm's Config argument): scaled_mm runs the planner's pick, "
                "i.e. the 'fast (default)' and 'promoted' rows")
    return None


def operand_set(row, generator):
    """(tilefuse call, torch call) over fresh random operands and scales of a bench row's problem."""
    m, n, k, mode = row["m"], row["n"], row["k"], row["scales"]

    def scales(shape):  # the bench's fill_uniform: [0.5, 2]
        return torch.rand(shape, device="cuda", generator=generator) * 1.5 + 0.5

    a = torch.randn(m, k, device="cuda", generator=generator).to(torch.float8_e4m3fn)
    b = torch.randn(n, k, device="cuda", generator=generator).to(torch.float8_e4m3fn).t()  # column-major (k, n)
    if mode == "per-tensor":
        sa, sb = scales(()), scales(())
    elif mode == "row-wise":
        sa, sb = scales((m, 1)), scales((1, n))
    else:  # torch's block-wise layouts (scaled_mm's docstring): scale_a M-major, scale_b K-block-major
        kb, nb = -(-k // 128), -(-n // 128)
        sa, sb = scales((kb, m)).t(), scales((nb, kb)).t()
    kw = dict(out_dtype=torch.bfloat16, use_fast_accum=FAST_ACCUM[row["accumulation"]] and mode != "block-wise")
    return (lambda: tilefuse.scaled_mm(a, b, sa, sb, **kw)), (lambda: torch._scaled_mm(a, b, sa, sb, **kw))


def set_bytes(row):
    """One set's bytes, as the bench counts them: a, b, the bf16 output and the scales."""
    return row["m"] * row["k"] + row["k"] * row["n"] + 2 * row["m"] * row["n"] + 4 * (row["m"] + row["n"])


def cpp_shim(row):
    """The bench's flat row in the shape beside_cpp reads (tilefuse-bench's: tilefuse and peers; -1: not run)."""
    def side(ms):
        return {"median_ms": ms, "state": "ok" if ms > 0 else "not run"}
    return {"tilefuse": side(row["tilefuse_ms"]), "peers": [side(row["cublaslt_ms"])]}


def plan_of(row, device):
    """The kernel scaled_mm's planner picks (what ScaledGemm._choose asks tilefuse._C), for the JSON."""
    try:
        from tilefuse import _C
        p = _C.plan_scaled_gemm(row["m"], row["n"], row["k"], 1, device, row["scales"],
                                FAST_ACCUM[row["accumulation"]] and row["scales"] != "block-wise")
        return f"{p['config']} {p['tile']}: {p['why']}"
    except Exception as e:  # a note only; the timing does not depend on it
        return f"plan unavailable ({e})"


def main():
    args = beside_cpp_arguments(__doc__.split("\n\n")[0], "tilefuse-fp8-bench")
    cpp = json.load(open(args.cpp_json))
    reasons = [not_expressed(row) for row in cpp["rows"]]
    print(f"{len(cpp['rows'])} rows of {args.cpp_json} ({cpp.get('device', '?')}): "
          f"{reasons.count(None)} expressible by tilefuse.scaled_mm", file=sys.stderr)
    if not torch.cuda.is_available():
        sys.exit("fp8_shapes.py: no CUDA device; it times on the GPU tilefuse-fp8-bench ran on (an H100 / H200)")
    props = torch.cuda.get_device_properties(0)
    device = (props.major, props.minor, props.multi_processor_count)
    generator = torch.Generator(device="cuda").manual_seed(1)
    rows, started = [], time.time()
    for row, reason in zip(cpp["rows"], reasons):
        shape = f"{row['m']}x{row['n']}x{row['k']}"
        out = dict(shape=shape, scales=row["scales"], accumulation=row["accumulation"],
                   cpp_bench_ms=row["tilefuse_ms"] if row["tilefuse_ms"] > 0 else NAN,
                   cpp_peer_note=row.get("peer_note", ""))
        if reason is None and time.time() - started > args.budget_s:
            reason = f"not timed: --budget-s {args.budget_s:.0f} reached"
        if reason is not None:  # listed, not dropped
            rows.append(dict(out, not_timed=reason))
            continue
        sets = max(2, math.ceil(2 * props.L2_cache_size / set_bytes(row)) + 1)
        made = [operand_set(row, generator) for _ in range(sets)]
        ours_calls, torch_calls = [m[0] for m in made], [m[1] for m in made]
        try:  # torch 2.11's _scaled_mm may refuse block-wise scales (its cuBLASLt, its checks): time ours alone
            torch_calls[0]()
            torch.cuda.synchronize()
            torch_note = ""
        except (RuntimeError, NotImplementedError, TypeError, ValueError) as e:
            torch_note = f"torch._scaled_mm refused it: {str(e).splitlines()[0][:160]}"
        out.update(beside_cpp(ours_calls, None if torch_note else torch_calls, cpp_shim(row), args.reps,
                              args.per_graph, 100, "cpp_bench_cublaslt_ms"))
        out.update(torch_note=torch_note, plan=plan_of(row, device))
        rows.append(out)
        print(progress_line(f"{shape:>18} {row['scales']:10} {row['accumulation']:15}", out)
              + (f"  [{torch_note}]" if torch_note else ""), flush=True)
        del made, ours_calls, torch_calls
        torch.cuda.empty_cache()
    write_report(args, rows, markdown)


def ms(v, digits=4):
    return "-" if v != v else f"{v:.{digits}f}"  # NaN (not run / refused): a dash


def markdown(rows):
    timed = [r for r in rows if "not_timed" not in r]
    lines = ["| shape (m x n x k) | scales | accumulation | Python ms (events) | C++ bench ms | Python / C++ "
             "| Python ms (graph) | torch ms (events) | torch / Python | C++ bench cuBLASLt ms | host us/call "
             "| torch host us/call |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in timed:
        lines.append(f"| {r['shape']} | {r['scales']} | {r['accumulation']} | {ms(r['python_events_ms'])} | "
                     f"{ms(r['cpp_bench_ms'])} | {ms(r['python_over_cpp'], 3)} | {ms(r['python_graph_ms'])} | "
                     f"{ms(r['torch_events_ms'])} | {ms(r['speedup_vs_torch'], 3)} | "
                     f"{ms(r['cpp_bench_cublaslt_ms'])} | {ms(r['python_host_us'], 1)} | {ms(r['torch_host_us'], 1)} |")
    notes = sorted({f"- torch ({r['scales']}, {r['accumulation']}): {r['torch_note']}"
                    for r in timed if r["torch_note"]})
    skipped = [r for r in rows if "not_timed" in r]
    if skipped:
        lines += ["", "Rows of tilefuse-fp8-bench not timed from Python:", "",
                  "| shape (m x n x k) | scales | accumulation | C++ bench ms | why |", "|---|---|---|---|---|"]
        lines += [f"| {r['shape']} | {r['scales']} | {r['accumulation']} | {ms(r['cpp_bench_ms'])} | "
                  f"{r['not_timed']} |" for r in skipped]
    lines += [""] + notes + ([""] if notes else [])
    for mode in [m for m in MODES if any(r["scales"] == m for r in timed)] + (["all"] if timed else []):
        group = [r for r in timed if mode in ("all", r["scales"])]
        lines.append(summary_line(f"{mode}: ", group))
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
