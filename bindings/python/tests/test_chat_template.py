"""leap.ChatTemplate against Python jinja2 configured like Hugging Face transformers (the oracle)."""
from __future__ import annotations

import datetime
import json
import random

import pytest

jinja2 = pytest.importorskip("jinja2")
import jinja2.ext  # noqa: E402
from jinja2.sandbox import ImmutableSandboxedEnvironment  # noqa: E402

import leap  # noqa: E402
from conftest import FIXTURES  # noqa: E402

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


# ---- Differential test: random templates built from the features above, rendered by both ----------------
SNIPPET_CONTEXT = json.loads((FIXTURES / "templates" / "snippets.json").read_text(encoding="utf-8"))["context"]
ATOMS = ["s", "n", "f", "items", "words", "d", "msgs[1]", "msgs[2].tool_calls", "nested.a", "empty", "none_value", "t", "text", "uni",
         "'a b'", "' x\\n'", "3", "-2", "0.5", "1e3", "true", "none", "[1, 'x']", "{'k': 'v'}", "(1, 2)", "undefined_x", "msgs", "''", "[]", "'A,b,C'"]
FILTERS = ["trim", "length", "upper", "lower", "title", "capitalize", "first", "last", "list", "string", "int", "float", "abs",
           "tojson", "sort", "unique|list", "reverse|list", "join(', ')", "default('dflt')", "default('x', true)", "items|list", "dictsort",
           "sum", "min", "max", "round(1)", "wordcount", "indent(2)", "replace('a', 'Z')", "center(9)", "map('string')|list",
           "select|list", "reject('odd')|list", "selectattr('role')|list", "map(attribute='role')|list", "batch(2)|list", "e", "safe", "count",
           "tojson(indent=1)", "tojson(sort_keys=true)", "truncate(5)", "format(1)"]
TESTS = ["defined", "undefined", "none", "string", "number", "integer", "float", "mapping", "iterable", "sequence", "boolean",
         "true", "false", "even", "odd", "divisibleby 2", "eq 3", "lower", "upper", "callable", "in [1, 'a b']"]
BIN = ["+", "-", "*", "/", "//", "%", "~", "==", "!=", "<", ">=", "in", "not in", "and", "or", "**"]
METHODS = ["split()", "split(',')", "strip()", "lstrip('a')", "upper()", "startswith('a')", "endswith('s')", "replace('a', 'b')",
           "find('o')", "count('l')", "title()", "items()|list", "keys()|list", "values()|list", "get('a')", "get('zz', 1)", "rsplit(' ', 1)"]
def expr(depth=0):
    r = RNG.random()
    if depth > 2 or r < 0.3: return RNG.choice(ATOMS)
    if r < 0.5: return f"{expr(depth+1)} | {RNG.choice(FILTERS)}"
    if r < 0.6: return f"({expr(depth+1)} is {'not ' if RNG.random()<0.3 else ''}{RNG.choice(TESTS)})"
    if r < 0.75: return f"({expr(depth+1)} {RNG.choice(BIN)} {expr(depth+1)})"
    if r < 0.85: return f"{RNG.choice(ATOMS)}.{RNG.choice(METHODS)}"
    if r < 0.9: return RNG.choice(ATOMS) + "[" + RNG.choice(['0','-1','1:','::-1',':2','"a"','"role"']) + "]"
    if r < 0.95: return f"({expr(depth+1)} if {expr(depth+1)} else {expr(depth+1)})"
    return f"not {expr(depth+1)}"
def stmt(depth=0):
    r = RNG.random()
    ws = lambda: RNG.choice(["", "-", "+"]) if RNG.random() < 0.5 else ""
    we = lambda: RNG.choice(["", "-"]) if RNG.random() < 0.5 else ""
    pad = RNG.choice(["", " ", "\n", "  \n  ", "\n\t"])
    if depth > 2 or r < 0.4: return pad + "{{" + we() + " " + expr() + " " + we() + "}}" + pad
    if r < 0.6: return f"{pad}{{%{ws()} for x in {expr()} {we()}%}}{stmt(depth+1)}{{{{ loop.index }}}}{pad}{{%{ws()} endfor {we()}%}}{pad}"
    if r < 0.8: return f"{pad}{{%{ws()} if {expr()} {we()}%}}{stmt(depth+1)}{{%{ws()} else {we()}%}}{stmt(depth+1)}{{%{ws()} endif {we()}%}}{pad}"
    if r < 0.9: return f"{pad}{{%{ws()} set y = {expr()} {we()}%}}{pad}{{{{ y }}}}"
    return f"{pad}{{#{ws()} c {we()}#}}{pad}"


@pytest.mark.filterwarnings("ignore::SyntaxWarning")  # Python warns compiling jinja2's code for `3[0]`
@pytest.mark.parametrize("seed", [10, 11, 12])
def test_random_templates_match_jinja2(seed):
    """Random compositions of filters, tests, operators, methods and statements with random whitespace
    control (`-`, `+`): same output, or both raise."""
    global RNG
    RNG = random.Random(seed)
    mismatches = []
    for _ in range(300):
        src = "".join(stmt() for _ in range(RNG.randint(1, 3)))
        try:
            want = ("ok", ENV.from_string(src).render(**SNIPPET_CONTEXT))
        except Exception as e:  # noqa: BLE001
            want = ("error", type(e).__name__)
        try:
            got = ("ok", leap.ChatTemplate(src).render([], add_generation_prompt=False, documents=None,
                                                        **SNIPPET_CONTEXT))
        except leap.FormatError:
            got = ("error", "")
        if want[0] != got[0] or want[1] != got[1] and want[0] == "ok":
            mismatches.append((src, want, got))
    assert not mismatches, mismatches[:3]
