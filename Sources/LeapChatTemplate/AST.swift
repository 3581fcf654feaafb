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
