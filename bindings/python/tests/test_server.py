"""leap-server over HTTP with the openai package and raw httpx: chat (streamed and not) against the
in-process API, stop strings, tools, JSON schema, text completions, models and health, prompt-cache reuse
across turns and restarts, 8 clients at once, a client that leaves mid-stream, and malformed requests."""
import concurrent.futures
import json
import time

import httpx
import pytest

import leap
from conftest import FIXTURES, MODELS
from server_process import start

pytest.importorskip("fastapi")
openai = pytest.importorskip("openai")
jsonschema = pytest.importorskip("jsonschema")

TINY = FIXTURES / "models" / "lfm2-tiny-q8_0.gguf"
SMOL = MODELS / "SmolLM2-135M-Instruct.Q4_1.gguf"
GREEDY = {"temperature": 0, "extra_body": {"repetition_penalty": 1}}
SYSTEM = {"role": "system", "content": "You are a helpful assistant."}
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The current weather in a city",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "maxLength": 24},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["city"]}}}
TIME = {"type": "function", "function": {
    "name": "get_time", "description": "The time in a time zone",
    "parameters": {"type": "object", "properties": {"zone": {"type": "string", "maxLength": 16}}, "required": ["zone"]}}}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    s = start("--model", TINY, "--ctx-size", 4096, "--parallel", 4, "--queue", 16, "--max-body", 1 << 20,
              log_path=tmp_path_factory.mktemp("tiny") / "server.log")
    yield s
    s.stop()


@pytest.fixture(scope="module")
def smol(tmp_path_factory):
    if not SMOL.exists():
        pytest.skip(f"{SMOL} missing (scripts/setup.sh fetches it)")
    s = start("--model", SMOL, "--ctx-size", 2048, "--alias", "smol",
              log_path=tmp_path_factory.mktemp("smol") / "server.log")
    yield s
    s.stop()


@pytest.fixture(scope="module")
def smol_model():
    if not SMOL.exists():
        pytest.skip(f"{SMOL} missing (scripts/setup.sh fetches it)")
    # With the server's in-memory prompt cache: a turn then evaluates its prompt in the server's two parts
    # (up to the snapshot, then the rest), so the answers agree bit for bit on every kernel path (a prompt
    # split elsewhere can differ in the last bits of its attention sums, enough to turn a near tie).
    with leap.load_model(SMOL, context_size=2048, cache=leap.CacheOptions(disk=False)) as m:
        yield m


def in_process(model, messages, **options):
    """The greedy answer of the Python API to the last message of ``messages``."""
    conv = model.create_conversation_from_history(messages[:-1])
    last = leap.ChatMessage(messages[-1]["role"], messages[-1]["content"])
    events = list(conv.generate_response(last, leap.GenerationOptions(temperature=0, repetition_penalty=1, **options)))
    return "".join(e.text for e in events if isinstance(e, leap.Chunk)), events[-1]


def stream_text(stream):
    content, finish, usage = [], None, None
    for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage
        for c in chunk.choices:
            if c.delta.content:
                content.append(c.delta.content)
            if c.finish_reason:
                finish = c.finish_reason
    return "".join(content), finish, usage


# ---- Chat ----------------------------------------------------------------------------------------


def test_chat_equals_the_python_api(smol, smol_model):
    messages = [SYSTEM, {"role": "user", "content": "Name three colors."}]
    expected, complete = in_process(smol_model, messages, max_tokens=24)
    client = smol.client()
    r = client.chat.completions.create(model="smol", messages=messages, max_tokens=24, **GREEDY)
    assert r.object == "chat.completion" and r.model == "smol" and r.id.startswith("chatcmpl-")
    assert r.choices[0].message.role == "assistant"
    assert r.choices[0].message.content == expected
    assert r.choices[0].finish_reason == ("length" if complete.stats.completion_tokens == 24 else "stop")
    assert r.usage.prompt_tokens == smol_model.prompt_token_count(messages)
    assert r.usage.completion_tokens == complete.stats.completion_tokens
    assert r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens
    # The same answer streamed, with the usage chunk last.
    stream = client.chat.completions.create(model="smol", messages=messages, max_tokens=24, stream=True,
                                            stream_options={"include_usage": True}, **GREEDY)
    text, finish, usage = stream_text(stream)
    assert text == expected and finish == r.choices[0].finish_reason
    assert usage.prompt_tokens == r.usage.prompt_tokens and usage.completion_tokens == r.usage.completion_tokens


