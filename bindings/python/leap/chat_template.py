"""Chat templates: render a conversation into prompt text exactly as Python jinja2 would.

    t = ChatTemplate(source)                       # e.g. a GGUF's tokenizer.chat_template
    prompt = t.render([{"role": "user", "content": "Hi"}], add_generation_prompt=True,
                      bos_token="<|startoftext|>", enable_thinking=False)

The library interprets the Jinja subset chat templates use and matches jinja2 configured like Hugging Face
transformers (``ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)``, loop controls,
``tojson``, ``raise_exception``, ``strftime_now``). Syntax errors raise :class:`leap.FormatError` from the
constructor, template failures (``raise_exception(...)``, undefined attribute access, type errors) from
:meth:`ChatTemplate.render`; messages name the template line and column.
"""
from __future__ import annotations

import ctypes
import json
from typing import Any, Dict, List, Optional, Sequence, Union

from . import _capi as C
from ._capi import leap_chat_template_p
from ._marshal import OwnedHandle, check, take_string, utf8
from .messages import Audio, AudioPcmF32, ChatMessage, Image, Text

MessageLike = Union[Dict[str, Any], ChatMessage]


def message_to_template_dict(m: ChatMessage) -> Dict[str, Any]:
    """The OpenAI-shaped dict a chat template expects for a :class:`ChatMessage`.

    ``content`` is a string when the message is text only, otherwise a list of parts
    (``{"type": "text", "text": ...}``, ``{"type": "image"}``, ``{"type": "audio"}``); assistant function calls
    become ``tool_calls`` and reasoning becomes both ``reasoning_content`` and ``thinking``.
    """
    if all(isinstance(p, Text) for p in m.content):
        content: Any = "".join(p.text for p in m.content if isinstance(p, Text))
    else:
        parts: List[Dict[str, Any]] = []
        for p in m.content:
            if isinstance(p, Text):
                parts.append({"type": "text", "text": p.text})
            elif isinstance(p, Image):
                parts.append({"type": "image"})
            elif isinstance(p, (Audio, AudioPcmF32)):
                parts.append({"type": "audio"})
        content = parts
    d: Dict[str, Any] = {"role": m.role.value, "content": content}
    if m.function_calls:
        d["tool_calls"] = [{"type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                           for c in m.function_calls]
    if m.reasoning_content:
        d["reasoning_content"] = m.reasoning_content
        d["thinking"] = m.reasoning_content
    return d


class ChatTemplate(OwnedHandle):
    """A parsed chat template (immutable; may be rendered from several threads)."""

    _kind = "chat template"
    _free = staticmethod(C.leap_chat_template_free)

    CHATML: str = (C.leap_chat_template_chatml() or b"").decode("utf-8")
    """The ChatML template libleap falls back to for models that carry none."""

    def __init__(self, source: str) -> None:
        self.source = source
        h = leap_chat_template_p()
        check(C.leap_chat_template_create(utf8(source), ctypes.byref(h)))
        self._h = h

    def __enter__(self) -> "ChatTemplate":
        return self

    def render(self, messages: Sequence[MessageLike], tools: Optional[Sequence[Dict[str, Any]]] = None,
               add_generation_prompt: bool = True, **variables: Any) -> str:
        """Render ``messages`` (dicts, or :class:`ChatMessage`) with optional ``tools`` (OpenAI-style tool
        dicts). The template also sees ``add_generation_prompt``, ``bos_token`` / ``eos_token`` ("" unless
        given) and every keyword in ``variables`` (e.g. ``enable_thinking=False``), which are JSON-encoded.
        """
        h = self._handle()
        msgs = [message_to_template_dict(m) if isinstance(m, ChatMessage) else m for m in messages]
        out = ctypes.c_void_p()
        check(C.leap_chat_template_render(h, utf8(json.dumps(msgs, ensure_ascii=False)),
                      None if tools is None else utf8(json.dumps(list(tools), ensure_ascii=False)),
                      1 if add_generation_prompt else 0,
                      utf8(json.dumps(variables, ensure_ascii=False)), ctypes.byref(out)))
        text = take_string(out.value)
        assert text is not None
        return text
