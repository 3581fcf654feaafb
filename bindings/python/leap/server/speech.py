"""The speech of a model that speaks (LFM2.5-Audio), as clients take it: its 24 kHz mono float samples
quantized to PCM16, WAV files, base64 pieces that can be concatenated, and the system prompts Liquid's
runner gives the model for each task (ASR, TTS with one of four voices, interleaved speech-to-speech chat).

Quantization: a sample x in [-1, 1] becomes round(clamp(x, -1, 1) * 32767) (to nearest, ties to even) as a
signed 16-bit little-endian integer.

Voices: LFM2.5-Audio speaks in four voices, chosen by its TTS system prompt "Perform TTS. Use the {US,UK}
{male,female} voice." They are named ``us_male``, ``us_female``, ``uk_male``, ``uk_female`` here
("US male" and "us-male" are read the same way); OpenAI's voice names are accepted too and mapped to the
nearest of the four (:data:`OPENAI_VOICES`), so clients written for OpenAI work unchanged. Interleaved chat
has no voice in its prompt: there a voice is checked but changes nothing.
"""
from __future__ import annotations

import base64
import struct
import sys
from array import array
from typing import Any, Dict, Iterable, Optional

from .errors import bad_request, quote

SAMPLE_RATE = 24000
ASR_PROMPT = "Perform ASR."
INTERLEAVED_PROMPT = "Respond with interleaved text and audio."
VOICES = {"us_male": "US male", "us_female": "US female", "uk_male": "UK male", "uk_female": "UK female"}
DEFAULT_VOICE = "us_female"
OPENAI_VOICES = {
    "alloy": "us_female", "ash": "us_male", "ballad": "uk_male", "coral": "us_female", "echo": "us_male",
    "fable": "uk_male", "onyx": "us_male", "nova": "us_female", "sage": "us_female", "shimmer": "us_female",
    "verse": "us_male", "marin": "us_female", "cedar": "us_male",
}


def tts_prompt(voice: str) -> str:
    """The TTS system prompt for one of :data:`VOICES`' keys."""
    return f"Perform TTS. Use the {VOICES[voice]} voice."


TTS_PROMPTS = frozenset(tts_prompt(v) for v in VOICES)
#: The system prompts that make the model speak, for which the library picks the mode as Liquid's runner does.
SPEAKING_PROMPTS = TTS_PROMPTS | {INTERLEAVED_PROMPT}


def parse_voice(value: Any, param: str) -> str:
    """The voice (a key of :data:`VOICES`) named by ``value``: a name, or OpenAI's ``{"id": name}``."""
    if isinstance(value, dict):
        value = value.get("id")
        param = f"{param}.id"
    if not isinstance(value, str):
        raise bad_request(f"{param}: expected a voice name", param, code="invalid_type")
    key = "_".join(value.strip().lower().replace("-", " ").replace("_", " ").split())
    if key in VOICES:
        return key
    if key in OPENAI_VOICES:
        return OPENAI_VOICES[key]
    raise bad_request(f"{param}: unknown voice {quote(value)}: use one of {', '.join(VOICES)} (LFM2.5-Audio's voices) "
                      f"or an OpenAI voice name ({', '.join(OPENAI_VOICES)})", param, code="unsupported_value")


def pcm16(samples: Iterable[float]) -> bytes:
    """Float samples as PCM16 little-endian bytes (see the module's quantization)."""
    out = array("h", [round((1.0 if x > 1.0 else -1.0 if x < -1.0 else x) * 32767) for x in samples])
    if sys.byteorder == "big":
        out.byteswap()
    return out.tobytes()


def wav_header(data_bytes: int, rate: int = SAMPLE_RATE) -> bytes:
    """The 44-byte header of a mono PCM16 WAV file holding ``data_bytes`` bytes of samples."""
    return (b"RIFF" + struct.pack("<I", 36 + data_bytes) + b"WAVE"
            + b"fmt " + struct.pack("<IHHIIHH", 16, 1, 1, rate, rate * 2, 2, 16)
            + b"data" + struct.pack("<I", data_bytes))


def wav_file(pcm: bytes, rate: int = SAMPLE_RATE) -> bytes:
    return wav_header(len(pcm), rate) + pcm


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


class Base64Pieces:
    """Cuts a byte stream into base64 pieces of whole samples that also concatenate into valid base64:
    every piece but the last holds a multiple of 6 bytes (3 PCM16 samples, no ``=`` padding), so a client
    may decode each piece alone or join the strings first (as the openai package's stream helper does)."""

    def __init__(self) -> None:
        self.pending = b""

    def push(self, data: bytes) -> Optional[str]:
        buf = self.pending + data
        cut = len(buf) - len(buf) % 6
        self.pending = buf[cut:]
        return b64(buf[:cut]) if cut else None

    def flush(self) -> Optional[str]:
        rest, self.pending = self.pending, b""
        return b64(rest) if rest else None


def usage(input_tokens: int, output_tokens: int) -> Dict[str, int]:
    return {"input_tokens": input_tokens, "output_tokens": output_tokens, "total_tokens": input_tokens + output_tokens}
