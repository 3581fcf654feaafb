"""The prompt cache (leap.CacheOptions) and explicit conversation state files on the tiny random-weight LFM2
file: a restarted model restores the system prompt's state (cached_prompt_tokens) and answers as an uncached
one; two processes writing one folder at once leave only whole, loadable snapshots within the caps;
damaged or foreign state files are refused."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import leap
from conftest import FIXTURES

TINY = FIXTURES / "models" / "lfm2-tiny-f32.gguf"
OTHER = FIXTURES / "models" / "lfm2-tiny-q8_0.gguf"
GREEDY = leap.GenerationOptions(temperature=0.0, max_tokens=8, repetition_penalty=1.0)
SYSTEM = "You are a careful assistant. Keep every answer short and never change the subject."
BINDINGS = Path(__file__).resolve().parents[1]


def run(conv, prompt):
    events = list(conv.generate_response(prompt, GREEDY))
    assert isinstance(events[-1], leap.Complete)
    return "".join(e.text for e in events if isinstance(e, leap.Chunk)), events[-1].stats


def snapshots(root):
    return sorted(p for p in Path(root).rglob("*.snap") if not p.name.startswith("."))


def test_a_restarted_model_restores_the_system_prompt(tmp_path):
    with leap.load_model(TINY, context_size=256) as plain:
        expected, plain_stats = run(plain.create_conversation(SYSTEM), "What is two plus two?")
    cache = leap.CacheOptions(path=tmp_path)
    with leap.load_model(TINY, context_size=256, cache=cache) as first:
        text, stats = run(first.create_conversation(SYSTEM), "What is two plus two?")
        assert stats.cached_prompt_tokens == 0
        first.flush_cache()
    assert len(snapshots(tmp_path)) == 1
    with leap.load_model(TINY, context_size=256, cache=cache) as second:
        text, stats = run(second.create_conversation(SYSTEM), "What is two plus two?")
        assert text == expected
        assert stats.cached_prompt_tokens > 20
        assert stats.cached_prompt_tokens + stats.prompt_tokens == plain_stats.prompt_tokens


def test_cache_is_off_by_default_and_memory_only_works(tmp_path):
    with leap.load_model(TINY, context_size=256, cache=leap.CacheOptions(path=tmp_path, enabled=False)) as m:
        run(m.create_conversation(SYSTEM), "Hi")
        run(m.create_conversation(SYSTEM), "Hi")
    assert snapshots(tmp_path) == []
    with leap.load_model(TINY, context_size=256, cache=leap.CacheOptions(disk=False)) as m:
        _, a = run(m.create_conversation(SYSTEM), "Hi")
        _, b = run(m.create_conversation(SYSTEM), "Hello")
        assert a.cached_prompt_tokens == 0 and b.cached_prompt_tokens > 20


def test_bad_cache_options_are_clear_errors(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_bytes(b"x")
    with pytest.raises(leap.LeapIOError, match="file"):
        leap.load_model(TINY, cache=leap.CacheOptions(path=blocker / "cache"))
    with pytest.raises(leap.InvalidArgumentError):
        leap.load_model(TINY, cache=leap.CacheOptions())  # disk cache without a path
    with pytest.raises(leap.InvalidArgumentError):
        leap.load_model(TINY, cache=leap.CacheOptions(path=tmp_path, max_entries_disk=0))


WORKER = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import leap
model_path, root, tag = sys.argv[2], sys.argv[3], sys.argv[4]
systems = ["System prompt number %d: answer briefly, in English, without lists." % i for i in range(5)]
greedy = leap.GenerationOptions(temperature=0.0, max_tokens=4, repetition_penalty=1.0)
cached = []
with leap.load_model(model_path, context_size=256,
                     cache=leap.CacheOptions(path=root, max_entries_disk=3, max_entries_memory=0)) as m:
    for round in range(3):
        for s in (systems if tag == "a" else systems[::-1]):
            events = list(m.create_conversation(s).generate_response("Question from %s" % tag, greedy))
            cached.append(events[-1].stats.cached_prompt_tokens)
print(json.dumps(cached))
"""


