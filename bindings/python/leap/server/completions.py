"""Text completions (``POST /v1/completions``, OpenAI's legacy endpoint): the prompt text continued as it is,
without a chat template.

A completion runs on a low-level context of its own (``leap.Context`` + ``leap.Sampler``: the prompt, then
one token at a time), sized to the prompt plus ``max_tokens``; unlike chat it neither joins the batched
steps of conversations nor uses the prompt cache. Sampling parameters left out take the sampler's
llama.cpp defaults; ``max_tokens`` defaults to 16, as OpenAI's does.
"""
from __future__ import annotations

import codecs
import secrets
from dataclasses import dataclass
from typing import Any, AsyncIterator, Dict, List, Optional

from starlette.requests import Request

import leap

from .engine import Job, JobControl, JobHandle
from .errors import ApiError, bad_request, from_leap_error
from .schemas import Fields, Sampling, parse_sampling, wrong_type
from .sse import DONE, event
from .turn import StopMatcher

DEFAULT_MAX_TOKENS = 16


@dataclass
class CompletionRequest:
    prompt: Optional[str]
    tokens: Optional[List[int]]
    sampling: Sampling
    stream: bool = False
    include_usage: bool = False
    echo: bool = False


@dataclass(frozen=True)
class TextPiece:
    text: str


@dataclass(frozen=True)
class CompletionEnd:
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str


def parse_completion_request(body: Dict[str, Any], max_tokens_limit: int) -> CompletionRequest:
    f = Fields(body)
    f.string("model")
    prompt = body.get("prompt")
    text: Optional[str] = None
    tokens: Optional[List[int]] = None
    if prompt is None:
        raise ApiError(400, "prompt: missing required field", param="prompt", code="missing_required_parameter")
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], (str, list)):
        prompt = prompt[0]
    if isinstance(prompt, str):
        text = prompt
    elif isinstance(prompt, list) and prompt and all(isinstance(t, int) and not isinstance(t, bool) for t in prompt):
        tokens = [int(t) for t in prompt]
    elif isinstance(prompt, list):
        raise bad_request("prompt: one prompt per request (a string or an array of token ids)", "prompt",
                          code="unsupported_value")
    else:
        raise wrong_type("prompt", "a string or an array of token ids", prompt)
    sampling = parse_sampling(f, max_tokens_limit)
    if sampling.max_tokens is None:
        sampling.max_tokens = min(DEFAULT_MAX_TOKENS, max_tokens_limit)
    req = CompletionRequest(text, tokens, sampling)
    req.stream = f.boolean("stream") or False
    so = f.obj_field("stream_options")
    if so is not None:
        req.include_usage = Fields(so, "stream_options").boolean("include_usage") or False
    req.echo = f.boolean("echo") or False
    best_of = f.integer("best_of", 1)
    if best_of not in (None, 1):
        raise bad_request("best_of: this server generates one completion per request", "best_of",
                          code="unsupported_value")
    logprobs = f.integer("logprobs", 0, 5)
    if logprobs:
        raise bad_request("logprobs: log probabilities are given by /v1/chat/completions, not /v1/completions", "logprobs",
                          code="unsupported_value")
    if f.string("suffix"):
        raise bad_request("suffix: insertion (a suffix) is not supported", "suffix", code="unsupported_value")
    return req


