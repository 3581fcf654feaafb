"""Images and audio inside requests: data URLs decoded and checked before they reach the model.

Images: JPEG, PNG, WebP and GIF (its first frame), as OpenAI accepts. A message part of the library is a
JPEG, so a JPEG goes through as it came (its pixels decoded once, by the library, exactly as the in-process
API would) and the other formats are decoded by Pillow, flattened onto white where transparent, and
re-encoded as a JPEG at quality 95 without chroma subsampling. Sizes are read from the header first, so an
image over the pixel limit is refused before it is decoded.

Audio: ``input_audio`` with format ``wav``: the RIFF header is read here (mono only, 0.1 s up to the
duration limit, an encoding the library's decoder takes) and the library decodes the samples (PCM 8-32 bit
or float, any rate).

Remote ``http(s)`` image URLs are fetched only when the server allows it, with the same byte limit.
"""
from __future__ import annotations

import base64
import binascii
import io
import re
import struct
from dataclasses import dataclass
from typing import NamedTuple, Optional, Tuple

import leap
from leap.audio import decode_wav

from .errors import LIBRARY_MESSAGE_LIMIT, bad_request, clip, quote

_DATA_URL = re.compile(r"data:([\w.+/-]*)((?:;[\w=.+-]+)*?);base64,", re.ASCII)


#: The shortest audio input (OpenAI's minimum of a Realtime commit): the audio encoder needs a few frames.
MIN_AUDIO_SECONDS = 0.1


@dataclass(frozen=True)
class MediaLimits:
    max_image_pixels: int = 4096 * 4096
    max_audio_seconds: float = 600.0
    max_media_bytes: int = 32 << 20
    allow_remote: bool = False
    remote_timeout: float = 20.0


