"""Function definitions (tool JSON) and the function-call parsers, against Python's own parser (ast)."""
import ast
import json
import random

import pytest

import leap

# The same hand-written expectation as the Swift test (Tests/LeapToolCallsTests/FunctionDefinitionTests.swift):
# LEAP §8.4 key order, parameter descriptions replacing the type's, `required` always present.
WEATHER_TOOL_JSON = (
    '{"type":"function","function":{"name":"get_weather","description":"Current weather for a city.","parameters":'
    '{"type":"object","properties":{"city":{"type":"string","description":"City name"},'
    '"unit":{"type":"string","enum":["celsius","fahrenheit"],"description":"Temperature unit"},'
    '"days":{"type":"integer","enum":[1,3,7],"description":"Forecast days"},'
    '"threshold":{"type":"number","enum":[0.5,1.0]},'
    '"verbose":{"type":"boolean","description":"More detail"},'
    '"tags":{"type":"array","description":"Tags","items":{"type":"string","description":"A tag"}},'
    '"where":{"type":"object","description":"Coordinates","properties":{"lat":{"type":"number"},'
    '"lon":{"type":"number","description":"Longitude"},"extra":{"type":"null"}},"required":["lat"]},'
    '"nothing":{"type":"null"}},"required":["city","threshold","tags"]}}}'
)


def weather_function():
    P = leap.LeapFunctionParameter
    return leap.LeapFunction("get_weather", "Current weather for a city.", [
        P("city", leap.StringType(), "City name"),
        P("unit", leap.StringType(enum_values=["celsius", "fahrenheit"], description="replaced"), "Temperature unit", optional=True),
        P("days", leap.IntegerType(enum_values=[1, 3, 7]), "Forecast days", optional=True),
        P("threshold", leap.NumberType(enum_values=[0.5, 1]), ""),
        P("verbose", leap.BooleanType(), "More detail", optional=True),
        P("tags", leap.ArrayType(leap.StringType(description="A tag")), "Tags"),
        P("where", leap.ObjectType({"lat": leap.NumberType(), "lon": leap.NumberType(description="Longitude"),
                                    "extra": leap.NullType()}, ["lat"], description="own"), "Coordinates", optional=True),
        P("nothing", leap.NullType(), "Always null", optional=True),
    ])


def test_tool_json_matches_the_swift_core():
    f = weather_function()
    assert f.to_json_string() == WEATHER_TOOL_JSON
    assert f.to_json() == json.loads(WEATHER_TOOL_JSON)
    assert leap.LeapFunction("now", "Time").to_json()["function"]["parameters"] == {"type": "object", "properties": {}, "required": []}


@pytest.mark.parametrize("name", ["1abc", "get-weather", "", "a b", "é"])
def test_invalid_function_names(name):
    with pytest.raises(leap.InvalidArgumentError, match="is not valid"):
        leap.LeapFunction(name, "d")


def test_invalid_definitions():
    with pytest.raises(leap.InvalidArgumentError, match="defined twice"):
        leap.LeapFunction("f", "", [leap.LeapFunctionParameter("a", leap.NullType()), leap.LeapFunctionParameter("a", leap.NullType())])
    with pytest.raises(leap.InvalidArgumentError, match="'x' is not among the properties"):
        leap.ObjectType({}, ["x"])


# ---- parsers, with Python's ast as the oracle ---------------------------------------------------------

def expected_calls(body):
    """Calls of a Pythonic body per ast.parse + ast.literal_eval (tuples -> lists)."""
    def fix(v):
        if isinstance(v, (list, tuple)):
            return [fix(x) for x in v]
        if isinstance(v, dict):
            return {k: fix(x) for k, x in v.items()}
        return v
    tree = ast.parse(body.strip(), mode="eval").body
    nodes = tree.elts if isinstance(tree, ast.List) else [tree]
    return [leap.LeapFunctionCall(ast.unparse(n.func), {kw.arg: fix(ast.literal_eval(kw.value)) for kw in n.keywords}) for n in nodes]


CORPUS = [
    '[get_weather(city="Paris", unit=\'celsius\')]',
    '[a(x=1), b(y=-2.5e-3, z=True, n=None), c()]',
    '[f(s="q\\"uote\\\\ \\n\\t\\x41\\u00e9\\U0001F600", t=\'\'\'tri"ple\'\'\', r=r"\\d")]',
    '[f(l=[1, [2, (3, 4)], {"k": {"j": [None]}}], h=0x1F, u=1_000, e=.5)]',
    ' \n [ f( a = 1 , ) ,\n g( b = "x" ) , ] ',
    '[f(s="caf\u00e9 \u4e2d \U0001F600")]',
]


