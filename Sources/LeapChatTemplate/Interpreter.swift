// The tree-walking evaluator: statements write to an output buffer, expressions produce Values.
import LeapCore

/// A runtime failure without a position yet; the nearest node with an offset turns it into a LeapError.
struct TemplateFailure: Error {
    var message: String
    init(_ message: String) { self.message = message }
}

/// Variables of one frame. Lookups walk up to the parent (the enclosing frame or the macro's definition).
final class Scope {
    var vars: [String: Value] = [:]
    let parent: Scope?
    init(parent: Scope?) { self.parent = parent }

    func lookup(_ name: String) -> Value? {
        var s: Scope? = self
        while let cur = s {
            if let v = cur.vars[name] { return v }
            s = cur.parent
        }
        return nil
    }
}

enum Flow { case normal, breakLoop, continueLoop }

/// Bounds that keep a hostile template from hanging or exhausting memory or stack.
package struct RenderLimits: Sendable {
    package var maxOutputBytes = 64 << 20
    /// Statements, expressions, loop iterations and elements touched by filters all count as steps.
    package var maxSteps = 10_000_000
    package var maxCallDepth = 64
    /// Pins `strftime_now` to this Unix time (in UTC) instead of the local clock; for reproducible tests.
    package var fixedTime: Int? = nil

    package init() {}
}

final class Interpreter {
    let map: SourceMap
    let limits: RenderLimits
    var out = ""
    var outBytes = 0
    var steps = 0
    var callDepth = 0
    /// Set while evaluating a whole-constant statement expression the way jinja2's compile-time folding does
    /// (slices go through the sandbox's getitem, so failures become undefined instead of raising).
    var foldingConstants = false
    /// Every macro made during the render, to break their scope cycles at the end.
    private var macros: [Macro] = []

    init(map: SourceMap, limits: RenderLimits) {
        self.map = map
        self.limits = limits
    }

    // MARK: errors and limits

    /// Runs `body`, giving any position-less failure the source position `offset`.
    @inline(__always)
    func at<T>(_ offset: Int, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let f as TemplateFailure {
            throw map.error(offset, f.message)
        }
    }

    @inline(__always)
    func step(_ n: Int = 1) throws {
        steps += n
        if steps > limits.maxSteps {
            throw TemplateFailure("template exceeded \(limits.maxSteps) evaluation steps")
        }
    }

    func write(_ s: String) throws {
        outBytes += s.utf8.count
        if outBytes > limits.maxOutputBytes {
            throw TemplateFailure("template output exceeds \(limits.maxOutputBytes) bytes")
        }
        out += s
    }

    /// Renders `body` into a fresh buffer and returns it (macros, block set, filter blocks).
    func capture(_ body: () throws -> Void) throws -> String {
        let saved = out
        out = ""
        defer { out = saved }
        try body()
        return out
    }

    // MARK: statements

    func exec(_ stmts: [Stmt], _ scope: Scope) throws -> Flow {
        for s in stmts {
            let flow = try exec(s, scope)
            if flow != .normal { return flow }
        }
        return .normal
    }

    func exec(_ stmt: Stmt, _ scope: Scope) throws -> Flow {
        try step()
        switch stmt {
        case .output(let s):
            try write(s)
        case .print(let e, let offset):
            let v = try evalStatementExpression(e, scope, undefinedAllowed: true)
            try at(offset) { try write(v.str) }
        case .forLoop(let target, let iterable, let filter, let body, let otherwise, let offset):
            return try execFor(target, iterable, filter, body, otherwise, offset, scope)
        case .ifChain(let branches, let otherwise):
            for (test, body) in branches where try evalStatementExpression(test, scope, undefinedAllowed: false).truthy {
                return try exec(body, scope)
            }
            return try exec(otherwise, scope)
        case .set(let target, let e, let offset):
            let v = try evalStatementExpression(e, scope, undefinedAllowed: false)
            try at(offset) { try assign(target, v, scope) }
        case .setBlock(let target, let filters, let body, let offset):
            let text = try capture { _ = try exec(body, Scope(parent: scope)) }
            let v = try applyFilters(filters, to: .string(text), scope)
            try at(offset) { try assign(target, v, scope) }
        case .macro(let def):
            scope.vars[def.name] = .callable(.macro(makeMacro(def, scope)))
        case .callBlock(let call, let callerDef, let offset):
            guard case .call(let callee, let args, _) = call else { return .normal }
            let caller = makeMacro(callerDef, scope)
            let result = try callExpr(callee, args, extraKeywords: [("caller", .callable(.macro(caller)))],
                                      offset, scope)
            try at(offset) { try write(result.str) }
        case .filterBlock(let filters, let body, _):
            let text = try capture { _ = try exec(body, Scope(parent: scope)) }
            try write(try applyFilters(filters, to: .string(text), scope).str)
        case .with(let assignments, let body, let offset):
            let inner = Scope(parent: scope)
            for (target, e) in assignments {
                let v = try eval(e, scope)
                try at(offset) { try assign(target, v, inner) }
            }
            return try exec(body, inner)
        case .breakLoop: return .breakLoop
        case .continueLoop: return .continueLoop
        case .generation(let body): return try exec(body, scope)
        }
        return .normal
    }

