// The syntax tree of a parsed template. Every node that can fail at runtime keeps its source offset.

indirect enum Expr {
    case literal(Value)
    case name(String, Int)
    case list([Expr])
    case tuple([Expr])
    case dict([(Expr, Expr)])
    case getattr(Expr, String, Int)
    case getitem(Expr, Expr, Int)
    case slice(Expr, Expr?, Expr?, Expr?, Int)
    case call(Expr, CallArgs, Int)
    case filter(Expr, String, CallArgs, Int)
    case test(Expr, String, CallArgs, negated: Bool, Int)
    case unary(String, Expr, Int)  // "-", "+", "not"
    case binary(String, Expr, Expr, Int)  // + - * / // % **
    case and(Expr, Expr)
    case or(Expr, Expr)
    case compare(Expr, [(op: String, rhs: Expr)], Int)  // == != < <= > >= in notin
    case concat([Expr], Int)
    case conditional(test: Expr, then: Expr, otherwise: Expr?, Int)
}

extension Expr {
    /// Whether jinja2 can evaluate this at compile time (`as_const`): no names, only literals and operations
    /// on them.
    var isConstant: Bool {
        func args(_ a: CallArgs) -> Bool { a.positional.allSatisfy { $0.isConstant } && a.keyword.allSatisfy { $0.value.isConstant } }
        switch self {
        case .literal: return true
        case .name, .call: return false
        case .list(let items), .tuple(let items), .concat(let items, _): return items.allSatisfy { $0.isConstant }
        case .dict(let items): return items.allSatisfy { $0.0.isConstant && $0.1.isConstant }
        case .getattr(let x, _, _), .unary(_, let x, _): return x.isConstant
        case .getitem(let x, let y, _), .binary(_, let x, let y, _), .and(let x, let y), .or(let x, let y):
            return x.isConstant && y.isConstant
        case .slice(let x, let a, let b, let c, _): return x.isConstant && [a, b, c].allSatisfy { $0?.isConstant ?? true }
        case .filter(let x, _, let a, _), .test(let x, _, let a, _, _): return x.isConstant && args(a)
        case .compare(let x, let ops, _): return x.isConstant && ops.allSatisfy { $0.rhs.isConstant }
        case .conditional(let t, let a, let b, _): return t.isConstant && a.isConstant && (b?.isConstant ?? true)
        }
    }
}

struct CallArgs {
    var positional: [Expr] = []
    var keyword: [(name: String, value: Expr)] = []
}

/// The left side of `set` and `for`.
indirect enum Target {
    case name(String)
    case tuple([Target])
    case namespaceAttribute(String, String, Int)
}

/// `|name(args)` applied to a block's output (filter blocks, `{% set x | f %}`).
struct FilterCall {
    var name: String
    var args: CallArgs
    var offset: Int
}

struct MacroDefinition {
    var name: String
    var parameters: [(name: String, defaultValue: Expr?)]
    var body: [Stmt]
    var usesCaller: Bool
    var usesVarargs: Bool
    var usesKwargs: Bool
}

indirect enum Stmt {
    case output(String)
    case print(Expr, Int)
    case forLoop(target: Target, iterable: Expr, filter: Expr?, body: [Stmt], otherwise: [Stmt], Int)
    case ifChain([(Expr, [Stmt])], otherwise: [Stmt])
    case set(Target, Expr, Int)
    case setBlock(Target, [FilterCall], [Stmt], Int)
    case macro(MacroDefinition)
    case callBlock(call: Expr, caller: MacroDefinition, Int)
    case filterBlock([FilterCall], [Stmt], Int)
    case with([(Target, Expr)], [Stmt], Int)
    case breakLoop
    case continueLoop
    case generation([Stmt])  // transformers' {% generation %}: renders its body
}
