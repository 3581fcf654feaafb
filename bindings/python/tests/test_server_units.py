"""leap-server's parts in process: stop strings held back across chunks, a generation's events made into
OpenAI's message and deltas (reasoning, parsed tool calls), the slot queue, and the answers while the model
loads."""
import asyncio
import json

import pytest

import leap

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from leap.server.app import ServerSettings, create_app  # noqa: E402
from leap.server.engine import Engine, ModelSettings, Slots  # noqa: E402
from leap.server.errors import ApiError  # noqa: E402
from leap.server.turn import ChatTurn, StopMatcher  # noqa: E402

STATS = leap.GenerationStats(prompt_tokens=7, completion_tokens=5, total_tokens=12, tokens_per_second=1.0,
                             cached_prompt_tokens=3)


def complete(reason=leap.GenerationFinishReason.STOP):
    return leap.Complete(leap.ChatMessage("assistant", ""), reason, STATS)


def run_matcher(stops, pieces):
    m = StopMatcher(stops)
    out = [m.push(p) for p in pieces]
    return out, m.flush(), m.matched


@pytest.mark.parametrize("stops,pieces,sent,matched", [
    (["END"], ["hello E", "N", "D more"], "hello ", True),
    (["END"], ["hello E", "NOUGH"], "hello ENOUGH", False),
    (["\n\n", "###"], ["a\n", "b\n", "\n", "c"], "a\nb", True),
    (["abc"], ["xxab"], "xxab", False),               # held back until the end, then sent
    (["ab", "b"], ["xab"], "x", True),                # the earliest match wins
    ([], ["anything"], "anything", False),
])
def test_stop_matcher(stops, pieces, sent, matched):
    out, rest, was_matched = run_matcher(stops, pieces)
    assert "".join(out) + rest == sent and was_matched == matched


def test_stop_matcher_never_sends_part_of_a_stop_string():
    m = StopMatcher(["STOP"])
    assert m.push("abcST") == "abc"
    assert m.push("O") == ""
    assert m.push("P and more") == "" and m.matched


def test_turn_with_reasoning_and_a_stop_string():
    stopped = []
    turn = ChatTurn(["</answer>"], forced_call=False, stop_generation=lambda: stopped.append(True))
    deltas = []
    for e in [leap.ReasoningChunk("Let me think."), leap.Chunk("<answer>4</ans"), leap.Chunk("wer> trailing"),
              complete(leap.GenerationFinishReason.INTERRUPTED)]:
        deltas += turn.feed(e)
    assert deltas == [{"reasoning_content": "Let me think."}, {"content": "<answer>4"}]
    assert stopped and turn.finish_reason == "stop"
    msg = turn.message()
    assert msg["content"] == "<answer>4" and msg["reasoning_content"] == "Let me think."


def test_turn_with_parsed_function_calls():
    turn = ChatTurn([], forced_call=False, stop_generation=lambda: None)
    calls = leap.FunctionCalls([leap.LeapFunctionCall("get_weather", {"city": "Paris"}),
                                leap.LeapFunctionCall("now", {})])
    deltas = turn.feed(calls) + turn.feed(complete())
    assert [d["tool_calls"][0]["index"] for d in deltas] == [0, 1]
    first = deltas[0]["tool_calls"][0]
    assert first["type"] == "function" and first["id"].startswith("call_")
    assert json.loads(first["function"]["arguments"]) == {"city": "Paris"}
    assert turn.finish_reason == "tool_calls"
    msg = turn.message()
    assert msg["content"] is None and [c["function"]["name"] for c in msg["tool_calls"]] == ["get_weather", "now"]
    assert len({c["id"] for c in msg["tool_calls"]}) == 2


def test_forced_call_cut_short_is_returned_as_text():
    turn = ChatTurn([], forced_call=True, stop_generation=lambda: None)
    assert turn.feed(leap.Chunk('{"name": "f", "argu')) == []
    deltas = turn.feed(complete(leap.GenerationFinishReason.MAX_TOKENS))
    assert deltas == [{"content": '{"name": "f", "argu'}] and turn.finish_reason == "length"


