"""Crossing the C boundary: statuses into exceptions, owned results into Python copies, Python sequences
into C arguments, and :class:`OwnedHandle`, the base of the objects that own one C handle.

Conventions (mirroring include/leap.h):
* every fallible function returns ``leap_status``; :func:`check` raises the matching :class:`LeapError`
  with ``leap_last_error()`` as its message;
* owned ``char *`` results (declared ``c_void_p`` in ``_capi``) are copied and released with
  ``leap_string_free`` by :func:`take_string`; owned arrays by :func:`take_bytes` / :func:`take_floats`.
"""
from __future__ import annotations

import ctypes
from array import array
from typing import Any, Optional

from ._capi import (
    LEAP_ERR_INVALID_ARGUMENT, LEAP_OK, leap_buffer_free, leap_last_error, leap_status_string, leap_string_free,
)
from .errors import error_for_status as error_for_status  # re-exported: the modules raise through it


def check(status: int) -> None:
    """Raise the LeapError subclass for ``status`` unless it is LEAP_OK."""
    if status != LEAP_OK:
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
            raise error_for_status(LEAP_ERR_INVALID_ARGUMENT, f"the {self._kind} is closed")
        return h
