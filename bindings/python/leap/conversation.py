"""Models, conversations and streamed generation (the LEAP conversation API).

``generate_response`` starts a generation at once (as the C API's ``leap_conversation_generate_begin``)
and returns a :class:`ResponseStream` iterating the C pull iterator (``leap_generation_next``): no
threads, no callbacks. ctypes releases the GIL while the library computes, so ``conversation.stop()``
works from another Python thread.
"""
from __future__ import annotations

import ctypes
import enum
import json
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Union

from . import _lib
from ._lib import c_status, check, fn, take_bytes, take_string, utf8
from .messages import Audio, AudioPcmF32, ChatMessage, Image, ImageRGB, LeapFunctionCall, Role, leap_message_p, \
    _free as _message_free, _rgb_bytes, _to_json as _message_to_json

if TYPE_CHECKING:
    from .tokenizer import Tokenizer

leap_model_p = _lib.opaque("leap_model")
leap_conversation_p = _lib.opaque("leap_conversation")
leap_generation_p = _lib.opaque("leap_generation")


class leap_model_params(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("n_threads", ctypes.c_int32),
        ("context_size", ctypes.c_int32),
        ("chat_template", ctypes.c_char_p),
        ("mmproj_path", ctypes.c_char_p),
        ("audio_decoder_path", ctypes.c_char_p),
        ("audio_tokenizer_path", ctypes.c_char_p),
        ("auto_detect_companion_files", ctypes.c_int32),
        ("cache_enabled", ctypes.c_int32),
        ("cache_path", ctypes.c_char_p),
        ("cache_max_entries_disk", ctypes.c_int32),
        ("cache_max_entries_memory", ctypes.c_int32),
        ("cache_max_bytes_memory", ctypes.c_int64),
        ("cache_max_bytes_disk", ctypes.c_int64),
        ("cache_disk_disabled", ctypes.c_int32),
    ]


class leap_generation_options(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("temperature", ctypes.c_float),
        ("top_p", ctypes.c_float),
        ("min_p", ctypes.c_float),
        ("top_k", ctypes.c_int32),
        ("repetition_penalty", ctypes.c_float),
        ("use_rng_seed", ctypes.c_int32),
        ("rng_seed", ctypes.c_uint64),
        ("max_tokens", ctypes.c_int32),
        ("json_schema_constraint", ctypes.c_char_p),
        ("inject_schema_into_prompt", ctypes.c_int32),
        ("function_call_parser", ctypes.c_int32),
        ("inline_thinking_tags", ctypes.c_int32),
        ("enable_thinking", ctypes.c_int32),
        ("audio_temperature", ctypes.c_float),
        ("audio_top_k", ctypes.c_int32),
        ("audio_mode", ctypes.c_int32),
        ("frequency_penalty", ctypes.c_float),
        ("presence_penalty", ctypes.c_float),
        ("top_logprobs", ctypes.c_int32),
        ("unparsed_function_calls_as_text", ctypes.c_int32),
    ]


class leap_token_logprob(ctypes.Structure):
    _fields_ = [
        ("token", ctypes.c_int32),
        ("logprob", ctypes.c_float),
        ("bytes", ctypes.c_void_p),
        ("n_bytes", ctypes.c_size_t),
    ]


class leap_generation_stats(ctypes.Structure):
    _fields_ = [
        ("prompt_tokens", ctypes.c_int64),
        ("completion_tokens", ctypes.c_int64),
        ("total_tokens", ctypes.c_int64),
        ("cached_prompt_tokens", ctypes.c_int64),
        ("tokens_per_second", ctypes.c_double),
        ("time_to_first_token", ctypes.c_double),
        ("prompt_tokens_per_second", ctypes.c_double),
    ]


class leap_event(ctypes.Structure):
    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("kind", ctypes.c_int32),
        ("text", ctypes.c_void_p),
        ("text_len", ctypes.c_size_t),
        ("function_calls_json", ctypes.c_char_p),
        ("samples", ctypes.POINTER(ctypes.c_float)),
        ("n_samples", ctypes.c_size_t),
        ("sample_rate", ctypes.c_int32),
        ("finish_reason", ctypes.c_int32),
        ("message", leap_message_p),
        ("stats", ctypes.POINTER(leap_generation_stats)),
        ("token", leap_token_logprob),
        ("top_logprobs", ctypes.POINTER(leap_token_logprob)),
        ("n_top_logprobs", ctypes.c_size_t),
    ]


