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
