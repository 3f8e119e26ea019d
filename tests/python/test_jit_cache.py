"""The JIT's disk cache without NVRTC: the key, the miss-as-error switch, atomic publishing, the lock."""
import json
import multiprocessing
import os
import shutil
import time

import pytest

from tilefuse.jit import CacheMissError, JitError, KernelCache, cache_dir, cache_key
from tilefuse.jit.headers import headers_hash, include_dir

BASE = {"layout": 1, "source": "// kernel\n", "name_expression": "&k<int>", "headers": "h" * 64,
        "flags": ["-std=c++20", "--gpu-architecture=sm_90a"], "arch": "sm_90a", "nvrtc": "13.0", "tilefuse": "0.1.0"}
CUBIN = b"\x7fELF fake cubin"


def build_once():
    return CUBIN, "_Z1kv"


def never_build():
    raise AssertionError("the cache compiled although the kernel was cached or compiling was forbidden")


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("TILEFUSE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TILEFUSE_JIT_REQUIRE_CACHED", raising=False)


@pytest.mark.parametrize("field, value", [
    ("source", "// kernel 2\n"), ("name_expression", "&k<float>"), ("headers", "g" * 64),
    ("flags", ["-std=c++20", "--gpu-architecture=sm_90a", "-lineinfo"]), ("arch", "sm_100a"), ("nvrtc", "13.1"),
    ("tilefuse", "0.2.0"), ("layout", 2)])
def test_key_changes_with_every_input(field, value):
    assert cache_key({**BASE, field: value}) != cache_key(BASE)


def test_key_is_stable():
    reordered = dict(reversed(list(BASE.items())))
    assert cache_key(BASE) == cache_key(dict(BASE)) == cache_key(reordered)
    assert len(cache_key(BASE)) == 64


def test_headers_hash_follows_every_header(tmp_path):
    root = tmp_path / "include"
    shutil.copytree(os.path.join(include_dir(), "tilefuse"), root / "tilefuse")
    fresh = headers_hash.__wrapped__  # the uncached function: the cached one answers once per process
    first = fresh(str(root))
    assert first == fresh(str(root)) == headers_hash(include_dir())
    header = root / "tilefuse" / "epilogue" / "ops.h"
    header.write_text(header.read_text() + "\n// changed\n")
    changed = fresh(str(root))
    (root / "tilefuse" / "core" / "new.h").write_text("#pragma once\n")
    added = fresh(str(root))
    assert len({first, changed, added}) == 3


def test_installed_package_carries_the_headers():
    # python/CMakeLists.txt installs include/tilefuse into the package; it must be all of it.
    repo_include = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "include")
    assert os.path.isfile(os.path.join(include_dir(), "tilefuse", "gemm", "kernel", "sm90_gemm.h"))
    assert headers_hash.__wrapped__(include_dir()) == headers_hash.__wrapped__(repo_include)


def test_cache_dir_default_and_override(monkeypatch, tmp_path):
    assert cache_dir() == str(tmp_path / "cache")
    assert cache_dir(tmp_path / "x") == str(tmp_path / "x")
    monkeypatch.delenv("TILEFUSE_CACHE_DIR")
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert cache_dir() == os.path.join(os.path.expanduser("~"), ".cache", "tilefuse")


