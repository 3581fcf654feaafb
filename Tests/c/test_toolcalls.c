/* The standalone function-call parsers: leap_function_calls_parse / _parse_n / leap_function_calls_dump for
 * the LFM and Hermes formats, round trips, reasoning with markers in it, the repairs, NUL bytes in
 * arguments, malformed input and misuse (NULL, NONE, out-of-enum values). */
#include <stdlib.h>
#include "check.h"

static void expect_parse(leap_function_call_parser parser, const char *text, const char *expected_json) {
    char *json = (char *)0x1;
    CHECK_OK(leap_function_calls_parse(parser, text, &json));
    CHECK(json != NULL && strcmp(json, expected_json) == 0);
    if (json && strcmp(json, expected_json) != 0) fprintf(stderr, "  got %s\n  expected %s\n", json, expected_json);
    leap_string_free(json);
}

static void test_parse(void) {
    /* LFM pythonic, with markers and surrounding text, several blocks, escapes and non-ASCII. */
    expect_parse(LEAP_FUNCTION_CALL_PARSER_LFM,
                 "Sure.<|tool_call_start|>[get_weather(city=\"Paris\", unit='c', days=3), now()]<|tool_call_end|>"
                 " then <|tool_call_start|>[f(x=[1.5, True, None], d={\"k\": (1,)}, s=\"a\\\"b\\n\\u00e9\")]<|tool_call_end|>",
                 "[{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Paris\",\"unit\":\"c\",\"days\":3}},"
                 "{\"name\":\"now\",\"arguments\":{}},"
                 "{\"name\":\"f\",\"arguments\":{\"x\":[1.5,true,null],\"d\":{\"k\":[1]},\"s\":\"a\\\"b\\n\xC3\xA9\"}}]");
    /* Without markers the text is the body; the JSON variant; an empty list. */
    expect_parse(LEAP_FUNCTION_CALL_PARSER_LFM, "[now()]", "[{\"name\":\"now\",\"arguments\":{}}]");
    expect_parse(LEAP_FUNCTION_CALL_PARSER_LFM, "[{\"name\": \"f\", \"arguments\": {\"a\": 1}}]",
                 "[{\"name\":\"f\",\"arguments\":{\"a\":1}}]");
    expect_parse(LEAP_FUNCTION_CALL_PARSER_LFM, "<|tool_call_start|>[]<|tool_call_end|>", "[]");
    /* Hermes, two blocks, arguments as a JSON string. */
    expect_parse(LEAP_FUNCTION_CALL_PARSER_HERMES,
                 "<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": 1}}\n</tool_call>\n"
                 "<tool_call>{\"name\": \"b\", \"arguments\": \"{\\\"y\\\": [2]}\"}</tool_call>",
                 "[{\"name\":\"a\",\"arguments\":{\"x\":1}},{\"name\":\"b\",\"arguments\":{\"y\":[2]}}]");
}

