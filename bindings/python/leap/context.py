"""Low-level evaluation: contexts (KV cache + logits) and samplers over a loaded model.

    model = leap.load_model("model.gguf")
    ctx = model.create_context()
    ctx.eval(model.tokenize("The capital of France is"))
    token = leap.Sampler(temperature=0).sample(ctx.logits())

and speculative decoding in a loop of one's own (:class:`Speculator`).
"""
from __future__ import annotations

import ctypes
from array import array
from typing import TYPE_CHECKING, Iterable, List, Optional, Sequence

from . import _capi as C
from ._capi import (float_p, leap_context_p, leap_context_params, leap_sampler_p, leap_sampler_params,
                    leap_speculator_p, leap_speculator_params)
from ._marshal import OwnedHandle, check
from .errors import error_for_status

if TYPE_CHECKING:
    from .model import Model


class Context(OwnedHandle):
    """One evaluated token sequence (KV cache, LFM2 conv state, logits). Use from one thread at a time.

    Contexts of one model (same ``cpu_threads`` and KV cache type) decoding on several threads at once share
    forward passes: their one-token ``eval`` calls and ``verify`` passes go through the weights together,
    each context keeping the logits it gets alone."""

    _kind = "context"
    _free = staticmethod(C.leap_context_free)

    def __init__(self, model: Model, context_size: Optional[int] = None, cpu_threads: Optional[int] = None,
                 kv_cache_f32: bool = False) -> None:
        p = leap_context_params()
        C.leap_context_params_init(ctypes.byref(p), ctypes.sizeof(p))
        p.context_size = context_size or 0
        p.n_threads = cpu_threads or 0
        p.kv_cache_f32 = int(kv_cache_f32)
        h = leap_context_p()
        check(C.leap_context_create(model._handle(), ctypes.byref(p), ctypes.byref(h)))
        self._h = h
        self.model = model  # keeps the Python object alive too

    def __enter__(self) -> "Context":
        return self

    def eval(self, tokens: Sequence[int], all_logits: bool = False) -> None:
        """Evaluate ``tokens`` at positions n_past, n_past+1, ...; keeps the last token's logits
        (every token's with ``all_logits=True``)."""
        arr = (ctypes.c_int32 * len(tokens))(*tokens)
        evaluate = C.leap_context_eval_all_logits if all_logits else C.leap_context_eval
        check(evaluate(self._handle(), arr, len(tokens)))

    def verify(self, tokens: Sequence[int]) -> None:
        """A verification pass of speculative decoding (the last token and the guesses after it, 1..15
        tokens): every token's logits kept, each row's those of evaluating the tokens one at a time, in one
        pass over the weights (leap.h, leap_context_eval_verify)."""
        arr = (ctypes.c_int32 * len(tokens))(*tokens)
        check(C.leap_context_eval_verify(self._handle(), arr, len(tokens)))

    def logits(self, index: int = -1) -> array[float]:
        """n_vocab floats (a copy) of token ``index`` of the last eval (-1 = last)."""
        p = float_p()
        n = ctypes.c_size_t()
        check(C.leap_context_logits(self._handle(), index, ctypes.byref(p), ctypes.byref(n)))
        out = array("f")
        out.frombytes(ctypes.string_at(p, 4 * n.value))
        return out

    def rewind(self, n_keep: int) -> None:
        """Keep the first ``n_keep`` positions."""
        check(C.leap_context_rewind(self._handle(), n_keep))

    @property
    def n_past(self) -> int:
        v = ctypes.c_int32()
        check(C.leap_context_n_past(self._handle(), ctypes.byref(v)))
        return v.value

    @property
    def context_size(self) -> int:
        v = ctypes.c_int32()
        check(C.leap_context_size(self._handle(), ctypes.byref(v)))
        return v.value


class Sampler(OwnedHandle):
    """llama.cpp-style sampler: penalties -> top_k -> top_p -> min_p -> temperature -> seeded draw."""

    _kind = "sampler"
    _free = staticmethod(C.leap_sampler_free)

    def __init__(self, temperature: float = 0.8, top_k: int = 40, top_p: float = 0.95, min_p: float = 0.05,
                 repetition_penalty: float = 1.0, frequency_penalty: float = 0.0, presence_penalty: float = 0.0,
                 penalty_last_n: int = 64, seed: int = 0) -> None:
        p = leap_sampler_params()
        C.leap_sampler_params_init(ctypes.byref(p), ctypes.sizeof(p))
        p.temperature, p.top_k, p.top_p, p.min_p = temperature, top_k, top_p, min_p
        p.repetition_penalty, p.frequency_penalty, p.presence_penalty = repetition_penalty, frequency_penalty, presence_penalty
        p.penalty_last_n, p.seed = penalty_last_n, seed
        h = leap_sampler_p()
        check(C.leap_sampler_create(ctypes.byref(p), ctypes.byref(h)))
        self._h = h

    def sample(self, logits: Iterable[float]) -> int:
        """Pick a token from one row of logits (not accepted: call ``accept``)."""
        buf = array("f", logits)
        ptr, n = buf.buffer_info()
        out = ctypes.c_int32()
        check(C.leap_sampler_sample(self._handle(), ctypes.cast(ptr, float_p), n, ctypes.byref(out)))
        return out.value

    def accept(self, token: int) -> None:
        check(C.leap_sampler_accept(self._handle(), token))

    def reset(self) -> None:
        check(C.leap_sampler_reset(self._handle()))