    /// jinja2 folds constant expressions at compile time; a fold whose result is undefined is kept only
    /// for direct output, otherwise the expression runs normally (and a bad slice raises).
    func evalStatementExpression(_ e: Expr, _ scope: Scope, undefinedAllowed: Bool) throws -> Value {
        if e.isConstant {
            foldingConstants = true
            let folded = try? eval(e, scope)
            foldingConstants = false
            if let v = folded, undefinedAllowed || !v.isUndefined { return v }
        }
        return try eval(e, scope)
    }

    func makeMacro(_ def: MacroDefinition, _ scope: Scope) -> Macro {
        let m = Macro(name: def.name, parameters: def.parameters, body: def.body, scope: scope,
                      usesCaller: def.usesCaller, usesVarargs: def.usesVarargs, usesKwargs: def.usesKwargs)
        macros.append(m)
        return m
    }

    /// Cuts the macro -> scope -> macro cycles once the render is over (nothing can call them after).
    func releaseMacros() {
        for m in macros {
            m.scope = nil
            m.caller = nil
        }
        macros.removeAll()
    }

    func applyFilters(_ filters: [FilterCall], to value: Value, _ scope: Scope) throws -> Value {
        var v = value
        for f in filters {
            let (args, kwargs) = try evalArgs(f.args, scope)
            v = try at(f.offset) { try Filters.apply(f.name, v, args, kwargs, self) }
        }
        return v
    }

    func execFor(_ target: Target, _ iterable: Expr, _ filter: Expr?, _ body: [Stmt], _ otherwise: [Stmt],
                 _ offset: Int, _ scope: Scope) throws -> Flow
    {
        let seq = try evalStatementExpression(iterable, scope, undefinedAllowed: false)
        var items = try at(offset) { try iterate(seq) }
        if let filter {
            var kept: [Value] = []
            for item in items {
                try at(offset) { try step() }
                let s = Scope(parent: scope)
                try at(offset) { try assign(target, item, s) }
                if try eval(filter, s).truthy { kept.append(item) }
            }
            items = kept
        }
        if items.isEmpty {
            return try exec(otherwise, Scope(parent: scope))
        }
        let loop = LoopState(items: items)
        for (i, item) in items.enumerated() {
            try at(offset) { try step() }
            loop.index0 = i
            let s = Scope(parent: scope)
            s.vars["loop"] = .loop(loop)
            try at(offset) { try assign(target, item, s) }
            if try exec(body, s) == .breakLoop { break }
        }
        return .normal
    }

    func assign(_ target: Target, _ value: Value, _ scope: Scope) throws {
        switch target {
        case .name(let n):
            scope.vars[n] = value
        case .tuple(let targets):
            let items = try iterate(value)
            if items.count < targets.count {
                throw TemplateFailure("not enough values to unpack (expected \(targets.count), got \(items.count))")
            }
            if items.count > targets.count {
                throw TemplateFailure("too many values to unpack (expected \(targets.count))")
            }
            for (t, v) in zip(targets, items) { try assign(t, v, scope) }
        case .namespaceAttribute(let name, let attr, let offset):
            guard case .namespace(let ns) = scope.lookup(name) ?? .undefined(.named(name)) else {
                throw map.error(offset, "cannot assign attribute on non-namespace object")
            }
            ns.attributes[.string(attr)] = value
        }
    }