_P = ctypes.POINTER
# LEAP_API void leap_model_params_init(leap_model_params *params, size_t struct_size);
_model_params_init = fn("leap_model_params_init", None, _P(leap_model_params), ctypes.c_size_t)
# LEAP_API leap_status leap_model_load(const char *gguf_path, const leap_model_params *params, leap_model **out_model);
_model_load = fn("leap_model_load", c_status, ctypes.c_char_p, _P(leap_model_params), _P(leap_model_p))
# LEAP_API void leap_model_free(leap_model *model);
_model_free = fn("leap_model_free", None, leap_model_p)
_model_cache_flush = fn("leap_model_cache_flush", c_status, leap_model_p)
_model_id = fn("leap_model_id", c_status, leap_model_p, _P(ctypes.c_void_p))
_model_arch = fn("leap_model_architecture", c_status, leap_model_p, _P(ctypes.c_void_p))
_model_template = fn("leap_model_chat_template", c_status, leap_model_p, _P(ctypes.c_void_p))
_model_fallback = fn("leap_model_uses_fallback_template", c_status, leap_model_p, _P(ctypes.c_int32))
_model_ctx = fn("leap_model_context_size", c_status, leap_model_p, _P(ctypes.c_int32))
_model_vocab = fn("leap_model_vocab_size", c_status, leap_model_p, _P(ctypes.c_int32))
_model_prompt_tokens = fn("leap_model_prompt_token_count", c_status, leap_model_p, ctypes.c_char_p, _P(ctypes.c_size_t))
# LEAP_API leap_status leap_model_companion_path(const leap_model *model, leap_companion_kind kind, char **out_path);
_model_has_vision = fn("leap_model_has_vision", c_status, leap_model_p, _P(ctypes.c_int32))
_model_has_audio_in = fn("leap_model_has_audio_input", c_status, leap_model_p, _P(ctypes.c_int32))
_model_has_audio_out = fn("leap_model_has_audio_output", c_status, leap_model_p, _P(ctypes.c_int32))
_EMBED_OUT = (_P(ctypes.c_void_p), _P(ctypes.c_size_t), _P(ctypes.c_size_t))
_model_embed_image = fn("leap_model_embed_image", c_status, leap_model_p, ctypes.c_char_p, ctypes.c_size_t, *_EMBED_OUT)
_model_embed_image_rgb = fn("leap_model_embed_image_rgb", c_status, leap_model_p, ctypes.c_char_p, ctypes.c_int32,
                            ctypes.c_int32, *_EMBED_OUT)
_model_embed_audio = fn("leap_model_embed_audio", c_status, leap_model_p, ctypes.c_char_p, ctypes.c_size_t, *_EMBED_OUT)
_model_embed_pcm = fn("leap_model_embed_audio_pcm", c_status, leap_model_p, _P(ctypes.c_float), ctypes.c_size_t,
                      ctypes.c_int32, *_EMBED_OUT)
_model_companion = fn("leap_model_companion_path", c_status, leap_model_p, ctypes.c_int, _P(ctypes.c_void_p))
_model_apply_template = fn("leap_model_apply_chat_template", c_status, leap_model_p, ctypes.c_char_p, ctypes.c_char_p,
                           ctypes.c_int32, ctypes.c_char_p, _P(ctypes.c_void_p))
# LEAP_API void leap_generation_options_init(leap_generation_options *options, size_t struct_size);
_options_init = fn("leap_generation_options_init", None, _P(leap_generation_options), ctypes.c_size_t)
_conv_create = fn("leap_conversation_create", c_status, leap_model_p, ctypes.c_char_p, _P(leap_conversation_p))
_conv_from_history = fn("leap_conversation_create_from_history", c_status, leap_model_p, ctypes.c_char_p,
                        _P(leap_conversation_p))
