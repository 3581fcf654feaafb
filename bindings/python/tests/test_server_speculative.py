"""leap-server with speculative decoding (--spec-type ngram, --model-draft): greedy answers identical to a server
without it, streamed and not and with several clients at once, the drafts reported in ``timings`` and /v1/models,
a draft model of another vocabulary refused at startup, and bad flag values refused."""
import concurrent.futures
import subprocess
import sys

import pytest

from conftest import MODELS
from server_process import BINDINGS, Server, start

pytest.importorskip("fastapi")
openai = pytest.importorskip("openai")

SMOL = MODELS / "SmolLM2-135M-Instruct.Q4_1.gguf"
GEMMA = MODELS / "gemma-3-270m-q4_k_m.gguf"
pytestmark = pytest.mark.skipif(not SMOL.exists(), reason=f"{SMOL} missing (scripts/setup.sh fetches it)")

GREEDY = {"temperature": 0, "max_tokens": 48, "extra_body": {"repetition_penalty": 1}}
PASSAGES = [
    "The Rhine begins in the Swiss Alps, flows through Germany and the Netherlands, and empties into the North Sea.",
    "Bread is made from flour, water, salt and yeast; the dough rises for an hour before it is baked.",
    "The library opens at nine in the morning and closes at six in the evening, except on Sundays.",
    "A triangle has three sides and three angles, and the angles of every triangle add up to 180 degrees.",
]


def copy_prompt(i=0):
    return [{"role": "user", "content": f"Repeat this sentence exactly: {PASSAGES[i]}"}]


def server(tmp_path_factory, name, *flags):
    return start("--model", SMOL, "--ctx-size", 1024, "--parallel", 4, *flags,
                 log_path=tmp_path_factory.mktemp(name) / "server.log")


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    s = server(tmp_path_factory, "plain")
    yield s
    s.stop()


@pytest.fixture(scope="module")
def ngram(tmp_path_factory):
    s = server(tmp_path_factory, "ngram", "--spec-type", "ngram", "--spec-draft-n-max", 10)
    yield s
    s.stop()


@pytest.fixture(scope="module")
def drafted(tmp_path_factory):
    s = server(tmp_path_factory, "draft", "-md", SMOL)  # --spec-type draft is the default with a draft model
    yield s
    s.stop()


def answer(server, i=0, **body):
    options = {**GREEDY, "extra_body": {**GREEDY["extra_body"], **body}}
    r = server.client().chat.completions.create(model="", messages=copy_prompt(i), **options)
    return r.choices[0].message.content, (r.model_extra or {}).get("timings")


def streamed(server, i=0):
    text, timings = [], None
    for chunk in server.client().chat.completions.create(model="", messages=copy_prompt(i), stream=True, **GREEDY):
        for c in chunk.choices:
            if c.delta.content:
                text.append(c.delta.content)
        timings = (chunk.model_extra or {}).get("timings") or timings
    return "".join(text), timings


def test_prompt_lookup_gives_the_same_greedy_answers(plain, ngram):
    # First on a fresh server: the library keeps the pass cost its generations measure, and where passes
    # are dear (other conversations in the pass) it rightly drafts nothing.
    text, timings = answer(ngram)
    expected, plain_timings = answer(plain)
    assert text == expected and PASSAGES[0] in text
    assert "draft_n" not in plain_timings  # no drafts, no draft figures (as llama-server)
    assert timings["predicted_n"] == plain_timings["predicted_n"]
    assert timings["draft_n"] > 0 and 0 < timings["draft_n_accepted"] <= timings["draft_n"]
    stream_text, stream_timings = streamed(ngram, 1)
    assert stream_text == answer(plain, 1)[0]
    assert 0 < stream_timings["draft_n_accepted"] <= stream_timings["draft_n"]


def test_prompt_lookup_with_several_clients_at_once(plain, ngram):
    alone = [answer(plain, i)[0] for i in range(len(PASSAGES))]
    with concurrent.futures.ThreadPoolExecutor(len(PASSAGES)) as pool:
        together = list(pool.map(lambda i: (answer if i % 2 else streamed)(ngram, i), range(len(PASSAGES))))
    # Each answer is the one it gets alone without speculation, whatever else shares the passes.
    assert [t for t, _ in together] == alone
    for _, timings in together:
        assert 0 <= timings.get("draft_n_accepted", 0) <= timings.get("draft_n", 0)
    assert ngram.health()["slots_processing"] == 0


