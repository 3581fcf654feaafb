"""Fuzzing leap-server's network inputs: the real app in process (httpx's ASGI transport for HTTP, the ASGI
WebSocket messages driven directly for /v1/realtime) on the tiny fixture models, with seeded hostile requests
made from valid ones: structure-aware mutations (wrong types in every field, missing and extra fields, huge
and non-finite numbers, deep nesting, huge strings within the body limit, lone surrogates, unknown content
parts, malformed data URLs, base64 and WAV headers, bad tool schemas, duplicate keys, messages in the wrong
roles and order), raw byte mutations of the body and wrong Content-Type / Content-Length headers.

Every answer must be OpenAI's error shape with a 400 / 404 / 413 whose ``param`` names the mutated field
(or a field that depends on it) when the mutation was to one field, or a success with a well-formed body;
never a 500, an unhandled exception, an error in the server's log, or a request that does not end
(each is bounded). The Realtime socket must answer every client event (an ``error`` event for the bad ones)
and stay open, and answer a clean turn at the end. Generation stays tiny: the server's --max-tokens is 2. Both
apps speculate (prompt lookup, as --spec-type ngram), so generations take the speculative path and the
seeds carry llama-server's per-request ``speculative.n_max``."""
import asyncio
import base64
import io
import json
import logging
import math
import random
import re
import struct
import threading

import pytest

from conftest import FIXTURES

pytest.importorskip("fastapi")
httpx = pytest.importorskip("httpx")
PIL = pytest.importorskip("PIL.Image")

from leap.server.app import ServerSettings, create_app  # noqa: E402
from leap.server.engine import Engine, ModelSettings, Speculation  # noqa: E402
from leap.server.media import MediaLimits  # noqa: E402

SEED = 51
# Mutated inputs per test. A seed request has 10-80 places to change and there are ~10 kinds of change (and
# ~60 hostile values), so these counts reach each place with several of them; an input takes a few
# milliseconds on the tiny models, so the file runs in about half a minute on two shared cores.
HTTP_ITERATIONS = 3000
REALTIME_ITERATIONS = 600
MULTIPART_ITERATIONS = 500
# Bound of one request or event: answers here take milliseconds; a hang fails the test instead of blocking it.
REQUEST_SECONDS = 30.0
TOTAL_SECONDS = 600.0
MAX_BODY = 256 << 10
MODEL_NAME = "m"

AUDIO_MODEL = FIXTURES / "models" / "lfm2-tiny-f32.gguf"
AUDIO_MMPROJ = FIXTURES / "audio_encoder" / "lfm2a-512-f16-q8_0.gguf"
VOCODER, AUDIO_TOKENIZER = FIXTURES / "speech" / "vocoder-tiny.gguf", FIXTURES / "speech" / "tokenizer-tiny.gguf"
VL_MODEL, VL_MMPROJ = FIXTURES / "vision" / "lfm2vl-tiny-text-f32.gguf", FIXTURES / "vision" / "lfm2vl-tiny-mmproj-f32.gguf"

ERROR_STATUSES = {400: "invalid_request_error", 404: "invalid_request_error", 413: "invalid_request_error"}
# Errors about the body as a whole, not one field (the prompt is made of the messages and the tools).
#: The longest error message (or param) a hostile request may get back: messages quote at most 100
#: characters of a client's value (the library's own messages at most 1000 characters).
MAX_MESSAGE = 1500
WHOLE_BODY_CODES = {"invalid_json", "request_too_large", "context_length_exceeded"}


# ---- Inputs ---------------------------------------------------------------------------------------


def wav(rate=16000, samples=None, channels=1, bits=16, tag=1, fmt_size=16, data_size=None, block_align=None,
        order=("fmt ", "data")):
    """A RIFF/WAVE file; every header field can be given a wrong value."""
    if samples is None:
        samples = [int(8000 * math.sin(i / 5)) for i in range(rate // 5 if 0 < rate <= 48000 else 3200)]
    data = struct.pack(f"<{len(samples)}h", *samples) if bits == 16 and tag == 1 else bytes(len(samples) * 2)
    align = block_align if block_align is not None else max(1, channels * bits // 8) & 0xFFFF
    fmt = struct.pack("<HHIIHH", tag, channels, rate, (rate * align) & 0xFFFFFFFF, align, bits)
    fmt = fmt[:fmt_size] if fmt_size <= 16 else fmt + bytes(fmt_size - 16)
    chunks = {"fmt ": b"fmt " + struct.pack("<I", fmt_size) + fmt,
              "data": b"data" + struct.pack("<I", len(data) if data_size is None else data_size) + data}
    body = b"WAVE" + b"".join(chunks[c] for c in order)
    return b"RIFF" + struct.pack("<I", len(body)) + body


def float_wav(values, rate=16000):
    data = struct.pack(f"<{len(values)}f", *values)
    fmt = struct.pack("<HHIIHH", 3, 1, rate, rate * 4, 4, 32)
    body = b"WAVE" + b"fmt " + struct.pack("<I", 16) + fmt + b"data" + struct.pack("<I", len(data)) + data
    return b"RIFF" + struct.pack("<I", len(body)) + body


def b64(data):
    return base64.b64encode(data).decode("ascii")


def image_bytes(fmt, size=(8, 8)):
    out = io.BytesIO()
    PIL.new("RGB", size, (200, 30, 60)).save(out, format=fmt)
    return out.getvalue()


def bad_wavs(rng):
    """WAV files wrong in one header field, or not WAV at all."""
    return rng.choice([
        wav(rate=0), wav(rate=1), wav(rate=0xFFFFFFFF), wav(rate=7), wav(channels=0), wav(channels=2),
        wav(channels=65535), wav(bits=0), wav(bits=7), wav(bits=64), wav(bits=65535), wav(tag=3), wav(tag=0xFFFE),
        wav(tag=7), wav(tag=0), wav(fmt_size=0), wav(fmt_size=15), wav(fmt_size=40), wav(data_size=0),
        wav(data_size=0xFFFFFFFF), wav(data_size=3), wav(block_align=0), wav(block_align=65535),
        wav(order=("data", "fmt ")), wav(order=("fmt ",)), wav(order=("data",)), wav()[:30], wav()[:44], wav()[:45],
        float_wav([float("nan")] * 3200), float_wav([float("inf"), -float("inf")] * 1600), float_wav([1e30] * 3200),
        b"RIFF", b"ID3\x04" + bytes(100), b"fLaC" + bytes(100), b"OggS" + bytes(100), b"\x00" * 64,
        bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 300))),
    ])


