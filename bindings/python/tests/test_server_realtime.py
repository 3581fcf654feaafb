"""leap-server's /v1/realtime WebSocket: a spoken reply to committed audio equals the chat endpoint's answer
to the same WAV (audio and transcript, at 16 and 24 kHz input), the conversation goes on over turns, the
example voice client and the openai package's client.realtime.connect get the same reply, a response can be
cancelled, text-only sessions answer as chat does, the API key guards the socket, client mistakes are
error events that leave the socket open, and a conversation longer than the context is truncated as the
session's ``truncation`` says (counted as the library counts its prompts)."""
import base64
import json
import subprocess
import sys
import wave

import httpx
import pytest

from conftest import REPO
from server_process import start

pytest.importorskip("fastapi")
websockets = pytest.importorskip("websockets")
from websockets.sync.client import connect  # noqa: E402

from test_server_audio import CLIP, MMPROJ, MODEL, TEXT_MODEL, TOKENIZER, VOCODER  # noqa: E402 (the same fixtures)
GREEDY_SESSION = {"temperature": 0, "audio_temperature": 0}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    s = start("--model", MODEL, "--mmproj", MMPROJ, "--audio-decoder", VOCODER, "--audio-tokenizer", TOKENIZER,
              "--ctx-size", 2048, "--max-tokens", 40, log_path=tmp_path_factory.mktemp("realtime") / "server.log")
    yield s
    s.stop()


def clip_pcm():
    with wave.open(str(CLIP)) as w:
        assert (w.getframerate(), w.getsampwidth(), w.getnchannels()) == (16000, 2, 1)
        return w.readframes(w.getnframes())


def wav_of(pcm, rate):
    import io

    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(pcm)
    return out.getvalue()


def chat_reply(server, wav, **extra):
    """(PCM16, transcript) of the chat endpoint's spoken answer to ``wav``."""
    body = {"messages": [{"role": "user", "content": [{"type": "input_audio", "input_audio": {
        "data": base64.b64encode(wav).decode(), "format": "wav"}}]}], "modalities": ["text", "audio"],
        "audio": {"voice": "alloy", "format": "pcm16"}, "temperature": 0, "audio_temperature": 0, "max_tokens": 40, **extra}
    r = httpx.post(server.base + "/v1/chat/completions", json=body, timeout=60)
    assert r.status_code == 200, r.text
    audio = r.json()["choices"][0]["message"]["audio"]
    return base64.b64decode(audio["data"]), audio["transcript"]


class Session:
    def __init__(self, server, headers=None, path="/v1/realtime"):
        self.ws = connect(server.base.replace("http", "ws") + path, additional_headers=headers or {},
                          max_size=None, open_timeout=10).__enter__()
        self.created = self.recv()
        assert self.created["type"] == "session.created"

    def send(self, event):
        self.ws.send(json.dumps(event))

    def recv(self):
        return json.loads(self.ws.recv(timeout=60))

    def until(self, kind):
        events = []
        while True:
            e = self.recv()
            events.append(e)
            assert e["type"] != "error" or kind == "error", e
            if e["type"] == kind:
                return events

    def error(self, event):
        self.send(event)
        e = self.recv()
        assert e["type"] == "error", e
        return e["error"]

    def speak(self, pcm, chunk=3200):
        for i in range(0, len(pcm), chunk):
            self.send({"type": "input_audio_buffer.append", "audio": base64.b64encode(pcm[i:i + chunk]).decode()})
        self.send({"type": "input_audio_buffer.commit"})
        events = [self.recv() for _ in range(3)]
        assert [e["type"] for e in events] == ["input_audio_buffer.committed", "conversation.item.added",
                                               "conversation.item.done"]
        assert events[0]["item_id"] == events[1]["item"]["id"]

    def respond(self, **response):
        self.send({"type": "response.create", **({"response": response} if response else {})})
        events = self.until("response.done")
        audio = b"".join(base64.b64decode(e["delta"]) for e in events if e["type"] == "response.output_audio.delta")
        text = "".join(e["delta"] for e in events if e["type"] == "response.output_audio_transcript.delta")
        return events, audio, text

    def close(self):
        self.ws.close()


