"""Exception hierarchy: one class per ``leap_status`` code, all rooted at :class:`LeapError`."""
from __future__ import annotations

from typing import Dict, Type

from . import _capi as C


class LeapError(Exception):
    """Base class of every error raised by libleap. ``status`` is the C ``leap_status`` code."""

    status: int = -1

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        if status is not None:
            self.status = status


class InvalidArgumentError(LeapError, ValueError):
    status = C.LEAP_ERR_INVALID_ARGUMENT


class LeapIOError(LeapError, OSError):
    status = C.LEAP_ERR_IO


class FormatError(LeapError):
    status = C.LEAP_ERR_FORMAT


class UnsupportedError(LeapError):
    status = C.LEAP_ERR_UNSUPPORTED


class SerializationError(LeapError):
    status = C.LEAP_ERR_SERIALIZATION


class AudioFormatError(LeapError):
    status = C.LEAP_ERR_AUDIO_FORMAT


class ModelLoadingError(LeapError):
    status = C.LEAP_ERR_MODEL_LOADING


class GenerationError(LeapError):
    status = C.LEAP_ERR_GENERATION


class PromptExceedsContextError(GenerationError):
    status = C.LEAP_ERR_PROMPT_EXCEEDS_CONTEXT


class FunctionCallParsingError(GenerationError):
    status = C.LEAP_ERR_FUNCTION_CALL_PARSING


class CancelledError(LeapError):
    status = C.LEAP_ERR_CANCELLED


class BusyError(LeapError):
    status = C.LEAP_ERR_BUSY


class LeapMemoryError(LeapError, MemoryError):
    status = C.LEAP_ERR_OUT_OF_MEMORY


class BufferTooSmallError(LeapError):
    status = C.LEAP_ERR_BUFFER_TOO_SMALL


class InternalError(LeapError):
    status = C.LEAP_ERR_INTERNAL


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
