"""Exception hierarchy: one class per ``leap_status`` code, all rooted at :class:`LeapError`."""
from __future__ import annotations

from typing import Dict, Type


class LeapError(Exception):
    """Base class of every error raised by libleap. ``status`` is the C ``leap_status`` code."""

    status: int = -1

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        if status is not None:
            self.status = status


class InvalidArgumentError(LeapError, ValueError):
    status = 1


class LeapIOError(LeapError, OSError):
    status = 2


class FormatError(LeapError):
    status = 3


class UnsupportedError(LeapError):
    status = 4


class SerializationError(LeapError):
    status = 5


class AudioFormatError(LeapError):
    status = 6


class ModelLoadingError(LeapError):
    status = 7


class GenerationError(LeapError):
    status = 8


class PromptExceedsContextError(GenerationError):
    status = 9


class FunctionCallParsingError(GenerationError):
    status = 10


class CancelledError(LeapError):
    status = 11


class BusyError(LeapError):
    status = 12


class LeapMemoryError(LeapError, MemoryError):
    status = 13


class BufferTooSmallError(LeapError):
    status = 14


class InternalError(LeapError):
    status = 100


_BY_STATUS: Dict[int, Type[LeapError]] = {
    cls.status: cls
    for cls in (
        InvalidArgumentError, LeapIOError, FormatError, UnsupportedError, SerializationError, AudioFormatError,
        ModelLoadingError, GenerationError, PromptExceedsContextError, FunctionCallParsingError, CancelledError,
        BusyError, LeapMemoryError, BufferTooSmallError, InternalError,
    )
}


def error_for_status(status: int, message: str) -> LeapError:
    """The exception instance for a non-zero ``leap_status``."""
    cls = _BY_STATUS.get(status, LeapError)
    return cls(message, status)
