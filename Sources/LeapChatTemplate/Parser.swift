// Recursive-descent parser following jinja2's `Parser` (same precedence and statement grammar).
import LeapCore

struct Parser {
    let tokens: [Token]
    let map: SourceMap
    var i = 0
    /// Nesting depth (blocks and parenthesised expressions), bounded so hostile input cannot blow the stack.
    var depth = 0
    static let maxDepth = 120
    /// Enclosing for loops (in the current macro), for checking `break` / `continue`.
    var loopDepth = 0

    init(tokens: [Token], map: SourceMap) {
        self.tokens = tokens
        self.map = map
    }

    // MARK: token helpers

    var current: Token { tokens[min(i, tokens.count - 1)] }
    var next: Token { tokens[min(i + 1, tokens.count - 1)] }
    mutating func advance() { if i < tokens.count - 1 { i += 1 } }

    func describe(_ t: Token) -> String {
        switch t.kind {
        case .data: return "template data"
        case .variableBegin: return "'{{'"
        case .variableEnd: return "'}}'"
        case .blockBegin: return "'{%'"
        case .blockEnd: return "'%}'"
        case .name(let n): return "'\(n)'"
        case .string(let s): return "string \(pyStringRepr(s))"
        case .integer(let v): return "integer \(v)"
        case .float(let v): return "float \(pyFloatRepr(v))"
        case .op(let o): return "'\(o)'"
        case .eof: return "end of template"
        }
    }

    func fail(_ message: String, _ t: Token? = nil) -> LeapError { map.error((t ?? current).offset, message) }

    func isOp(_ o: String) -> Bool { if case .op(let x) = current.kind { return x == o } else { return false } }
    func isName(_ n: String) -> Bool { if case .name(let x) = current.kind { return x == n } else { return false } }

    mutating func expectOp(_ o: String) throws {
        guard isOp(o) else { throw fail("expected '\(o)', found \(describe(current))") }
        advance()
    }
    mutating func expectName() throws -> String {
        guard case .name(let n) = current.kind else { throw fail("expected a name, found \(describe(current))") }
        advance()
        return n
    }
    mutating func expectNameKeyword(_ n: String) throws {
        guard isName(n) else { throw fail("expected '\(n)', found \(describe(current))") }
        advance()
    }
    mutating func expectBlockEnd() throws {
        guard case .blockEnd = current.kind else { throw fail("expected end of statement '%}', found \(describe(current))") }
        advance()
    }

    mutating func enter() throws {
        depth += 1
        if depth > Parser.maxDepth { throw fail("template nesting is deeper than \(Parser.maxDepth) levels") }
    }
    mutating func leave() { depth -= 1 }

    // MARK: statements

    static func parse(tokens: [Token], map: SourceMap) throws -> [Stmt] {
        var p = Parser(tokens: tokens, map: map)
        let body = try p.subparse(endTags: [])
        guard case .eof = p.current.kind else { throw p.fail("unexpected \(p.describe(p.current))") }
        return body
    }

    /// Statements up to (not including) a block whose tag is in `endTags`; stops before `{% tag`.
    mutating func subparse(endTags: Set<String>) throws -> [Stmt] {
        var body: [Stmt] = []
        while true {
            switch current.kind {
            case .data(let s):
                body.append(.output(s))
                advance()
            case .variableBegin:
                advance()
                let start = current.offset
                let e = try parseTuple()
                guard case .variableEnd = current.kind else {
                    throw fail("expected end of print statement '}}', found \(describe(current))")
                }
                advance()
                body.append(.print(e, start))
            case .blockBegin:
                let blockToken = current
                advance()
                guard case .name(let tag) = current.kind else {
                    throw fail("expected a statement name, found \(describe(current))")
                }
                if endTags.contains(tag) { return body }
                body.append(try parseStatement(tag, blockToken))
            case .eof:
                if !endTags.isEmpty {
                    let names = endTags.sorted().map { "'\($0)'" }.joined(separator: " or ")
                    throw fail("unexpected end of template; looking for \(names)")
                }
                return body
            default:
                throw fail("unexpected \(describe(current))")
            }
        }
    }

