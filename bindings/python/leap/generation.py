"""One generation: its options (:class:`GenerationOptions`), the events it yields (:class:`Chunk` ...
:class:`Complete`) and :class:`ResponseStream`, the iterator over them.

A generation starts at once (as the C API's ``leap_conversation_generate_begin``) and the stream pulls its
events from the C iterator (``leap_generation_next``): no threads, no callbacks. ctypes releases the GIL
while the library computes, so ``conversation.stop()`` works from another Python thread.
"""
from __future__ import annotations

import ctypes
import enum
import json
from array import array
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Union

from . import _capi as C
from ._capi import leap_event, leap_generation_options, leap_token_logprob
from ._marshal import check, error_for_status, take_string
from .messages import ChatMessage, LeapFunctionCall

if TYPE_CHECKING:
    from .conversation import Conversation

class GenerationFinishReason(enum.IntEnum):
    """Why a generation ended."""

    STOP = C.LEAP_FINISH_STOP
    EXCEED_CONTEXT = C.LEAP_FINISH_EXCEED_CONTEXT
    INTERRUPTED = C.LEAP_FINISH_INTERRUPTED
    CONSTRAINT = C.LEAP_FINISH_CONSTRAINT
    ERROR = C.LEAP_FINISH_ERROR
    MAX_TOKENS = C.LEAP_FINISH_MAX_TOKENS


@dataclass(frozen=True)
class GenerationStats:
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    tokens_per_second: float
    cached_prompt_tokens: int
    time_to_first_token: float = 0.0
    prompt_tokens_per_second: float = 0.0
    #: Speculative decoding: tokens drafted and verified, and how many of them were accepted.
    drafted_tokens: int = 0
    accepted_draft_tokens: int = 0


@dataclass(frozen=True)
class Chunk:
    """A piece of the answer's text."""

    text: str


@dataclass(frozen=True)
class ReasoningChunk:
    """A piece of reasoning (text the model wrote inside <think>...</think>)."""

    reasoning: str


@dataclass(frozen=True)
class FunctionCalls:
    """Function calls the model made (emitted when a call's closing marker arrives)."""

    function_calls: List[LeapFunctionCall]


@dataclass(frozen=True)
class AudioSample:
    """Generated audio: float32 mono samples in [-1, 1]."""

    samples: Sequence[float]
    sample_rate: int


@dataclass(frozen=True)
class TokenLogprob:
    """A token and its log-probability under the model's raw logits (before the JSON-schema mask, the
    penalties, top-k / top-p / min-p and the temperature). ``bytes`` may be part of a UTF-8 character."""

    token: int
    bytes: bytes
    logprob: float


@dataclass(frozen=True)
class Token:
    """A generated text token (with ``GenerationOptions(top_logprobs=n)``), before the text it makes: its
    log-probability and its ``n`` most likely alternatives, most likely first."""

    token: TokenLogprob
    top_logprobs: List[TokenLogprob]


@dataclass(frozen=True)
class Complete:
    """The end of a response: the full assistant message, why it ended, and figures."""

    full_message: ChatMessage
    finish_reason: GenerationFinishReason
    stats: GenerationStats


MessageResponse = Union[Chunk, ReasoningChunk, FunctionCalls, AudioSample, Token, Complete]


_PARSERS = {None: C.LEAP_FUNCTION_CALL_PARSER_NONE, "none": C.LEAP_FUNCTION_CALL_PARSER_NONE,
            "lfm": C.LEAP_FUNCTION_CALL_PARSER_LFM, "hermes": C.LEAP_FUNCTION_CALL_PARSER_HERMES}


#: The most tokens drafted for one verification pass (GenerationOptions.max_draft_tokens; leap.h).
MAX_DRAFT_TOKENS = 14


