"""Loading libleap.so and the ctypes plumbing shared by every module.

Conventions (mirroring include/leap.h):
* every fallible function returns ``leap_status``; :func:`check` raises the matching :class:`LeapError`
  with ``leap_last_error()`` as its message;
* owned ``char *`` results are declared as ``c_void_p`` (never ``c_char_p``, which would leak them) and
  released with ``leap_string_free`` by :func:`take_string`; owned arrays by :func:`take_buffer`.
"""
from __future__ import annotations

import ctypes
import os
from array import array
from pathlib import Path
from typing import Any, Optional

from .errors import error_for_status as error_for_status  # re-exported: the modules raise through it

_here = Path(__file__).resolve().parent

ABI_MAJOR = 0


def _source_tree_builds() -> list[Path]:
    """The builds of the repository around this package, when it is imported from a checkout
    (bindings/python/leap inside a libleap repository); none for an installed package."""
    repo = _here.parent.parent.parent
    if not ((repo / "Package.swift").is_file() and (repo / "include" / "leap.h").is_file()):
        return []
    return [repo / "build" / "lib" / "libleap.so",
            repo / ".build" / "release" / "libleap.so",
            repo / ".build" / "debug" / "libleap.so"]


def _candidates() -> tuple[list[str], list[str]]:
    """The libraries to try, in order, and a note for each place looked at where nothing was found."""
    env = os.environ.get("LEAP_LIBRARY_PATH")
    if env:
        # An explicit choice: only it, and a missing file is an error rather than a reason to look elsewhere.
        return ([env], []) if Path(env).is_file() else ([], [f"LEAP_LIBRARY_PATH={env}: no such file"])
    found: list[str] = []
    missing: list[str] = []
    for p in [_here / "libleap.so"] + _source_tree_builds():
        (found if p.is_file() else missing).append(str(p))
    # An installed copy (scripts/install.sh) on the dynamic loader's search path.
    return found + ["libleap.so.0"], [f"{p}: not built" for p in missing]


def _load() -> ctypes.CDLL:
    candidates, errors = _candidates()
    for cand in candidates:
        try:
            lib = ctypes.CDLL(cand)
        except OSError as e:
            errors.append(f"{cand}: {e}")
            continue
        lib.leap_version_number.restype = ctypes.c_uint32
        lib.leap_version_number.argtypes = []
        major = lib.leap_version_number() // 10000
        if major != ABI_MAJOR:
            errors.append(f"{cand}: ABI major version {major}, this package needs {ABI_MAJOR}")
            continue
        return lib
    raise OSError(
        "libleap.so not found or not loadable. Install the package with its library "
        "(`pip install ./bindings/python` builds it), or set LEAP_LIBRARY_PATH to a libleap.so "
        "(scripts/build.sh puts one in build/lib). Tried: " + "; ".join(errors))


lib = _load()
path: str = getattr(lib, "_name", "libleap.so")

c_status = ctypes.c_int


def fn(name: str, restype: Any, *argtypes: Any) -> Any:
    """Declare and return one C function of the library."""
    f = getattr(lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


def opaque(name: str) -> Any:
    """A distinct pointer type per handle kind, so handles cannot be swapped silently."""
    return ctypes.POINTER(type(name, (ctypes.Structure,), {}))


# LEAP_API const char *leap_status_string(leap_status status);
leap_status_string = fn("leap_status_string", ctypes.c_char_p, c_status)
# LEAP_API const char *leap_last_error(void);
leap_last_error = fn("leap_last_error", ctypes.c_char_p)
# LEAP_API const char *leap_version_string(void);
leap_version_string = fn("leap_version_string", ctypes.c_char_p)
# LEAP_API void leap_string_free(char *s);
leap_string_free = fn("leap_string_free", None, ctypes.c_void_p)
# LEAP_API void leap_buffer_free(void *p);
leap_buffer_free = fn("leap_buffer_free", None, ctypes.c_void_p)


def check(status: int) -> None:
    """Raise the LeapError subclass for ``status`` unless it is LEAP_OK."""
    if status != 0:
        raw = leap_last_error()
        message = raw.decode("utf-8", "replace") if raw else ""
        if not message:
            name = leap_status_string(status)
            message = name.decode() if name else f"status {status}"
        raise error_for_status(status, message)


def take_string(p: Optional[int]) -> Optional[str]:
    """Copy an owned ``char *`` into a str and free it. NULL gives None."""
    if not p:
        return None
    try:
        return ctypes.string_at(p).decode("utf-8")
    finally:
        leap_string_free(p)


def take_bytes(p: Any, n: int) -> bytes:
    """Copy ``n`` bytes of an owned buffer and free it."""
    addr = ctypes.cast(p, ctypes.c_void_p).value
    if not addr:
        return b""
    try:
        return ctypes.string_at(addr, n)
    finally:
        leap_buffer_free(addr)


def take_floats(p: Any, n: int) -> array[float]:
    """Copy ``n`` floats of an owned buffer into an ``array('f')`` and free it."""
    addr = ctypes.cast(p, ctypes.c_void_p).value
    out = array("f")
    if not addr:
        return out
    try:
        out.frombytes(ctypes.string_at(addr, 4 * n))
        return out
    finally:
        leap_buffer_free(addr)


def utf8(s: Optional[str]) -> Optional[bytes]:
    return None if s is None else s.encode("utf-8")


def float_buffer(samples: Any) -> tuple[Any, int, Any]:
    """A (ctypes float pointer, count, keep-alive object) view of a float sequence: array('f'), numpy float32 array,
    memoryview of floats, or any iterable of numbers (copied)."""
    try:
        import numpy as np  # optional

        if isinstance(samples, np.ndarray):
            a = np.ascontiguousarray(samples, dtype=np.float32)
            return a.ctypes.data_as(ctypes.POINTER(ctypes.c_float)), int(a.size), a
    except ImportError:
        pass
    if not (isinstance(samples, array) and samples.typecode == "f"):
        samples = array("f", samples)
    n = len(samples)
    buf = (ctypes.c_float * max(1, n)).from_buffer(samples) if n else (ctypes.c_float * 1)()
    return ctypes.cast(buf, ctypes.POINTER(ctypes.c_float)), n, samples


class OwnedHandle:
    """Base of the Python objects that own one C handle (llvmlite's ObjectRef idea).

    Subclasses set ``_free`` (a staticmethod wrapping the C ``*_free``) and ``_kind`` (a word for messages),
    and store the handle in ``self._h`` as the *last* step of ``__init__``, so that ``close()`` is safe
    after a failed ``__init__``. ``close()`` frees once; ``with`` and garbage collection close too; using a
    closed object raises :class:`leap.InvalidArgumentError` instead of passing NULL to C."""

    _kind = "object"
    _h: Any = None

    @staticmethod
    def _free(handle: Any) -> None:  # pragma: no cover - always overridden
        raise NotImplementedError

    def close(self) -> None:
        h = self.__dict__.get("_h")
        if h:
            self._h = None
            type(self)._free(h)

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()

    def _handle(self) -> Any:
        h = self.__dict__.get("_h")
        if not h:
            raise error_for_status(1, f"the {self._kind} is closed")
        return h
