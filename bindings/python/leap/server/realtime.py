"""``/v1/realtime``: a WebSocket voice session, the subset of OpenAI's Realtime API that speech-to-speech
with LFM2.5-Audio needs: the client appends audio and either commits it and asks for a response, or lets
the server's voice activity detection (``turn_detection`` ``server_vad``, see :mod:`.vad`) find where
speech starts and stops (``input_audio_buffer.speech_started`` / ``.speech_stopped``), commit the turn
(the speech with its padding and trailing silence; audio before the padding is dropped) and answer it
(``create_response``); speech starting while a response is generated cancels it
(``interrupt_response``). The answer streams back as audio and its transcript.

Function tools: ``session.tools`` (``{"type": "function", name, description, parameters}``) and
``tool_choice`` (``auto``, ``none``, ``required``, ``{"type": "function", "name"}``) as the chat endpoint
reads them; a call the model makes is an output item of type ``function_call`` (``name``, ``call_id``,
``arguments`` a JSON string) announced by ``response.output_item.added``, its arguments in
``response.function_call_arguments.delta`` / ``.done``. The client answers with
``conversation.item.create`` of a ``function_call_output`` item (``call_id``, ``output``) and
``response.create``.

Client events: ``session.update``, ``input_audio_buffer.append`` / ``.commit`` / ``.clear``,
``conversation.item.create`` (user or system messages with ``input_text`` / ``input_audio`` parts),
``response.create``, ``response.cancel``. Server events carry OpenAI's GA names (what the current openai
package's ``client.realtime.connect`` speaks): ``session.created`` / ``.updated``,
``input_audio_buffer.committed`` / ``.cleared``, ``conversation.item.added`` / ``.done``,
``response.created``, ``response.output_item.added`` / ``.done``, ``response.content_part.added`` /
``.done``, ``response.output_audio.delta`` / ``.done``, ``response.output_audio_transcript.delta`` /
``.done`` (``response.output_text.*`` for text-only answers), ``response.done`` (status ``completed``,
``incomplete`` at the token limit, ``cancelled``, ``failed``) and ``error`` (the socket stays open). A
client that connects with the header ``OpenAI-Beta: realtime=v1`` (``client.beta.realtime.connect``) gets
the beta names instead: ``response.audio.delta``, ``response.audio_transcript.delta``,
``response.text.delta``, ``conversation.item.created``.

Session (GA shape): ``instructions`` (the system prompt; by default LFM2.5-Audio's "Respond with
interleaved text and audio.", and any other prompt is kept with the answer still interleaved, as on the
chat endpoint), ``output_modalities`` ``["audio"]`` (default) or ``["text"]``, ``audio.input.format``
``{"type": "audio/pcm", "rate": 24000 | 16000}`` (base64 PCM16 mono; the library resamples),
``audio.input.turn_detection`` null (the default) or ``server_vad``, ``audio.output.format`` 24 kHz
PCM16, ``audio.output.voice`` (checked; the interleaved voice is the model's own), ``max_output_tokens``. Extensions: ``temperature``,
``audio_temperature``, ``audio_top_k``, ``seed``. The conversation lives as long as the socket; each
response is generated from its history (the prompt cache makes the earlier turns cheap), its oldest items
left out as ``truncation`` says once it outgrows the context (``"auto"``, ``"disabled"`` or a
``retention_ratio``: see :mod:`.truncation`). ``usage.input_token_details.cached_tokens``: the prompt
positions the cache restored.
"""
from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import json
import logging
import secrets
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Dict, List, Optional

import leap
from fastapi import APIRouter, WebSocket, WebSocketDisconnect

from .app import ServerState
from .chat import ChatRequest, check_tools, parse_tools
from .chat_audio import speaking_history
from .errors import ApiError, from_leap_error, quote
from .media import MIN_AUDIO_SECONDS
from .schemas import INT32_MAX, Fields, Sampling, parse_json_object
from .speech import INTERLEAVED_PROMPT, SAMPLE_RATE, parse_voice, pcm16, wav_file
from .truncation import (Input, PromptCounter, Truncation, choose_cut, cut_points, definition_tokens,
                         definitions_key, output_reserve, parse_truncation)
from .turn import ChatTurn
from .vad import VadSettings, VoiceActivity, parse_turn_detection

log = logging.getLogger("leap.server")
router = APIRouter()