def test_stop_strings_cut_the_text_server_side(smol, smol_model):
    messages = [SYSTEM, {"role": "user", "content": "Write one sentence about the sea."}]
    full, _ = in_process(smol_model, messages, max_tokens=32)
    words = full.split()
    assert len(words) >= 4, full
    stop = " " + words[3]  # a string that first occurs mid-answer, across token boundaries
    expected = full[:full.find(stop)]
    client = smol.client()
    r = client.chat.completions.create(model="smol", messages=messages, max_tokens=32, stop=[stop, "@@never@@"],
                                       **GREEDY)
    assert r.choices[0].message.content == expected and r.choices[0].finish_reason == "stop"
    text, finish, _ = stream_text(client.chat.completions.create(model="smol", messages=messages, max_tokens=32,
                                                                 stop=stop, stream=True, **GREEDY))
    assert text == expected and finish == "stop"


def test_tiny_chat_streamed_and_not_agree(tiny):
    client = tiny.client()
    messages = [{"role": "user", "content": [{"type": "text", "text": "Hello"}, {"type": "text", "text": " there"}]}]
    r = client.chat.completions.create(model="lfm2-tiny-q8_0", messages=messages, max_tokens=16, **GREEDY)
    text, finish, _ = stream_text(client.chat.completions.create(model="lfm2-tiny-q8_0", messages=messages,
                                                                 max_tokens=16, stream=True, **GREEDY))
    assert text == r.choices[0].message.content and finish == r.choices[0].finish_reason == "length"
    assert r.usage.completion_tokens == 16
    # The model file's name and an omitted model name are the loaded model too.
    assert client.chat.completions.create(model="lfm2-tiny-q8_0.gguf", messages=messages, max_tokens=16,
                                          **GREEDY).choices[0].message.content == text
    raw = httpx.post(tiny.base + "/v1/chat/completions", json={"messages": messages, "max_tokens": 16, "temperature": 0,
                                                               "repetition_penalty": 1})
    assert raw.status_code == 200 and raw.json()["choices"][0]["message"]["content"] == text


def test_sse_wire_format(tiny):
    body = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 4, "stream": True,
            "stream_options": {"include_usage": True}}
    with httpx.stream("POST", tiny.base + "/v1/chat/completions", json=body) as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        events = [line[len("data: "):] for line in r.iter_lines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    assert len({c["id"] for c in chunks}) == 1 and all(c["object"] == "chat.completion.chunk" for c in chunks)
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] == 4
    assert chunks[-2]["choices"][0]["finish_reason"] == "length" and chunks[-2]["choices"][0]["delta"] == {}
    assert all(c["usage"] is None for c in chunks[:-1])


def test_seeded_sampling_repeats(tiny):
    client = tiny.client()
    args = dict(model="", messages=[{"role": "user", "content": "Go"}], max_tokens=24, temperature=1.0, top_p=0.9,
                seed=1234, extra_body={"top_k": 50, "min_p": 0.01})
    a = client.chat.completions.create(**args).choices[0].message.content
    assert client.chat.completions.create(**args).choices[0].message.content == a


# ---- Tools and JSON ------------------------------------------------------------------------------


def check_call(call, tool):
    assert call.type == "function" and call.id.startswith("call_")
    assert call.function.name == tool["function"]["name"]
    jsonschema.validate(json.loads(call.function.arguments), tool["function"]["parameters"])


