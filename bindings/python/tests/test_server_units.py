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
