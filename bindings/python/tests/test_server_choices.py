"""leap-server's n choices (chat and text completions), the legacy logprobs of /v1/completions and its
logit_bias, against independent expectations: the same request with n = 1 and seed + i, and the model's
logits read through the Python API (log_softmax and argmax computed here with numpy)."""
import httpx
import pytest

from test_server import SMOL, USER, smol, smol_model, tiny  # noqa: F401 (fixtures shared with the main tests)

np = pytest.importorskip("numpy")
PROMPT = "The capital of France is"


def greedy_continuation(model, prompt, steps, bias=None):
    """(token, log_softmax row of the raw logits) of each greedy step, the argmax taken after ``bias``."""
    tokens = model.tokenize(prompt)
    ctx = model.create_context(context_size=len(tokens) + steps)
    out = []
    try:
        ctx.eval(tokens)
        for _ in range(steps):
            raw = np.asarray(ctx.logits(), dtype=np.float64)
            biased = raw.copy()
            for t, b in (bias or {}).items():
                biased[t] += b
            t = int(np.argmax(biased))
            out.append((t, raw - (raw.max() + np.log(np.exp(raw - raw.max()).sum()))))
            ctx.eval([t])
    finally:
        ctx.close()
    return out


def test_completion_logprobs_are_the_logits_log_softmax(smol, smol_model):
    steps = greedy_continuation(smol_model, PROMPT, 6)
    client = smol.client()
    r = client.completions.create(model="smol", prompt=PROMPT, max_tokens=6, temperature=0, logprobs=3)
    lp = r.choices[0].logprobs
    pieces = [smol_model.tokenizer.token_to_piece(t) for t, _ in steps]
    assert lp.tokens == [p.decode() for p in pieces]
    assert "".join(lp.tokens) == r.choices[0].text
    offsets = [len(PROMPT) + sum(len(p.decode()) for p in pieces[:i]) for i in range(len(pieces))]
    assert lp.text_offset == offsets
    for (t, row), got, top in zip(steps, lp.token_logprobs, lp.top_logprobs):
        assert got == pytest.approx(row[t], abs=1e-4)
        best = np.argsort(-row)[:3]
        want = {smol_model.tokenizer.token_to_piece(int(b)).decode(): row[b] for b in best}
        assert set(top) == set(want) and len(top) == 3  # the greedy token is the most likely one
        for text, value in want.items():
            assert top[text] == pytest.approx(value, abs=1e-4)
    # Streamed: the same entries, each with the text its tokens made.
    joined = {"tokens": [], "token_logprobs": [], "text_offset": []}
    for c in client.completions.create(model="smol", prompt=PROMPT, max_tokens=6, temperature=0, logprobs=3,
                                       stream=True):
        for choice in c.choices:
            if choice.text:
                assert "".join(choice.logprobs.tokens) == choice.text
            for k in joined:
                joined[k] += getattr(choice.logprobs, k) or []
    assert joined == {"tokens": lp.tokens, "token_logprobs": lp.token_logprobs, "text_offset": lp.text_offset}
    # logprobs 0: the tokens and their logprobs, no alternatives but the token drawn.
    r0 = client.completions.create(model="smol", prompt=PROMPT, max_tokens=2, temperature=0, logprobs=0)
    assert [list(top) for top in r0.choices[0].logprobs.top_logprobs] == [[t] for t in lp.tokens[:2]]
    assert client.completions.create(model="smol", prompt=PROMPT, max_tokens=2).choices[0].logprobs is None


def test_completion_logit_bias_moves_the_greedy_choice(smol, smol_model):
    plain = greedy_continuation(smol_model, PROMPT, 1)[0]
    first = plain[0]
    runner_up = int(np.argsort(-plain[1])[1])
    cases = [{first: -100.0}, {runner_up: 100.0}, {runner_up: 100.0, first: 3.0}]
    for bias in cases:
        want = [t for t, _ in greedy_continuation(smol_model, PROMPT, 3, bias)]
        r = smol.client().completions.create(model="smol", prompt=PROMPT, max_tokens=3, temperature=0,
                                             logit_bias={str(k): v for k, v in bias.items()})
        assert r.choices[0].text == smol_model.detokenize(want), bias
    assert want[0] == runner_up and want[0] != first
    r = httpx.post(smol.base + "/v1/completions", json={"prompt": PROMPT, "logit_bias": {"99999999": 1}})
    assert r.status_code == 400 and r.json()["error"]["param"] == "logit_bias", r.text


def texts(r):
    return [c.message.content for c in sorted(r.choices, key=lambda c: c.index)]


def test_n_chat_choices_are_the_seeded_single_answers(tiny):
    client = tiny.client()
    args = dict(model="", messages=USER, max_tokens=8, temperature=1.0, seed=41)
    r = client.chat.completions.create(n=3, **args)
    assert [c.index for c in r.choices] == [0, 1, 2]
    singles = [client.chat.completions.create(**{**args, "seed": 41 + i}) for i in range(3)]
    assert texts(r) == [s.choices[0].message.content for s in singles]
    assert len(set(texts(r))) > 1  # different seeds draw different answers on this model
    assert r.usage.completion_tokens == sum(s.usage.completion_tokens for s in singles)
    assert r.usage.prompt_tokens == singles[0].usage.prompt_tokens
    # Streamed: each chunk names its choice; each choice's text and finish reason are the answer's.
    content, finish, usage = {}, {}, None
    for chunk in client.chat.completions.create(n=3, stream=True, stream_options={"include_usage": True}, **args):
        usage = chunk.usage or usage
        for c in chunk.choices:
            content[c.index] = content.get(c.index, "") + (c.delta.content or "")
            if c.finish_reason:
                assert c.index not in finish
                finish[c.index] = c.finish_reason
    assert [content[i] for i in range(3)] == texts(r)
    assert [finish[i] for i in range(3)] == [c.finish_reason for c in r.choices]
    assert usage.completion_tokens == r.usage.completion_tokens


def test_n_text_completions(tiny):
    client = tiny.client()
    args = dict(model="", prompt="Once upon a time", max_tokens=6, temperature=1.0, seed=5)
    r = client.completions.create(n=2, **args)
    singles = [client.completions.create(**{**args, "seed": 5 + i}).choices[0].text for i in range(2)]
    assert [c.text for c in sorted(r.choices, key=lambda c: c.index)] == singles
    streamed = {}
    for chunk in client.completions.create(n=2, stream=True, **args):
        for c in chunk.choices:
            streamed[c.index] = streamed.get(c.index, "") + c.text
    assert [streamed[0], streamed[1]] == singles
    for body, param in (({"prompt": "a", "n": 9}, "n"), ({"prompt": "a", "n": 2, "best_of": 3}, "best_of"),
                        ({"prompt": "a", "logprobs": 6}, "logprobs"), ({"prompt": "a", "logprobs": 1, "echo": True},
                                                                         "logprobs")):
        r = httpx.post(tiny.base + "/v1/completions", json=body)
        assert r.status_code == 400 and r.json()["error"]["param"] == param, r.text
