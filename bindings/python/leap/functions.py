"""Function calling: function definitions (tool JSON for chat templates) and the function-call parsers.

Define what the model may call with :class:`LeapFunction`, :class:`LeapFunctionParameter` and the parameter
types (:class:`StringType`, :class:`NumberType`, :class:`IntegerType`, :class:`BooleanType`,
:class:`ArrayType`, :class:`ObjectType`, :class:`NullType`). ``LeapFunction.to_json()`` gives the OpenAI
tool object the library hands to chat templates, identical to the Swift core's::

    {"type": "function", "function": {"name": ..., "description": ...,
     "parameters": {"type": "object", "properties": {...}, "required": [...]}}}

Parse what a model wrote with :class:`LFMFunctionCallParser` (``<|tool_call_start|>[f(a=1)]<|tool_call_end|>``,
the default for LFM2 / LFM2.5) or :class:`HermesFunctionCallParser` (``<tool_call>{...}</tool_call>``,
Qwen / Hermes); malformed calls raise :class:`leap.FunctionCallParsingError`.
"""
from __future__ import annotations

import ctypes
import json
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

from . import _capi as C
from ._marshal import check, take_string, utf8
from .errors import InvalidArgumentError
from .messages import LeapFunctionCall

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _compact(value: Any) -> str:
    """The library's compact JSON (same bytes as the Swift writer for these values)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


# ---- Parameter types ----------------------------------------------------------------------------------


class ParameterType:
    """A JSON-Schema type of a parameter. ``to_json(description)`` gives its schema, keys in the library's
    order: type, enum, description, then items (array) or properties + required (object)."""

    type_name: str = ""

    def _head(self, description: Optional[str], enum: Optional[List[Any]] = None) -> Dict[str, Any]:
        d: Dict[str, Any] = {"type": self.type_name}
        if enum is not None:
            d["enum"] = enum
        own = getattr(self, "description", None)
        if description is not None or own is not None:
            d["description"] = description if description is not None else own
        return d

    def to_json(self, description: Optional[str] = None) -> Dict[str, Any]:
        """The schema; ``description`` replaces the type's own."""
        raise NotImplementedError


@dataclass(frozen=True)
class StringType(ParameterType):
    enum_values: Optional[Sequence[str]] = None
    description: Optional[str] = None
    type_name = "string"

    def to_json(self, description: Optional[str] = None) -> Dict[str, Any]:
        enum = None if self.enum_values is None else [str(v) for v in self.enum_values]
        return self._head(description, enum)


@dataclass(frozen=True)
class NumberType(ParameterType):
    enum_values: Optional[Sequence[float]] = None
    description: Optional[str] = None
    type_name = "number"

    def to_json(self, description: Optional[str] = None) -> Dict[str, Any]:
        # Numbers are doubles in the library: 1 is written 1.0.
        enum = None if self.enum_values is None else [float(v) for v in self.enum_values]
        return self._head(description, enum)


@dataclass(frozen=True)
class IntegerType(ParameterType):
    enum_values: Optional[Sequence[int]] = None
    description: Optional[str] = None
    type_name = "integer"

    def to_json(self, description: Optional[str] = None) -> Dict[str, Any]:
        enum = None if self.enum_values is None else [int(v) for v in self.enum_values]
        return self._head(description, enum)


@dataclass(frozen=True)
class BooleanType(ParameterType):
    description: Optional[str] = None
    type_name = "boolean"

    def to_json(self, description: Optional[str] = None) -> Dict[str, Any]:
        return self._head(description)


@dataclass(frozen=True)
class ArrayType(ParameterType):
    item_type: ParameterType
    description: Optional[str] = None
    type_name = "array"

    def to_json(self, description: Optional[str] = None) -> Dict[str, Any]:
        d = self._head(description)
        d["items"] = self.item_type.to_json()
        return d


@dataclass(frozen=True)
class ObjectType(ParameterType):
    properties: Mapping[str, ParameterType] = field(default_factory=dict)
    required: Sequence[str] = ()
    description: Optional[str] = None
    type_name = "object"

    def __post_init__(self) -> None:
        missing = [r for r in self.required if r not in self.properties]
        if missing:
            raise InvalidArgumentError(f"required property {missing[0]!r} is not among the properties")

    def to_json(self, description: Optional[str] = None) -> Dict[str, Any]:
        d = self._head(description)
        d["properties"] = {name: t.to_json() for name, t in self.properties.items()}
        d["required"] = list(self.required)  # always present
        return d


@dataclass(frozen=True)
class NullType(ParameterType):
    type_name = "null"

    def to_json(self, description: Optional[str] = None) -> Dict[str, Any]:
        return {"type": "null"}


# ---- Functions ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LeapFunctionParameter:
    """One named argument. ``description`` replaces the type's description in the schema (an empty one
    keeps the type's); optional parameters are left out of ``required``."""

    name: str
    type: ParameterType
    description: str = ""
    optional: bool = False

    def to_json(self) -> Dict[str, Any]:
        return self.type.to_json(self.description or None)


