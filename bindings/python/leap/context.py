"""Low-level evaluation: contexts (KV cache + logits) and samplers over a loaded model.

    model = leap.load_model("model.gguf")
    ctx = model.create_context()
    ctx.eval(model.tokenize("The capital of France is"))
    token = leap.Sampler(temperature=0).sample(ctx.logits())
"""
from __future__ import annotations

import ctypes
from array import array
from typing import Any, Iterable, Optional, Sequence

from . import _lib
from ._lib import check, fn, opaque

leap_context_p = opaque("leap_context")
leap_sampler_p = opaque("leap_sampler")
_model_p = ctypes.c_void_p  # the model handle is passed through as an address


class leap_context_params(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("context_size", ctypes.c_int32),
                ("n_threads", ctypes.c_int32), ("kv_cache_f32", ctypes.c_int32)]


class leap_sampler_params(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("temperature", ctypes.c_float), ("top_k", ctypes.c_int32),
                ("top_p", ctypes.c_float), ("min_p", ctypes.c_float), ("repetition_penalty", ctypes.c_float),
                ("frequency_penalty", ctypes.c_float), ("presence_penalty", ctypes.c_float),
                ("penalty_last_n", ctypes.c_int32), ("seed", ctypes.c_uint64)]


_i32p = ctypes.POINTER(ctypes.c_int32)
_fp = ctypes.POINTER(ctypes.c_float)
# void leap_context_params_init(leap_context_params *params, size_t struct_size);
_ctx_params_init = fn("leap_context_params_init", None, ctypes.POINTER(leap_context_params), ctypes.c_size_t)
# leap_status leap_context_create(leap_model *, const leap_context_params *, leap_context **);
_ctx_create = fn("leap_context_create", _lib.c_status, _model_p, ctypes.POINTER(leap_context_params),
                 ctypes.POINTER(leap_context_p))
_ctx_free = fn("leap_context_free", None, leap_context_p)
_ctx_eval = fn("leap_context_eval", _lib.c_status, leap_context_p, _i32p, ctypes.c_size_t)
_ctx_eval_all = fn("leap_context_eval_all_logits", _lib.c_status, leap_context_p, _i32p, ctypes.c_size_t)
_ctx_logits = fn("leap_context_logits", _lib.c_status, leap_context_p, ctypes.c_int32, ctypes.POINTER(_fp),
                 ctypes.POINTER(ctypes.c_size_t))
_ctx_rewind = fn("leap_context_rewind", _lib.c_status, leap_context_p, ctypes.c_int32)
_ctx_n_past = fn("leap_context_n_past", _lib.c_status, leap_context_p, _i32p)
_ctx_size = fn("leap_context_size", _lib.c_status, leap_context_p, _i32p)
_smp_params_init = fn("leap_sampler_params_init", None, ctypes.POINTER(leap_sampler_params), ctypes.c_size_t)
_smp_create = fn("leap_sampler_create", _lib.c_status, ctypes.POINTER(leap_sampler_params),
                 ctypes.POINTER(leap_sampler_p))
_smp_free = fn("leap_sampler_free", None, leap_sampler_p)
_smp_sample = fn("leap_sampler_sample", _lib.c_status, leap_sampler_p, _fp, ctypes.c_size_t, _i32p)
_smp_accept = fn("leap_sampler_accept", _lib.c_status, leap_sampler_p, ctypes.c_int32)
_smp_reset = fn("leap_sampler_reset", _lib.c_status, leap_sampler_p)


def _address(model: Any) -> int:
    return ctypes.cast(model._handle(), ctypes.c_void_p).value or 0


class Context(_lib.OwnedHandle):
    """One evaluated token sequence (KV cache, LFM2 conv state, logits). Use from one thread at a time."""

    _kind = "context"
    _free = staticmethod(_ctx_free)

    def __init__(self, model: Any, context_size: Optional[int] = None, cpu_threads: Optional[int] = None,
                 kv_cache_f32: bool = False) -> None:
        p = leap_context_params()
        _ctx_params_init(ctypes.byref(p), ctypes.sizeof(p))
        p.context_size = context_size or 0
        p.n_threads = cpu_threads or 0
        p.kv_cache_f32 = int(kv_cache_f32)
        h = leap_context_p()
        check(_ctx_create(_address(model), ctypes.byref(p), ctypes.byref(h)))
        self._h = h
        self.model = model  # keeps the Python object alive too

    def __enter__(self) -> "Context":
        return self

    def eval(self, tokens: Sequence[int], all_logits: bool = False) -> None:
        """Evaluate ``tokens`` at positions n_past, n_past+1, ...; keeps the last token's logits
        (every token's with ``all_logits=True``)."""
        arr = (ctypes.c_int32 * len(tokens))(*tokens)
        check((_ctx_eval_all if all_logits else _ctx_eval)(self._handle(), arr, len(tokens)))

    def logits(self, index: int = -1) -> array[float]:
        """n_vocab floats (a copy) of token ``index`` of the last eval (-1 = last)."""
        p = _fp()
        n = ctypes.c_size_t()
        check(_ctx_logits(self._handle(), index, ctypes.byref(p), ctypes.byref(n)))
        out = array("f")
        out.frombytes(ctypes.string_at(p, 4 * n.value))
        return out

    def rewind(self, n_keep: int) -> None:
        """Keep the first ``n_keep`` positions."""
        check(_ctx_rewind(self._handle(), n_keep))

    @property
    def n_past(self) -> int:
        v = ctypes.c_int32()
        check(_ctx_n_past(self._handle(), ctypes.byref(v)))
        return v.value

    @property
    def context_size(self) -> int:
        v = ctypes.c_int32()
        check(_ctx_size(self._handle(), ctypes.byref(v)))
        return v.value


class Sampler(_lib.OwnedHandle):
    """llama.cpp-style sampler: penalties -> top_k -> top_p -> min_p -> temperature -> seeded draw."""

    _kind = "sampler"
    _free = staticmethod(_smp_free)

    def __init__(self, temperature: float = 0.8, top_k: int = 40, top_p: float = 0.95, min_p: float = 0.05,
                 repetition_penalty: float = 1.0, frequency_penalty: float = 0.0, presence_penalty: float = 0.0,
                 penalty_last_n: int = 64, seed: int = 0) -> None:
        p = leap_sampler_params()
        _smp_params_init(ctypes.byref(p), ctypes.sizeof(p))
        p.temperature, p.top_k, p.top_p, p.min_p = temperature, top_k, top_p, min_p
        p.repetition_penalty, p.frequency_penalty, p.presence_penalty = repetition_penalty, frequency_penalty, presence_penalty
        p.penalty_last_n, p.seed = penalty_last_n, seed
        h = leap_sampler_p()
        check(_smp_create(ctypes.byref(p), ctypes.byref(h)))
        self._h = h

    def sample(self, logits: Iterable[float]) -> int:
        """Pick a token from one row of logits (not accepted: call ``accept``)."""
        buf = array("f", logits)
        ptr, n = buf.buffer_info()
        out = ctypes.c_int32()
        check(_smp_sample(self._handle(), ctypes.cast(ptr, _fp), n, ctypes.byref(out)))
        return out.value

    def accept(self, token: int) -> None:
        check(_smp_accept(self._handle(), token))

    def reset(self) -> None:
        check(_smp_reset(self._handle()))