def test_unwritable_cache_folder_says_what_to_do(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(JitError, match="cannot create the cache folder .*set TILEFUSE_CACHE_DIR to a writable"):
        KernelCache(tmp_path / "file" / "cache").get_or_build(BASE, build_once, describe="k")


def test_miss_builds_then_hits():
    cache = KernelCache()
    built = cache.get_or_build(BASE, build_once, describe="k")
    assert not built.hit and built.cubin == CUBIN and built.lowered_name == "_Z1kv"
    info = json.load(open(os.path.join(built.path, "kernel.json")))
    assert info["lowered_name"] == "_Z1kv" and info["inputs"]["arch"] == "sm_90a" and "compile_seconds" in info
    again = cache.get_or_build(BASE, never_build, describe="k", require_cached=True)
    assert again.hit and again.cubin == CUBIN and again.key == built.key


def test_require_cached_turns_a_miss_into_an_error(monkeypatch):
    cache = KernelCache()
    with pytest.raises(CacheMissError, match=r"kernel my::Kernel<1> \(arch sm_90a, nvrtc 13.0.*require_cached=True"):
        cache.get_or_build(BASE, never_build, describe="my::Kernel<1>", require_cached=True)
    monkeypatch.setenv("TILEFUSE_JIT_REQUIRE_CACHED", "1")
    with pytest.raises(CacheMissError, match="TILEFUSE_JIT_REQUIRE_CACHED=1 forbids compiling it.*TILEFUSE_CACHE_DIR="):
        cache.get_or_build(BASE, never_build, describe="my::Kernel<1>")
    # The argument wins over the environment.
    assert not cache.get_or_build(BASE, build_once, describe="k", require_cached=False).hit
    monkeypatch.setenv("TILEFUSE_JIT_REQUIRE_CACHED", "maybe")
    with pytest.raises(JitError, match="TILEFUSE_JIT_REQUIRE_CACHED='maybe': use 1"):
        cache.get_or_build({**BASE, "arch": "sm_80"}, never_build, describe="k")


def test_no_entry_is_visible_while_building_or_after_a_failure(monkeypatch):
    cache = KernelCache()
    key = cache_key(BASE)

    def build_and_look():
        assert cache.lookup(key) is None and not os.path.exists(cache.entry_path(key))
        return build_once()

    def failing_build():
        raise RuntimeError("compiler crashed")

    with pytest.raises(RuntimeError, match="compiler crashed"):
        cache.get_or_build(BASE, failing_build, describe="k")
    assert cache.lookup(key) is None

    # Publishing fails after the files were written: nothing is visible, nothing is left behind.
    def full_disk(*_):
        raise OSError("disk full")

    with monkeypatch.context() as patch:
        patch.setattr(os, "replace", full_disk)
        with pytest.raises(OSError, match="disk full"):
            cache.get_or_build(BASE, build_once, describe="k")
    assert cache.lookup(key) is None and os.listdir(os.path.join(cache.directory, "tmp")) == []

    assert not cache.get_or_build(BASE, build_and_look, describe="k").hit
    assert os.listdir(os.path.join(cache.directory, "tmp")) == []


def test_a_damaged_entry_is_rebuilt():
    cache = KernelCache()
    built = cache.get_or_build(BASE, build_once, describe="k")
    with open(os.path.join(built.path, "kernel.cubin"), "wb") as f:
        f.write(CUBIN[:4])  # truncated
    assert cache.lookup(built.key) is None
    rebuilt = cache.get_or_build(BASE, build_once, describe="k")
    assert not rebuilt.hit and cache.lookup(built.key).cubin == CUBIN


def _build_in_process(directory, marker, barrier, results):
    def slow_build():
        with open(marker, "a") as f:
            f.write(f"{os.getpid()}\n")
        time.sleep(1.0)  # long enough that the other process misses and waits on the lock
        return build_once()

    barrier.wait()
    kernel = KernelCache(directory).get_or_build(BASE, slow_build, describe="k")
    results.put((kernel.hit, kernel.cubin))


def test_parallel_processes_build_once(tmp_path):
    context = multiprocessing.get_context("fork")
    marker, barrier, results = tmp_path / "compiles", context.Barrier(2), context.Queue()
    processes = [context.Process(target=_build_in_process, args=(str(tmp_path / "shared"), str(marker), barrier,
                                                                 results)) for _ in range(2)]
    for p in processes:
        p.start()
    outcomes = [results.get(timeout=60) for _ in processes]
    for p in processes:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert len(marker.read_text().split()) == 1, "both processes compiled"
    assert sorted(hit for hit, _ in outcomes) == [False, True]
    assert all(cubin == CUBIN for _, cubin in outcomes)