def decode_base64(text: str, param: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        # Some clients wrap or pad loosely: accept whitespace, refuse anything else.
        try:
            return base64.b64decode("".join(text.split()), validate=True)
        except (binascii.Error, ValueError):
            raise bad_request("the data is not valid base64", param) from None


def split_data_url(url: str, param: str) -> Tuple[str, bytes]:
    """(media type, bytes) of a ``data:<type>;base64,<data>`` URL."""
    m = _DATA_URL.match(url)
    if m is None:
        raise bad_request("expected a data URL of the form data:<media type>;base64,<data>", param)
    return m.group(1).lower(), decode_base64(url[m.end():], param)


def image_part(data: bytes, limits: MediaLimits, param: str) -> leap.Image:
    """A JPEG image part from the bytes of a JPEG, PNG, WebP or GIF image (400 naming ``param`` otherwise).
    The bytes decide the format (clients often label images wrongly), not the data URL's media type."""
    from PIL import Image as PILImage, UnidentifiedImageError

    try:
        img = PILImage.open(io.BytesIO(data))
    except UnidentifiedImageError:
        raise bad_request(f"the image could not be decoded (not a JPEG, PNG, WebP or GIF image; "
                          f"{len(data)} bytes starting {data[:8].hex()})", param, code="invalid_image") from None
    except Exception as e:
        raise bad_request(f"the image could not be decoded: {clip(str(e))}", param, code="invalid_image") from None
    with img:
        fmt = (img.format or "").upper()
        if fmt not in ("JPEG", "PNG", "WEBP", "GIF"):
            raise bad_request(f"unsupported image format {fmt or 'unknown'}: send JPEG, PNG, WebP or GIF",
                              param, code="invalid_image")
        width, height = img.size
        if width <= 0 or height <= 0:
            raise bad_request("the image is empty", param, code="invalid_image")
        if width * height > limits.max_image_pixels:
            raise bad_request(f"the image is {width}x{height} pixels, more than the server's limit of "
                              f"{limits.max_image_pixels} pixels", param, code="image_too_large")
        try:
            if fmt == "JPEG":
                img.load()  # the library decodes it again; refuse a truncated or damaged file here
                return leap.Image(bytes(data))
            img.seek(0)
            frame = img.convert("RGBA") if _has_alpha(img) else img.convert("RGB")
            if frame.mode == "RGBA":
                background = PILImage.new("RGB", frame.size, (255, 255, 255))
                background.paste(frame, mask=frame.getchannel("A"))
                frame = background
            out = io.BytesIO()
            frame.save(out, format="JPEG", quality=95, subsampling=0)
            return leap.Image(out.getvalue())
        except (OSError, ValueError, SyntaxError) as e:
            raise bad_request(f"the {fmt} image could not be decoded: {clip(str(e))}", param,
                              code="invalid_image") from None


def _has_alpha(img: "object") -> bool:
    from PIL import Image as PILImage

    assert isinstance(img, PILImage.Image)
    return img.mode in ("RGBA", "LA", "PA") or (img.mode == "P" and "transparency" in img.info)


class WavHeader(NamedTuple):
    channels: int
    rate: int
    bits: int
    data_start: int  # offset of the sample data
    data_bytes: int  # bytes of sample data present (the chunk's size, or less when the file is cut short)


#: Bytes of sample data the format check decodes: whole frames of every mono sample size (1, 2, 3, 4, 8).
_PROBE_BYTES = 24 * 128


def wav_part(data: bytes, limits: MediaLimits, param: str) -> leap.Audio:
    """An audio part from WAV bytes: mono, at most ``max_audio_seconds``, in an encoding the library decodes
    (400 naming ``param`` otherwise)."""
    h = wav_header(data, param)
    if h.channels != 1:
        raise bad_request(f"the WAV audio has {h.channels} channels: send mono audio (1 channel)", param,
                          code="invalid_audio")
    if h.rate <= 0 or h.bits <= 0:
        raise bad_request("the WAV header gives no sample rate or sample size", param, code="invalid_audio")
    seconds = h.data_bytes / (h.rate * (h.bits // 8 or 1))
    if seconds < MIN_AUDIO_SECONDS:
        raise bad_request(f"the audio lasts {seconds * 1000:.1f} ms, less than {MIN_AUDIO_SECONDS * 1000:g} ms", param,
                          code="audio_too_short")
    if seconds > limits.max_audio_seconds:
        raise bad_request(f"the audio lasts {seconds:.1f} s, more than the server's limit of "
                          f"{limits.max_audio_seconds:g} s", param, code="audio_too_long")
    # The library's decoder checks the rest of the format (encoding, sample size, block alignment, rate) on
    # the header and the first frames, here where the part's name is known, not when the generation starts.
    try:
        decode_wav(data[:h.data_start + min(h.data_bytes, _PROBE_BYTES)])
    except leap.LeapError as e:
        raise bad_request(f"the WAV audio cannot be decoded: {clip(str(e), LIBRARY_MESSAGE_LIMIT)}", param,
                          code="invalid_audio") from None
    return leap.Audio(bytes(data))


def wav_header(data: bytes, param: str) -> WavHeader:
    """The format and sample data of a RIFF/WAVE file (400 naming ``param`` if it has none)."""
    if len(data) < 12 or data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        raise bad_request(f"the audio is not a WAV file (RIFF/WAVE header missing; {len(data)} bytes starting "
                          f"{data[:8].hex()})", param, code="invalid_audio")
    pos = 12
    fmt: Optional[Tuple[int, int, int]] = None
    while pos + 8 <= len(data):
        tag, size = data[pos:pos + 4], struct.unpack_from("<I", data, pos + 4)[0]
        body = pos + 8
        if tag == b"fmt ":
            if size < 16 or body + 16 > len(data):
                raise bad_request("the WAV fmt chunk is truncated", param, code="invalid_audio")
            _, channels, rate, _, _, bits = struct.unpack_from("<HHIIHH", data, body)
            fmt = (channels, rate, bits)
        elif tag == b"data":
            if fmt is None:
                raise bad_request("the WAV data chunk comes before its fmt chunk", param, code="invalid_audio")
            return WavHeader(fmt[0], fmt[1], fmt[2], body, min(size, len(data) - body))
        pos = body + size + (size & 1)
    raise bad_request("the WAV file has no fmt or data chunk", param, code="invalid_audio")


async def fetch_remote(url: str, limits: MediaLimits, param: str) -> Tuple[str, bytes]:
    """(content type, bytes) of an http(s) URL, when the server allows remote media."""
    if not limits.allow_remote:
        raise bad_request("remote media URLs are not fetched by this server (start it with --allow-remote-media); "
                          "send the image as a data URL", param, code="remote_media_disabled")
    import httpx

    try:
        async with httpx.AsyncClient(timeout=limits.remote_timeout, follow_redirects=True) as client:
            async with client.stream("GET", url) as r:
                if r.status_code != 200:
                    raise bad_request(f"fetching {quote(url)} gave HTTP {r.status_code}", param, code="invalid_url")
                chunks = []
                total = 0
                async for chunk in r.aiter_bytes():
                    total += len(chunk)
                    if total > limits.max_media_bytes:
                        raise bad_request(f"{quote(url)} is larger than {limits.max_media_bytes} bytes", param,
                                          code="invalid_url")
                    chunks.append(chunk)
                return r.headers.get("content-type", "").split(";")[0].strip().lower(), b"".join(chunks)
    except httpx.HTTPError as e:
        raise bad_request(f"cannot fetch {quote(url)}: {clip(str(e))}", param, code="invalid_url") from None