_conv_free = fn("leap_conversation_free", None, leap_conversation_p)
_conv_history = fn("leap_conversation_history_json", c_status, leap_conversation_p, _P(ctypes.c_void_p))
_conv_append = fn("leap_conversation_append", c_status, leap_conversation_p, leap_message_p)
_conv_remove_last = fn("leap_conversation_remove_last", c_status, leap_conversation_p)
_conv_save_state = fn("leap_conversation_save_state", c_status, leap_conversation_p, ctypes.c_char_p)
_conv_load_state = fn("leap_conversation_load_state", c_status, leap_conversation_p, ctypes.c_char_p)
_conv_register = fn("leap_conversation_register_function", c_status, leap_conversation_p, ctypes.c_char_p)
_conv_is_generating = fn("leap_conversation_is_generating", c_status, leap_conversation_p, _P(ctypes.c_int32))
_conv_stop = fn("leap_conversation_stop", c_status, leap_conversation_p)
_gen_begin = fn("leap_conversation_generate_begin", c_status, leap_conversation_p, leap_message_p,
                _P(leap_generation_options), _P(leap_generation_p))
_gen_next = fn("leap_generation_next", c_status, leap_generation_p, _P(leap_event))
_gen_free = fn("leap_generation_free", None, leap_generation_p)

_EVENT_CHUNK, _EVENT_REASONING, _EVENT_CALLS, _EVENT_AUDIO, _EVENT_COMPLETE, _EVENT_TOKEN = 1, 2, 3, 4, 5, 6


class GenerationFinishReason(enum.IntEnum):
    """Why a generation ended."""

    STOP = 0
    EXCEED_CONTEXT = 1
    INTERRUPTED = 2
    CONSTRAINT = 3
    ERROR = 4
    MAX_TOKENS = 5


@dataclass(frozen=True)
class GenerationStats:
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    tokens_per_second: float
    cached_prompt_tokens: int
    time_to_first_token: float = 0.0
    prompt_tokens_per_second: float = 0.0


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


@dataclass(frozen=True)
class CacheOptions:
    """The prompt cache (LEAP ``CacheOptions``), passed as ``load_model(..., cache=CacheOptions(path=...))``.

    A turn whose prompt starts with a prefix an earlier turn evaluated (in this process, or on disk in an
    earlier or concurrent one) restores that state instead of evaluating it again;
    ``GenerationStats.cached_prompt_tokens`` counts the positions restored. Snapshots live in memory
    (``max_entries_memory``, ``max_bytes_memory``) and, unless ``disk=False``, in a folder per model under
    ``path`` (``max_entries_disk``, ``max_bytes_disk``), evicted least recently used first. Snapshots from
    another model or build, or damaged files, are ignored and reported through the log (warning).
    Passing options turns the cache on (``enabled=False`` keeps it off)."""

    path: Optional[Union[str, "os.PathLike[str]"]] = None
    enabled: bool = True
    max_entries_disk: int = 4096
    max_entries_memory: int = 256
    max_bytes_memory: int = 512 << 20
    max_bytes_disk: int = 4 << 30
    disk: bool = True


@dataclass(frozen=True)
class ModelCompanions:
    """Companion files of a multimodal model, given or found next to it at load (``None``: none): the
    projector (``mmproj``: images for LFM2-VL, audio input for LFM2-Audio) and the audio decoder and tokenizer
    of a model that speaks (LFM2.5-Audio)."""

    mmproj: Optional[str] = None
    audio_decoder: Optional[str] = None
    audio_tokenizer: Optional[str] = None


