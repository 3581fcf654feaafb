"""leap-server's logprobs and penalties against the Python API's Token events for the same history and
options (the library's own tests check those against the model's logits)."""
import math

import leap
from test_server import SMOL, smol, smol_model  # noqa: F401 (fixtures shared with the server's main tests)

MESSAGES = [{"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "Name three colors."}]
GREEDY = {"temperature": 0, "max_tokens": 12, "extra_body": {"repetition_penalty": 1}}


def in_process_tokens(model, **options):
    conv = model.create_conversation_from_history([leap.ChatMessage("system", MESSAGES[0]["content"])])
    events = conv.generate_response(MESSAGES[1]["content"], leap.GenerationOptions(
        temperature=0, repetition_penalty=1, max_tokens=12, **options))
    return [e for e in events if isinstance(e, leap.Token)]


def same_entry(entry, token):
    assert bytes(entry.bytes) == token.bytes
    assert entry.token == token.bytes.decode("utf-8", "replace")
    assert math.isclose(entry.logprob, token.logprob, rel_tol=0, abs_tol=1e-6)


def test_logprobs_match_the_python_api(smol, smol_model):
    expected = in_process_tokens(smol_model, top_logprobs=3)
    r = smol.client().chat.completions.create(model=SMOL.stem, messages=MESSAGES, logprobs=True, top_logprobs=3, **GREEDY)
    content = r.choices[0].logprobs.content
    assert len(content) == len(expected) == r.usage.completion_tokens
    for entry, token in zip(content, expected):
        same_entry(entry, token.token)
        assert len(entry.top_logprobs) == 3
        for alt, t in zip(entry.top_logprobs, token.top_logprobs):
            same_entry(alt, t)
    assert "".join(bytes(e.bytes).decode("utf-8", "replace") for e in content) == r.choices[0].message.content


def test_streamed_logprobs_come_with_their_content(smol):
    stream = smol.client().chat.completions.create(model=SMOL.stem, messages=MESSAGES, logprobs=True, stream=True, **GREEDY)
    text, joined = "", b""
    for chunk in stream:
        for c in chunk.choices:
            if c.delta.content:
                text += c.delta.content
                joined += b"".join(bytes(e.bytes) for e in c.logprobs.content)
                # The tokens sent so far make the text sent so far.
                assert joined.decode("utf-8", "replace").startswith(text) or text.startswith(joined.decode("utf-8", "replace"))
                assert all(e.top_logprobs == [] for e in c.logprobs.content)
    assert joined.decode("utf-8") == text


def test_no_logprobs_unless_asked(smol):
    r = smol.client().chat.completions.create(model=SMOL.stem, messages=MESSAGES, **GREEDY)
    assert r.choices[0].logprobs is None


def test_penalties_reach_the_sampler(smol, smol_model):
    # The server's answer with a frequency penalty is the Python API's with the same penalty, and differs
    # from the answer without it (so the test sees a penalty that is dropped).
    tokens = lambda **o: [t.token.token for t in in_process_tokens(smol_model, top_logprobs=0, **o)]
    plain, penalized = tokens(), tokens(frequency_penalty=2.0, presence_penalty=2.0)
    assert plain != penalized
    client = smol.client()
    r = client.chat.completions.create(model=SMOL.stem, messages=MESSAGES, logprobs=True, frequency_penalty=2.0,
                                       presence_penalty=2.0, **GREEDY)
    got = [e.bytes for e in r.choices[0].logprobs.content]
    want = [list(smol_model.tokenizer.token_to_piece(t, special=True)) for t in penalized]
    assert got == want