@dataclass
class GenerationOptions:
    """Options of one generation; ``None`` means the model's default."""

    temperature: Optional[float] = None
    top_p: Optional[float] = None
    min_p: Optional[float] = None
    top_k: Optional[int] = None
    repetition_penalty: Optional[float] = None
    #: OpenAI's penalties (0 or None: off): minus count * frequency_penalty + presence_penalty for the tokens
    #: among the last 64 of the prompt and the output.
    frequency_penalty: Optional[float] = None
    presence_penalty: Optional[float] = None
    #: 0..20: a :class:`Token` event with its log-probability and that many alternatives before each text
    #: token's text; None: no such events.
    top_logprobs: Optional[int] = None
    rng_seed: Optional[int] = None
    max_tokens: Optional[int] = None
    json_schema_constraint: Optional[Union[str, Dict[str, Any]]] = None
    inject_schema_into_prompt: bool = True
    function_call_parser: Optional[str] = "lfm"
    inline_thinking_tags: bool = False
    enable_thinking: bool = False
    #: Models that speak: audio code sampling (None = Liquid's runner: 0.8 and top-k 4 interleaved / 64
    #: sequential; 0 or top-k 1 is greedy) and the mode ("text", "sequential", "interleaved"; None = from the
    #: system prompt). max_tokens counts audio frames too.
    audio_temperature: Optional[float] = None
    audio_top_k: Optional[int] = None
    audio_mode: Optional[str] = None
    #: True: a tool call that does not parse completes the turn with its text (markers removed) as content and
    #: a warning in the log, as vLLM and llama.cpp's server do; False (LEAP's behaviour): the generation
    #: raises :class:`leap.FunctionCallParsingError`.
    unparsed_function_calls_as_text: bool = False
    #: Speculative decoding (leap.h, "Speculative decoding"): who drafts ("ngram": prompt lookup; "draft_model":
    #: the model's draft model, see :func:`load_model`; "none"; None: the draft model if loaded, else none) and
    #: the most tokens drafted per verification pass (None: 8; at most MAX_DRAFT_TOKENS). The output does not
    #: change: greedy gives the same tokens, sampling the same distribution and draws.
    drafter: Optional[str] = None
    max_draft_tokens: Optional[int] = None

    def _to_c(self) -> tuple[leap_generation_options, list[Any]]:
        o = leap_generation_options()
        C.leap_generation_options_init(ctypes.byref(o), ctypes.sizeof(o))
        keep: list[Any] = []
        if self.temperature is not None:
            o.temperature = self.temperature
        if self.top_p is not None:
            o.top_p = self.top_p
        if self.min_p is not None:
            o.min_p = self.min_p
        if self.top_k is not None:
            o.top_k = self.top_k
        if self.repetition_penalty is not None:
            o.repetition_penalty = self.repetition_penalty
        if self.frequency_penalty is not None:
            o.frequency_penalty = self.frequency_penalty
        if self.presence_penalty is not None:
            o.presence_penalty = self.presence_penalty
        if self.top_logprobs is not None:
            o.top_logprobs = self.top_logprobs
        if self.rng_seed is not None:
            o.use_rng_seed = 1
            o.rng_seed = self.rng_seed & 0xFFFFFFFFFFFFFFFF
        if self.max_tokens is not None:
            o.max_tokens = self.max_tokens
        if self.json_schema_constraint is not None:
            schema = self.json_schema_constraint
            text = schema if isinstance(schema, str) else json.dumps(schema)
            b = text.encode()
            keep.append(b)
            o.json_schema_constraint = b
        o.inject_schema_into_prompt = int(self.inject_schema_into_prompt)
        key = self.function_call_parser.lower() if isinstance(self.function_call_parser, str) else self.function_call_parser
        if key not in _PARSERS:
            raise error_for_status(C.LEAP_ERR_INVALID_ARGUMENT, f"function_call_parser must be 'lfm', 'hermes' or None, got {self.function_call_parser!r}")
        o.function_call_parser = _PARSERS[key]
        o.unparsed_function_calls_as_text = int(self.unparsed_function_calls_as_text)
        o.inline_thinking_tags = int(self.inline_thinking_tags)
        o.enable_thinking = int(self.enable_thinking)
        if self.audio_temperature is not None:
            o.audio_temperature = self.audio_temperature
        if self.audio_top_k is not None:
            o.audio_top_k = self.audio_top_k
        modes = {None: C.LEAP_AUDIO_MODE_AUTO, "text": C.LEAP_AUDIO_MODE_TEXT_ONLY,
                 "sequential": C.LEAP_AUDIO_MODE_SEQUENTIAL, "interleaved": C.LEAP_AUDIO_MODE_INTERLEAVED}
        if self.audio_mode not in modes:
            raise error_for_status(C.LEAP_ERR_INVALID_ARGUMENT, f"audio_mode must be 'text', 'sequential', 'interleaved' or None, got {self.audio_mode!r}")
        o.audio_mode = modes[self.audio_mode]
        drafters = {None: C.LEAP_DRAFTER_DEFAULT, "none": C.LEAP_DRAFTER_NONE, "ngram": C.LEAP_DRAFTER_NGRAM,
                    "draft_model": C.LEAP_DRAFTER_DRAFT_MODEL}
        if self.drafter not in drafters:
            raise error_for_status(C.LEAP_ERR_INVALID_ARGUMENT, f"drafter must be 'ngram', 'draft_model', 'none' or None, got {self.drafter!r}")
        o.drafter = drafters[self.drafter]
        if self.max_draft_tokens is not None:
            o.max_draft_tokens = self.max_draft_tokens
        return o, keep


