// The interpreter's own contract beyond jinja2 parity: error positions, resource bounds, the HF-style API.
import LeapChatTemplate
import LeapCore
import LeapJSON
import Testing

private func renderError(_ source: String, _ context: JSONObject = JSONObject()) -> LeapError? {
    do {
        _ = try ChatTemplate(source: source).render(context: context)
        return nil
    } catch {
        return error as? LeapError
    }
}

@Test func syntaxErrorsNameLineAndColumn() {
    let e = renderError("line one\n  {{ 1 + }}")
    #expect(e?.kind == .format)
    #expect(e?.message.hasPrefix("template line 2, column 10:") == true, "\(e?.message ?? "")")
    let unclosed = renderError("{% for m in messages %}\n{{ m }}")
    #expect(unclosed?.message.contains("endfor") == true, "\(unclosed?.message ?? "")")
    let string = renderError("\n\n{{ 'abc }}")
    #expect(string?.message.hasPrefix("template line 3, column 4:") == true, "\(string?.message ?? "")")
}

@Test func runtimeErrorsNameTheFailingExpression() {
    let e = renderError("ok\n{% set x = {} %}  {{ x.a.b }}")
    #expect(e?.message.hasPrefix("template line 2, column") == true)
    #expect(e?.message.contains("'dict object' has no attribute 'a'") == true, "\(e?.message ?? "")")
    let raised = renderError("{{ raise_exception('Conversation roles must alternate') }}")
    // Calls are located at their opening parenthesis.
    #expect(raised?.message == "template line 1, column 19: Conversation roles must alternate")
}

@Test func hostileTemplatesFailInsteadOfHanging() {
    // Unbounded recursion, runaway loops, exponential strings and shared-list blow-ups.
    let cases = [
        ("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", "depth"),
        ("{% for i in range(99999) %}{% for j in range(99999) %}{% endfor %}{% endfor %}", "steps"),
        ("{% set ns = namespace(s='ab') %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}{% endfor %}", "bytes"),
        ("{% set ns = namespace(x=[1]) %}{% for i in range(64) %}{% set ns.x = [ns.x, ns.x] %}{% endfor %}{{ ns.x }}", "elements"),
        ("{% set ns = namespace(x=1) %}{% for i in range(5000) %}{% set ns.x = [ns.x] %}{% endfor %}", "deeper"),
        ("{{ 'x' * 100000000 }}", "bytes"),
        ("{{ range(1000000) | list }}", "MAX_RANGE"),
    ]
    for (source, expected) in cases {
        let e = renderError(source)
        #expect(e?.kind == .format, "\(source)")
        #expect(e?.message.contains(expected) == true, "\(source): \(e?.message ?? "no error")")
    }
    // A namespace that contains itself still prints (Python would recurse; we stop).
    #expect(renderError("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}") == nil)
}

@Test func conversationAPIPassesHuggingFaceVariables() throws {
    let t = try ChatTemplate(source: """
        {{ bos_token }}{% for m in messages %}{{ m.role }}:{{ m.content }};{% endfor %}\
        {{ tools is none }}|{{ documents is none }}|{{ add_generation_prompt }}|{{ eos_token }}|{{ enable_thinking }}
        """)
    let messages: [JSONValue] = [.object(JSONObject([("role", .string("user")), ("content", .string("hi"))]))]
    let out = try t.render(messages: messages, tools: nil, addGenerationPrompt: true, bosToken: "<s>", eosToken: "</s>",
                           extra: JSONObject([("enable_thinking", .bool(false))]))
    #expect(out == "<s>user:hi;True|True|True|</s>|False")
    let withTools = try t.render(messages: [], tools: [.object(JSONObject())], addGenerationPrompt: false,
                                 bosToken: "", eosToken: "", extra: JSONObject([("bos_token", .string("B"))]))
    #expect(withTools == "BFalse|True|False||")
}

@Test func chatMLFallbackRendersTextAndParts() throws {
    let t = try ChatTemplate(source: ChatTemplate.chatML)
    let messages: [JSONValue] = [
        .object(JSONObject([("role", .string("system")), ("content", .string("S"))])),
        .object(JSONObject([("role", .string("user")), ("content", .array([
            .object(JSONObject([("type", .string("image"))])),
            .object(JSONObject([("type", .string("text")), ("text", .string("What?"))])),
        ]))])),
    ]
    let out = try t.render(messages: messages, tools: nil, addGenerationPrompt: true, bosToken: "", eosToken: "")
    #expect(out == "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nWhat?<|im_end|>\n<|im_start|>assistant\n")
}

@Test func rendersConcurrentlyFromManyThreads() async throws {
    let t = try ChatTemplate(source: "{% for m in messages %}{{ m.content | upper }}{% endfor %}{{ n }}")
    try await withThrowingTaskGroup(of: Bool.self) { group in
        for i in 0..<16 {
            group.addTask {
                let msgs: [JSONValue] = [.object(JSONObject([("content", .string("x\(i)"))]))]
                let out = try t.render(messages: msgs, tools: nil, addGenerationPrompt: false, bosToken: "",
                                       eosToken: "", extra: JSONObject([("n", .int(Int64(i)))]))
                return out == "X\(i)\(i)"
            }
        }
        for try await ok in group { #expect(ok) }
    }
}

/// Strings are code points, as in Python (jinja2 3.1.6 printed every expected output here, tojson as
/// transformers defines it): dict keys "\u{e9}" and "e\u{301}" are two keys, though Swift's String == calls
/// them equal; a quote or a separator followed by a combining mark is one Character, and still the quote or
/// separator. Compared as bytes.
@Test func stringsAreCodePointsAsInPython() throws {
    let cases: [(String, String)] = [
        ("{{ {'\u{e9}': 1}.get('e\u{301}', 'missing') }}", "missing"),
        ("{% set d = {'\u{e9}': 1, 'e\u{301}': 2} %}{{ d['e\u{301}'] }}{{ d['\u{e9}'] }}{{ d | length }}", "212"),
        // transformers' tojson (json.dumps, ensure_ascii=False): both keys, in order.
        ("{{ {'\u{e9}': 1, 'e\u{301}': 2} | tojson }}", "{\"\u{e9}\": 1, \"e\u{301}\": 2}"),
        ("{{ ['\\'\u{301}'] }}", "[\"'\u{301}\"]"),
        ("{{ \"'\u{301}\" | pprint }}", "\"'\u{301}\""),
        ("{{ [{'a': {'\u{301}b': 'x'}, 'a.\u{301}b': 'y'}] | map(attribute='a.\u{301}b') | join }}", "x"),
        ("{{ [{'n': 'p', 'a': 1, '\u{301}b': 2, 'a,\u{301}b': 0}, {'n': 'q', 'a': 1, '\u{301}b': 1, 'a,\u{301}b': 5}]"
            + " | sort(attribute='a,\u{301}b') | map(attribute='n') | join }}", "qp"),
    ]
    for (source, expected) in cases {
        let out = try ChatTemplate(source: source).render(context: JSONObject())
        #expect(Array(out.utf8) == Array(expected.utf8), "\(source) gave \(out)")
    }
}
