"""Models (LEAP ``ModelRunner``): loading a GGUF file with its companion files and prompt cache, what the
model is and can take, its tokenizer and chat template, embeddings, and the conversations it starts.
"""
from __future__ import annotations

import ctypes
import json
import os
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Union

from . import _capi as C
from ._capi import leap_conversation_p, leap_model_p, leap_model_params, leap_tokenizer_p
from ._marshal import OwnedHandle, check, float_buffer, take_bytes, take_string, utf8
from .context import Context
from .conversation import Conversation
from .messages import Audio, AudioPcmF32, ChatMessage, Image, ImageRGB, _rgb_bytes
from .tokenizer import Tokenizer


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

    def _fill(self, params: Any, prefix: str) -> None:
        """Set the prompt-cache fields of a C params struct, named ``prefix`` + the field (``cache_enabled`` in
        leap_model_params, ``prompt_cache_enabled`` in leap_bundle_params); nothing when the cache is off."""
        if not self.enabled:
            return
        fields = {"enabled": 1, "path": None if self.path is None else os.fsencode(self.path),
                  "max_entries_disk": self.max_entries_disk, "max_entries_memory": self.max_entries_memory,
                  "max_bytes_memory": self.max_bytes_memory, "max_bytes_disk": self.max_bytes_disk,
                  "disk_disabled": 0 if self.disk else 1}
        for name, value in fields.items():
            if not hasattr(type(params), prefix + name):  # setattr would add a Python attribute, not set C's
                raise AttributeError(f"{type(params).__name__} has no field {prefix + name}")
            setattr(params, prefix + name, value)


@dataclass(frozen=True)
class ModelCompanions:
    """Companion files of a multimodal model, given or found next to it at load (``None``: none): the
    projector (``mmproj``: images for LFM2-VL, audio input for LFM2-Audio) and the audio decoder and tokenizer
    of a model that speaks (LFM2.5-Audio)."""

    mmproj: Optional[str] = None
    audio_decoder: Optional[str] = None
    audio_tokenizer: Optional[str] = None


def _history_json(history: Any) -> str:
    if isinstance(history, str):
        return history
    items = []
    for m in history:
        items.append(m.to_json() if isinstance(m, ChatMessage) else m)
    return json.dumps(items, ensure_ascii=False)


