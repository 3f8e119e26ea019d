"""The disk cache of compiled kernels: one folder per key holding kernel.cubin and kernel.json.

Key: sha256 over the generated source, its name expression, a hash of every tilefuse header, the NVRTC
flags, the target arch, NVRTC's version and tilefuse's version. Include folders are not in the key:
the tilefuse headers count by content (so a cache survives moving the install), the toolkit's (CCCL,
cuda_fp16.h) through NVRTC's version, as they ship together.

Publishing is atomic: an entry is written into a temporary folder inside the cache folder and renamed
into place, so a reader sees a whole entry or none. A file lock per key makes parallel processes that
miss the same key compile it once: the first builds, the others wait and then read its entry.
"""
import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass

from . import nvrtc
from .errors import CacheMissError, JitError
from .._version import version
from .headers import headers_hash

LAYOUT = 1  # bump when the entry format changes, so old entries are never misread
_CUBIN, _INFO = "kernel.cubin", "kernel.json"
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("", "0", "false", "no", "off")


def cache_dir(directory=None):
    """directory, else $TILEFUSE_CACHE_DIR, else $XDG_CACHE_HOME/tilefuse, else ~/.cache/tilefuse."""
    if directory:
        return os.path.abspath(directory)
    if os.environ.get("TILEFUSE_CACHE_DIR"):
        return os.path.abspath(os.environ["TILEFUSE_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "tilefuse")


def prebuilt_dir():
    """tilefuse/prebuilt in the installed package (absent in a source checkout or with TILEFUSE_PREBUILT=OFF):
    kernels compiled at install time (tilefuse.jit.prebuilt), read only."""
    return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "prebuilt")


def require_cached_from_env():
    """Whether TILEFUSE_JIT_REQUIRE_CACHED asks that a cache miss be an error."""
    raw = os.environ.get("TILEFUSE_JIT_REQUIRE_CACHED", "")
    value = raw.strip().lower()
    if value not in _TRUE + _FALSE:
        raise JitError(f"tilefuse.jit: TILEFUSE_JIT_REQUIRE_CACHED={raw!r}: use 1 (a cache miss is an error) or 0 "
                       "(compile on a miss)")
    return value in _TRUE


def key_inputs(source, name_expression, flags, arch):
    """Everything the compiled kernel depends on, as a dict (the key is its sha256)."""
    return {
        "layout": LAYOUT,
        "source": source,
        "name_expression": name_expression,
        "headers": headers_hash(),
        "flags": list(flags),
        "arch": arch,
        "nvrtc": "%d.%d" % nvrtc.version(),
        "tilefuse": version(),
    }


def cache_key(inputs):
    return hashlib.sha256(json.dumps(inputs, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _summary(inputs):
    """The key inputs as kernel.json keeps them: long values (the source) as their sha256."""
    return {k: v if len(str(v)) <= 200 else "sha256:" + hashlib.sha256(str(v).encode()).hexdigest()
            for k, v in inputs.items()}


@dataclass(frozen=True)
class CachedKernel:
    cubin: bytes
    lowered_name: str  # the kernel's mangled name in the CUBIN
    hit: bool  # False when this call compiled it
    key: str
    path: str  # the entry's folder
    info: dict  # kernel.json: key inputs summary, compile seconds, ...


class KernelCache:
    def __init__(self, directory=None):
        self.directory = cache_dir(directory)

    def entry_path(self, key):
        return os.path.join(self.directory, "kernels", key)

    def lookup(self, key):
        """The entry for `key`, or None when it is missing or damaged (then it is rebuilt)."""
        folder = self.entry_path(key)
        try:
            with open(os.path.join(folder, _INFO)) as f:
                info = json.load(f)
            with open(os.path.join(folder, _CUBIN), "rb") as f:
                cubin = f.read()
        except (FileNotFoundError, NotADirectoryError, ValueError):
            return None
        if (not isinstance(info, dict) or info.get("key") != key or "lowered_name" not in info
                or hashlib.sha256(cubin).hexdigest() != info.get("cubin_sha256")):
            return None
        return CachedKernel(cubin, info["lowered_name"], True, key, folder, info)

    def get_or_build(self, inputs, build, *, describe, require_cached=None):
        """The cached kernel for `inputs`; on a miss, `build()` -> (cubin bytes, lowered name) makes it,
        once across processes (build may return a third item, {name expression: lowered name} of further
        kernels in the CUBIN, kept as info["lowered_names"]). require_cached (None: TILEFUSE_JIT_REQUIRE_CACHED) turns a miss into
        CacheMissError. `describe` names the kernel in messages."""
        key = cache_key(inputs)
        found = self.lookup(key) or self._prebuilt(key)
        if found:
            return found
        if require_cached is None:
            require_cached, switch = require_cached_from_env(), "TILEFUSE_JIT_REQUIRE_CACHED=1"
        else:
            switch = "require_cached=True"
        if require_cached:
            raise CacheMissError(self._miss_message(key, inputs, describe, switch))
        with self._lock(key):
            found = self.lookup(key)  # another process may have built it while this one waited
            if found:
                return found
            return self._build(key, inputs, build, describe)

    def _build(self, key, inputs, build, describe):
        start = time.perf_counter()
        built = build()
        cubin, lowered_name = built[0], built[1]
        seconds = time.perf_counter() - start
        info = {"key": key, "kernel": describe, "lowered_name": lowered_name, "compile_seconds": round(seconds, 3),
                "cubin_bytes": len(cubin), "cubin_sha256": hashlib.sha256(cubin).hexdigest(),
                "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "pid": os.getpid(), "inputs": _summary(inputs)}
        if len(built) > 2:
            info["lowered_names"] = dict(built[2])
        staging = self._folder("tmp")
        self._folder("kernels")
        folder = tempfile.mkdtemp(prefix=key[:16] + ".", dir=staging)
        try:
            _write(os.path.join(folder, _CUBIN), cubin)
            _write(os.path.join(folder, _INFO), json.dumps(info, indent=1).encode())
            entry = self.entry_path(key)
            if os.path.exists(entry):  # damaged (lookup refused it): move it aside, then replace it
                os.replace(entry, folder + ".damaged")
                shutil.rmtree(folder + ".damaged", ignore_errors=True)
            os.replace(folder, entry)
        finally:
            shutil.rmtree(folder, ignore_errors=True)  # only left when publishing failed
        return CachedKernel(cubin, lowered_name, False, key, entry, info)

    def _prebuilt(self, key):
        """The entry for `key` among the kernels built when the package was installed (tilefuse/prebuilt,
        read only; tilefuse.jit.prebuilt), or None."""
        folder = prebuilt_dir()
        if folder == self.directory or not os.path.isdir(folder):
            return None
        return KernelCache(folder).lookup(key)

    @contextlib.contextmanager
    def _lock(self, key):
        folder = self._folder("locks")
        # Lock files stay: deleting one while another process waits on it would let a third build too.
        with open(os.path.join(folder, key + ".lock"), "a") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    def _folder(self, name):
        path = os.path.join(self.directory, name)
        try:
            os.makedirs(path, exist_ok=True)
        except OSError as error:
            raise JitError(f"tilefuse.jit: cannot create the cache folder {path} ({error}); set TILEFUSE_CACHE_DIR "
                           "to a writable folder") from None
        return path

    def _miss_message(self, key, inputs, describe, switch):
        facts = ", ".join(f"{k} {inputs[k]}" for k in ("arch", "nvrtc", "tilefuse") if k in inputs)
        return (f"tilefuse.jit: the kernel {describe} ({facts}; key {key[:16]}) is not in the cache "
                f"{self.directory}, and {switch} forbids compiling it. Build it once with the switch off and "
                f"TILEFUSE_CACHE_DIR={self.directory} (the same call, with the same tilefuse version, headers and "
                "NVRTC version), then ship that folder with the application.")


def _write(path, data):
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())  # the bytes are on disk before the rename makes them visible
