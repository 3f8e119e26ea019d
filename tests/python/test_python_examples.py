"""examples/python/: each script runs as a user would run it (a subprocess, small sizes). Without a CUDA GPU
each must say so and exit 0; with an sm_90 GPU each must run its check and exit 0 (they compare against float64
and exit 1 when tilefuse's error is more than twice torch's own)."""
import pathlib
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples" / "python"
RUNS = {"fused_conv.py": ["--batch", "2", "--channels", "64", "--size", "8"],
        "compile_model.py": ["--batch", "2", "--size", "64"],
        "tensor_parallel.py": ["--tokens", "256", "--hidden", "256"]}


def test_every_example_is_run_here():
    assert sorted(p.name for p in EXAMPLES.glob("*.py")) == sorted(RUNS)


@pytest.mark.parametrize("script", sorted(RUNS))
def test_example_runs(script):
    gpu = torch.cuda.is_available() and torch.cuda.get_device_capability() == (9, 0)
    done = subprocess.run([sys.executable, str(EXAMPLES / script), *RUNS[script]], capture_output=True, text=True,
                          timeout=900, cwd=EXAMPLES)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    if not torch.cuda.is_available():
        assert "no CUDA GPU" in done.stdout, done.stdout
    elif gpu:
        assert "no CUDA GPU" not in done.stdout and "FAILED" not in done.stdout, done.stdout
