"""The log callback across threads: replacing it while another thread is inside it, and a callback that
silences the log from inside itself. The warnings come from a bundle manifest with an unknown key that
names a missing model (each load parses it, warns, and fails)."""
import threading
import time
from pathlib import Path

import pytest

import leap


@pytest.fixture
def manifest(tmp_path: Path) -> str:
    path = tmp_path / "Q8_0.json"
    path.write_text('{"load_time_parameters": {"model": "gone.gguf"}, "misspelt_key": 1}')
    return str(path)


def warn_once(manifest: str) -> None:
    with pytest.raises(leap.LeapIOError, match="gone.gguf"):
        leap.load_bundle(manifest)


def test_a_callback_may_silence_the_log_from_inside_itself(manifest):
    calls = []

    def once(level, message):
        calls.append((level, message))
        leap.set_log_callback(None)  # the thunk running now must outlive this replacement

    leap.set_log_callback(once)
    warn_once(manifest)
    warn_once(manifest)
    assert len(calls) == 1
    assert calls[0][0] == "warning" and "misspelt_key" in calls[0][1]


def test_a_replaced_callback_is_not_running_and_never_called_again(manifest):
    state = {"inside": False, "calls": 0, "overlapped": 0}
    stop = threading.Event()

    def slow(level, message):
        state["inside"] = True
        state["calls"] += 1
        time.sleep(0.03)  # long enough for the main thread to replace the callback meanwhile
        state["inside"] = False

    def produce():
        while not stop.is_set():
            with pytest.raises(leap.LeapIOError):
                leap.load_bundle(manifest)

    producer = threading.Thread(target=produce)
    try:
        leap.set_log_callback(slow)
        producer.start()
        for i in range(3):
            deadline = time.monotonic() + 10
            while not state["inside"] and time.monotonic() < deadline:
                time.sleep(0.001)
            assert state["inside"], "the producer's warnings reach the callback"
            leap.set_log_callback(None)
            if state["inside"]:
                state["overlapped"] += 1
            calls = state["calls"]
            time.sleep(0.05)
            assert state["calls"] == calls, "no call after the callback was removed"
            leap.set_log_callback(slow)
    finally:
        leap.set_log_callback(None)
        stop.set()
        if producer.is_alive():
            producer.join()
    assert state["overlapped"] == 0