def test_required_and_named_tool_calls(tiny):
    client = tiny.client()
    messages = [{"role": "user", "content": "What is the weather in Paris?"}]
    r = client.chat.completions.create(model="", messages=messages, tools=[WEATHER], tool_choice="required",
                                       max_tokens=200, **GREEDY)
    choice = r.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    check_call(choice.message.tool_calls[0], WEATHER)
    r = client.chat.completions.create(model="", messages=messages, tools=[WEATHER, TIME],
                                       tool_choice={"type": "function", "function": {"name": "get_time"}},
                                       max_tokens=200, **GREEDY)
    check_call(r.choices[0].message.tool_calls[0], TIME)
    # Streamed: the call arrives as deltas (id, type and name first), then finish_reason tool_calls.
    calls, finish = {}, None
    for chunk in client.chat.completions.create(model="", messages=messages, tools=[WEATHER], tool_choice="required",
                                                max_tokens=200, stream=True, **GREEDY):
        for c in chunk.choices:
            for d in c.delta.tool_calls or []:
                entry = calls.setdefault(d.index, {"id": None, "name": "", "arguments": ""})
                entry["id"] = entry["id"] or d.id
                entry["name"] += d.function.name or ""
                entry["arguments"] += d.function.arguments or ""
            finish = c.finish_reason or finish
    assert finish == "tool_calls" and list(calls) == [0] and calls[0]["id"].startswith("call_")
    assert calls[0]["name"] == "get_weather"
    jsonschema.validate(json.loads(calls[0]["arguments"]), WEATHER["function"]["parameters"])


def test_tool_results_in_the_history(tiny):
    client = tiny.client()
    messages = [
        {"role": "user", "content": "What is the weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function", "function": {
            "name": "get_weather", "arguments": json.dumps({"city": "Paris"})}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "18 degrees, sunny"},
    ]
    r = client.chat.completions.create(model="", messages=messages, tools=[WEATHER], max_tokens=8, **GREEDY)
    assert r.choices[0].finish_reason in ("length", "stop", "tool_calls")
    assert r.usage.prompt_tokens > 0


def test_forced_tool_call_on_a_real_model(smol):
    r = smol.client().chat.completions.create(model="smol", messages=[{"role": "user", "content": "Weather in Rome?"}],
                                              tools=[WEATHER], tool_choice="required", max_tokens=64, **GREEDY)
    check_call(r.choices[0].message.tool_calls[0], WEATHER)


def test_json_schema_always_parses(tiny):
    schema = {"type": "object", "properties": {
        "name": {"type": "string", "maxLength": 20},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 10}, "maxItems": 3}},
        "required": ["name", "age", "tags"]}
    client = tiny.client()
    for seed in (1, 2, 3):
        r = client.chat.completions.create(model="", messages=[{"role": "user", "content": "A person, as JSON"}],
                                           response_format={"type": "json_schema", "json_schema": {
                                               "name": "person", "schema": schema, "strict": True}},
                                           max_tokens=400, temperature=1.0, seed=seed)
        assert r.choices[0].finish_reason == "stop"
        jsonschema.validate(json.loads(r.choices[0].message.content), schema)


def test_json_object_on_a_real_model(smol):
    r = smol.client().chat.completions.create(model="smol", messages=[{"role": "user", "content": "Describe Paris as JSON."}],
                                              response_format={"type": "json_object"}, max_tokens=300, **GREEDY)
    if r.choices[0].finish_reason == "stop":
        assert isinstance(json.loads(r.choices[0].message.content), dict)
    else:  # cut by max_tokens: still a prefix of an object
        assert r.choices[0].message.content.lstrip().startswith("{")


# ---- Text completions, models, health ------------------------------------------------------------


