#!/usr/bin/env python3
"""The SASS instructions of one kernel with the most warp-stall samples, from an Nsight Compute report's source
page (`ncu -i <rep> --page source --csv --print-source sass > <csv>`; needs the SourceCounters section, which
`--set full` has): each line's address, samples, share of the kernel's samples and its text.

  sass_hot.py <csv> [count, default 25]
"""
import csv
import sys


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0


def main(path, count=25):
    rows = [r for r in csv.reader(open(path)) if r]
    head_at = next(i for i, r in enumerate(rows) if any("Source" == c or c.startswith("Source") for c in r))
    head = rows[head_at]
    samples = next(i for i, c in enumerate(head) if c.startswith("Warp Stall Sampling (All"))
    source = next(i for i, c in enumerate(head) if c.startswith("Source"))
    address = next((i for i, c in enumerate(head) if c.startswith("Address")), None)
    body = [r for r in rows[head_at + 1:] if len(r) == len(head) and number(r[samples]) > 0]
    total = sum(number(r[samples]) for r in body) or 1.0
    print(f"{len(body)} instructions with samples, {total:.0f} samples; columns: {', '.join(head[:12])}")
    for r in sorted(body, key=lambda r: -number(r[samples]))[:count]:
        where = r[address] if address is not None else ""
        print(f"{where:>8} {number(r[samples]):8.0f} {100 * number(r[samples]) / total:5.1f}%  {r[source][:90]}")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 25)
