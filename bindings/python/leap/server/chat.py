"""Chat requests: OpenAI's messages, tools, tool_choice and response_format made into what the library
takes (a history of ``leap.ChatMessage``, the message to answer, functions to register, generation options),
and the job that runs one on the model.

Each request is stateless: the conversation is built from the whole history it carries and answers its
last message. The prompt cache of the model restores the longest prefix some earlier request evaluated, so
turn N of a chat evaluates only what is new.

Tool choice:

* ``none`` (and no tools): the tools are not shown to the model and nothing is parsed as a call.
* ``auto`` (the default with tools): the tools reach the chat template, and calls the model writes in its
  own format (LFM2's Pythonic calls, Hermes ``<tool_call>`` blocks) are parsed out of the stream.
* ``required`` or a named function: the answer is constrained by a JSON schema to one call,
  ``{"name": ..., "arguments": {...}}`` with the arguments of that function's parameters schema, so it
  always parses and matches; it is returned as a tool call.

``response_format`` ``json_object`` / ``json_schema`` constrain the answer with the library's JSON-schema
grammar (``GenerationOptions.json_schema_constraint``): the content always parses and validates.
"""
from __future__ import annotations

import json
import logging
import re
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

import leap

from ..generation import MAX_DRAFT_TOKENS
from . import chat_audio
from .chat_audio import AudioOutput
from .engine import Job, JobControl, Speculation
from .errors import ApiError, bad_request, clip, from_leap_error, quote
from .media import MediaLimits, image_part, split_data_url, wav_part
from .schemas import Fields, Logprobs, Sampling, parse_chat_logprobs, parse_sampling, type_name, wrong_type

log = logging.getLogger("leap.server")
_FUNCTION_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_SCHEMA_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}\Z")
ROLES = ("system", "developer", "user", "assistant", "tool")


@dataclass(frozen=True)
class ModelCaps:
    """What the loaded model can take and do."""

    name: str
    images: bool = False
    audio_input: bool = False
    audio_output: bool = False
    function_call_parser: str = "lfm"


def model_caps(name: str, model: leap.Model) -> ModelCaps:
    arch = model.architecture.lower()
    template = model.chat_template
    parser = "lfm" if arch.startswith("lfm") or "<|tool_call_start|>" in template else (
        "hermes" if "<tool_call>" in template else "lfm")
    return ModelCaps(name, model.supports_images, model.supports_audio_input, model.supports_audio_output, parser)


@dataclass
class ChatRequest:
    model: Optional[str]
    history: List[leap.ChatMessage]
    message: leap.ChatMessage
    sampling: Sampling
    tools: List[Dict[str, Any]] = field(default_factory=list)
    tool_mode: str = "none"  # none, auto, forced
    json_schema: Optional[Dict[str, Any]] = None
    schema_param: Optional[str] = None
    stream: bool = False
    include_usage: bool = False
    logprobs: Logprobs = field(default_factory=Logprobs)
    enable_thinking: Optional[bool] = None
    modalities: List[str] = field(default_factory=lambda: ["text"])
    audio: Optional[Dict[str, Any]] = None
    function_call_parser: Optional[str] = None
    # Models that speak (chat_audio): the speech asked for, the library's audio mode, audio code sampling.
    audio_output: Optional[AudioOutput] = None
    audio_mode: Optional[str] = None
    audio_temperature: Optional[float] = None
    audio_top_k: Optional[int] = None
    # llama-server's ``speculative.n_max``: this request's most drafted tokens a pass (0: none; None: the
    # server's), when the server speculates.
    max_draft_tokens: Optional[int] = None

    def options(self) -> leap.GenerationOptions:
        s = self.sampling
        o = leap.GenerationOptions(temperature=s.temperature, top_p=s.top_p, min_p=s.min_p, top_k=s.top_k,
                                   repetition_penalty=s.repetition_penalty, rng_seed=s.seed,
                                   max_tokens=s.max_tokens, json_schema_constraint=self.json_schema,
                                   function_call_parser=self.function_call_parser,
                                   unparsed_function_calls_as_text=True)
        if self.enable_thinking is not None:
            o.enable_thinking = self.enable_thinking
        o.audio_mode, o.audio_temperature, o.audio_top_k = self.audio_mode, self.audio_temperature, self.audio_top_k
        apply_penalties(o, s)
        if self.logprobs.enabled:
            o.top_logprobs = self.logprobs.top
        return o


