"""leap.Speculator: speculative decoding in a verify loop of one's own on a leap.Context gives exactly the tokens
of one-token decoding, greedy and seeded-sampled, with prompt lookup on a prompt the continuation copies (guesses
taken and rejected) and with SmolLM2 drafting for itself (every greedy guess taken); bad arguments are refused."""
import textwrap
import types

import numpy as np
import pytest

import leap
from conftest import MODELS

SMOL = MODELS / "SmolLM2-135M-Instruct.Q4_1.gguf"
pytestmark = pytest.mark.skipif(not SMOL.exists(), reason=f"{SMOL} missing (scripts/setup.sh fetches it)")

PASSAGE = "The Rhine begins in the Swiss Alps, flows through Germany and the Netherlands, and empties into the North Sea."
# A continuation that copies: the passage said three times, then its start.
COPY_TEXT = "".join(f"{who}: {PASSAGE}\n" for who in "ABA") + "B: The Rhine"
MAX_NEW = 64
GREEDY = {"temperature": 0.0}
SAMPLED = {"temperature": 0.7, "top_k": 40, "top_p": 0.95, "min_p": 0.05, "frequency_penalty": 0.1, "seed": 7}


@pytest.fixture(scope="module")
def model():
    return leap.load_model(str(SMOL), context_size=1024)


@pytest.fixture(scope="module")
def drafted():
    return leap.load_model(str(SMOL), context_size=1024, draft_model=str(SMOL))


def plain(model, prompt, sampler_args):
    """One-token decoding: MAX_NEW tokens after the prompt, whose last token is evaluated alone as the verify
    loop's first pass evaluates it (a batched prompt's last row can differ from it)."""
    out = []
    with model.create_context() as ctx, leap.Sampler(**sampler_args) as sampler:
        ctx.eval(prompt[:-1])
        ctx.eval(prompt[-1:])
        for t in prompt:
            sampler.accept(t)
        while len(out) < MAX_NEW:
            token = sampler.sample(ctx.logits())
            sampler.accept(token)
            out.append(token)
            ctx.eval([token])
    return out


# The verify loop of leap.Speculator's docstring, run as it is written.
EXAMPLE = textwrap.dedent(leap.Speculator.__doc__.split("::\n", 1)[1])


def speculated(model, prompt, sampler_args, **speculator_args):
    """The docstring's loop with a speculator of ``speculator_args``: the tokens, the guesses made and those
    taken."""
    made = []

    class Counting(leap.Speculator):
        def __init__(self, model, **_):
            super().__init__(model, **speculator_args)
            self.drafted = self.taken = 0
            made.append(self)

        def draft(self, history, max_guesses=None):
            guesses = super().draft(history, max_guesses)
            assert len(guesses) <= self.max_draft_tokens
            self.drafted += len(guesses)
            return guesses

        def accept(self, n_accepted):
            super().accept(n_accepted)
            self.taken += n_accepted

    with model.create_context() as ctx, leap.Sampler(**sampler_args) as sampler:
        scope = {"leap": types.SimpleNamespace(Speculator=Counting), "model": model, "ctx": ctx,
                 "sampler": sampler, "prompt": list(prompt), "max_tokens": MAX_NEW}
        exec(EXAMPLE, scope)
    (spec,) = made
    return scope["seq"][len(prompt):], spec.drafted, spec.taken


@pytest.mark.parametrize("n", [1, 6, 15])
def test_a_verified_row_is_the_one_token_decode_bit_for_bit(model, n):
    # The guarantee's premise on this file (Q4_1): a verification pass gives each row the logits of
    # evaluating the tokens one at a time.
    prompt = model.tokenize(COPY_TEXT, add_special=True)
    tail = prompt[-n:]
    with model.create_context() as one, model.create_context() as few:
        one.eval(prompt[:-n])
        few.eval(prompt[:-n])
        few.verify(tail)
        for i, t in enumerate(tail):
            one.eval([t])
            assert np.array_equal(np.array(one.logits()), np.array(few.logits(i)))
        with pytest.raises(leap.InvalidArgumentError, match="n_tokens must be in 1...15"):
            few.verify(prompt[:16])
        assert few.n_past == len(prompt)  # the refused pass changed nothing


def test_prompt_lookup_greedy_gives_the_tokens_of_one_token_decoding(model):
    prompt = model.tokenize(COPY_TEXT, add_special=True)
    expected = plain(model, prompt, GREEDY)
    assert PASSAGE[:40] in model.tokenizer.detokenize(expected)  # the continuation copies
    tokens, drafted, taken = speculated(model, prompt, GREEDY, drafter="ngram")
    assert tokens == expected
    assert taken > 0 and taken <= drafted


def test_prompt_lookup_sampled_gives_the_seeded_output(model):
    prompt = model.tokenize(COPY_TEXT, add_special=True)
    expected = plain(model, prompt, SAMPLED)
    tokens, drafted, taken = speculated(model, prompt, SAMPLED, drafter="ngram", max_draft_tokens=6)
    assert tokens == expected
    assert 0 < taken < drafted  # guesses taken and guesses rejected, the draws the same
    other = plain(model, prompt, {**SAMPLED, "seed": 8})
    assert other != expected  # the seed matters: the comparison is not vacuous


def test_a_model_drafting_for_itself_has_every_greedy_guess_taken(model, drafted):
    prompt = model.tokenize(COPY_TEXT, add_special=True)
    expected = plain(model, prompt, GREEDY)
    tokens, n_drafted, taken = speculated(drafted, prompt, GREEDY)  # the default: the model's draft model
    assert tokens == expected
    assert n_drafted > 0 and taken == n_drafted
    sampled = plain(model, prompt, SAMPLED)
    tokens, n_drafted, taken = speculated(drafted, prompt, SAMPLED, drafter="draft_model", max_draft_tokens=4)
    assert tokens == sampled and n_drafted > 0


def test_a_new_history_starts_a_new_sequence(drafted):
    # The draft model's context follows whatever history it is given: a second sequence after a first one
    # gets the guesses a fresh speculator gives it.
    first = drafted.tokenize("One, two, three, four, five,", add_special=True)
    second = drafted.tokenize(COPY_TEXT, add_special=True)
    with leap.Speculator(drafted, max_draft_tokens=5) as fresh:
        expected = fresh.draft(second)
    with leap.Speculator(drafted, max_draft_tokens=5) as spec:
        spec.draft(first)
        assert spec.draft(second) == expected
    assert expected  # the prior acceptance rate makes a draft model's first pass worth it


def test_bad_arguments_are_refused(model):
    with pytest.raises(leap.InvalidArgumentError, match="drafter must be 'ngram', 'draft_model' or None"):
        leap.Speculator(model, drafter="none")
    with pytest.raises(leap.InvalidArgumentError, match="the model was loaded without one"):
        leap.Speculator(model, drafter="draft_model")
    with pytest.raises(leap.InvalidArgumentError, match="max_draft_tokens must be at most 14"):
        leap.Speculator(model, max_draft_tokens=15)
    spec = leap.Speculator(model)
    with pytest.raises(leap.InvalidArgumentError, match="n_history must be > 0"):
        spec.draft([])
    with pytest.raises(leap.InvalidArgumentError, match="out of range"):
        spec.draft([1, model.tokenizer.vocab_size])
    with pytest.raises(leap.InvalidArgumentError, match="no guesses to report"):
        spec.accept(0)
    spec.close()
    with pytest.raises(leap.InvalidArgumentError, match="the speculator is closed"):
        spec.draft([1, 2])
