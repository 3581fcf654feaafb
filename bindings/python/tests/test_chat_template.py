"""leap.ChatTemplate against Python jinja2 configured like Hugging Face transformers (the oracle)."""
from __future__ import annotations

import datetime
import json
import random
import sys

import pytest

jinja2 = pytest.importorskip("jinja2")
import jinja2.ext  # noqa: E402
from jinja2.sandbox import ImmutableSandboxedEnvironment  # noqa: E402

import leap  # noqa: E402
from conftest import FIXTURES, REPO  # noqa: E402

TEMPLATES = FIXTURES / "templates" / "jinja"


class AssistantTracker(jinja2.ext.Extension):
    """transformers' {% generation %} tag (renders its body)."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_render", []), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def hf_environment() -> ImmutableSandboxedEnvironment:
    """transformers' _compile_jinja_template environment."""

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(fmt):
        return datetime.datetime.now().strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[AssistantTracker, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


ENV = hf_environment()


def jinja2_render(source, messages, tools=None, add_generation_prompt=True, **variables):
    ctx = {"messages": messages, "tools": tools, "documents": None, "add_generation_prompt": add_generation_prompt,
           "bos_token": "", "eos_token": ""}
    ctx.update(variables)
    return ENV.from_string(source).render(**ctx)


TOOLS = [{"type": "function", "function": {"name": "get_time", "description": "Current time in a zone.",
                                           "parameters": {"type": "object",
                                                          "properties": {"tz": {"type": "string"}},
                                                          "required": ["tz"]}}}]

CONVERSATIONS = [
    [{"role": "user", "content": "Hi there"}],
    [{"role": "system", "content": "Terse."}, {"role": "user", "content": "2+2?"},
     {"role": "assistant", "content": "<think>easy</think>4"}, {"role": "user", "content": "ünïcödé ✓"}],
    [{"role": "user", "content": "Time in Paris?"},
     {"role": "assistant", "content": "", "tool_calls": [
         {"type": "function", "function": {"name": "get_time", "arguments": {"tz": "Europe/Paris"}}}]},
     {"role": "tool", "content": "12:00"}],
]

NAMES = ["LFM2.5-Instruct", "LFM2-8B-A1B", "LFM2.5-8B-A1B", "Qwen-Qwen3-0.6B", "Qwen-Qwen2.5-7B-Instruct",
         "meta-llama-Llama-3.1-8B-Instruct", "HuggingFaceTB-SmolLM3-3B", "google-gemma-2-2b-it",
         "openai-gpt-oss-120b", "mistralai-Mistral-Nemo-Instruct-2407", "gguf-SmolLM2-135M-Instruct"]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("conv", range(len(CONVERSATIONS)))
@pytest.mark.parametrize("with_tools", [False, True])
def test_templates_match_jinja2(name, conv, with_tools):
    source = (TEMPLATES / f"{name}.jinja").read_text(encoding="utf-8")
    messages = CONVERSATIONS[conv]
    tools = TOOLS if with_tools else None
    variables = {"bos_token": "<s>", "eos_token": "</s>", "enable_thinking": conv == 1,
                 "date_string": "26 Jul 2024"}
    try:
        want = jinja2_render(source, messages, tools, True, **variables)
    except Exception:  # noqa: BLE001 - then leap must fail too
        with pytest.raises(leap.FormatError):
            leap.ChatTemplate(source).render(messages, tools=tools, **variables)
        return
    assert leap.ChatTemplate(source).render(messages, tools=tools, add_generation_prompt=True, **variables) == want


def test_chat_messages_render_like_dicts():
    source = (TEMPLATES / "LFM2.5-8B-A1B.jinja").read_text(encoding="utf-8")
    msgs = [leap.ChatMessage("system", "Be kind."), leap.ChatMessage("user", "Hello"),
            leap.ChatMessage("assistant", "Hi!", reasoning_content="greet back",
                             function_calls=[leap.LeapFunctionCall("get_time", {"tz": "UTC"})])]
    dicts = [{"role": "system", "content": "Be kind."}, {"role": "user", "content": "Hello"},
             {"role": "assistant", "content": "Hi!", "reasoning_content": "greet back", "thinking": "greet back",
              "tool_calls": [{"type": "function", "function": {"name": "get_time", "arguments": {"tz": "UTC"}}}]}]
    t = leap.ChatTemplate(source)
    got = t.render(msgs, add_generation_prompt=False, keep_past_thinking=True)
    assert got == jinja2_render(source, dicts, None, False, keep_past_thinking=True)
    assert got == t.render(dicts, add_generation_prompt=False, keep_past_thinking=True)


def test_chatml_fallback_matches_jinja2():
    msgs = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": [{"type": "text", "text": "Yo"}]}]
    t = leap.ChatTemplate(leap.ChatTemplate.CHATML)
    assert t.render(msgs) == jinja2_render(leap.ChatTemplate.CHATML, msgs)
    assert t.render(msgs) == "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nYo<|im_end|>\n<|im_start|>assistant\n"


def test_errors_name_the_position():
    with pytest.raises(leap.FormatError, match=r"template line 2, column \d+"):
        leap.ChatTemplate("ok\n{% for x in y %}")
    t = leap.ChatTemplate("{% if messages[0].role != 'user' %}{{ raise_exception('first must be user') }}{% endif %}")
    with pytest.raises(leap.FormatError, match="first must be user"):
        t.render([{"role": "system", "content": "x"}])
    assert t.render([{"role": "user", "content": "x"}]) == ""
    with pytest.raises(leap.FormatError, match="unsafe"):
        leap.ChatTemplate("{{ messages.append(1) }}").render([])



# ---- Differential test: random templates (scripts/fixtures/template_differential.py) rendered by both ----
@pytest.mark.parametrize("flavor,seed", [(1, 10), (1, 11), (2, 10), (2, 11)])
def test_random_templates_match_jinja2(flavor, seed):
    """Random compositions of filters, tests, operators, methods and statements with random whitespace
    control: same output, or both raise."""
    sys.path.insert(0, str(REPO / "scripts" / "fixtures"))
    import template_differential as td

    rng = random.Random(seed)
    mismatches = []
    for _ in range(250):
        src = td.random_template(flavor, rng)
        diff = td.compare(src, leap)
        if diff:
            mismatches.append((src, diff))
    assert not mismatches, mismatches[:3]