_warned: Set[str] = set()


def apply_penalties(options: leap.GenerationOptions, s: Sampling) -> None:
    """presence / frequency penalties, when the bindings' GenerationOptions carry them (else a warning in the
    log, once: the request is still answered, as by servers that ignore them)."""
    for name in ("presence_penalty", "frequency_penalty"):
        value = getattr(s, name)
        if value is None:
            continue
        if hasattr(options, name):
            setattr(options, name, value)
        elif value != 0 and name not in _warned:
            _warned.add(name)
            log.warning("%s is not applied: this libleap's generation options have no %s", name, name)


def remote_urls(body: Dict[str, Any]) -> List[str]:
    """The http(s) image URLs of a request's messages (fetched before parsing when the server allows)."""
    out: List[str] = []
    messages = body.get("messages")
    if not isinstance(messages, list):
        return out
    for m in messages:
        content = m.get("content") if isinstance(m, dict) else None
        if not isinstance(content, list):
            continue
        for part in content:
            if isinstance(part, dict) and part.get("type") == "image_url":
                iu = part.get("image_url")
                url = iu.get("url") if isinstance(iu, dict) else iu
                if isinstance(url, str) and url.startswith(("http://", "https://")):
                    out.append(url)
    return out


def parse_chat_request(body: Dict[str, Any], caps: ModelCaps, limits: MediaLimits, max_tokens_limit: int,
                       fetched: Optional[Dict[str, Tuple[str, bytes]]] = None,
                       default_max_tokens: Optional[int] = None) -> ChatRequest:
    """Check and convert a chat completion request (400 naming the field on any mistake; ``max_tokens`` as
    :func:`parse_sampling` takes it)."""
    f = Fields(body)
    model = f.string("model")
    messages = f.array("messages", required=True)
    assert messages is not None
    if not messages:
        raise bad_request("messages: must contain at least one message", "messages")
    sampling = parse_sampling(f, max_tokens_limit, default_max_tokens)
    if sampling.logit_bias:
        raise bad_request("logit_bias: chat completions cannot apply it: the library's generation options have no "
                          "per-token bias (POST /v1/completions, which samples the logits itself, applies it)",
                          "logit_bias", code="unsupported_value")
    converted = [_message(m, f"messages[{i}]", caps, limits, fetched or {}) for i, m in enumerate(messages)]
    last = converted[-1]
    if last.role == leap.Role.ASSISTANT:
        raise bad_request(f"messages[{len(messages) - 1}]: the last message is the assistant's; this server answers "
                          "the last user, tool or system message (continuing an assistant message is not supported)",
                          f"messages[{len(messages) - 1}].role")
    req = ChatRequest(model, converted[:-1], last, sampling)
    req.stream = f.boolean("stream") or False
    so = f.obj_field("stream_options")
    if so is not None:
        req.include_usage = Fields(so, "stream_options").boolean("include_usage") or False
    req.logprobs = parse_chat_logprobs(f)
    parse_tools(f, req, caps)
    _response_format(f, req)
    _thinking(f, req)
    _modalities(f, req, caps)
    f.boolean("parallel_tool_calls")
    req.max_draft_tokens = f.integer("speculative.n_max", 0, MAX_DRAFT_TOKENS)
    return req


def _message(m: Any, p: str, caps: ModelCaps, limits: MediaLimits,
             fetched: Dict[str, Tuple[str, bytes]]) -> leap.ChatMessage:
    if not isinstance(m, dict):
        raise wrong_type(p, "a message object", m)
    f = Fields(m, p)
    role = f.string("role", required=True, choices=ROLES)
    assert role is not None
    content = m.get("content")
    parts: List[leap.Content] = []
    if content is None:
        if role != "assistant":
            raise ApiError(400, f"{p}.content: missing required field", param=f"{p}.content",
                           code="missing_required_parameter")
    elif isinstance(content, str):
        parts.append(leap.Text(content))
    elif isinstance(content, list):
        for j, part in enumerate(content):
            parts.append(_part(part, f"{p}.content[{j}]", role, caps, limits, fetched))
    else:
        raise wrong_type(f"{p}.content", "a string or an array of content parts", content)
    calls: Optional[List[leap.LeapFunctionCall]] = None
    reasoning = None
    if role == "assistant":
        reasoning = f.string("reasoning_content")
        tool_calls = f.array("tool_calls")
        if tool_calls:
            calls = [_history_call(c, f"{p}.tool_calls[{k}]") for k, c in enumerate(tool_calls)]
        if content is None and not calls:
            raise ApiError(400, f"{p}.content: an assistant message needs content or tool_calls",
                           param=f"{p}.content", code="missing_required_parameter")
    elif role == "tool":
        f.string("tool_call_id")
    f.string("name")
    leap_role = {"developer": "system"}.get(role, role)
    return leap.ChatMessage(leap_role, parts, reasoning_content=reasoning, function_calls=calls)


