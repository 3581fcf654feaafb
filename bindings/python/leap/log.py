"""The library's log: things worth hearing about that are not the failure of a call (an auto-detected
companion file left out, a cache snapshot ignored). Silent until a callback is set."""
from __future__ import annotations

import atexit
from typing import Any, Callable, Optional

from . import _capi as C
from ._marshal import check

#: Receives (level, message); level is "error", "warning", "info" or "debug". It may run on any thread.
LogCallback = Callable[[str, str], None]

_LEVELS = {"error": C.LEAP_LOG_ERROR, "warning": C.LEAP_LOG_WARNING, "info": C.LEAP_LOG_INFO,
           "debug": C.LEAP_LOG_DEBUG}
_NAMES = {v: k for k, v in _LEVELS.items()}

# The ctypes thunk the library holds; kept alive here until it is replaced. The library returns from a
# replacement only once the old callback's calls on other threads are over, but a callback that replaces
# itself is still running when the replacement returns: the previous thunk stays alive one more round.
_installed: Optional[Any] = None
_retired: Optional[Any] = None


def set_log_callback(callback: Optional[LogCallback], level: str = "warning") -> None:
    """Send the library's messages of `level` and more severe to `callback(level, message)`; None silences
    them. Process-wide. To use Python's logging: ``leap.set_log_callback(lambda lvl, msg:
    logging.getLogger("leap").log(getattr(logging, lvl.upper()), msg))``."""
    global _installed, _retired
    if level not in _LEVELS:
        raise ValueError(f"level must be one of {', '.join(_LEVELS)}, not {level!r}")
    if callback is None:
        check(C.leap_set_log_callback(C.leap_log_callback(), _LEVELS[level], None))
        _retired, _installed = _installed, None
        return
    user = callback

    def thunk(lvl: int, message: Optional[bytes], _user_data: Optional[int]) -> None:
        user(_NAMES.get(lvl, "debug"), (message or b"").decode("utf-8", "replace"))

    c_thunk = C.leap_log_callback(thunk)
    check(C.leap_set_log_callback(c_thunk, _LEVELS[level], None))
    _retired, _installed = _installed, c_thunk


@atexit.register
def _silence_at_exit() -> None:
    # Threads of the library must not call into an interpreter that is shutting down.
    if _installed is not None:
        C.leap_set_log_callback(C.leap_log_callback(), C.LEAP_LOG_ERROR, None)
