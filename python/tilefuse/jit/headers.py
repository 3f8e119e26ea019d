"""Where the tilefuse C++ headers are at run time, and one hash of all of them (part of the cache key).

An installed package carries them in tilefuse/include (python/CMakeLists.txt installs include/tilefuse
there); running from a source checkout, the checkout's include/ is used.
"""
import functools
import hashlib
import os

from .errors import JitError

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # .../tilefuse
_CANDIDATES = (
    os.path.join(_PACKAGE, "include"),  # installed wheel
    os.path.join(os.path.dirname(os.path.dirname(_PACKAGE)), "include"),  # checkout: python/tilefuse -> include
)
_HEADER_SUFFIXES = (".h", ".hpp", ".cuh")


def include_dir():
    """The folder holding tilefuse/ (what -I must name). Raises JitError when neither place has the headers."""
    for candidate in _CANDIDATES:
        if os.path.isfile(os.path.join(candidate, "tilefuse", "gemm", "kernel", "sm90_gemm.h")):
            return candidate
    raise JitError("tilefuse.jit: the tilefuse C++ headers were not found in " + " or ".join(_CANDIDATES)
                   + "; reinstall the package (pip install .), which copies include/tilefuse into it")


@functools.lru_cache(maxsize=None)
def headers_hash(root=None):
    """sha256 over the relative path and contents of every header under <root>/tilefuse, in sorted order.
    Computed once per process and folder: a changed, added or removed header changes it."""
    root = root or include_dir()
    digest = hashlib.sha256()
    paths = []
    for folder, _, files in os.walk(os.path.join(root, "tilefuse")):
        paths += [os.path.join(folder, f) for f in files if f.endswith(_HEADER_SUFFIXES)]
    for path in sorted(paths):
        digest.update(os.path.relpath(path, root).replace(os.sep, "/").encode() + b"\0")
        with open(path, "rb") as f:
            contents = f.read()
        digest.update(len(contents).to_bytes(8, "little") + contents)
    return digest.hexdigest()
