"""Request bodies checked field by field, so that every mistake is a 400 naming the field (``param``) and
saying what was expected; FastAPI's own validation (422) is never reached.

Unknown fields are ignored, as llama-server does (clients send ``user``, ``metadata``, ``store``...); the
known ones are checked for type and range. Parameters of OpenAI's API the server cannot honour are refused
(``n`` above :data:`MAX_CHOICES`, ``logit_bias`` on chat) rather than silently dropped.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field, replace
from typing import Any, Dict, List, Optional, Sequence, Union

from .errors import ApiError, bad_request, clip, quote

MAX_STOP_STRINGS = 16
#: ``n``: choices of one request; each is a generation of its own (a slot, or a place in the queue).
MAX_CHOICES = 8
#: ``logit_bias``: OpenAI's limits (300 tokens, biases -100..100).
MAX_LOGIT_BIAS = 300
#: The largest value of the library's 32-bit integer options (top_k, audio_top_k): larger ones would wrap.
INT32_MAX = (1 << 31) - 1
# A \u escape of a UTF-16 surrogate: the way one gets into a JSON text decoded strictly.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


class _NotJson(ValueError):
    """A JSON text Python would read that is not JSON (NaN, Infinity, numbers out of range)."""


def _constant(name: str) -> Any:
    raise _NotJson(f"{name} is not a JSON number")


def _float(text: str) -> float:
    f = float(text)
    if not math.isfinite(f):
        raise _NotJson(f"the number {clip(text)} is out of range")
    return f


def parse_json_object(raw: Union[bytes, str], what: str = "the request body") -> Dict[str, Any]:
    """``raw`` (a request body, a WebSocket event) as a JSON object; otherwise an ApiError 400 saying why:
    not JSON (strictly: no NaN or Infinity, numbers within range), nested too deep, not an object, or a string
    holding a lone UTF-16 surrogate (valid JSON syntax, but not text: it cannot be encoded as UTF-8)."""
    if not raw.strip():
        raise ApiError(400, f"{what} is empty: send a JSON object", code="invalid_json")
    try:
        # Decoded strictly: json.loads would let the UTF-8 encoding of a surrogate (ED A0 80) through.
        text = raw.decode(json.detect_encoding(raw)) if isinstance(raw, bytes) else raw
        body = json.loads(text, parse_constant=_constant, parse_float=_float)
    except (UnicodeDecodeError, json.JSONDecodeError, _NotJson) as e:
        raise ApiError(400, f"{what} is not valid JSON: {e}", code="invalid_json") from None
    except RecursionError:
        raise ApiError(400, f"{what} nests too deeply", code="invalid_json") from None
    except ValueError:  # an integer longer than Python converts (4300 digits by default)
        raise ApiError(400, f"{what} is not valid JSON: an integer has too many digits to read",
                       code="invalid_json") from None
    if not isinstance(body, dict):
        raise ApiError(400, f"{what} must be a JSON object, not {type_name(body)}", code="invalid_json")
    if _SURROGATE_ESCAPE.search(text):
        where = _lone_surrogate(body)
        if where is not None:
            param, in_key = where
            place = f"a key of {param or what}" if in_key else param
            raise ApiError(400, f"{place}: the string holds a lone UTF-16 surrogate (a \\ud800-\\udfff escape not in "
                           "a pair), which is not text", param=param or None, code="invalid_value")
    return body


def parse_json_body(raw: bytes) -> Dict[str, Any]:
    """The request body as a JSON object (400 otherwise)."""
    return parse_json_object(raw)


def _lone_surrogate(body: Any) -> Optional["tuple[str, bool]"]:
    """(the path of a string holding a lone surrogate, whether it is a key of the object there), or None."""
    stack: List["tuple[Any, str]"] = [(body, "")]
    while stack:
        value, path = stack.pop()
        if isinstance(value, str):
            if _SURROGATE.search(value):
                return path, False
        elif isinstance(value, dict):
            for k, v in value.items():
                if _SURROGATE.search(k):
                    return path, True
                stack.append((v, f"{path}.{clip(k)}" if path else clip(k)))
        elif isinstance(value, list):
            stack.extend((v, f"{path}[{i}]") for i, v in enumerate(value))
    return None


def type_name(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, int):
        return "an integer"
    if isinstance(v, float):
        return "a number"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, list):
        return "an array"
    if isinstance(v, dict):
        return "an object"
    return type(v).__name__


def wrong_type(param: str, expected: str, value: Any) -> ApiError:
    return ApiError(400, f"{param}: expected {expected}, got {type_name(value)}", param=param, code="invalid_type")


class Fields:
    """Typed reads of an object's fields; ``prefix`` makes the ``param`` of errors a full path."""

    def __init__(self, obj: Dict[str, Any], prefix: str = "") -> None:
        self.obj = obj
        self.prefix = prefix

    def path(self, key: str) -> str:
        return f"{self.prefix}.{clip(key)}" if self.prefix else clip(key)

    def present(self, key: str) -> bool:
        return self.obj.get(key) is not None

    def number(self, key: str, lo: Optional[float] = None, hi: Optional[float] = None,
               lo_open: bool = False) -> Optional[float]:
        v = self.obj.get(key)
        if v is None:
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise wrong_type(self.path(key), "a number", v)
        try:
            f = float(v)
        except OverflowError:  # an integer beyond a double's range
            raise bad_request(f"{self.path(key)}: {type_name(v)} of {len(str(abs(v)))} digits is out of range",
                              self.path(key)) from None
        if not math.isfinite(f):
            raise bad_request(f"{self.path(key)}: must be a finite number", self.path(key))
        if lo is not None and (f < lo or (lo_open and f == lo)):
            raise bad_request(f"{self.path(key)}: {quote(v)} is below the minimum ({'more than' if lo_open else 'at least'} {lo:g})",
                              self.path(key))
        if hi is not None and f > hi:
            raise bad_request(f"{self.path(key)}: {quote(v)} is above the maximum of {hi:g}", self.path(key))
        return f

    def integer(self, key: str, lo: Optional[int] = None, hi: Optional[int] = None) -> Optional[int]:
        v = self.obj.get(key)
        if v is None:
            return None
        if isinstance(v, float) and v.is_integer():
            v = int(v)
        if isinstance(v, bool) or not isinstance(v, int):
            raise wrong_type(self.path(key), "an integer", v)
        if lo is not None and v < lo:
            raise bad_request(f"{self.path(key)}: {quote(v)} is below the minimum of {lo}", self.path(key))
        if hi is not None and v > hi:
            raise bad_request(f"{self.path(key)}: {quote(v)} is above the maximum of {hi}", self.path(key))
        return v

    def _get(self, key: str, required: bool) -> Any:
        """The field's value; None when absent or null (a 400 when it is required)."""
        v = self.obj.get(key)
        if v is None and required:
            raise ApiError(400, f"{self.path(key)}: missing required field", param=self.path(key),
                           code="missing_required_parameter")
        return v

    def boolean(self, key: str) -> Optional[bool]:
        v = self.obj.get(key)
        if v is None:
            return None
        if not isinstance(v, bool):
            raise wrong_type(self.path(key), "a boolean", v)
        return v

    def string(self, key: str, required: bool = False, choices: Optional[Sequence[str]] = None) -> Optional[str]:
        v = self._get(key, required)
        if v is None:
            return None
        if not isinstance(v, str):
            raise wrong_type(self.path(key), "a string", v)
        if choices is not None and v not in choices:
            raise bad_request(f"{self.path(key)}: {quote(v)} is not one of {', '.join(repr(c) for c in choices)}",
                              self.path(key))
        return v

    def obj_field(self, key: str, required: bool = False) -> Optional[Dict[str, Any]]:
        v = self._get(key, required)
        if v is None:
            return None
        if not isinstance(v, dict):
            raise wrong_type(self.path(key), "an object", v)
        return v

    def array(self, key: str, required: bool = False) -> Optional[List[Any]]:
        v = self._get(key, required)
        if v is None:
            return None
        if not isinstance(v, list):
            raise wrong_type(self.path(key), "an array", v)
        return v


