"""The chat page at / driven by headless Chromium over the DevTools protocol (a small client on the
websockets package): behind an API key typed into the page, a message gets the chat endpoint's greedy
answer streamed into the page in several pieces; on a model that hears and speaks, the microphone (Chromium's
fake device) is recorded to a WAV the server takes, and the spoken answer's pieces are played as they come.
Skipped, saying so, when Chromium is not installed (apt-get install chromium)."""
import json
import shutil
import subprocess
import time

import httpx
import pytest

from conftest import FIXTURES
from server_process import free_port, start

pytest.importorskip("fastapi")
websockets = pytest.importorskip("websockets")
from websockets.sync.client import connect  # noqa: E402

CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
if CHROMIUM is None:
    pytest.skip("Chromium is not installed (apt-get install chromium): the chat page is not tested",
                allow_module_level=True)

TEXT_MODEL = FIXTURES / "models" / "lfm2-tiny-q8_0.gguf"
MODEL = FIXTURES / "models" / "lfm2-tiny-f32.gguf"
MMPROJ = FIXTURES / "audio_encoder" / "lfm2a-512-f16-q8_0.gguf"
VOCODER, TOKENIZER = FIXTURES / "speech" / "vocoder-tiny.gguf", FIXTURES / "speech" / "tokenizer-tiny.gguf"