    // MARK: expressions

    func lookup(_ name: String, _ scope: Scope) -> Value {
        if let v = scope.lookup(name) { return v }
        if Globals.names.contains(name) { return .callable(.global(name)) }
        return .undefined(.named(name))
    }

    func eval(_ e: Expr, _ scope: Scope) throws -> Value {
        try step()
        switch e {
        case .literal(let v): return v
        case .name(let n, _): return lookup(n, scope)
        case .list(let items): return try bounded(.list(try items.map { try eval($0, scope) }))
        case .tuple(let items): return try bounded(.tuple(try items.map { try eval($0, scope) }))
        case .dict(let items):
            var d = PyDict()
            for (k, v) in items { d[try eval(k, scope)] = try eval(v, scope) }
            return try bounded(.dict(d))
        case .getattr(let obj, let name, let offset):
            let o = try eval(obj, scope)
            return try at(offset) { try getattr(o, name) }
        case .getitem(let obj, let key, let offset):
            let o = try eval(obj, scope)
            let k = try eval(key, scope)
            return try at(offset) { try getitem(o, k) }
        case .slice(let obj, let a, let b, let c, let offset):
            let o = try eval(obj, scope)
            let start = try a.map { try eval($0, scope) }
            let stop = try b.map { try eval($0, scope) }
            let stride = try c.map { try eval($0, scope) }
            if foldingConstants {
                return (try? slice(o, start, stop, stride)) ?? .undefined(.noItem(o, .string("slice")))
            }
            return try at(offset) { try slice(o, start, stop, stride) }
        case .call(let callee, let args, let offset):
            return try callExpr(callee, args, extraKeywords: [], offset, scope)
        case .filter(let input, let name, let args, let offset):
            let v = try eval(input, scope)
            let (a, k) = try evalArgs(args, scope)
            return try at(offset) { try Filters.apply(name, v, a, k, self) }
        case .test(let input, let name, let args, let negated, let offset):
            let v = try eval(input, scope)
            let (a, k) = try evalArgs(args, scope)
            let r = try at(offset) { try Tests.apply(name, v, a, k, self) }
            return .bool(r != negated)
        case .unary(let op, let x, let offset):
            let v = try eval(x, scope)
            return try at(offset) { try Ops.unary(op, v) }
        case .binary(let op, let x, let y, let offset):
            let a = try eval(x, scope)
            let b = try eval(y, scope)
            return try at(offset) {
                let r = try Ops.binary(op, a, b, limits.maxOutputBytes)
                switch r {
                case .list(let items), .tuple(let items):
                    // `+` keeps depth and adds sizes; `*` repeats elements, which may be shared big lists.
                    if op == "*" { return try bounded(r) }
                    try step(items.count)
                    return r
                default: return r
                }
            }
        case .and(let x, let y):
            let a = try eval(x, scope)
            return a.truthy ? try eval(y, scope) : a
        case .or(let x, let y):
            let a = try eval(x, scope)
            return a.truthy ? a : try eval(y, scope)
        case .compare(let first, let ops, let offset):
            var left = try eval(first, scope)
            for (op, rhs) in ops {
                let right = try eval(rhs, scope)
                let ok = try at(offset) { try Ops.compare(op, left, right) }
                if !ok { return .bool(false) }
                left = right
            }
            return .bool(true)
        case .concat(let parts, let offset):
            var s = ""
            for p in parts { s += try eval(p, scope).str }
            if s.utf8.count > limits.maxOutputBytes {
                throw map.error(offset, "string exceeds \(limits.maxOutputBytes) bytes")
            }
            return .string(s)
        case .conditional(let test, let then, let otherwise, let offset):
            if try eval(test, scope).truthy { return try eval(then, scope) }
            if let otherwise { return try eval(otherwise, scope) }
            let line = map.location(offset).line
            return .undefined(Undefined(
                hint: "the inline if-expression on line \(line) evaluated to false and no else section was defined."))
        }
    }

    /// A container built by the template, checked against ValueBounds (the check's work counts as steps).
    func bounded(_ v: Value) throws -> Value {
        try step(try ValueBounds.check(v))
        return v
    }

