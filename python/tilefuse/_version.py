"""tilefuse's version: the compiled extension's, or while the package builds its prebuilt kernels from a
staged copy, $TILEFUSE_VERSION. A leaf: the JIT's cache key reads it without importing the package."""
import os


def version():
    try:
        from ._C import __version__
    except ImportError:
        return os.environ["TILEFUSE_VERSION"]
    return __version__