INPUT_RATES = (16000, 24000)
#: GA event names as the beta API spells them.
BETA_NAMES = {
    "response.output_audio.delta": "response.audio.delta", "response.output_audio.done": "response.audio.done",
    "response.output_audio_transcript.delta": "response.audio_transcript.delta",
    "response.output_audio_transcript.done": "response.audio_transcript.done",
    "response.output_text.delta": "response.text.delta", "response.output_text.done": "response.text.done",
    "conversation.item.added": "conversation.item.created",
}


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(10)}"


class EventError(Exception):
    """A client event that cannot be served: reported as an ``error`` event, the session goes on."""

    def __init__(self, message: str, code: str = "invalid_value", param: Optional[str] = None) -> None:
        super().__init__(message)
        self.message, self.code, self.param = message, code, param


@dataclass
class Session:
    id: str
    model: str
    instructions: Optional[str] = None
    output_modalities: List[str] = field(default_factory=lambda: ["audio"])
    input_rate: int = 24000
    voice: str = "alloy"
    max_output_tokens: Optional[int] = None
    temperature: Optional[float] = None
    audio_temperature: Optional[float] = None
    audio_top_k: Optional[int] = None
    seed: Optional[int] = None
    turn_detection: Optional[VadSettings] = None
    tools: List[Dict[str, Any]] = field(default_factory=list)  # as the client sent them (realtime shape)
    tool_choice: Any = "auto"
    truncation: Truncation = field(default_factory=Truncation)

    def chat_tools(self) -> Dict[str, Any]:
        """``tools`` and ``tool_choice`` in the chat endpoint's shape (its parser checks them)."""
        tools = [{"type": t.get("type", "function"), "function": {k: v for k, v in t.items() if k != "type"}}
                 if isinstance(t, dict) else t for t in self.tools]
        choice = self.tool_choice
        if isinstance(choice, dict) and "name" in choice:
            choice = {"type": choice.get("type", "function"), "function": {"name": choice["name"]}}
        return {"tools": tools, "tool_choice": choice if tools else None}

    def describe(self) -> Dict[str, Any]:
        return {"type": "realtime", "object": "realtime.session", "id": self.id, "model": self.model,
                "output_modalities": self.output_modalities, "instructions": self.instructions or INTERLEAVED_PROMPT,
                "audio": {"input": {"format": {"type": "audio/pcm", "rate": self.input_rate},
                                    "turn_detection": self.turn_detection.describe() if self.turn_detection else None,
                                    "transcription": None},
                          "output": {"format": {"type": "audio/pcm", "rate": SAMPLE_RATE}, "voice": self.voice,
                                     "speed": 1.0}},
                "tools": self.tools, "tool_choice": self.tool_choice, "truncation": self.truncation.describe(),
                "max_output_tokens": self.max_output_tokens if self.max_output_tokens else "inf"}

    def update(self, s: Dict[str, Any], max_tokens: int, default_max_tokens: Optional[int], caps: Any,
               model: leap.Model) -> None:
        f = Fields(s, "session")
        f.string("type", choices=("realtime",))
        if "instructions" in s:
            self.instructions = f.string("instructions") or None
        mods = f.array("output_modalities") or s.get("modalities")
        if mods is not None:
            if not isinstance(mods, list) or not mods or any(m not in ("audio", "text") for m in mods):
                raise EventError("session.output_modalities: [\"audio\"] or [\"text\"]", param="session.output_modalities")
            self.output_modalities = ["audio"] if "audio" in mods else ["text"]
        if "tools" in s or "tool_choice" in s:
            tools = f.array("tools") if "tools" in s else self.tools
            choice = s.get("tool_choice", self.tool_choice)
            trial = Session(self.id, self.model, tools=list(tools or []), tool_choice=choice)
            checked = ChatRequest(None, [], leap.ChatMessage(leap.Role.USER, ""), Sampling())
            try:
                parse_tools(Fields(trial.chat_tools()), checked, caps)
                check_tools(model, checked.tools)  # their schemas, as a response would register them
            except ApiError as e:
                param = f"session.{e.param}" if e.param else "session.tools"
                raise EventError(f"session.{e.message}", e.code or "invalid_value", param) from None
            self.tools, self.tool_choice = trial.tools, choice
        audio = f.obj_field("audio") or {}
        inp = Fields(audio, "session.audio").obj_field("input") or {}
        out = Fields(audio, "session.audio").obj_field("output") or {}
        fmt = Fields(inp, "session.audio.input").obj_field("format")
        if fmt is not None:
            ff = Fields(fmt, "session.audio.input.format")
            if (ff.string("type") or "audio/pcm") != "audio/pcm":
                raise EventError("session.audio.input.format.type: only audio/pcm (PCM16) is accepted",
                                 "unsupported_value", "session.audio.input.format.type")
            rate = ff.integer("rate")
            if rate is not None:
                if rate not in INPUT_RATES:
                    raise EventError(f"session.audio.input.format.rate: {quote(rate)} is not 16000 or 24000",
                                     "unsupported_value", "session.audio.input.format.rate")
                self.input_rate = rate
        for where, holder in (("session.audio.input.turn_detection", inp), ("session.turn_detection", s)):
            if "turn_detection" in holder:
                try:
                    self.turn_detection = parse_turn_detection(holder["turn_detection"], where)
                except ValueError as e:
                    raise EventError(str(e), "unsupported_value" if ".type" in str(e).split(":")[0] else
                                     "invalid_value", where) from None
        fmt = Fields(out, "session.audio.output").obj_field("format")
        if fmt is not None and (fmt.get("type", "audio/pcm") != "audio/pcm" or fmt.get("rate", SAMPLE_RATE) != SAMPLE_RATE):
            raise EventError("session.audio.output.format: the output is audio/pcm at 24000 Hz", "unsupported_value",
                             "session.audio.output.format")
        if out.get("voice") is not None:
            parse_voice(out["voice"], "session.audio.output.voice")
            self.voice = out["voice"] if isinstance(out["voice"], str) else str(out["voice"].get("id"))
        speed = Fields(out, "session.audio.output").number("speed")
        if speed is not None and speed != 1.0:
            raise EventError("session.audio.output.speed: only 1 is supported", "unsupported_value",
                             "session.audio.output.speed")
        limit = s.get("max_output_tokens")
        if limit is not None:
            if limit == "inf":
                self.max_output_tokens = None
            elif isinstance(limit, int) and not isinstance(limit, bool) and 1 <= limit <= max_tokens:
                self.max_output_tokens = limit
            else:
                raise EventError(f"session.max_output_tokens: an integer 1..{max_tokens} or \"inf\"",
                                 param="session.max_output_tokens")
        if "truncation" in s:
            context = model.context_size
            reserve = output_reserve(self.max_output_tokens or default_max_tokens, context)
            self.truncation = parse_truncation(s["truncation"], "session.truncation", max(1, context - reserve))
        self.temperature = f.number("temperature", 0.0, 2.0) if "temperature" in s else self.temperature
        self.audio_temperature = f.number("audio_temperature", 0.0, 2.0) if "audio_temperature" in s \
            else self.audio_temperature
        self.audio_top_k = f.integer("audio_top_k", 0, INT32_MAX) if "audio_top_k" in s else self.audio_top_k
        self.seed = f.integer("seed", 0, (1 << 64) - 1) if "seed" in s else self.seed