#: leap_drafter values by the names GenerationOptions.drafter uses (None: the draft model if loaded, else ngram).
_DRAFTERS = {None: C.LEAP_DRAFTER_DEFAULT, "ngram": C.LEAP_DRAFTER_NGRAM, "draft_model": C.LEAP_DRAFTER_DRAFT_MODEL}


class Speculator(OwnedHandle):
    """Guesses of the next tokens for a verification loop of one's own (leap.h, "Low-level evaluation:
    speculative decoding"): ``drafter`` "ngram" (prompt lookup), "draft_model" (the model's draft model, see
    :func:`leap.load_model`) or None (the draft model if loaded, else prompt lookup), at most
    ``max_draft_tokens`` guesses a pass (None: 8; 1..14); a draft model follows the history in a context of
    ``context_size`` positions (None: the model's). How many guesses are worth a pass adapts to their
    acceptance and the measured cost of a pass, as the conversations' speculation does. Use from one thread at
    a time.

    The verify loop (the context holds every token of ``seq`` but its last; sampling each position in order
    and accepting a guess while the sample equals it gives exactly the tokens of evaluating one token at a
    time from the same context -- the prompt's last token alone, as a batched prompt's last row can differ
    from it -- and a seeded sampler's draws unchanged)::

        seq = list(prompt)
        ctx.eval(seq[:-1])
        for t in seq:
            sampler.accept(t)
        with leap.Speculator(model, drafter="ngram") as spec:
            while len(seq) - len(prompt) < max_tokens:
                guesses = spec.draft(seq, max_tokens - (len(seq) - len(prompt)) - 1)
                ctx.verify([seq[-1]] + guesses)
                taken = 0
                for i in range(len(guesses) + 1):   # position i: the token after seq[-1] + guesses[:i]
                    token = sampler.sample(ctx.logits(i))
                    sampler.accept(token)
                    seq.append(token)
                    if i == len(guesses) or token != guesses[i]:
                        break
                    taken += 1
                if guesses:
                    spec.accept(taken)
                ctx.rewind(len(seq) - 1)            # drop the rejected guesses' positions
    """

    _kind = "speculator"
    _free = staticmethod(C.leap_speculator_free)

    def __init__(self, model: Model, drafter: Optional[str] = None, max_draft_tokens: Optional[int] = None,
                 context_size: Optional[int] = None) -> None:
        if drafter not in _DRAFTERS:
            raise error_for_status(C.LEAP_ERR_INVALID_ARGUMENT,
                                   f"drafter must be 'ngram', 'draft_model' or None, got {drafter!r}")
        p = leap_speculator_params()
        C.leap_speculator_params_init(ctypes.byref(p), ctypes.sizeof(p))
        p.drafter = _DRAFTERS[drafter]
        if max_draft_tokens is not None:
            p.max_draft_tokens = max_draft_tokens
        p.context_size = context_size or 0
        h = leap_speculator_p()
        check(C.leap_speculator_create(model._handle(), ctypes.byref(p), ctypes.byref(h)))
        self._h = h
        self.model = model  # keeps the Python object alive too
        n = ctypes.c_int32()
        check(C.leap_speculator_max_draft_tokens(h, ctypes.byref(n)))
        self.max_draft_tokens = n.value  # the most guesses a pass (the library's default when None was given)

    def __enter__(self) -> "Speculator":
        return self

    def draft(self, history: Sequence[int], max_guesses: Optional[int] = None) -> List[int]:
        """Guesses for the tokens after ``history`` (prompt and generated tokens so far): at most
        ``max_guesses`` (None: the most a pass drafts), none when drafting does not pay now. Call once per
        step; a history that continues the last call's is the same sequence."""
        limit = self.max_draft_tokens if max_guesses is None else max(0, max_guesses)
        hist = (ctypes.c_int32 * len(history))(*history)
        out = (ctypes.c_int32 * max(1, limit))()
        n = ctypes.c_size_t()
        check(C.leap_speculator_draft(self._handle(), hist, len(history), limit, out, ctypes.byref(n)))
        return list(out[:n.value])

    def accept(self, n_accepted: int) -> None:
        """The first ``n_accepted`` of the last :meth:`draft`'s guesses were accepted (call after verifying
        guesses; not after a draft that made none)."""
        if n_accepted < 0:
            raise error_for_status(C.LEAP_ERR_INVALID_ARGUMENT, f"n_accepted must not be negative, got {n_accepted}")
        check(C.leap_speculator_accept(self._handle(), n_accepted))
