"""Builds one host program that runs generated epilogue trees through the C++ host driver
(tilefuse::epilogue::run_host, the reference every kernel is checked against) on data from files."""
import os
import shutil
import subprocess

import numpy as np

from tilefuse import ELEMENT_TYPES

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def find_toolchain():
    """(compiler, [include dirs]) or (None, reason)."""
    compiler = os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++") or shutil.which("clang++")
    if not compiler:
        return None, "no C++ compiler (g++, c++, clang++ or $CXX) found"
    roots = [os.environ.get(v) for v in ("CUDA_HOME", "CUDA_PATH")]
    nvcc = shutil.which("nvcc")
    roots += [os.path.dirname(os.path.dirname(nvcc)) if nvcc else None, "/usr/local/cuda"]
    for root in filter(None, roots):
        include = os.path.join(root, "include")
        if os.path.exists(os.path.join(include, "cuda_fp16.h")):
            cccl = [d for d in (os.path.join(include, "cccl"), include)
                    if os.path.exists(os.path.join(d, "cuda", "std", "type_traits"))]
            if cccl:
                return compiler, [os.path.join(REPO, "include"), include, cccl[0]]
    return None, "no CUDA toolkit headers (cuda_fp16.h, cuda/std) found: set CUDA_HOME"


_PRELUDE = r"""
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <tilefuse/epilogue/host_driver.hpp>

using namespace tilefuse;
using namespace tilefuse::epilogue;

static std::vector<float> read_floats(std::string const& path, std::size_t count) {
  std::vector<float> v(count);
  std::ifstream in(path, std::ios::binary);
  in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(count * sizeof(float)));
  if (!in) { std::fprintf(stderr, "cannot read %zu floats from %s\n", count, path.c_str()); std::exit(2); }
  return v;
}
static void write_floats(std::string const& path, std::vector<float> const& v) {
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<char const*>(v.data()),
                                              static_cast<std::streamsize>(v.size() * sizeof(float)));
}
template <class T> std::vector<T> narrow(std::vector<float> const& v) {
  std::vector<T> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = convert<T>(v[i]);
  return out;
}
template <class T> std::vector<float> widen(std::vector<T> const& v) {
  std::vector<float> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = to_float(v[i]);
  return out;
}
"""


def _case_source(index, tree):
    """C++ for one tree: case<index>(dir, shape) sets every argument from files, runs, writes outputs."""
    b, m, n = "shape.batch", "shape.rows", "shape.cols"
    lengths = {"row_broadcast": f"{b} * {n}", "col_broadcast": f"{b} * {m}", "aux_load": f"{b} * {m} * {n}",
               "store": f"{b} * {m} * {n}", "row_reduce": f"{b} * {m}", "col_reduce": f"{b} * {n}"}
    body, after = [], []
    for a in tree.arguments:
        var, path = f"arg_{a.name}", f'dir + "/{a.name}"'
        if a.kind == "scalar":
            body.append(f'args.set("{a.name}", read_floats({path}, 1)[0]);')
            continue
        cpp = ELEMENT_TYPES[a.dtype].cpp
        if a.is_output:
            body.append(f"std::vector<{cpp}> {var}({lengths[a.kind]});")
            after.append(f'write_floats({path} + ".out", widen({var}));')
        else:
            body.append(f"auto {var} = narrow<{cpp}>(read_floats({path}, {lengths[a.kind]}));")
        body.append(f'args.set("{a.name}", {var}.data());')
    lines = "\n  ".join(body + [
        f"auto acc = read_floats(dir + \"/acc\", {b} * {m} * {n});",
        f"Status status = run_host<Tree>(args, MatrixRef<float const, RowMajor>::packed(acc.data(), {m}, {n}), shape);",
        'if (!status.ok()) { std::fprintf(stderr, "%s\\n", status.to_string().c_str()); return 1; }',
        *after,
        'for (auto const& name : EpilogueArguments<Tree>::argument_names()) std::printf("%s\\n", name.c_str());',
        "return 0;"])
    return (f"namespace case{index} {{\nusing Tree = {tree};\n"
            f"int run(std::string const& dir, ProblemShape shape) {{\n  EpilogueArguments<Tree> args;\n  {lines}\n}}\n}}\n")


def build(trees, workdir):
    """Compiles a program running `trees` (CppEpilogue values); returns its path. Raises on failure with
    the compiler's output."""
    compiler, includes = find_toolchain()
    if compiler is None:
        raise RuntimeError(includes)
    cases = "".join(_case_source(i, t) for i, t in enumerate(trees))
    dispatch = "\n".join(f"  if (which == {i}) return case{i}::run(dir, shape);" for i in range(len(trees)))
    main = ("int main(int argc, char** argv) {\n  if (argc != 6) return 2;\n  int const which = std::atoi(argv[1]);\n"
            "  std::string const dir = argv[2];\n"
            "  ProblemShape shape{std::atoll(argv[4]), std::atoll(argv[5]), std::atoll(argv[3])};\n"
            f"{dispatch}\n  return 2;\n}}\n")
    source = os.path.join(workdir, "epilogues.cpp")
    with open(source, "w") as f:
        f.write(_PRELUDE + cases + main)
    binary = os.path.join(workdir, "epilogues")
    command = [compiler, "-std=c++20", "-O1", *[f"-I{d}" for d in includes], source,
               os.path.join(REPO, "src", "core", "status.cpp"), "-o", binary]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise AssertionError(f"the generated C++ did not compile ({' '.join(command)}):\n{result.stderr[-6000:]}")
    return binary


def run(binary, index, workdir, acc, arrays, scalars):
    """Writes acc (b, m, n), the batched input arrays and the scalars; runs case `index`; returns
    (argument names as C++ lists them, {output: float array as written})."""
    b, m, n = acc.shape
    acc.astype(np.float32).tofile(os.path.join(workdir, "acc"))
    for name, value in {**arrays, **scalars}.items():
        np.asarray(value, np.float32).tofile(os.path.join(workdir, name))
    result = subprocess.run([binary, str(index), workdir, str(b), str(m), str(n)], capture_output=True, text=True)
    assert result.returncode == 0, f"case {index} failed: {result.stderr}"
    outputs = {f[:-4]: np.fromfile(os.path.join(workdir, f), np.float32) for f in os.listdir(workdir) if f.endswith(".out")}
    return result.stdout.split(), outputs
