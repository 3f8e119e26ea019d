"""Errors raised by tilefuse's Python layer."""


class EpilogueTraceError(Exception):
    """An epilogue function used something that cannot become an epilogue tree.

    The message starts with the user's file and line (``path:line: in fn: <source>``) and says what to
    use instead. ``filename`` and ``lineno`` hold the location when one was found, else None.
    """

    def __init__(self, message, filename=None, lineno=None):
        super().__init__(message)
        self.filename = filename
        self.lineno = lineno


class TensorArgumentError(ValueError):
    """A tensor handed to a tilefuse operation that it cannot take as it is (not a tensor, the wrong rank,
    shape, dtype, device or memory layout), or a tensor request that needs PyTorch where it is missing.

    Raised by :mod:`tilefuse.tensors` before any kernel runs; the message names the argument, the offending
    values and what to do instead.
    """


class MissingPackageError(ImportError):
    """A tilefuse entry point needs a package that is not installed (PyTorch, numpy); the message names the
    entry point and the pip command."""


def require_torch(what):
    """The torch module, or a MissingPackageError saying that `what` needs it and how to install it."""
    try:
        import torch
    except ImportError:
        raise MissingPackageError(f"{what} needs PyTorch (it allocates outputs and launches on torch's current "
                                  "stream): pip install torch (2.11 tested). Tracing, code generation and the "
                                  "JIT work without it") from None
    return torch


def require_numpy(what):
    """The numpy module, or a MissingPackageError saying that `what` needs it."""
    try:
        import numpy
    except ImportError:
        raise MissingPackageError(f"{what} needs numpy: pip install numpy (or pip install tilefuse[numpy])") from None
    return numpy
