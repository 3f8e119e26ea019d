#!/usr/bin/env python3
"""SASS facts of the kernels in CUDA binaries: per kernel symbol, registers, stack and local memory
(cuobjdump -res-usage), the local-memory instructions in its SASS (LDL / STL: spills or a stack frame),
and how many HGMMA (wgmma) and HMMA (mma.sync) instructions it holds (cuobjdump --dump-sass).

  bench/tools/sass_facts.py BINARY... [--filter REGEX] [--markdown]

cuobjdump comes with the CUDA toolkit (PATH, then /usr/local/cuda/bin). A kernel with spills, or a
Hopper GEMM kernel without HGMMA (the wgmma path compiled out: built without sm_90a), is flagged in the
notes column. Exit status 0 when facts were read, 1 when cuobjdump failed or found no kernel.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys


def tool(name):
    found = shutil.which(name)
    if found:
        return found
    for d in ("/usr/local/cuda/bin",):
        p = os.path.join(d, name)
        if os.path.exists(p):
            return p
    return None


def run(cmd):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")


def demangle(names):
    """Mangled -> readable, through cu++filt or c++filt when present (else unchanged)."""
    filt = tool("cu++filt") or tool("c++filt")
    if not filt or not names:
        return {n: n for n in names}
    out = run([filt] + list(names)).stdout.splitlines()
    if len(out) != len(names):
        return {n: n for n in names}
    return dict(zip(names, out))


def shorten(name, width=150):
    # Drop the template noise that every kernel shares; keep the start and the end.
    name = re.sub(r"tilefuse::", "", name)
    name = re.sub(r"epilogue::", "", name)
    if len(name) > width:
        name = name[: width - 50] + " ... " + name[-45:]
    return name


RES_FUNC = re.compile(r"^\s*Function\s+(\S+):\s*$")
RES_LINE = re.compile(r"REG:(\d+)\s+STACK:(\d+)\s+SHARED:(\d+)\s+LOCAL:(\d+)")
SASS_ARCH = re.compile(r"^\s*code for (sm_\w+)")
SASS_FUNC = re.compile(r"^\s*Function\s*:\s*(\S+)")
OPCODE = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)(\.[A-Z0-9_.x]+)?")


def facts_of(binary):
    """{(arch, symbol): dict} for one binary."""
    cuobjdump = tool("cuobjdump")
    if cuobjdump is None:
        raise RuntimeError("cuobjdump not found (PATH, /usr/local/cuda/bin)")
    facts = {}
    # Resource usage: per arch section, per function.
    res = run([cuobjdump, "-res-usage", binary])
    if res.returncode != 0:
        raise RuntimeError(f"cuobjdump -res-usage {binary}: exit {res.returncode}: {res.stdout[-400:]}")
    arch, func = "?", None
    for line in res.stdout.splitlines():
        m = re.match(r"^\s*arch = (sm_\w+)", line)
        if m:
            arch = m.group(1)
            continue
        m = RES_FUNC.match(line)
        if m:
            func = m.group(1)
            continue
        m = RES_LINE.search(line)
        if m and func:
            f = facts.setdefault((arch, func), {})
            f.update(registers=int(m.group(1)), stack=int(m.group(2)), shared=int(m.group(3)), local=int(m.group(4)))
            func = None
    # SASS: count the instructions that matter.
    sass = subprocess.Popen([cuobjdump, "--dump-sass", binary], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, errors="replace")
    arch, func = "?", None
    for line in sass.stdout:
        m = SASS_ARCH.match(line)
        if m:
            arch = m.group(1)
            continue
        m = SASS_FUNC.match(line)
        if m:
            func = m.group(1)
            facts.setdefault((arch, func), {}).setdefault("instructions", 0)
            continue
        if func is None:
            continue
        m = OPCODE.search(line)
        if not m:
            continue
        f = facts[(arch, func)]
        op = m.group(1)
        f["instructions"] = f.get("instructions", 0) + 1
        if op == "HGMMA":
            f["hgmma"] = f.get("hgmma", 0) + 1
        elif op == "HMMA":
            f["hmma"] = f.get("hmma", 0) + 1
        elif op in ("LDL", "STL"):
            f[op.lower()] = f.get(op.lower(), 0) + 1
    sass.wait()
    if sass.returncode != 0:
        raise RuntimeError(f"cuobjdump --dump-sass {binary}: exit {sass.returncode}")
    return facts


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("binaries", nargs="+")
    ap.add_argument("--filter", default="", help="only kernels whose readable name matches this regex")
    args = ap.parse_args()
    status = 0
    for binary in args.binaries:
        print(f"### {binary}\n")
        try:
            facts = facts_of(binary)
        except (RuntimeError, OSError) as e:
            print(f"- no facts: {e}\n")
            status = 1
            continue
        names = demangle(sorted({sym for _, sym in facts}))
        rows = []
        for (arch, sym), f in facts.items():
            readable = names.get(sym, sym)
            if args.filter and not re.search(args.filter, readable):
                continue
            rows.append((readable, arch, f))
        if not rows:
            print("- no kernels found\n")
            status = 1
            continue
        rows.sort(key=lambda r: (r[0], r[1]))
        print("| kernel | arch | registers | stack B | local B | LDL | STL | HGMMA | HMMA | notes |")
        print("|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
        flagged = 0
        for readable, arch, f in rows:
            notes = []
            if f.get("ldl", 0) or f.get("stl", 0) or f.get("local", 0):
                notes.append("local memory (spills or stack)")
            hopper_gemm = "sm90" in readable and "gemm" in readable.lower() and "GemmKernel" in readable
            if hopper_gemm and not f.get("hgmma", 0) and arch == "sm_90a":
                notes.append("Hopper GEMM without HGMMA")
            flagged += bool(notes)
            print(f"| `{shorten(readable)}` | {arch} | {f.get('registers', '?')} | {f.get('stack', '?')} | "
                  f"{f.get('local', '?')} | {f.get('ldl', 0)} | {f.get('stl', 0)} | {f.get('hgmma', 0)} | "
                  f"{f.get('hmma', 0)} | {'; '.join(notes)} |")
        print(f"\n- {len(rows)} kernels; {flagged} flagged\n")
    return status


if __name__ == "__main__":
    sys.exit(main())
