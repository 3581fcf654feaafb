"""Read-only inspection of GGUF model files (metadata, tensor table, dequantized tensors).

    with GGUFFile("model.gguf") as f:
        print(f.metadata["general.architecture"])
        for t in f.tensors:
            print(t.name, t.type_name, t.shape)
        w = f.tensor("token_embd.weight")   # array('f'), ne[0] fastest

Opening maps the file and validates its header (malformed files raise :class:`FormatError`, unsupported
versions or tensor types :class:`UnsupportedError`); tensor data is only read by :meth:`GGUFFile.tensor`.
"""
from __future__ import annotations

import ctypes
import json
from array import array
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from . import _lib
from ._lib import c_status, check, fn, take_floats, take_string, utf8

leap_gguf_p = _lib.opaque("leap_gguf")


class _TensorInfo(ctypes.Structure):
    """Mirror of ``leap_gguf_tensor_info`` (growable: struct_size first)."""

    _fields_ = [
        ("struct_size", ctypes.c_uint32),
        ("n_dims", ctypes.c_uint32),
        ("name", ctypes.c_char_p),
        ("ne", ctypes.c_int64 * 4),
        ("type", ctypes.c_uint32),
        ("type_name", ctypes.c_char_p),
        ("offset", ctypes.c_uint64),
        ("size", ctypes.c_uint64),
        ("n_elements", ctypes.c_uint64),
    ]


_size_p = ctypes.POINTER(ctypes.c_size_t)
_str_out = ctypes.POINTER(ctypes.c_void_p)

# LEAP_API leap_status leap_gguf_open(const char *path, leap_gguf **out_gguf);
_open = fn("leap_gguf_open", c_status, ctypes.c_char_p, ctypes.POINTER(leap_gguf_p))
# LEAP_API void leap_gguf_free(leap_gguf *gguf);
_free = fn("leap_gguf_free", None, leap_gguf_p)
# LEAP_API leap_status leap_gguf_version(const leap_gguf *gguf, uint32_t *out_version);
_version = fn("leap_gguf_version", c_status, leap_gguf_p, ctypes.POINTER(ctypes.c_uint32))
# LEAP_API leap_status leap_gguf_metadata_count(const leap_gguf *gguf, size_t *out_count);
_metadata_count = fn("leap_gguf_metadata_count", c_status, leap_gguf_p, _size_p)
# LEAP_API leap_status leap_gguf_metadata_key(const leap_gguf *gguf, size_t index, char **out_key);
_metadata_key = fn("leap_gguf_metadata_key", c_status, leap_gguf_p, ctypes.c_size_t, _str_out)
# LEAP_API leap_status leap_gguf_metadata_type(const leap_gguf *gguf, const char *key, char **out_type);
_metadata_type = fn("leap_gguf_metadata_type", c_status, leap_gguf_p, ctypes.c_char_p, _str_out)
# LEAP_API leap_status leap_gguf_metadata_json(const leap_gguf *gguf, const char *key, char **out_json);
_metadata_json = fn("leap_gguf_metadata_json", c_status, leap_gguf_p, ctypes.c_char_p, _str_out)
# LEAP_API leap_status leap_gguf_tensor_count(const leap_gguf *gguf, size_t *out_count);
_tensor_count = fn("leap_gguf_tensor_count", c_status, leap_gguf_p, _size_p)
# LEAP_API leap_status leap_gguf_find_tensor(const leap_gguf *gguf, const char *name, size_t *out_index);
_find_tensor = fn("leap_gguf_find_tensor", c_status, leap_gguf_p, ctypes.c_char_p, _size_p)
# LEAP_API leap_status leap_gguf_tensor_info_get(const leap_gguf *gguf, size_t index, leap_gguf_tensor_info *out_info);
_tensor_info = fn("leap_gguf_tensor_info_get", c_status, leap_gguf_p, ctypes.c_size_t, ctypes.POINTER(_TensorInfo))
# LEAP_API leap_status leap_gguf_tensor_dequantize(const leap_gguf *, size_t index, float **out_values, size_t *out_count);
_dequantize = fn("leap_gguf_tensor_dequantize", c_status, leap_gguf_p, ctypes.c_size_t,
                 ctypes.POINTER(ctypes.POINTER(ctypes.c_float)), _size_p)


