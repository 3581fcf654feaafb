"""Spoken chat answers: ``modalities: ["text", "audio"]`` with ``audio: {voice, format}`` on a model that
speaks (LFM2.5-Audio), as OpenAI's audio chat models answer.

The speech mode comes from the request's system prompt as Liquid's runner chooses it: without a system
message the server puts LFM2.5-Audio's chat prompt "Respond with interleaved text and audio." first (the
model then speaks what it writes, 6 text tokens and 12 audio frames at a time); one of the model's task
prompts (TTS with a voice, the interleaved prompt) is left to the library, which picks the runner's mode
for it; any other system prompt is kept and the answer is interleaved. ``voice`` is checked but cannot
change the interleaved voice (only the TTS prompt names a voice; /v1/audio/speech uses it).

The answer as OpenAI gives it: ``message.content`` null and ``message.audio`` = ``{id, data, expires_at,
transcript}`` (data: the base64 of the whole WAV, or of the raw PCM16 for ``pcm16``; transcript: the text
the model said). Streamed (``pcm16`` only, as OpenAI requires): ``delta.audio`` pieces, ``{id}`` first,
then ``{transcript}`` for text and ``{data}`` for each frame's samples as they are made, and a last
``{expires_at}``. Nothing is stored: ``expires_at`` is the time of the answer and its ``id`` cannot be
referred to later (send the transcript back as the assistant's content).

Extensions: ``audio_temperature`` and ``audio_top_k`` (top level, like ``top_k``) sample the audio codes
(default: Liquid's runner, 0.8 and top-k 4 interleaved / 64 for TTS; 0 is greedy).
"""
from __future__ import annotations

import secrets
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence

import leap

from .errors import bad_request, quote
from .schemas import INT32_MAX, Fields
from .speech import INTERLEAVED_PROMPT, SPEAKING_PROMPTS, Base64Pieces, b64, parse_voice, pcm16, wav_file
from .turn import ChatTurn

if TYPE_CHECKING:
    from .chat import ChatRequest, ModelCaps

FORMATS = ("wav", "pcm16")


@dataclass(frozen=True)
class AudioOutput:
    """What a request asked of the speech: its container and voice."""

    format: str
    voice: Optional[str]


def configure(f: Fields, req: "ChatRequest", caps: "ModelCaps") -> None:
    """Reads ``audio`` and the audio sampling extensions into ``req`` once its messages and modalities are
    parsed: the speech mode and, when audio is asked for, the system prompt it needs."""
    req.audio_temperature = f.number("audio_temperature", 0.0, 2.0)
    top_k = f.integer("audio_top_k", 0, INT32_MAX)
    req.audio_top_k = top_k if top_k else None
    if "audio" not in req.modalities:
        if caps.audio_output:
            req.audio_mode = "text"  # text asked for: the model writes without speaking, whatever the prompt
        return
    if not caps.audio_output:
        raise bad_request(f"modalities: the loaded model ({caps.name}) cannot speak: audio output needs an "
                          "LFM2.5-Audio model with its audio decoder and tokenizer (vocoder and tokenizer "
                          "GGUF files)", "modalities", code="unsupported_value")
    af = Fields(req.audio or {}, "audio")
    fmt = af.string("format") or ("pcm16" if req.stream else "wav")
    if fmt not in FORMATS:
        raise bad_request(f"audio.format: {quote(fmt)} is not supported: use \"wav\" or \"pcm16\" (24 kHz mono)",
                          "audio.format", code="unsupported_value")
    if req.stream and fmt != "pcm16":
        raise bad_request("audio.format: streamed audio is \"pcm16\" (raw 24 kHz mono PCM16 pieces)", "audio.format",
                          code="unsupported_value")
    given = (req.audio or {}).get("voice")
    voice = parse_voice(given, "audio.voice") if given is not None else None
    req.audio_output = AudioOutput(fmt, voice)
    req.history, req.audio_mode = speaking_history(req.history)


def speaking_history(history: List[leap.ChatMessage]) -> "tuple[List[leap.ChatMessage], Optional[str]]":
    """The history to answer with speech and the audio mode to ask for (None: the library's choice from
    the system prompt); see the module's speech mode."""
    if not history or history[0].role != leap.Role.SYSTEM:
        return [leap.ChatMessage(leap.Role.SYSTEM, INTERLEAVED_PROMPT), *history], None
    if history[0].text.strip() in SPEAKING_PROMPTS:
        return history, None
    return history, "interleaved"


class SpokenTurn(ChatTurn):
    """A :class:`ChatTurn` whose text is the transcript of its speech (see the module's answer shapes)."""

    def __init__(self, stops: Sequence[str], forced_call: bool, stop_generation: Callable[[], None],
                 output: AudioOutput, stream: bool) -> None:
        super().__init__(stops, forced_call, stop_generation)
        self.output = output
        self.stream = stream
        self.audio_id = "audio_" + secrets.token_hex(12)
        self.pcm = bytearray()
        self.pieces = Base64Pieces()
        self.sent_id = False

    def _audio(self, fields: Dict[str, Any]) -> Dict[str, Any]:
        if not self.sent_id:
            self.sent_id = True
            fields = {"id": self.audio_id, **fields}
        return {"audio": fields}

    def feed(self, event: Any) -> List[Dict[str, Any]]:
        out: List[Dict[str, Any]] = []
        if isinstance(event, leap.AudioSample):
            data = pcm16(event.samples)
            if self.stream:
                piece = self.pieces.push(data)
                if piece:
                    out.append(self._audio({"data": piece}))
            else:
                self.pcm += data
            return out
        for delta in super().feed(event):
            text = delta.pop("content", None)
            if text:
                out.append(self._audio({"transcript": text}))
            if delta:
                out.append(delta)
        if isinstance(event, leap.Complete) and self.stream:
            rest = self.pieces.flush()
            if rest:
                out.append(self._audio({"data": rest}))
            out.append(self._audio({"expires_at": int(time.time())}))
        return out

    def message(self) -> Dict[str, Any]:
        msg = super().message()
        msg["content"] = None
        data = bytes(self.pcm) if self.output.format == "pcm16" else wav_file(bytes(self.pcm))
        msg["audio"] = {"id": self.audio_id, "data": b64(data), "expires_at": int(time.time()),
                        "transcript": "".join(self.content)}
        return msg