def test_text_completion_is_the_greedy_continuation(smol, smol_model):
    np = pytest.importorskip("numpy")
    prompt = "The capital of France is"
    tokens = smol_model.tokenize(prompt)
    ctx = smol_model.create_context(context_size=64)
    ctx.eval(tokens)
    expected = []
    for _ in range(8):
        t = int(np.argmax(np.asarray(ctx.logits())))
        expected.append(t)
        ctx.eval([t])
    ctx.close()
    client = smol.client()
    r = client.completions.create(model="smol", prompt=prompt, max_tokens=8, temperature=0)
    assert r.object == "text_completion" and r.choices[0].text == smol_model.detokenize(expected)
    assert r.usage.prompt_tokens == len(tokens) and r.usage.completion_tokens == 8
    assert r.choices[0].finish_reason == "length"
    streamed = "".join(c.choices[0].text for c in client.completions.create(
        model="smol", prompt=prompt, max_tokens=8, temperature=0, stream=True) if c.choices)
    assert streamed == r.choices[0].text


def test_models_and_health(smol, tiny):
    models = smol.client().models.list()
    assert [m.id for m in models.data] == ["smol"] and models.data[0].owned_by == "libleap"
    assert smol.client().models.retrieve("smol").id == "smol"
    h = tiny.health()
    assert h["status"] == "ok" and h["slots_idle"] + h["slots_processing"] == 4
    assert tiny.client().models.list().data[0].id == "lfm2-tiny-q8_0"


# ---- The prompt cache ------------------------------------------------------------------------------


def chat_turns(client, n_turns, max_tokens=12):
    """Turns of one chat, each request carrying the whole history; the usage of each."""
    messages, usages = [SYSTEM], []
    for i in range(n_turns):
        messages.append({"role": "user", "content": f"Question number {i + 1}: tell me something."})
        r = client.chat.completions.create(model="", messages=messages, max_tokens=max_tokens, **GREEDY)
        messages.append({"role": "assistant", "content": r.choices[0].message.content})
        usages.append(r.usage)
    return messages, usages


def common_prefix(a, b):
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def test_turn_two_reuses_the_cache(tiny):
    messages, usages = chat_turns(tiny.client(), 3)
    cached = [u.prompt_tokens_details.cached_tokens for u in usages]
    assert cached[0] == 0 and 0 < cached[1] < usages[1].prompt_tokens
    # What turn N restores, from the chat template: turn N-1 left (a) the part of its prompt that the prompt
    # of its history alone shares (the system prompt on turn 1, the previous exchange later), (b) its prompt
    # but the last position and (c) its prompt followed by its answer's tokens; turn N restores the longest
    # of them its own prompt starts with. (c) is predicted from the answer's text, tokenized again: it holds
    # when that gives as many tokens as the answer had.
    with leap.load_model(TINY, context_size=4096) as model:
        def tokens(ms):
            return model.tokenize(model.apply_chat_template(ms), add_special=False, parse_special=True)

        for turn in (1, 2):
            earlier = messages[:2 * turn]           # system, then user / assistant pairs, ending with a user
            now = tokens(messages[:2 * turn + 2])
            prompt = tokens(earlier)
            answer = model.tokenize(messages[2 * turn]["content"], add_special=False)
            left = [prompt[:common_prefix(tokens(earlier[:-1]), prompt)], prompt[:-1]]
            if len(answer) == usages[turn - 1].completion_tokens:
                left.append(prompt + answer)
            expected = max(len(p) for p in left if now[:len(p)] == p)
            assert cached[turn] == expected, (turn, cached, [len(p) for p in left])
            assert usages[turn].prompt_tokens == len(now)
            # Only what the turn adds to the one before is evaluated (the previous prompt's last position
            # aside, when the answer was not restored).
            assert usages[turn].prompt_tokens - cached[turn] <= len(now) - len(prompt) + 1
    assert cached[2] > cached[1]


def test_the_cache_survives_a_restart(tmp_path):
    cache = tmp_path / "cache"
    s = start("--model", TINY, "--ctx-size", 2048, "--cache-dir", cache)
    try:
        messages, usages = chat_turns(s.client(), 2)
    finally:
        s.stop()
    assert any(cache.rglob("*")), "no snapshot on disk"
    s = start("--model", TINY, "--ctx-size", 2048, "--cache-dir", cache)
    try:
        r = s.client().chat.completions.create(model="", messages=messages[:-1], max_tokens=12, **GREEDY)
    finally:
        s.stop()
    # The first request of the new process restores turn 2's prefix from disk, and answers the same.
    assert r.usage.prompt_tokens_details.cached_tokens >= usages[1].prompt_tokens_details.cached_tokens > 0
    assert r.choices[0].message.content == messages[-1]["content"]