def _event_from_c(ev: leap_event) -> Optional[MessageResponse]:
    """The Python event for a filled ``leap_event`` (copied out of the borrowed pointers); None for NONE."""
    kind = ev.kind
    if kind == _EVENT_CHUNK:
        return Chunk(ctypes.string_at(ev.text, ev.text_len).decode("utf-8"))
    if kind == _EVENT_REASONING:
        return ReasoningChunk(ctypes.string_at(ev.text, ev.text_len).decode("utf-8"))
    if kind == _EVENT_CALLS:
        calls = json.loads((ev.function_calls_json or b"[]").decode("utf-8"))
        return FunctionCalls([LeapFunctionCall(c["name"], c.get("arguments") or {}) for c in calls])
    if kind == _EVENT_AUDIO:
        from array import array

        a = array("f")
        if ev.n_samples:
            a.frombytes(ctypes.string_at(ev.samples, 4 * ev.n_samples))
        return AudioSample(a, ev.sample_rate)
    if kind == _EVENT_TOKEN:
        def one(t: leap_token_logprob) -> TokenLogprob:
            return TokenLogprob(t.token, ctypes.string_at(t.bytes, t.n_bytes) if t.n_bytes else b"", t.logprob)

        return Token(one(ev.token), [one(ev.top_logprobs[i]) for i in range(ev.n_top_logprobs)])
    if kind == _EVENT_COMPLETE:
        out = ctypes.c_void_p()
        check(_message_to_json(ev.message, ctypes.byref(out)))
        msg = ChatMessage._from_canonical(json.loads(take_string(out.value) or "{}"))
        s = ev.stats.contents
        stats = GenerationStats(s.prompt_tokens, s.completion_tokens, s.total_tokens, s.tokens_per_second,
                                s.cached_prompt_tokens, s.time_to_first_token, s.prompt_tokens_per_second)
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
            check(_gen_next(self._g, ctypes.byref(ev)))
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
            _gen_free(g)

    def __enter__(self) -> "ResponseStream":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

_PARSERS = {None: 0, "none": 0, "lfm": 1, "hermes": 2}


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

    def _to_c(self) -> tuple[leap_generation_options, list[Any]]:
        o = leap_generation_options()
        _options_init(ctypes.byref(o), ctypes.sizeof(o))
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
            raise _lib.error_for_status(1, f"function_call_parser must be 'lfm', 'hermes' or None, got {self.function_call_parser!r}")
        o.function_call_parser = _PARSERS[key]
        o.unparsed_function_calls_as_text = int(self.unparsed_function_calls_as_text)
        o.inline_thinking_tags = int(self.inline_thinking_tags)
        o.enable_thinking = int(self.enable_thinking)
        if self.audio_temperature is not None:
            o.audio_temperature = self.audio_temperature
        if self.audio_top_k is not None:
            o.audio_top_k = self.audio_top_k
        modes = {None: 0, "text": 1, "sequential": 2, "interleaved": 3}
        if self.audio_mode not in modes:
            raise _lib.error_for_status(1, f"audio_mode must be 'text', 'sequential', 'interleaved' or None, got {self.audio_mode!r}")
        o.audio_mode = modes[self.audio_mode]
        return o, keep


def _history_json(history: Any) -> str:
    if isinstance(history, str):
        return history
    items = []
    for m in history:
        items.append(m.to_json() if isinstance(m, ChatMessage) else m)
    return json.dumps(items, ensure_ascii=False)


