"""One generation's events made into OpenAI's answer: content with stop strings cut, reasoning, tool calls,
the finish reason and usage, both as streamed deltas and as the final message.

With logprobs asked for, each content token's entry (its text, bytes, log-probability and alternatives)
goes out with the content its token made; tokens that made reasoning, a tool call or a stop string have
none, as their text is not content.

Stop strings are matched on the text as it streams: text that could be the start of a stop string is held
back until it can no longer match, so a matched stop string never reaches the client; a match asks the
generation to stop (the finish reason is then ``stop``).
"""
from __future__ import annotations

import json
import secrets
from typing import Any, AsyncIterator, Callable, Dict, List, Optional, Sequence, Tuple

import leap


class StopMatcher:
    """Cuts a text stream at the first occurrence of any of ``stops``."""

    def __init__(self, stops: Sequence[str]) -> None:
        self.stops = [s for s in stops if s]
        self.pending = ""
        self.matched = False

    def push(self, text: str) -> str:
        """The text that can be sent now (none after a match)."""
        if self.matched:
            return ""
        if not self.stops:
            return text
        buf = self.pending + text
        first = min((i for i in (buf.find(s) for s in self.stops) if i >= 0), default=-1)
        if first >= 0:
            self.matched = True
            self.pending = ""
            return buf[:first]
        hold = 0
        for s in self.stops:
            for k in range(min(len(s) - 1, len(buf)), hold, -1):
                if buf.endswith(s[:k]):
                    hold = k
                    break
        self.pending = buf[len(buf) - hold:] if hold else ""
        return buf[:len(buf) - hold]

    def flush(self) -> str:
        """What was held back, at the end of the stream."""
        out, self.pending = ("" if self.matched else self.pending), ""
        return out


def logprob_entry(t: leap.TokenLogprob) -> Dict[str, Any]:
    # A token may hold part of a UTF-8 character: its text then has U+FFFD, its bytes are exact.
    return {"token": t.bytes.decode("utf-8", "replace"), "logprob": t.logprob, "bytes": list(t.bytes)}


def new_call_id() -> str:
    return "call_" + secrets.token_hex(12)


def usage_of(*stats: Optional[leap.GenerationStats]) -> Dict[str, Any]:
    """OpenAI's ``usage`` of the generations of one request (its ``n`` choices): the prompt counted once
    (the first choice's figures), the completion tokens summed."""
    first = stats[0] if stats else None
    completion = sum(s.completion_tokens for s in stats if s is not None)
    if first is None:
        return {"prompt_tokens": 0, "completion_tokens": completion, "total_tokens": completion,
                "prompt_tokens_details": {"cached_tokens": 0}}
    # The library counts the prompt positions it evaluated apart from those the cache restored; OpenAI's
    # prompt_tokens is the whole prompt, cached_tokens the part of it that was restored.
    prompt = first.prompt_tokens + first.cached_prompt_tokens
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": first.cached_prompt_tokens}}


def timings_of(stats: Optional[leap.GenerationStats]) -> Optional[Dict[str, Any]]:
    """llama-server's ``timings``: positions restored from the cache, evaluated, generated, and rates; with
    speculative decoding that drafted, the tokens drafted and of those accepted (``draft_n``,
    ``draft_n_accepted``)."""
    if stats is None:
        return None
    timings: Dict[str, Any] = {
        "cache_n": stats.cached_prompt_tokens, "prompt_n": stats.prompt_tokens,
        "predicted_n": stats.completion_tokens, "prompt_per_second": stats.prompt_tokens_per_second,
        "predicted_per_second": stats.tokens_per_second, "time_to_first_token_ms": stats.time_to_first_token * 1000}
    if stats.drafted_tokens > 0:
        timings["draft_n"] = stats.drafted_tokens
        timings["draft_n_accepted"] = stats.accepted_draft_tokens
    return timings


_FINISH = {leap.GenerationFinishReason.STOP: "stop", leap.GenerationFinishReason.MAX_TOKENS: "length",
           leap.GenerationFinishReason.EXCEED_CONTEXT: "length", leap.GenerationFinishReason.INTERRUPTED: "stop",
           leap.GenerationFinishReason.CONSTRAINT: "stop"}