# ---- Requests at once ------------------------------------------------------------------------------


def test_eight_clients_at_once(tiny):
    client = tiny.client()
    prompts = [[{"role": "user", "content": f"Tell me about the number {i}"}] for i in range(8)]
    alone = [client.chat.completions.create(model="", messages=p, max_tokens=48, **GREEDY).choices[0].message.content
             for p in prompts]

    def streamed(p):
        return stream_text(client.chat.completions.create(model="", messages=p, max_tokens=48, stream=True,
                                                          stream_options={"include_usage": True}, **GREEDY))

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        together = list(pool.map(streamed, prompts))
    # Each answer is its own: the one it gets alone (greedy), whatever else is generating.
    assert [t[0] for t in together] == alone
    assert all(t[1] == "length" and t[2].completion_tokens == 48 for t in together)
    assert tiny.health()["slots_processing"] == 0


def test_text_completions_at_once_are_the_ones_alone(tiny):
    # Completions of several clients share the model's decode steps (their contexts step together); each
    # keeps its own text, logprobs and seeded draws, mixed with chat turns in the same passes.
    client = tiny.client()
    bodies = [dict(prompt=f"Number {i} is", max_tokens=32, logprobs=2, **(GREEDY if i % 2 else
                                                                            {"temperature": 0.8, "seed": i}))
              for i in range(6)]
    chat = [{"role": "user", "content": "Tell me about the number 7"}]

    def complete(body):
        c = client.completions.create(model="", **body).choices[0]
        return c.text, c.logprobs.token_logprobs

    alone = [complete(b) for b in bodies]
    chat_alone = client.chat.completions.create(model="", messages=chat, max_tokens=32, **GREEDY).choices[0].message.content
    with concurrent.futures.ThreadPoolExecutor(7) as pool:
        together = [pool.submit(complete, b) for b in bodies]
        chat_together = pool.submit(lambda: client.chat.completions.create(
            model="", messages=chat, max_tokens=32, **GREEDY).choices[0].message.content)
        assert [f.result() for f in together] == alone
        assert chat_together.result() == chat_alone
    assert len({text for text, _ in alone}) > 1