class Model(OwnedHandle):
    """A loaded GGUF model (LEAP ``ModelRunner``). Close it (or use ``with``) to release it; conversations
    keep it alive while they exist.

    Companion files of multimodal models (``mmproj_path``, ``audio_decoder_path``,
    ``audio_tokenizer_path``) are taken as given, or found next to the model as LEAP does
    (``mmproj*.gguf``, ``*audio*decoder*.gguf|.bin``) unless ``auto_detect_companion_files=False``;
    they are validated at load and reported by :attr:`companions`. A projector's encoder is loaded with the
    model (LFM2-VL images: :attr:`supports_images`; LFM2-Audio audio: :attr:`supports_audio_input`); parts a
    model cannot take raise UnsupportedError naming the part and saying why.

    ``draft_model``: a GGUF sharing the model's vocabulary (e.g. LFM2-350M for LFM2-1.2B) that drafts tokens
    for speculative decoding (``GenerationOptions(drafter=...)``; generations that leave ``drafter`` unset use
    it). A draft model of another vocabulary raises :class:`leap.ModelLoadingError`."""

    _kind = "model"
    _free = staticmethod(C.leap_model_free)

    def __init__(self, path: Union[str, os.PathLike[str]], context_size: Optional[int] = None,
                 cpu_threads: Optional[int] = None, chat_template: Optional[str] = None,
                 mmproj_path: Optional[str] = None, audio_decoder_path: Optional[str] = None,
                 audio_tokenizer_path: Optional[str] = None, auto_detect_companion_files: bool = True,
                 cache: Optional[CacheOptions] = None,
                 draft_model: Optional[Union[str, os.PathLike[str]]] = None) -> None:
        p = leap_model_params()
        C.leap_model_params_init(ctypes.byref(p), ctypes.sizeof(p))
        p.context_size = context_size or 0
        p.n_threads = cpu_threads or 0
        p.chat_template = utf8(chat_template)
        p.mmproj_path = utf8(mmproj_path)
        p.audio_decoder_path = utf8(audio_decoder_path)
        p.audio_tokenizer_path = utf8(audio_tokenizer_path)
        p.auto_detect_companion_files = int(auto_detect_companion_files)
        if draft_model is not None:
            p.draft_model_path = os.fsencode(draft_model)
        if cache is not None:
            cache._fill(p, "cache_")
        h = leap_model_p()
        check(C.leap_model_load(os.fsencode(path), ctypes.byref(p), ctypes.byref(h)))
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
        check(C.leap_model_cache_flush(self._handle()))

    def create_context(self, context_size: Optional[int] = None) -> Context:
        """A low-level evaluation context (see leap.context.Context)."""
        return Context(self, context_size)

    def _string(self, f: Any) -> str:
        out = ctypes.c_void_p()
        check(f(self._handle(), ctypes.byref(out)))
        return take_string(out.value) or ""

    @property
    def model_id(self) -> str:
        return self._string(C.leap_model_id)

    @property
    def architecture(self) -> str:
        return self._string(C.leap_model_architecture)

    @property
    def chat_template(self) -> str:
        return self._string(C.leap_model_chat_template)

    @property
    def uses_fallback_template(self) -> bool:
        v = ctypes.c_int32()
        check(C.leap_model_uses_fallback_template(self._handle(), ctypes.byref(v)))
        return bool(v.value)

    @property
    def context_size(self) -> int:
        v = ctypes.c_int32()
        check(C.leap_model_context_size(self._handle(), ctypes.byref(v)))
        return v.value

    @property
    def companions(self) -> ModelCompanions:
        """The multimodal companion files loaded with the model (given or auto-detected)."""
        paths = []
        for kind in (C.LEAP_COMPANION_MMPROJ, C.LEAP_COMPANION_AUDIO_DECODER, C.LEAP_COMPANION_AUDIO_TOKENIZER):
            out = ctypes.c_void_p()
            check(C.leap_model_companion_path(self._handle(), kind, ctypes.byref(out)))
            paths.append(take_string(out.value) if out.value else None)
        return ModelCompanions(*paths)

    def _flag(self, f: Any) -> bool:
        v = ctypes.c_int32()
        check(f(self._handle(), ctypes.byref(v)))
        return bool(v.value)

    @property
    def supports_images(self) -> bool:
        """True when image parts reach the model (a vision projector, LFM2-VL)."""
        return self._flag(C.leap_model_has_vision)

    @property
    def supports_audio_input(self) -> bool:
        """True when audio parts reach the model (an audio encoder projector, LFM2-Audio)."""
        return self._flag(C.leap_model_has_audio_input)

    @property
    def supports_audio_output(self) -> bool:
        """True when the model speaks (an audio decoder and tokenizer, LFM2.5-Audio)."""
        return self._flag(C.leap_model_has_audio_output)

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
            return self._embeddings(C.leap_model_embed_image_rgb, _rgb_bytes(image.pixels, image.width, image.height),
                                    image.width, image.height)
        if isinstance(image, Image):
            return self._embeddings(C.leap_model_embed_image, image.jpeg, len(image.jpeg))
        raise TypeError(f"embed_image takes a leap.Image or a leap.ImageRGB, not {type(image).__name__}")

    def embed_audio(self, audio: Union[Audio, AudioPcmF32]) -> memoryview[float]:
        """The encoder's output rows for ``audio`` (a WAV :class:`Audio` or :class:`AudioPcmF32` samples at any
        rate): a float32 view of shape (n_frames, n_embd)."""
        if isinstance(audio, Audio):
            return self._embeddings(C.leap_model_embed_audio, audio.wav, len(audio.wav))
        if isinstance(audio, AudioPcmF32):
            ptr, n, _keep = float_buffer(audio.samples)
            return self._embeddings(C.leap_model_embed_audio_pcm, ptr, n, audio.sample_rate)
        raise TypeError(f"embed_audio takes a leap.Audio or a leap.AudioPcmF32, not {type(audio).__name__}")

    @property
    def vocab_size(self) -> int:
        v = ctypes.c_int32()
        check(C.leap_model_vocab_size(self._handle(), ctypes.byref(v)))
        return v.value

    def prompt_token_count(self, messages: Sequence[Union[ChatMessage, Dict[str, Any]]]) -> int:
        """Tokens the chat template makes of ``messages`` (with the generation prompt)."""
        n = ctypes.c_size_t()
        check(C.leap_model_prompt_token_count(self._handle(), utf8(_history_json(messages)), ctypes.byref(n)))
        return n.value

    @property
    def tokenizer(self) -> Tokenizer:
        """The model's tokenizer (a :class:`leap.Tokenizer` sharing the model's vocabulary)."""
        if getattr(self, "_tokenizer", None) is None:
            h = leap_tokenizer_p()
            check(C.leap_model_tokenizer(self._handle(), ctypes.byref(h)))
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
        check(C.leap_model_apply_chat_template(self._handle(), utf8(_history_json(messages)), utf8(tools_json),
                                    int(add_generation_prompt), utf8(json.dumps(variables)) if variables else None,
                                    ctypes.byref(out)))
        return take_string(out.value) or ""

    def create_conversation(self, system_prompt: Optional[str] = None) -> "Conversation":
        h = leap_conversation_p()
        check(C.leap_conversation_create(self._handle(), utf8(system_prompt), ctypes.byref(h)))
        return Conversation(h, self)

    def create_conversation_from_history(self, history: Any) -> "Conversation":
        """``history``: a list of ChatMessage / message dicts, or its JSON text."""
        h = leap_conversation_p()
        check(C.leap_conversation_create_from_history(self._handle(), utf8(_history_json(history)), ctypes.byref(h)))
        return Conversation(h, self)


def load_model(path: Union[str, os.PathLike[str]], context_size: Optional[int] = None, cpu_threads: Optional[int] = None,
               chat_template: Optional[str] = None, **kwargs: Any) -> Model:
    """Load a GGUF model. Raises :class:`leap.ModelLoadingError` (or LeapIOError / UnsupportedError)."""
    return Model(path, context_size=context_size, cpu_threads=cpu_threads, chat_template=chat_template, **kwargs)