    func evalArgs(_ args: CallArgs, _ scope: Scope) throws -> ([Value], [(String, Value)]) {
        let positional = try args.positional.map { try eval($0, scope) }
        let keyword = try args.keyword.map { ($0.name, try eval($0.value, scope)) }
        return (positional, keyword)
    }

    func callExpr(_ callee: Expr, _ args: CallArgs, extraKeywords: [(String, Value)], _ offset: Int,
                  _ scope: Scope) throws -> Value
    {
        let f = try eval(callee, scope)
        var (positional, keyword) = try evalArgs(args, scope)
        keyword += extraKeywords
        return try at(offset) { try call(f, positional, keyword) }
    }

    func call(_ f: Value, _ args: [Value], _ kwargs: [(String, Value)]) throws -> Value {
        switch f {
        case .callable(let c):
            switch c {
            case .macro(let m): return try callMacro(m, args, kwargs)
            case .method(let receiver, let name): return try Methods.call(receiver, name, args, kwargs, self)
            case .global(let name): return try Globals.call(name, args, kwargs, self)
            case .joiner(let j):
                defer { j.used = true }
                return .string(j.used ? j.separator : "")
            case .loopMethod(let loop, let name):
                if name == "cycle" {
                    guard !args.isEmpty else { throw TemplateFailure("no items for cycling given") }
                    return args[loop.index0 % args.count]
                }
                // changed(*values): true when the values differ from the previous call's.
                let changed = loop.lastChanged.map { !pyEquals(.list($0), .list(args)) } ?? true
                loop.lastChanged = args
                return .bool(changed)
            }
        case .undefined(let u):
            throw TemplateFailure(u.hint)
        default:
            throw TemplateFailure("'\(f.pythonTypeName)' object is not callable")
        }
    }

    func callMacro(_ m: Macro, _ args: [Value], _ kwargs: [(String, Value)]) throws -> Value {
        callDepth += 1
        defer { callDepth -= 1 }
        if callDepth > limits.maxCallDepth {
            throw TemplateFailure("maximum macro call depth (\(limits.maxCallDepth)) exceeded")
        }
        let s = Scope(parent: m.scope)
        var bound = [Value?](repeating: nil, count: m.parameters.count)
        var varargs: [Value] = []
        for (i, a) in args.enumerated() {
            if i < bound.count { bound[i] = a } else { varargs.append(a) }
        }
        if !varargs.isEmpty && !m.usesVarargs {
            throw TemplateFailure("macro '\(m.name)' takes not more than \(m.parameters.count) argument(s)")
        }
        var extra = PyDict()
        var caller: Value? = nil
        for (k, v) in kwargs {
            if let i = m.parameters.firstIndex(where: { $0.name == k }) {
                if bound[i] != nil {
                    throw TemplateFailure("macro '\(m.name)' got multiple values for argument '\(k)'")
                }
                bound[i] = v
            } else if k == "caller" && m.usesCaller {
                caller = v
            } else if m.usesKwargs {
                extra[.string(k)] = v
            } else {
                throw TemplateFailure("macro '\(m.name)' takes no keyword argument '\(k)'")
            }
        }
        for (i, p) in m.parameters.enumerated() {
            if let v = bound[i] {
                s.vars[p.name] = v
            } else if let d = p.defaultValue {
                s.vars[p.name] = try eval(d, s)
            } else {
                s.vars[p.name] = .undefined(Undefined(hint: "parameter '\(p.name)' was not provided"))
            }
        }
        if m.usesVarargs { s.vars["varargs"] = .tuple(varargs) }
        if m.usesKwargs { s.vars["kwargs"] = .dict(extra) }
        if m.usesCaller {
            s.vars["caller"] = caller ?? .undefined(Undefined(hint: "No caller defined"))
        }
        let text = try capture { _ = try exec(m.body, s) }
        return .string(text)
    }

    // MARK: access

    /// Python iteration as jinja2 sees it (undefined iterates as empty).
    func iterate(_ v: Value) throws -> [Value] {
        let items = try iterateItems(v)
        try step(items.count)
        return items
    }

    private func iterateItems(_ v: Value) throws -> [Value] {
        switch v.plain {
        case .list(let a), .tuple(let a), .iterator(_, let a), .range(_, _, _, let a): return a
        case .string(let s): return s.unicodeScalars.map { .string(String($0)) }
        case .dict(let d): return d.entries.map { $0.key }
        case .undefined: return []
        case .namespace: throw TemplateFailure("'Namespace' object is not iterable")
        default: throw TemplateFailure("'\(v.pythonTypeName)' object is not iterable")
        }
    }

