#!/usr/bin/env python3
"""Times the JIT for one fused kernel (issue 6's goals: cold compile <= 2 s, warm load <= 20 ms).

    PYTHONPATH=<where tilefuse is installed> python3 scripts/jit_timing.py [--config Sm90LargeConfig]

cold:       gemm_kernel() with an empty cache folder, in a fresh process (NVRTC opened, headers hashed,
            kernel compiled, entry published);
warm, new process:  the first gemm_kernel() of a fresh process on a cached kernel (NVRTC opened for its
            version, headers hashed, entry read) - what a restarted application pays;
warm, same process: a repeated gemm_kernel() (median), and load_kernel() (needs a GPU; skipped without):
            the first load of the process (which also creates the CUDA context) and the median of later ones.
The epilogue is README's: D = relu(alpha * acc + bias) + C, bf16.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

_CHILD = """
import json, sys, time
start = time.perf_counter()
from tilefuse.epilogue import relu, to_cpp, trace
from tilefuse.jit import gemm_kernel
tree = to_cpp(trace(lambda acc, bias, C, alpha: relu(alpha * acc + bias) + C, bias=(256,), C=(128, 256), alpha=1.0),
              "bfloat16")
imported = time.perf_counter()
kernel = gemm_kernel(tree, "bfloat16", sys.argv[1])
done = time.perf_counter()
print(json.dumps({"hit": kernel.hit, "import_s": imported - start, "call_s": done - imported,
                  "compile_s": kernel.info["compile_seconds"]}))
"""


def run_child(config, cache):
    env = {**os.environ, "TILEFUSE_CACHE_DIR": cache}
    env.pop("TILEFUSE_JIT_REQUIRE_CACHED", None)
    out = subprocess.run([sys.executable, "-c", _CHILD, config], env=env, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"jit_timing: the timed process failed:\n{out.stderr}")
    return json.loads(out.stdout)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", default="Sm90LargeConfig", help="a Hopper config of gemm_config.h")
    parser.add_argument("--repeat", type=int, default=20, help="repeated warm calls in one process")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="tilefuse-jit-timing-") as cache:
        cold = run_child(args.config, cache)
        assert not cold["hit"], "the cache folder was not empty"
        warm = run_child(args.config, cache)
        assert warm["hit"], "the second process did not find the kernel in the cache"

        os.environ["TILEFUSE_CACHE_DIR"] = cache
        from tilefuse.epilogue import relu, to_cpp, trace
        from tilefuse.jit import NoCudaDeviceError, gemm_kernel, load_kernel
        tree = to_cpp(trace(lambda acc, bias, C, alpha: relu(alpha * acc + bias) + C, bias=(256,), C=(128, 256),
                            alpha=1.0), "bfloat16")
        gemm_kernel(tree, "bfloat16", args.config)  # opens NVRTC and hashes headers once
        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            kernel = gemm_kernel(tree, "bfloat16", args.config)
            times.append(time.perf_counter() - start)
        try:
            # The first load of a process also creates the CUDA context (a cost of any CUDA program, paid
            # once); the later loads are what each new kernel costs.
            start = time.perf_counter()
            load_kernel(kernel).unload()
            first = (time.perf_counter() - start) * 1e3
            loads = []
            for _ in range(args.repeat):
                start = time.perf_counter()
                load_kernel(kernel).unload()
                loads.append((time.perf_counter() - start) * 1e3)
            load = (f"{statistics.median(loads):.2f} ms (median of {args.repeat}); the process's first load, which "
                    f"also creates the CUDA context: {first:.1f} ms")
        except NoCudaDeviceError:
            load = "skipped: no CUDA device here"

    print(f"kernel: sm90 GEMM, bf16, {args.config}, epilogue relu(alpha * acc + bias) + C; cubin "
          f"{len(kernel.cubin)} bytes; {os.cpu_count()} CPUs")
    print(f"cold compile (new process, empty cache):   {cold['call_s'] * 1e3:8.1f} ms "
          f"(NVRTC itself {cold['compile_s'] * 1e3:.0f} ms; importing tilefuse {cold['import_s'] * 1e3:.0f} ms before)")
    print(f"warm hit, first call of a new process:     {warm['call_s'] * 1e3:8.1f} ms")
    print(f"warm hit, same process (median of {args.repeat}):   {statistics.median(times) * 1e3:8.2f} ms")
    print(f"load_kernel (cudaLibraryLoadData):         {load}")


if __name__ == "__main__":
    main()