def wait_idle(server, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        h = server.health()
        if h["slots_processing"] == 0 and h["queued"] == 0:
            return time.monotonic()
        time.sleep(0.01)
    raise AssertionError(f"the server stayed busy: {server.health()}")


@pytest.fixture(scope="module")
def single(tmp_path_factory):
    """One slot, a queue of one, and an API key."""
    s = start("--model", TINY, "--ctx-size", 4096, "--parallel", 1, "--queue", 1, "--api-key", "sesame",
              log_path=tmp_path_factory.mktemp("single") / "server.log")
    yield s
    s.stop()


LONG = {"messages": [{"role": "user", "content": "Count"}], "max_tokens": 4000, "temperature": 0}
KEY = {"Authorization": "Bearer sesame"}


def test_a_client_leaving_mid_stream_frees_its_slot(single):
    t0 = time.monotonic()
    r = httpx.post(single.base + "/v1/chat/completions", json=LONG, headers=KEY, timeout=120)
    full = time.monotonic() - t0  # the whole generation, for comparison
    assert r.json()["usage"]["completion_tokens"] == 4000
    with httpx.Client(timeout=30, headers=KEY) as c:
        with c.stream("POST", single.base + "/v1/chat/completions", json={**LONG, "stream": True}) as s:
            assert s.status_code == 200
            n = 0
            for line in s.iter_lines():
                n += line.startswith("data: ")
                if n == 5:
                    break
            left = time.monotonic()
    freed = wait_idle(single) - left
    assert freed < full / 4, (freed, full)
    # A non-streamed request whose client gives up stops too.
    with pytest.raises(httpx.TimeoutException):
        httpx.post(single.base + "/v1/chat/completions", json=LONG, headers=KEY, timeout=full / 10)
    left = time.monotonic()
    assert wait_idle(single) - left < full / 4
    r = httpx.post(single.base + "/v1/chat/completions", json={**LONG, "max_tokens": 4}, headers=KEY)
    assert r.status_code == 200 and r.json()["usage"]["completion_tokens"] == 4


def test_a_full_queue_answers_503(single):
    def post(max_tokens):
        return httpx.post(single.base + "/v1/chat/completions", json={**LONG, "max_tokens": max_tokens}, headers=KEY,
                          timeout=120)

    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        running = pool.submit(post, 4000)     # holds the one slot for seconds
        deadline = time.monotonic() + 10
        while single.health()["slots_processing"] == 0 and time.monotonic() < deadline:
            time.sleep(0.005)
        waiting = pool.submit(post, 4)        # takes the one place in the queue
        while single.health()["queued"] == 0 and time.monotonic() < deadline:
            time.sleep(0.005)
        r = httpx.post(single.base + "/v1/chat/completions", json=LONG, headers=KEY)
        assert r.status_code == 503 and int(r.headers["retry-after"]) > 0
        assert r.json()["error"]["code"] == "server_busy"
        assert running.result().status_code == 200
        assert waiting.result().json()["usage"]["completion_tokens"] == 4


def test_the_api_key(single):
    body = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "sesame"}):
        r = httpx.post(single.base + "/v1/chat/completions", json=body, headers=headers)
        assert r.status_code == 401 and r.json()["error"]["code"] == "invalid_api_key"
    assert httpx.get(single.base + "/v1/models").status_code == 401
    assert httpx.get(single.base + "/health").status_code == 200
    with pytest.raises(openai.AuthenticationError):
        single.client(api_key="wrong").chat.completions.create(model="", messages=body["messages"], max_tokens=2)
    r = single.client(api_key="sesame").chat.completions.create(model="", messages=body["messages"], max_tokens=2)
    assert r.usage.completion_tokens == 2


# ---- Malformed requests ----------------------------------------------------------------------------

USER = [{"role": "user", "content": "hi"}]
PNG_1PX = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="

