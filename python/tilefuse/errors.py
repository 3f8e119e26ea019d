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