class Connection:
    """One socket: its session, conversation, input buffer and the response being generated."""

    def __init__(self, ws: WebSocket, state: ServerState, beta: bool) -> None:
        self.ws = ws
        self.state = state
        self.beta = beta
        self.session = Session(new_id("sess"), state.engine.model_id)
        self.items: List[leap.ChatMessage] = []
        self.item_ids: List[str] = []
        self.buffer = bytearray()
        self.response: Optional[asyncio.Task[None]] = None
        self.stop_response: Optional[Callable[[], None]] = None
        self.cancel_requested = False  # response.cancel may come before the generation has begun
        self.send_lock = asyncio.Lock()
        # server_vad: the detector (made for the session's rate and settings), the sample (counted over
        # the session's input) where the buffer starts, the item id of the speech being heard.
        self.vad: Optional[VoiceActivity] = None
        self.buffer_start = 0
        self.speech_item: Optional[str] = None
        self.call_ids: Dict[str, str] = {}  # call_id -> function name, of the calls the model made
        self.cut = 0  # items before it are left out of the model's input (see .truncation)
        self.count = PromptCounter()
        self.definitions: Dict[str, int] = {}  # definitions_key -> the tokens they add, as the library counted

    async def send(self, event: Dict[str, Any]) -> None:
        if self.beta:
            event["type"] = BETA_NAMES.get(event["type"], event["type"])
            if event["type"] == "conversation.item.done":
                return  # the beta API has no such event
        event.setdefault("event_id", new_id("event"))
        async with self.send_lock:
            await self.ws.send_json(event)

    async def error(self, message: str, code: Optional[str], param: Optional[str], event_id: Optional[str]) -> None:
        await self.send({"type": "error", "error": {"type": "invalid_request_error", "code": code, "message": message,
                                                    "param": param, "event_id": event_id}})

    # ---- The conversation -------------------------------------------------------------------------

    def user_item(self, message: leap.ChatMessage, parts: List[Dict[str, Any]],
                  item_id: Optional[str] = None) -> Dict[str, Any]:
        item_id = item_id or new_id("item")
        self.items.append(message)
        self.item_ids.append(item_id)
        return {"id": item_id, "type": "message", "object": "realtime.item", "status": "completed",
                "role": message.role.value, "content": parts}

    async def add_item(self, item: Dict[str, Any]) -> None:
        previous = self.item_ids[-2] if len(self.item_ids) > 1 else None
        await self.send({"type": "conversation.item.added", "previous_item_id": previous, "item": item})
        await self.send({"type": "conversation.item.done", "previous_item_id": previous, "item": item})

    def audio_part(self, pcm: bytes, param: str) -> leap.Audio:
        if len(pcm) < MIN_AUDIO_SECONDS * self.session.input_rate * 2:
            raise EventError(f"{param}: the audio is shorter than {MIN_AUDIO_SECONDS * 1000:g} ms",
                             "input_audio_buffer_commit_empty", param)
        return leap.Audio(wav_file(pcm, self.session.input_rate))

    def decode_pcm(self, text: Any, param: str) -> bytes:
        if not isinstance(text, str):
            raise EventError(f"{param}: expected base64 PCM16", "invalid_type", param)
        try:
            data = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError):
            raise EventError(f"{param}: not valid base64", "invalid_value", param) from None
        if len(data) % 2:
            raise EventError(f"{param}: PCM16 audio has an even number of bytes, got {len(data)}", "invalid_value", param)
        return data

    # ---- Client events ----------------------------------------------------------------------------

    async def handle(self, event: Dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "session.update":
            s = event.get("session")
            if not isinstance(s, dict):
                raise EventError("session: expected an object", "invalid_type", "session")
            try:
                self.session.update(s, self.state.max_tokens, self.state.default_max_tokens, self.state.caps,
                                    self.state.model())
            except ApiError as e:
                raise EventError(e.message, e.code or "invalid_value", e.param) from None
            self.reset_vad()
            await self.send({"type": "session.updated", "session": self.session.describe()})
        elif kind == "input_audio_buffer.append":
            data = self.decode_pcm(event.get("audio"), "audio")
            limit = self.state.settings.media.max_audio_seconds * self.session.input_rate * 2
            if len(self.buffer) + len(data) > limit:
                raise EventError(f"audio: the input buffer would hold more than the server's limit of "
                                 f"{self.state.settings.media.max_audio_seconds:g} s", "audio_too_long", "audio")
            self.buffer += data
            if self.vad is not None:
                await self.detect(data)
        elif kind == "input_audio_buffer.commit":
            if not self.buffer:
                raise EventError("the input audio buffer is empty", "input_audio_buffer_commit_empty")
            pcm = bytes(self.buffer)
            self.audio_part(pcm, "input_audio_buffer")  # checked before the buffer is dropped
            self.reset_vad()
            await self.commit(pcm, None)
        elif kind == "input_audio_buffer.clear":
            self.reset_vad()
            await self.send({"type": "input_audio_buffer.cleared"})
        elif kind == "conversation.item.create":
            await self.add_item(self.create_item(event.get("item")))
        elif kind == "response.create":
            await self.start_response(event.get("response"))
        elif kind == "response.cancel":
            if self.response is None or self.response.done():
                raise EventError("there is no response to cancel", "response_cancel_not_active")
            self.cancel_requested = True
            if self.stop_response is not None:
                self.stop_response()
        else:
            raise EventError(f"unknown event type {quote(kind)}: this server takes session.update, input_audio_buffer."
                             "append / commit / clear, conversation.item.create, response.create and response.cancel",
                             "invalid_event_type", "type")

    async def commit(self, pcm: bytes, item_id: Optional[str]) -> None:
        """``pcm`` made the next user item (input_audio_buffer.committed, conversation.item.added / done)."""
        item = self.user_item(leap.ChatMessage(leap.Role.USER, [self.audio_part(pcm, "input_audio_buffer")]),
                              [{"type": "input_audio", "transcript": None}], item_id)
        previous = self.item_ids[-2] if len(self.item_ids) > 1 else None
        await self.send({"type": "input_audio_buffer.committed", "previous_item_id": previous, "item_id": item["id"]})
        await self.add_item(item)

    # ---- Voice activity (server_vad) --------------------------------------------------------------

    def reset_vad(self) -> None:
        """An empty buffer and a detector for the session's settings (after an update, commit or clear)."""
        self.buffer.clear()
        vad = self.session.turn_detection
        self.vad = VoiceActivity(vad, self.session.input_rate) if vad is not None else None
        self.buffer_start = 0
        self.speech_item = None

    async def detect(self, data: bytes) -> None:
        """Runs the detector over appended audio: speech started / stopped events, the commit and the
        response of a turn; between turns the buffer keeps only the padding the next start may need."""
        vad = self.vad
        assert vad is not None and self.session.turn_detection is not None
        settings = self.session.turn_detection
        for kind, sample in vad.push(data):
            if kind == "started":
                self.speech_item = new_id("item")
                # The audio before the padding is not part of the turn.
                drop = max(0, sample - self.buffer_start)
                del self.buffer[: 2 * drop]
                self.buffer_start += drop
                await self.send({"type": "input_audio_buffer.speech_started", "audio_start_ms": vad.ms(sample),
                                 "item_id": self.speech_item})
                if settings.interrupt_response and self.response is not None and not self.response.done():
                    self.cancel_requested = True
                    if self.stop_response is not None:
                        self.stop_response()
            else:
                item_id, self.speech_item = self.speech_item, None
                await self.send({"type": "input_audio_buffer.speech_stopped", "audio_end_ms": vad.ms(sample),
                                 "item_id": item_id})
                cut = 2 * (sample - self.buffer_start)
                pcm = bytes(self.buffer[:cut])
                del self.buffer[:cut]
                self.buffer_start = sample
                if self.response is not None and not self.response.done():
                    # The answer being made (cancelled, or left to finish) joins the conversation before
                    # the turn that follows it.
                    with contextlib.suppress(BaseException):
                        await self.response
                try:
                    await self.commit(pcm, item_id)
                except EventError as e:  # too short to be a turn: reported, the session goes on
                    await self.error(e.message, e.code, e.param, None)
                    continue
                if settings.create_response:
                    await self.start_response(None)
        if not vad.speaking:
            keep = vad.padding + 2 * vad.frame
            drop = max(0, vad.samples_seen - keep - self.buffer_start)
            del self.buffer[: 2 * drop]
            self.buffer_start += drop

    # ---- Items ------------------------------------------------------------------------------------

    def create_item(self, item: Any) -> Dict[str, Any]:
        if not isinstance(item, dict):
            raise EventError("item: expected an object", "invalid_type", "item")
        f = Fields(item, "item")
        try:
            kind = f.string("type") or "message"
            if kind == "function_call_output":
                return self.function_output(f)
            if kind != "message":
                raise EventError("item.type: only message and function_call_output items are accepted",
                                 "unsupported_value", "item.type")
            role = f.string("role", required=True, choices=("user", "system"))
            content = f.array("content", required=True) or []
        except ApiError as e:
            raise EventError(e.message, e.code or "invalid_value", e.param) from None
        parts: List[leap.Content] = []
        for i, part in enumerate(content):
            p = f"item.content[{i}]"
            part_type = part.get("type") if isinstance(part, dict) else None
            if part_type == "input_text" and isinstance(part.get("text"), str):
                parts.append(leap.Text(part["text"]))
            elif part_type == "input_audio" and role == "user":
                parts.append(self.audio_part(self.decode_pcm(part.get("audio"), f"{p}.audio"), f"{p}.audio"))
            else:
                raise EventError(f"{p}: expected an input_text part (or input_audio in a user message)",
                                 "unsupported_value", p)
        if role == "user" and parts and any(isinstance(x, leap.Audio) for x in parts) and \
                not self.state.caps.audio_input:
            raise EventError("the loaded model cannot take audio", "unsupported_content", "item.content")
        shown = [{"type": "input_text", "text": x.text} if isinstance(x, leap.Text) else
                 {"type": "input_audio", "transcript": None} for x in parts]
        return self.user_item(leap.ChatMessage(leap.Role(role), parts), shown)

    def function_output(self, f: Fields) -> Dict[str, Any]:
        """A ``function_call_output`` item: the result of a call the model made, as a tool message."""
        call_id = f.string("call_id", required=True)
        output = f.string("output", required=True)
        assert call_id is not None and output is not None
        if call_id not in self.call_ids:
            raise EventError(f"item.call_id: {quote(call_id)} is not the call_id of a function call in this "
                             "conversation", "invalid_value", "item.call_id")
        item_id = new_id("item")
        self.items.append(leap.ChatMessage(leap.Role.TOOL, output))
        self.item_ids.append(item_id)
        return {"id": item_id, "type": "function_call_output", "object": "realtime.item", "status": "completed",
                "call_id": call_id, "output": output}

    # ---- Responses --------------------------------------------------------------------------------

    async def start_response(self, overrides: Any) -> None:
        if self.response is not None and not self.response.done():
            raise EventError("a response is in progress: wait for response.done or send response.cancel",
                             "conversation_already_has_active_response")
        if not self.items or self.items[-1].role == leap.Role.ASSISTANT:
            raise EventError("nothing to answer: commit audio or create a user item first", "conversation_empty")
        session = self.session
        mods = session.output_modalities
        instructions = session.instructions
        if isinstance(overrides, dict):
            if isinstance(overrides.get("output_modalities"), list):
                mods = ["audio"] if "audio" in overrides["output_modalities"] else ["text"]
            if isinstance(overrides.get("instructions"), str):
                instructions = overrides["instructions"]
        if "audio" in mods and not self.state.caps.audio_output:
            raise EventError(f"the loaded model ({self.state.caps.name}) cannot speak: ask for output_modalities "
                             "[\"text\"] or serve an LFM2.5-Audio model", "unsupported_value", "output_modalities")
        system = [leap.ChatMessage(leap.Role.SYSTEM, instructions)] if instructions else []
        # As they are now: the session may change and items may come while the response is made.
        items = list(self.items)
        base = ChatRequest(None, [], items[-1],
                           Sampling(temperature=session.temperature, seed=session.seed,
                                    max_tokens=session.max_output_tokens or self.state.default_max_tokens))
        base.audio_temperature, base.audio_top_k = session.audio_temperature, session.audio_top_k or None
        if session.tools:
            try:  # its mistakes are the event's
                parse_tools(Fields(session.chat_tools()), base, self.state.caps)
            except ApiError as e:
                raise EventError(e.message, e.code or "invalid_value", "session.tools") from None
        speaks_text = "text" if self.state.caps.audio_output else None

        def request(cut: int) -> Input:
            """The request answering the items from ``cut`` on, and its history's messages before them."""
            kept = items[cut:-1]
            history, audio_mode = system + kept, speaks_text
            if "audio" in mods:
                history, audio_mode = speaking_history(history)
            return Input(replace(base, history=history, audio_mode=audio_mode), history[:len(history) - len(kept)])

        self.cancel_requested = False
        self.response = asyncio.ensure_future(self.run_response(items, request, session.truncation, "audio" in mods))

    def truncated(self, items: List[leap.ChatMessage], request: Callable[[int], Input],
                  truncation: Truncation) -> "tuple[ChatRequest, Optional[tuple[str, int]]]":
        """The request of the items the session's truncation keeps (see :mod:`.truncation`), and when it has
        definitions (tools, a forced call's schema), their key and its messages' token count (to measure what
        they add once the library reports the prompt's size); moves the cut. Runs in a worker thread:
        counting renders and tokenizes prompts (media laid out, not encoded)."""
        if truncation.mode == "disabled":
            return request(0).req, None
        model = self.state.model()
        first = request(self.cut)
        key = definitions_key(first)
        definitions = 0 if key is None else self.definitions.get(key)
        if definitions is None:
            definitions = definition_tokens(model, first.req, first.prefix)
        prefix = self.count(model, first.prefix)
        counted: Dict[int, int] = {}

        def post_tokens(cut: int) -> int:
            r = request(cut).req
            counted[cut] = self.count(model, [*r.history, r.message])
            return counted[cut] - prefix

        context = model.context_size
        limit = context - output_reserve(first.req.sampling.max_tokens, context) - prefix - definitions
        if truncation.post_instructions is not None:
            limit = min(limit, truncation.post_instructions)
        target = int(limit * truncation.retention_ratio) if truncation.mode == "retention_ratio" else limit
        was = self.cut
        self.cut = choose_cut(cut_points([m.role for m in items]), was, post_tokens, limit, target)
        if self.cut != was:
            log.info("realtime %s: more than %d tokens after the instructions: the first %d of %d items are left "
                     "out of the model's input", self.session.id, limit, self.cut, len(items))
        req = first.req if self.cut == was else request(self.cut).req
        if key is None:
            return req, None
        messages = counted.get(self.cut)
        return req, (key, messages if messages is not None else self.count(model, [*req.history, req.message]))

    async def run_response(self, items: List[leap.ChatMessage], request: Callable[[int], Input],
                           truncation: Truncation, speak: bool) -> None:
        rid, item_id = new_id("resp"), new_id("item")
        base = {"response_id": rid, "item_id": item_id, "output_index": 0, "content_index": 0}
        part_type = "output_audio" if speak else "output_text"
        response: Dict[str, Any] = {"id": rid, "object": "realtime.response", "status": "in_progress",
                                    "output_modalities": ["audio" if speak else "text"], "output": [], "usage": None}
        await self.send({"type": "response.created", "response": dict(response)})
        item: Dict[str, Any] = {"id": item_id, "type": "message", "object": "realtime.item", "status": "in_progress",
                                "role": "assistant", "content": []}
        text: List[str] = []
        calls: List[Dict[str, Any]] = []
        status, stats, final = "failed", None, None
        try:
            try:
                req, measure = await asyncio.to_thread(self.truncated, items, request, truncation)
            except leap.LeapError as e:
                raise from_leap_error(e, "item") from None
            handle = await self.state.engine.start(self.state.chat_job(req))
        except ApiError as refused:
            response.update(status="failed", status_details={"type": "failed", "error": {
                "type": refused.type, "code": refused.code, "message": refused.message}})
            await self.send({"type": "response.done", "response": response})
            return
        self.stop_response = handle.stop
        if self.cancel_requested:
            handle.stop()
        try:
            await self.send({"type": "response.output_item.added", "response_id": rid, "output_index": 0, "item": item})
            await self.send({"type": "conversation.item.added", "previous_item_id": self.item_ids[-1], "item": item})
            empty = {"type": part_type, "transcript": ""} if speak else {"type": part_type, "text": ""}
            await self.send({"type": "response.content_part.added", **base, "part": empty})
            turn = ChatTurn([], req.tool_mode == "forced", handle.stop)
            async for ev in handle.events():
                if isinstance(ev, leap.AudioSample):
                    if speak:
                        await self.send({"type": "response.output_audio.delta", **base,
                                         "delta": base64.b64encode(pcm16(ev.samples)).decode("ascii")})
                    continue
                for delta in turn.feed(ev):
                    if delta.get("content"):
                        text.append(delta["content"])
                        await self.send({"type": "response.output_audio_transcript.delta" if speak else
                                         "response.output_text.delta", **base, "delta": delta["content"]})
                    for call in delta.get("tool_calls") or []:
                        calls.append(await self.function_call_item(rid, 1 + len(calls), call))
                if isinstance(ev, leap.Complete):
                    stats, final = ev.stats, ev.full_message
                    reason = ev.finish_reason
                    status = "incomplete" if reason in (
                        leap.GenerationFinishReason.MAX_TOKENS, leap.GenerationFinishReason.EXCEED_CONTEXT) else \
                        "failed" if reason == leap.GenerationFinishReason.ERROR else "completed"
                    if turn.tool_calls:  # the history holds the calls (a forced one was written as JSON)
                        final = leap.ChatMessage(leap.Role.ASSISTANT, "".join(text) or [], function_calls=[
                            leap.LeapFunctionCall(c["function"]["name"], json.loads(c["function"]["arguments"]))
                            for c in turn.tool_calls])
        except (leap.LeapError, ApiError) as err:
            log.warning("realtime response failed: %s", err)
            status = "failed"
        finally:
            handle.stop()
            self.stop_response = None
        if self.cancel_requested:
            status = "cancelled"
        transcript = "".join(text)
        if speak:
            await self.send({"type": "response.output_audio.done", **base})
            await self.send({"type": "response.output_audio_transcript.done", **base, "transcript": transcript})
            part = {"type": "output_audio", "transcript": transcript}
        else:
            await self.send({"type": "response.output_text.done", **base, "text": transcript})
            part = {"type": "output_text", "text": transcript}
        await self.send({"type": "response.content_part.done", **base, "part": part})
        item.update(status="incomplete" if status != "completed" else "completed", content=[part])
        await self.send({"type": "response.output_item.done", "response_id": rid, "output_index": 0, "item": item})
        await self.send({"type": "conversation.item.done", "previous_item_id": self.item_ids[-1], "item": item})
        if final is not None:
            self.items.append(final)
            self.item_ids.append(item_id)
        prompt = stats.prompt_tokens + stats.cached_prompt_tokens if stats else 0
        if measure is not None and stats is not None:  # the definitions' tokens: the prompt less its messages
            self.definitions[measure[0]] = prompt - measure[1]
        done = stats.completion_tokens if stats else 0
        response.update(status=status, output=[item, *calls], usage={
            "total_tokens": prompt + done, "input_tokens": prompt, "output_tokens": done,
            "input_token_details": {"cached_tokens": stats.cached_prompt_tokens if stats else 0}})
        if status == "incomplete":
            response["status_details"] = {"type": "incomplete", "reason": "max_output_tokens"}
        await self.send({"type": "response.done", "response": response})

    async def function_call_item(self, rid: str, index: int, call: Dict[str, Any]) -> Dict[str, Any]:
        """The events of a call the model made (output item ``index`` of response ``rid``); its item."""
        name, arguments, call_id = call["function"]["name"], call["function"]["arguments"], call["id"]
        self.call_ids[call_id] = name
        item = {"id": new_id("item"), "type": "function_call", "object": "realtime.item", "status": "in_progress",
                "name": name, "call_id": call_id, "arguments": ""}
        where = {"response_id": rid, "item_id": item["id"], "output_index": index, "call_id": call_id}
        await self.send({"type": "response.output_item.added", "response_id": rid, "output_index": index,
                         "item": dict(item)})
        await self.send({"type": "conversation.item.added", "previous_item_id": self.item_ids[-1] if self.item_ids
                         else None, "item": dict(item)})
        await self.send({"type": "response.function_call_arguments.delta", **where, "delta": arguments})
        await self.send({"type": "response.function_call_arguments.done", **where, "name": name,
                         "arguments": arguments})
        item.update(status="completed", arguments=arguments)
        await self.send({"type": "response.output_item.done", "response_id": rid, "output_index": index, "item": item})
        await self.send({"type": "conversation.item.done", "previous_item_id": self.item_ids[-1] if self.item_ids
                         else None, "item": item})
        return item

    async def close(self) -> None:
        if self.stop_response is not None:
            self.stop_response()
        if self.response is not None:
            self.response.cancel()
            with contextlib.suppress(BaseException):
                await self.response


@router.websocket("/v1/realtime")
async def realtime(ws: WebSocket) -> None:
    state = ws.app.state.server
    assert isinstance(state, ServerState)
    await ws.accept()
    try:
        state.model()
        state.engine.check_model_name(ws.query_params.get("model"))
    except ApiError as e:
        await ws.send_json({"type": "error", "event_id": new_id("event"), "error": {
            "type": e.type, "code": e.code, "message": e.message, "param": e.param, "event_id": None}})
        await ws.close(code=1008 if e.status == 404 else 1013)
        return
    conn = Connection(ws, state, beta=ws.headers.get("openai-beta", "").startswith("realtime"))
    log.info("WS /v1/realtime open %s", conn.session.id)
    try:
        await conn.send({"type": "session.created", "session": conn.session.describe()})
        while True:
            message = await ws.receive()
            if message["type"] == "websocket.disconnect":
                raise WebSocketDisconnect(message.get("code", 1000))
            text = message.get("text")
            try:
                if text is None:  # a client error, as every malformed event: the session goes on
                    raise EventError("the event is a binary frame: send events as JSON text frames", "invalid_json")
                event = parse_json_object(text, "the event")
            except (EventError, ApiError) as e:
                await conn.error(e.message, e.code, e.param, None)
                continue
            event_id = event.get("event_id")
            try:
                await conn.handle(event)
            except EventError as e:
                await conn.error(e.message, e.code, e.param, event_id if isinstance(event_id, str) else None)
            except ApiError as e:
                await conn.error(e.message, e.code, e.param, event_id if isinstance(event_id, str) else None)
    except WebSocketDisconnect:
        pass
    finally:
        await conn.close()
        log.info("WS /v1/realtime closed %s", conn.session.id)