static void test_dump_and_round_trip(void) {
    const char *calls = "[{\"name\":\"get_weather\",\"arguments\":{\"unit\":\"c\",\"city\":\"Pa\\\"ris\\n\"}},{\"name\":\"now\"}]";
    char *text = NULL, *json = NULL;

    CHECK_OK(leap_function_calls_dump(LEAP_FUNCTION_CALL_PARSER_LFM, calls, &text));
    CHECK(text && strcmp(text, "<|tool_call_start|>[get_weather(city=\"Pa\\\"ris\\n\", unit=\"c\"), now()]<|tool_call_end|>") == 0);
    CHECK_OK(leap_function_calls_parse(LEAP_FUNCTION_CALL_PARSER_LFM, text, &json));
    CHECK(json && strcmp(json, "[{\"name\":\"get_weather\",\"arguments\":{\"city\":\"Pa\\\"ris\\n\",\"unit\":\"c\"}},"
                               "{\"name\":\"now\",\"arguments\":{}}]") == 0);
    leap_string_free(text);
    leap_string_free(json);

    CHECK_OK(leap_function_calls_dump(LEAP_FUNCTION_CALL_PARSER_HERMES, calls, &text));
    CHECK(text && strcmp(text, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"unit\": \"c\", \"city\": \"Pa\\\"ris\\n\"}}\n</tool_call>\n"
                               "<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>") == 0);
    CHECK_OK(leap_function_calls_parse(LEAP_FUNCTION_CALL_PARSER_HERMES, text, &json));
    CHECK(json && strcmp(json, "[{\"name\":\"get_weather\",\"arguments\":{\"unit\":\"c\",\"city\":\"Pa\\\"ris\\n\"}},"
                               "{\"name\":\"now\",\"arguments\":{}}]") == 0);
    leap_string_free(text);
    leap_string_free(json);

    /* One object instead of an array; nothing gives "". */
    CHECK_OK(leap_function_calls_dump(LEAP_FUNCTION_CALL_PARSER_LFM, "{\"name\":\"f\",\"arguments\":{\"b\":false}}", &text));
    CHECK(text && strcmp(text, "<|tool_call_start|>[f(b=False)]<|tool_call_end|>") == 0);
    leap_string_free(text);
    CHECK_OK(leap_function_calls_dump(LEAP_FUNCTION_CALL_PARSER_HERMES, "[]", &text));
    CHECK(text && strcmp(text, "") == 0);
    leap_string_free(text);
}

