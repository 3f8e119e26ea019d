"""The fenced Python and C++ examples of README.md and docs/python.md: each is labelled (an HTML comment on the
line before it) `example: cpu`, which runs here as written (C++: built with the host compiler and run; it must
exit 0), or `example: gpu`, which makes its own inputs and runs as written where torch has an sm_90 GPU, and
is compiled elsewhere (so a syntax error in the docs fails CI). An unlabelled example fails too."""
import pathlib
import re
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOCS = ("README.md", "docs/python.md")


def examples(language="python"):
    found = []
    for doc in DOCS:
        lines = (ROOT / doc).read_text().split("\n")
        for i, line in enumerate(lines):
            if line.strip() != "```" + language:
                continue
            label = re.search(r"<!-- example: (cpu|gpu)", lines[i - 1]) if i else None
            end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
            found.append((f"{doc}:{i + 1}", label.group(1) if label else None, "\n".join(lines[i + 1:end])))
    return found


def hopper_gpu():
    """Whether the gpu examples can run here: torch with an sm_90 GPU (the Hopper GEMM's)."""
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available() and torch.cuda.get_device_capability() == (9, 0)


@pytest.mark.parametrize("where, label, code", examples(), ids=[e[0] for e in examples()])
def test_example(where, label, code, tmp_path, monkeypatch):
    assert label is not None, f"{where}: label the example with <!-- example: cpu --> or <!-- example: gpu -->"
    compiled = compile(code, where, "exec")
    if label == "cpu" or hopper_gpu():
        monkeypatch.chdir(tmp_path)  # examples that write files write them here
        exec(compiled, {"__name__": "docs_example"})


def test_some_examples_run_without_a_gpu():
    assert any(label == "cpu" for _, label, _ in examples())


@pytest.mark.parametrize("where, label, code", examples("cpp"), ids=[e[0] for e in examples("cpp")])
def test_cpp_example(where, label, code, tmp_path):
    from cpp_host import find_toolchain

    assert label == "cpu", f"{where}: label the C++ example with <!-- example: cpu --> (a host program that runs)"
    compiler, includes = find_toolchain()
    if compiler is None:
        pytest.skip(includes)
    source = tmp_path / "example.cpp"
    source.write_text(code)
    built = subprocess.run([compiler, "-std=c++20", "-O1", *(f"-I{d}" for d in includes), str(source),
                            str(ROOT / "src" / "core" / "status.cpp"), "-o", str(tmp_path / "example")],
                           capture_output=True, text=True)
    assert built.returncode == 0, f"{where} does not build:\n{built.stderr[-3000:]}"
    ran = subprocess.run([str(tmp_path / "example")], capture_output=True, text=True, timeout=60)
    assert ran.returncode == 0, f"{where} exited {ran.returncode}: {ran.stdout}{ran.stderr}"


def test_the_readme_has_a_cpp_example():
    assert examples("cpp")