    func getattr(_ o: Value, _ name: String) throws -> Value {
        switch o {
        case .undefined(let u): throw TemplateFailure(u.hint)
        case .dict(let d):
            if let m = Methods.lookup(o, name) { return m }
            return d[string: name] ?? .undefined(.noAttribute(o, name))
        case .namespace(let ns):
            return ns.attributes[string: name] ?? .undefined(.noAttribute(o, name))
        case .loop(let l):
            return l.attribute(name) ?? .undefined(.noAttribute(o, name))
        default:
            return Methods.lookup(o, name) ?? .undefined(.noAttribute(o, name))
        }
    }

    func getitem(_ object: Value, _ key: Value) throws -> Value {
        let o = object.plain
        switch o {
        case .undefined(let u): throw TemplateFailure(u.hint)
        case .dict(let d):
            if let v = d[key] { return v }
        case .list(let a), .tuple(let a), .range(_, _, _, let a):
            if let i = key.indexValue {
                let j = i < 0 ? i + a.count : i
                if j >= 0 && j < a.count { return a[j] }
                return .undefined(.noItem(o, key))
            }
        case .string(let s):
            if let i = key.indexValue {
                let scalars = Array(s.unicodeScalars)
                let j = i < 0 ? i + scalars.count : i
                if j >= 0 && j < scalars.count { return .string(String(scalars[j])) }
                return .undefined(.noItem(o, key))
            }
        default: break
        }
        if case .string(let name) = key { return try getattr(o, name) }
        return .undefined(.noItem(o, key))
    }

    func slice(_ object: Value, _ start: Value?, _ stop: Value?, _ step: Value?) throws -> Value {
        let o = object.plain
        if case .undefined(let u) = o { throw TemplateFailure(u.hint) }
        func bound(_ v: Value?) throws -> Int?? {
            guard let v else { return .some(nil) }
            switch v {
            case .none: return .some(nil)
            case .int(let i): return .some(i)
            case .bool(let b): return .some(b ? 1 : 0)
            default: return nil  // not an index: jinja2 yields undefined
            }
        }
        // jinja2 compiles slices to a plain Python subscript: errors are raised, not turned into undefined.
        switch o {
        case .list, .tuple, .string, .range: break
        case .dict: throw TemplateFailure("unhashable type: 'slice'")
        default: throw TemplateFailure("'\(o.pythonTypeName)' object is not subscriptable")
        }
        guard let a = try bound(start), let b = try bound(stop), let c = try bound(step) else {
            throw TemplateFailure("slice indices must be integers or None or have an __index__ method")
        }
        let stride = c ?? 1
        if stride == 0 { throw TemplateFailure("slice step cannot be zero") }
        func indices(_ n: Int) -> [Int] {
            // CPython's PySlice_AdjustIndices.
            var lo: Int, hi: Int
            if stride > 0 {
                lo = a.map { $0 < 0 ? max(0, $0 + n) : min($0, n) } ?? 0
                hi = b.map { $0 < 0 ? max(0, $0 + n) : min($0, n) } ?? n
                var r: [Int] = []
                var i = lo
                while i < hi { r.append(i); i += stride }
                return r
            } else {
                lo = a.map { $0 < 0 ? max(-1, $0 + n) : min($0, n - 1) } ?? (n - 1)
                hi = b.map { $0 < 0 ? max(-1, $0 + n) : min($0, n - 1) } ?? -1
                var r: [Int] = []
                var i = lo
                while i > hi { r.append(i); i += stride }
                return r
            }
        }
        switch o {
        case .list(let items), .range(_, _, _, let items): return .list(indices(items.count).map { items[$0] })
        case .tuple(let items): return .tuple(indices(items.count).map { items[$0] })
        case .string(let s):
            let scalars = Array(s.unicodeScalars)
            var r = String.UnicodeScalarView()
            for i in indices(scalars.count) { r.append(scalars[i]) }
            return .string(String(r))
        default:
            return .undefined(Undefined(hint: "'\(o.pythonTypeName)' object is not subscriptable"))
        }
    }
}
