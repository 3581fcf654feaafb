"""Conversations (LEAP ``Conversation``): a chat history bound to a model, and the generations that extend it."""
from __future__ import annotations

import ctypes
import json
import os
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Union

from . import _capi as C
from ._capi import leap_generation_p
from ._marshal import OwnedHandle, check, take_string, utf8
from .generation import GenerationOptions, ResponseStream
from .messages import ChatMessage, Role

if TYPE_CHECKING:
    from .model import Model


class Conversation(OwnedHandle):
    """A chat history bound to a model (LEAP ``Conversation``)."""

    _kind = "conversation"
    _free = staticmethod(C.leap_conversation_free)

    def __init__(self, handle: Any, model: Model) -> None:
        self.model = model
        self._h = handle

    def __enter__(self) -> "Conversation":
        return self

    def export_json(self) -> List[Dict[str, Any]]:
        """The history as a list of message dicts (the messages wire format)."""
        out = ctypes.c_void_p()
        check(C.leap_conversation_history_json(self._handle(), ctypes.byref(out)))
        history: List[Dict[str, Any]] = json.loads(take_string(out.value) or "[]")
        return history

    @property
    def history(self) -> List[ChatMessage]:
        """A snapshot of the history."""
        return [ChatMessage._from_canonical(d) for d in self.export_json()]

    @property
    def is_generating(self) -> bool:
        v = ctypes.c_int32()
        check(C.leap_conversation_is_generating(self._handle(), ctypes.byref(v)))
        return bool(v.value)

    def append_to_history(self, message: ChatMessage) -> None:
        with message._to_handle() as m:
            check(C.leap_conversation_append(self._handle(), m.p))

    def remove_last_message(self) -> None:
        check(C.leap_conversation_remove_last(self._handle()))

    def save_state(self, path: Union[str, "os.PathLike[str]"]) -> None:
        """Write the positions this conversation has evaluated (KV cache, convolution state, their tokens and
        media keys) to ``path``, atomically. The history is not saved (see :meth:`load_state`)."""
        check(C.leap_conversation_save_state(self._handle(), os.fsencode(path)))

    def load_state(self, path: Union[str, "os.PathLike[str]"]) -> None:
        """Restore positions saved by :meth:`save_state` (same model and build): the next turn reuses them as
        far as its prompt starts with them. Raises FormatError for a file of another model or build or a
        damaged one (the conversation is then unchanged), LeapIOError when it cannot be read."""
        check(C.leap_conversation_load_state(self._handle(), os.fsencode(path)))

    def register_function(self, function: Any) -> None:
        """Register a function the model may call: a ``leap.LeapFunction`` or an OpenAI tool dict."""
        d = function.to_json() if hasattr(function, "to_json") else function
        text = d if isinstance(d, str) else json.dumps(d, ensure_ascii=False)
        check(C.leap_conversation_register_function(self._handle(), utf8(text)))

    def stop(self) -> None:
        """Stop the running generation, or the one starting at this moment, after the current token: it
        completes as INTERRUPTED. Safe from any thread; does nothing when idle (and never carries over)."""
        check(C.leap_conversation_stop(self._handle()))

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
            check(C.leap_conversation_generate_begin(self._handle(), m.p, ctypes.byref(opts), ctypes.byref(g)))
        del keep  # the C side copied the schema
        return ResponseStream(g, self)
