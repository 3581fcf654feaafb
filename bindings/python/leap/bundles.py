"""LEAP model bundles: a manifest (a path or an http(s) URL) naming a model, its companion files and its
generation defaults, with the files given as URLs downloaded into a cache folder (``leap_model_load_bundle``).

Downloads resume a partial file left by an earlier attempt, check sizes and SHA-256 checksums, and only ever
rename complete files into the cache; ``progress`` is called on the loading thread, and a
:class:`CancelToken` cancels from any other thread.
"""
from __future__ import annotations

import ctypes
import os
from typing import Any, Callable, Optional, Union

from . import _capi as C
from ._capi import leap_bundle_params, leap_cancel_token_p, leap_model_p
from ._marshal import OwnedHandle, check, utf8
from .model import CacheOptions, Model

#: ``progress(file_name, bytes_done, bytes_total)``: ``bytes_total`` is None when the server does not say;
#: return True to cancel the load (None or False continues).
ProgressCallback = Callable[[str, int, Optional[int]], Optional[bool]]


class CancelToken(OwnedHandle):
    """Cancels the downloads of the loads given it, from any thread: ``load_bundle`` then raises
    :class:`leap.CancelledError` within about a second, leaving at most a ``.part`` file that the next load
    resumes."""

    _kind = "cancel token"
    _free = staticmethod(C.leap_cancel_token_free)

    def __init__(self) -> None:
        h = leap_cancel_token_p()
        check(C.leap_cancel_token_create(ctypes.byref(h)))
        self._h = h

    def cancel(self) -> None:
        check(C.leap_cancel_token_cancel(self._handle()))

    @property
    def cancelled(self) -> bool:
        v = ctypes.c_int32()
        check(C.leap_cancel_token_is_cancelled(self._handle(), ctypes.byref(v)))
        return bool(v.value)

    def __enter__(self) -> "CancelToken":
        return self


def load_bundle(path_or_url: Union[str, os.PathLike[str]], cache_dir: Optional[Union[str, os.PathLike[str]]] = None,
                progress: Optional[ProgressCallback] = None, *, cancel: Optional[CancelToken] = None,
                cpu_threads: Optional[int] = None, context_size: Optional[int] = None,
                chat_template: Optional[str] = None, stall_timeout: Optional[int] = None,
                cache: Optional[CacheOptions] = None) -> Model:
    """Load the LEAP bundle whose manifest is at ``path_or_url`` (a path, ``file://`` or ``http(s)://`` URL).

    Files the manifest gives as URLs are downloaded into ``{cache_dir}/{model}-{quant}/``, plus
    ``@{scheme}-{host}`` for a manifest from a URL (``cache_dir`` None: ``$LEAP_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/leap``, else ``~/.cache/leap``); a file already there is used when it has the
    manifest's size and SHA-256 (each when given) and looks like a model, else it is downloaded again. A
    manifest read from a path may name any local file: load only manifests you trust to choose files. The manifest's companions and chat template are the model's, its sampling parameters
    the defaults of every generation, and its ``number_of_decoding_threads`` the thread count, unless
    ``cpu_threads`` / ``chat_template`` say otherwise. ``stall_timeout``: seconds without data after which a
    download fails (default 30). ``cache``: the prompt cache, as for :func:`leap.load_model` (not to be
    confused with ``cache_dir``, where downloaded files go).

    Raises LeapIOError (unreadable manifest or file; download failed: HTTP 404, unreachable or stalled
    server, dropped connection, full disk, wrong size or SHA-256), FormatError (not a valid manifest: the
    message names the field), UnsupportedError (schema version, inference type; libcurl not installed),
    CancelledError (``cancel`` or ``progress`` returning True), BusyError (the file is being downloaded
    elsewhere), or the errors of :func:`leap.load_model`. An exception raised by ``progress`` cancels the
    load and is re-raised."""
    p = leap_bundle_params()
    C.leap_bundle_params_init(ctypes.byref(p), ctypes.sizeof(p))
    p.cache_dir = None if cache_dir is None else os.fsencode(cache_dir)
    p.n_threads = cpu_threads or 0
    p.context_size = context_size or 0
    p.chat_template = utf8(chat_template)
    p.stall_timeout_seconds = stall_timeout or 0
    if cache is not None:
        cache._fill(p, "prompt_cache_")
    if cancel is not None:
        p.cancel = cancel._handle()
    raised: list[BaseException] = []

    def on_progress(name: Optional[bytes], done: int, total: int, _user: Any) -> int:
        if progress is None or raised:
            return 1 if raised else 0
        try:
            stop = progress((name or b"").decode("utf-8", "replace"), int(done), int(total) if total else None)
            return 1 if stop else 0
        except BaseException as e:  # noqa: BLE001 - re-raised after the C call returns
            raised.append(e)
            return 1

    callback = C.leap_download_progress_fn(on_progress)
    if progress is not None:
        p.on_progress = callback
    h = leap_model_p()
    status = C.leap_model_load_bundle(os.fsencode(path_or_url), ctypes.byref(p), ctypes.byref(h))
    if raised:
        raise raised[0]
    check(status)
    return Model._from_handle(h, os.fspath(path_or_url))