def test_a_request_sets_its_own_draft_length(plain, ngram):
    expected = answer(plain)[0]
    text, timings = answer(ngram, **{"speculative.n_max": 0})  # llama-server's name; 0: no drafts
    assert text == expected and "draft_n" not in timings
    text, timings = answer(ngram, **{"speculative.n_max": 2})
    assert text == expected
    # At most 2 guesses a pass, and a pass makes at least one token.
    assert 0 <= timings.get("draft_n_accepted", 0) <= timings.get("draft_n", 0) <= 2 * timings["predicted_n"]
    text, timings = answer(plain, **{"speculative.n_max": 4})  # a server that does not speculate ignores it
    assert text == expected and "draft_n" not in timings
    for value, message in [(15, "speculative.n_max: 15 is above the maximum of 14"),
                           (-1, "speculative.n_max: -1 is below the minimum of 0"),
                           ("4", "speculative.n_max: expected an integer")]:
        with pytest.raises(openai.BadRequestError) as e:
            answer(ngram, **{"speculative.n_max": value})
        assert e.value.body["param"] == "speculative.n_max" and message in e.value.body["message"]


def test_models_say_whether_the_server_speculates(plain, ngram, drafted):
    meta = [s.client().models.list().data[0].model_extra["meta"] for s in (plain, ngram, drafted)]
    assert [(m["speculative"], m["spec_type"], m["spec_draft_n_max"]) for m in meta] == \
        [(False, "none", None), (True, "ngram", 10), (True, "draft", None)]


def test_a_model_drafting_for_itself_has_every_draft_accepted(plain, drafted):
    # The same weights draft and verify, and on Q4_1 the verification pass's logits are the one-token
    # decode's bit for bit: every greedy guess is the token generated. An answer cut by max_tokens before
    # its end, as guesses past the end of an answer (after its end-of-turn token) are rightly rejected.
    r = drafted.client().chat.completions.create(model="", messages=copy_prompt(), **{**GREEDY, "max_tokens": 12})
    timings = r.model_extra["timings"]
    assert r.choices[0].finish_reason == "length" and timings["predicted_n"] == 12
    assert timings["draft_n"] > 0 and timings["draft_n_accepted"] == timings["draft_n"]
    assert r.choices[0].message.content == answer(plain)[0][:len(r.choices[0].message.content)]
    text, timings = answer(drafted, 3)
    assert text == answer(plain, 3)[0] and timings["draft_n_accepted"] > 0
    assert streamed(drafted, 2)[0] == answer(plain, 2)[0]


@pytest.mark.skipif(not GEMMA.exists(), reason=f"{GEMMA} missing")
def test_a_draft_model_of_another_vocabulary_is_refused_at_startup(tmp_path):
    s = Server("--model", SMOL, "-md", GEMMA, log_path=tmp_path / "server.log")
    try:
        assert s.proc.wait(timeout=60) == 1
        assert "a draft model must share the model's vocabulary" in s.output()
    finally:
        s.stop()


