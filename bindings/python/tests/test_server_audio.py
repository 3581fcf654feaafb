"""leap-server's speech: chat answers with audio (message.audio and streamed delta.audio, speech-to-speech
from an input_audio part), /v1/audio/speech (WAV, PCM, SSE) and /v1/audio/transcriptions (json, text,
verbose_json, streamed), each against the in-process Python API on the same tiny model (LFM2 with the
lfm2a audio encoder and LFM2.5-Audio's vocoder and tokenizer fixtures); and the requests refused: speech
from a model that cannot speak or hear, containers other than WAV, unknown voices and formats."""
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

MODEL = FIXTURES / "models" / "lfm2-tiny-f32.gguf"
MMPROJ = FIXTURES / "audio_encoder" / "lfm2a-512-f16-q8_0.gguf"
VOCODER, TOKENIZER = FIXTURES / "speech" / "vocoder-tiny.gguf", FIXTURES / "speech" / "tokenizer-tiny.gguf"
CLIP = FIXTURES / "audio_encoder" / "clip_1s37.wav"
TEXT_MODEL = FIXTURES / "models" / "lfm2-tiny-q8_0.gguf"
MAX_TOKENS = 40
# Greedy text and audio codes (extensions of the chat request, as top_k is).
GREEDY = {"temperature": 0, "extra_body": {"repetition_penalty": 1, "audio_temperature": 0}}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = start("--model", MODEL, "--mmproj", MMPROJ, "--audio-decoder", VOCODER, "--audio-tokenizer", TOKENIZER,
              "--ctx-size", 1024, "--max-tokens", MAX_TOKENS, log_path=tmp_path_factory.mktemp("speech") / "server.log")
    yield s
    s.stop()


@pytest.fixture(scope="module")
def model():
    with leap.load_model(MODEL, context_size=1024, mmproj_path=str(MMPROJ), audio_decoder_path=str(VOCODER),
                         audio_tokenizer_path=str(TOKENIZER)) as m:
        yield m


def quantized(samples):
    """PCM16 as the server documents it: round(clamp(x, -1, 1) * 32767), ties to even."""
    x = np.clip(np.asarray(samples, dtype=np.float64), -1, 1)
    return np.rint(x * 32767).astype("<i2").tobytes()


def generate(model, system, message, **options):
    """(text, PCM16 bytes, Complete) of the Python API's answer."""
    conv = model.create_conversation(system)
    events = list(conv.generate_response(message, leap.GenerationOptions(function_call_parser=None, **options)))
    text = "".join(e.text for e in events if isinstance(e, leap.Chunk))
    samples = [x for e in events if isinstance(e, leap.AudioSample) for x in e.samples]
    assert all(e.sample_rate == 24000 for e in events if isinstance(e, leap.AudioSample))
    return text, quantized(samples), events[-1]


def wav_frames(data):
    with wave.open(io.BytesIO(data)) as w:
        assert (w.getframerate(), w.getnchannels(), w.getsampwidth()) == (24000, 1, 2)
        return w.readframes(w.getnframes())


def sse_events(response):
    out = []
    for line in response.iter_lines():
        if line.startswith("data: ") and line != "data: [DONE]":
            out.append(json.loads(line[6:]))
    return out


def error_of(r, status=400):
    assert r.status_code == status, r.text
    return r.json()["error"]


# ---- Chat with audio out -------------------------------------------------------------------------