def completion_job(model: leap.Model, req: CompletionRequest) -> Job:
    s = req.sampling

    def run(control: JobControl) -> None:
        tokenizer = model.tokenizer
        tokens = req.tokens if req.tokens is not None else model.tokenize(req.prompt or "", add_special=True)
        vocab = tokenizer.vocab_size
        if not tokens:
            raise bad_request("prompt: the prompt is empty", "prompt")
        for i, t in enumerate(tokens):
            if not 0 <= t < vocab:
                raise bad_request(f"prompt[{i}]: token id {t} is outside the vocabulary (0..{vocab - 1})", "prompt")
        n_ctx = model.context_size
        if len(tokens) >= n_ctx:
            raise ApiError(400, f"The prompt exceeds the max context length of {n_ctx} tokens (it has {len(tokens)} "
                           "tokens).", param="prompt", code="context_length_exceeded")
        assert s.max_tokens is not None
        budget = min(s.max_tokens, n_ctx - len(tokens))
        sampler_args: Dict[str, Any] = {}
        for name, value in (("temperature", s.temperature), ("top_k", s.top_k), ("top_p", s.top_p),
                            ("min_p", s.min_p), ("repetition_penalty", s.repetition_penalty),
                            ("frequency_penalty", s.frequency_penalty), ("presence_penalty", s.presence_penalty)):
            if value is not None:
                sampler_args[name] = value
        sampler_args["seed"] = (s.seed & 0xFFFFFFFFFFFFFFFF) if s.seed is not None else secrets.randbits(63)
        try:
            ctx = model.create_context(context_size=len(tokens) + budget)
            sampler = leap.Sampler(**sampler_args)
        except leap.LeapError as e:
            raise from_leap_error(e, "prompt") from None
        with ctx, sampler:
            control.started()
            if req.echo:
                control.emit(TextPiece(req.prompt if req.prompt is not None else tokenizer.detokenize(tokens)))
            ctx.eval(tokens)
            for t in tokens:
                sampler.accept(t)
            decoder = codecs.getincrementaldecoder("utf-8")("replace")
            stops = StopMatcher(s.stop)
            generated = 0
            finish = "length"
            while generated < budget:
                if control.stopped:
                    finish = "stop"
                    break
                token = sampler.sample(ctx.logits())
                sampler.accept(token)
                if tokenizer.is_eog(token):
                    finish = "stop"
                    break
                generated += 1
                text = stops.push(decoder.decode(tokenizer.token_to_piece(token)))
                if text:
                    control.emit(TextPiece(text))
                if stops.matched:
                    finish = "stop"
                    break
                if generated < budget:
                    ctx.eval([token])
            rest = stops.push(decoder.decode(b"", final=True)) + stops.flush()
            if rest:
                control.emit(TextPiece(rest))
            control.emit(CompletionEnd(len(tokens), generated, finish))

    return run


def _usage(end: Optional[CompletionEnd]) -> Dict[str, Any]:
    p, c = (end.prompt_tokens, end.completion_tokens) if end else (0, 0)
    return {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c,
            "prompt_tokens_details": {"cached_tokens": 0}}


async def collect(handle: JobHandle, req: CompletionRequest, rid: str, created: int, name: str) -> Dict[str, Any]:
    pieces: List[str] = []
    end: Optional[CompletionEnd] = None
    async for e in handle.events():
        if isinstance(e, TextPiece):
            pieces.append(e.text)
        elif isinstance(e, CompletionEnd):
            end = e
    return {"id": rid, "object": "text_completion", "created": created, "model": name,
            "choices": [{"index": 0, "text": "".join(pieces), "logprobs": None,
                         "finish_reason": end.finish_reason if end else "stop"}],
            "usage": _usage(end)}


async def stream_events(request: Request, handle: JobHandle, req: CompletionRequest, rid: str, created: int,
                        name: str) -> AsyncIterator[bytes]:
    def chunk(text: str, finish: Optional[str]) -> bytes:
        c: Dict[str, Any] = {"id": rid, "object": "text_completion", "created": created, "model": name,
                             "choices": [{"index": 0, "text": text, "logprobs": None, "finish_reason": finish}]}
        if req.include_usage:
            c["usage"] = None
        return event(c)

    end: Optional[CompletionEnd] = None
    try:
        async for e in handle.events():
            if isinstance(e, TextPiece):
                yield chunk(e.text, None)
            elif isinstance(e, CompletionEnd):
                end = e
    except ApiError as err:
        yield event(err.body())
        yield DONE
        return
    if end is not None:
        request.scope.setdefault("state", {})["leap_usage"] = (end.prompt_tokens, 0, end.completion_tokens)
    yield chunk("", end.finish_reason if end else "stop")
    if req.include_usage:
        yield event({"id": rid, "object": "text_completion", "created": created, "model": name, "choices": [],
                     "usage": _usage(end)})
    yield DONE
