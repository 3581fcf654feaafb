"""Server-side voice activity detection for ``/v1/realtime`` (``turn_detection: {"type": "server_vad"}``):
an energy detector over 20 ms frames of the PCM16 input, in the terms of OpenAI's settings.

A frame is speech when its RMS level is at least ``-70 + 60 * threshold`` dB below full scale (OpenAI's
``threshold`` 0..1; the default 0.5 is -40 dBFS, 0 takes anything above -70 dBFS, 1 only -10 dBFS and
louder). Speech starts with the first of :data:`START_FRAMES` speech frames in a row (a click of one frame
is not speech) and stops once ``silence_duration_ms`` of frames in a row are not speech. As OpenAI reports
them, the start time includes ``prefix_padding_ms`` of audio before the speech and the stop time the
silence after it: together they bound the audio the turn commits.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from .errors import quote

FRAME_MS = 20
START_FRAMES = 2
MAX_PADDING_MS = 5000
MAX_SILENCE_MS = 10000


@dataclass
class VadSettings:
    """OpenAI's ``server_vad`` settings (defaults as OpenAI's)."""

    threshold: float = 0.5
    prefix_padding_ms: int = 300
    silence_duration_ms: int = 500
    create_response: bool = True
    interrupt_response: bool = True

    @property
    def level_dbfs(self) -> float:
        return -70.0 + 60.0 * self.threshold

    def describe(self) -> Dict[str, Any]:
        return {"type": "server_vad", "threshold": self.threshold, "prefix_padding_ms": self.prefix_padding_ms,
                "silence_duration_ms": self.silence_duration_ms, "create_response": self.create_response,
                "interrupt_response": self.interrupt_response, "idle_timeout_ms": None}


class VoiceActivity:
    """Feeds on PCM16 mono at ``rate``; reports where speech starts and stops, in samples counted from the
    first sample fed: ``("started", first sample of the padding)``, ``("stopped", sample after the
    silence)``."""

    def __init__(self, settings: VadSettings, rate: int) -> None:
        self.settings = settings
        self.rate = rate
        self.frame = rate * FRAME_MS // 1000
        # Squared RMS of a speech frame, in PCM16 units.
        self.min_power = (32768.0 * 10 ** (settings.level_dbfs / 20)) ** 2
        self.silence_frames = max(1, -(-settings.silence_duration_ms // FRAME_MS))
        self.padding = settings.prefix_padding_ms * rate // 1000
        self.rest = np.zeros(0, dtype=np.int16)
        self.frames_seen = 0
        self.speaking = False
        self.run = 0  # speech frames in a row (not speaking) / quiet frames in a row (speaking)

    def ms(self, sample: int) -> int:
        return sample * 1000 // self.rate

    def push(self, pcm: bytes) -> List[Tuple[str, int]]:
        samples = np.concatenate([self.rest, np.frombuffer(pcm, dtype="<i2")])
        n = len(samples) // self.frame
        self.rest = samples[n * self.frame:]
        if n == 0:
            return []
        frames = samples[: n * self.frame].astype(np.float64).reshape(n, self.frame)
        loud = (frames * frames).mean(axis=1) >= self.min_power  # (n,)
        out: List[Tuple[str, int]] = []
        for i, is_speech in enumerate(loud.tolist()):
            index = self.frames_seen + i
            if not self.speaking:
                self.run = self.run + 1 if is_speech else 0
                if self.run == START_FRAMES:
                    self.speaking, self.run = True, 0
                    first = (index - START_FRAMES + 1) * self.frame
                    out.append(("started", max(0, first - self.padding)))
            else:
                self.run = 0 if is_speech else self.run + 1
                if self.run == self.silence_frames:
                    self.speaking, self.run = False, 0
                    out.append(("stopped", (index + 1) * self.frame))
        self.frames_seen += n
        return out

    @property
    def samples_seen(self) -> int:
        return self.frames_seen * self.frame + len(self.rest)


def parse_turn_detection(value: Any, param: str) -> Optional[VadSettings]:
    """``turn_detection`` (None: the client commits). Raises ValueError with a message naming the field."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ValueError(f"{param}: expected an object or null")
    kind = value.get("type", "server_vad")
    if kind != "server_vad":
        raise ValueError(f"{param}.type: {quote(kind)} is not supported: use \"server_vad\" (an energy detector) or null")
    s = VadSettings()
    threshold = value.get("threshold")
    if threshold is not None:
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 <= threshold <= 1:
            raise ValueError(f"{param}.threshold: a number from 0 to 1")
        s.threshold = float(threshold)
    for key, lo, hi in (("prefix_padding_ms", 0, MAX_PADDING_MS), ("silence_duration_ms", FRAME_MS, MAX_SILENCE_MS)):
        v = value.get(key)
        if v is not None:
            if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
                raise ValueError(f"{param}.{key}: an integer from {lo} to {hi}")
            setattr(s, key, v)
    for key in ("create_response", "interrupt_response"):
        v = value.get(key)
        if v is not None:
            if not isinstance(v, bool):
                raise ValueError(f"{param}.{key}: a boolean")
            setattr(s, key, v)
    if value.get("idle_timeout_ms") is not None:
        raise ValueError(f"{param}.idle_timeout_ms: not supported (null only)")
    return s