def test_chat_audio_equals_the_python_api(server, model):
    text, pcm, complete = generate(model, "Respond with interleaved text and audio.", "Hello", temperature=0,
                                   repetition_penalty=1, audio_temperature=0, max_tokens=30)
    assert len(pcm) > 10000  # the tiny model speaks in this many steps
    client = server.client()
    messages = [{"role": "user", "content": "Hello"}]
    r = client.chat.completions.create(model="", messages=messages, modalities=["text", "audio"],
                                       audio={"voice": "alloy", "format": "wav"}, max_tokens=30, **GREEDY)
    msg = r.choices[0].message
    # OpenAI's shape: no content, the text is the audio's transcript.
    assert msg.content is None and msg.audio.transcript == text and msg.audio.id.startswith("audio_")
    assert msg.audio.expires_at > 0
    assert wav_frames(base64.b64decode(msg.audio.data)) == pcm
    assert r.usage.completion_tokens == complete.stats.completion_tokens
    # pcm16: the raw samples.
    r = client.chat.completions.create(model="", messages=messages, modalities=["text", "audio"],
                                       audio={"voice": "us_male", "format": "pcm16"}, max_tokens=30, **GREEDY)
    assert base64.b64decode(r.choices[0].message.audio.data) == pcm
    # Streamed: transcript and data pieces as they are made, the id first, expires_at last.
    stream = client.chat.completions.create(model="", messages=messages, modalities=["text", "audio"],
                                            audio={"voice": "alloy", "format": "pcm16"}, max_tokens=30, stream=True,
                                            **GREEDY)
    audio = [c.choices[0].delta.model_extra.get("audio") or getattr(c.choices[0].delta, "audio", None)
             for c in stream if c.choices]
    audio = [a if isinstance(a, dict) else a.model_dump(exclude_none=True) for a in audio if a]
    assert "id" in audio[0] and all("id" not in a for a in audio[1:])
    assert set(audio[-1]) == {"expires_at"}
    pieces = [a["data"] for a in audio if "data" in a]
    assert len(pieces) > 5 and all(len(base64.b64decode(p)) % 2 == 0 for p in pieces)
    assert b"".join(base64.b64decode(p) for p in pieces) == pcm
    assert base64.b64decode("".join(pieces)) == pcm  # the strings concatenate too
    assert "".join(a.get("transcript", "") for a in audio) == text


def test_speech_to_speech_streams_the_python_apis_answer(server, model):
    wav = CLIP.read_bytes()
    text, pcm, _ = generate(model, "Respond with interleaved text and audio.",
                            leap.ChatMessage("user", [leap.Audio(wav)]), temperature=0, repetition_penalty=1,
                            audio_temperature=0, max_tokens=24)
    assert pcm
    body = {"messages": [{"role": "user", "content": [{"type": "input_audio", "input_audio": {
        "data": base64.b64encode(wav).decode(), "format": "wav"}}]}], "modalities": ["text", "audio"],
        "audio": {"voice": "alloy", "format": "pcm16"}, "stream": True, "max_tokens": 24, "temperature": 0,
        "repetition_penalty": 1, "audio_temperature": 0}
    with httpx.stream("POST", server.base + "/v1/chat/completions", json=body, timeout=60) as r:
        assert r.status_code == 200
        chunks = sse_events(r)
    deltas = [c["choices"][0]["delta"].get("audio") for c in chunks if c["choices"]]
    got = b"".join(base64.b64decode(d["data"]) for d in deltas if d and "data" in d)
    assert got == pcm
    assert "".join(d.get("transcript", "") for d in deltas if d) == text
    # A system prompt of the client's own is kept; the answer is still spoken (interleaved).
    body.update(stream=False, messages=[{"role": "system", "content": "Be brief."}, *body["messages"]])
    r = httpx.post(server.base + "/v1/chat/completions", json=body, timeout=60)
    assert r.status_code == 200 and r.json()["choices"][0]["message"]["audio"]["data"]


def test_text_only_chat_on_a_model_that_speaks(server, model):
    text, pcm, _ = generate(model, "Respond with interleaved text and audio.", "Hello", temperature=0,
                            repetition_penalty=1, audio_mode="text", max_tokens=12)
    assert not pcm
    r = server.client().chat.completions.create(
        model="", messages=[{"role": "system", "content": "Respond with interleaved text and audio."},
                            {"role": "user", "content": "Hello"}], max_tokens=12, **GREEDY)
    assert r.choices[0].message.content == text and r.choices[0].message.audio is None


