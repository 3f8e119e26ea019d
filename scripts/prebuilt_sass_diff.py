#!/usr/bin/env python3
"""Whether a change left the library's kernels alone, without a GPU: the SASS of every kernel in two prebuilt
sets (python -m tilefuse.jit.prebuilt --out DIR, one before and one after the change), matched by kernel name
and compared instruction by instruction (cuobjdump -sass; addresses and the cubin's header lines ignored).

    python3 scripts/prebuilt_sass_diff.py BEFORE/kernels AFTER/kernels [--cuobjdump PATH]

Prints the kernels whose SASS differs, those in only one set, and a summary; exits 1 if any differ or are in
one set only."""
import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys


def find_cuobjdump(given):
    if given:
        return given
    found = shutil.which("cuobjdump") or "/usr/local/cuda/bin/cuobjdump"
    if os.path.exists(found):
        return found
    try:  # Triton's wheel carries one
        import triton
        candidate = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")
        if os.path.exists(candidate):
            return candidate
    except ImportError:
        pass
    sys.exit("prebuilt_sass_diff: no cuobjdump found (pass --cuobjdump PATH)")


def sass_of(cuobjdump, root):
    """{kernel name + arch: (sha256 of its SASS, instruction lines)} of a prebuilt set."""
    found = {}
    for key in sorted(os.listdir(root)):
        folder = os.path.join(root, key)
        with open(os.path.join(folder, "kernel.json")) as f:
            meta = json.load(f)
        text = subprocess.run([cuobjdump, "-sass", os.path.join(folder, "kernel.cubin")], capture_output=True,
                              text=True, check=True).stdout
        lines = [re.sub(r"/\*[0-9a-f]{4,}\*/", "", line).strip() for line in text.splitlines()
                 if line.strip() and "code for" not in line and "Fatbin" not in line]
        name = f"{meta['kernel']} [{meta.get('inputs', {}).get('arch', '')}]"
        found[name] = (hashlib.sha256("\n".join(lines).encode()).hexdigest(), len(lines))
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--cuobjdump")
    args = parser.parse_args()
    tool = find_cuobjdump(args.cuobjdump)
    before, after = sass_of(tool, args.before), sass_of(tool, args.after)
    changed = sorted(k for k in before.keys() & after.keys() if before[k][0] != after[k][0])
    for name in changed:
        print(f"differs ({before[name][1]} -> {after[name][1]} lines): {name[:200]}")
    for name in sorted(before.keys() - after.keys()):
        print(f"only before: {name[:200]}")
    for name in sorted(after.keys() - before.keys()):
        print(f"only after: {name[:200]}")
    same = len(before.keys() & after.keys()) - len(changed)
    print(f"{same} kernels with identical SASS, {len(changed)} differ, {len(before.keys() - after.keys())} only "
          f"before, {len(after.keys() - before.keys())} only after")
    return 1 if changed or before.keys() != after.keys() else 0


if __name__ == "__main__":
    sys.exit(main())
