"""Text completions (``POST /v1/completions``, OpenAI's legacy endpoint): the prompt text continued as it is,
without a chat template.

A completion runs on a low-level context of its own (``leap.Context`` + ``leap.Sampler``: the prompt, then
one token at a time), sized to the prompt plus ``max_tokens``. Its one-token steps and verification passes
share the model's decode steps with the other completions and the chat turns generating at the same moment
(contexts of one model decoding on several threads go through the weights together), each keeping the
logits it gets alone; unlike chat it does not use the prompt cache. Sampling parameters left out take the
sampler's llama.cpp defaults; ``max_tokens`` defaults to 16, as OpenAI's does.

When the server speculates (``--spec-type``, ``-md``; a request's ``speculative.n_max`` as chat's), a
``leap.Speculator`` guesses the tokens that follow: a pass evaluates the last token and the guesses keeping
every row's logits (``leap.Context.verify``: each row's are a one-token step's), and the rows are sampled in order (``logit_bias`` added to each, the sampler accepting
each token sampled) while the token sampled is the guess; the first that differs ends the pass and the
other guesses are rewound. So the text, the logprobs and a seeded choice's draws are those without
speculation. ``timings`` (llama-server's, of the first choice; on each choice's last chunk when streamed)
report the decoding, with ``draft_n`` and ``draft_n_accepted`` when it drafted.

As the server holds the logits here, it applies ``logit_bias`` (added to the logits before sampling) and
gives OpenAI's legacy ``logprobs`` (an integer 0..5): per generated token its text (``bytes:\\xNN...``
when it is part of a UTF-8 character), its log-probability (log_softmax of the model's raw logits, before
the bias and the sampler, as chat's are), the ``logprobs`` most likely tokens with theirs plus the token
drawn, and ``text_offset``, where its text starts in the prompt followed by the completion. Tokens whose
text was cut by a stop string are left out, as their text is. ``n`` choices are ``n`` such generations,
choice i seeded with seed + i.
"""
from __future__ import annotations

import asyncio
import codecs
import contextlib
import secrets
import time
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Dict, List, Optional, Sequence

import numpy as np
from starlette.requests import Request

import leap

from ..generation import MAX_DRAFT_TOKENS
from .engine import Job, JobControl, JobHandle, Speculation, merged_events
from .errors import ApiError, bad_request, from_leap_error
from .schemas import Fields, Sampling, parse_sampling, wrong_type
from .sse import DONE, event
from .turn import StopMatcher, timings_of

DEFAULT_MAX_TOKENS = 16


@dataclass
class CompletionRequest:
    prompt: Optional[str]
    tokens: Optional[List[int]]
    sampling: Sampling
    stream: bool = False
    include_usage: bool = False
    echo: bool = False
    logprobs: Optional[int] = None  # alternatives per token (0..5); None: no logprobs
    # llama-server's ``speculative.n_max``: this request's most drafted tokens a pass (0: none; None: the
    # server's), when the server speculates.
    max_draft_tokens: Optional[int] = None


@dataclass
class TokenLogprobs:
    """OpenAI's legacy ``logprobs`` object of some tokens (the four lists run in parallel)."""

    tokens: List[str] = field(default_factory=list)
    token_logprobs: List[float] = field(default_factory=list)
    top_logprobs: List[Dict[str, float]] = field(default_factory=list)
    text_offset: List[int] = field(default_factory=list)

    def extend(self, other: "TokenLogprobs") -> None:
        self.tokens += other.tokens
        self.token_logprobs += other.token_logprobs
        self.top_logprobs += other.top_logprobs
        self.text_offset += other.text_offset

    def take(self) -> "TokenLogprobs":
        """These entries, leaving this object empty."""
        out = TokenLogprobs(self.tokens, self.token_logprobs, self.top_logprobs, self.text_offset)
        self.tokens, self.token_logprobs, self.top_logprobs, self.text_offset = [], [], [], []
        return out

    def body(self) -> Dict[str, Any]:
        return {"tokens": self.tokens, "token_logprobs": self.token_logprobs, "top_logprobs": self.top_logprobs,
                "text_offset": self.text_offset}


@dataclass(frozen=True)
class TextPiece:
    text: str
    logprobs: Optional[TokenLogprobs] = None  # the tokens that made this text (logprobs asked for)


@dataclass(frozen=True)
class CompletionEnd:
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str
    stats: Optional[leap.GenerationStats] = None  # for llama-server's ``timings``


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
    sampling = parse_sampling(f, max_tokens_limit, min(DEFAULT_MAX_TOKENS, max_tokens_limit))
    req = CompletionRequest(text, tokens, sampling)
    req.stream = f.boolean("stream") or False
    so = f.obj_field("stream_options")
    if so is not None:
        req.include_usage = Fields(so, "stream_options").boolean("include_usage") or False
    req.echo = f.boolean("echo") or False
    best_of = f.integer("best_of", 1)
    if best_of not in (None, 1, sampling.n):
        raise bad_request("best_of: this server returns every completion it generates (best_of, when given, must "
                          "equal n)", "best_of", code="unsupported_value")
    req.logprobs = f.integer("logprobs", 0, 5)
    if req.logprobs is not None and req.echo:
        raise bad_request("logprobs: the prompt's log probabilities are not computed: echo and logprobs cannot be "
                          "combined", "logprobs", code="unsupported_value")
    req.max_draft_tokens = f.integer("speculative.n_max", 0, MAX_DRAFT_TOKENS)
    if f.string("suffix"):
        raise bad_request("suffix: insertion (a suffix) is not supported", "suffix", code="unsupported_value")
    return req