# ---- /v1/audio/speech ----------------------------------------------------------------------------


def speaking_seed(model, system, text):
    """A seed for which the tiny model, sampling its text at temperature 2, starts speaking (writes
    <|audio_start|>) within MAX_TOKENS steps: its random weights rarely do so greedily."""
    for seed in range(1000):
        _, pcm, complete = generate(model, system, text, temperature=2, rng_seed=seed, audio_temperature=0,
                                    max_tokens=MAX_TOKENS)
        if pcm:
            return seed, pcm, complete
    pytest.fail("no seed makes the tiny model speak")


def test_speech_equals_the_python_api(server, model):
    seed, pcm, complete = speaking_seed(model, "Perform TTS. Use the UK female voice.", "Good morning")
    client = server.client()
    extra = {"seed": seed, "temperature": 2, "audio_temperature": 0}
    r = client.audio.speech.create(model="", input="Good morning", voice="uk_female", response_format="wav",
                                   extra_body=extra)
    assert r.response.headers["content-type"] == "audio/wav"
    assert wav_frames(r.content) == pcm
    r = client.audio.speech.create(model="", input="Good morning", voice="UK female", response_format="pcm",
                                   extra_body=extra)
    assert r.content == pcm
    # SSE: base64 deltas of the same bytes, then done with the usage.
    with httpx.stream("POST", server.base + "/v1/audio/speech", timeout=60, json={
            "input": "Good morning", "voice": "uk-female", "response_format": "pcm", "stream_format": "sse", **extra}) as r:
        events = sse_events(r)
    assert [e["type"] for e in events[:-1]] == ["speech.audio.delta"] * (len(events) - 1)
    assert b"".join(base64.b64decode(e["audio"]) for e in events[:-1]) == pcm
    assert events[-1]["type"] == "speech.audio.done" and events[-1]["usage"]["output_tokens"] == complete.stats.completion_tokens
    # OpenAI's voice names map onto the four (fable: UK male).
    seed, pcm, _ = speaking_seed(model, "Perform TTS. Use the UK male voice.", "Hi")
    r = client.audio.speech.create(model="", input="Hi", voice="fable", response_format="pcm",
                                   extra_body={"seed": seed, "temperature": 2, "audio_temperature": 0})
    assert r.content == pcm


# ---- /v1/audio/transcriptions --------------------------------------------------------------------


def test_transcription_equals_the_python_api(server, model):
    text, _, complete = generate(model, "Perform ASR.", leap.ChatMessage("user", [leap.Audio(CLIP.read_bytes())]),
                                 temperature=0, max_tokens=MAX_TOKENS)
    client = server.client()
    with CLIP.open("rb") as f:
        r = client.audio.transcriptions.create(model="", file=f)
    assert r.text == text
    assert r.usage.output_tokens == complete.stats.completion_tokens
    with CLIP.open("rb") as f:
        assert client.audio.transcriptions.create(model="", file=f, response_format="text") == text
    with CLIP.open("rb") as f:
        r = client.audio.transcriptions.create(model="", file=f, response_format="verbose_json", language="en")
    assert r.text == text and r.language == "en" and abs(r.duration - 21920 / 16000) < 1e-6
    with CLIP.open("rb") as f:
        events = list(client.audio.transcriptions.create(model="", file=f, stream=True))
    assert [e.type for e in events] == ["transcript.text.delta"] * (len(events) - 1) + ["transcript.text.done"]
    assert "".join(e.delta for e in events[:-1]) == text and events[-1].text == text


# ---- Refused -------------------------------------------------------------------------------------


