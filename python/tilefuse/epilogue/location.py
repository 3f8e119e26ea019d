"""Finding the user's line for an error: the innermost frame that is neither tilefuse's own code nor a
library's (numpy, torch, the standard library), so a message points at the epilogue the user wrote."""
import linecache
import os
import sys
import sysconfig

from ..errors import EpilogueTraceError

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _library_dirs():
    dirs = {sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    for module in ("numpy", "torch"):
        if module in sys.modules and getattr(sys.modules[module], "__file__", None):
            dirs.add(os.path.dirname(sys.modules[module].__file__))
    return tuple(os.path.abspath(d) + os.sep for d in dirs if d)


def _is_user_file(filename):
    path = os.path.abspath(filename)
    if path.startswith(_PACKAGE_DIR + os.sep) or filename.startswith("<frozen"):
        return False
    return not path.startswith(_library_dirs())


def user_location(frame=None):
    """(filename, lineno, function) of the innermost user frame outward from `frame` (default: the
    caller), or None."""
    frame = frame or sys._getframe(1)
    while frame is not None:
        if _is_user_file(frame.f_code.co_filename):
            return frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name
        frame = frame.f_back
    return None


def traceback_location(tb, fallback_code=None):
    """The innermost user frame of a traceback; else the innermost frame running `fallback_code`."""
    best = fallback = None
    while tb is not None:
        code = tb.tb_frame.f_code
        here = (code.co_filename, tb.tb_lineno, code.co_name)
        if _is_user_file(code.co_filename):
            best = here
        if code is fallback_code:
            fallback = here
        tb = tb.tb_next
    return best or fallback


def source_line(location):
    return linecache.getline(location[0], location[1]).strip() if location else ""


def trace_error(message, location=None):
    """An EpilogueTraceError whose message starts with `file:line: in fn: <source line>`."""
    if location is None:
        location = user_location(sys._getframe(1))
    if location is None:
        return EpilogueTraceError(message)
    filename, lineno, function = location
    line = source_line(location)
    where = f"{filename}:{lineno}: in {function}" + (f": {line}" if line else "")
    return EpilogueTraceError(f"{where}\n  {message}", filename, lineno)