class Browser:
    """Headless Chromium and one page, driven over the DevTools protocol."""

    def __init__(self, profile):
        port = free_port()
        self.proc = subprocess.Popen(
            [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
             f"--remote-debugging-port={port}", f"--user-data-dir={profile}", "--autoplay-policy=no-user-gesture-required",
             "--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while True:
            try:
                pages = [t for t in httpx.get(f"http://127.0.0.1:{port}/json/list", timeout=2).json()
                         if t["type"] == "page"]
                if pages:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline or self.proc.poll() is not None:
                self.close()
                raise RuntimeError("Chromium did not start")
            time.sleep(0.1)
        self.ws = connect(pages[0]["webSocketDebuggerUrl"], max_size=None, open_timeout=10).__enter__()
        self.last_id = 0

    def call(self, method, **params):
        self.last_id += 1
        self.ws.send(json.dumps({"id": self.last_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv(timeout=30))
            if msg.get("id") == self.last_id:
                assert "error" not in msg, msg
                return msg["result"]

    def js(self, expression):
        r = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        assert "exceptionDetails" not in r, r
        return r["result"].get("value")

    def wait(self, expression, timeout=30.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = self.js(expression)
            if value:
                return value
            time.sleep(0.05)
        raise AssertionError(f"timed out waiting for {expression}; page: {self.js('document.body.innerText')!r}")

    def open(self, url):
        self.call("Page.navigate", url=url)
        self.wait("document.readyState === 'complete' && !!document.getElementById('send')")

    def type_and_send(self, text):
        self.js(f"document.getElementById('input').value = {json.dumps(text)};"
                "document.getElementById('send').click(); true")

    def answer(self, n):
        """The n-th (1-based) answer once it is complete: its text and how many deltas built it."""
        self.wait(f"document.querySelectorAll('.assistant[data-done]').length >= {n}")
        return self.js(f"(() => {{ const a = document.querySelectorAll('.assistant')[{n - 1}];"
                       "return [a.innerText, Number(a.dataset.deltas || 0),"
                       "[...document.querySelectorAll('.error')].map((e) => e.innerText)]; })()")

    def set_field(self, field_id, value):
        self.js(f"(() => {{ const e = document.getElementById({json.dumps(field_id)}); e.value = {json.dumps(value)};"
                "e.dispatchEvent(new Event('change')); return true; })()")

    def close(self):
        if getattr(self, "ws", None) is not None:
            self.ws.close()
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def browser(tmp_path):
    b = Browser(tmp_path / "profile")
    yield b
    b.close()


def chat(server, headers=None, **body):
    r = httpx.post(server.base + "/v1/chat/completions", json=body, headers=headers or {}, timeout=60)
    assert r.status_code == 200, r.text
    return r.json()["choices"][0]["message"]


def test_a_message_streams_its_answer_into_the_page(browser, tmp_path):
    server = start("--model", TEXT_MODEL, "--ctx-size", 1024, "--api-key", "sesame", log_path=tmp_path / "server.log")
    try:
        key = {"Authorization": "Bearer sesame"}
        first = chat(server, key, messages=[{"role": "user", "content": "Hello there"}], temperature=0,
                     max_tokens=16)["content"]
        second = chat(server, key, messages=[{"role": "user", "content": "Hello there"},
                                             {"role": "assistant", "content": first},
                                             {"role": "user", "content": "And then?"}], temperature=0,
                      max_tokens=16)["content"]
        assert httpx.get(server.base + "/").status_code == 200  # the page itself needs no key
        browser.open(server.base + "/")
        browser.wait("document.getElementById('status').textContent.includes('API key')")
        browser.set_field("api-key", "sesame")
        browser.wait("document.body.dataset.state === 'idle' && document.getElementById('model').textContent")
        assert browser.js("document.getElementById('speak-box').hidden && document.getElementById('mic').hidden")
        browser.set_field("temperature", "0")
        browser.set_field("max-tokens", "16")
        browser.type_and_send("Hello there")
        text, deltas, errors = browser.answer(1)
        assert (text, errors) == (first, [])
        assert deltas > 1  # it arrived in pieces, as they were made
        # The page keeps the conversation: turn 2 carries turn 1.
        browser.type_and_send("And then?")
        text, _, errors = browser.answer(2)
        assert (text, errors) == (second, [])
    finally:
        server.stop()


def test_the_microphone_and_speech(browser, tmp_path):
    server = start("--model", MODEL, "--mmproj", MMPROJ, "--audio-decoder", VOCODER, "--audio-tokenizer", TOKENIZER,
                   "--ctx-size", 1024, log_path=tmp_path / "server.log")
    try:
        expected = chat(server, messages=[{"role": "user", "content": "Hello"}], temperature=0, max_tokens=10,
                        audio_temperature=0, modalities=["text", "audio"],
                        audio={"voice": "us_female", "format": "wav"})["audio"]["transcript"]
        browser.open(server.base + "/")
        browser.wait("document.body.dataset.state === 'idle' && !document.getElementById('speak-box').hidden")
        assert not browser.js("document.getElementById('mic').hidden")
        browser.set_field("temperature", "0")
        browser.set_field("max-tokens", "10")
        browser.set_field("extra", '{"audio_temperature": 0}')  # greedy audio codes: a repeatable answer
        browser.type_and_send("Hello")
        text, _, errors = browser.answer(1)
        assert (text, errors) == (expected, [])
        assert int(browser.wait("document.body.dataset.audioPieces")) > 0  # speech was scheduled as it came
        # Chromium's fake microphone, recorded to a WAV and sent with the next message.
        browser.js("document.getElementById('mic').click(); true")
        browser.wait("document.getElementById('mic').classList.contains('on')")
        time.sleep(1.0)
        browser.js("document.getElementById('mic').click(); true")
        browser.wait("document.getElementById('attachments').textContent.includes('recording')")
        browser.type_and_send("")
        text, _, errors = browser.answer(2)
        assert errors == [] and text
        assert "input_audio" in browser.js("JSON.stringify(state.history[2].content)")
    finally:
        server.stop()


def test_an_image_from_disk(browser, tmp_path):
    PIL = pytest.importorskip("PIL.Image")
    import base64

    vision = FIXTURES / "vision"
    server = start("--model", vision / "lfm2vl-tiny-text-f32.gguf", "--mmproj", vision / "lfm2vl-tiny-mmproj-f32.gguf",
                   "--ctx-size", 4096, log_path=tmp_path / "server.log")
    try:
        picture = tmp_path / "picture.png"
        PIL.new("RGB", (64, 48), (200, 40, 90)).save(picture)
        url = "data:image/png;base64," + base64.b64encode(picture.read_bytes()).decode()
        expected = chat(server, messages=[{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": url}}, {"type": "text", "text": "What is this?"}]}],
            temperature=0, max_tokens=8)["content"]
        browser.open(server.base + "/")
        browser.wait("document.body.dataset.state === 'idle' && !document.getElementById('image').hidden")
        browser.set_field("temperature", "0")
        browser.set_field("max-tokens", "8")
        # The file picker, filled as a user would fill it.
        root = browser.call("DOM.getDocument")["root"]["nodeId"]
        node = browser.call("DOM.querySelector", nodeId=root, selector="#image-file")["nodeId"]
        browser.call("DOM.setFileInputFiles", nodeId=node, files=[str(picture)])
        browser.wait("document.getElementById('attachments').textContent.includes('image')")
        browser.type_and_send("What is this?")
        text, _, errors = browser.answer(1)
        assert (text, errors) == (expected, [])
        assert browser.js("document.querySelector('.user img').src.startsWith('data:image/png;base64,')")
    finally:
        server.stop()
