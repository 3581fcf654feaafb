"""Llama 3 (rope_freqs), Qwen2 (Q/K/V biases), Qwen3 (Q/K norms, YaRN) and LFM2-MoE (routed experts) through
the public API: the tiny random-weight files of scripts/fixtures/make_tiny_gqa.py and make_tiny_lfm2moe.py
(real metadata, tensor names and chat templates),
tokenized and evaluated from Python against the llama.cpp goldens of scripts/fixtures/make_model_goldens.py
(float weights: differences are only F16 KV-cache rounding and summation order). Conversations with them:
test_lfm2_conversation.py."""
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
    ("lfm2moe-tiny-f32", "lfm2moe"),  # scripts/fixtures/make_tiny_lfm2moe.py: routed experts
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