def test_slots_queue_and_refuse():
    async def scenario():
        slots = Slots(parallel=1, queue=1)
        await slots.acquire()
        waiter = asyncio.ensure_future(slots.acquire())
        await asyncio.sleep(0)
        assert slots.waiting == 1
        with pytest.raises(ApiError) as e:
            await slots.acquire()
        assert e.value.status == 503 and e.value.headers["Retry-After"]
        # A waiter that leaves gives up its place in the queue.
        waiter.cancel()
        await asyncio.sleep(0)
        assert slots.waiting == 0
        second = asyncio.ensure_future(slots.acquire())
        await asyncio.sleep(0)
        slots.release()              # handed to the waiter, not freed
        await second
        assert slots.active == 1
        slots.release()
        assert slots.active == 0

    asyncio.run(scenario())


def test_while_loading():
    engine = Engine(ModelSettings(model="never-loaded.gguf", alias="m"))
    with TestClient(create_app(engine, ServerSettings(), load=False)) as client:
        r = client.get("/health")
        assert r.status_code == 503 and r.json()["error"]["code"] == "model_loading"
        r = client.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": "hi"}]})
        assert r.status_code == 503 and r.headers["retry-after"] == "1"
        assert client.get("/v1/models").json()["data"][0]["id"] == "m"


def png_bytes(width=8, height=8):
    import io

    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (width, height), (200, 30, 60)).save(out, format="PNG")
    return out.getvalue()


def test_calls_that_do_not_parse_become_content():
    """The server asks the library to keep a tool call it cannot parse as the reply's content (as vLLM and
    llama.cpp's server do) instead of failing the request."""
    from leap.server.chat import ModelCaps, parse_chat_request
    from leap.server.media import MediaLimits

    tool = {"type": "function", "function": {"name": "now", "parameters": {"type": "object", "properties": {}}}}
    body = {"messages": [{"role": "user", "content": "Time?"}], "tools": [tool]}
    options = parse_chat_request(body, ModelCaps("m"), MediaLimits(), 100).options()
    assert options.function_call_parser == "lfm"
    assert options.unparsed_function_calls_as_text is True
    assert options._to_c()[0].unparsed_function_calls_as_text == 1


def test_remote_media_only_when_allowed():
    import http.server
    import threading

    from leap.server.chat import ModelCaps, parse_chat_request, remote_urls
    from leap.server.media import MediaLimits, fetch_remote

    png = png_bytes()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = png if self.path == "/cat.png" else b""
            self.send_response(200 if body else 404)
            self.send_header("Content-Type", "image/png")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{httpd.server_address[1]}/cat.png"
        body = {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}}]}]}
        caps = ModelCaps("m", images=True)
        with pytest.raises(ApiError) as e:
            parse_chat_request(body, caps, MediaLimits(), 100)
        assert e.value.code == "remote_media_disabled"
        with pytest.raises(ApiError) as e:
            asyncio.run(fetch_remote(url, MediaLimits(), "p"))
        assert e.value.code == "remote_media_disabled"
        allowed = MediaLimits(allow_remote=True)
        assert remote_urls(body) == [url]
        fetched = {url: asyncio.run(fetch_remote(url, allowed, "p"))}
        assert fetched[url] == ("image/png", png)
        req = parse_chat_request(body, caps, allowed, 100, fetched)
        image = req.message.content[0]
        assert isinstance(image, leap.Image) and image.jpeg[:2] == b"\xff\xd8"
        with pytest.raises(ApiError) as e:
            asyncio.run(fetch_remote(url, MediaLimits(allow_remote=True, max_media_bytes=10), "p"))
        assert e.value.code == "invalid_url"
        with pytest.raises(ApiError) as e:
            asyncio.run(fetch_remote(url.replace("cat", "dog"), allowed, "p"))
        assert "404" in e.value.message
    finally:
        httpd.shutdown()


def test_cors_preflight_needs_no_key():
    engine = Engine(ModelSettings(model="never-loaded.gguf", alias="m"))
    settings = ServerSettings(api_key="k", cors_origins=["http://example.test"])
    with TestClient(create_app(engine, settings, load=False)) as client:
        r = client.options("/v1/chat/completions", headers={"Origin": "http://example.test",
                                                            "Access-Control-Request-Method": "POST",
                                                            "Access-Control-Request-Headers": "authorization"})
        assert r.status_code == 200 and r.headers["access-control-allow-origin"] == "http://example.test"
        assert client.get("/v1/models").status_code == 401
        assert client.get("/v1/models", headers={"Authorization": "Bearer k"}).status_code == 200


