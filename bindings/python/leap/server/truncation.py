"""Realtime ``truncation``: which of the oldest items of a conversation a response leaves out of the model's
input once the conversation outgrows it, as OpenAI's Realtime sessions do. Items are never deleted (the
client still sees them); they are only not part of the prompt.

* ``"auto"`` (the default): when the tokens after the instructions exceed the post-instruction limit, the
  oldest items are dropped until they fit.
* ``"disabled"``: nothing is dropped; a conversation longer than the context fails its responses with
  ``context_length_exceeded``.
* ``{"type": "retention_ratio", "retention_ratio": r, "token_limits": {"post_instructions": n}}``: when
  they exceed the limit, the oldest items are dropped until at most ``r`` of it is used, so that the next
  turns fit without dropping again (and keep hitting the prompt cache).

The input limit is the context minus the response's maximum output tokens (``max_output_tokens``, else
the server's ``--max-tokens``, else :data:`DEFAULT_OUTPUT_RESERVE` bounded to a quarter of the context);
the post-instruction limit is that minus the instructions' tokens (the system prompt with the tool
definitions), or ``token_limits.post_instructions`` when lower.

Tokens are the library's count of the prompt (``leap.Model.prompt_token_count``: the model's chat
template and tokenizer; an image or audio part as the positions its layout takes, found by decoding it,
without running the encoder), plus what tool definitions and a forced call's schema add (see
:func:`definition_tokens`).

Where the kept items start (the cut) only moves forward, and only when the limit is exceeded: between two
truncations every prompt extends the one before it. The kept items start at a client's item (a user or
system message): an answer is never kept without what it answers, a tool output never without its call,
and the last client item is always kept. When what is kept still exceeds the limit (the last item is too
long), the prompt goes to the library as it is: answered while it fits the context, refused with
``context_length_exceeded`` when it does not.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence

import leap

from .chat import ChatRequest
from .errors import ApiError, bad_request, quote
from .schemas import Fields, wrong_type

#: Output tokens kept free for the answer when neither the session nor the server bound them (OpenAI's
#: realtime models answer with at most 4096 tokens); at most a quarter of the context.
DEFAULT_OUTPUT_RESERVE = 4096
#: LEAP's schema injection: the library appends this and the schema of a constrained answer to the first
#: system message (or makes it one) when it builds the prompt.
SCHEMA_PREAMBLE = "Follow the JSON schema below for your response:\n"


@dataclass(frozen=True)
class Truncation:
    mode: str = "auto"
    retention_ratio: float = 1.0
    post_instructions: Optional[int] = None

    def describe(self) -> Any:
        """The session's ``truncation`` field as OpenAI writes it."""
        if self.mode != "retention_ratio":
            return self.mode
        out: Dict[str, Any] = {"type": "retention_ratio", "retention_ratio": self.retention_ratio}
        if self.post_instructions is not None:
            out["token_limits"] = {"post_instructions": self.post_instructions}
        return out


def parse_truncation(value: Any, param: str, max_input: int) -> Truncation:
    """``session.truncation``: a mode name or a retention ratio object (``post_instructions`` at most
    ``max_input``, the context minus the maximum output tokens)."""
    if isinstance(value, str):
        if value not in ("auto", "disabled"):
            raise bad_request(f"{param}: {quote(value)} is not 'auto', 'disabled' or a retention_ratio object",
                              param, code="unsupported_value")
        return Truncation(value)
    if not isinstance(value, dict):
        raise wrong_type(param, "'auto', 'disabled' or a retention_ratio object", value)
    f = Fields(value, param)
    f.string("type", required=True, choices=("retention_ratio",))
    ratio = f.number("retention_ratio", 0.0, 1.0)
    if ratio is None:
        raise ApiError(400, f"{param}.retention_ratio: missing required field", param=f"{param}.retention_ratio",
                       code="missing_required_parameter")
    limits = f.obj_field("token_limits")
    post = Fields(limits, f"{param}.token_limits").integer("post_instructions", 1, max_input) if limits else None
    return Truncation("retention_ratio", ratio, post)