@dataclass
class Sampling:
    """Sampling and length parameters shared by chat and text completions."""

    temperature: Optional[float] = None
    top_p: Optional[float] = None
    top_k: Optional[int] = None
    min_p: Optional[float] = None
    repetition_penalty: Optional[float] = None
    presence_penalty: Optional[float] = None
    frequency_penalty: Optional[float] = None
    seed: Optional[int] = None
    max_tokens: Optional[int] = None
    stop: List[str] = field(default_factory=list)
    n: int = 1
    logit_bias: Dict[int, float] = field(default_factory=dict)

    def for_choice(self, index: int) -> "Sampling":
        """The sampling of choice ``index`` of ``n``: a seeded request's choice i draws with seed + i (so
        each choice is the answer of the same request with n = 1 and that seed)."""
        seed = None if self.seed is None else (self.seed + index) & 0xFFFFFFFFFFFFFFFF
        return replace(self, seed=seed, n=1)


def parse_sampling(f: Fields, max_tokens_limit: int, default_max_tokens: Optional[int] = None) -> Sampling:
    """The sampling fields; ``max_tokens`` at most ``max_tokens_limit``, ``default_max_tokens`` when the request
    names none (None: to the end of the context)."""
    s = Sampling()
    s.temperature = f.number("temperature", 0.0, 2.0)
    s.top_p = f.number("top_p", 0.0, 1.0)
    s.top_k = f.integer("top_k", 0, INT32_MAX)
    s.min_p = f.number("min_p", 0.0, 1.0)
    s.repetition_penalty = f.number("repetition_penalty", 0.0, 10.0, lo_open=True)
    repeat = f.number("repeat_penalty", 0.0, 10.0, lo_open=True)  # llama-server's spelling
    if s.repetition_penalty is None:
        s.repetition_penalty = repeat
    s.presence_penalty = f.number("presence_penalty", -2.0, 2.0)
    s.frequency_penalty = f.number("frequency_penalty", -2.0, 2.0)
    s.seed = f.integer("seed", -(1 << 63), (1 << 64) - 1)
    for key in ("max_completion_tokens", "max_tokens"):
        n = f.integer(key, 1)
        if n is not None:
            if n > max_tokens_limit:
                raise bad_request(f"{key}: {n} is more than this server allows ({max_tokens_limit})", key)
            if s.max_tokens is None:
                s.max_tokens = n
    if s.max_tokens is None:
        s.max_tokens = default_max_tokens
    s.stop = parse_stop(f)
    s.n = f.integer("n", 1, MAX_CHOICES) or 1
    s.logit_bias = parse_logit_bias(f)
    return s