BAD = [
    # (body, status, code, param)
    (b"{not json", 400, "invalid_json", None),
    (b"", 400, "invalid_json", None),
    ([1, 2], 400, "invalid_json", None),
    ({}, 400, "missing_required_parameter", "messages"),
    ({"messages": []}, 400, "invalid_value", "messages"),
    ({"messages": "hi"}, 400, "invalid_type", "messages"),
    ({"messages": [{"role": "king", "content": "hi"}]}, 400, "invalid_value", "messages[0].role"),
    ({"messages": [{"role": "user"}]}, 400, "missing_required_parameter", "messages[0].content"),
    ({"messages": [{"role": "user", "content": 5}]}, 400, "invalid_type", "messages[0].content"),
    ({"messages": [{"role": "user", "content": [{"type": "video", "video": "x"}]}]}, 400, "unsupported_value",
     "messages[0].content[0].type"),
    ({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": PNG_1PX}}]}]}, 400,
     "unsupported_content", "messages[0].content[0]"),
    ({"messages": [{"role": "user", "content": [{"type": "input_audio", "input_audio": {"data": "UklGRg==",
                                                                                        "format": "wav"}}]}]},
     400, "unsupported_content", "messages[0].content[0]"),
    ({"messages": USER + [{"role": "assistant", "content": "Hel"}]}, 400, "invalid_value", "messages[1].role"),
    ({"messages": USER + [{"role": "assistant", "content": None, "tool_calls": [{"type": "function", "function": {
        "name": "f", "arguments": "{oops"}}]}, {"role": "tool", "content": "1"}]}, 400, "invalid_value",
     "messages[1].tool_calls[0].function.arguments"),
    ({"messages": USER, "temperature": "hot"}, 400, "invalid_type", "temperature"),
    ({"messages": USER, "temperature": 7}, 400, "invalid_value", "temperature"),
    ({"messages": USER, "top_p": -0.5}, 400, "invalid_value", "top_p"),
    ({"messages": USER, "max_tokens": 0}, 400, "invalid_value", "max_tokens"),
    ({"messages": USER, "max_tokens": 10 ** 9}, 400, "invalid_value", "max_tokens"),
    ({"messages": USER, "max_completion_tokens": 1.5}, 400, "invalid_type", "max_completion_tokens"),
    ({"messages": USER, "n": 9}, 400, "invalid_value", "n"),
    ({"messages": USER, "n": 0}, 400, "invalid_value", "n"),
    ({"messages": USER, "stop": [1]}, 400, "invalid_type", "stop[0]"),
    ({"messages": USER, "stream": "yes"}, 400, "invalid_type", "stream"),
    ({"messages": USER, "seed": "x"}, 400, "invalid_type", "seed"),
    ({"messages": USER, "presence_penalty": 3}, 400, "invalid_value", "presence_penalty"),
    ({"messages": USER, "frequency_penalty": "x"}, 400, "invalid_type", "frequency_penalty"),
    ({"messages": USER, "top_logprobs": 3}, 400, "invalid_value", "top_logprobs"),
    ({"messages": USER, "logprobs": True, "top_logprobs": 50}, 400, "invalid_value", "top_logprobs"),
    ({"messages": USER, "logit_bias": {"1": 5}}, 400, "unsupported_value", "logit_bias"),
    ({"messages": USER, "logit_bias": {"one": 5}}, 400, "invalid_value", "logit_bias"),
    ({"messages": USER, "logit_bias": {"1": 101}}, 400, "invalid_value", "logit_bias.1"),
    ({"messages": USER, "logit_bias": [1]}, 400, "invalid_type", "logit_bias"),
    ({"messages": USER, "tools": [{"type": "function", "function": {"name": "bad-name"}}]}, 400, "invalid_value",
     "tools[0].function.name"),
    ({"messages": USER, "tools": [{"type": "function"}]}, 400, "missing_required_parameter", "tools[0].function"),
    ({"messages": USER, "tools": [WEATHER], "tool_choice": {"type": "function", "function": {"name": "nope"}}}, 400,
     "invalid_value", "tool_choice.function.name"),
    ({"messages": USER, "tool_choice": "required"}, 400, "invalid_value", "tool_choice"),
    ({"messages": USER, "tools": [WEATHER], "tool_choice": "sometimes"}, 400, "invalid_value", "tool_choice"),
    ({"messages": USER, "response_format": {"type": "yaml"}}, 400, "invalid_value", "response_format.type"),
    ({"messages": USER, "response_format": {"type": "json_schema"}}, 400, "missing_required_parameter",
     "response_format.json_schema"),
    ({"messages": USER, "response_format": {"type": "json_schema", "json_schema": {
        "name": "s", "schema": {"type": "string", "pattern": "a+"}}}}, 400, "invalid_value",
     "response_format.json_schema.schema"),
    ({"messages": USER, "response_format": {"type": "json_schema", "json_schema": {
        "name": "s", "schema": {"type": "object", "properties": {"a": {"$ref": "#/nowhere"}}}}}}, 400,
     "invalid_value", "response_format.json_schema.schema"),
    ({"messages": USER, "tools": [{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"x": {"type": "string", "pattern": "^a"}}}}}], "tool_choice": "required"},
     400, "invalid_value", "tools"),
    ({"messages": USER, "modalities": ["text", "audio"]}, 400, "unsupported_value", "modalities"),
    ({"messages": USER, "model": 7}, 400, "invalid_type", "model"),
    ({"messages": [{"role": "user", "content": "word " * 5000}]}, 400, "context_length_exceeded", "messages"),
]


