"""Tokenizers from GGUF files (models or vocab-only files), token-exact with llama.cpp.

    with Tokenizer("model.gguf") as tok:
        ids = tok.tokenize("Hello!")                  # BOS added when the vocabulary asks for it
        text = tok.detokenize(ids)                      # control tokens hidden unless special=True
        chat = tok.tokenize("<|im_start|>user\\nHi", parse_special=True)

Unsupported tokenizer types raise :class:`UnsupportedError`; malformed metadata :class:`FormatError`.
"""
from __future__ import annotations

import ctypes
from typing import Any, Iterable, List, Optional, Union

from . import _lib
from ._lib import c_status, check, fn, utf8

leap_tokenizer_p = _lib.opaque("leap_tokenizer")
_i32_p = ctypes.POINTER(ctypes.c_int32)
_size_p = ctypes.POINTER(ctypes.c_size_t)
_char_pp = ctypes.POINTER(ctypes.c_void_p)

# LEAP_API leap_status leap_tokenizer_load(const char *path, leap_tokenizer **out_tokenizer);
_load = fn("leap_tokenizer_load", c_status, ctypes.c_char_p, ctypes.POINTER(leap_tokenizer_p))
# LEAP_API void leap_tokenizer_free(leap_tokenizer *tokenizer);
_free = fn("leap_tokenizer_free", None, leap_tokenizer_p)
# LEAP_API leap_status leap_tokenizer_tokenize(const leap_tokenizer *, const char *text, size_t n_bytes,
#     int32_t add_special, int32_t parse_special, int32_t **out_ids, size_t *out_count);
_tokenize = fn("leap_tokenizer_tokenize", c_status, leap_tokenizer_p, ctypes.c_char_p, ctypes.c_size_t,
               ctypes.c_int32, ctypes.c_int32, ctypes.POINTER(_i32_p), _size_p)
# LEAP_API leap_status leap_tokenizer_detokenize(const leap_tokenizer *, const int32_t *ids, size_t n_ids,
#     int32_t special, char **out_text, size_t *out_n_bytes);
_detokenize = fn("leap_tokenizer_detokenize", c_status, leap_tokenizer_p, _i32_p, ctypes.c_size_t, ctypes.c_int32,
                 _char_pp, _size_p)
# LEAP_API leap_status leap_tokenizer_token_to_piece(const leap_tokenizer *, int32_t id, int32_t special,
#     char **out_piece, size_t *out_n_bytes);
_token_to_piece = fn("leap_tokenizer_token_to_piece", c_status, leap_tokenizer_p, ctypes.c_int32, ctypes.c_int32,
                     _char_pp, _size_p)
# LEAP_API leap_status leap_tokenizer_vocab_size(const leap_tokenizer *, size_t *out_size);
_vocab_size = fn("leap_tokenizer_vocab_size", c_status, leap_tokenizer_p, _size_p)
# LEAP_API leap_status leap_tokenizer_bos_id(const leap_tokenizer *, int32_t *out_id);
_bos_id = fn("leap_tokenizer_bos_id", c_status, leap_tokenizer_p, _i32_p)
# LEAP_API leap_status leap_tokenizer_eos_id(const leap_tokenizer *, int32_t *out_id);
_eos_id = fn("leap_tokenizer_eos_id", c_status, leap_tokenizer_p, _i32_p)
# LEAP_API leap_status leap_tokenizer_is_eog(const leap_tokenizer *, int32_t id, int32_t *out_is_eog);
_is_eog = fn("leap_tokenizer_is_eog", c_status, leap_tokenizer_p, ctypes.c_int32, _i32_p)
_buffer_free = _lib.leap_buffer_free
_string_free = _lib.leap_string_free


def _take(p: ctypes.c_void_p, n: int) -> bytes:
    """Copies n bytes from a library-owned string and releases it."""
    try:
        return ctypes.string_at(p.value, n) if p.value else b""
    finally:
        _string_free(p)


class Tokenizer(_lib.OwnedHandle):
    """The tokenizer of a GGUF file. Use as a context manager, or call :meth:`close`.

    Immutable once loaded: one instance may be used from several threads.
    """

    _kind = "tokenizer"
    _free = staticmethod(_free)

    def __init__(self, path: str) -> None:
        handle = leap_tokenizer_p()
        check(_load(utf8(str(path)), ctypes.byref(handle)))
        self._h = handle
        self.path = str(path)

    @classmethod
    def _adopt(cls, handle: Any, path: str) -> "Tokenizer":
        """Wrap a leap_tokenizer handle the caller owns (e.g. from leap_model_tokenizer)."""
        t = cls.__new__(cls)
        t._h = handle
        t.path = path
        return t

    def __enter__(self) -> "Tokenizer":
        return self

    def tokenize(self, text: Union[str, bytes], add_special: bool = True, parse_special: bool = False) -> List[int]:
        """Token ids of ``text`` (str, or bytes that need not be valid UTF-8).

        ``add_special`` adds BOS/EOS as the vocabulary asks; ``parse_special`` turns the text of control
        tokens such as ``<|im_start|>`` into their ids (otherwise it is tokenized as plain text).
        """
        data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
        ids = _i32_p()
        n = ctypes.c_size_t()
        check(_tokenize(self._handle(), data, len(data), int(add_special), int(parse_special), ctypes.byref(ids),
                        ctypes.byref(n)))
        try:
            return ids[: n.value]
        finally:
            _buffer_free(ctypes.cast(ids, ctypes.c_void_p))

    def detokenize_bytes(self, tokens: Iterable[int], special: bool = False) -> bytes:
        """The bytes of a token sequence (may end inside a UTF-8 character)."""
        ids = list(tokens)
        arr = (ctypes.c_int32 * max(1, len(ids)))(*ids)
        out = ctypes.c_void_p()
        n = ctypes.c_size_t()
        check(_detokenize(self._handle(), arr, len(ids), int(special), ctypes.byref(out), ctypes.byref(n)))
        return _take(out, n.value)

    def detokenize(self, tokens: Iterable[int], special: bool = False) -> str:
        """The text of a token sequence; control tokens appear only with ``special=True``. Bytes that are
        not valid UTF-8 (a sequence ending inside a character) become U+FFFD."""
        return self.detokenize_bytes(tokens, special).decode("utf-8", errors="replace")

    def token_to_piece(self, token: int, special: bool = False) -> bytes:
        """The bytes of one token (possibly part of a character)."""
        out = ctypes.c_void_p()
        n = ctypes.c_size_t()
        check(_token_to_piece(self._handle(), int(token), int(special), ctypes.byref(out), ctypes.byref(n)))
        return _take(out, n.value)

    @property
    def vocab_size(self) -> int:
        n = ctypes.c_size_t()
        check(_vocab_size(self._handle(), ctypes.byref(n)))
        return n.value

    @property
    def bos_id(self) -> Optional[int]:
        """Beginning-of-sequence id, or None."""
        v = ctypes.c_int32()
        check(_bos_id(self._handle(), ctypes.byref(v)))
        return None if v.value < 0 else v.value

    @property
    def eos_id(self) -> Optional[int]:
        """End-of-sequence id, or None."""
        v = ctypes.c_int32()
        check(_eos_id(self._handle(), ctypes.byref(v)))
        return None if v.value < 0 else v.value

    def is_eog(self, token: int) -> bool:
        """Whether ``token`` ends generation (EOS, <|im_end|>, <end_of_turn>, <|eot_id|>, ...)."""
        v = ctypes.c_int32()
        check(_is_eog(self._handle(), int(token), ctypes.byref(v)))
        return bool(v.value)
