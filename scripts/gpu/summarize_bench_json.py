#!/usr/bin/env python3
# Prints the per-row times and same-run speedups of tilefuse-bench JSON files in a folder: summarize_bench_json.py <dir>
import json, sys, glob
for f in sorted(glob.glob(sys.argv[1] + '/*.json')):
    d = json.load(open(f))
    if 'speedup_geomeans' not in d: continue
    print('==', f.split('/')[-1], [(g['peer'], round(g['geomean_speedup'], 3)) for g in d['speedup_geomeans']])
    for r in d['rows']:
        p = r['problem']; t = r['tilefuse']
        lab = p.get('layer') or f"{p.get('m')}x{p.get('n')}x{p.get('k')} {p.get('epilogue','')}"
        print(f"  {lab:28s} tf {t.get('median_ms',0):.4f} " + ' '.join(f"{q['implementation'][:18]} {q.get('median_ms',0):.4f} ({q.get('tilefuse_speedup',0):.3f})" for q in r['peers']))
