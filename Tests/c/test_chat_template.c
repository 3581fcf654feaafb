/* Every leap_chat_template_* entry point: creation errors, rendering with messages / tools / extra
 * variables (expected strings are jinja2's renderings of the same templates and inputs), error positions,
 * NULL and misuse. Run from the repository root. */
#include <stdlib.h>
#include "check.h"

/* LFM2.5-Instruct's template (Tests/Fixtures/templates/jinja/LFM2.5-Instruct.jinja), shortened. */
static const char *LFM =
    "{{- bos_token -}}\n"
    "{%- for message in messages -%}\n"
    "    {{- '<|im_start|>' + message['role'] + '\\n' -}}\n"
    "    {%- set content = message['content'] -%}\n"
    "    {%- if content is not string -%}{%- set content = content | tojson -%}{%- endif -%}\n"
    "    {{- content + '<|im_end|>\\n' -}}\n"
    "{%- endfor -%}\n"
    "{%- if tools -%}tools: {{ tools | tojson }}{{ '\\n' }}{%- endif -%}\n"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}\n"
    "{%- if enable_thinking is defined and not enable_thinking -%}<think></think>{%- endif -%}";

static void expect_render(const leap_chat_template *t, const char *messages, const char *tools, int32_t agp,
                          const char *extra, const char *expected) {
    char *out = NULL;
    CHECK_OK(leap_chat_template_render(t, messages, tools, agp, extra, &out));
    if (!out || strcmp(out, expected) != 0) {
        fprintf(stderr, "render: got \"%s\"\n   expected \"%s\"\n", out ? out : "(null)", expected);
        CHECK(0);
    }
    leap_string_free(out);
}

static void test_create_errors(void) {
    leap_chat_template *t = (leap_chat_template *)1;
    CHECK_STATUS(leap_chat_template_create(NULL, &t), LEAP_ERR_INVALID_ARGUMENT);
    CHECK(t == NULL);
    CHECK_STATUS(leap_chat_template_create("x", NULL), LEAP_ERR_INVALID_ARGUMENT);
    t = (leap_chat_template *)1;
    CHECK_STATUS(leap_chat_template_create("line one\n{% if x %}no end", &t), LEAP_ERR_FORMAT);
    CHECK(t == NULL);
    CHECK_ERROR_MENTIONS("template line 2");
    CHECK_ERROR_MENTIONS("endif");
    CHECK_STATUS(leap_chat_template_create("{{ x | no_such_filter }}", &t), LEAP_ERR_FORMAT);
    CHECK_ERROR_MENTIONS("no_such_filter");
    CHECK_STATUS(leap_chat_template_create("\xff\xfe", &t), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_ERROR_MENTIONS("UTF-8");
    leap_chat_template_free(NULL);
}

static void test_render(void) {
    leap_chat_template *t = NULL;
    CHECK_OK(leap_chat_template_create(LFM, &t));
    const char *msgs = "[{\"role\":\"system\",\"content\":\"Be brief.\"},"
                       "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"h\\u00e9\"}]}]";
    expect_render(t, msgs, NULL, 1, NULL,
                  "<|im_start|>system\nBe brief.<|im_end|>\n"
                  "<|im_start|>user\n[{\"type\": \"text\", \"text\": \"h\xc3\xa9\"}]<|im_end|>\n"
                  "<|im_start|>assistant\n");
    expect_render(t, "[{\"role\":\"user\",\"content\":\"Hi\"}]",
                  "[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":{\"x\":1.5}}}]", 0,
                  "{\"bos_token\":\"<|startoftext|>\",\"enable_thinking\":false}",
                  "<|startoftext|><|im_start|>user\nHi<|im_end|>\n"
                  "tools: [{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": {\"x\": 1.5}}}]\n"
                  "<think></think>");
    expect_render(t, "[]", NULL, 0, "{}", "");

    /* Runtime errors carry the position; raise_exception's message comes through. */
    leap_chat_template *r = NULL;
    CHECK_OK(leap_chat_template_create("ok\n  {{ raise_exception('no system role here') }}", &r));
    char *out = (char *)1;
    CHECK_STATUS(leap_chat_template_render(r, "[]", NULL, 1, NULL, &out), LEAP_ERR_FORMAT);
    CHECK(out == NULL);
    CHECK_ERROR_MENTIONS("template line 2, column");
    CHECK_ERROR_MENTIONS("no system role here");
    leap_chat_template_free(r);

    /* Argument shapes. */
    CHECK_STATUS(leap_chat_template_render(NULL, "[]", NULL, 1, NULL, &out), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_chat_template_render(t, NULL, NULL, 1, NULL, &out), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_chat_template_render(t, "[]", NULL, 1, NULL, NULL), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_STATUS(leap_chat_template_render(t, "{}", NULL, 1, NULL, &out), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_ERROR_MENTIONS("messages_json");
    CHECK_STATUS(leap_chat_template_render(t, "[]", "{}", 1, NULL, &out), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_ERROR_MENTIONS("tools_json");
    CHECK_STATUS(leap_chat_template_render(t, "[]", NULL, 1, "[1]", &out), LEAP_ERR_INVALID_ARGUMENT);
    CHECK_ERROR_MENTIONS("extra_json");
    CHECK(leap_chat_template_render(t, "[{\"role\":", NULL, 1, NULL, &out) != LEAP_OK);
    CHECK(out == NULL);
    /* A handle of another kind is rejected, not misread. */
    leap_message *m = NULL;
    CHECK_OK(leap_message_create(LEAP_ROLE_USER, &m));
    CHECK_STATUS(leap_chat_template_render((const leap_chat_template *)m, "[]", NULL, 1, NULL, &out),
                 LEAP_ERR_INVALID_ARGUMENT);
    leap_message_free(m);
    leap_chat_template_free(t);
}

static void test_chatml_and_limits(void) {
    const char *src = leap_chat_template_chatml();
    CHECK(src != NULL && strstr(src, "<|im_start|>") != NULL);
    leap_chat_template *t = NULL;
    CHECK_OK(leap_chat_template_create(src, &t));
    expect_render(t, "[{\"role\":\"user\",\"content\":\"Hi\"}]", NULL, 1, NULL,
                  "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
    leap_chat_template_free(t);

    /* Unbounded recursion and runaway loops fail cleanly instead of crashing or hanging. */
    CHECK_OK(leap_chat_template_create("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", &t));
    char *out = NULL;
    CHECK_STATUS(leap_chat_template_render(t, "[]", NULL, 0, NULL, &out), LEAP_ERR_FORMAT);
    CHECK_ERROR_MENTIONS("depth");
    leap_chat_template_free(t);
    CHECK_OK(leap_chat_template_create("{% for i in range(99999) %}{% for j in range(99999) %}{% endfor %}{% endfor %}", &t));
    CHECK_STATUS(leap_chat_template_render(t, "[]", NULL, 0, NULL, &out), LEAP_ERR_FORMAT);
    CHECK_ERROR_MENTIONS("steps");
    leap_chat_template_free(t);
}

int main(void) {
    test_create_errors();
    test_render();
    test_chatml_and_limits();
    return CHECK_SUMMARY("test_chat_template");
}
