"""Chat messages and content parts (LEAP "Messages & Content"), with OpenAI-shaped JSON.

Python objects are plain values; JSON conversion goes through the C library so that Python and C
accept and produce exactly the same wire format.
"""
from __future__ import annotations

import ctypes
import enum
import json
from array import array
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Union

from . import _capi as C
from ._capi import leap_message_p
from ._marshal import check, error_for_status, float_buffer, take_bytes, take_string, utf8


class Role(str, enum.Enum):
    """Who wrote a message; the value is the wire string."""

    USER = "user"
    SYSTEM = "system"
    ASSISTANT = "assistant"
    TOOL = "tool"


_ROLE_C = {Role.USER: C.LEAP_ROLE_USER, Role.SYSTEM: C.LEAP_ROLE_SYSTEM, Role.ASSISTANT: C.LEAP_ROLE_ASSISTANT,
           Role.TOOL: C.LEAP_ROLE_TOOL}


@dataclass(frozen=True)
class Text:
    """A text part."""

    text: str


@dataclass(frozen=True)
class Image:
    """A JPEG image part (raw JPEG bytes)."""

    jpeg: bytes

    @staticmethod
    def from_rgb(pixels: bytes, width: int, height: int, quality: int = 90) -> "Image":
        """A JPEG part encoded from 8-bit RGB pixels, row after row (width * height * 3 bytes), at
        ``quality`` 1..100 (LEAP's image-from-bitmap helpers; needs libturbojpeg)."""
        data = _rgb_bytes(pixels, width, height)
        with _Handle(Role.USER) as h:
            check(C.leap_message_add_image_rgb(h.p, data, width, height, quality))
            out = ctypes.c_void_p()
            size = ctypes.c_size_t()
            check(C.leap_message_part_data(h.p, 0, ctypes.byref(out), ctypes.byref(size)))
            return Image(take_bytes(out, size.value))


def _rgb_bytes(pixels: bytes, width: int, height: int) -> bytes:
    """The pixels as bytes, checked to be width * height * 3 long (C reads exactly that many)."""
    data = bytes(pixels)
    if width <= 0 or height <= 0 or len(data) != width * height * 3:
        raise error_for_status(C.LEAP_ERR_INVALID_ARGUMENT, f"an RGB image of {width}x{height} needs {width}x{height}x3 bytes, got {len(data)}")
    return data


@dataclass(frozen=True)
class ImageRGB:
    """8-bit RGB pixels, row after row (width * height * 3 bytes): an image for :meth:`Model.embed_image`
    without a JPEG round trip."""

    pixels: bytes
    width: int
    height: int


@dataclass(frozen=True)
class Audio:
    """A WAV audio part (the bytes of a RIFF/WAVE file, mono PCM; any sample rate)."""

    wav: bytes

    @staticmethod
    def from_float_samples(samples: Any, sample_rate: int, channel_count: int = 1) -> "Audio":
        """Encode interleaved float samples in [-1, 1] as a float32 WAV part (LEAP's fromFloatSamples)."""
        with _Handle(Role.USER) as h:
            ptr, n, _keep = float_buffer(samples)
            if channel_count <= 0 or n % channel_count:
                raise error_for_status(C.LEAP_ERR_INVALID_ARGUMENT, f"{n} samples do not divide into {channel_count} channels")
            check(C.leap_message_add_audio_samples(h.p, ptr, n // channel_count, channel_count, sample_rate))
            data = ctypes.c_void_p()
            size = ctypes.c_size_t()
            check(C.leap_message_part_data(h.p, 0, ctypes.byref(data), ctypes.byref(size)))
            return Audio(take_bytes(data, size.value))


@dataclass(frozen=True)
class AudioPcmF32:
    """Raw mono float PCM samples in [-1, 1] with their sample rate (generated audio arrives as this)."""

    samples: Sequence[float]
    sample_rate: int

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, AudioPcmF32) and self.sample_rate == other.sample_rate
                and list(self.samples) == list(other.samples))


Content = Union[Text, Image, Audio, AudioPcmF32]


@dataclass
class LeapFunctionCall:
    """A function call made by the assistant: a name and its arguments (a dict of JSON values)."""

    name: str
    arguments: Dict[str, Any] = field(default_factory=dict)


class _Handle:
    """A short-lived leap_message handle (context manager)."""

    def __init__(self, role: Role) -> None:
        self.p = leap_message_p()
        check(C.leap_message_create(_ROLE_C[role], ctypes.byref(self.p)))

    def __enter__(self) -> "_Handle":
        return self

    def __exit__(self, *exc: object) -> None:
        C.leap_message_free(self.p)
        self.p = leap_message_p()