def random_body(rng):
    def value(depth=0):
        k = rng.randint(0, 6 if depth < 2 else 3)
        if k == 0:
            return rng.randint(-10**9, 10**9)
        if k == 1:
            return rng.uniform(-1e6, 1e6) * 10 ** rng.randint(-8, 8)
        if k == 2:
            return rng.choice([True, False, None])
        if k == 3:
            return "".join(rng.choice("aZ \"'\\\n\t\x00é中😀<|>()[]{}=,") for _ in range(rng.randint(0, 10)))
        if k == 4:
            return [value(depth + 1) for _ in range(rng.randint(0, 3))]
        if k == 5:
            return tuple(value(depth + 1) for _ in range(rng.randint(0, 3)))
        return {str(value(3)): value(depth + 1) for _ in range(rng.randint(0, 3))}
    calls = []
    for _ in range(rng.randint(1, 3)):
        args = {f"arg{i}": value() for i in range(rng.randint(0, 4))}
        calls.append(rng.choice(["f", "get_weather", "_x1"]) + "(" + ", ".join(f"{k}={v!r}" for k, v in args.items()) + ")")
    return "[" + ", ".join(calls) + "]"


def test_lfm_parse_matches_ast():
    rng = random.Random(7)
    bodies = CORPUS + [random_body(rng) for _ in range(200)]
    parser = leap.LFMFunctionCallParser()
    for body in bodies:
        expected = expected_calls(body)
        assert parser.parse(body) == expected, body
        assert parser.parse("text <|tool_call_start|>" + body + "<|tool_call_end|> more") == expected
        # dump writes a body Python (and the parser) read back as the same calls.
        dumped = parser.dump(expected)
        assert dumped.startswith("<|tool_call_start|>[") and dumped.endswith("]<|tool_call_end|>")
        inner = dumped[len("<|tool_call_start|>"):-len("<|tool_call_end|>")]
        assert expected_calls(inner) == expected
        assert parser.parse(dumped) == expected


def test_lfm_dump_format():
    calls = [leap.LeapFunctionCall("get_weather", {"unit": "c", "city": 'Pa"ris\n'}), leap.LeapFunctionCall("now")]
    assert leap.LFMFunctionCallParser().dump(calls) == \
        '<|tool_call_start|>[get_weather(city="Pa\\"ris\\n", unit="c"), now()]<|tool_call_end|>'
    assert leap.LFMFunctionCallParser().dump([{"name": "f", "arguments": {"x": [1.0, False, None]}}]) == \
        "<|tool_call_start|>[f(x=[1.0, False, None])]<|tool_call_end|>"
    assert leap.LFMFunctionCallParser().dump([]) == ""


def test_lfm_json_variant():
    body = '[{"name": "f", "arguments": {"a": [1, 2.5, true, null]}}, {"name": "g", "arguments": "{\\"k\\": \\"v\\"}"}]'
    assert leap.LFMFunctionCallParser().parse(body) == [leap.LeapFunctionCall("f", {"a": [1, 2.5, True, None]}),
                                                        leap.LeapFunctionCall("g", {"k": "v"})]


def test_hermes_round_trip_and_format():
    parser = leap.HermesFunctionCallParser()
    calls = [leap.LeapFunctionCall("a", {"z": 1, "b": {"c": "d"}}), leap.LeapFunctionCall("b", {})]
    text = parser.dump(calls)
    # The layout of Qwen's chat template: one block per call, json.dumps arguments, newline-separated.
    assert text == "\n".join('<tool_call>\n{"name": "%s", "arguments": %s}\n</tool_call>' % (c.name, json.dumps(c.arguments, ensure_ascii=False))
                             for c in calls)
    assert parser.parse(text) == calls
    assert parser.parse('{"name": "x", "arguments": "{\\"n\\": 2}"}') == [leap.LeapFunctionCall("x", {"n": 2})]


@pytest.mark.parametrize("parser,text,fragment", [
    (leap.LFMFunctionCallParser(), "<|tool_call_start|>[f(a=]<|tool_call_end|>", "at offset 5: expected a value, found ']'"),
    (leap.LFMFunctionCallParser(), "[f(1)]", "expected a keyword argument"),
    (leap.LFMFunctionCallParser(), '[f(a="open)]', "unterminated string"),
    (leap.LFMFunctionCallParser(), "[f(a=" + "[" * 10000 + ")]", "levels of nesting"),
    (leap.HermesFunctionCallParser(), "<tool_call>get_weather()</tool_call>", "expected a JSON object"),
    (leap.HermesFunctionCallParser(), '<tool_call>{"arguments": {}}</tool_call>', 'a "name" field'),
])
def test_malformed_calls_raise(parser, text, fragment):
    with pytest.raises(leap.FunctionCallParsingError) as info:
        parser.parse(text)
    assert isinstance(info.value, leap.LeapError)
    assert fragment in str(info.value)


