"""No Python file of the package, its benchmarks or its tests uses a name it never defines or imports:
such a slip (a missing `import functools`) only shows when the line runs, often on the GPU alone."""
import pathlib

import pytest

pyflakes_api = pytest.importorskip("pyflakes.api", reason="pyflakes is installed by scripts/setup.sh")
from pyflakes import messages, reporter  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]
UNDEFINED = (messages.UndefinedName, messages.UndefinedLocal, messages.UndefinedExport)


class _Collect(reporter.Reporter):
    def __init__(self):
        super().__init__(None, None)
        self.found = []

    def flake(self, message):
        if isinstance(message, UNDEFINED):
            self.found.append(str(message))

    def syntaxError(self, filename, msg, lineno, offset, text):  # noqa: N802 - pyflakes' interface
        self.found.append(f"{filename}:{lineno}: syntax error: {msg}")

    def unexpectedError(self, filename, msg):  # noqa: N802
        self.found.append(f"{filename}: {msg}")


def test_no_undefined_names():
    files = [p for d in ("python/tilefuse", "bench/python", "tests/python", "examples", "scripts")
             for p in sorted((ROOT / d).rglob("*.py"))]
    assert len(files) > 50, f"found only {len(files)} Python files under {ROOT}"
    collect = _Collect()
    for path in files:
        pyflakes_api.checkPath(str(path), collect)
    assert not collect.found, "\n".join(collect.found)


def test_the_check_sees_an_undefined_name():
    collect = _Collect()
    pyflakes_api.check("def f():\n    return functools.partial(print)\n", "example.py", collect)
    assert collect.found and "functools" in collect.found[0]