def _part(part: Any, p: str, role: str, caps: ModelCaps, limits: MediaLimits,
          fetched: Dict[str, Tuple[str, bytes]]) -> leap.Content:
    if not isinstance(part, dict):
        raise wrong_type(p, "a content part object", part)
    f = Fields(part, p)
    kind = f.string("type", required=True)
    if kind == "text":
        text = f.string("text", required=True)
        assert text is not None
        return leap.Text(text)
    if kind in ("image_url", "input_audio") and role != "user":
        raise bad_request(f"{p}: {kind} parts are only accepted in user messages", f"{p}.type",
                          code="unsupported_value")
    if kind == "image_url":
        if not caps.images:
            raise bad_request(f"{p}: the loaded model ({caps.name}) cannot take images: it has no vision projector "
                              "(serve an LFM2-VL model with its mmproj file)", p, code="unsupported_content")
        iu = part.get("image_url")
        if isinstance(iu, str):
            url: Any = iu
        elif isinstance(iu, dict):
            url = iu.get("url")
            Fields(iu, f"{p}.image_url").string("detail")
        else:
            raise wrong_type(f"{p}.image_url", "an object with a url", iu)
        if not isinstance(url, str):
            raise wrong_type(f"{p}.image_url.url", "a string", url)
        param = f"{p}.image_url.url"
        if url.startswith("data:"):
            media_type, data = split_data_url(url, param)
            if not media_type.startswith("image/") and media_type not in ("", "application/octet-stream"):
                raise bad_request(f"the data URL holds {media_type}, not an image", param, code="invalid_image")
        elif url.startswith(("http://", "https://")):
            if url not in fetched:
                raise bad_request("remote media URLs are not fetched by this server (start it with "
                                  "--allow-remote-media); send the image as a data URL", param,
                                  code="remote_media_disabled")
            media_type, data = fetched[url]
        else:
            raise bad_request(f"unsupported image URL scheme in {quote(url)}: send a data:image/...;base64 URL",
                              param, code="invalid_url")
        return image_part(data, limits, param)
    if kind == "input_audio":
        if not caps.audio_input:
            raise bad_request(f"{p}: the loaded model ({caps.name}) cannot take audio: it has no audio encoder "
                              "(serve an LFM2-Audio model with its mmproj file)", p, code="unsupported_content")
        ia = f.obj_field("input_audio", required=True)
        assert ia is not None
        af = Fields(ia, f"{p}.input_audio")
        fmt = af.string("format") or "wav"
        if fmt != "wav":
            raise bad_request(f"{p}.input_audio.format: only \"wav\" audio is accepted, got {quote(fmt)}",
                              f"{p}.input_audio.format", code="unsupported_value")
        data_text = af.string("data", required=True)
        assert data_text is not None
        from .media import decode_base64

        return wav_part(decode_base64(data_text, f"{p}.input_audio.data"), limits, f"{p}.input_audio.data")
    raise bad_request(f"{p}.type: unknown content part type {quote(kind)} (expected text, image_url or input_audio)",
                      f"{p}.type", code="unsupported_value")


def _history_call(c: Any, p: str) -> leap.LeapFunctionCall:
    if not isinstance(c, dict):
        raise wrong_type(p, "a tool call object", c)
    fn = Fields(c, p).obj_field("function", required=True)
    assert fn is not None
    ff = Fields(fn, f"{p}.function")
    name = ff.string("name", required=True)
    assert name is not None
    args = fn.get("arguments")
    if args is None or args == "":
        parsed: Any = {}
    elif isinstance(args, str):
        try:
            parsed = json.loads(args)
        except json.JSONDecodeError as e:
            raise bad_request(f"{p}.function.arguments: not valid JSON ({e})", f"{p}.function.arguments") from None
    else:
        parsed = args
    if not isinstance(parsed, dict):
        raise bad_request(f"{p}.function.arguments: expected a JSON object, got {type_name(parsed)}",
                          f"{p}.function.arguments")
    return leap.LeapFunctionCall(name, parsed)