    mutating func parseStatement(_ tag: String, _ blockToken: Token) throws -> Stmt {
        try enter()
        defer { leave() }
        let offset = current.offset
        switch tag {
        case "for": return try parseFor()
        case "if": return try parseIf()
        case "set": return try parseSet()
        case "macro": return try parseMacro()
        case "call": return try parseCallBlock()
        case "filter": return try parseFilterBlock()
        case "with": return try parseWith()
        case "generation":
            advance()
            try expectBlockEnd()
            let body = try subparse(endTags: ["endgeneration"])
            advance()
            try expectBlockEnd()
            return .generation(body)
        case "break", "continue":
            guard loopDepth > 0 else { throw fail("'\(tag)' is only allowed inside a for loop") }
            advance()
            try expectBlockEnd()
            return tag == "break" ? .breakLoop : .continueLoop
        default:
            if tag.hasPrefix("end") || tag == "else" || tag == "elif" {
                throw map.error(offset, "unexpected '\(tag)' tag")
            }
            throw map.error(offset, "unknown or unsupported tag '\(tag)'")
        }
    }

    /// Consumes `{% endX %}` after a subparse stopped at it.
    mutating func endBlock() throws {
        advance()  // the end tag name
        try expectBlockEnd()
    }

    /// Runs `body` with `loopDepth` temporarily set (for bodies add one; macro bodies start from zero).
    mutating func withLoopDepth<T>(_ depth: Int, _ body: (inout Parser) throws -> T) rethrows -> T {
        let saved = loopDepth
        loopDepth = depth
        defer { loopDepth = saved }
        return try body(&self)
    }

    mutating func parseFor() throws -> Stmt {
        let offset = current.offset
        advance()
        let target = try parseAssignTarget(endNames: ["in"])
        try expectNameKeyword("in")
        let iterable = try parseTuple(withCondexpr: false, endNames: ["recursive", "if"])
        var filter: Expr? = nil
        if isName("if") {
            advance()
            filter = try parseExpression()
        }
        if isName("recursive") { throw fail("recursive for loops are not supported") }
        try expectBlockEnd()
        let body = try withLoopDepth(loopDepth + 1) { try $0.subparse(endTags: ["endfor", "else"]) }
        var otherwise: [Stmt] = []
        if isName("else") {
            advance()
            try expectBlockEnd()
            otherwise = try subparse(endTags: ["endfor"])
        }
        try endBlock()
        return .forLoop(target: target, iterable: iterable, filter: filter, body: body, otherwise: otherwise, offset)
    }

    mutating func parseIf() throws -> Stmt {
        advance()
        var branches: [(Expr, [Stmt])] = []
        var otherwise: [Stmt] = []
        while true {
            let test = try parseTuple(withCondexpr: false)
            try expectBlockEnd()
            let body = try subparse(endTags: ["elif", "else", "endif"])
            branches.append((test, body))
            if isName("elif") { advance(); continue }
            if isName("else") {
                advance()
                try expectBlockEnd()
                otherwise = try subparse(endTags: ["endif"])
            }
            break
        }
        try endBlock()
        return .ifChain(branches, otherwise: otherwise)
    }

    mutating func parseSet() throws -> Stmt {
        let offset = current.offset
        advance()
        let target = try parseAssignTarget(withNamespace: true)
        if isOp("=") {
            advance()
            let value = try parseTuple()
            try expectBlockEnd()
            return .set(target, value, offset)
        }
        var filters: [FilterCall] = []
        while isOp("|") {
            advance()
            filters.append(try parseFilterCall())
        }
        try expectBlockEnd()
        let body = try subparse(endTags: ["endset"])
        try endBlock()
        return .setBlock(target, filters, body, offset)
    }

    mutating func parseWith() throws -> Stmt {
        let offset = current.offset
        advance()
        var assignments: [(Target, Expr)] = []
        while !(current.kind == .blockEnd) {
            if !assignments.isEmpty { try expectOp(",") }
            let target = try parseAssignTarget()
            try expectOp("=")
            assignments.append((target, try parseExpression()))
        }
        advance()
        let body = try subparse(endTags: ["endwith"])
        try endBlock()
        return .with(assignments, body, offset)
    }

