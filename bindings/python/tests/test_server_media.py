"""leap-server with images and audio: each image format OpenAI accepts (made with Pillow) on the tiny
LFM2-VL fixture, WAV input on the tiny LFM2 + lfm2a encoder fixture, each against the in-process API, and
the media a server refuses (undecodable, too large, stereo, not WAV, remote, on a model that cannot take it)."""
import base64
import io
import json
import wave

import httpx
import pytest

import leap
from conftest import FIXTURES
from server_process import start

pytest.importorskip("fastapi")
openai = pytest.importorskip("openai")
np = pytest.importorskip("numpy")
PIL = pytest.importorskip("PIL.Image")

VISION = FIXTURES / "vision"
VL_MODEL, VL_MMPROJ = VISION / "lfm2vl-tiny-text-f32.gguf", VISION / "lfm2vl-tiny-mmproj-f32.gguf"
AUDIO = FIXTURES / "audio_encoder"
A_MODEL, A_MMPROJ = FIXTURES / "models" / "lfm2-tiny-f32.gguf", AUDIO / "lfm2a-512-f16-q8_0.gguf"
GREEDY = {"temperature": 0, "extra_body": {"repetition_penalty": 1}}


def pattern(width, height, alpha=False):
    y, x, c = np.meshgrid(np.arange(height), np.arange(width), np.arange(4 if alpha else 3), indexing="ij")
    px = ((37 * x + 91 * y + 53 * c + 29 * (x ^ y)) % 256).astype(np.uint8)
    if alpha:
        px[..., 3] = np.where(x[..., 0] < width // 2, 255, 0)
    return PIL.fromarray(px, "RGBA" if alpha else "RGB")


def encoded(img, fmt, **kw):
    out = io.BytesIO()
    img.save(out, format=fmt, **kw)
    return out.getvalue()


def data_url(data, mime):
    return f"data:{mime};base64,{base64.b64encode(data).decode()}"


def image_message(url, text="Describe this image."):
    return [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}}, {"type": "text", "text": text}]}]


@pytest.fixture(scope="module")
def vision(tmp_path_factory):
    s = start("--model", VL_MODEL, "--mmproj", VL_MMPROJ, "--ctx-size", 4096, "--max-image-pixels", 1 << 20,
              log_path=tmp_path_factory.mktemp("vision") / "server.log")
    yield s
    s.stop()


@pytest.fixture(scope="module")
def hearing(tmp_path_factory):
    s = start("--model", A_MODEL, "--mmproj", A_MMPROJ, "--max-audio-seconds", 3,
              log_path=tmp_path_factory.mktemp("audio") / "server.log")
    yield s
    s.stop()


def post(server, body):
    return httpx.post(server.base + "/v1/chat/completions", json=body, timeout=120)


def test_each_image_format(vision):
    img = pattern(96, 64)
    jpeg = encoded(img, "JPEG", quality=95)
    with leap.load_model(VL_MODEL, context_size=4096, mmproj_path=str(VL_MMPROJ)) as model:
        conv = model.create_conversation()
        events = list(conv.generate_response(
            leap.ChatMessage("user", [leap.Image(jpeg), leap.Text("Describe this image.")]),
            leap.GenerationOptions(temperature=0, repetition_penalty=1, max_tokens=12)))
    expected = "".join(e.text for e in events if isinstance(e, leap.Chunk))
    expected_prompt = events[-1].stats.prompt_tokens + events[-1].stats.cached_prompt_tokens
    client = vision.client()
    r = client.chat.completions.create(model="", messages=image_message(data_url(jpeg, "image/jpeg")), max_tokens=12,
                                       **GREEDY)
    # A JPEG reaches the model as it came: the answer of the Python API to the same bytes.
    assert r.choices[0].message.content == expected and r.usage.prompt_tokens == expected_prompt
    for fmt, mime, kw in (("PNG", "image/png", {}), ("WEBP", "image/webp", {"lossless": True}),
                          ("GIF", "image/gif", {}), ("PNG", "image/png", {"alpha": True})):
        src = pattern(96, 64, alpha=True) if kw.pop("alpha", False) else img
        r = client.chat.completions.create(model="", messages=image_message(data_url(encoded(src, fmt, **kw), mime)),
                                           max_tokens=4, **GREEDY)
        # The same size of image: the same number of image tokens in the prompt.
        assert r.usage.prompt_tokens == expected_prompt, fmt
        assert r.usage.completion_tokens == 4
    # A mislabelled image is read by its bytes.
    r = client.chat.completions.create(model="", messages=image_message(data_url(encoded(img, "PNG"), "image/jpeg")),
                                       max_tokens=2, **GREEDY)
    assert r.usage.prompt_tokens == expected_prompt


