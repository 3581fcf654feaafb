"""Audio: WAV decoding and encoding, the models' 16 kHz mono input path, and band-limited resampling.

Samples are floats in [-1, 1]; multichannel data is interleaved (frame by frame). Functions accept an
``array('f')``, a numpy array, a memoryview of floats or any sequence of numbers, and return
``array.array('f')`` (no numpy needed). Bad audio raises :class:`leap.AudioFormatError` with a message
that names what was found ("unsupported audio format: MP3 (ID3 tag) ...", "mono required, got 2
channels").
"""
from __future__ import annotations

import ctypes
from array import array
from dataclasses import dataclass
from typing import Any, Union

from . import _capi as C
from ._capi import leap_resampler_p
from ._marshal import OwnedHandle, check, float_buffer, take_bytes, take_floats
from .errors import InvalidArgumentError

__all__ = ["PCM", "Resampler", "decode_wav", "load_wav", "resample", "encode_wav",
           "INPUT_SAMPLE_RATE", "OUTPUT_SAMPLE_RATE"]

#: The sample rate models take audio at (LEAP_AUDIO_INPUT_SAMPLE_RATE).
INPUT_SAMPLE_RATE = C.LEAP_AUDIO_INPUT_SAMPLE_RATE
#: The sample rate audio models generate at (LEAP_AUDIO_OUTPUT_SAMPLE_RATE).
OUTPUT_SAMPLE_RATE = C.LEAP_AUDIO_OUTPUT_SAMPLE_RATE

_ENCODINGS = {"f32": C.LEAP_AUDIO_ENCODING_F32, "s16": C.LEAP_AUDIO_ENCODING_S16}

BytesLike = Union[bytes, bytearray, memoryview]


@dataclass(frozen=True)
class PCM:
    """Decoded audio: interleaved float samples in [-1, 1]."""

    samples: array[float]
    sample_rate: int
    channels: int

    @property
    def frames(self) -> int:
        """Number of frames (samples per channel)."""
        return len(self.samples) // self.channels if self.channels else 0

    @property
    def duration(self) -> float:
        """Length in seconds."""
        return self.frames / self.sample_rate if self.sample_rate else 0.0


def _bytes(data: BytesLike) -> bytes:
    if isinstance(data, (bytearray, memoryview)):
        return bytes(data)
    if not isinstance(data, bytes):
        raise TypeError(f"expected bytes-like WAV data, got {type(data).__name__}")
    return data


def decode_wav(data: BytesLike) -> PCM:
    """Decode a WAV file (PCM 8/16/24/32-bit, float 32/64-bit, any channel count and rate)."""
    raw = _bytes(data)
    out = ctypes.POINTER(ctypes.c_float)()
    frames, channels, rate = ctypes.c_size_t(), ctypes.c_int32(), ctypes.c_int32()
    check(C.leap_audio_decode_wav(raw, len(raw), ctypes.byref(out), ctypes.byref(frames), ctypes.byref(channels),
                                  ctypes.byref(rate)))
    samples = take_floats(out, frames.value * channels.value)
    return PCM(samples, rate.value, channels.value)


def load_wav(data: BytesLike, target_rate: int = INPUT_SAMPLE_RATE) -> array[float]:
    """The models' input path: decode a mono WAV file and resample it to ``target_rate`` (16 kHz)."""
    raw = _bytes(data)
    out = ctypes.POINTER(ctypes.c_float)()
    n = ctypes.c_size_t()
    check(C.leap_audio_load_wav(raw, len(raw), int(target_rate), ctypes.byref(out), ctypes.byref(n)))
    return take_floats(out, n.value)


def resample(samples: Any, from_rate: int, to_rate: int) -> array[float]:
    """Band-limited resampling of mono samples; returns ceil(len * to_rate / from_rate) samples."""
    ptr, n, keep = float_buffer(samples)
    out = ctypes.POINTER(ctypes.c_float)()
    count = ctypes.c_size_t()
    check(C.leap_audio_resample(ptr, n, int(from_rate), int(to_rate), ctypes.byref(out), ctypes.byref(count)))
    del keep
    return take_floats(out, count.value)


def encode_wav(samples: Any, sample_rate: int, channel_count: int = 1, encoding: str = "f32") -> bytes:
    """Encode interleaved samples as a WAV file: ``"f32"`` (IEEE float) or ``"s16"`` (16-bit PCM, rounded
    and clipped)."""
    if encoding not in _ENCODINGS:
        raise InvalidArgumentError(f'encoding must be "f32" or "s16", got {encoding!r}')
    ptr, n, keep = float_buffer(samples)
    if channel_count < 1 or n % channel_count:
        raise InvalidArgumentError(f"{n} samples is not a whole number of {channel_count}-channel frames")
    out = ctypes.c_void_p()
    size = ctypes.c_size_t()
    check(C.leap_audio_encode_wav(ptr, n // channel_count, int(channel_count), int(sample_rate), _ENCODINGS[encoding],
                  ctypes.byref(out), ctypes.byref(size)))
    del keep
    return take_bytes(out, size.value)


class Resampler(OwnedHandle):
    """Streaming resampler for one mono stream: ``process`` chunks of any size, then ``flush``. The
    concatenated outputs equal one :func:`resample` call over the whole stream. After ``flush`` it is
    ready for a new stream. Not thread-safe."""

    _kind = "resampler"
    _free = staticmethod(C.leap_resampler_free)

    def __init__(self, from_rate: int, to_rate: int) -> None:
        self.from_rate = int(from_rate)
        self.to_rate = int(to_rate)
        h = leap_resampler_p()
        check(C.leap_resampler_create(self.from_rate, self.to_rate, ctypes.byref(h)))
        self._h = h

    def process(self, samples: Any) -> array[float]:
        ptr, n, keep = float_buffer(samples)
        out = ctypes.POINTER(ctypes.c_float)()
        count = ctypes.c_size_t()
        check(C.leap_resampler_process(self._handle(), ptr, n, ctypes.byref(out), ctypes.byref(count)))
        del keep
        return take_floats(out, count.value)

    def flush(self) -> array[float]:
        out = ctypes.POINTER(ctypes.c_float)()
        count = ctypes.c_size_t()
        check(C.leap_resampler_flush(self._handle(), ctypes.byref(out), ctypes.byref(count)))
        return take_floats(out, count.value)

    def __enter__(self) -> "Resampler":
        return self
