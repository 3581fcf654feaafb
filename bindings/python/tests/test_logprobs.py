"""Token log-probabilities and OpenAI's penalties in conversations, checked against the model's own
logits read through the low-level Context and log_softmax computed in numpy."""
import math
import os

import numpy as np
import pytest

import leap

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
TINY = os.path.join(REPO, "Tests", "Fixtures", "models", "lfm2-tiny-f32.gguf")
SMOL = os.path.join(os.environ.get("LEAP_MODELS_DIR", os.path.join(REPO, "models")), "SmolLM2-135M-Instruct.Q4_1.gguf")


def events(model, text, **options):
    conv = model.create_conversation("You are terse.")
    # The repetition penalty off, so that the penalties under test are the only ones.
    return list(conv.generate_response(text, leap.GenerationOptions(temperature=0, repetition_penalty=1, **options)))


def log_softmax(x):
    x = np.asarray(x, dtype=np.float64)
    m = x.max()
    return x - (m + np.log(np.exp(x - m).sum()))


def test_token_events_carry_log_softmax_of_the_models_logits():
    model = leap.load_model(TINY)
    evs = events(model, "Count to five.", max_tokens=6, top_logprobs=5)
    tokens = [e for e in evs if isinstance(e, leap.Token)]
    assert tokens, "no token events"
    # The prompt as the conversation builds it, evaluated on its own: the first token's distribution.
    messages = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Count to five."}]
    prompt = model.tokenize(model.apply_chat_template(messages), add_special=False, parse_special=True)
    assert len(prompt) == model.prompt_token_count(messages)
    ctx = model.create_context(context_size=256)
    ctx.eval(prompt)
    for t in tokens:
        ref = log_softmax(ctx.logits())
        order = np.argsort(-ref, kind="stable")
        assert [a.token for a in t.top_logprobs] == [int(i) for i in order[:5]]
        for a in t.top_logprobs:
            assert a.logprob == pytest.approx(ref[a.token], abs=1e-4)
            assert a.bytes == model.tokenizer.token_to_piece(a.token, special=True)
        # Greedy: the drawn token is the most likely one.
        assert t.token.token == t.top_logprobs[0].token
        assert t.token.logprob == pytest.approx(ref[t.token.token], abs=1e-4)
        ctx.eval([t.token.token])


def test_token_bytes_make_the_text_and_come_before_it():
    model = leap.load_model(SMOL) if os.path.exists(SMOL) else pytest.skip("SmolLM2 not fetched")
    evs = events(model, "Name three colors.", max_tokens=24, top_logprobs=0)
    text, joined = "", b""
    for e in evs:
        if isinstance(e, leap.Token):
            assert e.top_logprobs == []
            assert e.token.logprob <= 0
            joined += e.token.bytes
        elif isinstance(e, leap.Chunk):
            text += e.text
            # Every chunk's text comes from tokens already reported.
            assert joined.decode("utf-8", "replace").startswith(text)
    assert joined.decode("utf-8") == text
    complete = evs[-1]
    assert isinstance(complete, leap.Complete)
    assert sum(isinstance(e, leap.Token) for e in evs) == complete.stats.completion_tokens


def test_no_token_events_unless_asked():
    model = leap.load_model(TINY)
    assert not any(isinstance(e, leap.Token) for e in events(model, "Hi", max_tokens=4))


def test_top_logprobs_out_of_range_is_refused():
    model = leap.load_model(TINY)
    conv = model.create_conversation()
    for bad in (-2, 21):
        with pytest.raises(leap.InvalidArgumentError, match="top_logprobs"):
            conv.generate_response("Hi", leap.GenerationOptions(top_logprobs=bad))
    with pytest.raises(leap.InvalidArgumentError, match="presence_penalty"):
        conv.generate_response("Hi", leap.GenerationOptions(presence_penalty=math.nan))


def test_presence_penalty_keeps_recent_tokens_out():
    # A presence penalty far above any logit gap makes every token of the window (the last 64 of the prompt
    # and the output) lose to any token outside it.
    model = leap.load_model(TINY)
    messages = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Repeat: a a a a"}]
    prompt = model.tokenize(model.apply_chat_template(messages), add_special=False, parse_special=True)
    evs = events(model, "Repeat: a a a a", max_tokens=16, top_logprobs=0, presence_penalty=1e4)
    out = [e.token.token for e in evs if isinstance(e, leap.Token)]
    assert len(out) >= 4
    seen = list(prompt)
    for t in out:
        assert t not in seen[-64:]
        seen.append(t)
    # Without it, greedy decoding of this random-weight model repeats itself within the window.
    plain = [e.token.token for e in events(model, "Repeat: a a a a", max_tokens=16, top_logprobs=0) if isinstance(e, leap.Token)]
    window = list(prompt)
    repeats = 0
    for t in plain:
        repeats += t in window[-64:]
        window.append(t)
    assert repeats > 0


def test_frequency_penalty_changes_greedy_output_by_its_formula():
    # One step, checked by hand: with the penalty, the greedy pick is argmax(logit - count * f) over the
    # window, which the Context's logits let numpy compute.
    model = leap.load_model(TINY)
    messages = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Repeat: a a a a"}]
    prompt = model.tokenize(model.apply_chat_template(messages), add_special=False, parse_special=True)
    ctx = model.create_context(context_size=256)
    ctx.eval(prompt)
    logits = np.array(ctx.logits(), dtype=np.float64)
    window = prompt[-64:]
    counts = np.bincount(np.array(window), minlength=len(logits)).astype(np.float64)
    moved = 0
    for f in (0.5, 3.0):
        expected = int(np.argmax(logits - counts * f))
        moved += expected != int(np.argmax(logits))
        evs = events(model, "Repeat: a a a a", max_tokens=1, top_logprobs=0, frequency_penalty=f)
        got = [e.token.token for e in evs if isinstance(e, leap.Token)]
        assert got == [expected]
    assert moved > 0, "the penalty never changes the greedy pick here: the test would not see it missing"