def test_a_spoken_reply_equals_the_chat_endpoints(server):
    pcm = clip_pcm()
    expected_audio, expected_text = chat_reply(server, CLIP.read_bytes())
    s = Session(server)
    try:
        s.send({"type": "session.update", "session": {"type": "realtime", "audio": {"input": {
            "format": {"type": "audio/pcm", "rate": 16000}, "turn_detection": None}}, **GREEDY_SESSION}})
        updated = s.recv()
        assert updated["type"] == "session.updated"
        assert updated["session"]["audio"]["input"]["format"] == {"type": "audio/pcm", "rate": 16000}
        s.speak(pcm)
        events, audio, text = s.respond()
        kinds = [e["type"] for e in events]
        assert kinds[:4] == ["response.created", "response.output_item.added", "conversation.item.added",
                             "response.content_part.added"]
        assert kinds[-6:] == ["response.output_audio.done", "response.output_audio_transcript.done",
                              "response.content_part.done", "response.output_item.done", "conversation.item.done",
                              "response.done"]
        assert audio == expected_audio and len(audio) > 10000 and text == expected_text
        done = events[-1]["response"]
        assert done["status"] in ("completed", "incomplete") and done["usage"]["output_tokens"] > 0
        assert done["output"][0]["content"][0] == {"type": "output_audio", "transcript": text}
        # A second turn answers with the whole conversation (the first reply's audio included).
        s.speak(pcm[: len(pcm) // 2])
        events, audio2, _ = s.respond()
        assert events[-1]["response"]["status"] in ("completed", "incomplete") and audio2
        assert events[-1]["response"]["usage"]["input_tokens"] > done["usage"]["input_tokens"]
    finally:
        s.close()
    # 24 kHz input: the same samples, read at 24 kHz by both endpoints.
    expected_audio, expected_text = chat_reply(server, wav_of(pcm, 24000))
    s = Session(server)
    try:
        assert s.created["session"]["audio"]["input"]["format"]["rate"] == 24000
        s.send({"type": "session.update", "session": GREEDY_SESSION})
        assert s.recv()["type"] == "session.updated"
        s.speak(pcm)
        _, audio, text = s.respond()
        assert audio == expected_audio and text == expected_text
    finally:
        s.close()


def test_the_example_client_writes_the_reply(server, tmp_path):
    expected_audio, _ = chat_reply(server, CLIP.read_bytes())
    out = tmp_path / "reply.wav"
    url = server.base.replace("http", "ws") + "/v1/realtime"
    run = subprocess.run([sys.executable, str(REPO / "examples" / "realtime_client.py"), "--url", url, "--greedy",
                          str(CLIP), str(out)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    with wave.open(str(out)) as w:
        assert (w.getframerate(), w.getnchannels(), w.getsampwidth()) == (24000, 1, 2)
        assert w.readframes(w.getnframes()) == expected_audio


def test_cancel_and_mistakes_keep_the_socket_open(server):
    s = Session(server)
    try:
        e = s.error({"type": "conversation.wobble", "event_id": "evt_1"})
        assert (e["code"], e["event_id"]) == ("invalid_event_type", "evt_1")
        assert s.error({"type": "input_audio_buffer.append", "audio": "@@not base64@@"})["code"] == "invalid_value"
        assert s.error({"type": "input_audio_buffer.append", "audio": base64.b64encode(b"abc").decode()})["code"] == \
            "invalid_value"
        assert s.error({"type": "input_audio_buffer.commit"})["code"] == "input_audio_buffer_commit_empty"
        assert s.error({"type": "response.create"})["code"] == "conversation_empty"
        assert s.error({"type": "response.cancel"})["code"] == "response_cancel_not_active"
        e = s.error({"type": "session.update", "session": {"audio": {"input": {"turn_detection": {"type": "semantic_vad"}}}}})
        assert (e["code"], e["param"]) == ("unsupported_value", "session.audio.input.turn_detection")
        e = s.error({"type": "session.update", "session": {"audio": {"input": {"turn_detection": {"threshold": 2}}}}})
        assert e["code"] == "invalid_value" and "threshold" in e["message"]
        e = s.error({"type": "session.update", "session": {"tools": [{"type": "function", "name": "bad name"}]}})
        assert e["param"] == "session.tools[0].function.name"
        e = s.error({"type": "conversation.item.create", "item": {"type": "function_call_output", "call_id": "call_x",
                                                                   "output": "1"}})
        assert e["param"] == "item.call_id"
        e = s.error({"type": "session.update", "session": {"audio": {"input": {"format": {"type": "audio/pcm",
                                                                                          "rate": 8000}}}}})
        assert e["param"] == "session.audio.input.format.rate"
        assert s.error({"type": "session.update", "session": {"audio": {"output": {"voice": "robot"}}}})["code"] == \
            "unsupported_value"
        s.ws.send("not json")
        assert s.recv()["error"]["code"] == "invalid_json"
        # A buffer cleared is gone.
        s.send({"type": "input_audio_buffer.append", "audio": base64.b64encode(bytes(4000)).decode()})
        s.send({"type": "input_audio_buffer.clear"})
        assert s.recv()["type"] == "input_audio_buffer.cleared"
        assert s.error({"type": "input_audio_buffer.commit"})["code"] == "input_audio_buffer_commit_empty"
        # Cancelled at once: the response ends cancelled, and the socket still serves.
        s.speak(clip_pcm())
        s.send({"type": "response.create"})
        s.send({"type": "response.cancel"})
        events = s.until("response.done")
        assert events[-1]["response"]["status"] == "cancelled"
        assert s.error({"type": "response.cancel"})["code"] == "response_cancel_not_active"
        s.speak(clip_pcm())
        _, audio, _ = s.respond()
        assert audio
    finally:
        s.close()


def test_text_sessions_and_the_api_key(tmp_path):
    s = start("--model", TEXT_MODEL, "--ctx-size", 512, "--api-key", "sesame", log_path=tmp_path / "server.log")
    try:
        with pytest.raises(websockets.exceptions.InvalidStatus):
            Session(s)
        with pytest.raises(websockets.exceptions.InvalidStatus):
            Session(s, headers={"Authorization": "Bearer wrong"})
        r = httpx.post(s.base + "/v1/chat/completions", headers={"Authorization": "Bearer sesame"}, timeout=30, json={
            "messages": [{"role": "user", "content": "Hello"}], "max_tokens": 8, "temperature": 0})
        expected = r.json()["choices"][0]["message"]["content"]
        rt = Session(s, headers={"Authorization": "Bearer sesame"})
        try:
            rt.send({"type": "conversation.item.create", "item": {"type": "message", "role": "user",
                                                                   "content": [{"type": "input_text", "text": "Hello"}]}})
            assert [rt.recv()["type"] for _ in range(2)] == ["conversation.item.added", "conversation.item.done"]
            # The model cannot speak: audio output is refused, text output answers as chat does.
            assert "cannot speak" in rt.error({"type": "response.create"})["message"]
            rt.send({"type": "session.update", "session": {"output_modalities": ["text"], "temperature": 0,
                                                           "max_output_tokens": 8}})
            assert rt.recv()["session"]["output_modalities"] == ["text"]
            rt.send({"type": "response.create"})
            events = rt.until("response.done")
            text = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
            assert text == expected
            assert [e for e in events if e["type"] == "response.output_text.done"][0]["text"] == expected
        finally:
            rt.close()
        # The beta event names for clients that ask for them.
        rt = Session(s, headers={"Authorization": "Bearer sesame", "OpenAI-Beta": "realtime=v1"})
        try:
            rt.send({"type": "session.update", "session": {"output_modalities": ["text"], "max_output_tokens": 2}})
            rt.recv()
            rt.send({"type": "conversation.item.create", "item": {"type": "message", "role": "user",
                                                                   "content": [{"type": "input_text", "text": "Hi"}]}})
            assert rt.recv()["type"] == "conversation.item.created"
            rt.send({"type": "response.create"})
            kinds = [e["type"] for e in rt.until("response.done")]
            assert "response.text.delta" in kinds and "response.output_text.delta" not in kinds
        finally:
            rt.close()
    finally:
        s.stop()


def test_the_openai_package_holds_a_session(server):
    openai = pytest.importorskip("openai")
    expected_audio, expected_text = chat_reply(server, CLIP.read_bytes())
    client = openai.OpenAI(base_url=server.base + "/v1", api_key="unused")
    with client.realtime.connect(model="") as conn:
        conn.session.update(session={"type": "realtime", "audio": {"input": {
            "format": {"type": "audio/pcm", "rate": 16000}, "turn_detection": None}}, **GREEDY_SESSION})
        conn.input_audio_buffer.append(audio=base64.b64encode(clip_pcm()).decode())
        conn.input_audio_buffer.commit()
        conn.response.create()
        audio, text = b"", ""
        for event in conn:
            assert event.type != "error", event
            if event.type == "response.output_audio.delta":
                audio += base64.b64decode(event.delta)
            elif event.type == "response.output_audio_transcript.delta":
                text += event.delta
            elif event.type == "response.done":
                break
    assert audio == expected_audio and text == expected_text


def test_server_vad_commits_the_speech_and_answers(server):
    # 300 ms of silence, the clip (1.37 s with a 320 ms pause inside), 800 ms of silence, sent in 100 ms pieces.
    rate, clip = 16000, clip_pcm()
    pcm = bytes(2 * rate * 3 // 10) + clip + bytes(2 * rate * 8 // 10)
    s = Session(server)
    try:
        s.send({"type": "session.update", "session": {"type": "realtime", "audio": {"input": {
            "format": {"type": "audio/pcm", "rate": rate}, "turn_detection": {
                "type": "server_vad", "threshold": 0.5, "prefix_padding_ms": 300, "silence_duration_ms": 500}}},
            **GREEDY_SESSION}})
        updated = s.recv()
        assert updated["session"]["audio"]["input"]["turn_detection"]["silence_duration_ms"] == 500
        for i in range(0, len(pcm), rate // 5):
            s.send({"type": "input_audio_buffer.append", "audio": base64.b64encode(pcm[i:i + rate // 5]).decode()})
        events = s.until("response.done")
    finally:
        s.close()
    kinds = [e["type"] for e in events]
    assert kinds[:5] == ["input_audio_buffer.speech_started", "input_audio_buffer.speech_stopped",
                         "input_audio_buffer.committed", "conversation.item.added", "conversation.item.done"]
    assert kinds[5] == "response.created" and kinds.count("input_audio_buffer.speech_started") == 1
    started, stopped, committed = events[:3]
    assert started["item_id"] == stopped["item_id"] == committed["item_id"]
    # Speech starts with the clip (at 300 ms, less the padding) and stops 500 ms after it ends, within a frame.
    clip_end_ms = 300 + len(clip) * 1000 // (2 * rate)
    assert started["audio_start_ms"] == 0
    assert clip_end_ms + 500 <= stopped["audio_end_ms"] <= clip_end_ms + 500 + 20
    # The automatic response answers the committed audio as the chat endpoint answers that WAV.
    segment = pcm[2 * rate * started["audio_start_ms"] // 1000: 2 * rate * stopped["audio_end_ms"] // 1000]
    expected_audio, expected_text = chat_reply(server, wav_of(segment, rate))
    audio = b"".join(base64.b64decode(e["delta"]) for e in events if e["type"] == "response.output_audio.delta")
    text = "".join(e["delta"] for e in events if e["type"] == "response.output_audio_transcript.delta")
    assert audio == expected_audio and text == expected_text


WEATHER_TOOL = {"type": "function", "name": "get_weather", "description": "The current weather in a city",
                "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 16}},
                               "required": ["city"]}}


def test_function_tools_with_the_openai_package(tmp_path):
    openai = pytest.importorskip("openai")
    s = start("--model", TEXT_MODEL, "--ctx-size", 1024, log_path=tmp_path / "server.log")
    try:
        question = {"role": "user", "content": "What is the weather in Paris?"}
        chat_tool = {"type": "function", "function": {k: v for k, v in WEATHER_TOOL.items() if k != "type"}}
        client = openai.OpenAI(base_url=s.base + "/v1", api_key="unused", max_retries=0)
        expected = client.chat.completions.create(model="", messages=[question], tools=[chat_tool],
                                                  tool_choice="required", temperature=0, max_tokens=100)
        expected_call = expected.choices[0].message.tool_calls[0].function
        with client.realtime.connect(model="") as conn:
            conn.session.update(session={"type": "realtime", "output_modalities": ["text"], "tools": [WEATHER_TOOL],
                                         "tool_choice": "required", "temperature": 0, "max_output_tokens": 100})
            conn.conversation.item.create(item={"type": "message", "role": "user", "content": [
                {"type": "input_text", "text": question["content"]}]})
            conn.response.create()
            events = []
            for event in conn:
                assert event.type != "error", event
                events.append(event)
                if event.type == "response.done":
                    break
            kinds = [e.type for e in events]
            assert "response.function_call_arguments.delta" in kinds
            done = [e for e in events if e.type == "response.function_call_arguments.done"][0]
            assert (done.name, done.arguments) == ("get_weather", expected_call.arguments)
            assert json.loads(done.arguments)["city"]
            call = [o for o in events[-1].response.output if o.type == "function_call"][0]
            assert (call.call_id, call.arguments) == (done.call_id, done.arguments)
            # The result goes back; the answer is the chat endpoint's to the same history.
            conn.session.update(session={"type": "realtime", "tool_choice": "none", "max_output_tokens": 30})
            conn.conversation.item.create(item={"type": "function_call_output", "call_id": done.call_id,
                                                "output": "{\"temperature_c\": 21}"})
            conn.response.create()
            text = ""
            for event in conn:
                assert event.type != "error", event
                if event.type == "response.output_text.delta":
                    text += event.delta
                elif event.type == "response.done":
                    break
        answer = client.chat.completions.create(model="", messages=[
            question, {"role": "assistant", "content": None, "tool_calls": [{
                "id": done.call_id, "type": "function", "function": {"name": "get_weather", "arguments": done.arguments}}]},
            {"role": "tool", "tool_call_id": done.call_id, "content": "{\"temperature_c\": 21}"}],
            tools=[chat_tool], tool_choice="none", temperature=0, max_tokens=30)
        assert text == answer.choices[0].message.content and text
    finally:
        s.stop()


def test_speech_during_an_answer_cancels_it(server):
    rate, clip = 16000, clip_pcm()
    silence = bytes(2 * rate * 8 // 10)
    s = Session(server)
    try:
        s.send({"type": "session.update", "session": {"type": "realtime", "audio": {"input": {
            "format": {"type": "audio/pcm", "rate": rate}, "turn_detection": {"type": "server_vad"}}},
            **GREEDY_SESSION}})
        assert s.recv()["type"] == "session.updated"
        s.send({"type": "input_audio_buffer.append", "audio": base64.b64encode(clip + silence).decode()})
        first = s.until("response.created")
        assert [e["type"] for e in first][:3] == ["input_audio_buffer.speech_started",
                                                 "input_audio_buffer.speech_stopped", "input_audio_buffer.committed"]
        # The user speaks again while the answer is made: it is cancelled, the new turn is answered.
        s.send({"type": "input_audio_buffer.append", "audio": base64.b64encode(clip + silence).decode()})
        events = s.until("response.done")
        assert events[-1]["response"]["status"] == "cancelled"
        assert "input_audio_buffer.speech_started" in [e["type"] for e in events]
        events = s.until("response.done")
        kinds = [e["type"] for e in events]
        assert "input_audio_buffer.committed" in kinds and "response.created" in kinds
        assert events[-1]["response"]["status"] in ("completed", "incomplete")
        assert events[-1]["response"]["usage"]["input_tokens"] > 0
    finally:
        s.close()


# ---- Truncation ---------------------------------------------------------------------------------------

TRUNCATION_CONTEXT, TRUNCATION_OUTPUT = 512, 16


def long_conversation(rt, truncation, turns, **session):
    """``turns`` text turns of a session with ``truncation``; the response.done of each."""
    rt.send({"type": "session.update", "session": {"output_modalities": ["text"], "temperature": 0,
                                                   "max_output_tokens": TRUNCATION_OUTPUT,
                                                   "instructions": "You are a helpful assistant.",
                                                   "truncation": truncation, **session}})
    assert rt.recv()["session"]["truncation"] == truncation
    done = []
    for turn in range(turns):
        rt.send({"type": "conversation.item.create", "item": {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": f"Turn {turn}: tell me something about the number {turn} and why it "
                                           "matters to a mathematician."}]}})
        assert [rt.recv()["type"] for _ in range(2)] == ["conversation.item.added", "conversation.item.done"]
        rt.send({"type": "response.create"})
        done.append(rt.until("response.done")[-1]["response"])
    return done


def truncations(done):
    """The responses whose prompt does not extend the one before (its items were cut): the cache restored
    less than that prompt. The answer's first token may merge with the generation prompt's last when the
    history renders it, so one position of the earlier prompt may not be restored."""
    return [i for i in range(1, len(done)) if done[i]["usage"]["input_token_details"]["cached_tokens"] <
            done[i - 1]["usage"]["input_tokens"] - 1]


def test_truncation_keeps_a_long_conversation_answering(tmp_path):
    s = start("--model", TEXT_MODEL, "--ctx-size", TRUNCATION_CONTEXT, log_path=tmp_path / "server.log")
    turns = 14
    try:
        rt = Session(s)
        try:
            assert rt.created["session"]["truncation"] == "auto"
            disabled = long_conversation(rt, "disabled", turns)
        finally:
            rt.close()
        # Without truncation the conversation outgrows the context and every later response fails.
        failed = [i for i, r in enumerate(disabled) if r["status"] == "failed"]
        assert failed and failed == list(range(failed[0], turns)) and failed[0] > 1
        for r in disabled[failed[0]:]:
            assert r["status_details"]["error"]["code"] == "context_length_exceeded"
        runs = {}
        for name, truncation, session in (("auto", "auto", {}),
                                          ("ratio", {"type": "retention_ratio", "retention_ratio": 0.5}, {}),
                                          ("tools", "auto", {"tools": [WEATHER_TOOL], "tool_choice": "auto"})):
            rt = Session(s)
            try:
                runs[name] = long_conversation(rt, truncation, turns, **session)
            finally:
                rt.close()
            # Every response is answered from a prompt within the context less the answer's tokens (the
            # tools' definitions counted in).
            for r in runs[name]:
                assert r["status"] in ("completed", "incomplete"), r
                assert r["usage"]["input_tokens"] <= TRUNCATION_CONTEXT - TRUNCATION_OUTPUT
            assert truncations(runs[name])
            if not session:  # up to the turn where the disabled session failed, nothing was cut
                assert truncations(runs[name])[0] >= failed[0] - 1
        auto, ratio = truncations(runs["auto"]), truncations(runs["ratio"])
        # "auto" cuts just enough, so once full every turn cuts again; a retention ratio of 0.5 cuts down to
        # half of the limit, so the turns after a cut extend its prompt and the cache restores it.
        assert auto == list(range(auto[0], turns))
        assert 1 <= len(ratio) < len(auto)
        for i in ratio:
            if i + 1 < turns and i + 1 not in ratio:
                cached = runs["ratio"][i + 1]["usage"]["input_token_details"]["cached_tokens"]
                assert cached >= runs["ratio"][i]["usage"]["input_tokens"] - 1
        # The cut of a retention ratio leaves about half of the tokens after the instructions, the cut of
        # "auto" leaves them near the limit.
        first = ratio[0]
        assert runs["ratio"][first]["usage"]["input_tokens"] < runs["auto"][first]["usage"]["input_tokens"]
    finally:
        s.stop()


def test_truncation_settings_are_checked(tmp_path):
    s = start("--model", TEXT_MODEL, "--ctx-size", TRUNCATION_CONTEXT, log_path=tmp_path / "server.log")
    try:
        rt = Session(s)
        try:
            limit = TRUNCATION_CONTEXT - TRUNCATION_OUTPUT
            ratio = {"type": "retention_ratio", "retention_ratio": 0.25, "token_limits": {"post_instructions": limit}}
            rt.send({"type": "session.update", "session": {"max_output_tokens": TRUNCATION_OUTPUT,
                                                           "truncation": ratio}})
            assert rt.recv()["session"]["truncation"] == ratio
            for value, param, code in [
                ("sometimes", "session.truncation", "unsupported_value"),
                ("x" * 150_000, "session.truncation", "unsupported_value"),
                (7, "session.truncation", "invalid_type"),
                ({"type": "keep_last"}, "session.truncation.type", "invalid_value"),
                ({"type": "retention_ratio"}, "session.truncation.retention_ratio", "missing_required_parameter"),
                ({"type": "retention_ratio", "retention_ratio": 1.5}, "session.truncation.retention_ratio",
                 "invalid_value"),
                ({"type": "retention_ratio", "retention_ratio": "half"}, "session.truncation.retention_ratio",
                 "invalid_type"),
                ({"type": "retention_ratio", "retention_ratio": 0.5, "token_limits": {"post_instructions": limit + 1}},
                 "session.truncation.token_limits.post_instructions", "invalid_value"),
                ({"type": "retention_ratio", "retention_ratio": 0.5, "token_limits": {"post_instructions": 0}},
                 "session.truncation.token_limits.post_instructions", "invalid_value"),
            ]:
                err = rt.error({"type": "session.update", "session": {"truncation": value}, "event_id": "e1"})
                assert (err["param"], err["code"], err["event_id"]) == (param, code, "e1"), (value, err)
                assert err["message"].startswith(param) and len(err["message"]) < 400, err["message"][:400]
            # A mistake changes nothing; "disabled" is taken as is.
            rt.send({"type": "session.update", "session": {"truncation": "disabled"}})
            assert rt.recv()["session"]["truncation"] == "disabled"
        finally:
            rt.close()
    finally:
        s.stop()


def test_truncation_counts_prompts_as_the_library_builds_them():
    """The count truncation goes by (the library's prompt count of the messages, and what tool definitions or
    a forced call's schema add to it) equals the prompt the library then evaluates."""
    import leap
    from leap.server.chat import ChatRequest, model_caps, parse_tools
    from leap.server.schemas import Fields, Sampling
    from leap.server.truncation import PromptCounter, definition_tokens

    # A tool whose schema the library takes as written (it leaves out keys it does not model, maxLength...).
    tool = {"type": "function", "function": {"name": "get_weather", "description": "The current weather in a city",
                                             "parameters": {"type": "object", "required": ["city"],
                                                            "properties": {"city": {"type": "string"}}}}}
    cases = []
    with leap.Model(str(TEXT_MODEL), context_size=1024) as text_model:
        for choice in ("auto", "required", "none"):
            for system in ([leap.ChatMessage("system", "Be brief.")], []):
                cases.append((text_model, system, [leap.ChatMessage("user", "Hi"),
                                                   leap.ChatMessage("assistant", "Hello! How can I help?")],
                              leap.ChatMessage("user", "What is the weather in Paris?"), choice))
        for model, system, history, message, choice in cases:
            req = ChatRequest(None, system + history, message, Sampling(max_tokens=1))
            parse_tools(Fields({"tools": [tool], "tool_choice": choice}), req, model_caps("tiny", model))
            expected = model.prompt_token_count([*req.history, message]) + definition_tokens(model, req, system)
            assert evaluated_prompt(model, req) == expected, (choice, system)
    with leap.Model(str(MODEL), context_size=2048, mmproj_path=str(MMPROJ)) as audio_model:
        spoken = leap.ChatMessage("user", [leap.Audio(CLIP.read_bytes())])
        req = ChatRequest(None, [leap.ChatMessage("system", "Be brief."), spoken, leap.ChatMessage("assistant", "Yes.")],
                          leap.ChatMessage("user", [leap.Text("And this?"), leap.Audio(CLIP.read_bytes())]),
                          Sampling(max_tokens=1))
        req.audio_mode = "text"
        expected = audio_model.prompt_token_count([*req.history, req.message])
        # Each audio part counts as the rows the encoder makes of it.
        rows = audio_model.embed_audio(leap.Audio(CLIP.read_bytes())).shape[0]
        unheard = [req.history[0], leap.ChatMessage("user", ""), req.history[2], leap.ChatMessage("user", "And this?")]
        assert expected == audio_model.prompt_token_count(unheard) + 2 * rows
        count = PromptCounter()  # the realtime session's counter: the same counts, the messages' JSON kept
        assert [count(audio_model, [*req.history, req.message]) for _ in range(2)] == [expected] * 2
        assert count(audio_model, unheard) + 2 * rows == expected
        assert evaluated_prompt(audio_model, req) == expected


def evaluated_prompt(model, req):
    """Positions of the prompt a generation of ``req`` evaluated or restored (its statistics)."""
    import leap

    with model.create_conversation_from_history(req.history) as conv:
        for t in req.tools:
            conv.register_function(t)
        for event in conv.generate_response(req.message, req.options()):
            if isinstance(event, leap.Complete):
                return event.stats.prompt_tokens + event.stats.cached_prompt_tokens
    raise AssertionError("no Complete event")


def test_truncation_of_a_spoken_conversation(server):
    """Audio items count as the library lays them out: with a post-instruction limit of 100 tokens, every
    prompt of a spoken conversation keeps within 100 tokens of the others (the same instructions), and the
    conversation, longer than that, is cut."""
    pcm = clip_pcm()
    s = Session(server)
    try:
        limit = 100
        s.send({"type": "session.update", "session": {
            "output_modalities": ["text"], "max_output_tokens": 8, "temperature": 0, "instructions": "Answer briefly.",
            "audio": {"input": {"format": {"type": "audio/pcm", "rate": 16000}}},
            "truncation": {"type": "retention_ratio", "retention_ratio": 0.5,
                           "token_limits": {"post_instructions": limit}}}})
        assert s.recv()["type"] == "session.updated"
        done = []
        for turn in range(6):
            s.speak(pcm[: len(pcm) * (turn + 2) // 8])
            s.send({"type": "response.create"})
            done.append(s.until("response.done")[-1]["response"])
        inputs = [r["usage"]["input_tokens"] for r in done]
        assert all(r["status"] in ("completed", "incomplete") for r in done), done
        assert max(inputs) - min(inputs) <= limit, inputs
        assert truncations(done), inputs
    finally:
        s.close()