def _coerce_part(part: Any) -> Content:
    if isinstance(part, (Text, Image, Audio, AudioPcmF32)):
        return part
    if isinstance(part, str):
        return Text(part)
    raise TypeError(f"content parts must be Text, Image, Audio, AudioPcmF32 or str, got {type(part).__name__}")


class ChatMessage:
    """A chat message: role, ordered content parts, optional reasoning and function calls."""

    def __init__(self, role: Union[Role, str], content: Union[str, Content, Sequence[Union[Content, str]]] = (),
                 reasoning_content: Optional[str] = None,
                 function_calls: Optional[List[LeapFunctionCall]] = None) -> None:
        self.role = Role(role)
        if isinstance(content, (str, Text, Image, Audio, AudioPcmF32)):
            content = [content]
        self.content: List[Content] = [_coerce_part(p) for p in content]
        self.reasoning_content = reasoning_content or None
        self.function_calls = list(function_calls) if function_calls else None

    @property
    def text(self) -> str:
        """All text parts concatenated."""
        return "".join(p.text for p in self.content if isinstance(p, Text))

    def __repr__(self) -> str:
        return (f"ChatMessage(role={self.role.value!r}, content={self.content!r}, "
                f"reasoning_content={self.reasoning_content!r}, function_calls={self.function_calls!r})")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ChatMessage) and self.to_json() == other.to_json()

    def _to_handle(self) -> _Handle:
        h = _Handle(self.role)
        try:
            for part in self.content:
                if isinstance(part, Text):
                    check(C.leap_message_add_text(h.p, utf8(part.text)))
                elif isinstance(part, Image):
                    check(C.leap_message_add_image_jpeg(h.p, bytes(part.jpeg), len(part.jpeg)))
                elif isinstance(part, Audio):
                    check(C.leap_message_add_audio_wav(h.p, bytes(part.wav), len(part.wav)))
                else:
                    ptr, n, _keep = float_buffer(part.samples)
                    check(C.leap_message_add_audio_pcm_f32(h.p, ptr, n, part.sample_rate))
            if self.reasoning_content:
                check(C.leap_message_set_reasoning(h.p, utf8(self.reasoning_content)))
            for call in self.function_calls or []:
                arguments = json.dumps(call.arguments, ensure_ascii=False)
                check(C.leap_message_add_function_call(h.p, utf8(call.name), utf8(arguments)))
        except BaseException:
            h.__exit__()
            raise
        return h

    def to_json_string(self) -> str:
        """The compact wire JSON of this message."""
        with self._to_handle() as h:
            out = ctypes.c_void_p()
            check(C.leap_message_to_json(h.p, ctypes.byref(out)))
            text = take_string(out.value)
            assert text is not None
            return text

    def to_json(self) -> Dict[str, Any]:
        """The message as an OpenAI-shaped dict (``content`` always a list of parts)."""
        wire: Dict[str, Any] = json.loads(self.to_json_string())
        return wire

    @staticmethod
    def from_json(data: Union[str, bytes, Dict[str, Any]]) -> "ChatMessage":
        """Parse a message from a dict or JSON text. Raises :class:`leap.SerializationError` naming the field."""
        text = data if isinstance(data, str) else data.decode() if isinstance(data, bytes) else json.dumps(data)
        p = leap_message_p()
        check(C.leap_message_from_json(utf8(text), ctypes.byref(p)))
        try:
            out = ctypes.c_void_p()
            check(C.leap_message_to_json(p, ctypes.byref(out)))
            canonical = take_string(out.value)
        finally:
            C.leap_message_free(p)
        return ChatMessage._from_canonical(json.loads(canonical or "{}"))

    @staticmethod
    def _from_canonical(d: Dict[str, Any]) -> "ChatMessage":
        import base64

        parts: List[Content] = []
        for part in d.get("content", []):
            t = part["type"]
            if t == "text":
                parts.append(Text(part["text"]))
            elif t == "image_url":
                parts.append(Image(base64.b64decode(part["image_url"]["url"].split(",", 1)[1])))
            elif t == "input_audio":
                parts.append(Audio(base64.b64decode(part["input_audio"]["data"])))
            elif t == "audio_pcm_f32":
                parts.append(AudioPcmF32(array("f", part["samples"]), int(part["sampleRate"])))
        calls = [LeapFunctionCall(c["function"]["name"], c["function"].get("arguments") or {})
                 for c in d.get("tool_calls", [])] or None
        return ChatMessage(Role(d["role"]), parts, d.get("reasoning_content"), calls)
