#!/usr/bin/env python3
"""The per-kernel table of an `ncu --csv --metrics ...` run (profile_conv_layer.sh's first pass): for each
kernel name, its launches, median and fastest time, the DRAM bytes and launch shape of its last launch.

  ncu_kernel_table.py <csv>...               prints the table of each file
  ncu_kernel_table.py --slowest-other <csv>  prints the short name of the slowest kernel that is not
                                             tilefuse's (launched more than twice; no fill/delay kernels)
"""
import collections
import csv
import sys


def kernels(path):
    """{kernel name: [metrics dict per launch]}, in launch order. The benchmark's own output precedes
    ncu's CSV header row ("ID", ...)."""
    rows = list(csv.reader(open(path)))
    start = next(i for i, r in enumerate(rows) if r and r[0] == "ID")
    head = rows[start]
    name, metric, value, launch = (head.index(h) for h in ("Kernel Name", "Metric Name", "Metric Value", "ID"))
    per_launch, names = collections.defaultdict(dict), {}
    for r in rows[start + 1:]:
        if len(r) != len(head):
            continue
        per_launch[int(r[launch])][r[metric]] = float(r[value].replace(",", ""))
        names[int(r[launch])] = r[name]
    out = collections.defaultdict(list)
    for i in sorted(per_launch):
        out[names[i]].append(per_launch[i])
    return out


def median_us(launches):
    t = sorted(m["gpu__time_duration.sum"] for m in launches)
    return t[len(t) // 2] / 1000, t[0] / 1000


def slowest_other(path):
    candidates = [(median_us(ls)[0], n) for n, ls in kernels(path).items()
                  if len(ls) > 2 and "sm90_gemm_kernel" not in n and "delay" not in n and "fill" not in n]
    return max(candidates)[1].split("(")[0].split("<")[0].split()[-1] if candidates else ""


def print_table(path):
    print("=====", path)
    for n, ls in sorted(kernels(path).items(), key=lambda item: -len(item[1])):
        med, fastest = median_us(ls)
        last = ls[-1]
        read, write = last["dram__bytes_read.sum"], last["dram__bytes_write.sum"]
        print(f"{len(ls):4d} med {med:8.1f}us min {fastest:8.1f}  rd {read / 1e6:7.1f}MB wr {write / 1e6:7.1f}MB "
              f"{(read + write) / (med * 1e3):7.2f}GB/s grid {last['launch__grid_size']:.0f} "
              f"blk {last['launch__block_size']:.0f} smem {last['launch__shared_mem_per_block_dynamic']:.0f} "
              f"regs {last['launch__registers_per_thread']:.0f}  {n[:100]}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--slowest-other"]:
        print(slowest_other(sys.argv[2]))
    else:
        for path in sys.argv[1:]:
            print_table(path)