static void test_errors_and_misuse(void) {
    char *out = (char *)0x1;

    CHECK_STATUS(leap_function_calls_parse(LEAP_FUNCTION_CALL_PARSER_LFM, "<|tool_call_start|>[f(a=]<|tool_call_end|>", &out),
                 LEAP_ERR_FUNCTION_CALL_PARSING);
    CHECK(out == NULL);
    CHECK_ERROR_MENTIONS("invalid function call at offset 5: expected a value, found ']' in: [f(a=]");
    CHECK_STATUS(leap_function_calls_parse(LEAP_FUNCTION_CALL_PARSER_HERMES, "<tool_call>get_weather()</tool_call>", &out),
                 LEAP_ERR_FUNCTION_CALL_PARSING);
    CHECK_ERROR_MENTIONS("expected a JSON object");
    CHECK_STATUS(leap_function_calls_parse(LEAP_FUNCTION_CALL_PARSER_NONE, "[f()]", &out), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_ERROR_MENTIONS("LEAP_FUNCTION_CALL_PARSER_NONE");
    CHECK_STATUS(leap_function_calls_parse((leap_function_call_parser)9, "[f()]", &out), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_ERROR_MENTIONS("parser 9");
    CHECK_STATUS(leap_function_calls_parse(LEAP_FUNCTION_CALL_PARSER_LFM, NULL, &out), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_ERROR_MENTIONS("text must not be NULL");
    CHECK_STATUS(leap_function_calls_parse(LEAP_FUNCTION_CALL_PARSER_LFM, "[f(a=\"\xC3\x28\")]", &out), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_ERROR_MENTIONS("not valid UTF-8");
    CHECK_STATUS(leap_function_calls_parse(LEAP_FUNCTION_CALL_PARSER_LFM, "[f()]", NULL), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_ERROR_MENTIONS("out_calls_json must not be NULL");

    out = (char *)0x1;
    CHECK_STATUS(leap_function_calls_dump(LEAP_FUNCTION_CALL_PARSER_LFM, "[{\"arguments\":{}}]", &out), LEAP_ERR_SERIALIZATION);
    CHECK(out == NULL);
    CHECK_ERROR_MENTIONS("calls_json[0].name: missing field");
    CHECK_STATUS(leap_function_calls_dump(LEAP_FUNCTION_CALL_PARSER_LFM, "[1", &out), LEAP_ERR_SERIALIZATION);
    CHECK_ERROR_MENTIONS("calls_json: invalid JSON");
    CHECK_STATUS(leap_function_calls_dump(LEAP_FUNCTION_CALL_PARSER_LFM, "42", &out), LEAP_ERR_SERIALIZATION);
    CHECK_STATUS(leap_function_calls_dump(LEAP_FUNCTION_CALL_PARSER_NONE, "[]", &out), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_function_calls_dump(LEAP_FUNCTION_CALL_PARSER_LFM, NULL, &out), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_function_calls_dump(LEAP_FUNCTION_CALL_PARSER_LFM, "[]", NULL), LEAP_ERR_INVALID_ARGUMENT);

    /* Deep nesting is an error, not a crash. */
    {
        size_t depth = 100000, i;
        char *deep = malloc(depth + 16);
        CHECK(deep != NULL);
        if (deep) {
            memcpy(deep, "[f(a=", 5);
            for (i = 0; i < depth; i++) deep[5 + i] = '[';
            memcpy(deep + 5 + depth, ")]", 3);
            CHECK_STATUS(leap_function_calls_parse(LEAP_FUNCTION_CALL_PARSER_LFM, deep, &out), LEAP_ERR_FUNCTION_CALL_PARSING);
            CHECK_ERROR_MENTIONS("levels of nesting");
            free(deep);
        }
    }
}

/* Calls written inside the reasoning are reasoning; what peers repair is repaired. */
static void test_reasoning_and_repairs(void) {
    const char *reasoning = "Let me think about <|tool_call_start|>[special_function(arg1=1)]<|tool_call_end|> hmm";
    char text[512];
    snprintf(text, sizeof text, "<think>%s</think>Sure.<|tool_call_start|>[now()]<|tool_call_end|>", reasoning);
    expect_parse(LEAP_FUNCTION_CALL_PARSER_LFM, text, "[{\"name\":\"now\",\"arguments\":{}}]");
    snprintf(text, sizeof text, "<think>%s</think>No call.", reasoning);
    expect_parse(LEAP_FUNCTION_CALL_PARSER_LFM, text, "[]");
    /* The prompt opened the think block: a </think> with no <think> before it. */
    snprintf(text, sizeof text, "%s</think>No call.", reasoning);
    expect_parse(LEAP_FUNCTION_CALL_PARSER_LFM, text, "[]");

    /* A set is a list; unescaped quotes inside a string; a bad call among good ones; a Hermes block. */
    expect_parse(LEAP_FUNCTION_CALL_PARSER_LFM, "<|tool_call_start|>[label(tags={'urgent', 'bug'})]<|tool_call_end|>",
                 "[{\"name\":\"label\",\"arguments\":{\"tags\":[\"urgent\",\"bug\"]}}]");
    expect_parse(LEAP_FUNCTION_CALL_PARSER_LFM, "[bash(command='sed -n '360,450p' common.py')]",
                 "[{\"name\":\"bash\",\"arguments\":{\"command\":\"sed -n '360,450p' common.py\"}}]");
    expect_parse(LEAP_FUNCTION_CALL_PARSER_LFM, "[get_candidate_status(candidate_id='12345'), bad(x=b'z')]",
                 "[{\"name\":\"get_candidate_status\",\"arguments\":{\"candidate_id\":\"12345\"}}]");
    expect_parse(LEAP_FUNCTION_CALL_PARSER_LFM, "Checking.<tool_call>{\"name\": \"now\", \"arguments\": {}}</tool_call>",
                 "[{\"name\":\"now\",\"arguments\":{}}]");
    /* Not repaired: two readings of the quotes, or every call bad. */
    {
        char *out = (char *)0x1;
        CHECK_STATUS(leap_function_calls_parse(LEAP_FUNCTION_CALL_PARSER_LFM, "[f(a='x'y', b='z')]", &out),
                     LEAP_ERR_FUNCTION_CALL_PARSING);
        CHECK(out == NULL);
        CHECK_ERROR_MENTIONS("more than one place: not repaired");
        CHECK_STATUS(leap_function_calls_parse(LEAP_FUNCTION_CALL_PARSER_LFM, "[bad(x=b'z')]", &out),
                     LEAP_ERR_FUNCTION_CALL_PARSING);
        CHECK_ERROR_MENTIONS("at offset 7: expected a value");
    }
}

/* leap_function_calls_parse_n: a NUL byte inside a string argument, as the stream reads it. */
static void test_parse_n(void) {
    static const char with_nul[] = "<|tool_call_start|>[f(s=\"a\0b\")]<|tool_call_end|>";
    const char *expected = "[{\"name\":\"f\",\"arguments\":{\"s\":\"a\\u0000b\"}}]";
    char *json = NULL, *out = (char *)0x1;

    CHECK_OK(leap_function_calls_parse_n(LEAP_FUNCTION_CALL_PARSER_LFM, with_nul, sizeof with_nul - 1, &json));
    CHECK(json && strcmp(json, expected) == 0);
    if (json && strcmp(json, expected) != 0) fprintf(stderr, "  got %s\n", json);
    leap_string_free(json);
    /* The escape spelling gives the same call through both entry points. */
    expect_parse(LEAP_FUNCTION_CALL_PARSER_LFM, "[f(s=\"a\\u0000b\")]", expected);
    json = NULL;
    CHECK_OK(leap_function_calls_parse_n(LEAP_FUNCTION_CALL_PARSER_LFM, "[f(s=\"a\\u0000b\")]xyz", 17, &json));
    CHECK(json && strcmp(json, expected) == 0);
    leap_string_free(json);
    /* Hermes too. */
    {
        static const char hermes[] = "<tool_call>{\"name\": \"f\", \"arguments\": {\"s\": \"a\0b\"}}</tool_call>";
        json = NULL;
        CHECK_OK(leap_function_calls_parse_n(LEAP_FUNCTION_CALL_PARSER_HERMES, hermes, sizeof hermes - 1, &json));
        CHECK(json && strcmp(json, expected) == 0);
        leap_string_free(json);
    }
    /* Nothing, NULL with a length, invalid UTF-8, misuse. */
    json = NULL;
    CHECK_OK(leap_function_calls_parse_n(LEAP_FUNCTION_CALL_PARSER_LFM, NULL, 0, &json));
    CHECK(json && strcmp(json, "[]") == 0);
    leap_string_free(json);
    CHECK_STATUS(leap_function_calls_parse_n(LEAP_FUNCTION_CALL_PARSER_LFM, NULL, 3, &out), LEAP_ERR_INVALID_ARGUMENT);
    CHECK(out == NULL);
    CHECK_ERROR_MENTIONS("text must not be NULL when n_bytes is 3");
    CHECK_STATUS(leap_function_calls_parse_n(LEAP_FUNCTION_CALL_PARSER_LFM, "[f(a=\"\xC3\")]", 10, &out), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_ERROR_MENTIONS("not valid UTF-8");
    CHECK_STATUS(leap_function_calls_parse_n(LEAP_FUNCTION_CALL_PARSER_LFM, "[f(a=]", 6, &out), LEAP_ERR_FUNCTION_CALL_PARSING);
    CHECK_ERROR_MENTIONS("at offset 5: expected a value");
    CHECK_STATUS(leap_function_calls_parse_n(LEAP_FUNCTION_CALL_PARSER_NONE, "[f()]", 5, &out), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_function_calls_parse_n(LEAP_FUNCTION_CALL_PARSER_LFM, "[f()]", 5, NULL), LEAP_ERR_INVALID_ARGUMENT);
}

int main(void) {
    test_parse();
    test_reasoning_and_repairs();
    test_parse_n();
    test_dump_and_round_trip();
    test_errors_and_misuse();
    return CHECK_SUMMARY("test_toolcalls");
}
