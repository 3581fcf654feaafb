"""Low-level evaluation from Python: eval / logits / rewind and samplers, checked against numpy."""
import math
import os

import numpy as np
import pytest

import leap

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
TINY = os.path.join(REPO, "Tests", "Fixtures", "models", "lfm2-tiny-f32.gguf")
GOLD = os.path.join(REPO, "Tests", "Fixtures", "models", "goldens", "lfm2-tiny-f32")


def numpy_golden():
    toks = [int(x) for x in open(GOLD + ".numpy.txt").read().split("tokens ")[1].split()]
    ref = np.fromfile(GOLD + ".numpy.f32", dtype="<f4").reshape(len(toks), -1)
    return toks, ref


def test_logits_match_numpy_reference():
    toks, ref = numpy_golden()
    model = leap.load_model(TINY)
    ctx = model.create_context(context_size=64)
    ctx.eval(toks, all_logits=True)
    got = np.array([np.array(ctx.logits(i)) for i in range(len(toks))])
    rel = np.sqrt(((got - ref) ** 2).sum() / (ref ** 2).sum())
    assert rel < 5e-3  # F16 KV cache rounding (2^-11 per value) with margin, as in TinyLFM2Tests
    assert (got.argmax(1) == ref.argmax(1)).all()
    assert ctx.n_past == len(toks)


def test_rewind_and_errors():
    toks, ref = numpy_golden()
    model = leap.load_model(TINY)
    ctx = model.create_context(context_size=len(toks))
    ctx.eval(toks[:20])
    ctx.rewind(10)
    assert ctx.n_past == 10
    ctx.eval(toks[10:20])
    # F16 KV cache and float32 rounding against float64 (rel-RMS < 5e-3 above, on logits of size ~5).
    np.testing.assert_allclose(np.array(ctx.logits()), ref[19], rtol=0, atol=0.02)
    with pytest.raises(leap.InvalidArgumentError):
        ctx.logits(0)
    with pytest.raises(leap.PromptExceedsContextError):
        ctx.eval([5] * 100)
    with pytest.raises(leap.InvalidArgumentError):
        ctx.eval([100000])
    with pytest.raises(leap.InvalidArgumentError):
        ctx.rewind(999)


def test_tokenize_and_sampler():
    model = leap.load_model(TINY)
    toks = model.tokenize("Alice was")
    assert toks[0] == 1 and len(toks) >= 2
    logits = [0.0, 3.0, 1.0, 3.0]
    assert leap.Sampler(temperature=0).sample(logits) == 1
    # seeded draws follow softmax(logits / T) restricted by top-k
    s = leap.Sampler(temperature=1.0, top_k=3, top_p=1.0, min_p=0.0, seed=3)
    counts = np.zeros(4)
    for _ in range(3000):
        counts[s.sample(logits)] += 1
    assert counts[0] == 0  # outside the top 3
    p = np.exp([3.0, 1.0, 3.0]) / np.exp([3.0, 1.0, 3.0]).sum()
    assert abs(counts[1] / 3000 - p[0]) < 0.05 and abs(counts[2] / 3000 - p[1]) < 0.03
    a = leap.Sampler(temperature=1.0, seed=11)
    b = leap.Sampler(temperature=1.0, seed=11)
    assert [a.sample(logits) for _ in range(30)] == [b.sample(logits) for _ in range(30)]