@dataclass(frozen=True)
class LeapFunction:
    """A function the model may call. The name must be identifier-like (letters, digits, underscores, not
    starting with a digit), as the models write calls in Python syntax."""

    name: str
    description: str
    parameters: Sequence[LeapFunctionParameter] = ()

    def __post_init__(self) -> None:
        if not _IDENTIFIER.match(self.name):
            raise InvalidArgumentError(
                f"function name {self.name!r} is not valid: use letters, digits and underscores, not starting with a digit")
        seen = set()
        for p in self.parameters:
            if not p.name:
                raise InvalidArgumentError(f"function {self.name}: a parameter has an empty name")
            if p.name in seen:
                raise InvalidArgumentError(f"function {self.name}: parameter {p.name!r} is defined twice")
            seen.add(p.name)

    def parameters_schema(self) -> Dict[str, Any]:
        return {
            "type": "object",
            "properties": {p.name: p.to_json() for p in self.parameters},
            "required": [p.name for p in self.parameters if not p.optional],
        }

    def to_json(self) -> Dict[str, Any]:
        """The OpenAI tool object: ``{"type": "function", "function": {...}}``."""
        return {"type": "function",
                "function": {"name": self.name, "description": self.description, "parameters": self.parameters_schema()}}

    def to_json_string(self) -> str:
        """``to_json()`` as the library's compact JSON text (byte-identical to the Swift core's)."""
        return _compact(self.to_json())


# ---- Parsers ------------------------------------------------------------------------------------------


def _call_json(c: Union[LeapFunctionCall, Mapping[str, Any]]) -> Dict[str, Any]:
    if isinstance(c, LeapFunctionCall):
        return {"name": c.name, "arguments": dict(c.arguments)}
    return {"name": c["name"], "arguments": dict(c.get("arguments") or {})}


class FunctionCallParser:
    """A function-call format: ``parse`` reads calls from model text, ``dump`` writes them back."""

    _kind = C.LEAP_FUNCTION_CALL_PARSER_NONE
    start_marker = ""
    end_marker = ""

    def parse(self, text: str) -> List[LeapFunctionCall]:
        """The calls in ``text``, read as a conversation reads a response: every marker-delimited block
        outside the ``<think>`` reasoning (a call written in the reasoning is not a call), or, when the text
        has no start marker, what follows the reasoning as one body. Calls are repaired where only one
        reading is possible (a set read as a list, unescaped quotes inside a string, a bad call left out
        from among good ones, a Hermes block from an LFM model), each repair logged as a warning. The text
        may hold NUL characters. Raises :class:`leap.FunctionCallParsingError` naming the offset and
        quoting the text."""
        out = ctypes.c_void_p()
        data = utf8(text) or b""
        check(C.leap_function_calls_parse_n(self._kind, data, len(data), ctypes.byref(out)))
        return [LeapFunctionCall(c["name"], c["arguments"]) for c in json.loads(take_string(out.value) or "[]")]

    def dump(self, calls: Sequence[Union[LeapFunctionCall, Mapping[str, Any]]]) -> str:
        """The calls in the model's format, markers included ("" for no calls)."""
        out = ctypes.c_void_p()
        check(C.leap_function_calls_dump(self._kind, utf8(_compact([_call_json(c) for c in calls])), ctypes.byref(out)))
        return take_string(out.value) or ""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other)

    def __hash__(self) -> int:
        return hash(type(self))


class LFMFunctionCallParser(FunctionCallParser):
    """LFM2 / LFM2.5: ``<|tool_call_start|>[get_weather(city="Paris"), now()]<|tool_call_end|>`` (Pythonic
    keyword calls; the JSON variant ``[{"name": ..., "arguments": {...}}]`` is accepted too). ``dump``
    sorts keyword arguments and escapes strings so that ``parse(dump(calls))`` gives the calls back."""

    _kind = C.LEAP_FUNCTION_CALL_PARSER_LFM
    start_marker = "<|tool_call_start|>"
    end_marker = "<|tool_call_end|>"


class HermesFunctionCallParser(FunctionCallParser):
    """Hermes / Qwen: ``<tool_call>{"name": "f", "arguments": {...}}</tool_call>``, one call per block."""

    _kind = C.LEAP_FUNCTION_CALL_PARSER_HERMES
    start_marker = "<tool_call>"
    end_marker = "</tool_call>"


def parser_c_value(parser: Union[None, str, FunctionCallParser]) -> int:
    """The C ``leap_function_call_parser`` value for a ``function_call_parser`` option: None (no parsing),
    "lfm", "hermes", or a parser instance."""
    if parser is None:
        return C.LEAP_FUNCTION_CALL_PARSER_NONE
    if isinstance(parser, FunctionCallParser) and parser._kind != C.LEAP_FUNCTION_CALL_PARSER_NONE:
        return parser._kind
    if isinstance(parser, str) and parser.lower() in ("lfm", "hermes"):
        return C.LEAP_FUNCTION_CALL_PARSER_LFM if parser.lower() == "lfm" else C.LEAP_FUNCTION_CALL_PARSER_HERMES
    raise InvalidArgumentError(f"function_call_parser must be None, 'lfm', 'hermes' or a parser instance, not {parser!r}")