    mutating func parseSignature() throws -> [(name: String, defaultValue: Expr?)] {
        try expectOp("(")
        var params: [(name: String, defaultValue: Expr?)] = []
        var sawDefault = false
        while !isOp(")") {
            if !params.isEmpty { try expectOp(",") }
            if isOp(")") { break }
            let nameToken = current
            let name = try expectName()
            if ["true", "false", "none", "True", "False", "None"].contains(name) {
                throw fail("cannot assign to '\(name)'", nameToken)
            }
            if isOp("=") {
                advance()
                params.append((name, try parseExpression()))
                sawDefault = true
            } else {
                if sawDefault { throw fail("non-default argument follows default argument", nameToken) }
                params.append((name, nil))
            }
        }
        advance()
        return params
    }

    mutating func macroDefinition(name: String, params: [(name: String, defaultValue: Expr?)], endTag: String) throws
        -> MacroDefinition
    {
        let body = try withLoopDepth(0) { try $0.subparse(endTags: [endTag]) }
        try endBlock()
        var names = Set<String>()
        collectNames(body, into: &names)
        for p in params { if let d = p.defaultValue { collectNames(d, into: &names) } }
        return MacroDefinition(name: name, parameters: params, body: body,
                               usesCaller: names.contains("caller"), usesVarargs: names.contains("varargs"),
                               usesKwargs: names.contains("kwargs"))
    }

    mutating func parseMacro() throws -> Stmt {
        advance()
        let name = try expectName()
        let params = try parseSignature()
        try expectBlockEnd()
        return .macro(try macroDefinition(name: name, params: params, endTag: "endmacro"))
    }

    mutating func parseCallBlock() throws -> Stmt {
        let offset = current.offset
        advance()
        let params = isOp("(") ? try parseSignature() : []
        let call = try parseExpression()
        guard case .call = call else { throw map.error(offset, "expected a call after 'call'") }
        try expectBlockEnd()
        let caller = try macroDefinition(name: "caller", params: params, endTag: "endcall")
        return .callBlock(call: call, caller: caller, offset)
    }

    mutating func parseFilterBlock() throws -> Stmt {
        let offset = current.offset
        advance()
        var filters = [try parseFilterCall()]
        while isOp("|") {
            advance()
            filters.append(try parseFilterCall())
        }
        try expectBlockEnd()
        let body = try subparse(endTags: ["endfilter"])
        try endBlock()
        return .filterBlock(filters, body, offset)
    }

    mutating func parseAssignTarget(withNamespace: Bool = false, endNames: Set<String> = []) throws -> Target {
        if withNamespace, case .name(let n) = current.kind, case .op(".") = next.kind {
            let offset = current.offset
            advance()
            advance()
            let attr = try expectName()
            return .namespaceAttribute(n, attr, offset)
        }
        var items: [Target] = []
        var isTuple = false
        var parenthesised = false
        if isOp("(") { parenthesised = true; advance() }
        while true {
            if !items.isEmpty {
                guard isOp(",") else { break }
                advance()
                isTuple = true
            }
            if case .name(let n) = current.kind, !endNames.contains(n) {
                if ["true", "false", "none", "True", "False", "None"].contains(n) {
                    throw fail("cannot assign to '\(n)'")
                }
                items.append(.name(n))
                advance()
            } else if isOp("(") {
                items.append(try parseAssignTarget(endNames: endNames))
            } else {
                if items.isEmpty { throw fail("expected an assignment target, found \(describe(current))") }
                break
            }
        }
        if parenthesised { try expectOp(")") }
        if items.count == 1 && !isTuple { return items[0] }
        return .tuple(items)
    }

    // MARK: expressions

    /// jinja2's parse_tuple: an expression, or a tuple when commas follow.
    mutating func parseTuple(withCondexpr: Bool = true, endNames: Set<String> = [], explicitParens: Bool = false)
        throws -> Expr
    {
        var items: [Expr] = []
        var isTuple = false
        while true {
            if !items.isEmpty { try expectOp(",") }
            if isTupleEnd(endNames) { break }
            items.append(withCondexpr ? try parseExpression() : try parseOr())
            if isOp(",") { isTuple = true } else { break }
        }
        if !isTuple {
            if let e = items.first { return e }
            if !explicitParens { throw fail("expected an expression, found \(describe(current))") }
        }
        return .tuple(items)
    }

