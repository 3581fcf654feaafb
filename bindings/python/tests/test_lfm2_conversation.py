"""The conversation API on the tiny random-weight LFM2 files (real LFM2 metadata, tensor names, tokenizer and
chat template; see scripts/fixtures/make_tiny_lfm2.py; LFM2-MoE: make_tiny_lfm2moe.py), and on quantized tiny Llama 3 / Qwen2 / Qwen3 files
with their families' real chat templates (scripts/fixtures/make_tiny_gqa.py): generation, determinism,
and KV / conv-state reuse across turns giving the same tokens as a fresh conversation."""
import pytest

import leap
from conftest import FIXTURES

TINY = sorted((FIXTURES / "models").glob("lfm2-tiny-*.gguf")) + sorted((FIXTURES / "models").glob("lfm2moe-tiny-*.gguf")) + [
    FIXTURES / "models" / (name + ".gguf") for name in ("llama3-tiny-q8_0", "qwen2-tiny-q8_0", "qwen3-tiny-q4_k")]
GREEDY = leap.GenerationOptions(temperature=0.0, max_tokens=12, repetition_penalty=1.0)


def run(conv, prompt):
    events = list(conv.generate_response(prompt, GREEDY))
    assert isinstance(events[-1], leap.Complete)
    return "".join(e.text for e in events if isinstance(e, leap.Chunk)), events[-1]


@pytest.mark.parametrize("path", TINY, ids=[p.stem for p in TINY])
def test_tiny_model_conversation(path):
    with leap.load_model(path, context_size=512) as model:
        assert model.architecture == path.stem.split("-")[0].replace("llama3", "llama")
        assert not model.uses_fallback_template
        a = model.create_conversation("You are a test.")
        t1, d1 = run(a, "hello world")
        assert d1.stats.completion_tokens > 0
        t1b, _ = run(model.create_conversation("You are a test."), "hello world")
        assert t1 == t1b  # greedy is deterministic
        t2, d2 = run(a, "and again")
        assert d2.stats.cached_prompt_tokens > 0
        fresh = model.create_conversation_from_history(a.history[:3])
        t3, d3 = run(fresh, "and again")
        assert t3 == t2  # reusing the conv state / KV cache changes nothing
        assert d3.stats.cached_prompt_tokens == 0