def test_two_processes_share_one_folder(tmp_path):
    env = dict(os.environ)
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, str(BINDINGS), str(TINY), str(tmp_path), tag],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env) for tag in ("a", "b")]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err.decode()
        results.append(json.loads(out))
    # Both wrote and read the shared folder while the other evicted from it; at the end it is within its cap,
    # holds no temporary file, and every snapshot in it is whole: it loads as a conversation state.
    assert all(len(r) == 15 for r in results)
    files = snapshots(tmp_path)
    assert 1 <= len(files) <= 3
    folder = files[0].parent
    assert [p.name for p in folder.iterdir() if p.name.startswith(".tmp-")] == []
    with leap.load_model(TINY, context_size=256) as m:
        for f in files:
            m.create_conversation(SYSTEM).load_state(f)


def test_explicit_state_files(tmp_path):
    path = tmp_path / "state.snap"
    with leap.load_model(TINY, context_size=256) as m:
        conv = m.create_conversation(SYSTEM)
        with pytest.raises(leap.InvalidArgumentError):
            conv.save_state(path)  # nothing evaluated yet
        run(conv, "What is two plus two?")
        conv.save_state(path)
        expected, _ = run(conv, "And three plus three?")
        history = conv.export_json()[:3]
    with leap.load_model(TINY, context_size=256) as later:
        restored = later.create_conversation_from_history(history)
        restored.load_state(path)
        text, stats = run(restored, "And three plus three?")
        assert text == expected
        assert stats.cached_prompt_tokens > 30
        damaged = bytearray(path.read_bytes())
        damaged[len(damaged) // 2] ^= 0x40
        (tmp_path / "damaged.snap").write_bytes(bytes(damaged))
        (tmp_path / "short.snap").write_bytes(path.read_bytes()[:-10])
        for bad in ("damaged.snap", "short.snap"):
            with pytest.raises(leap.FormatError):
                later.create_conversation(SYSTEM).load_state(tmp_path / bad)
        with pytest.raises(leap.LeapIOError):
            later.create_conversation(SYSTEM).load_state(tmp_path / "missing.snap")
        # A FIFO is refused at once (reading it would wait for a writer for good).
        os.mkfifo(tmp_path / "fifo.snap")
        with pytest.raises(leap.LeapIOError, match="not a regular file"):
            later.create_conversation(SYSTEM).load_state(tmp_path / "fifo.snap")
    with leap.load_model(OTHER, context_size=256) as other:
        with pytest.raises(leap.FormatError, match="another model"):
            other.create_conversation(SYSTEM).load_state(path)


def test_a_damaged_snapshot_is_ignored_and_reported(tmp_path):
    cache = leap.CacheOptions(path=tmp_path, max_entries_memory=0)
    with leap.load_model(TINY, context_size=256, cache=cache) as m:
        _, expected = run(m.create_conversation(SYSTEM), "Hi")
        m.flush_cache()
    [snap] = snapshots(tmp_path)
    data = bytearray(snap.read_bytes())
    data[-5] ^= 0x01
    snap.write_bytes(bytes(data))
    received = []
    leap.set_log_callback(lambda level, message: received.append((level, message)), level="warning")
    try:
        with leap.load_model(TINY, context_size=256, cache=cache) as m:
            _, stats = run(m.create_conversation(SYSTEM), "Hi")
    finally:
        leap.set_log_callback(None)
    assert stats.cached_prompt_tokens == 0  # recomputed, never loaded
    assert any(level == "warning" and "ignored snapshot" in msg and "damaged" in msg for level, msg in received), received
    assert not snap.exists() or snap.read_bytes() != bytes(data)  # removed (and written again by the miss)