def test_dump_rejects_non_json_arguments():
    with pytest.raises(ValueError):
        leap.LFMFunctionCallParser().dump([leap.LeapFunctionCall("f", {"x": float("nan")})])


def test_parser_c_values():
    from leap.functions import parser_c_value

    assert [parser_c_value(v) for v in (None, "lfm", "HERMES", leap.LFMFunctionCallParser(), leap.HermesFunctionCallParser())] == [0, 1, 2, 1, 2]
    with pytest.raises(leap.InvalidArgumentError):
        parser_c_value("pythonic")
    assert leap.LFMFunctionCallParser() == leap.LFMFunctionCallParser() != leap.HermesFunctionCallParser()


REASONING = "Let me think about <|tool_call_start|>[special_function(arg1=1)]<|tool_call_end|> hmm"


def test_calls_written_in_the_reasoning_are_not_calls():
    lfm = leap.LFMFunctionCallParser()
    now = [leap.LeapFunctionCall("now", {})]
    assert lfm.parse(f"<think>{REASONING}</think>Sure.<|tool_call_start|>[now()]<|tool_call_end|>") == now
    assert lfm.parse(f"<think>{REASONING}</think>No call.") == []
    # A think block the prompt opened: a </think> with no <think> before it.
    assert lfm.parse(f"{REASONING}</think>No call.") == []
    assert lfm.parse(f"{REASONING}</think><|tool_call_start|>[now()]<|tool_call_end|>") == now


@pytest.fixture
def warnings():
    seen = []
    leap.set_log_callback(lambda level, message: seen.append((level, message)), "warning")
    yield seen
    leap.set_log_callback(None)


def test_repairs_match_what_the_model_meant_and_are_logged(warnings):
    lfm = leap.LFMFunctionCallParser()
    # A set is a list in written order (what vLLM gives); ast reads the same elements.
    body = "[label(tags={'urgent', 'bug'})]"
    assert lfm.parse(body) == [leap.LeapFunctionCall("label", {"tags": ["urgent", "bug"]})]
    assert ast.literal_eval(body[body.index("{"):body.rindex("}") + 1]) == {"urgent", "bug"}
    # Unescaped quotes: the value is the text the model wrote between the outer quotes, which Python reads
    # back from the correctly escaped spelling.
    command = "sed -n '360,450p' /testbed/sympy/matrices/common.py"
    assert lfm.parse(f"[bash(command='{command}')]") == [leap.LeapFunctionCall("bash", {"command": ast.literal_eval(repr(command))})]
    # A bad call among good ones is left out.
    assert lfm.parse("[get_candidate_status(candidate_id='12345'), bad(x=b'z')]") == \
        [leap.LeapFunctionCall("get_candidate_status", {"candidate_id": "12345"})]
    # An LFM model writing a Hermes block.
    assert lfm.parse('Checking.<tool_call>{"name": "now", "arguments": {}}</tool_call>') == [leap.LeapFunctionCall("now", {})]
    messages = [m for level, m in warnings if level == "warning"]
    for fragment in ["read the set {'urgent', 'bug'} as a list", "took the unescaped quotes inside",
                     "left out the call bad(x=b'z')", "read the block <tool_call>...</tool_call> as a tool call"]:
        assert any(fragment in m for m in messages), (fragment, messages)


def test_unrepairable_calls_still_raise():
    lfm = leap.LFMFunctionCallParser()
    with pytest.raises(leap.FunctionCallParsingError, match="more than one place: not repaired"):
        lfm.parse("[f(a='x'y', b='z')]")
    with pytest.raises(leap.FunctionCallParsingError, match="expected a set element that Python can hash"):
        lfm.parse("[f(s={1, [2]})]")
    with pytest.raises(leap.FunctionCallParsingError, match="at offset 7: expected a value"):
        lfm.parse("[bad(x=b'z')]")


def test_nul_inside_a_string_argument():
    expected = [leap.LeapFunctionCall("f", {"s": "a\x00b"})]
    assert leap.LFMFunctionCallParser().parse('<|tool_call_start|>[f(s="a\x00b")]<|tool_call_end|>') == expected
    assert leap.LFMFunctionCallParser().parse('[f(s="a\\u0000b")]') == expected
    assert leap.HermesFunctionCallParser().parse('<tool_call>{"name": "f", "arguments": {"s": "a\x00b"}}</tool_call>') == expected


def test_unparsed_calls_as_text_reaches_the_library():
    # The field's place in the struct is test_struct_layout's; here the option sets it.
    from leap import GenerationOptions

    assert GenerationOptions()._to_c()[0].unparsed_function_calls_as_text == 0
    assert GenerationOptions(unparsed_function_calls_as_text=True)._to_c()[0].unparsed_function_calls_as_text == 1