def test_images_the_server_refuses(vision):
    jpeg = encoded(pattern(96, 64), "JPEG")
    cases = [
        (data_url(b"\x89PNG\r\n\x1a\nnot really", "image/png"), "invalid_image"),
        (data_url(jpeg[: len(jpeg) // 2], "image/jpeg"), "invalid_image"),
        (data_url(b"plain text", "text/plain"), "invalid_image"),
        (data_url(encoded(PIL.new("RGB", (2048, 1024)), "PNG"), "image/png"), "image_too_large"),
        ("data:image/png;base64,@@@@", "invalid_value"),
        ("http://127.0.0.1:1/cat.png", "remote_media_disabled"),
        ("file:///etc/passwd", "invalid_url"),
    ]
    for url, code in cases:
        r = post(vision, {"messages": image_message(url), "max_tokens": 2})
        assert r.status_code == 400, (code, r.text)
        err = r.json()["error"]
        assert (err["code"], err["param"]) == (code, "messages[0].content[0].image_url.url"), err
    r = post(vision, {"messages": [{"role": "system", "content": [
        {"type": "image_url", "image_url": {"url": data_url(jpeg, "image/jpeg")}}]}, {"role": "user", "content": "hi"}]})
    assert r.status_code == 400 and r.json()["error"]["param"] == "messages[0].content[0].type"
    r = post(vision, {"messages": [{"role": "user", "content": [{"type": "input_audio", "input_audio": {
        "data": base64.b64encode((AUDIO / "clip_1s37.wav").read_bytes()).decode(), "format": "wav"}}]}]})
    assert r.status_code == 400 and r.json()["error"]["code"] == "unsupported_content"
    assert "cannot take audio" in r.json()["error"]["message"]
    r = post(vision, {"messages": image_message(data_url(jpeg, "image/jpeg")), "max_tokens": 2})
    assert r.status_code == 200


def wav_bytes(samples, rate, channels=1):
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes((np.asarray(samples) * 32767).astype("<i2").tobytes())
    return out.getvalue()


def audio_message(data, fmt="wav"):
    return [{"role": "system", "content": "Perform ASR."},
            {"role": "user", "content": [{"type": "input_audio", "input_audio": {
                "data": base64.b64encode(data).decode(), "format": fmt}}]}]


def test_audio_input_equals_the_python_api(hearing):
    wav = (AUDIO / "clip_1s37.wav").read_bytes()
    with leap.load_model(A_MODEL, mmproj_path=str(A_MMPROJ)) as model:
        conv = model.create_conversation("Perform ASR.")
        events = list(conv.generate_response(leap.ChatMessage("user", [leap.Audio(wav)]),
                                             leap.GenerationOptions(temperature=0, repetition_penalty=1, max_tokens=10)))
    expected = "".join(e.text for e in events if isinstance(e, leap.Chunk))
    r = hearing.client().chat.completions.create(model="", messages=audio_message(wav), max_tokens=10, **GREEDY)
    assert r.choices[0].message.content == expected
    assert r.usage.prompt_tokens == events[-1].stats.prompt_tokens + events[-1].stats.cached_prompt_tokens


def test_audio_the_server_refuses(hearing):
    tone = 0.3 * np.sin(np.arange(16000) * 0.05)
    stereo = np.repeat(tone, 2)
    cases = [
        (wav_bytes(stereo, 16000, channels=2), "wav", "invalid_audio", "data"),
        (b"ID3\x03\x00\x00\x00not a wav at all", "wav", "invalid_audio", "data"),
        ((AUDIO / "clip_4s.wav").read_bytes(), "wav", "audio_too_long", "data"),
        (wav_bytes(tone, 16000), "mp3", "unsupported_value", "format"),
    ]
    for data, fmt, code, field in cases:
        r = post(hearing, {"messages": audio_message(data, fmt), "max_tokens": 2})
        assert r.status_code == 400, (code, r.text)
        err = r.json()["error"]
        assert (err["code"], err["param"]) == (code, f"messages[1].content[0].input_audio.{field}"), err
    r = post(hearing, {"messages": image_message(data_url(encoded(pattern(8, 8), "PNG"), "image/png"))})
    assert r.status_code == 400 and "cannot take images" in r.json()["error"]["message"]
    r = post(hearing, {"messages": audio_message(wav_bytes(tone, 16000)), "max_tokens": 2})
    assert r.status_code == 200 and json.loads(r.text)["usage"]["completion_tokens"] == 2