def parse_tools(f: Fields, req: ChatRequest, caps: ModelCaps) -> None:
    """``tools`` and ``tool_choice`` into ``req`` (see the module's tool choice)."""
    tools = f.array("tools") or []
    names: List[str] = []
    for i, t in enumerate(tools):
        p = f"tools[{i}]"
        if not isinstance(t, dict):
            raise wrong_type(p, "a tool object", t)
        tf = Fields(t, p)
        kind = tf.string("type") or "function"
        if kind != "function":
            raise bad_request(f"{p}.type: only function tools are supported, got {quote(kind)}", f"{p}.type",
                              code="unsupported_value")
        fn = tf.obj_field("function", required=True)
        assert fn is not None
        ff = Fields(fn, f"{p}.function")
        name = ff.string("name", required=True)
        assert name is not None
        if not _FUNCTION_NAME.match(name):
            raise bad_request(f"{p}.function.name: {quote(name)} is not a valid function name here: use letters, "
                              "digits and underscores, not starting with a digit (models write calls as Python)",
                              f"{p}.function.name")
        if name in names:
            raise bad_request(f"{p}.function.name: {quote(name)} is defined twice", f"{p}.function.name")
        names.append(name)
        description = ff.string("description") or ""
        params = ff.obj_field("parameters") or {"type": "object", "properties": {}}
        ff.boolean("strict")
        req.tools.append({"type": "function", "function": {"name": name, "description": description,
                                                           "parameters": params}})
    choice = f.obj.get("tool_choice")
    if choice is None:
        mode = "auto" if req.tools else "none"
        forced: List[str] = []
    elif isinstance(choice, str):
        if choice not in ("none", "auto", "required"):
            raise bad_request(f"tool_choice: {quote(choice)} is not one of 'none', 'auto', 'required' or a function",
                              "tool_choice")
        mode = {"required": "forced"}.get(choice, choice)
        forced = list(names)
    elif isinstance(choice, dict):
        cf = Fields(choice, "tool_choice")
        if cf.string("type") not in (None, "function"):
            raise bad_request(f"tool_choice.type: {quote(choice.get('type'))} is not supported (use 'function')",
                              "tool_choice.type", code="unsupported_value")
        fn = cf.obj_field("function", required=True)
        assert fn is not None
        name = Fields(fn, "tool_choice.function").string("name", required=True)
        if name not in names:
            raise bad_request(f"tool_choice.function.name: {quote(name)} is not one of the tools",
                              "tool_choice.function.name")
        mode, forced = "forced", [str(name)]
    else:
        raise wrong_type("tool_choice", "a string or an object", choice)
    if mode != "none" and not req.tools:
        raise bad_request(f"tool_choice: {quote(choice)} needs tools", "tool_choice")
    req.tool_mode = mode
    if mode == "none":
        req.tools = []
        req.function_call_parser = None
    elif mode == "auto":
        req.function_call_parser = caps.function_call_parser
    else:
        req.function_call_parser = None
        by_name = {t["function"]["name"]: t["function"] for t in req.tools}
        branches = [{"type": "object",
                     "properties": {"name": {"const": n}, "arguments": by_name[n]["parameters"]},
                     "required": ["name", "arguments"]} for n in forced]
        req.json_schema = branches[0] if len(branches) == 1 else {"anyOf": branches}
        req.schema_param = "tools"


