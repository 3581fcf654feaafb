"""Llama 3 (rope_freqs), Qwen2 (Q/K/V biases) and Qwen3 (Q/K norms, YaRN) through the public API: the tiny
random-weight files of scripts/fixtures/make_tiny_gqa.py (real metadata, tensor names and chat templates),
tokenized and evaluated from Python against the llama.cpp goldens of scripts/fixtures/make_model_goldens.py
(float weights: differences are only F16 KV-cache rounding and summation order), and chatted with through
the conversation API."""
import os

import numpy as np
import pytest

import leap

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
MODELS = os.path.join(REPO, "Tests", "Fixtures", "models")
TEXT = os.path.join(REPO, "scripts", "fixtures", "golden_text.txt")


def golden(name):
    tokens, top = [], []
    for line in open(os.path.join(MODELS, "goldens", name + ".llamacpp.txt")):
        f = line.split()
        if f[0] == "tokens":
            tokens = [int(x) for x in f[1:]]
        elif f[0] == "pos":
            top.append([(int(kv.split(":")[0]), float(kv.split(":")[1])) for kv in f[4:]])
    return tokens, top


@pytest.mark.parametrize("name,arch", [
    ("llama3-tiny-f32", "llama"), ("qwen2-tiny-f16", "qwen2"), ("qwen3-tiny-yarn-f16", "qwen3"),
])
def test_tiny_gqa_matches_llama_cpp(name, arch):
    tokens, top = golden(name)
    model = leap.load_model(os.path.join(MODELS, name + ".gguf"), cpu_threads=2)
    assert model.architecture == arch
    text = open(TEXT, encoding="utf-8").read()
    assert model.tokenize(text)[: len(tokens)] == tokens
    ctx = model.create_context(context_size=256)
    ctx.eval(tokens, all_logits=True)
    worst = 0.0
    for i, best in enumerate(top):
        row = np.array(ctx.logits(i))
        assert int(row.argmax()) == best[0][0]
        worst = max(worst, max(abs(row[t] - v) for t, v in best))
    assert worst < 0.01


GREEDY = leap.GenerationOptions(temperature=0.0, max_tokens=12, repetition_penalty=1.0)
TINY = ["llama3-tiny-q8_0", "qwen2-tiny-q8_0", "qwen3-tiny-q4_k"]


def run(conv, prompt):
    events = list(conv.generate_response(prompt, GREEDY))
    assert isinstance(events[-1], leap.Complete)
    return "".join(e.text for e in events if isinstance(e, leap.Chunk)), events[-1]


@pytest.mark.parametrize("name", TINY)
def test_tiny_gqa_conversation(name):
    with leap.load_model(os.path.join(MODELS, name + ".gguf"), context_size=512) as model:
        assert not model.uses_fallback_template  # the family's real template renders
        a = model.create_conversation("You are a test.")
        t1, d1 = run(a, "hello world")
        assert d1.stats.completion_tokens > 0
        t1b, _ = run(model.create_conversation("You are a test."), "hello world")
        assert t1 == t1b  # greedy is deterministic
        t2, d2 = run(a, "and again")
        assert d2.stats.cached_prompt_tokens > 0
        fresh = model.create_conversation_from_history(a.history[:3])
        t3, d3 = run(fresh, "and again")
        assert t3 == t2  # reusing the KV cache changes nothing
        assert d3.stats.cached_prompt_tokens == 0
