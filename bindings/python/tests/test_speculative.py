"""Speculative decoding from Python: GenerationOptions(drafter=...) and load_model(..., draft_model=...) leave
the output as it is without speculation (greedy and seeded sampling) and report their drafts."""
import dataclasses

import pytest

import leap
from conftest import MODELS

SMOL = MODELS / "SmolLM2-135M-Instruct.Q4_1.gguf"
GEMMA = MODELS / "gemma-3-270m-q4_k_m.gguf"
pytestmark = pytest.mark.skipif(not SMOL.exists(), reason=f"{SMOL} not found (run scripts/fetch-models.sh)")

COPY = ("Repeat this sentence exactly: The Rhine begins in the Swiss Alps, flows through Germany and the "
        "Netherlands, and empties into the North Sea.")
GREEDY = leap.GenerationOptions(temperature=0.0, max_tokens=40)
SAMPLED = leap.GenerationOptions(temperature=0.9, top_k=40, repetition_penalty=1.1, frequency_penalty=0.3,
                                 rng_seed=99, max_tokens=40)


@pytest.fixture(scope="module")
def model():
    with leap.load_model(SMOL, context_size=1024) as m:
        yield m


def run(model, options, prompt=COPY):
    events = list(model.create_conversation().generate_response(prompt, options))
    assert isinstance(events[-1], leap.Complete)
    return "".join(e.text for e in events if isinstance(e, leap.Chunk)), events[-1].stats


@pytest.mark.parametrize("base", [GREEDY, SAMPLED], ids=["greedy", "sampled"])
def test_prompt_lookup_leaves_the_output_unchanged(model, base):
    text, stats = run(model, base)
    assert stats.drafted_tokens == 0 and stats.accepted_draft_tokens == 0
    for k in (None, 2, 14):
        spec_text, spec = run(model, dataclasses.replace(base, drafter="ngram", max_draft_tokens=k))
        assert spec_text == text
        assert spec.completion_tokens == stats.completion_tokens
        assert 0 <= spec.accepted_draft_tokens <= spec.drafted_tokens
    if base is GREEDY:
        # The answer copies the prompt: guesses are taken. A model fresh from loading, because the model
        # keeps the pass cost its generations measure, and where passes are dear it rightly drafts nothing.
        with leap.load_model(SMOL, context_size=1024) as fresh:
            assert run(fresh, dataclasses.replace(base, drafter="ngram"))[1].accepted_draft_tokens > 0


def test_bad_speculation_options(model):
    with pytest.raises(leap.LeapError):
        run(model, dataclasses.replace(GREEDY, drafter="oracle"))
    with pytest.raises(leap.InvalidArgumentError, match="max_draft_tokens"):
        run(model, dataclasses.replace(GREEDY, drafter="ngram", max_draft_tokens=15))


def test_draft_model_of_the_same_vocabulary():
    with leap.load_model(SMOL, context_size=1024) as plain_model:
        text, _ = run(plain_model, GREEDY)
    with leap.load_model(SMOL, context_size=1024, draft_model=SMOL) as m:
        spec_text, stats = run(m, GREEDY)   # drafter unset: the draft model
        assert spec_text == text
        assert stats.drafted_tokens > 0 and stats.accepted_draft_tokens > 0
        none_text, none_stats = run(m, dataclasses.replace(GREEDY, drafter="none"))
        assert none_text == text and none_stats.drafted_tokens == 0


@pytest.mark.skipif(not GEMMA.exists(), reason=f"{GEMMA} not found")
def test_draft_model_of_another_vocabulary_is_refused():
    with pytest.raises(leap.ModelLoadingError, match="vocabulary"):
        leap.load_model(SMOL, draft_model=GEMMA)