def _response_format(f: Fields, req: ChatRequest) -> None:
    rf = f.obj_field("response_format")
    if rf is None:
        return
    rff = Fields(rf, "response_format")
    kind = rff.string("type", required=True, choices=("text", "json_object", "json_schema"))
    if kind == "text":
        return
    if req.tool_mode == "forced":
        raise bad_request("response_format: a JSON response format cannot be combined with a required tool call",
                          "response_format")
    if kind == "json_object":
        # additionalProperties: the grammar allows only declared properties unless told otherwise.
        req.json_schema = {"type": "object", "additionalProperties": True}
        req.schema_param = "response_format"
        return
    js = rff.obj_field("json_schema", required=True)
    assert js is not None
    jf = Fields(js, "response_format.json_schema")
    name = jf.string("name")
    if name is not None and not _SCHEMA_NAME.match(name):
        raise bad_request("response_format.json_schema.name: use 1-64 letters, digits, underscores or dashes",
                          "response_format.json_schema.name")
    jf.string("description")
    jf.boolean("strict")
    schema = js.get("schema")
    if schema is None:
        schema = {"type": "object", "additionalProperties": True}
    elif not isinstance(schema, (dict, bool)):
        raise wrong_type("response_format.json_schema.schema", "a JSON Schema object", schema)
    req.json_schema = schema if isinstance(schema, dict) else {} if schema else {"not": {}}
    req.schema_param = "response_format.json_schema.schema"


def _thinking(f: Fields, req: ChatRequest) -> None:
    kwargs = f.obj_field("chat_template_kwargs")
    if kwargs is not None:
        for key in kwargs:
            if key != "enable_thinking":
                raise bad_request(f"chat_template_kwargs.{clip(key)}: only enable_thinking is supported",
                                  f"chat_template_kwargs.{clip(key)}", code="unsupported_value")
        req.enable_thinking = Fields(kwargs, "chat_template_kwargs").boolean("enable_thinking")
    effort = f.string("reasoning_effort", choices=("none", "minimal", "low", "medium", "high"))
    if effort is not None and req.enable_thinking is None:
        req.enable_thinking = effort not in ("none", "minimal")


def _modalities(f: Fields, req: ChatRequest, caps: ModelCaps) -> None:
    mods = f.array("modalities")
    if mods is not None:
        for i, m in enumerate(mods):
            if m not in ("text", "audio"):
                raise bad_request(f"modalities[{i}]: {quote(m)} is not 'text' or 'audio'", f"modalities[{i}]")
        req.modalities = [str(m) for m in mods]
    req.audio = f.obj_field("audio")
    chat_audio.configure(f, req, caps)


def register_tools(conv: leap.Conversation, tools: List[Dict[str, Any]], prefix: str = "") -> None:
    """Registers ``tools`` (the chat shape) with the conversation; the library checks each definition (its
    parameters schema): a 400 naming the tool that fails."""
    for i, tool in enumerate(tools):
        try:
            conv.register_function(tool)
        except leap.LeapError as e:
            raise from_leap_error(e, f"{prefix}tools[{i}]") from None


def check_tools(model: leap.Model, tools: List[Dict[str, Any]], prefix: str = "") -> None:
    """:func:`register_tools` on a conversation of its own: the definitions checked before they are kept."""
    with model.create_conversation() as conv:
        register_tools(conv, tools, prefix)


def chat_job(model: leap.Model, req: ChatRequest, speculation: Speculation = Speculation()) -> Job:
    """The job answering ``req``: a conversation from its history, its tools, one generation (speculating as
    the server does), events out."""
    options = req.options()
    speculation.apply(options, req.max_draft_tokens)

    def run(control: JobControl) -> None:
        if control.stopped:
            return
        try:
            conv = model.create_conversation_from_history(req.history)
        except leap.LeapError as e:
            raise from_leap_error(e, "messages") from None
        # stop() arrives on the event loop's thread while this one may be closing the conversation: the
        # lock keeps it from reaching a freed handle.
        guard = threading.Lock()
        is_open = [True]

        def stop() -> None:
            with guard:
                if is_open[0]:
                    conv.stop()

        try:
            register_tools(conv, req.tools)
            control.on_stop(stop)
            try:
                stream = conv.generate_response(req.message, options)
            except leap.LeapError as e:
                # "json_schema_constraint: ..." or "options->json_schema_constraint: ..." (the options' JSON)
                about_schema = str(e).split(":", 1)[0].endswith("json_schema_constraint")
                param = req.schema_param if about_schema else None
                raise from_leap_error(e, param, at_start=True) from None
            with stream:
                control.started()
                after_stop = 0
                for event in stream:
                    control.emit(event)
                    # Once stopped, the library ends the generation after the current token and sends its
                    # Complete (with the figures); closing the stream is the fallback.
                    if control.stopped:
                        after_stop += 1
                        if after_stop > 64:
                            break
        finally:
            with guard:
                is_open[0] = False
            conv.close()

    return run


ChatJobFactory = Callable[[leap.Model, ChatRequest], Job]