def test_voice_activity_on_a_tone_between_silences():
    np = pytest.importorskip("numpy")
    from leap.server.vad import VadSettings, VoiceActivity

    rate = 16000

    def tone(ms, dbfs):
        t = np.arange(rate * ms // 1000) / rate
        return (np.sin(2 * np.pi * 440 * t) * 32767 * 10 ** (dbfs / 20) * np.sqrt(2)).astype("<i2")

    quiet = np.zeros(rate // 2, dtype="<i2")
    loud = np.concatenate([quiet, tone(1000, -20), quiet, quiet]).tobytes()
    settings = VadSettings(threshold=0.5, prefix_padding_ms=300, silence_duration_ms=500)
    vad = VoiceActivity(settings, rate)
    events = []
    for i in range(0, len(loud), 3200 + 2):  # pieces that do not fall on frames
        events += vad.push(loud[i:i + 3202])
    # The tone runs 500..1500 ms: the start less 300 ms of padding, the stop 500 ms of silence after it.
    assert [(k, vad.ms(s)) for k, s in events] == [("started", 200), ("stopped", 2000)]
    # A -50 dBFS tone is below threshold 0.5 (-40 dBFS) and above threshold 0.2 (-58 dBFS).
    soft = np.concatenate([quiet, tone(1000, -50), quiet, quiet]).tobytes()
    assert VoiceActivity(settings, rate).push(soft) == []
    low = VadSettings(threshold=0.2, prefix_padding_ms=0, silence_duration_ms=200)
    assert [(k, s * 1000 // rate) for k, s in VoiceActivity(low, rate).push(soft)] == [("started", 500),
                                                                                         ("stopped", 1700)]


def random_json(rng, depth=0):
    kinds = ["null", "bool", "int", "float", "str"] + (["list", "dict"] if depth < 3 else [])
    kind = rng.choice(kinds)
    if kind == "null":
        return None
    if kind == "bool":
        return rng.random() < 0.5
    if kind == "int":
        return rng.choice([0, 1, -1, 2, 8, 9, 100, 101, -101, 10 ** 20, rng.randint(-1000, 1000)])
    if kind == "float":
        return rng.choice([0.5, -0.0, 1e308, float("inf"), float("nan"), rng.uniform(-200, 200)])
    if kind == "str":
        return rng.choice(["", "1", "42", "-3", "x", "server_vad", "semantic_vad", "\u00e9", "1" * 40, " 7"])
    if kind == "list":
        return [random_json(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    keys = ["type", "threshold", "prefix_padding_ms", "silence_duration_ms", "create_response", "interrupt_response",
            "idle_timeout_ms", "1", "42", "x", "n", "logit_bias"]
    return {rng.choice(keys): random_json(rng, depth + 1) for _ in range(rng.randint(0, 4))}


def test_fuzz_turn_detection_n_and_logit_bias():
    # Seeded random values in the fields these parsers read: each is accepted or refused with the error the
    # server turns into a 400 / an error event, nothing else; the voice detector takes any byte string.
    import random

    from leap.server.schemas import Fields, parse_sampling
    from leap.server.vad import VadSettings, VoiceActivity, parse_turn_detection

    rng = random.Random(35)
    for _ in range(3000):
        value = random_json(rng)
        try:
            settings = parse_turn_detection(value, "turn_detection")
        except ValueError as e:
            assert str(e).startswith("turn_detection")
        else:
            assert settings is None or 0 <= settings.threshold <= 1
        body = {"n": random_json(rng), "logit_bias": random_json(rng)}
        try:
            s = parse_sampling(Fields(body), 100)
        except ApiError as e:
            assert e.status == 400 and e.param and e.param.split(".")[0] in ("n", "logit_bias"), (body, e.param)
        else:
            assert 1 <= s.n <= 8 and all(-100 <= b <= 100 for b in s.logit_bias.values())
    vad = VoiceActivity(VadSettings(silence_duration_ms=20, prefix_padding_ms=0), 16000)
    seen = 0
    for _ in range(300):
        data = bytes(rng.getrandbits(8) for _ in range(2 * rng.randint(0, 700)))
        seen += len(data) // 2
        for kind, sample in vad.push(data):
            assert kind in ("started", "stopped") and 0 <= sample <= seen
    assert vad.samples_seen == seen


HOSTILE = "x" * 150_000
HI = [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize("body,param", [
    ({"messages": [{"role": HOSTILE, "content": "hi"}]}, "messages[0].role"),
    ({"messages": [{"role": "user", "content": [{"type": HOSTILE}]}]}, "messages[0].content[0].type"),
    ({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": "ftp:" + HOSTILE}]}]}, None),
    ({"messages": HI, "tool_choice": HOSTILE}, "tool_choice"),
    ({"messages": HI, "tool_choice": {"type": "function", "function": {"name": HOSTILE}}}, "tool_choice"),
    ({"messages": HI, "tools": [{"type": "function", "function": {"name": HOSTILE + "!"}}]}, "tools[0].function.name"),
    ({"messages": HI, "tools": [{"type": HOSTILE}]}, "tools[0].type"),
    ({"messages": HI, "modalities": [HOSTILE]}, "modalities[0]"),
    ({"messages": HI, "reasoning_effort": HOSTILE}, "reasoning_effort"),
    ({"messages": HI, "chat_template_kwargs": {HOSTILE: True}}, "chat_template_kwargs."),
    ({"messages": HI, "logit_bias": {"1" * 150_000: 1}}, "logit_bias"),
    ({"messages": HI, "temperature": 10 ** 300}, "temperature"),
    ({"messages": HI, "audio": {"format": HOSTILE}, "modalities": ["text", "audio"]}, None),
])
def test_a_hostile_value_is_not_echoed_whole(body, param):
    """A 150 KB bad value makes a short error that names the field and says how long the value was."""
    from leap.server.chat import ModelCaps, parse_chat_request
    from leap.server.media import MediaLimits

    with pytest.raises(ApiError) as e:
        parse_chat_request(body, ModelCaps("m", images=True, audio_output=True), MediaLimits(), 100)
    message, where = e.value.message, e.value.param
    assert len(message) < 400 and (where is None or len(where) < 200), (len(message), where and len(where))
    assert param is None or (message.startswith(param) and where.startswith(param)), (message[:200], where)
    assert "characters)" in message, message[:300]


def test_hostile_values_elsewhere_are_not_echoed_whole():
    from leap.server.errors import from_leap_error
    from leap.server.speech import parse_voice
    from leap.server.truncation import parse_truncation
    from leap.server.vad import parse_turn_detection

    errors = []
    for call in (lambda: parse_voice(HOSTILE, "voice"), lambda: parse_truncation(HOSTILE, "session.truncation", 9),
                 lambda: Engine(ModelSettings(model="m.gguf", alias="m")).check_model_name(HOSTILE)):
        with pytest.raises(ApiError) as e:
            call()
        errors.append(e.value.message)
    with pytest.raises(ValueError) as v:
        parse_turn_detection({"type": HOSTILE}, "turn_detection")
    errors.append(str(v.value))
    for message in errors:
        assert len(message) < 400 and "150000 characters" in message, message[:300]
    # The library's own messages (which may quote what it was given) are passed on bounded too.
    e = from_leap_error(leap.InvalidArgumentError("json_schema_constraint: unknown type " + HOSTILE))
    assert e.message.startswith("json_schema_constraint: unknown type xxx") and len(e.message) < 1100
    assert "150037 characters" in e.message


def test_truncation_cut_against_a_linear_scan():
    """choose_cut's bisection finds what scanning every later cut point finds: the current cut while it fits
    the limit, else the first point whose tokens fit the target, else the last point."""
    import random

    from leap.server.truncation import choose_cut, cut_points

    rng = random.Random(7)
    for _ in range(2000):
        roles = [rng.choice([leap.Role.USER, leap.Role.ASSISTANT, leap.Role.TOOL, leap.Role.SYSTEM])
                 for _ in range(rng.randint(1, 30))]
        sizes = [rng.randint(1, 50) for _ in roles]
        points = cut_points(roles)
        if not points:
            continue
        current = rng.choice(points)
        limit = rng.randint(0, sum(sizes))
        target = rng.randint(0, limit)
        counted = []

        def post_tokens(cut):
            counted.append(cut)
            return sum(sizes[cut:])

        cut = choose_cut(points, current, post_tokens, limit, target)
        later = [p for p in points if p >= current]
        if sum(sizes[current:]) <= limit:
            expected = current
        else:
            expected = next((p for p in later if sum(sizes[p:]) <= target), later[-1])
        assert cut == expected and roles[cut] in (leap.Role.USER, leap.Role.SYSTEM)
        assert len(counted) <= 2 + len(later).bit_length()
