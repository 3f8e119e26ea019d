"""The fenced Python examples of README.md and docs/python.md: each is labelled (an HTML comment on the line
before it) `example: cpu`, which runs here as written, or `example: gpu`, which needs a GPU and its inputs and is
compiled here (so a syntax error in the docs fails CI). An unlabelled example fails too."""
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOCS = ("README.md", "docs/python.md")


def examples():
    found = []
    for doc in DOCS:
        lines = (ROOT / doc).read_text().split("\n")
        for i, line in enumerate(lines):
            if line.strip() != "```python":
                continue
            label = re.search(r"<!-- example: (cpu|gpu)", lines[i - 1]) if i else None
            end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
            found.append((f"{doc}:{i + 1}", label.group(1) if label else None, "\n".join(lines[i + 1:end])))
    return found


@pytest.mark.parametrize("where, label, code", examples(), ids=[e[0] for e in examples()])
def test_example(where, label, code):
    assert label is not None, f"{where}: label the example with <!-- example: cpu --> or <!-- example: gpu -->"
    compiled = compile(code, where, "exec")
    if label == "cpu":
        exec(compiled, {"__name__": "docs_example"})


def test_some_examples_run_without_a_gpu():
    assert any(label == "cpu" for _, label, _ in examples())