def bad_data_urls(rng):
    png = image_bytes("PNG")
    return rng.choice([
        "data:", "data:image/png;base64,", "data:image/png;base64,!!!!", "data:image/png;base64,AAA",
        "data:image/png;base64,AAAA", "data:image/png," + b64(png), "data:image/png;base64" + b64(png),
        "data:text/plain;base64," + b64(png), "data:;base64," + b64(png), "data:image/png;charset=x;base64," + b64(png),
        "data:image/png;base64," + b64(png[:40]), "data:image/png;base64," + b64(png)[:-3],
        "data:image/png;base64," + b64(png) + "\n" + b64(png), "data:image/jpeg;base64," + b64(image_bytes("JPEG")[:100]),
        "data:image/gif;base64," + b64(image_bytes("GIF")), "data:image/webp;base64," + b64(image_bytes("WEBP")),
        "data:image/png;base64," + b64(image_bytes("PNG", (300, 300))),  # over the pixel limit
        "data:image/bmp;base64," + b64(image_bytes("BMP")), "data:image/png;base64," + b64(wav()),
        "data:image/png;base64," + b64(bytes(rng.getrandbits(8) for _ in range(200))),
        "data:image/png;base64,\ud800", "data:image/p\u037eng;base64," + b64(png),
        "http://127.0.0.1:9/cat.png", "file:///etc/passwd", "ftp://x", "", " data:image/png;base64," + b64(png),
        "data:" + "a;" * 5000 + "base64,AAAA",
    ])


class Raw:
    """JSON text put into a body as it is (what json.dumps cannot write: 1e999, 5000-digit integers,
    nesting deeper than its recursion limit)."""

    def __init__(self, text):
        self.text = text


def raw_values(rng):
    depth = rng.choice([50, 900, 5000, 100000])
    return Raw(rng.choice([
        "1e999", "-1e999", "NaN", "Infinity", "-Infinity", "1" * 5000, "-" + "9" * 400, "1" + "0" * 400,
        "1e-400", "-0", "0.1e1", "[" * depth + "]" * depth, '{"a":' * depth + "1" + "}" * depth,
        '"\\ud800"', '"\\udc00\\ud800"', '"\\u0000"', '"' + "\\ud83d" * 1000 + '"',
    ]))


