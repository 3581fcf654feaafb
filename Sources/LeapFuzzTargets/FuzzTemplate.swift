import Glibc
import LeapChatTemplate
import LeapJSON

/// Chat templates: any bytes as template source. Parsing and rendering (with small step/output limits, so
/// each input is fast) must return or throw, and rendering is deterministic.
package let fuzzTemplate: FuzzTarget = (
    seeds: [
        Array(#"""
        {{- bos_token -}}
        {%- set ns = namespace(system_prompt="", n=0) -%}
        {%- if messages[0]["role"] == "system" -%}{%- set ns.system_prompt = messages[0]["content"] -%}{%- set messages = messages[1:] -%}{%- endif -%}
        {%- for tool in tools or [] -%}{%- set ns.system_prompt = ns.system_prompt + (tool | tojson) -%}{%- endfor -%}
        {%- for message in messages if message.role != "x" -%}
            {{- "<|im_start|>" + message["role"] + "\n" -}}
            {%- set content = message.content if message.content is string else message.content | tojson(indent=2) -%}
            {%- if "</think>" in content and not loop.last %}{% set content = content.split("</think>")[-1] | trim %}{% endif -%}
            {{- content ~ "<|im_end|>\n" -}}
        {%- else -%}empty{%- endfor -%}
        {%- if add_generation_prompt -%}{{- "<|im_start|>assistant\n" -}}{%- endif -%}
        """#.utf8),
        Array(#"{% macro m(a, b=[1, 2.5e3, 'x'][::-1]) %}{{ caller() }}{{ a|default('d', true)|upper }}{{ b|join(',') }}{% endmacro %}{% call m(1) %}{{ {'k': (1,)} }}{% endcall %}{% raw %}{{{% endraw %}{# c #}{%+ if 3 is divisibleby 3 -%} {{ '%s|%d'|format('a', 2) }} {%- endif %}"#.utf8),
        Array("{% for k, v in messages[0] | dictsort %}{{ loop.cycle('a', 'b') }}{{ k }}={{ v }}{% if loop.index > 1 %}{% break %}{% endif %}{% endfor %}{{ range(3) | map('string') | select('ne', '1') | list }}".utf8),
    ],
    run: { bytes in
        let source = String(decoding: bytes, as: UTF8.self)
        var limits = RenderLimits()
        limits.maxSteps = 20_000
        limits.maxOutputBytes = 1 << 16
        limits.fixedTime = 0
        guard let template = try? ChatTemplate(source: source, limits: limits) else { return }
        let messages: [JSONValue] = [
            .object(JSONObject([("role", .string("system")), ("content", .string("Be brief."))])),
            .object(JSONObject([("role", .string("user")), ("content", .array([
                .object(JSONObject([("type", .string("text")), ("text", .string("hé</think>"))])),
            ]))])),
        ]
        let tools: [JSONValue] = [.object(JSONObject([("name", .string("f")), ("parameters", .object(JSONObject()))]))]
        func render() -> String? {
            try? template.render(messages: messages, tools: tools, addGenerationPrompt: true, bosToken: "<s>",
                                 eosToken: "</s>", extra: JSONObject([("enable_thinking", .bool(false))]))
        }
        let first = render()
        if first != render() {
            fuzzFailure("template rendering is not deterministic for input \(bytes)")
        }
    }
)