def output_reserve(max_tokens: Optional[int], context: int) -> int:
    """Tokens the input leaves free for the answer."""
    return max_tokens if max_tokens else min(DEFAULT_OUTPUT_RESERVE, context // 4)


def cut_points(roles: Sequence[leap.Role]) -> List[int]:
    """Where the kept items may start: the indexes of a client's items (user or system messages)."""
    return [i for i, r in enumerate(roles) if r in (leap.Role.USER, leap.Role.SYSTEM)]


def choose_cut(points: Sequence[int], current: int, post_tokens: Callable[[int], int], limit: int,
               target: int) -> int:
    """The cut for the next prompt: ``current`` while the tokens after the instructions
    (``post_tokens(cut)``) stay within ``limit``; otherwise the first cut point after it that brings them
    to ``target`` or below (the last point when none does). ``post_tokens`` falls as the cut moves on, so
    the point is found by bisection (a few prompt counts, not one per item)."""
    later = [p for p in points if p >= current]
    if not later:
        return current
    if post_tokens(later[0]) <= limit:
        return later[0]
    lo, hi = 1, len(later) - 1
    if hi < lo or post_tokens(later[hi]) > target:
        return later[-1]
    while lo < hi:  # later[hi] fits the target; find the first that does
        mid = (lo + hi) // 2
        if post_tokens(later[mid]) <= target:
            hi = mid
        else:
            lo = mid + 1
    return later[lo]


@dataclass
class Input:
    """A response's request and the messages its history has before the conversation's items (the
    instructions)."""

    req: ChatRequest
    prefix: List[leap.ChatMessage]


class PromptCounter:
    """The library's count of the prompts of one conversation (``leap.Model.prompt_token_count``: the model's
    chat template and tokenizer, each image or audio part as the positions its layout takes, decoded and laid
    out, not encoded). Each message's wire JSON (its media base64-encoded), which counting hands to the
    library, is made once instead of at every count; the JSON of the messages the last count did not use is
    let go."""

    def __init__(self) -> None:
        self.wire: Dict[int, "tuple[leap.ChatMessage, Dict[str, Any]]"] = {}

    def __call__(self, model: leap.Model, messages: List[leap.ChatMessage]) -> int:
        if not messages:
            return 0
        used: Dict[int, "tuple[leap.ChatMessage, Dict[str, Any]]"] = {}
        for m in messages:
            known = self.wire.get(id(m))
            used[id(m)] = known if known is not None and known[0] is m else (m, m.to_json())
        self.wire = used
        return model.prompt_token_count([used[id(m)][1] for m in messages])


def definitions_key(i: Input) -> Optional[str]:
    """What the tokens of a request's definitions depend on (its instructions, tools and forced schema);
    None when it has none."""
    if not i.req.tools and i.req.json_schema is None:
        return None
    return json.dumps([[[m.role.value, m.text] for m in i.prefix], i.req.tools, i.req.json_schema], sort_keys=True)


def definition_tokens(model: leap.Model, req: ChatRequest, prefix: List[leap.ChatMessage]) -> int:
    """An estimate of the tokens the tool definitions and a forced call's schema add to the instructions
    ``prefix`` (the library's prompt count takes messages only): the template's rendering of the prefix with
    them (the schema written into the first system message, or one of its own, as the library injects it)
    less without them, each tokenized as a prompt is. Exact when the library renders the tools as the client
    wrote them; it normalizes their schemas (keys it does not model, such as ``maxLength``, are left out),
    so the realtime session measures them on its first response that has them (the prompt's size less its
    messages' count) and goes by that measure afterwards."""
    if not req.tools and req.json_schema is None:
        return 0
    # The prefix as the start of a prompt, in the template's plain shape.
    plain = [{"role": m.role.value, "content": m.text} for m in [*prefix, leap.ChatMessage(leap.Role.USER, "")]]
    defined = [dict(m) for m in plain]
    if req.json_schema is not None:
        schema = SCHEMA_PREAMBLE + json.dumps(req.json_schema)  # as the bindings hand it to the library
        at = next((i for i, m in enumerate(defined) if m["role"] == "system"), None)
        if at is None:
            defined.insert(0, {"role": "system", "content": schema})
        else:
            defined[at]["content"] += "\n\n" + schema

    def rendered(messages: List[Dict[str, Any]], tools: Optional[List[Dict[str, Any]]]) -> int:
        text = model.apply_chat_template(messages, tools=tools or None)
        return len(model.tokenize(text, add_special=False, parse_special=True))

    return rendered(defined, req.tools) - rendered(plain, None)