def token_text(piece: bytes) -> str:
    """A token as OpenAI's legacy logprobs name it: its text, or ``bytes:\\xNN...`` when it is not whole
    UTF-8 (part of a character)."""
    try:
        return piece.decode("utf-8")
    except UnicodeDecodeError:
        return "bytes:" + "".join(f"\\x{b:02x}" for b in piece)


def token_logprobs(logits: np.ndarray, token: int, top: int, piece: Any) -> "tuple[float, Dict[str, float]]":
    """``token``'s log-probability under ``logits`` (n_vocab,) and the ``top`` most likely tokens' (by
    their text, the token drawn included)."""
    m = float(logits.max())
    log_z = m + float(np.log(np.exp((logits - m).astype(np.float64)).sum()))
    alternatives: Dict[str, float] = {}
    if top:
        best = np.argpartition(-logits, top - 1)[:top]
        for t in sorted(best.tolist(), key=lambda t: -logits[t]):
            alternatives.setdefault(piece(t), float(logits[t]) - log_z)
    chosen = float(logits[token]) - log_z
    alternatives.setdefault(piece(token), chosen)
    return chosen, alternatives


def completion_job(model: leap.Model, req: CompletionRequest, speculation: Speculation = Speculation()) -> Job:
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
        for t in s.logit_bias:
            if t >= vocab:
                raise bad_request(f"logit_bias: token id {t} is outside the vocabulary (0..{vocab - 1})", "logit_bias")
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
        bias_ids = np.fromiter(s.logit_bias.keys(), dtype=np.int64, count=len(s.logit_bias))
        bias = np.fromiter(s.logit_bias.values(), dtype=np.float32, count=len(s.logit_bias))
        try:
            ctx = model.create_context(context_size=len(tokens) + budget)
            sampler = leap.Sampler(**sampler_args)
            spec = speculation.speculator(model, len(tokens) + budget, req.max_draft_tokens)
        except leap.LeapError as e:
            raise from_leap_error(e, "prompt") from None
        with ctx, sampler, (spec or contextlib.nullcontext()):
            control.started()
            if req.echo:
                control.emit(TextPiece(req.prompt if req.prompt is not None else tokenizer.detokenize(tokens)))
            t0 = time.monotonic()
            ctx.eval(tokens)
            t_prompt = time.monotonic()
            for t in tokens:
                sampler.accept(t)
            decoder = codecs.getincrementaldecoder("utf-8")("replace")
            stops = StopMatcher(s.stop)
            # logprobs: entries of the tokens whose text is held back by the stop matcher, the characters
            # made so far (text_offset counts from the prompt's start, as OpenAI's does).
            pending = TokenLogprobs()
            offset = len(req.prompt) if req.prompt is not None else len(tokenizer.detokenize(tokens))
            sequence = list(tokens)
            # The pass evaluated last: its guesses not sampled yet (next first), how many it took so far, the
            # row of the logits to sample next (-1: a pass of one token).
            guesses: List[int] = []
            taken, row, drafted, accepted = 0, -1, 0, 0
            generated = 0
            finish = "length"
            while generated < budget:
                if control.stopped:
                    finish = "stop"
                    break
                logits = ctx.logits(row)
                raw = np.frombuffer(logits, dtype=np.float32)
                if req.logprobs is not None:
                    raw = raw.copy()  # the bias changes the buffer sampled below, not these
                if len(bias):
                    np.frombuffer(logits, dtype=np.float32)[bias_ids] += bias
                token = sampler.sample(logits)
                sampler.accept(token)
                if tokenizer.is_eog(token):
                    finish = "stop"
                    break
                generated += 1
                sequence.append(token)
                piece = tokenizer.token_to_piece(token)
                decoded = decoder.decode(piece)
                if req.logprobs is not None:
                    chosen, top = token_logprobs(raw, token, req.logprobs,
                                                 lambda t: token_text(tokenizer.token_to_piece(t)))
                    pending.extend(TokenLogprobs([token_text(piece)], [chosen], [top], [offset]))
                offset += len(decoded)
                text = stops.push(decoded)
                if text:
                    control.emit(TextPiece(text, pending.take() if req.logprobs is not None else None))
                if stops.matched:
                    finish = "stop"
                    break
                if guesses and token == guesses[0]:  # a verified guess: the next logits are in the pass
                    guesses.pop(0)
                    taken, row = taken + 1, row + 1
                    if not guesses:
                        accepted += report(spec, taken)
                    continue
                if guesses:  # the sample differs from the guess: the pass ends, its other guesses go
                    ctx.rewind(ctx.n_past - len(guesses))
                    accepted += report(spec, taken)
                    guesses = []
                if generated < budget:
                    # The token and the guesses after it in one pass (every row's logits kept).
                    guesses = spec.draft(sequence, budget - generated - 1) if spec is not None else []
                    if guesses:
                        ctx.verify([token] + guesses)
                    else:
                        ctx.eval([token])
                    taken, row = 0, 0 if guesses else -1
                    drafted += len(guesses)
            if guesses:
                accepted += report(spec, taken)
            t_end = time.monotonic()
            rest = stops.push(decoder.decode(b"", final=True)) + stops.flush()
            if rest:
                control.emit(TextPiece(rest, pending.take() if req.logprobs is not None else None))
            decoding = t_end - t_prompt
            stats = leap.GenerationStats(
                prompt_tokens=len(tokens), completion_tokens=generated, total_tokens=len(tokens) + generated,
                tokens_per_second=generated / decoding if decoding > 0 else 0.0, cached_prompt_tokens=0,
                time_to_first_token=t_prompt - t0,
                prompt_tokens_per_second=len(tokens) / (t_prompt - t0) if t_prompt > t0 else 0.0,
                drafted_tokens=drafted, accepted_draft_tokens=accepted)
            control.emit(CompletionEnd(len(tokens), generated, finish, stats))

    return run