def hostile_value(rng, key=None):
    """A value to put where a field's value was: a wrong type, an edge of a range, or worse."""
    if key in ("url",) and rng.random() < 0.7:
        return bad_data_urls(rng)
    if key in ("data", "audio", "file") and rng.random() < 0.7:
        return rng.choice([b64(bad_wavs(rng)), "!!!!", "AAA", "A", "====", "", b64(wav())[:-2], " " + b64(wav()),
                           "\ud800", b64(wav()) + "\n"])
    if rng.random() < 0.15:
        return raw_values(rng)
    return rng.choice([
        None, True, False, 0, 1, -1, 2, 3, 9, 2 ** 31, 2 ** 63, 2 ** 64, -2 ** 63 - 1, 10 ** 30, -10 ** 30,
        10 ** 300, 0.5, -0.0, 1e-9, 1e308, -1e308, float("nan"), float("inf"), -float("inf"),
        "", "x", " ", "0", "1", "true", "null", "none", "auto", "required", "function", "text", "audio",
        "\x00", "\ud800", "a\udfffb", "\u202e\u037e", "é" * rng.randint(1, 50), "x" * rng.randint(1000, 150000),
        [], {}, [None], [[]], [{}], ["x"], [1, 2, 3], list(range(rng.randint(100, 5000))), {"type": "bogus"},
        {"type": None}, {"": ""}, {"\ud800": 1}, {"1": 1, "2": "x"},
        [{"role": "user"}], [{"role": "tool", "content": "x"}], [{"role": "assistant", "content": "x"}],
        {"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"a": {"$ref": "#/x"}}}}},
        {"type": "function", "function": {"name": "f", "parameters": {"type": "array", "items": [1]}}},
        {"type": "text"}, {"type": "image_url"}, {"type": "input_audio"}, {"type": "video"},
    ])


def paths(value, path=()):
    """Every node of a JSON value as a path of keys and indexes."""
    yield path
    if isinstance(value, dict):
        for k, v in value.items():
            yield from paths(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from paths(v, path + (i,))


def param_of(path):
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def get(value, path):
    for p in path:
        value = value[p]
    return value


# Fields whose parsers do the most (media, schemas, calls, roles): a share of the mutations goes to them.
FOCUS = {"url", "data", "image_url", "input_audio", "parameters", "schema", "arguments", "tool_calls", "content",
         "role", "type", "tool_call_id", "name", "voice", "format"}


def mutate(rng, body):
    """``body`` changed in one place: (the new body, the path changed)."""
    body = json.loads(json.dumps(body))
    every = list(paths(body))[1:]
    focused = [p for p in every if p[-1] in FOCUS]
    path = rng.choice(focused if focused and rng.random() < 0.4 else every)
    parent, key = get(body, path[:-1]), path[-1]
    node = parent[key]
    kind = rng.randrange(10)
    if kind == 0 and isinstance(parent, dict):
        del parent[key]
    elif kind == 0:
        parent.pop(key)
    elif kind == 1 and isinstance(node, (dict, list)):
        parent[key] = type(node)()
    elif kind == 2 and isinstance(node, dict):
        node[rng.choice(["type", "role", "name", "x", "", "\ud800", "content", "function", "parameters"])] = \
            hostile_value(rng)
    elif kind == 3 and isinstance(node, list) and node:
        node.extend(node[rng.randrange(len(node))] for _ in range(rng.choice([1, 7, 60])))
        rng.shuffle(node)
    elif kind == 4:
        parent[key] = [node] if rng.random() < 0.5 else {"value": node}
    elif kind == 5 and isinstance(node, str):
        parent[key] = rng.choice([node[: len(node) // 2], node + "\ud800", node.upper(), node + " ", "\x00" + node,
                                  node * rng.randint(2, 200)])
    elif kind == 6 and isinstance(node, (int, float)) and not isinstance(node, bool):
        parent[key] = rng.choice([-node, node + 1, node * 10 ** 6, str(node), node + 0.5, -node - 1])
    else:
        parent[key] = hostile_value(rng, key if isinstance(key, str) else None)
    return body, path


def dumps(body):
    """``body`` as JSON text, :class:`Raw` values spliced in."""
    raws = []

    def mark(v):
        if isinstance(v, Raw):
            raws.append(v.text)
            return f"\x00raw{len(raws) - 1}\x00"
        if isinstance(v, dict):
            return {k: mark(x) for k, x in v.items()}
        if isinstance(v, list):
            return [mark(x) for x in v]
        return v

    text = json.dumps(mark(body))
    return re.sub(r'"\\u0000raw(\d+)\\u0000"', lambda m: raws[int(m.group(1))], text)


def encode(text):
    return text.encode("utf-8", "surrogatepass")


def raw_mutation(rng, data):
    """The body's bytes damaged: cut, flipped, spliced with invalid UTF-8, re-encoded or replaced."""
    kind = rng.randrange(9)
    at = rng.randint(0, len(data))
    if kind == 0:
        return data[:at]
    if kind == 1:
        b = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            if b:
                b[rng.randrange(len(b))] = rng.getrandbits(8)
        return bytes(b)
    if kind == 2:
        return data[:at] + rng.choice([b"\xff", b"\xc0\x80", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\x80", b"\x00"]) + data[at:]
    if kind == 3:
        return b"\xef\xbb\xbf" + data
    if kind == 4:
        return data.decode("utf-8", "surrogateescape").encode("utf-16", "surrogatepass")
    if kind == 5:
        return data + rng.choice([b"}", b" x", b"\x00", b",", b"{}"])
    if kind == 6:
        return rng.choice([b"", b" ", b"\n\t", b"null", b"[]", b"1", b'"x"', b"{", b"nul", b"[" * 100000])
    if kind == 7:
        return data[:at] + data[rng.randint(0, len(data)):]
    return bytes(MAX_BODY + 1)


def duplicate_key(rng, body):
    """JSON text whose top level repeats a key, the hostile copy first or last."""
    key = rng.choice(list(body))
    extra = dumps({key: hostile_value(rng, key)})[1:-1]
    text = dumps(body)
    return (("{" + extra + ", " + text[1:]) if rng.random() < 0.5 else (text[:-1] + ", " + extra + "}")), key


# ---- Seed requests ---------------------------------------------------------------------------------

TOOL = {"type": "function", "function": {"name": "get_time", "description": "The time in a city.", "strict": False,
                                         "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                        "required": ["city"]}}}


def audio_seeds():
    """(path, body) of valid requests to the model that hears and speaks."""
    clip = b64(wav())
    history = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "What time is it in Paris?"},
                                     {"type": "input_audio", "input_audio": {"data": clip, "format": "wav"}}]},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_time", "arguments": '{"city": "Paris"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "12:00"},
        {"role": "user", "content": "Thanks.", "name": "ann"},
    ]
    return [
        ("/v1/chat/completions", {
            "model": MODEL_NAME, "messages": history, "max_tokens": 1, "n": 2, "logprobs": True, "top_logprobs": 2,
            "stop": ["\n", "."], "seed": 7, "temperature": 0.7, "top_p": 0.9, "top_k": 40, "min_p": 0.05,
            "repetition_penalty": 1.1, "presence_penalty": 0.5, "frequency_penalty": 0.5, "tools": [TOOL],
            "tool_choice": "auto", "parallel_tool_calls": True, "user": "u", "metadata": {"k": "v"},
            "speculative.n_max": 4}),
        ("/v1/chat/completions", {
            "messages": [{"role": "developer", "content": "Talk."}, {"role": "user", "content": "Hi"}],
            "stream": True, "stream_options": {"include_usage": True}, "modalities": ["text", "audio"],
            "audio": {"voice": "alloy", "format": "pcm16"}, "audio_temperature": 0.5, "audio_top_k": 4,
            "max_completion_tokens": 2, "reasoning_effort": "low", "chat_template_kwargs": {"enable_thinking": False}}),
        ("/v1/chat/completions", {
            "messages": [{"role": "user", "content": "Time in Rome?"}], "max_tokens": 2, "tools": [TOOL],
            "tool_choice": {"type": "function", "function": {"name": "get_time"}}}),
        ("/v1/chat/completions", {
            "messages": [{"role": "user", "content": [{"type": "text", "text": "A number."}]}], "max_tokens": 2,
            "response_format": {"type": "json_schema", "json_schema": {
                "name": "n", "strict": True, "schema": {"type": "object", "properties": {"a": {"type": "integer"}},
                                                        "required": ["a"]}}}}),
        ("/v1/completions", {
            "model": MODEL_NAME, "prompt": "Once upon", "max_tokens": 2, "n": 2, "best_of": 2, "logprobs": 2,
            "logit_bias": {"5": 10, "7": -100}, "stop": ["\n", "."], "seed": 3, "stream": True,
            "stream_options": {"include_usage": True}, "echo": False, "temperature": 0.7, "suffix": "",
            "speculative.n_max": 3}),
        ("/v1/completions", {"prompt": [1, 2, 3], "echo": True, "max_tokens": 1}),
        ("/v1/audio/speech", {
            "model": MODEL_NAME, "input": "Hello there.", "voice": "uk_female", "response_format": "wav",
            "stream_format": "sse", "speed": 1, "max_tokens": 2, "temperature": 0.5, "top_k": 8, "seed": 1,
            "audio_temperature": 0.5, "audio_top_k": 4}),
        ("/v1/audio/speech", {"input": "Hi.", "voice": {"id": "alloy"}, "response_format": "pcm", "max_tokens": 2}),
    ]


def vision_seeds():
    png, jpeg = b64(image_bytes("PNG")), b64(image_bytes("JPEG"))
    return [
        ("/v1/chat/completions", {"messages": [{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": "data:image/png;base64," + png, "detail": "low"}},
            {"type": "text", "text": "What is this?"}]}], "max_tokens": 1, "speculative.n_max": 0}),
        ("/v1/chat/completions", {"messages": [{"role": "user", "content": [
            {"type": "image_url", "image_url": "data:image/jpeg;base64," + jpeg}]}], "max_tokens": 2, "stream": True}),
    ]


# ---- Checks ----------------------------------------------------------------------------------------

# A mutation of one field may be reported on another that depends on it (the top-level names).
RELATED = {
    "tools": {"tool_choice", "response_format"}, "tool_choice": {"tools", "response_format"},
    "stream": {"audio"}, "modalities": {"audio"}, "logprobs": {"top_logprobs"}, "n": {"best_of"},
    "echo": {"logprobs"}, "max_tokens": {"max_completion_tokens"}, "max_completion_tokens": {"max_tokens"},
    "response_format": {"tools"}, "audio": {"modalities"}, "messages": {"tools"},
    "speculative.n_max": {"speculative"},  # llama-server's dotted name: its param's first part
}


def top_name(param):
    return re.split(r"[.\[]", param, maxsplit=1)[0]


def check_error(r, what, mutated=None):
    assert r.status_code in ERROR_STATUSES, f"{what}: HTTP {r.status_code}: {r.text[:500]}"
    body = r.json()
    assert set(body) == {"error"} and set(body["error"]) == {"message", "type", "param", "code"}, (what, body)
    err = body["error"]
    assert isinstance(err["message"], str) and err["message"], (what, err)
    assert len(err["message"]) <= MAX_MESSAGE and len(err["param"] or "") <= MAX_MESSAGE, (what, err["message"][:500])
    assert err["type"] == ERROR_STATUSES[r.status_code], (what, err)
    if mutated is None or err["code"] in WHOLE_BODY_CODES:
        return
    assert err["param"], f"{what}: the error names no parameter: {err}"
    changed = top_name(mutated)
    assert top_name(err["param"]) in {changed} | RELATED.get(changed, set()), \
        f"{what}: {mutated} was changed but the error names {err['param']}: {err}"


def sse_events(r, what):
    assert r.headers["content-type"].startswith("text/event-stream"), (what, r.headers)
    datas = [line[6:] for line in r.text.split("\n") if line.startswith("data: ")]
    events = [json.loads(d) for d in datas if d != "[DONE]"]
    for e in events:
        assert "error" not in e or e["error"]["type"] == "invalid_request_error", (what, e)
    return datas, events


def check_success(r, path, what):
    assert r.status_code == 200, (what, r.status_code, r.text[:300])
    ctype = r.headers["content-type"]
    if path in ("/v1/chat/completions", "/v1/completions"):
        kind = "chat.completion" if path.endswith("chat/completions") else "text_completion"
        if ctype.startswith("text/event-stream"):
            datas, events = sse_events(r, what)
            assert datas and datas[-1] == "[DONE]", (what, datas[-3:])
            assert all(e.get("object") in (kind + ".chunk", kind) or "error" in e for e in events), what
            return
        body = r.json()
        assert body["object"] == kind and body["choices"], (what, body)
        assert isinstance(body["usage"]["prompt_tokens"], int) and body["usage"]["completion_tokens"] >= 0, what
        for c in body["choices"]:
            assert c["finish_reason"] in ("stop", "length", "tool_calls"), (what, c)
            if kind == "chat.completion":
                assert c["message"]["role"] == "assistant", (what, c)
            else:
                assert isinstance(c["text"], str), (what, c)
    elif path == "/v1/audio/speech":
        if ctype.startswith("text/event-stream"):
            _, events = sse_events(r, what)
            assert events and events[-1]["type"] == "speech.audio.done", (what, events[-2:])
        elif ctype == "audio/wav":
            assert r.content[:4] == b"RIFF" and r.content[8:12] == b"WAVE", what
        else:
            assert ctype.startswith("audio/pcm") and len(r.content) % 2 == 0, (what, ctype)
    elif path == "/v1/audio/transcriptions":
        if ctype.startswith("text/event-stream"):
            _, events = sse_events(r, what)
            assert events and events[-1]["type"] in ("transcript.text.done",) or "error" in events[-1], (what, events)
        elif ctype.startswith("text/plain"):
            r.text
        else:
            body = r.json()
            assert isinstance(body["text"], str) and isinstance(body["usage"]["total_tokens"], int), (what, body)


# ---- The servers ------------------------------------------------------------------------------------


def load(settings):
    engine = Engine(settings)
    engine.load()
    assert engine.state == "ready", engine.error
    media = MediaLimits(max_image_pixels=1 << 16, max_audio_seconds=3, max_media_bytes=MAX_BODY)
    return engine, create_app(engine, ServerSettings(max_body=MAX_BODY, max_tokens=2, media=media), load=False)


@pytest.fixture(scope="module")
def apps():
    audio = load(ModelSettings(model=str(AUDIO_MODEL), mmproj=str(AUDIO_MMPROJ), audio_decoder=str(VOCODER),
                               audio_tokenizer=str(AUDIO_TOKENIZER), ctx_size=2048, alias=MODEL_NAME, progress=False,
                               speculation=Speculation("ngram")))
    vision = load(ModelSettings(model=str(VL_MODEL), mmproj=str(VL_MMPROJ), ctx_size=512, alias=MODEL_NAME,
                                progress=False, speculation=Speculation("ngram", 3)))
    yield {"audio": audio[1], "vision": vision[1]}
    audio[0].close()
    vision[0].close()


@pytest.fixture
def quiet_log(caplog):
    """Fails the test on any warning or error the server logs (a library failure, an unexpected exception,
    a task whose exception nobody read)."""
    caplog.set_level(logging.WARNING)
    yield
    bad = [r for r in caplog.records if r.levelno >= logging.WARNING and r.name in ("leap.server", "asyncio")]
    assert not bad, [r.getMessage() for r in bad][:5]


def run_bounded(scenario):
    """Runs the coroutine ``scenario()`` on an event loop of its own thread; fails after TOTAL_SECONDS even
    if something blocks that loop."""
    outcome = {}

    def target():
        try:
            asyncio.run(scenario())
        except BaseException as e:  # re-raised on the test's thread
            outcome["error"] = e

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(TOTAL_SECONDS)
    assert not t.is_alive(), f"the fuzz did not end within {TOTAL_SECONDS} s (a request hangs)"
    if "error" in outcome:
        raise outcome["error"]


async def bounded(awaitable, what):
    try:
        return await asyncio.wait_for(awaitable, REQUEST_SECONDS)
    except asyncio.TimeoutError:
        raise AssertionError(f"{what}: no answer within {REQUEST_SECONDS} s") from None
    except Exception as e:  # escaped the app: say which input
        raise AssertionError(f"{what}: {type(e).__name__}: {e}") from e


def client(app):
    # raise_app_exceptions: an exception escaping the app (after its 500, or in a streamed body) fails here.
    return httpx.AsyncClient(transport=httpx.ASGITransport(app, raise_app_exceptions=True), base_url="http://fuzz")


# ---- HTTP JSON endpoints ----------------------------------------------------------------------------


def test_fuzz_json_endpoints(apps, quiet_log):
    rng = random.Random(SEED)
    seeds = [("audio", p, b) for p, b in audio_seeds()] + [("vision", p, b) for p, b in vision_seeds()]

    async def scenario():
        clients = {name: client(app) for name, app in apps.items()}
        try:
            for name, path, body in seeds:  # the seeds themselves succeed
                r = await bounded(clients[name].post(path, json=body), path)
                check_success(r, path, f"seed {path} {body}")
            for i in range(HTTP_ITERATIONS):
                name, path, body = rng.choice(seeds)
                headers = {"content-type": "application/json"}
                mutated = None
                roll = rng.random()
                if roll < 0.7:
                    changed, where = mutate(rng, body)
                    data, mutated = encode(dumps(changed)), param_of(where)
                elif roll < 0.8:
                    text, mutated = duplicate_key(rng, body)
                    data = encode(text)
                elif roll < 0.93:
                    data = raw_mutation(rng, encode(dumps(body)))
                else:
                    data = encode(dumps(body))
                    headers = rng.choice([{}, {"content-type": "text/plain"}, {"content-type": "multipart/form-data"},
                                          {"content-type": "application/json; charset=latin-1"},
                                          {"content-length": "abc"}, {"content-length": "-1"},
                                          {"content-length": str(MAX_BODY * 4)}, {"content-length": "0"},
                                          {"content-length": str(len(data) // 2)}])
                what = f"#{i} {path} {data[:300]!r} (changed: {mutated})"
                r = await bounded(clients[name].post(path, content=data, headers=headers), what)
                if r.status_code == 200:
                    check_success(r, path, what)
                else:
                    check_error(r, what, mutated)
        finally:
            for c in clients.values():
                await c.aclose()

    run_bounded(scenario)


# ---- /v1/realtime -----------------------------------------------------------------------------------


class Socket:
    """A WebSocket client of the app, speaking ASGI's messages to it directly (as a server would)."""

    def __init__(self, app):
        self.to_app = asyncio.Queue()
        self.from_app = asyncio.Queue()
        scope = {"type": "websocket", "asgi": {"version": "3.0"}, "scheme": "ws", "http_version": "1.1",
                 "path": "/v1/realtime", "raw_path": b"/v1/realtime", "root_path": "", "query_string": b"",
                 "headers": [(b"host", b"fuzz")], "client": ("127.0.0.1", 1), "server": ("fuzz", 80),
                 "subprotocols": [], "state": {}}
        self.to_app.put_nowait({"type": "websocket.connect"})
        self.task = asyncio.ensure_future(app(scope, self.to_app.get, self.from_app.put))

    def send(self, text=None, data=None):
        self.to_app.put_nowait({"type": "websocket.receive", **({"text": text} if data is None else {"bytes": data})})

    async def receive(self, what):
        """The next message the app sends (a text frame as the event it holds)."""
        get = asyncio.ensure_future(self.from_app.get())
        done, _ = await asyncio.wait({get, self.task}, timeout=REQUEST_SECONDS, return_when=asyncio.FIRST_COMPLETED)
        if get not in done:
            get.cancel()
            if self.task in done:
                self.task.result()  # raises what the handler raised
                raise AssertionError(f"{what}: the server ended the session")
            raise AssertionError(f"{what}: no event within {REQUEST_SECONDS} s")
        message = get.result()
        if message["type"] == "websocket.accept":
            return {"type": "accepted"}
        assert message["type"] == "websocket.send", (what, message)
        message["text"].encode("utf-8")  # what a server does with it: it must be text
        return json.loads(message["text"])

    async def close(self):
        self.to_app.put_nowait({"type": "websocket.disconnect", "code": 1000})
        await asyncio.wait_for(self.task, REQUEST_SECONDS)


def pcm_b64(rng, seconds=0.2, rate=16000):
    n = int(seconds * rate)
    loud = rng.random() < 0.5
    return b64(struct.pack(f"<{n}h", *(int((9000 if loud else 50) * math.sin(i / 3)) for i in range(n))))


def realtime_seeds(rng):
    """Valid client events (a session of text answers, at most 2 tokens each)."""
    return [
        {"type": "session.update", "session": {
            "type": "realtime", "instructions": "Be brief.", "output_modalities": ["text"], "max_output_tokens": 2,
            "temperature": 0.5, "audio_temperature": 0.5, "audio_top_k": 4, "seed": 3,
            "audio": {"input": {"format": {"type": "audio/pcm", "rate": 16000},
                                "turn_detection": {"type": "server_vad", "threshold": 0.5, "prefix_padding_ms": 100,
                                                   "silence_duration_ms": 100, "create_response": True,
                                                   "interrupt_response": True}},
                      "output": {"format": {"type": "audio/pcm", "rate": 24000}, "voice": "alloy", "speed": 1}},
            "tools": [{"type": "function", "name": "get_time", "description": "The time.",
                       "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}],
            "tool_choice": "auto",
            "truncation": {"type": "retention_ratio", "retention_ratio": 0.5, "token_limits": {"post_instructions": 200}}}},
        {"type": "session.update", "session": {"audio": {"input": {"turn_detection": None}},
                                               "tool_choice": {"type": "function", "name": "get_time"},
                                               "truncation": "disabled"}},
        {"type": "session.update", "session": {"truncation": "auto"}},
        {"type": "input_audio_buffer.append", "audio": pcm_b64(rng)},
        {"type": "input_audio_buffer.commit"},
        {"type": "input_audio_buffer.clear"},
        {"type": "conversation.item.create", "item": {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "Hello"}, {"type": "input_audio", "audio": pcm_b64(rng)}]}},
        {"type": "conversation.item.create", "item": {"type": "message", "role": "system", "content": [
            {"type": "input_text", "text": "Answer in French."}]}},
        {"type": "conversation.item.create", "item": {"type": "function_call_output", "call_id": "call_x",
                                                      "output": "12:00"}},
        {"type": "response.create", "response": {"output_modalities": ["text"], "instructions": "Short."}},
        {"type": "response.cancel"},
    ]


SERVER_EVENT = re.compile(r"(session|input_audio_buffer|conversation\.item|response)\.[a-z_.]+|error\Z")


def check_response_done(e, what):
    """A response ends answered, cut, cancelled, or failed for a reason of the client's (its conversation
    outgrew the context, say), never for the server's."""
    response = e["response"]
    if response["status"] == "failed":
        assert response["status_details"]["error"]["type"] == "invalid_request_error", (what, response)
    else:
        assert response["status"] in ("completed", "incomplete", "cancelled"), (what, response)


async def drain(sock, probe_id, what, responses):
    """Events until the ``error`` answering the probe; each checked. ``responses``: responses begun and not
    done (their events may come after the probe's)."""
    while True:
        e = await sock.receive(what)
        assert isinstance(e.get("type"), str) and SERVER_EVENT.match(e["type"]), (what, e)
        assert isinstance(e.get("event_id"), str), (what, e)
        if e["type"] == "error":
            err = e["error"]
            assert err["type"] == "invalid_request_error" and isinstance(err["message"], str) and err["message"], \
                (what, e)
            assert len(err["message"]) <= MAX_MESSAGE and len(err["param"] or "") <= MAX_MESSAGE, \
                (what, err["message"][:500])
            assert err["param"] is None or isinstance(err["param"], str), (what, e)
            if err.get("event_id") == probe_id:
                return
        elif e["type"] == "response.created":
            responses[0] += 1
        elif e["type"] == "response.done":
            responses[0] -= 1
            check_response_done(e, what)


async def until_responses_done(sock, what, responses):
    while responses[0]:
        e = await sock.receive(what)
        if e["type"] == "response.created":
            responses[0] += 1
        elif e["type"] == "response.done":
            responses[0] -= 1
            check_response_done(e, what)


def test_fuzz_realtime_events(apps, quiet_log):
    rng = random.Random(SEED + 1)

    async def scenario():
        sock = Socket(apps["audio"])
        assert (await sock.receive("accept"))["type"] == "accepted"
        assert (await sock.receive("session.created"))["type"] == "session.created"
        responses = [0]
        for i in range(REALTIME_ITERATIONS):
            seed = rng.choice(realtime_seeds(rng))
            roll = rng.random()
            binary = None
            if roll < 0.6:
                changed, where = mutate(rng, seed)
                text = dumps(changed)
            elif roll < 0.75:
                text = dumps(seed)
            elif roll < 0.95:
                text = raw_mutation(rng, encode(dumps(seed))).decode("utf-8", "replace")
            else:
                text, binary = None, encode(dumps(seed))
            what = f"realtime #{i} {(text or '')[:300]!r}"
            sock.send(text, binary)
            probe = f"probe_{i}"
            sock.send(json.dumps({"type": "fuzz.probe", "event_id": probe}))
            await drain(sock, probe, what, responses)
            await until_responses_done(sock, what, responses)
        # The session still answers a clean turn.
        sock.send(json.dumps({"type": "session.update", "session": {
            "output_modalities": ["text"], "max_output_tokens": 2, "tools": [], "tool_choice": "auto",
            "audio": {"input": {"turn_detection": None}}, "truncation": "auto"}}))
        sock.send(json.dumps({"type": "conversation.item.create", "item": {
            "type": "message", "role": "user", "content": [{"type": "input_text", "text": "Hi"}]}}))
        sock.send(json.dumps({"type": "response.create"}))
        seen = []
        while not seen or seen[-1]["type"] != "response.done":
            seen.append(await sock.receive("the clean turn"))
            assert seen[-1]["type"] != "error", seen[-1]
        response = seen[-1]["response"]
        # However long the fuzzed conversation grew, truncation leaves out what does not fit.
        assert response["status"] in ("completed", "incomplete"), response
        await sock.close()

    run_bounded(scenario)


# ---- /v1/audio/transcriptions ------------------------------------------------------------------------


def multipart(parts, boundary="fuzzboundary"):
    """A multipart/form-data body: parts of (name, filename or None, bytes)."""
    out = b""
    for name, filename, data in parts:
        disposition = f'form-data; name="{name}"' + (f'; filename="{filename}"' if filename else "")
        out += (f"--{boundary}\r\nContent-Disposition: {disposition}\r\n"
                + ("Content-Type: audio/wav\r\n" if filename else "") + "\r\n").encode("utf-8", "surrogatepass")
        out += data + b"\r\n"
    return out + f"--{boundary}--\r\n".encode()


def form_value(rng):
    return rng.choice(["", "json", "text", "verbose_json", "srt", "true", "false", "TRUE", "1", "0", "yes",
                       "0.5", "nan", "inf", "-0", "1e999", "2", "-1", "en", "segment", "word", "m", "other-model",
                       "\x00", "x" * 5000]).encode() if rng.random() < 0.9 else bytes(rng.getrandbits(8) for _ in range(9))


def test_fuzz_transcriptions(apps, quiet_log):
    rng = random.Random(SEED + 2)
    fields = ["model", "response_format", "stream", "temperature", "language", "prompt",
              "timestamp_granularities[]", "include[]", "x"]

    async def scenario():
        async with client(apps["audio"]) as c:
            for i in range(MULTIPART_ITERATIONS):
                parts = [("file", "a.wav", wav()), ("model", None, b"m"), ("response_format", None,
                         rng.choice([b"json", b"text", b"verbose_json"])), ("stream", None, rng.choice([b"true", b"false"])),
                         ("temperature", None, b"0"), ("language", None, b"en"), ("timestamp_granularities[]", None, b"segment")]
                mutated = None
                kind = rng.randrange(8)
                if kind == 0:
                    parts = [p for p in parts if p[0] != "file"]
                    mutated = "file"
                elif kind == 1:
                    parts[0] = ("file", rng.choice(["a.wav", "", "x.mp3", "\u00e9.wav"]), bad_wavs(rng))
                    mutated = "file"
                elif kind == 2:
                    parts[0] = ("file", None, rng.choice([wav(), b"", b"data"]))
                    mutated = "file"
                elif kind == 3:
                    name = rng.choice(fields)
                    parts = [p for p in parts if p[0] != name] + [(name, None, form_value(rng))]
                    mutated = name
                elif kind == 4:
                    parts += [rng.choice(parts) for _ in range(rng.choice([1, 3, 70]))]
                elif kind == 5:
                    parts += [(rng.choice(fields), "b.wav", wav())]
                ctype = "multipart/form-data; boundary=fuzzboundary"
                data = multipart(parts)
                if kind == 6:
                    data = raw_mutation(rng, data)
                elif kind == 7:
                    ctype = rng.choice(["multipart/form-data", "multipart/form-data; boundary=other",
                                        "application/json", "text/plain", "multipart/form-data; boundary=\"\"",
                                        "multipart/form-data; boundary=" + "b" * 5000, ""])
                what = f"transcription #{i} {ctype[:60]} {data[:200]!r} (changed: {mutated})"
                r = await bounded(c.post("/v1/audio/transcriptions", content=data, headers={"content-type": ctype}), what)
                if r.status_code == 200:
                    check_success(r, "/v1/audio/transcriptions", what)
                else:
                    check_error(r, what, None)
                    err = r.json()["error"]
                    if mutated and err["code"] not in WHOLE_BODY_CODES | {"invalid_request"}:
                        assert err["param"] and top_name(err["param"]) in (top_name(mutated), "file"), (what, err)

    run_bounded(scenario)


# ---- What the fuzzing found ----------------------------------------------------------------------------

# (app, path, body as JSON text, status, code, param): inputs that once gave a 500, a 400 naming no parameter,
# or a value the library silently wrapped.
FOUND = [
    # A lone surrogate reached UTF-8 encoding (the library's strings, the error page's JSON): a 500.
    ("audio", "/v1/chat/completions", '{"messages": [{"role": "user", "content": "\\ud800"}], "max_tokens": 1}',
     400, "invalid_value", "messages[0].content"),
    ("audio", "/v1/completions", '{"prompt": "a\\udfffb", "max_tokens": 1}', 400, "invalid_value", "prompt"),
    ("audio", "/v1/audio/speech", '{"input": "hi", "model": "m\\ud800"}', 400, "invalid_value", "model"),
    # ... and so did its UTF-8 encoding (not UTF-8), which json.loads decodes with surrogatepass.
    ("audio", "/v1/completions", b'{"prompt": "\xed\xa0\x80", "max_tokens": 1}', 400, "invalid_json", None),
    # Integers Python will not read (over 4300 digits), or that no double holds: a 500.
    ("audio", "/v1/completions", '{"prompt": "x", "max_tokens": 1' + "0" * 5000 + "}", 400, "invalid_json", None),
    ("audio", "/v1/completions", '{"prompt": "x", "temperature": 1' + "0" * 400 + "}", 400, "invalid_value",
     "temperature"),
    # NaN and Infinity are not JSON: in a tool call's arguments they reached the library (param "messages").
    ("audio", "/v1/chat/completions", '{"messages": [{"role": "assistant", "tool_calls": [{"function": {"name": "f", '
     '"arguments": {"a": NaN}}}]}, {"role": "user", "content": "x"}]}', 400, "invalid_json", None),
    ("audio", "/v1/chat/completions", '{"messages": [{"role": "user", "content": "x"}], "top_p": 1e999}', 400,
     "invalid_json", None),
    # Past int32, top_k wrapped to a negative value (the model's default).
    ("audio", "/v1/completions", '{"prompt": "x", "top_k": 2147483648}', 400, "invalid_value", "top_k"),
    ("audio", "/v1/audio/speech", '{"input": "x", "audio_top_k": 4294967296}', 400, "invalid_value", "audio_top_k"),
    # WAV the library refuses, and audio too short for its encoder: refused when the generation began, param null.
    ("audio", "/v1/chat/completions", json.dumps({"messages": [{"role": "user", "content": [{"type": "input_audio",
     "input_audio": {"data": b64(wav(bits=24, block_align=2))}}]}]}), 400, "invalid_audio", "messages[0].content[0].input_audio.data"),
    ("audio", "/v1/chat/completions", json.dumps({"messages": [{"role": "user", "content": [{"type": "input_audio",
     "input_audio": {"data": b64(wav(tag=7))}}]}]}), 400, "invalid_audio", "messages[0].content[0].input_audio.data"),
    ("audio", "/v1/chat/completions", json.dumps({"messages": [{"role": "user", "content": [{"type": "input_audio",
     "input_audio": {"data": b64(wav(samples=[0] * 100))}}]}]}), 400, "audio_too_short",
     "messages[0].content[0].input_audio.data"),
    # A schema nested past the library's JSON depth: its error names the options, not json_schema_constraint.
    ("audio", "/v1/chat/completions", '{"messages": [{"role": "user", "content": "x"}], "response_format": {"type": '
     '"json_schema", "json_schema": {"schema": ' + '{"not": ' * 600 + "{}" + "}" * 600 + "}}}", 400, "invalid_value",
     "response_format.json_schema.schema"),
    # A bad parameters schema is named by its tool.
    ("audio", "/v1/chat/completions", '{"messages": [{"role": "user", "content": "x"}], "tools": [' + json.dumps(TOOL)
     + ', {"type": "function", "function": {"name": "g", "parameters": {"type": [1]}}}]}', 400, "invalid_value",
     "tools[1]"),
]


@pytest.mark.parametrize("app, path, body, status, code, param", FOUND,
                         ids=[f"{f[1][4:]}-{i}" for i, f in enumerate(FOUND)])
def test_found_by_fuzzing(apps, quiet_log, app, path, body, status, code, param):
    async def scenario():
        async with client(apps[app]) as c:
            data = body if isinstance(body, bytes) else body.encode()
            r = await bounded(c.post(path, content=data, headers={"content-type": "application/json"}), body[:80])
            check_error(r, body[:200])
            err = r.json()["error"]
            assert (r.status_code, err["code"], err["param"]) == (status, code, param), err

    run_bounded(scenario)


def test_found_by_fuzzing_on_the_socket(apps, quiet_log):
    """Events that ended the session (a traceback: deep nesting, a lone surrogate echoed back, a binary frame
    where the server gives text None) or were accepted to fail every response (a tool whose schema the
    library refuses); each is an ``error`` event naming the field, and the session goes on."""
    events = [
        ("[" * 100000 + "]" * 100000, "invalid_json", None),
        ('{"type": "conversation.item.create", "item": {"type": "message", "role": "user", "content": '
         '[{"type": "input_text", "text": "\\ud800"}]}}', "invalid_value", "item.content[0].text"),
        ('{"type": "session.update", "session": {"tools": [{"type": "function", "name": "f", "parameters": '
         '{"type": "array"}}]}}', "invalid_value", "session.tools[0]"),
        ('{"type": "session.update", "session": {"audio_top_k": 2147483648}}', "invalid_value", "session.audio_top_k"),
        (None, "invalid_json", None),
    ]

    async def scenario():
        sock = Socket(apps["audio"])
        assert (await sock.receive("accept"))["type"] == "accepted"
        assert (await sock.receive("session.created"))["type"] == "session.created"
        for text, code, param in events:
            sock.send(text) if text is not None else sock.to_app.put_nowait(
                {"type": "websocket.receive", "text": None, "bytes": b"{}"})
            e = await sock.receive(str(text)[:80])
            assert e["type"] == "error" and (e["error"]["code"], e["error"]["param"]) == (code, param), e
        sock.send(json.dumps({"type": "input_audio_buffer.clear"}))
        assert (await sock.receive("clear"))["type"] == "input_audio_buffer.cleared"
        await sock.close()

    run_bounded(scenario)


def test_strict_json():
    """What the body parser takes (pairs of surrogates, an escaped backslash before 'ud800', numbers at a
    double's edge, UTF-16 with its BOM) and what it refuses, naming where."""
    from leap.server.errors import ApiError
    from leap.server.schemas import parse_json_object

    assert parse_json_object(b'{"a": "\\ud83d\\ude00", "b": "\\\\ud800"}') == {"a": "\U0001F600", "b": "\\ud800"}
    assert parse_json_object(b'{"a": 1.7e308, "b": -0, "c": 1' + b"0" * 4299 + b"}")["a"] == 1.7e308
    assert parse_json_object('{"a": [1]}'.encode("utf-16")) == {"a": [1]}
    for raw, message, param in [
        (b'{"a": [{"b": "x\\ud800"}]}', "a[0].b: the string holds a lone UTF-16 surrogate", "a[0].b"),
        (b'{"a": {"\\udc00": 1}}', "a key of a: the string holds a lone UTF-16 surrogate", "a"),
        (b'{"\\udc00": 1}', "a key of the request body: the string", None),
        (b'{"a": 1e309}', "the request body is not valid JSON: the number 1e309 is out of range", None),
        (b'{"a": -Infinity}', "the request body is not valid JSON: -Infinity is not a JSON number", None),
        (b'{"a": 1' + b"0" * 4300 + b"}", "the request body is not valid JSON: an integer has too many digits", None),
        (b'{"a": [1' + b"0" * 400 + b".5]}", "the request body is not valid JSON: the number 1000", None),
        (b'{"a": "\xed\xa0\x80"}', "the request body is not valid JSON: 'utf-8' codec can't decode", None),
    ]:
        with pytest.raises(ApiError) as e:
            parse_json_object(raw)
        assert e.value.status == 400 and e.value.message.startswith(message) and e.value.param == param, e.value.message