def test_what_the_speech_endpoints_refuse(server):
    base = server.base
    chat = {"messages": [{"role": "user", "content": "Hi"}], "modalities": ["text", "audio"], "max_tokens": 2}
    cases = [
        ({**chat, "audio": {"format": "mp3"}}, "unsupported_value", "audio.format"),
        ({**chat, "audio": {"format": "wav"}, "stream": True}, "unsupported_value", "audio.format"),
        ({**chat, "audio": {"voice": "robot"}}, "unsupported_value", "audio.voice"),
        ({**chat, "audio_temperature": -1}, "invalid_value", "audio_temperature"),
    ]
    for body, code, param in cases:
        err = error_of(httpx.post(base + "/v1/chat/completions", json=body, timeout=30))
        assert (err["code"], err["param"]) == (code, param), err
    speech = {"input": "Hi", "voice": "alloy"}
    cases = [
        ({**speech, "response_format": "mp3"}, "unsupported_value", "response_format"),
        ({**speech, "voice": "robot"}, "unsupported_value", "voice"),
        ({**speech, "speed": 2}, "unsupported_value", "speed"),
        ({**speech, "input": " "}, "invalid_value", "input"),
        ({"voice": "alloy"}, "missing_required_parameter", "input"),
        ({**speech, "stream_format": "ogg"}, "invalid_value", "stream_format"),
    ]
    for body, code, param in cases:
        err = error_of(httpx.post(base + "/v1/audio/speech", json=body, timeout=30))
        assert (err["code"], err["param"]) == (code, param), err
    url = base + "/v1/audio/transcriptions"
    mp3 = b"ID3\x03\x00\x00\x00\x00\x00\x00" + bytes(64)
    err = error_of(httpx.post(url, files={"file": ("a.mp3", mp3, "audio/mpeg")}, timeout=30))
    assert err["code"] == "invalid_audio" and err["param"] == "file" and "WAV" in err["message"]
    err = error_of(httpx.post(url, files={"file": ("a.wav", b"not audio at all", "audio/wav")}, timeout=30))
    assert err["code"] == "invalid_audio" and "WAV" in err["message"]
    err = error_of(httpx.post(url, data={"model": ""}, files={"other": ("x", b"1")}, timeout=30))
    assert err["code"] == "missing_required_parameter" and err["param"] == "file"
    err = error_of(httpx.post(url, json={"file": "x"}, timeout=30))
    assert "multipart/form-data" in err["message"]
    wav = CLIP.read_bytes()
    for data, param in (({"response_format": "srt"}, "response_format"), ({"stream": "maybe"}, "stream"),
                        ({"temperature": "2"}, "temperature")):
        err = error_of(httpx.post(url, data=data, files={"file": ("a.wav", wav, "audio/wav")}, timeout=30))
        assert err["param"] == param, err
    err = error_of(httpx.post(url, data={"model": "whisper-9"}, files={"file": ("a.wav", wav)}, timeout=30), 404)
    assert err["code"] == "model_not_found"
    # The server keeps serving.
    assert httpx.post(base + "/v1/audio/speech", json={**speech, "max_tokens": 2}, timeout=30).status_code == 200


def test_a_model_that_cannot_speak_or_hear_says_why(tmp_path):
    s = start("--model", TEXT_MODEL, "--ctx-size", 512, log_path=tmp_path / "server.log")
    try:
        err = error_of(httpx.post(s.base + "/v1/chat/completions", json={
            "messages": [{"role": "user", "content": "Hi"}], "modalities": ["text", "audio"],
            "audio": {"voice": "alloy", "format": "wav"}}, timeout=30))
        assert err["code"] == "unsupported_value" and "cannot speak" in err["message"]
        err = error_of(httpx.post(s.base + "/v1/audio/speech", json={"input": "Hi", "voice": "alloy"}, timeout=30))
        assert err["code"] == "unsupported_model" and "cannot speak" in err["message"]
        err = error_of(httpx.post(s.base + "/v1/audio/transcriptions",
                                  files={"file": ("a.wav", CLIP.read_bytes(), "audio/wav")}, timeout=30))
        assert err["code"] == "unsupported_model" and "cannot take audio" in err["message"]
    finally:
        s.stop()
