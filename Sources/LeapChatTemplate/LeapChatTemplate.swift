// LeapChatTemplate: a Jinja interpreter for chat templates, output identical to Python jinja2 as configured by
// Hugging Face transformers: ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
// extensions=[loopcontrols]) plus `tojson`, `raise_exception` and `strftime_now`.
import LeapCore
import LeapJSON

/// A parsed chat template. Parsing happens once; `render` may be called any number of times, from any thread.
package final class ChatTemplate: @unchecked Sendable {  // immutable after init
    private let body: [Stmt]
    private let map: SourceMap
    let limits: RenderLimits

    /// ChatML, for models whose GGUF carries no template.
    package static let chatML = """
        {%- for message in messages -%}
        {{- '<|im_start|>' + message['role'] + '\\n' -}}
        {%- if message['content'] is string -%}
        {{- message['content'] -}}
        {%- elif message['content'] is iterable -%}
        {%- for part in message['content'] -%}
        {%- if part['type'] == 'text' -%}{{- part['text'] -}}{%- endif -%}
        {%- endfor -%}
        {%- endif -%}
        {{- '<|im_end|>\\n' -}}
        {%- endfor -%}
        {%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}
        """

    /// Parses `source`; throws `LeapError(.format, "template line L, column C: ...")` on a syntax error.
    /// `fixedTime` pins `strftime_now` to a Unix time (UTC), for reproducible renderings.
    package convenience init(source: String, fixedTime: Int? = nil) throws {
        var limits = RenderLimits()
        limits.fixedTime = fixedTime
        try self.init(source: source, limits: limits)
    }

    package init(source: String, limits: RenderLimits) throws {
        let scalars = Lexer.normalize(source)
        let (tokens, map) = try Lexer.tokenize(scalars)
        let body = try Parser.parse(tokens: tokens, map: map)
        try Validator(map: map).check(body, soft: false)
        self.body = body
        self.map = map
        self.limits = limits
    }

    /// Renders with an arbitrary set of top-level variables.
    package func render(context: JSONObject) throws -> String {
        var vars: [String: Value] = [:]
        for e in context { vars[e.key] = Value(json: e.value) }
        return try render(vars)
    }

    /// Renders a conversation the way transformers' `apply_chat_template` does: `messages`, `tools` (None when
    /// absent), `documents` (None), `add_generation_prompt`, `bos_token`, `eos_token`, then `extra`
    /// (e.g. `enable_thinking`), which may override any of them.
    package func render(messages: [JSONValue], tools: [JSONValue]?, addGenerationPrompt: Bool, bosToken: String,
                        eosToken: String, extra: JSONObject = JSONObject()) throws -> String
    {
        var vars: [String: Value] = [
            "messages": .list(messages.map { Value(json: $0) }),
            "tools": tools.map { .list($0.map { Value(json: $0) }) } ?? .none,
            "documents": .none,
            "add_generation_prompt": .bool(addGenerationPrompt),
            "bos_token": .string(bosToken),
            "eos_token": .string(eosToken),
        ]
        for e in extra { vars[e.key] = Value(json: e.value) }
        return try render(vars)
    }

    private func render(_ vars: [String: Value]) throws -> String {
        let interp = Interpreter(map: map, limits: limits)
        defer { interp.releaseMacros() }
        let root = Scope(parent: nil)
        root.vars = vars
        do {
            _ = try interp.exec(body, root)
        } catch let f as TemplateFailure {
            // Failures outside any positioned node (e.g. the step limit).
            throw LeapError(.format, "template: \(f.message)")
        }
        return interp.out
    }
}

/// jinja2 rejects unknown filters and tests at compile time, except inside `if` statements and inline
/// if-expressions (a "soft" frame), where the error is raised only if the code runs.
struct Validator {
    let map: SourceMap

    func check(_ stmts: [Stmt], soft: Bool) throws {
        for s in stmts { try check(s, soft: soft) }
    }

    func check(_ s: Stmt, soft: Bool) throws {
        switch s {
        case .output, .breakLoop, .continueLoop, .macro: break
        case .print(let e, _): try check(e, soft: soft)
        case .forLoop(_, let iterable, let filter, let body, let otherwise, _):
            try check(iterable, soft: soft)
            if let filter { try check(filter, soft: false) }
            try check(body, soft: false)
            try check(otherwise, soft: false)
        case .ifChain(let branches, let otherwise):
            for (t, b) in branches {
                try check(t, soft: true)
                try check(b, soft: true)
            }
            try check(otherwise, soft: true)
        case .set(_, let e, _): try check(e, soft: soft)
        case .setBlock(_, let filters, let body, _), .filterBlock(let filters, let body, _):
            for f in filters { try checkFilter(f.name, f.offset, soft: soft) }
            try check(body, soft: false)
        case .callBlock(let call, _, _): try check(call, soft: soft)
        case .with(let assignments, let body, _):
            for (_, e) in assignments { try check(e, soft: soft) }
            try check(body, soft: false)
        case .generation(let body): try check(body, soft: soft)
        }
        // Macro bodies are compiled (and checked) in their own, non-soft frame.
        if case .macro(let m) = s { try check(m.body, soft: false) }
        if case .callBlock(_, let caller, _) = s { try check(caller.body, soft: false) }
    }

    func checkFilter(_ name: String, _ offset: Int, soft: Bool) throws {
        if !soft && !Filters.known.contains(name) { throw map.error(offset, "no filter named '\(name)'") }
    }

    func check(_ args: CallArgs, soft: Bool) throws {
        for e in args.positional { try check(e, soft: soft) }
        for (_, e) in args.keyword { try check(e, soft: soft) }
    }

    func check(_ e: Expr, soft: Bool) throws {
        switch e {
        case .literal, .name: break
        case .list(let items), .tuple(let items), .concat(let items, _): for x in items { try check(x, soft: soft) }
        case .dict(let items): for (k, v) in items { try check(k, soft: soft); try check(v, soft: soft) }
        case .getattr(let x, _, _), .unary(_, let x, _): try check(x, soft: soft)
        case .getitem(let x, let y, _), .binary(_, let x, let y, _), .and(let x, let y), .or(let x, let y):
            try check(x, soft: soft)
            try check(y, soft: soft)
        case .slice(let x, let a, let b, let c, _):
            try check(x, soft: soft)
            for y in [a, b, c] { if let y { try check(y, soft: soft) } }
        case .call(let x, let args, _):
            try check(x, soft: soft)
            try check(args, soft: soft)
        case .filter(let x, let name, let args, let offset):
            try check(x, soft: soft)
            try check(args, soft: soft)
            try checkFilter(name, offset, soft: soft)
        case .test(let x, let name, let args, _, let offset):
            try check(x, soft: soft)
            try check(args, soft: soft)
            if !soft && !Tests.known.contains(name) { throw map.error(offset, "no test named '\(name)'") }
        case .compare(let x, let ops, _):
            try check(x, soft: soft)
            for o in ops { try check(o.rhs, soft: soft) }
        case .conditional(let t, let a, let b, _):
            try check(t, soft: true)
            try check(a, soft: true)
            if let b { try check(b, soft: true) }
        }
    }
}