class Model(_lib.OwnedHandle):
    """A loaded GGUF model (LEAP ``ModelRunner``). Close it (or use ``with``) to release it; conversations
    keep it alive while they exist.

    Companion files of multimodal models (``mmproj_path``, ``audio_decoder_path``,
    ``audio_tokenizer_path``) are taken as given, or found next to the model as LEAP does
    (``mmproj*.gguf``, ``*audio*decoder*.gguf|.bin``) unless ``auto_detect_companion_files=False``;
    they are validated at load and reported by :attr:`companions`. A projector's encoder is loaded with the
    model (LFM2-VL images: :attr:`supports_images`; LFM2-Audio audio: :attr:`supports_audio_input`); parts a
    model cannot take raise UnsupportedError naming the part and saying why."""

    _kind = "model"
    _free = staticmethod(_model_free)

    def __init__(self, path: Union[str, os.PathLike[str]], context_size: Optional[int] = None,
                 cpu_threads: Optional[int] = None, chat_template: Optional[str] = None,
                 mmproj_path: Optional[str] = None, audio_decoder_path: Optional[str] = None,
                 audio_tokenizer_path: Optional[str] = None, auto_detect_companion_files: bool = True,
                 cache: Optional[CacheOptions] = None) -> None:
        p = leap_model_params()
        _model_params_init(ctypes.byref(p), ctypes.sizeof(p))
        p.context_size = context_size or 0
        p.n_threads = cpu_threads or 0
        p.chat_template = utf8(chat_template)
        p.mmproj_path = utf8(mmproj_path)
        p.audio_decoder_path = utf8(audio_decoder_path)
        p.audio_tokenizer_path = utf8(audio_tokenizer_path)
        p.auto_detect_companion_files = int(auto_detect_companion_files)
        if cache is not None and cache.enabled:
            p.cache_enabled = 1
            p.cache_path = None if cache.path is None else os.fsencode(cache.path)
            p.cache_max_entries_disk = cache.max_entries_disk
            p.cache_max_entries_memory = cache.max_entries_memory
            p.cache_max_bytes_memory = cache.max_bytes_memory
            p.cache_max_bytes_disk = cache.max_bytes_disk
            p.cache_disk_disabled = 0 if cache.disk else 1
        h = leap_model_p()
        check(_model_load(os.fsencode(path), ctypes.byref(p), ctypes.byref(h)))
        self._h = h
        self.path = os.fspath(path)

    @classmethod
    def _from_handle(cls, handle: Any, path: str) -> "Model":
        """A Model owning ``handle``, a model loaded by another C entry point (e.g. a bundle)."""
        m = cls.__new__(cls)
        m.path = path
        m._h = handle
        return m

    def close(self) -> None:
        t = self.__dict__.get("_tokenizer")
        if t is not None:
            t.close()
            self._tokenizer: Optional[Tokenizer] = None
        super().close()

    def __enter__(self) -> "Model":
        return self

    def flush_cache(self) -> None:
        """Wait until the prompt cache's pending snapshot writes are on disk (no-op without a cache)."""
        check(_model_cache_flush(self._handle()))

    def create_context(self, context_size: Optional[int] = None) -> "Any":
        """A low-level evaluation context (see leap.context.Context)."""
        from .context import Context
        return Context(self, context_size)

    def _string(self, f: Any) -> str:
        out = ctypes.c_void_p()
        check(f(self._handle(), ctypes.byref(out)))
        return take_string(out.value) or ""

    @property
    def model_id(self) -> str:
        return self._string(_model_id)

    @property
    def architecture(self) -> str:
        return self._string(_model_arch)

    @property
    def chat_template(self) -> str:
        return self._string(_model_template)

    @property
    def uses_fallback_template(self) -> bool:
        v = ctypes.c_int32()
        check(_model_fallback(self._handle(), ctypes.byref(v)))
        return bool(v.value)

    @property
    def context_size(self) -> int:
        v = ctypes.c_int32()
        check(_model_ctx(self._handle(), ctypes.byref(v)))
        return v.value

    @property
    def companions(self) -> ModelCompanions:
        """The multimodal companion files loaded with the model (given or auto-detected)."""
        paths = []
        for kind in range(3):  # leap_companion_kind: MMPROJ, AUDIO_DECODER, AUDIO_TOKENIZER
            out = ctypes.c_void_p()
            check(_model_companion(self._handle(), kind, ctypes.byref(out)))
            paths.append(take_string(out.value) if out.value else None)
        return ModelCompanions(*paths)

    def _flag(self, f: Any) -> bool:
        v = ctypes.c_int32()
        check(f(self._handle(), ctypes.byref(v)))
        return bool(v.value)

    @property
    def supports_images(self) -> bool:
        """True when image parts reach the model (a vision projector, LFM2-VL)."""
        return self._flag(_model_has_vision)

    @property
    def supports_audio_input(self) -> bool:
        """True when audio parts reach the model (an audio encoder projector, LFM2-Audio)."""
        return self._flag(_model_has_audio_in)

    @property
    def supports_audio_output(self) -> bool:
        """True when the model speaks (an audio decoder and tokenizer, LFM2.5-Audio)."""
        return self._flag(_model_has_audio_out)

    def _embeddings(self, call: Any, *args: Any) -> memoryview[float]:
        rows = ctypes.c_void_p()
        n_rows = ctypes.c_size_t()
        n_embd = ctypes.c_size_t()
        check(call(self._handle(), *args, ctypes.byref(rows), ctypes.byref(n_rows), ctypes.byref(n_embd)))
        data = take_bytes(rows, 4 * n_rows.value * n_embd.value)
        return memoryview(data).cast("f", (n_rows.value, n_embd.value))

    def embed_image(self, image: Union[Image, ImageRGB]) -> memoryview[float]:
        """The embedding rows the model sees for ``image`` (a JPEG :class:`Image` or an :class:`ImageRGB`):
        a float32 view of shape (n_tokens, n_embd) (``numpy.asarray`` takes it as it is); for an image that
        is tiled, the tiles' rows in row-major order, then the thumbnail's."""
        if isinstance(image, ImageRGB):
            return self._embeddings(_model_embed_image_rgb, _rgb_bytes(image.pixels, image.width, image.height),
                                    image.width, image.height)
        if isinstance(image, Image):
            return self._embeddings(_model_embed_image, image.jpeg, len(image.jpeg))
        raise TypeError(f"embed_image takes a leap.Image or a leap.ImageRGB, not {type(image).__name__}")

    def embed_audio(self, audio: Union[Audio, AudioPcmF32]) -> memoryview[float]:
        """The encoder's output rows for ``audio`` (a WAV :class:`Audio` or :class:`AudioPcmF32` samples at any
        rate): a float32 view of shape (n_frames, n_embd)."""
        if isinstance(audio, Audio):
            return self._embeddings(_model_embed_audio, audio.wav, len(audio.wav))
        if isinstance(audio, AudioPcmF32):
            ptr, n, _keep = _lib.float_buffer(audio.samples)
            return self._embeddings(_model_embed_pcm, ptr, n, audio.sample_rate)
        raise TypeError(f"embed_audio takes a leap.Audio or a leap.AudioPcmF32, not {type(audio).__name__}")

    @property
    def vocab_size(self) -> int:
        v = ctypes.c_int32()
        check(_model_vocab(self._handle(), ctypes.byref(v)))
        return v.value

    def prompt_token_count(self, messages: Sequence[Union[ChatMessage, Dict[str, Any]]]) -> int:
        """Tokens the chat template makes of ``messages`` (with the generation prompt)."""
        n = ctypes.c_size_t()
        check(_model_prompt_tokens(self._handle(), utf8(_history_json(messages)), ctypes.byref(n)))
        return n.value

    @property
    def tokenizer(self) -> "Tokenizer":
        """The model's tokenizer (a :class:`leap.Tokenizer` sharing the model's vocabulary)."""
        if getattr(self, "_tokenizer", None) is None:
            from .tokenizer import Tokenizer, leap_tokenizer_p

            h = leap_tokenizer_p()
            f = fn("leap_model_tokenizer", c_status, leap_model_p, _P(leap_tokenizer_p))
            check(f(self._handle(), ctypes.byref(h)))
            self._tokenizer = Tokenizer._adopt(h, self.path)
        assert self._tokenizer is not None
        return self._tokenizer

    def tokenize(self, text: Union[str, bytes], add_special: bool = True, parse_special: bool = False) -> List[int]:
        """Token ids of ``text`` with the model's vocabulary."""
        return self.tokenizer.tokenize(text, add_special=add_special, parse_special=parse_special)

    def detokenize(self, tokens: Sequence[int], special: bool = False) -> str:
        """The text of a token sequence (control tokens only with ``special=True``)."""
        return self.tokenizer.detokenize(tokens, special=special)

    def apply_chat_template(self, messages: Sequence[Union[ChatMessage, Dict[str, Any]]],
                            tools: Optional[Sequence[Any]] = None, add_generation_prompt: bool = True,
                            **variables: Any) -> str:
        """The prompt text the model's chat template makes of ``messages`` (bos/eos filled in)."""
        tools_json = None
        if tools is not None:
            tools_json = json.dumps([t.to_json() if hasattr(t, "to_json") else t for t in tools], ensure_ascii=False)
        out = ctypes.c_void_p()
        check(_model_apply_template(self._handle(), utf8(_history_json(messages)), utf8(tools_json),
                                    int(add_generation_prompt), utf8(json.dumps(variables)) if variables else None,
                                    ctypes.byref(out)))
        return take_string(out.value) or ""

    def create_conversation(self, system_prompt: Optional[str] = None) -> "Conversation":
        h = leap_conversation_p()
        check(_conv_create(self._handle(), utf8(system_prompt), ctypes.byref(h)))
        return Conversation(h, self)

    def create_conversation_from_history(self, history: Any) -> "Conversation":
        """``history``: a list of ChatMessage / message dicts, or its JSON text."""
        h = leap_conversation_p()
        check(_conv_from_history(self._handle(), utf8(_history_json(history)), ctypes.byref(h)))
        return Conversation(h, self)