def report(spec: Optional[leap.Speculator], taken: int) -> int:
    """Tells the speculator how many of its guesses the pass took; returns that count."""
    assert spec is not None
    spec.accept(taken)
    return taken


def _usage(ends: Sequence[Optional[CompletionEnd]]) -> Dict[str, Any]:
    """One prompt, the completion tokens of every choice."""
    p = next((e.prompt_tokens for e in ends if e is not None), 0)
    c = sum(e.completion_tokens for e in ends if e is not None)
    return {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c,
            "prompt_tokens_details": {"cached_tokens": 0}}


async def _choice(handle: JobHandle, req: CompletionRequest, index: int) -> "tuple[Dict[str, Any], Optional[CompletionEnd]]":
    pieces: List[str] = []
    logprobs = TokenLogprobs()
    end: Optional[CompletionEnd] = None
    async for e in handle.events():
        if isinstance(e, TextPiece):
            pieces.append(e.text)
            if e.logprobs is not None:
                logprobs.extend(e.logprobs)
        elif isinstance(e, CompletionEnd):
            end = e
    return {"index": index, "text": "".join(pieces), "logprobs": logprobs.body() if req.logprobs is not None else None,
            "finish_reason": end.finish_reason if end else "stop"}, end


async def collect(handles: Sequence[JobHandle], req: CompletionRequest, rid: str, created: int,
                  name: str) -> Dict[str, Any]:
    done = await asyncio.gather(*(_choice(h, req, i) for i, h in enumerate(handles)))
    result = {"id": rid, "object": "text_completion", "created": created, "model": name,
              "choices": [c for c, _ in done], "usage": _usage([e for _, e in done])}
    timings = timings_of(done[0][1].stats if done and done[0][1] is not None else None)
    if timings is not None:  # the first choice's, as chat's
        result["timings"] = timings
    return result


async def stream_events(request: Request, handles: Sequence[JobHandle], req: CompletionRequest, rid: str,
                        created: int, name: str) -> AsyncIterator[bytes]:
    def chunk(index: int, text: str, finish: Optional[str], logprobs: Optional[TokenLogprobs] = None,
              stats: Optional[leap.GenerationStats] = None) -> bytes:
        lp = (logprobs or TokenLogprobs()).body() if req.logprobs is not None else None
        c: Dict[str, Any] = {"id": rid, "object": "text_completion", "created": created, "model": name,
                             "choices": [{"index": index, "text": text, "logprobs": lp, "finish_reason": finish}]}
        if req.include_usage:
            c["usage"] = None
        timings = timings_of(stats)
        if timings is not None:  # a choice's last chunk, as chat's
            c["timings"] = timings
        return event(c)

    ends: List[Optional[CompletionEnd]] = [None] * len(handles)
    try:
        async for i, e in merged_events(handles):
            if isinstance(e, TextPiece):
                yield chunk(i, e.text, None, e.logprobs)
            elif isinstance(e, CompletionEnd):
                ends[i] = e
                yield chunk(i, "", e.finish_reason, stats=e.stats)
    except ApiError as err:
        yield event(err.body())
        yield DONE
        return
    for i, end in enumerate(ends):
        if end is None:  # stopped before its end: the choice still ends
            yield chunk(i, "", "stop")
    usage = _usage(ends)
    request.scope.setdefault("state", {})["leap_usage"] = (usage["prompt_tokens"], 0, usage["completion_tokens"])
    if req.include_usage:
        yield event({"id": rid, "object": "text_completion", "created": created, "model": name, "choices": [],
                     "usage": usage})
    yield DONE