    func isTupleEnd(_ endNames: Set<String>) -> Bool {
        switch current.kind {
        case .variableEnd, .blockEnd, .eof: return true
        case .op(")"): return true
        case .name(let n): return endNames.contains(n)
        default: return false
        }
    }

    mutating func parseExpression(withCondexpr: Bool = true) throws -> Expr {
        try enter()
        defer { leave() }
        if !withCondexpr { return try parseOr() }
        var expr = try parseOr()
        while isName("if") {
            let offset = current.offset
            advance()
            let test = try parseOr()
            var otherwise: Expr? = nil
            if isName("else") {
                advance()
                otherwise = try parseExpression()
            }
            expr = .conditional(test: test, then: expr, otherwise: otherwise, offset)
        }
        return expr
    }

    mutating func parseOr() throws -> Expr {
        var left = try parseAnd()
        while isName("or") {
            advance()
            left = .or(left, try parseAnd())
        }
        return left
    }

    mutating func parseAnd() throws -> Expr {
        var left = try parseNot()
        while isName("and") {
            advance()
            left = .and(left, try parseNot())
        }
        return left
    }

    mutating func parseNot() throws -> Expr {
        if isName("not") {
            let offset = current.offset
            advance()
            try enter()
            defer { leave() }
            return .unary("not", try parseNot(), offset)
        }
        return try parseCompare()
    }

    mutating func parseCompare() throws -> Expr {
        let offset = current.offset
        let left = try parseMath1()
        var ops: [(op: String, rhs: Expr)] = []
        while true {
            if case .op(let o) = current.kind, ["==", "!=", "<", "<=", ">", ">="].contains(o) {
                advance()
                ops.append((o, try parseMath1()))
            } else if isName("in") {
                advance()
                ops.append(("in", try parseMath1()))
            } else if isName("not"), case .name("in") = next.kind {
                advance()
                advance()
                ops.append(("notin", try parseMath1()))
            } else {
                break
            }
        }
        return ops.isEmpty ? left : .compare(left, ops, offset)
    }

    mutating func parseMath1() throws -> Expr {
        var left = try parseConcat()
        while case .op(let o) = current.kind, o == "+" || o == "-" {
            let offset = current.offset
            advance()
            left = .binary(o, left, try parseConcat(), offset)
        }
        return left
    }

    mutating func parseConcat() throws -> Expr {
        let offset = current.offset
        var args = [try parseMath2()]
        while isOp("~") {
            advance()
            args.append(try parseMath2())
        }
        return args.count == 1 ? args[0] : .concat(args, offset)
    }

    mutating func parseMath2() throws -> Expr {
        var left = try parsePow()
        while case .op(let o) = current.kind, ["*", "/", "//", "%"].contains(o) {
            let offset = current.offset
            advance()
            left = .binary(o, left, try parsePow(), offset)
        }
        return left
    }

    mutating func parsePow() throws -> Expr {
        var left = try parseUnary()
        while isOp("**") {
            let offset = current.offset
            advance()
            left = .binary("**", left, try parseUnary(), offset)
        }
        return left
    }

    mutating func parseUnary(withFilter: Bool = true) throws -> Expr {
        try enter()
        defer { leave() }
        var node: Expr
        if case .op(let o) = current.kind, o == "-" || o == "+" {
            let offset = current.offset
            advance()
            node = .unary(o, try parseUnary(withFilter: false), offset)
        } else {
            node = try parsePrimary()
        }
        node = try parsePostfix(node)
        if withFilter { node = try parseFilterExpr(node) }
        return node
    }