def load_model(path: Union[str, os.PathLike[str]], context_size: Optional[int] = None, cpu_threads: Optional[int] = None,
               chat_template: Optional[str] = None, **kwargs: Any) -> Model:
    """Load a GGUF model. Raises :class:`leap.ModelLoadingError` (or LeapIOError / UnsupportedError)."""
    return Model(path, context_size=context_size, cpu_threads=cpu_threads, chat_template=chat_template, **kwargs)


class Conversation(_lib.OwnedHandle):
    """A chat history bound to a model (LEAP ``Conversation``)."""

    _kind = "conversation"
    _free = staticmethod(_conv_free)

    def __init__(self, handle: Any, model: Model) -> None:
        self.model = model
        self._h = handle

    def __enter__(self) -> "Conversation":
        return self

    def export_json(self) -> List[Dict[str, Any]]:
        """The history as a list of message dicts (the messages wire format)."""
        out = ctypes.c_void_p()
        check(_conv_history(self._handle(), ctypes.byref(out)))
        history: List[Dict[str, Any]] = json.loads(take_string(out.value) or "[]")
        return history

    @property
    def history(self) -> List[ChatMessage]:
        """A snapshot of the history."""
        return [ChatMessage._from_canonical(d) for d in self.export_json()]

    @property
    def is_generating(self) -> bool:
        v = ctypes.c_int32()
        check(_conv_is_generating(self._handle(), ctypes.byref(v)))
        return bool(v.value)

    def append_to_history(self, message: ChatMessage) -> None:
        with message._to_handle() as m:
            check(_conv_append(self._handle(), m.p))

    def remove_last_message(self) -> None:
        check(_conv_remove_last(self._handle()))

    def save_state(self, path: Union[str, "os.PathLike[str]"]) -> None:
        """Write the positions this conversation has evaluated (KV cache, convolution state, their tokens and
        media keys) to ``path``, atomically. The history is not saved (see :meth:`load_state`)."""
        check(_conv_save_state(self._handle(), os.fsencode(path)))

    def load_state(self, path: Union[str, "os.PathLike[str]"]) -> None:
        """Restore positions saved by :meth:`save_state` (same model and build): the next turn reuses them as
        far as its prompt starts with them. Raises FormatError for a file of another model or build or a
        damaged one (the conversation is then unchanged), LeapIOError when it cannot be read."""
        check(_conv_load_state(self._handle(), os.fsencode(path)))

    def register_function(self, function: Any) -> None:
        """Register a function the model may call: a ``leap.LeapFunction`` or an OpenAI tool dict."""
        d = function.to_json() if hasattr(function, "to_json") else function
        check(_conv_register(self._handle(), utf8(d if isinstance(d, str) else json.dumps(d, ensure_ascii=False))))

    def stop(self) -> None:
        """Stop the running generation, or the one starting at this moment, after the current token: it
        completes as INTERRUPTED. Safe from any thread; does nothing when idle (and never carries over)."""
        check(_conv_stop(self._handle()))

    def generate_response(self, message: Union[ChatMessage, str],
                          options: Optional[GenerationOptions] = None) -> ResponseStream:
        """Start the response to ``message`` (a ChatMessage or user text) and return the stream of its
        events: Chunk, ReasoningChunk, FunctionCalls, AudioSample, and finally Complete.

        As in the C API (and LEAP), the generation starts now: the user message enters the history and
        the conversation is busy before this returns (a busy conversation raises BusyError here); the
        prompt is evaluated at the first ``next()``. The assistant message is appended when the
        generation completes. Closing the stream early, or dropping it, stops the generation (a started
        one keeps its partial answer)."""
        if not isinstance(message, ChatMessage):
            message = ChatMessage(Role.USER, message)
        opts, keep = (options or GenerationOptions())._to_c()
        g = leap_generation_p()
        with message._to_handle() as m:
            check(_gen_begin(self._handle(), m.p, ctypes.byref(opts), ctypes.byref(g)))
        del keep  # the C side copied the schema
        return ResponseStream(g, self)