@pytest.mark.parametrize("flags, message", [
    (["--spec-type", "draft"], "--spec-type draft needs a draft model"),
    (["--spec-type", "draft-simple"], "--spec-type draft-simple needs a draft model"),  # llama-server's name
    (["--spec-type", "medusa"], "invalid choice: 'medusa'"),
    (["--spec-type", "ngram", "--spec-draft-n-max", "0"], "--spec-draft-n-max must be 1..14, got 0"),
    (["--spec-type", "ngram", "--spec-draft-n-max", "15"], "--spec-draft-n-max must be 1..14, got 15"),
    (["--spec-draft-n-max", "4"], "--spec-draft-n-max needs speculative decoding"),
    (["-md", "/nonexistent/draft.gguf"], "--model-draft /nonexistent/draft.gguf: no such file"),
    (["-md", str(SMOL), "--spec-type", "ngram"], "--spec-type ngram would not use it"),
])
def test_bad_speculation_flags_are_refused(flags, message):
    run = subprocess.run([sys.executable, "-m", "leap.server", "--model", str(SMOL), *flags], cwd=BINDINGS,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 2 and message in run.stderr


# ---- /v1/completions: the server's speculation on a low-level context ---------------------------------------

COPY_TEXT = "".join(f"{who}: {PASSAGES[0]}\n" for who in "ABA") + "B: The Rhine"


def completion(server, **body):
    extra = {k: body.pop(k) for k in [k for k in body if k in ("speculative.n_max", "repetition_penalty")]}
    r = server.client().completions.create(model="", prompt=COPY_TEXT, extra_body=extra, **body)
    return [c.model_dump() for c in r.choices], (r.model_extra or {}).get("timings")


def streamed_completion(server, **body):
    texts, finishes, logprobs, timings = {}, {}, {}, {}
    for chunk in server.client().completions.create(model="", prompt=COPY_TEXT, stream=True, **body):
        for c in chunk.choices:
            texts[c.index] = texts.get(c.index, "") + c.text
            if c.logprobs is not None:
                lp = logprobs.setdefault(c.index, {"tokens": [], "token_logprobs": [], "top_logprobs": []})
                for key in lp:
                    lp[key] += getattr(c.logprobs, key) or []
            if c.finish_reason is not None:
                finishes[c.index] = c.finish_reason
                timings[c.index] = (chunk.model_extra or {}).get("timings")  # each choice's, on its last chunk
    return texts, finishes, logprobs, timings


def token_of(text):
    """The one token of ``text`` in SmolLM2's vocabulary."""
    import leap
    (token,) = leap.load_model(str(SMOL), context_size=64).tokenize(text)
    return token


def test_completions_with_prompt_lookup_give_the_plain_answers(plain, ngram):
    bodies = [
        {"temperature": 0, "max_tokens": 48, "repetition_penalty": 1},
        {"temperature": 0.9, "seed": 11, "n": 2, "max_tokens": 40, "logprobs": 3},
        {"temperature": 0, "max_tokens": 48, "stop": [" Sea"], "logprobs": 2},
        # A ban on the token the copy continues with (the Germany of the passage): the answer turns away
        # from the copy there, and the bias is added to every verified row.
        {"temperature": 0, "max_tokens": 48, "logit_bias": {str(token_of(" Germany")): -100}, "logprobs": 1},
    ]
    for body in bodies:
        expected, plain_timings = completion(plain, **dict(body))
        got, timings = completion(ngram, **dict(body))
        assert got == expected, body
        assert "draft_n" not in plain_timings and timings["predicted_n"] == plain_timings["predicted_n"]
        assert 0 < timings["draft_n_accepted"] <= timings["draft_n"], body
        stream_body = {k: v for k, v in body.items() if k != "repetition_penalty"}
        texts, finishes, logprobs, stream_timings = streamed_completion(ngram, **stream_body)
        assert texts == {c["index"]: c["text"] for c in expected}
        assert finishes == {c["index"]: c["finish_reason"] for c in expected}
        if "logprobs" in body:
            assert logprobs == {c["index"]: {k: c["logprobs"][k] for k in ("tokens", "token_logprobs", "top_logprobs")}
                                for c in expected}
        assert 0 < stream_timings[0]["draft_n_accepted"] <= stream_timings[0]["draft_n"]
    assert PASSAGES[0][12:40] in completion(plain, **dict(bodies[0]))[0][0]["text"]  # the continuation copies
    assert " Sea" not in completion(plain, **dict(bodies[2]))[0][0]["text"]


def test_a_completion_request_sets_its_own_draft_length(plain, ngram):
    expected, _ = completion(plain, temperature=0, max_tokens=32)
    got, timings = completion(ngram, temperature=0, max_tokens=32, **{"speculative.n_max": 0})
    assert got == expected and "draft_n" not in timings
    got, timings = completion(ngram, temperature=0, max_tokens=32, **{"speculative.n_max": 2})
    assert got == expected and 0 < timings["draft_n"] <= 2 * timings["predicted_n"]
    with pytest.raises(openai.BadRequestError) as e:
        completion(ngram, max_tokens=4, **{"speculative.n_max": 15})
    assert e.value.body["param"] == "speculative.n_max"


@pytest.fixture(scope="module")
def drafted_afresh(tmp_path_factory):
    # A draft model as large as the model drafts at a loss: once passes are timed the library rightly stops
    # drafting for a while (the chat tests above teach their server that). A server of its own answers
    # these requests first.
    s = server(tmp_path_factory, "draft-completions", "-md", SMOL)
    yield s
    s.stop()


def test_completions_of_a_model_drafting_for_itself_take_every_greedy_guess(plain, drafted_afresh):
    drafted = drafted_afresh
    expected, _ = completion(plain, temperature=0, max_tokens=24)
    got, timings = completion(drafted, temperature=0, max_tokens=24)
    assert got == expected and expected[0]["finish_reason"] == "length"
    assert timings["draft_n"] > 0 and timings["draft_n_accepted"] == timings["draft_n"]
    seeded = {"temperature": 0.8, "seed": 5, "n": 2, "max_tokens": 24, "logprobs": 2}
    assert completion(drafted, **dict(seeded))[0] == completion(plain, **dict(seeded))[0]
