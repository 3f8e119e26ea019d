# Sourced by the profiling scripts: detail <label> <kernel regex> profiles one later launch (the 4th) of
# the kernel matching the regex under the command in "${bench[@]}" with Nsight Compute's full set,
# and prints its details and the 40 SASS lines with the most warp-stall samples. Needs "${ncu[@]}"
# (ncu and its options, e.g. --kernel-name-base mangled) and a scratch directory "$tmp".
detail() {  # <label> <kernel regex>
  "${ncu[@]}" --set full --import-source no -k "regex:$2" --launch-skip 3 -c 1 -o "$tmp/$1" "${bench[@]}" >/dev/null 2>&1 || true
  [[ -f $tmp/$1.ncu-rep ]] || { echo "== $1: no report"; return; }
  echo "==================== $1 ($2) ===================="
  ncu -i "$tmp/$1.ncu-rep" --page details --print-details all 2>&1 || true
  echo "---- $1: SASS lines with the most stall samples ----"
  ncu -i "$tmp/$1.ncu-rep" --page source --csv --print-source sass 2>/dev/null | python3 -c '
import csv, sys
rows = list(csv.reader(sys.stdin))
start = next((i for i, r in enumerate(rows) if any(h.startswith("Warp Stall Sampling (All") for h in r)), None)
if start is None: print("no stall-sampling column in the source page"); sys.exit()
head, rows = rows[start], rows[start:]
col = next((i for i, h in enumerate(head) if h.startswith("Warp Stall Sampling (All")), None)
if col is None: print("columns:", head); sys.exit()
src = head.index("Source") if "Source" in head else 1
key = lambda r: float((r[col] or "0").replace(",", "")) if len(r) > col else 0.0
total = sum(key(r) for r in rows[1:]) or 1.0
for r in sorted(rows[1:], key=key, reverse=True)[:40]:
    print(f"{100 * key(r) / total:5.1f}%  {r[0]:>6}  {r[src]}")
' || true
}
