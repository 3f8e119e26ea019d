"""A small ctypes binding to libnvrtc: version, compile a program to CUBIN / PTX, lowered names.

The library is opened on first use (not at import), so importing tilefuse needs no CUDA toolkit.
"""
import ctypes
import functools
from dataclasses import dataclass

from .errors import NvrtcError, NvrtcNotFoundError
from .toolkit import find_shared_library

_program = ctypes.c_void_p  # nvrtcProgram: an opaque pointer
_size = ctypes.c_size_t


@functools.lru_cache(maxsize=None)
def library():
    """The opened libnvrtc with its signatures declared; raises NvrtcNotFoundError naming where it looked."""
    path, searched = find_shared_library("nvrtc")
    if path is None:
        raise NvrtcNotFoundError("tilefuse.jit: libnvrtc (the CUDA toolkit's runtime compiler) was not found; "
                                 "searched: " + ", ".join(searched) + ". Install the CUDA toolkit (12.8 or newer) or "
                                 "set CUDA_HOME to its folder.")
    try:
        lib = ctypes.CDLL(path)
    except OSError as error:
        raise NvrtcNotFoundError(f"tilefuse.jit: libnvrtc was found at {path} but could not be loaded: {error}; "
                                 "set CUDA_HOME to a working CUDA toolkit") from None
    signatures = {
        "nvrtcGetErrorString": ([ctypes.c_int], ctypes.c_char_p),
        "nvrtcVersion": ([ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int)], ctypes.c_int),
        "nvrtcCreateProgram": ([ctypes.POINTER(_program), ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int,
                                ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_char_p)], ctypes.c_int),
        "nvrtcDestroyProgram": ([ctypes.POINTER(_program)], ctypes.c_int),
        "nvrtcAddNameExpression": ([_program, ctypes.c_char_p], ctypes.c_int),
        "nvrtcCompileProgram": ([_program, ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)], ctypes.c_int),
        "nvrtcGetProgramLogSize": ([_program, ctypes.POINTER(_size)], ctypes.c_int),
        "nvrtcGetProgramLog": ([_program, ctypes.c_char_p], ctypes.c_int),
        "nvrtcGetCUBINSize": ([_program, ctypes.POINTER(_size)], ctypes.c_int),
        "nvrtcGetCUBIN": ([_program, ctypes.c_char_p], ctypes.c_int),
        "nvrtcGetPTXSize": ([_program, ctypes.POINTER(_size)], ctypes.c_int),
        "nvrtcGetPTX": ([_program, ctypes.c_char_p], ctypes.c_int),
        "nvrtcGetLoweredName": ([_program, ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p)], ctypes.c_int),
    }
    for name, (argtypes, restype) in signatures.items():
        function = getattr(lib, name)
        function.argtypes, function.restype = argtypes, restype
    return lib


def _check(result, what, log=""):
    if result != 0:
        text = library().nvrtcGetErrorString(result).decode()
        raise NvrtcError(f"tilefuse.jit: {what} failed with {text}" + (f"; NVRTC's log:\n{log}" if log else ""), log)


@functools.lru_cache(maxsize=None)
def version():
    """NVRTC's (major, minor), e.g. (13, 0)."""
    major, minor = ctypes.c_int(), ctypes.c_int()
    _check(library().nvrtcVersion(ctypes.byref(major), ctypes.byref(minor)), "nvrtcVersion")
    return major.value, minor.value


def _strings(values):
    encoded = [v.encode() for v in values]
    return (ctypes.c_char_p * len(encoded))(*encoded), len(encoded)


class Program:
    """One NVRTC program: add name expressions, compile, then read the log, CUBIN, PTX and lowered names.
    Use it as a context manager (or call close()) so NVRTC's memory is freed."""

    def __init__(self, source, name="tilefuse_jit.cu"):
        lib = library()
        self._handle = _program()
        _check(lib.nvrtcCreateProgram(ctypes.byref(self._handle), source.encode(), name.encode(), 0, None, None),
               "nvrtcCreateProgram")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        if self._handle:
            library().nvrtcDestroyProgram(ctypes.byref(self._handle))
            self._handle = _program()

    def add_name_expression(self, expression):
        _check(library().nvrtcAddNameExpression(self._handle, expression.encode()),
               f"nvrtcAddNameExpression({expression!r})")

    def compile(self, options):
        """Compiles with `options` (e.g. ["-std=c++20", "--gpu-architecture=sm_90a", "-I..."]); raises
        NvrtcError with the log on failure, returns the log (warnings) on success."""
        array, count = _strings(options)
        result = library().nvrtcCompileProgram(self._handle, count, array)
        log = self.log()
        _check(result, "compiling the generated kernel with NVRTC (options: " + " ".join(options) + ")", log)
        return log

    def log(self):
        return self._read(library().nvrtcGetProgramLogSize, library().nvrtcGetProgramLog, "log").rstrip(b"\0").decode(
            errors="replace").strip()

    def cubin(self):
        """The CUBIN (present when compiled for a real arch, sm_XX; a virtual one, compute_XX, gives PTX only)."""
        return self._read(library().nvrtcGetCUBINSize, library().nvrtcGetCUBIN, "CUBIN")

    def ptx(self):
        return self._read(library().nvrtcGetPTXSize, library().nvrtcGetPTX, "PTX").rstrip(b"\0").decode()

    def lowered_name(self, expression):
        """The mangled name of an expression given to add_name_expression before compiling."""
        name = ctypes.c_char_p()
        _check(library().nvrtcGetLoweredName(self._handle, expression.encode(), ctypes.byref(name)),
               f"nvrtcGetLoweredName({expression!r})")
        return name.value.decode()

    def _read(self, get_size, get, what):
        size = _size()
        _check(get_size(self._handle, ctypes.byref(size)), f"reading NVRTC's {what} size")
        buffer = ctypes.create_string_buffer(size.value)
        _check(get(self._handle, buffer), f"reading NVRTC's {what}")
        return buffer.raw


@dataclass(frozen=True)
class Compiled:
    cubin: bytes
    lowered_names: dict  # name expression -> mangled name
    log: str  # NVRTC's warnings, '' when none


def compile_to_cubin(source, name_expressions, options, program_name="tilefuse_jit.cu"):
    """Compiles `source` with `options` (which must name a real arch, --gpu-architecture=sm_XX) and returns
    the CUBIN and the lowered name of each name expression. Raises NvrtcError with NVRTC's log."""
    with Program(source, program_name) as program:
        for expression in name_expressions:
            program.add_name_expression(expression)
        log = program.compile(options)
        cubin = program.cubin()
        if not cubin:
            raise NvrtcError("tilefuse.jit: NVRTC produced no CUBIN; compile for a real arch "
                             "(--gpu-architecture=sm_90a), not a virtual one (compute_90a)", log)
        return Compiled(cubin, {e: program.lowered_name(e) for e in name_expressions}, log)
