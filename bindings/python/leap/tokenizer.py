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

from . import _capi as C
from ._capi import i32_p, leap_tokenizer_p
from ._marshal import OwnedHandle, check, utf8


def _take(p: ctypes.c_void_p, n: int) -> bytes:
    """Copies n bytes from a library-owned string and releases it."""
    try:
        return ctypes.string_at(p.value, n) if p.value else b""
    finally:
        C.leap_string_free(p)


class Tokenizer(OwnedHandle):
    """The tokenizer of a GGUF file. Use as a context manager, or call :meth:`close`.

    Immutable once loaded: one instance may be used from several threads.
    """

    _kind = "tokenizer"
    _free = staticmethod(C.leap_tokenizer_free)

    def __init__(self, path: str) -> None:
        handle = leap_tokenizer_p()
        check(C.leap_tokenizer_load(utf8(str(path)), ctypes.byref(handle)))
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
        ids = i32_p()
        n = ctypes.c_size_t()
        check(C.leap_tokenizer_tokenize(self._handle(), data, len(data), int(add_special), int(parse_special),
                                        ctypes.byref(ids), ctypes.byref(n)))
        try:
            return ids[: n.value]
        finally:
            C.leap_buffer_free(ctypes.cast(ids, ctypes.c_void_p))

    def detokenize_bytes(self, tokens: Iterable[int], special: bool = False) -> bytes:
        """The bytes of a token sequence (may end inside a UTF-8 character)."""
        ids = list(tokens)
        arr = (ctypes.c_int32 * max(1, len(ids)))(*ids)
        out = ctypes.c_void_p()
        n = ctypes.c_size_t()
        check(C.leap_tokenizer_detokenize(self._handle(), arr, len(ids), int(special), ctypes.byref(out),
                                          ctypes.byref(n)))
        return _take(out, n.value)

    def detokenize(self, tokens: Iterable[int], special: bool = False) -> str:
        """The text of a token sequence; control tokens appear only with ``special=True``. Bytes that are
        not valid UTF-8 (a sequence ending inside a character) become U+FFFD."""
        return self.detokenize_bytes(tokens, special).decode("utf-8", errors="replace")

    def token_to_piece(self, token: int, special: bool = False) -> bytes:
        """The bytes of one token (possibly part of a character)."""
        out = ctypes.c_void_p()
        n = ctypes.c_size_t()
        check(C.leap_tokenizer_token_to_piece(self._handle(), int(token), int(special), ctypes.byref(out),
                                              ctypes.byref(n)))
        return _take(out, n.value)

    @property
    def vocab_size(self) -> int:
        n = ctypes.c_size_t()
        check(C.leap_tokenizer_vocab_size(self._handle(), ctypes.byref(n)))
        return n.value

    @property
    def bos_id(self) -> Optional[int]:
        """Beginning-of-sequence id, or None."""
        v = ctypes.c_int32()
        check(C.leap_tokenizer_bos_id(self._handle(), ctypes.byref(v)))
        return None if v.value < 0 else v.value

    @property
    def eos_id(self) -> Optional[int]:
        """End-of-sequence id, or None."""
        v = ctypes.c_int32()
        check(C.leap_tokenizer_eos_id(self._handle(), ctypes.byref(v)))
        return None if v.value < 0 else v.value

    def is_eog(self, token: int) -> bool:
        """Whether ``token`` ends generation (EOS, <|im_end|>, <end_of_turn>, <|eot_id|>, ...)."""
        v = ctypes.c_int32()
        check(C.leap_tokenizer_is_eog(self._handle(), int(token), ctypes.byref(v)))
        return bool(v.value)