def _event_from_c(ev: leap_event) -> Optional[MessageResponse]:
    """The Python event for a filled ``leap_event`` (copied out of the borrowed pointers); None for NONE."""
    kind = ev.kind
    if kind == C.LEAP_EVENT_CHUNK:
        return Chunk(ctypes.string_at(ev.text, ev.text_len).decode("utf-8"))
    if kind == C.LEAP_EVENT_REASONING_CHUNK:
        return ReasoningChunk(ctypes.string_at(ev.text, ev.text_len).decode("utf-8"))
    if kind == C.LEAP_EVENT_FUNCTION_CALLS:
        calls = json.loads((ev.function_calls_json or b"[]").decode("utf-8"))
        return FunctionCalls([LeapFunctionCall(c["name"], c.get("arguments") or {}) for c in calls])
    if kind == C.LEAP_EVENT_AUDIO_SAMPLE:
        a = array("f")
        if ev.n_samples:
            a.frombytes(ctypes.string_at(ev.samples, 4 * ev.n_samples))
        return AudioSample(a, ev.sample_rate)
    if kind == C.LEAP_EVENT_TOKEN:
        def one(t: leap_token_logprob) -> TokenLogprob:
            return TokenLogprob(t.token, ctypes.string_at(t.bytes, t.n_bytes) if t.n_bytes else b"", t.logprob)

        return Token(one(ev.token), [one(ev.top_logprobs[i]) for i in range(ev.n_top_logprobs)])
    if kind == C.LEAP_EVENT_COMPLETE:
        out = ctypes.c_void_p()
        check(C.leap_message_to_json(ev.message, ctypes.byref(out)))
        msg = ChatMessage._from_canonical(json.loads(take_string(out.value) or "{}"))
        s = ev.stats.contents
        stats = GenerationStats(s.prompt_tokens, s.completion_tokens, s.total_tokens, s.tokens_per_second,
                                s.cached_prompt_tokens, s.time_to_first_token, s.prompt_tokens_per_second,
                                s.drafted_tokens, s.accepted_draft_tokens)
        return Complete(msg, GenerationFinishReason(ev.finish_reason), stats)
    return None


class ResponseStream:
    """The events of one running generation, in order (an iterator; :class:`Complete` is the last).

    The generation started when the stream was made; ``close()`` (or leaving a ``with`` block, or dropping
    the stream) ends it early: a generation that already produced tokens then completes as interrupted
    and its partial answer enters the history. An error raises from ``next()`` and ends the stream."""

    def __init__(self, handle: Any, conversation: "Conversation") -> None:
        self._g = handle
        self._conversation = conversation  # keeps the Python conversation (and its model) alive

    def __iter__(self) -> "ResponseStream":
        return self

    def __next__(self) -> MessageResponse:
        if self._g is None:
            raise StopIteration
        ev = leap_event()
        ev.struct_size = ctypes.sizeof(ev)
        try:
            check(C.leap_generation_next(self._g, ctypes.byref(ev)))
            e = _event_from_c(ev)
        except BaseException:
            self.close()
            raise
        if e is None or isinstance(e, Complete):
            self.close()
        if e is None:
            raise StopIteration
        return e

    def close(self) -> None:
        g, self._g = self._g, None
        if g is not None:
            C.leap_generation_free(g)

    def __enter__(self) -> "ResponseStream":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

