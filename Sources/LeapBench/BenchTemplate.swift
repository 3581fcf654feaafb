import Glibc
import LeapCore
import LeapChatTemplate
import LeapJSON

/// Chat template parse and render time on real templates with a 20-turn conversation and two tools, and
/// Python jinja2's render time on the same input when python3 + jinja2 are installed.
///   leap-bench template [dir]   (default: Tests/Fixtures/templates/jinja, run from the repository root)
func benchTemplate(_ args: [String]) {
    let dir = args.first ?? "Tests/Fixtures/templates/jinja"
    let names = ["LFM2.5-Instruct", "LFM2.5-8B-A1B", "Qwen-Qwen3-0.6B", "meta-llama-Llama-3.1-8B-Instruct",
                 "openai-gpt-oss-120b"]
    var messages: [JSONValue] = [.object(JSONObject([("role", .string("system")), ("content", .string("You are helpful."))]))]
    for i in 0..<10 {
        messages.append(.object(JSONObject([("role", .string("user")), ("content", .string("Question \(i): what is \(i) squared? Explain briefly."))])))
        messages.append(.object(JSONObject([("role", .string("assistant")), ("content", .string("<think>\(i)*\(i)</think>It is \(i * i)."))])))
    }
    let tool = JSONValue.object(JSONObject([
        ("type", .string("function")),
        ("function", .object(JSONObject([
            ("name", .string("get_weather")), ("description", .string("Weather for a city.")),
            ("parameters", .object(JSONObject([("type", .string("object")), ("properties", .object(JSONObject([("city", .object(JSONObject([("type", .string("string"))])))])))]))),
        ]))),
    ]))
    let tools = [tool, tool]
    let contextJSON = JSONValue.object(JSONObject([("messages", .array(messages)), ("tools", .array(tools))])).serialized()
    for name in names {
        let path = "\(dir)/\(name).jinja"
        guard let bytes = readFile(path) else { print("template \(name): cannot read \(path)"); continue }
        let source = String(decoding: bytes, as: UTF8.self)
        let reps = 200
        var t0 = clockSeconds()
        var template: ChatTemplate? = nil
        for _ in 0..<reps { template = try? ChatTemplate(source: source) }
        let parse = (clockSeconds() - t0) / Double(reps)
        guard let t = template else { print("template \(name): does not parse"); continue }
        var out = 0
        t0 = clockSeconds()
        for _ in 0..<reps {
            out = (try? t.render(messages: messages, tools: tools, addGenerationPrompt: true, bosToken: "<s>",
                                 eosToken: "</s>", extra: JSONObject([("date_string", .string("26 Jul 2024"))])))?.utf8.count ?? -1
        }
        let render = (clockSeconds() - t0) / Double(reps)
        var line = "template \(name): parse \(Int(parse * 1e6)) us, render \(Int(render * 1e6)) us (\(out) bytes)"
        if let py = jinja2Microseconds(path: path, contextJSON: contextJSON) { line += "; jinja2 render \(py) us" }
        print(line)
    }
}

/// jinja2's mean render time in microseconds (HF environment), or nil when python3/jinja2 is missing.
private func jinja2Microseconds(path: String, contextJSON: String) -> Int? {
    let ctxPath = "/tmp/leap-bench-template-\(getpid()).json"
    guard let f = fopen(ctxPath, "wb") else { return nil }
    fputs(contextJSON, f)
    fclose(f)
    defer { unlink(ctxPath) }
    let script = """
        import json, timeit, jinja2, jinja2.ext
        from jinja2.sandbox import ImmutableSandboxedEnvironment
        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
        env.filters['tojson'] = lambda x, ensure_ascii=False, indent=None, separators=None, sort_keys=False: json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)
        t = env.from_string(open('\(path)').read())
        c = json.load(open('\(ctxPath)'))
        f = lambda: t.render(messages=c['messages'], tools=c['tools'], documents=None, add_generation_prompt=True, bos_token='<s>', eos_token='</s>', date_string='26 Jul 2024')
        n = 200
        print(int(timeit.timeit(f, number=n) / n * 1e6))
        """
    let scriptPath = "/tmp/leap-bench-template-\(getpid()).py"
    guard let sf = fopen(scriptPath, "wb") else { return nil }
    fputs(script, sf)
    fclose(sf)
    defer { unlink(scriptPath) }
    guard let p = popen("python3 \(scriptPath) 2>/dev/null", "r") else { return nil }
    var buf = [CChar](repeating: 0, count: 64)
    let line = fgets(&buf, 32, p).map { String(cString: $0) }
    pclose(p)
    return line.flatMap { Int($0.trimmingCharacters()) }
}

private extension String {
    func trimmingCharacters() -> String {
        var s = Substring(self)
        while let c = s.last, c == "\n" || c == " " { s.removeLast() }
        return String(s)
    }
}
