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

from . import _capi as C
from ._capi import leap_gguf_p, leap_gguf_tensor_info
from ._marshal import OwnedHandle, check, take_floats, take_string, utf8


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


class GGUFFile(OwnedHandle):
    """An open GGUF file. Use as a context manager, or call :meth:`close`."""

    _kind = "GGUF file"
    _free = staticmethod(C.leap_gguf_free)

    def __init__(self, path: str) -> None:
        handle = leap_gguf_p()
        check(C.leap_gguf_open(utf8(str(path)), ctypes.byref(handle)))
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
        check(C.leap_gguf_version(self._handle(), ctypes.byref(v)))
        return v.value

    @property
    def metadata(self) -> Dict[str, Any]:
        """All key/value metadata in file order (arrays as lists; non-finite floats as None)."""
        self._handle()
        if self._metadata is None:
            n = ctypes.c_size_t()
            check(C.leap_gguf_metadata_count(self._handle(), ctypes.byref(n)))
            out: Dict[str, Any] = {}
            for i in range(n.value):
                p = ctypes.c_void_p()
                check(C.leap_gguf_metadata_key(self._handle(), i, ctypes.byref(p)))
                key = take_string(p.value) or ""
                out[key] = self.value(key)
            self._metadata = out
        return self._metadata

    def value(self, key: str) -> Any:
        """One metadata value; raises InvalidArgumentError for a missing key."""
        p = ctypes.c_void_p()
        check(C.leap_gguf_metadata_json(self._handle(), utf8(key), ctypes.byref(p)))
        return json.loads(take_string(p.value) or "null")

    def value_type(self, key: str) -> str:
        """The GGUF type of a value: "UINT32", "STRING", "ARRAY[STRING]", ..."""
        p = ctypes.c_void_p()
        check(C.leap_gguf_metadata_type(self._handle(), utf8(key), ctypes.byref(p)))
        return take_string(p.value) or ""

    @property
    def tensors(self) -> List[GGUFTensor]:
        """The tensor table, in file order."""
        self._handle()
        if self._tensors is None:
            n = ctypes.c_size_t()
            check(C.leap_gguf_tensor_count(self._handle(), ctypes.byref(n)))
            self._tensors = [self._info(i) for i in range(n.value)]
        return self._tensors

    def _info(self, index: int) -> GGUFTensor:
        info = leap_gguf_tensor_info()
        info.struct_size = ctypes.sizeof(leap_gguf_tensor_info)
        check(C.leap_gguf_tensor_info_get(self._handle(), index, ctypes.byref(info)))
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
        check(C.leap_gguf_find_tensor(self._handle(), utf8(name), ctypes.byref(i)))
        return self.tensors[i.value]

    def tensor(self, name: str) -> array[float]:
        """Tensor ``name`` dequantized to float32 (``n_elements`` values, ``ne[0]`` fastest)."""
        index = self.tensor_info(name).index
        p = ctypes.POINTER(ctypes.c_float)()
        n = ctypes.c_size_t()
        check(C.leap_gguf_tensor_dequantize(self._handle(), index, ctypes.byref(p), ctypes.byref(n)))
        return take_floats(p, n.value)
