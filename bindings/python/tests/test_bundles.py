"""LEAP bundles from Python: leap.load_bundle against scripts/bundle_test_server.py on loopback, serving the
tiny LFM2 fixture (the server supports Range, slow, dropping, checksum and 404 modes)."""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Iterator, List, Optional, Tuple

import pytest

import leap
from conftest import FIXTURES, REPO

MODEL = FIXTURES / "models" / "lfm2-tiny-q8_0.gguf"
TEMPLATE = ("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
            "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Tuple[str, Path]]:
    """(base URL, root): the root holds Tiny-GGUF/{lfm2-tiny-q8_0.gguf, Q8_0.json}."""
    root = tmp_path / "root"
    (root / "Tiny-GGUF").mkdir(parents=True)
    shutil.copy(MODEL, root / "Tiny-GGUF" / MODEL.name)
    (root / "Tiny-GGUF" / "Q8_0.json").write_text(json.dumps({
        "schema_version": "1.0.0", "inference_type": "llama.cpp/text-to-text",
        "load_time_parameters": {"model": MODEL.name, "chat_template": TEMPLATE},
        "generation_time_parameters": {"sampling_parameters": {"temperature": 0.0, "repetition_penalty": 1.0},
                                       "number_of_decoding_threads": 1}}))
    server = subprocess.Popen([sys.executable, str(REPO / "scripts" / "bundle_test_server.py"), str(root)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        assert line.startswith("PORT "), line
        yield f"http://127.0.0.1:{int(line.split()[1])}", root
    finally:
        server.kill()
        server.wait()


def folder_of(base: str) -> str:
    """The cache folder of the server's Tiny-GGUF/Q8_0.json: {model}-{quant}@{scheme}-{host:port}."""
    return "Tiny-Q8_0@" + base.replace("://", "-")


def reply(model: leap.Model, options: Optional[leap.GenerationOptions] = None) -> str:
    conv = model.create_conversation()
    events = list(conv.generate_response("Hello there", options or leap.GenerationOptions(max_tokens=10)))
    assert isinstance(events[-1], leap.Complete)
    return events[-1].full_message.text


def test_url_manifest_downloads_with_progress_and_uses_the_manifest_defaults(served, tmp_path):
    base, _ = served
    seen: List[Tuple[str, int, Optional[int]]] = []
    cache = tmp_path / "cache"
    with leap.load_bundle(f"{base}/etag/Tiny-GGUF/Q8_0.json", cache_dir=cache,
                          progress=lambda f, done, total: seen.append((f, done, total))) as model:
        assert (cache / folder_of(base) / MODEL.name).read_bytes() == MODEL.read_bytes()
        size = MODEL.stat().st_size
        assert seen[-1] == (MODEL.name, size, size)
        assert all(a[1] <= b[1] for a, b in zip(seen, seen[1:]))
        assert model.chat_template == TEMPLATE
        # Default options take the manifest's temperature 0 and repetition penalty 1: greedy, as explicit options.
        with leap.load_model(MODEL, chat_template=TEMPLATE) as direct:
            expected = reply(direct, leap.GenerationOptions(temperature=0, repetition_penalty=1.0, max_tokens=10))
        assert reply(model) == expected
    # Cached: the second load downloads nothing.
    seen.clear()
    leap.load_bundle(f"{base}/plain/Tiny-GGUF/Q8_0.json", cache_dir=cache, progress=lambda *a: seen.append(a)).close()
    assert seen == []


def test_path_manifest(served, tmp_path):
    _, root = served
    with leap.load_bundle(root / "Tiny-GGUF" / "Q8_0.json", cache_dir=tmp_path / "c") as model:
        assert model.chat_template == TEMPLATE
    assert not (tmp_path / "c").exists()


def test_prompt_cache_options_reach_the_bundles_model(served, tmp_path):
    _, root = served
    snapshots = tmp_path / "snapshots"
    system = "You are a helpful assistant who answers briefly and precisely."

    def cached_positions(model: leap.Model) -> int:
        events = list(model.create_conversation(system).generate_response("Hello there",
                                                                          leap.GenerationOptions(max_tokens=4)))
        assert isinstance(events[-1], leap.Complete)
        return events[-1].stats.cached_prompt_tokens

    with leap.load_bundle(root / "Tiny-GGUF" / "Q8_0.json", cache_dir=tmp_path / "c",
                          cache=leap.CacheOptions(path=snapshots)) as model:
        assert cached_positions(model) == 0
        model.flush_cache()
    assert list(snapshots.rglob("*.snap"))
    with leap.load_bundle(root / "Tiny-GGUF" / "Q8_0.json", cache_dir=tmp_path / "c",
                          cache=leap.CacheOptions(path=snapshots)) as model:
        assert cached_positions(model) > 10  # restored from the first load's disk snapshot


def test_cancel_from_another_thread_leaves_no_model(served, tmp_path):
    base, _ = served
    cache = tmp_path / "cache"
    token = leap.CancelToken()
    timer = threading.Timer(0.3, token.cancel)
    timer.start()
    with pytest.raises(leap.CancelledError, match="cancelled"):
        leap.load_bundle(f"{base}/slow/Tiny-GGUF/Q8_0.json", cache_dir=cache, cancel=token)
    timer.join()
    assert token.cancelled
    folder = cache / folder_of(base)
    assert not (folder / MODEL.name).exists()
    part = folder / (MODEL.name + ".part")
    assert 0 < part.stat().st_size < MODEL.stat().st_size
    # The next load resumes the .part.
    leap.load_bundle(f"{base}/plain/Tiny-GGUF/Q8_0.json", cache_dir=cache).close()
    assert (folder / MODEL.name).read_bytes() == MODEL.read_bytes()


def test_progress_returning_true_or_raising_cancels(served, tmp_path):
    base, _ = served
    with pytest.raises(leap.CancelledError):
        leap.load_bundle(f"{base}/slow/Tiny-GGUF/Q8_0.json", cache_dir=tmp_path / "a", progress=lambda *a: True)

    def boom(name: str, done: int, total: Optional[int]) -> None:
        raise KeyError("from the callback")

    with pytest.raises(KeyError, match="from the callback"):
        leap.load_bundle(f"{base}/slow/Tiny-GGUF/Q8_0.json", cache_dir=tmp_path / "b", progress=boom)


def test_download_errors(served, tmp_path):
    base, _ = served
    with pytest.raises(leap.LeapIOError, match="HTTP 404"):
        leap.load_bundle(f"{base}/missing/Tiny-GGUF/Q8_0.json", cache_dir=tmp_path)
    with pytest.raises(leap.LeapIOError, match="SHA-256 mismatch"):
        leap.load_bundle(f"{base}/badetag/Tiny-GGUF/Q8_0.json", cache_dir=tmp_path)
    assert not (tmp_path / folder_of(base)).exists()  # the cache folder made for the failed loads is gone
    bad = tmp_path / "bad.json"
    bad.write_text('{"load_time_parameters": {"model": "m.gguf"}, "generation_time_parameters": {"sampling_parameters": {"top_p": 2}}}')
    with pytest.raises(leap.FormatError, match="sampling_parameters.top_p must be in 0...1, got 2.0"):
        leap.load_bundle(bad)


def test_without_libcurl_the_library_loads_and_says_so(served, tmp_path):
    base, root = served
    code = f"""
import leap
leap.load_bundle({str(root / "Tiny-GGUF" / "Q8_0.json")!r}, cache_dir={str(tmp_path)!r}).close()  # no download: fine
try:
    leap.load_bundle({base + "/plain/Tiny-GGUF/Q8_0.json"!r}, cache_dir={str(tmp_path)!r})
except leap.UnsupportedError as e:
    print(e)
"""
    env = dict(os.environ, LEAP_LIBCURL="/nonexistent/libcurl.so.4",
               PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert "downloading needs /nonexistent/libcurl.so.4 (libcurl)" in out
    assert "apt-get install libcurl4" in out


def test_log_tells_about_unknown_keys_and_resumes(served, tmp_path):
    base, _ = served
    manifest = tmp_path / "typo.json"
    manifest.write_text(json.dumps({"load_time_parameters": {"model": f"{base}/drop/Tiny-GGUF/{MODEL.name}",
                                                             "mmproj": "x.gguf"}}))
    messages: List[Tuple[str, str]] = []
    leap.set_log_callback(lambda level, msg: messages.append((level, msg)), level="info")
    try:
        leap.load_bundle(manifest, cache_dir=tmp_path / "cache").close()
    finally:
        leap.set_log_callback(None)
    assert ("warning", "bundle manifest: unknown key load_time_parameters.mmproj ignored") in messages
    half = MODEL.stat().st_size // 2
    assert any(lvl == "info" and f"the connection was closed after {half} bytes; resuming (attempt 2 of 3)" in m
               for lvl, m in messages), messages


def test_a_planted_file_in_the_cache_is_checked_and_replaced(served, tmp_path):
    base, root = served
    cache = tmp_path / "cache"
    # A manifest pinning the model's SHA-256 and size; the cache already holds another file under its name.
    digest = hashlib.sha256(MODEL.read_bytes()).hexdigest()
    manifest = tmp_path / "Tiny-GGUF" / "Q8_0.json"
    manifest.parent.mkdir()
    manifest.write_text(json.dumps({"load_time_parameters": {"model": {
        "url": f"{base}/plain/Tiny-GGUF/{MODEL.name}", "sha256": digest, "size": MODEL.stat().st_size}}}))
    planted = cache / "Tiny-Q8_0" / MODEL.name
    planted.parent.mkdir(parents=True)
    planted.write_bytes(b"GGUF" + bytes(100))
    seen: List[Tuple[str, int, Optional[int]]] = []
    leap.load_bundle(manifest, cache_dir=cache, progress=lambda *a: seen.append(a)).close()
    assert planted.read_bytes() == MODEL.read_bytes()
    assert seen and seen[-1][1] == MODEL.stat().st_size  # downloaded again
    seen.clear()
    leap.load_bundle(manifest, cache_dir=cache, progress=lambda *a: seen.append(a)).close()
    assert seen == []  # verified once, then trusted by its record


def test_gzip_and_silent_servers(served, tmp_path):
    base, _ = served
    manifest = tmp_path / "m" / "Q8_0.json"
    manifest.parent.mkdir()
    manifest.write_text(json.dumps({"load_time_parameters": {"model": f"{base}/gzip/Tiny-GGUF/{MODEL.name}"}}))
    with pytest.raises(leap.LeapIOError, match="Content-Encoding: gzip"):
        leap.load_bundle(manifest, cache_dir=tmp_path / "cache")
    assert not list((tmp_path / "cache").rglob("*.gguf*"))
    # A server that sends nothing: the progress callback still runs, and cancels, within seconds (not the
    # 30 s stall timeout).
    manifest.write_text(json.dumps({"load_time_parameters": {"model": f"{base}/silent/Tiny-GGUF/{MODEL.name}"}}))
    start = time.monotonic()
    with pytest.raises(leap.CancelledError):
        leap.load_bundle(manifest, cache_dir=tmp_path / "cache", progress=lambda *a: True)
    assert time.monotonic() - start < 5


def test_a_write_that_fails_is_reported_and_keeps_what_was_written(served, tmp_path):
    # A process whose file size limit is 100000 bytes (RLIMIT_FSIZE; SIGXFSZ ignored, so writes past it fail
    # with EFBIG): the download stops with the reason, and the .part keeps the bytes written, to resume.
    base, _ = served
    cache = tmp_path / "cache"
    code = f"""
import resource, signal
import leap
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (100000, 100000))
try:
    leap.load_bundle({base + "/plain/Tiny-GGUF/Q8_0.json"!r}, cache_dir={str(cache)!r})
except leap.LeapIOError as e:
    print(e)
"""
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
                         timeout=120).stdout
    assert "(the file size limit was reached)" in out, out
    part = cache / folder_of(base) / (MODEL.name + ".part")
    assert part.stat().st_size == 100000
    leap.load_bundle(f"{base}/plain/Tiny-GGUF/Q8_0.json", cache_dir=cache).close()
    assert (cache / folder_of(base) / MODEL.name).read_bytes() == MODEL.read_bytes()
