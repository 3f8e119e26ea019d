"""Errors of the JIT. All derive from JitError, so one except clause catches every JIT failure."""


class JitError(RuntimeError):
    """A kernel could not be generated, compiled, cached or loaded; the message says why and what to do."""


class NvrtcNotFoundError(JitError):
    """libnvrtc (the CUDA toolkit's runtime compiler) was not found; the message lists where it looked."""


class NvrtcError(JitError):
    """An NVRTC call failed. `log` holds NVRTC's compile log ('' when there was none)."""

    def __init__(self, message, log=""):
        super().__init__(message)
        self.log = log


class CacheMissError(JitError):
    """A kernel was not in the disk cache and compiling was forbidden (TILEFUSE_JIT_REQUIRE_CACHED=1 or
    require_cached=True)."""


class NoCudaDeviceError(JitError):
    """A compiled kernel cannot be loaded: there is no CUDA device, driver or CUDA runtime library."""