@pytest.mark.parametrize("body,status,code,param", BAD, ids=[f"{i}" for i in range(len(BAD))])
def test_malformed_requests(tiny, body, status, code, param):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    r = httpx.post(tiny.base + "/v1/chat/completions", content=data, headers={"Content-Type": "application/json"})
    assert r.status_code == status, r.text
    error = r.json()["error"]
    assert set(error) == {"message", "type", "param", "code"} and error["message"]
    assert (error["code"], error["param"]) == (code, param), error
    assert error["type"] == "invalid_request_error"


def test_other_errors_and_the_server_keeps_serving(tiny):
    base = tiny.base
    r = httpx.post(base + "/v1/chat/completions", json={"model": "gpt-4o", "messages": USER})
    assert r.status_code == 404 and r.json()["error"]["code"] == "model_not_found"
    with pytest.raises(openai.NotFoundError):
        tiny.client().chat.completions.create(model="gpt-4o", messages=USER)
    assert httpx.get(base + "/v1/models/gpt-4o").status_code == 404
    r = httpx.get(base + "/v1/nothing")
    assert r.status_code == 404 and set(r.json()["error"]) == {"message", "type", "param", "code"}
    r = httpx.get(base + "/v1/chat/completions")
    assert r.status_code == 405 and "error" in r.json()
    # Over --max-body (1 MiB): refused from Content-Length, and while reading a body sent without one.
    big = json.dumps({"messages": [{"role": "user", "content": "x" * (2 << 20)}]}).encode()
    r = httpx.post(base + "/v1/chat/completions", content=big, headers={"Content-Type": "application/json"})
    assert r.status_code == 413 and r.json()["error"]["code"] == "request_too_large"

    def chunks():
        for i in range(0, len(big), 65536):
            yield big[i:i + 65536]

    r = httpx.post(base + "/v1/chat/completions", content=chunks(), headers={"Content-Type": "application/json"})
    assert r.status_code == 413
    # Text completions check their parameters too.
    for body, param in (({"prompt": 5}, "prompt"), ({}, "prompt"), ({"prompt": ["a", "b"]}, "prompt"),
                        ({"prompt": "a", "max_tokens": -1}, "max_tokens"), ({"prompt": [999999]}, "prompt")):
        r = httpx.post(base + "/v1/completions", json=body)
        assert r.status_code == 400 and r.json()["error"]["param"] == param, r.text
    r = httpx.post(base + "/v1/completions", json={"prompt": "word " * 5000})
    assert r.status_code == 400 and r.json()["error"]["code"] == "context_length_exceeded"
    # After all of that, the server still answers.
    r = tiny.client().chat.completions.create(model="", messages=USER, max_tokens=3)
    assert r.usage.completion_tokens == 3
    assert tiny.proc.poll() is None
    log = tiny.output()
    assert "POST /v1/chat/completions 200" in log and "tokens prompt=" in log


def test_accepted_parameters(tiny):
    # Validated and accepted; logprobs come with each content token (test_server_logprobs.py checks their values).
    r = tiny.client().chat.completions.create(model="", messages=USER, max_tokens=3, presence_penalty=0.5,
                                              frequency_penalty=0.5, logprobs=True, top_logprobs=2, user="u1",
                                              parallel_tool_calls=False, extra_body={"metadata": {"k": "v"}})
    assert r.usage.completion_tokens == 3
    assert all(len(e.top_logprobs) == 2 for e in r.choices[0].logprobs.content)


def test_a_bundle(tmp_path):
    s = start("--bundle", FIXTURES.parent.parent / "examples" / "bundles" / "lfm2-tiny.json", "--alias", "b",
              log_path=tmp_path / "server.log")
    try:
        assert [m.id for m in s.client().models.list().data] == ["b"]
        r = s.client().chat.completions.create(model="b", messages=USER, max_tokens=3)
        assert r.usage.completion_tokens == 3
    finally:
        s.stop()


def test_a_model_that_does_not_load_ends_the_process(tmp_path):
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"not a gguf file at all")
    from server_process import Server

    s = Server("--model", bad, log_path=tmp_path / "server.log")
    try:
        assert s.proc.wait(timeout=60) == 1
        assert "not a GGUF file" in s.output()
    finally:
        s.stop()