    mutating func parsePrimary() throws -> Expr {
        let t = current
        switch t.kind {
        case .name(let n):
            advance()
            switch n {
            case "true", "True": return .literal(.bool(true))
            case "false", "False": return .literal(.bool(false))
            case "none", "None": return .literal(.none)
            default: return .name(n, t.offset)
            }
        case .string(var s):
            advance()
            while case .string(let more) = current.kind {
                s += more
                advance()
            }
            return .literal(.string(s))
        case .integer(let v):
            advance()
            return .literal(.int(v))
        case .float(let v):
            advance()
            return .literal(.float(v))
        case .op("("):
            advance()
            try enter()
            defer { leave() }
            let e = try parseTuple(explicitParens: true)
            try expectOp(")")
            return e
        case .op("["):
            advance()
            try enter()
            defer { leave() }
            var items: [Expr] = []
            while !isOp("]") {
                if !items.isEmpty { try expectOp(",") }
                if isOp("]") { break }
                items.append(try parseExpression())
            }
            advance()
            return .list(items)
        case .op("{"):
            advance()
            try enter()
            defer { leave() }
            var items: [(Expr, Expr)] = []
            while !isOp("}") {
                if !items.isEmpty { try expectOp(",") }
                if isOp("}") { break }
                let k = try parseExpression()
                try expectOp(":")
                items.append((k, try parseExpression()))
            }
            advance()
            return .dict(items)
        default:
            throw fail("unexpected \(describe(t))")
        }
    }

    mutating func parsePostfix(_ start: Expr) throws -> Expr {
        var node = start
        while true {
            if isOp(".") || isOp("[") {
                node = try parseSubscript(node)
            } else if isOp("(") {
                node = try parseCall(node)
            } else {
                return node
            }
        }
    }

    mutating func parseFilterExpr(_ start: Expr) throws -> Expr {
        var node = start
        while true {
            if isOp("|") {
                advance()
                let f = try parseFilterCall()
                node = .filter(node, f.name, f.args, f.offset)
            } else if isName("is") {
                node = try parseTest(node)
            } else if isOp("(") {
                node = try parseCall(node)
            } else {
                return node
            }
        }
    }

    mutating func parseSubscript(_ node: Expr) throws -> Expr {
        let t = current
        advance()
        if case .op(".") = t.kind {
            switch current.kind {
            case .name(let n):
                advance()
                return .getattr(node, n, t.offset)
            case .integer(let v):
                advance()
                return .getitem(node, .literal(.int(v)), t.offset)
            default:
                throw fail("expected name or number after '.', found \(describe(current))")
            }
        }
        // '[' subscript or slice
        try enter()
        defer { leave() }
        if isOp("]") {  // `x[]` subscripts with an empty tuple
            advance()
            return .getitem(node, .tuple([]), t.offset)
        }
        var parts: [Expr?] = []
        var isSlice = false
        if !isOp(":") { parts.append(try parseExpression()) } else { parts.append(nil) }
        while isOp(":") && parts.count < 3 {
            isSlice = true
            advance()
            if isOp(":") || isOp("]") { parts.append(nil) } else { parts.append(try parseExpression()) }
        }
        if isOp(",") { throw fail("tuple subscripts are not supported") }
        try expectOp("]")
        if isSlice {
            while parts.count < 3 { parts.append(nil) }
            return .slice(node, parts[0], parts[1], parts[2], t.offset)
        }
        guard let index = parts[0] else { throw fail("expected a subscript", t) }
        return .getitem(node, index, t.offset)
    }

    mutating func parseCallArgs() throws -> CallArgs {
        try expectOp("(")
        try enter()
        defer { leave() }
        var args = CallArgs()
        while !isOp(")") {
            if !args.positional.isEmpty || !args.keyword.isEmpty { try expectOp(",") }
            if isOp(")") { break }
            if isOp("*") || isOp("**") { throw fail("*args and **kwargs in calls are not supported") }
            if case .name(let n) = current.kind, case .op("=") = next.kind {
                advance()
                advance()
                args.keyword.append((n, try parseExpression()))
            } else {
                if !args.keyword.isEmpty { throw fail("positional argument follows keyword argument") }
                args.positional.append(try parseExpression())
            }
        }
        advance()
        return args
    }

    mutating func parseCall(_ node: Expr) throws -> Expr {
        let offset = current.offset
        return .call(node, try parseCallArgs(), offset)
    }

    mutating func parseFilterCall() throws -> FilterCall {
        let offset = current.offset
        var name = try expectName()
        while isOp(".") {
            advance()
            name += "." + (try expectName())
        }
        let args = isOp("(") ? try parseCallArgs() : CallArgs()
        return FilterCall(name: name, args: args, offset: offset)
    }