@dataclass(frozen=True)
class GGUFTensor:
    """One entry of the tensor table."""

    index: int
    name: str
    shape: Tuple[int, ...]
    """``ne`` as stored (``ne[0]`` first, the fastest axis); numpy's shape is the reverse."""
    type: int
    """ggml type id (0 F32, 1 F16, 2 Q4_0, ... 12 Q4_K, 14 Q6_K, 30 BF16)."""
    type_name: str
    offset: int
    """Absolute offset of the data in the file."""
    size: int
    """Bytes of data."""
    n_elements: int


class GGUFFile(_lib.OwnedHandle):
    """An open GGUF file. Use as a context manager, or call :meth:`close`."""

    _kind = "GGUF file"
    _free = staticmethod(_free)

    def __init__(self, path: str) -> None:
        handle = leap_gguf_p()
        check(_open(utf8(str(path)), ctypes.byref(handle)))
        self._h = handle
        self.path = str(path)
        self._metadata: Optional[Dict[str, Any]] = None
        self._tensors: Optional[List[GGUFTensor]] = None

    def __enter__(self) -> "GGUFFile":
        return self

    @property
    def version(self) -> int:
        """GGUF format version (2 or 3)."""
        v = ctypes.c_uint32()
        check(_version(self._handle(), ctypes.byref(v)))
        return v.value

    @property
    def metadata(self) -> Dict[str, Any]:
        """All key/value metadata in file order (arrays as lists; non-finite floats as None)."""
        self._handle()
        if self._metadata is None:
            n = ctypes.c_size_t()
            check(_metadata_count(self._handle(), ctypes.byref(n)))
            out: Dict[str, Any] = {}
            for i in range(n.value):
                p = ctypes.c_void_p()
                check(_metadata_key(self._handle(), i, ctypes.byref(p)))
                key = take_string(p.value) or ""
                out[key] = self.value(key)
            self._metadata = out
        return self._metadata

    def value(self, key: str) -> Any:
        """One metadata value; raises InvalidArgumentError for a missing key."""
        p = ctypes.c_void_p()
        check(_metadata_json(self._handle(), utf8(key), ctypes.byref(p)))
        return json.loads(take_string(p.value) or "null")

    def value_type(self, key: str) -> str:
        """The GGUF type of a value: "UINT32", "STRING", "ARRAY[STRING]", ..."""
        p = ctypes.c_void_p()
        check(_metadata_type(self._handle(), utf8(key), ctypes.byref(p)))
        return take_string(p.value) or ""

    @property
    def tensors(self) -> List[GGUFTensor]:
        """The tensor table, in file order."""
        self._handle()
        if self._tensors is None:
            n = ctypes.c_size_t()
            check(_tensor_count(self._handle(), ctypes.byref(n)))
            self._tensors = [self._info(i) for i in range(n.value)]
        return self._tensors

    def _info(self, index: int) -> GGUFTensor:
        info = _TensorInfo()
        info.struct_size = ctypes.sizeof(_TensorInfo)
        check(_tensor_info(self._handle(), index, ctypes.byref(info)))
        return GGUFTensor(
            index=index,
            name=(info.name or b"").decode("utf-8"),
            shape=tuple(int(info.ne[d]) for d in range(info.n_dims)),
            type=int(info.type),
            type_name=(info.type_name or b"").decode(),
            offset=int(info.offset),
            size=int(info.size),
            n_elements=int(info.n_elements),
        )

    def tensor_info(self, name: str) -> GGUFTensor:
        """The table entry of tensor ``name``; raises InvalidArgumentError if there is none."""
        i = ctypes.c_size_t()
        check(_find_tensor(self._handle(), utf8(name), ctypes.byref(i)))
        return self.tensors[i.value]

    def tensor(self, name: str) -> array[float]:
        """Tensor ``name`` dequantized to float32 (``n_elements`` values, ``ne[0]`` fastest)."""
        index = self.tensor_info(name).index
        p = ctypes.POINTER(ctypes.c_float)()
        n = ctypes.c_size_t()
        check(_dequantize(self._handle(), index, ctypes.byref(p), ctypes.byref(n)))
        return take_floats(p, n.value)