class ChatTurn:
    """Feeds on a generation's events; gives the deltas to stream and, at the end, the message.

    ``forced_call``: the answer is a JSON tool call (tool_choice required / named), returned as a call
    instead of content. ``stop_generation`` is called when a stop string matched."""

    def __init__(self, stops: Sequence[str], forced_call: bool, stop_generation: Callable[[], None]) -> None:
        self.matcher = StopMatcher(stops)
        self.forced_call = forced_call
        self.stop_generation = stop_generation
        self.content: List[str] = []
        self.reasoning: List[str] = []
        self.tool_calls: List[Dict[str, Any]] = []
        self.forced_text: List[str] = []
        self.stats: Optional[leap.GenerationStats] = None
        self.finish: Optional[leap.GenerationFinishReason] = None
        self.audio_samples: List[leap.AudioSample] = []
        #: Set to collect logprobs: the entries of the content so far, those not streamed yet, and those of
        #: tokens whose text has not become content yet.
        self.logprobs = False
        self.logprob_entries: List[Dict[str, Any]] = []
        self.unsent_logprobs: List[Dict[str, Any]] = []
        self.pending_logprobs: List[Dict[str, Any]] = []

    async def consume(self, events: AsyncIterator[Any]) -> None:
        """Feeds every event of a generation (for an answer sent whole: the turn then holds it)."""
        async for e in events:
            self.feed(e)

    def _content(self, text: str) -> Dict[str, Any]:
        self.content.append(text)
        self.logprob_entries += self.pending_logprobs
        self.unsent_logprobs += self.pending_logprobs
        self.pending_logprobs = []
        return {"content": text}

    def take_logprobs(self) -> Optional[Dict[str, Any]]:
        """A streamed chunk's ``logprobs``: the entries of the content sent since the last call."""
        if not self.logprobs:
            return None
        out, self.unsent_logprobs = self.unsent_logprobs, []
        return {"content": out, "refusal": None}

    def message_logprobs(self) -> Optional[Dict[str, Any]]:
        """The final choice's ``logprobs``: every content token's entry."""
        return {"content": self.logprob_entries, "refusal": None} if self.logprobs else None

    def feed(self, event: Any) -> List[Dict[str, Any]]:
        """The deltas (``choices[0].delta`` objects) this event gives."""
        if isinstance(event, leap.Token):
            if self.logprobs:
                entry = logprob_entry(event.token)
                entry["top_logprobs"] = [logprob_entry(t) for t in event.top_logprobs]
                self.pending_logprobs.append(entry)
            return []
        if isinstance(event, leap.Chunk):
            if self.forced_call:
                self.forced_text.append(event.text)
                return []
            text = self.matcher.push(event.text)
            if self.matcher.matched:
                self.stop_generation()
                self.pending_logprobs = []
            if text:
                return [self._content(text)]
            return []
        if isinstance(event, (leap.ReasoningChunk, leap.FunctionCalls)):
            self.pending_logprobs = []  # the tokens made reasoning or a call, not content
        if isinstance(event, leap.ReasoningChunk):
            if event.reasoning:
                self.reasoning.append(event.reasoning)
                return [{"reasoning_content": event.reasoning}]
            return []
        if isinstance(event, leap.FunctionCalls):
            return [{"tool_calls": [self._add_call(c.name, c.arguments)]} for c in event.function_calls]
        if isinstance(event, leap.AudioSample):
            self.audio_samples.append(event)
            return []
        if isinstance(event, leap.Complete):
            self.stats = event.stats
            self.finish = event.finish_reason
            if event.finish_reason == leap.GenerationFinishReason.ERROR:
                raise leap.GenerationError("the generation failed")
            out: List[Dict[str, Any]] = []
            rest = self.matcher.flush()
            if rest:
                out.append(self._content(rest))
            if self.forced_call:
                forced = self._forced_call()
                if forced is not None:
                    out.append({"tool_calls": [forced]})
                elif self.forced_text:
                    text = "".join(self.forced_text)
                    self.content.append(text)
                    out.append({"content": text})
            return out
        return []

    def _add_call(self, name: str, arguments: Dict[str, Any]) -> Dict[str, Any]:
        index = len(self.tool_calls)
        call = {"id": new_call_id(), "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)}}
        self.tool_calls.append(call)
        return {"index": index, **call}

    def _forced_call(self) -> Optional[Dict[str, Any]]:
        """The call in a constrained answer; None when it was cut short (max_tokens)."""
        try:
            value = json.loads("".join(self.forced_text))
        except json.JSONDecodeError:
            return None
        if not isinstance(value, dict) or not isinstance(value.get("name"), str):
            return None
        args = value.get("arguments")
        return self._add_call(value["name"], args if isinstance(args, dict) else {})

    @property
    def finish_reason(self) -> str:
        if self.tool_calls:
            return "tool_calls"
        if self.matcher.matched:
            return "stop"
        return _FINISH.get(self.finish, "stop") if self.finish is not None else "stop"

    def message(self) -> Dict[str, Any]:
        msg: Dict[str, Any] = {"role": "assistant", "content": "".join(self.content) if (self.content or not self.tool_calls) else None}
        if self.reasoning:
            msg["reasoning_content"] = "".join(self.reasoning)
        if self.tool_calls:
            msg["tool_calls"] = self.tool_calls
        msg["refusal"] = None
        return msg


def split_usage(stats: Optional[leap.GenerationStats]) -> Tuple[Dict[str, Any], Optional[Dict[str, Any]]]:
    return usage_of(stats), timings_of(stats)