    mutating func parseTest(_ node: Expr) throws -> Expr {
        advance()  // 'is'
        var negated = false
        if isName("not") { advance(); negated = true }
        let offset = current.offset
        var name = try expectName()
        while isOp(".") {
            advance()
            name += "." + (try expectName())
        }
        var args = CallArgs()
        if isOp("(") {
            args = try parseCallArgs()
        } else {
            var takesArg = false
            switch current.kind {
            case .name(let n): takesArg = !["else", "or", "and"].contains(n)
            case .string, .integer, .float, .op("("), .op("["), .op("{"): takesArg = true
            default: break
            }
            if takesArg {
                if isName("is") { throw fail("you cannot chain multiple tests with 'is'") }
                let arg = try parsePostfix(try parsePrimary())
                args.positional = [arg]
            }
        }
        return .test(node, name, args, negated: negated, offset)
    }
}

// MARK: - Names a macro body refers to (jinja2 gives macros `caller`/`varargs`/`kwargs` only when used).

func collectNames(_ stmts: [Stmt], into names: inout Set<String>) {
    for s in stmts { collectNames(s, into: &names) }
}

func collectNames(_ s: Stmt, into names: inout Set<String>) {
    switch s {
    case .output, .breakLoop, .continueLoop: break
    case .print(let e, _): collectNames(e, into: &names)
    case .forLoop(_, let it, let f, let body, let otherwise, _):
        collectNames(it, into: &names)
        if let f { collectNames(f, into: &names) }
        collectNames(body, into: &names)
        collectNames(otherwise, into: &names)
    case .ifChain(let branches, let otherwise):
        for (t, b) in branches { collectNames(t, into: &names); collectNames(b, into: &names) }
        collectNames(otherwise, into: &names)
    case .set(_, let e, _): collectNames(e, into: &names)
    case .setBlock(_, let fs, let body, _):
        for f in fs { collectNames(f.args, into: &names) }
        collectNames(body, into: &names)
    case .macro(let m):
        collectNames(m.body, into: &names)
    case .callBlock(let call, let caller, _):
        collectNames(call, into: &names)
        collectNames(caller.body, into: &names)
    case .filterBlock(let fs, let body, _):
        for f in fs { collectNames(f.args, into: &names) }
        collectNames(body, into: &names)
    case .with(let assignments, let body, _):
        for (_, e) in assignments { collectNames(e, into: &names) }
        collectNames(body, into: &names)
    case .generation(let body): collectNames(body, into: &names)
    }
}

func collectNames(_ a: CallArgs, into names: inout Set<String>) {
    for e in a.positional { collectNames(e, into: &names) }
    for (_, e) in a.keyword { collectNames(e, into: &names) }
}

func collectNames(_ e: Expr, into names: inout Set<String>) {
    switch e {
    case .literal: break
    case .name(let n, _): names.insert(n)
    case .list(let items), .tuple(let items), .concat(let items, _): for x in items { collectNames(x, into: &names) }
    case .dict(let items): for (k, v) in items { collectNames(k, into: &names); collectNames(v, into: &names) }
    case .getattr(let x, _, _): collectNames(x, into: &names)
    case .getitem(let x, let y, _), .binary(_, let x, let y, _), .and(let x, let y), .or(let x, let y):
        collectNames(x, into: &names)
        collectNames(y, into: &names)
    case .slice(let x, let a, let b, let c, _):
        collectNames(x, into: &names)
        for y in [a, b, c] { if let y { collectNames(y, into: &names) } }
    case .call(let x, let args, _), .filter(let x, _, let args, _), .test(let x, _, let args, _, _):
        collectNames(x, into: &names)
        collectNames(args, into: &names)
    case .unary(_, let x, _): collectNames(x, into: &names)
    case .compare(let x, let ops, _):
        collectNames(x, into: &names)
        for o in ops { collectNames(o.rhs, into: &names) }
    case .conditional(let t, let a, let b, _):
        collectNames(t, into: &names)
        collectNames(a, into: &names)
        if let b { collectNames(b, into: &names) }
    }
}
