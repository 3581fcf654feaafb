"""``POST /v1/audio/transcriptions``: speech to text with a model that takes audio (LFM2-Audio,
LFM2.5-Audio), as OpenAI's endpoint: a multipart form whose ``file`` is a WAV (mono PCM or float, any
rate; other containers are refused with 400), answered with Liquid's ASR system prompt "Perform ASR."
and the audio as the user's message, text sampled greedily unless ``temperature`` (0..1) says otherwise.

Fields: ``model`` (the loaded model's name or empty), ``response_format`` ``json`` (default: ``{text,
usage}``), ``text`` (the text alone) or ``verbose_json`` (``{task, language, duration, text, segments:
[one segment of the whole audio], usage}``); ``stream`` ``true``: server-sent events
``{"type": "transcript.text.delta", "delta"}`` and a last ``{"type": "transcript.text.done", "text",
"usage"}``. ``language`` and ``prompt`` are accepted but do not reach the model (its ASR prompt is fixed);
``language`` is echoed by verbose_json. A transcription runs at most the server's --max-tokens tokens (by
default the context): a model that never ends its turn stops there.
"""
from __future__ import annotations

from typing import Any, AsyncIterator, Dict, Optional

import leap
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from starlette.datastructures import UploadFile
from starlette.requests import ClientDisconnect

from .app import ServerState, record_usage, server_state, unless_disconnected
from .chat import ChatRequest
from .engine import JobHandle
from .errors import ApiError, bad_request, clip, quote
from .media import wav_header, wav_part
from .schemas import Sampling
from .speech import ASR_PROMPT
from .sse import EventStreamResponse, event
from .turn import ChatTurn

FORMATS = ("json", "text", "verbose_json")
#: The first bytes of containers clients send instead of WAV, to say what came.
_CONTAINERS = ((b"ID3", "MP3"), (b"\xff\xfb", "MP3"), (b"\xff\xf3", "MP3"), (b"\xff\xf2", "MP3"),
               (b"fLaC", "FLAC"), (b"OggS", "Ogg"), (b"\x1aE\xdf\xa3", "WebM"))

router = APIRouter()


def audio_upload(data: bytes, state: ServerState) -> leap.Audio:
    """The uploaded file as an audio part (400 naming WAV for anything else)."""
    kind = next((name for magic, name in _CONTAINERS if data.startswith(magic)), None)
    if kind is None and data[4:8] == b"ftyp":
        kind = "MP4/M4A"
    if kind is not None:
        raise bad_request(f"file: {kind} audio is not decoded by this server: send a WAV file (RIFF/WAVE, mono PCM "
                          "or float, any sample rate)", "file", code="invalid_audio")
    return wav_part(data, state.settings.media, "file")


def _form_bool(value: Optional[str], param: str) -> bool:
    if value is None or value == "":
        return False
    if value.lower() in ("true", "1"):
        return True
    if value.lower() in ("false", "0"):
        return False
    raise bad_request(f"{param}: expected true or false, got {quote(value)}", param, code="invalid_type")


def _form_text(form: Any, name: str) -> Optional[str]:
    value = form.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise bad_request(f"{name}: expected a text field, got a file", name, code="invalid_type")
    return value


@router.post("/v1/audio/transcriptions")
async def create_transcription(request: Request) -> Response:
    state = server_state(request)
    state.model()  # 503 while loading
    if "multipart/form-data" not in request.headers.get("content-type", ""):
        raise bad_request("send the audio as multipart/form-data with a WAV file in the field \"file\"", "file",
                          code="invalid_request")
    try:
        form = await request.form(max_files=1, max_fields=64)
    except (ApiError, ClientDisconnect):  # a client gone before the whole form came is answered 499
        raise
    except Exception as e:
        raise bad_request(f"the multipart form could not be read: {clip(str(e))}", code="invalid_request") from None
    try:
        state.engine.check_model_name(_form_text(form, "model"))
        upload = form.get("file")
        if not isinstance(upload, UploadFile):
            raise ApiError(400, "file: missing required field (a WAV file)", param="file",
                           code="missing_required_parameter")
        data = await upload.read()
        fmt = _form_text(form, "response_format") or "json"
        if fmt not in FORMATS:
            raise bad_request(f"response_format: {quote(fmt)} is not supported: use json, text or verbose_json",
                              "response_format", code="unsupported_value")
        stream = _form_bool(_form_text(form, "stream"), "stream")
        language = _form_text(form, "language")
        _form_text(form, "prompt")
        temperature = _temperature(_form_text(form, "temperature"))
        for g in form.getlist("timestamp_granularities[]"):
            if g != "segment":
                raise bad_request(f"timestamp_granularities[]: {quote(g)} is not supported (segment only)",
                                  "timestamp_granularities[]", code="unsupported_value")
        if form.getlist("include[]"):
            raise bad_request("include[]: not supported", "include[]", code="unsupported_value")
    finally:
        await form.close()
    caps = state.caps
    if not caps.audio_input:
        raise bad_request(f"the loaded model ({caps.name}) cannot take audio: transcription needs an LFM2-Audio "
                          "model with its audio encoder (mmproj file)", "model", code="unsupported_model")
    audio = audio_upload(data, state)
    h = wav_header(data, "file")
    duration = h.data_bytes / (h.rate * h.channels * max(1, h.bits // 8))
    req = ChatRequest(None, [leap.ChatMessage(leap.Role.SYSTEM, ASR_PROMPT)], leap.ChatMessage(leap.Role.USER, [audio]),
                      Sampling(temperature=temperature, max_tokens=state.default_max_tokens))
    handle = await unless_disconnected(request, state.engine.start(state.chat_job(req)))
    if stream:
        return EventStreamResponse(_stream(request, handle), on_close=handle.stop)
    turn = ChatTurn((), False, handle.stop)
    try:
        await unless_disconnected(request, turn.consume(handle.events()))
    finally:
        handle.stop()
    record_usage(request, turn.stats)
    text = "".join(turn.content)
    if fmt == "text":
        return PlainTextResponse(text)
    result: Dict[str, Any] = {"text": text, "usage": _usage(turn.stats)}
    if fmt == "verbose_json":
        result = {"task": "transcribe", "language": language or "", "duration": duration, "text": text,
                  "segments": [{"id": 0, "start": 0.0, "end": duration, "text": text}], "usage": result["usage"]}
    return JSONResponse(result)


def _temperature(value: Optional[str]) -> float:
    if value is None or value == "":
        return 0.0
    try:
        t = float(value)
    except ValueError:
        raise bad_request(f"temperature: expected a number, got {quote(value)}", "temperature",
                          code="invalid_type") from None
    if not 0.0 <= t <= 1.0:
        raise bad_request(f"temperature: {clip(value)} is not within 0..1", "temperature")
    return t


def _usage(stats: Optional[leap.GenerationStats]) -> Dict[str, Any]:
    prompt = stats.prompt_tokens + stats.cached_prompt_tokens if stats else 0
    done = stats.completion_tokens if stats else 0
    return {"type": "tokens", "input_tokens": prompt, "output_tokens": done, "total_tokens": prompt + done}


async def _stream(request: Request, handle: JobHandle) -> AsyncIterator[bytes]:
    turn = ChatTurn((), False, handle.stop)
    try:
        async for e in handle.events():
            for d in turn.feed(e):
                if d.get("content"):
                    yield event({"type": "transcript.text.delta", "delta": d["content"]})
    except ApiError as err:
        yield event(err.body())
        return
    record_usage(request, turn.stats)
    yield event({"type": "transcript.text.done", "text": "".join(turn.content), "usage": _usage(turn.stats)})
