#!/usr/bin/env python3
"""Per kernel of an Nsight Compute report's raw page (`ncu -i <rep> --page raw --csv > <csv>`): its time, active
cycles, grid, bytes, and the eight largest warp-stall reasons in warps per issued instruction.

  ncu_stalls.py <csv>
"""
import csv
import sys

PREFIX, SUFFIX = "smsp__average_warps_issue_stalled_", "_per_issue_active.ratio"
KEEP = ("gpu__time_duration.sum", "sm__cycles_active.avg", "launch__grid_size", "smsp__inst_executed.sum",
        "lts__t_bytes.sum", "dram__bytes_read.sum")


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def main(path):
    rows = list(csv.reader(open(path)))
    start = next(i for i, r in enumerate(rows) if "Kernel Name" in r)
    head = rows[start]
    for row in rows[start + 2:]:  # the row after the header holds the units
        if len(row) != len(head):
            continue
        cell = dict(zip(head, row))
        stalls = {h[len(PREFIX):-len(SUFFIX)]: number(v) for h, v in cell.items()
                  if h.startswith(PREFIX) and h.endswith(SUFFIX) and number(v) is not None}
        print(cell["Kernel Name"][:90])
        print("  " + ", ".join(f"{k} {cell[k]}" for k in KEEP if k in cell))
        print("  stalls (warps per issue): " +
              ", ".join(f"{k} {v:.2f}" for k, v in sorted(stalls.items(), key=lambda t: -t[1])[:8]))


if __name__ == "__main__":
    main(sys.argv[1])