def parse_logit_bias(f: Fields) -> Dict[int, float]:
    """``logit_bias``: token ids (as strings, JSON object keys) to biases -100..100 added to their logits;
    ids are checked against the vocabulary where the model is known."""
    bias = f.obj_field("logit_bias")
    if bias is None:
        return {}
    if len(bias) > MAX_LOGIT_BIAS:
        raise bad_request(f"logit_bias: at most {MAX_LOGIT_BIAS} tokens, got {len(bias)}", "logit_bias")
    out: Dict[int, float] = {}
    for key in bias:
        if not (isinstance(key, str) and key.isdigit() and key.isascii() and len(key) <= 10):
            raise bad_request(f"logit_bias: the key {quote(key)} is not a token id (a decimal integer string)",
                              "logit_bias")
        value = Fields(bias, "logit_bias").number(key, -100.0, 100.0)
        if value is None:
            raise wrong_type(f"logit_bias.{key}", "a number", None)
        out[int(key)] = value
    return out


def parse_stop(f: Fields) -> List[str]:
    v = f.obj.get("stop")
    if v is None:
        return []
    items: List[Any] = [v] if isinstance(v, str) else v if isinstance(v, list) else None  # type: ignore[assignment]
    if items is None:
        raise wrong_type("stop", "a string or an array of strings", v)
    if len(items) > MAX_STOP_STRINGS:
        raise bad_request(f"stop: at most {MAX_STOP_STRINGS} strings, got {len(items)}", "stop")
    out: List[str] = []
    for i, s in enumerate(items):
        if not isinstance(s, str):
            raise wrong_type(f"stop[{i}]", "a string", s)
        if s:
            out.append(s)
    return out


@dataclass
class Logprobs:
    """``logprobs`` / ``top_logprobs`` as asked (validated; see the server README for what is returned)."""

    enabled: bool = False
    top: int = 0


def parse_chat_logprobs(f: Fields) -> Logprobs:
    enabled = f.boolean("logprobs") or False
    top = f.integer("top_logprobs", 0, 20)
    if top is not None and not enabled:
        raise bad_request("top_logprobs: requires logprobs to be true", "top_logprobs")
    return Logprobs(enabled, top or 0)


def parse_model(f: Fields) -> Optional[str]:
    return f.string("model")


Json = Union[None, bool, int, float, str, List[Any], Dict[str, Any]]
