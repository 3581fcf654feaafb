"""``POST /v1/audio/speech``: text to speech with a model that speaks (LFM2.5-Audio), as OpenAI's endpoint.

The model gets Liquid's TTS system prompt for the voice ("Perform TTS. Use the UK female voice.", see
:mod:`.speech` for the voice names) and the text as the user's message; the library then speaks as the
runner does (sequential mode: text until ``<|audio_start|>``, then audio frames until the end of audio).

Request: ``input`` (at most 4096 characters), ``voice`` (default us_female), ``response_format`` ``wav``
(default; OpenAI's default mp3 is not made here) or ``pcm`` (raw 24 kHz mono PCM16), ``stream_format``
``audio`` (default: the body is the audio, sent in chunks as the frames are made) or ``sse`` (events
``{"type": "speech.audio.delta", "audio": base64}`` and a last ``{"type": "speech.audio.done", "usage"}``).
A streamed WAV is sent before its length is known, so its RIFF and data sizes are 0xFFFFFFFF (readers take
the samples to the end of the body). ``speed`` must be 1 and ``instructions`` are refused (the voice is the
only control the model has). Extensions: ``temperature``, ``top_p``, ``top_k``, ``seed``, ``max_tokens``
(text tokens and 80 ms audio frames together; default the server's --max-tokens, else the context) and
``audio_temperature`` / ``audio_top_k`` (default Liquid's runner: 0.8 and top-k 64).
"""
from __future__ import annotations

from typing import Any, AsyncIterator, Dict, Optional

import leap
from fastapi import APIRouter, Request
from fastapi.responses import Response

from .app import ServerState, check_model, read_json, record_usage, server_state, unless_disconnected
from .chat import ChatRequest
from .engine import JobHandle
from .errors import ApiError, bad_request, quote
from .schemas import INT32_MAX, Fields, parse_sampling
from .speech import DEFAULT_VOICE, SAMPLE_RATE, Base64Pieces, parse_voice, pcm16, tts_prompt, usage, wav_header
from .sse import EventStreamResponse, event

MAX_INPUT = 4096
#: The sizes of a WAV whose length is unknown when its header is sent.
STREAMED_WAV_HEADER = wav_header(0xFFFFFFFF - 36)

router = APIRouter()


class AudioStreamResponse(EventStreamResponse):
    """A chunked audio body, stopped with its generation when the client leaves (as the event streams are)."""

    media_type = "audio/wav"


def require_speech(state: ServerState) -> None:
    caps = state.caps
    if not caps.audio_output:
        raise bad_request(f"the loaded model ({caps.name}) cannot speak: speech needs an LFM2.5-Audio model with its "
                          "audio decoder and tokenizer (vocoder and tokenizer GGUF files)", "model",
                          code="unsupported_model")


def speech_request(body: Dict[str, Any], state: ServerState) -> "tuple[ChatRequest, str, str]":
    """The generation for a speech request, its response_format and stream_format (400 on any mistake)."""
    f = Fields(body)
    text = f.string("input", required=True)
    assert text is not None
    if not text.strip():
        raise bad_request("input: the text to speak is empty", "input")
    if len(text) > MAX_INPUT:
        raise bad_request(f"input: {len(text)} characters, more than {MAX_INPUT}", "input")
    voice = parse_voice(body["voice"], "voice") if body.get("voice") is not None else DEFAULT_VOICE
    fmt = f.string("response_format") or "wav"
    if fmt not in ("wav", "pcm"):
        raise bad_request(f"response_format: {quote(fmt)} is not made by this server: use \"wav\" or \"pcm\" (24 kHz "
                          "mono PCM16)", "response_format", code="unsupported_value")
    stream_format = f.string("stream_format", choices=("audio", "sse")) or "audio"
    speed = f.number("speed", 0.25, 4.0)
    if speed is not None and speed != 1.0:
        raise bad_request("speed: only 1 is supported (the model speaks at its own pace)", "speed",
                          code="unsupported_value")
    if f.string("instructions"):
        raise bad_request("instructions: not supported: LFM2.5-Audio's speech is controlled by the voice only",
                          "instructions", code="unsupported_value")
    sampling = parse_sampling(f, state.max_tokens, state.default_max_tokens)
    req = ChatRequest(f.string("model"), [leap.ChatMessage(leap.Role.SYSTEM, tts_prompt(voice))],
                      leap.ChatMessage(leap.Role.USER, text), sampling)
    req.audio_temperature = f.number("audio_temperature", 0.0, 2.0)
    req.audio_top_k = f.integer("audio_top_k", 0, INT32_MAX) or None
    return req, fmt, stream_format


@router.post("/v1/audio/speech")
async def create_speech(request: Request) -> Response:
    state = server_state(request)
    body = await read_json(request)
    check_model(state, body)
    require_speech(state)
    req, fmt, stream_format = speech_request(body, state)
    handle = await unless_disconnected(request, state.engine.start(state.chat_job(req)))
    if stream_format == "sse":
        return EventStreamResponse(_sse(request, handle, fmt), on_close=handle.stop)
    media_type = "audio/wav" if fmt == "wav" else f"audio/pcm;rate={SAMPLE_RATE};channels=1"
    return AudioStreamResponse(_audio_body(request, handle, fmt), on_close=handle.stop,
                               headers={"Content-Type": media_type})


async def speech_events(request: Request, handle: JobHandle) -> AsyncIterator[bytes]:
    """The PCM16 of each frame as it is made; the figures are recorded for the log line at the end."""
    stats: Optional[leap.GenerationStats] = None
    async for e in handle.events():
        if isinstance(e, leap.AudioSample):
            yield pcm16(e.samples)
        elif isinstance(e, leap.Complete):
            stats = e.stats
            if e.finish_reason == leap.GenerationFinishReason.ERROR:
                raise ApiError(500, "the generation failed")
    record_usage(request, stats)
    request.scope.setdefault("state", {})["speech_stats"] = stats


async def _audio_body(request: Request, handle: JobHandle, fmt: str) -> AsyncIterator[bytes]:
    if fmt == "wav":
        yield STREAMED_WAV_HEADER
    try:
        async for pcm in speech_events(request, handle):
            yield pcm
    except ApiError:
        return  # the headers are sent: the body ends short


async def _sse(request: Request, handle: JobHandle, fmt: str) -> AsyncIterator[bytes]:
    pieces = Base64Pieces()
    first = pieces.push(STREAMED_WAV_HEADER) if fmt == "wav" else None
    if first:
        yield event({"type": "speech.audio.delta", "audio": first})
    try:
        async for pcm in speech_events(request, handle):
            piece = pieces.push(pcm)
            if piece:
                yield event({"type": "speech.audio.delta", "audio": piece})
    except ApiError as err:
        yield event(err.body())
        return
    rest = pieces.flush()
    if rest:
        yield event({"type": "speech.audio.delta", "audio": rest})
    stats = request.scope.setdefault("state", {}).get("speech_stats")
    prompt = stats.prompt_tokens + stats.cached_prompt_tokens if stats else 0
    yield event({"type": "speech.audio.done", "usage": usage(prompt, stats.completion_tokens if stats else 0)})
