// LeapGrammar: JSON-schema constraints compiled to a grammar that masks token logits.
//
// A grammar is a set of rules over bytes, GBNF-like: each rule is a list of alternatives, each
// alternative a sequence of elements (a byte, a byte class, a starred byte class or a reference to a
// rule). The compiled form is flat so that the matcher walks integers, not objects:
//
//   elements    [n_elements]       alternatives stored back to back, each terminated by `.end`
//   altStarts   [n_alternatives]   index into `elements` of each alternative's first element
//   ruleAlts    [n_rules + 1]      rule r owns altStarts[ruleAlts[r] ..< ruleAlts[r + 1]]
//   classes     [n_classes]        a 256-bit byte set per class
//   stringBounds [n_strings * 2]   minLength, maxLength (-1: none) of each string terminal

import LeapCore

/// A set of bytes (256 bits).
package struct ByteSet: Hashable, Sendable {
    package var w0: UInt64 = 0, w1: UInt64 = 0, w2: UInt64 = 0, w3: UInt64 = 0

    package init() {}
    package init(_ bytes: ClosedRange<UInt8>) { for b in bytes { insert(b) } }
    package init(_ list: [UInt8]) { for b in list { insert(b) } }

    @inline(__always) package func contains(_ b: UInt8) -> Bool {
        // Selects instead of a switch: no jump table in the trie walk's inner loop.
        let low = b & 64 == 0 ? w0 : w1
        let high = b & 64 == 0 ? w2 : w3
        let w = b & 128 == 0 ? low : high
        return (w >> UInt64(b & 63)) & 1 != 0
    }

    package mutating func insert(_ b: UInt8) {
        let bit = UInt64(1) << UInt64(b & 63)
        switch b >> 6 {
        case 0: w0 |= bit
        case 1: w1 |= bit
        case 2: w2 |= bit
        default: w3 |= bit
        }
    }

    package mutating func insert(_ r: ClosedRange<UInt8>) { for b in r { insert(b) } }
    package func union(_ o: ByteSet) -> ByteSet {
        var s = self
        s.w0 |= o.w0; s.w1 |= o.w1; s.w2 |= o.w2; s.w3 |= o.w3
        return s
    }
    package func subtracting(_ o: ByteSet) -> ByteSet {
        var s = self
        s.w0 &= ~o.w0; s.w1 &= ~o.w1; s.w2 &= ~o.w2; s.w3 &= ~o.w3
        return s
    }
    package var isEmpty: Bool { (w0 | w1 | w2 | w3) == 0 }
    package var count: Int { w0.nonzeroBitCount + w1.nonzeroBitCount + w2.nonzeroBitCount + w3.nonzeroBitCount }
}

/// One element of a compiled alternative.
package struct GrammarElement: Equatable, Sendable {
    package enum Kind: UInt8, Sendable {
        case end        // end of the alternative: return to the caller
        case byte       // arg = the byte
        case byteClass  // arg = class index: one byte of the class
        case star       // arg = class index: zero or more bytes of the class
        case ref        // arg = rule index
        case string     // arg = string terminal index: a JSON string body and its closing quote
    }
    package var kind: Kind
    package var arg: Int32
}

/// A compiled grammar: immutable, shareable between threads and matchers.
package final class Grammar: Sendable, CustomStringConvertible {
    package let elements: [GrammarElement]
    package let altStarts: [Int32]
    package let ruleAlts: [Int32]
    package let classes: [ByteSet]
    package let ruleNames: [String]
    package let root: Int32
    package let stringBounds: [Int32]
    /// Length of the shortest string each rule derives (`unreachableLength` if none).
    package let ruleMinLength: [Int]
    static let unreachableLength = Int.max / 4

    init(elements: [GrammarElement], altStarts: [Int32], ruleAlts: [Int32], classes: [ByteSet],
         stringBounds: [Int32], ruleNames: [String], root: Int32) {
        self.stringBounds = stringBounds
        self.elements = elements
        self.altStarts = altStarts
        self.ruleAlts = ruleAlts
        self.classes = classes
        self.ruleNames = ruleNames
        self.root = root
        // Fixpoint: a rule's shortest string is its cheapest alternative.
        var ml = [Int](repeating: Grammar.unreachableLength, count: ruleNames.count)
        var changed = true
        while changed {
            changed = false
            for r in 0..<ruleNames.count {
                for a in Int(ruleAlts[r])..<Int(ruleAlts[r + 1]) {
                    let c = Grammar.tailLength(elements, stringBounds, Int(altStarts[a]), ml)
                    if c < ml[r] {
                        ml[r] = c
                        changed = true
                    }
                }
            }
        }
        ruleMinLength = ml
    }

    /// Shortest length of the elements from `pos` to the end of their alternative.
    static func tailLength(_ elements: [GrammarElement], _ stringBounds: [Int32], _ pos: Int, _ ml: [Int]) -> Int {
        var total = 0
        var i = pos
        while i < elements.count && elements[i].kind != .end {
            switch elements[i].kind {
            case .byte, .byteClass: total += 1
            case .ref: total += ml[Int(elements[i].arg)]
            case .string: total += Int(stringBounds[2 * Int(elements[i].arg)]) + 1
            case .star, .end: break
            }
            total = Swift.min(total, unreachableLength)
            i += 1
        }
        return total
    }

    func tailLength(_ pos: Int) -> Int { Grammar.tailLength(elements, stringBounds, pos, ruleMinLength) }

    /// Appends a shortest string for the elements from `pos` to the end of their alternative.
    func appendShortest(from pos: Int, to out: inout [UInt8], depth: Int = 0) {
        if depth > 10_000 { return }
        var i = pos
        while i < elements.count && elements[i].kind != .end {
            let e = elements[i]
            switch e.kind {
            case .byte: out.append(UInt8(truncatingIfNeeded: e.arg))
            case .byteClass:
                let set = classes[Int(e.arg)]
                if let b = (0...255).first(where: { set.contains(UInt8($0)) }) { out.append(UInt8(b)) }
            case .ref:
                let r = Int(e.arg)
                var best = -1, bestLen = Int.max
                for a in Int(ruleAlts[r])..<Int(ruleAlts[r + 1]) {
                    let c = tailLength(Int(altStarts[a]))
                    if c < bestLen {
                        bestLen = c
                        best = Int(altStarts[a])
                    }
                }
                if best >= 0 { appendShortest(from: best, to: &out, depth: depth + 1) }
            case .string: out += StringTerminal.shortestRest(0, minLen: stringBounds[2 * Int(e.arg)])
            case .star, .end: break
            }
            i += 1
        }
    }

    package var ruleCount: Int { ruleNames.count }

    /// A new matcher at the start of the grammar.
    package func makeMatcher() -> GrammarMatcher { GrammarMatcher(grammar: self) }

    /// GBNF-like text of the rules, for debugging and error reports.
    package var description: String {
        var out = ""
        for r in 0..<ruleCount {
            out += "\(ruleNames[r]) ::= "
            var alts: [String] = []
            for a in Int(ruleAlts[r])..<Int(ruleAlts[r + 1]) {
                var i = Int(altStarts[a])
                var parts: [String] = []
                while elements[i].kind != .end {
                    let e = elements[i]
                    switch e.kind {
                    case .byte: parts.append(Grammar.show(byte: UInt8(e.arg)))
                    case .byteClass: parts.append(Grammar.show(set: classes[Int(e.arg)]))
                    case .star: parts.append(Grammar.show(set: classes[Int(e.arg)]) + "*")
                    case .ref: parts.append(ruleNames[Int(e.arg)])
                    case .string:
                        let lo = stringBounds[2 * Int(e.arg)], hi = stringBounds[2 * Int(e.arg) + 1]
                        parts.append("string-body{\(lo),\(hi < 0 ? "" : String(hi))}")
                    case .end: break
                    }
                    i += 1
                }
                alts.append(parts.isEmpty ? "\"\"" : parts.joined(separator: " "))
            }
            out += alts.joined(separator: " | ") + "\n"
        }
        return out
    }

    static func show(byte b: UInt8) -> String {
        if b >= 0x20 && b < 0x7F && b != UInt8(ascii: "'") && b != UInt8(ascii: "\\") {
            return "'" + String(UnicodeScalar(b)) + "'"
        }
        return "x" + String(b, radix: 16)
    }

    static func show(set: ByteSet) -> String {
        var parts: [String] = []
        var b = 0
        while b < 256 {
            if set.contains(UInt8(b)) {
                var e = b
                while e + 1 < 256 && set.contains(UInt8(e + 1)) { e += 1 }
                parts.append(e == b ? show(byte: UInt8(b)) : show(byte: UInt8(b)) + "-" + show(byte: UInt8(e)))
                b = e + 1
            } else {
                b += 1
            }
        }
        return "[" + parts.joined(separator: " ") + "]"
    }
}

/// Builds a `Grammar` rule by rule. Rules can be declared before they are defined (for recursion).
package struct GrammarBuilder {
    package enum Symbol: Hashable {
        case byte(UInt8)
        case set(ByteSet)
        case star(ByteSet)
        case rule(Int)
        /// A string body (after the opening quote) and its closing quote; max nil = unbounded.
        case string(min: Int, max: Int?)
    }
    package typealias Seq = [Symbol]

    private(set) var names: [String] = []
    private var bodies: [[Seq]?] = []
    /// Memoized rules by body, so identical helper rules are shared.
    private var byBody: [[Seq]: Int] = [:]

    package init() {}

    package var ruleCount: Int { names.count }

    /// Reserves a rule to be defined later.
    package mutating func declare(_ name: String) -> Int {
        names.append(name)
        bodies.append(nil)
        return names.count - 1
    }

    package mutating func define(_ rule: Int, _ alternatives: [Seq]) {
        bodies[rule] = alternatives
    }

    /// A rule with these alternatives (an existing identical rule is reused).
    package mutating func rule(_ name: String, _ alternatives: [Seq]) -> Int {
        if let r = byBody[alternatives] { return r }
        let r = declare(name)
        bodies[r] = alternatives
        byBody[alternatives] = r
        return r
    }

    /// The bytes of `text` as a sequence.
    package static func literal(_ text: String) -> Seq { text.utf8.map { .byte($0) } }
    package static func literal(_ bytes: [UInt8]) -> Seq { bytes.map { .byte($0) } }

    /// Checks and compiles: alternatives that can never finish (through rules that derive no finite
    /// string) are removed, so a matcher can always complete what it started; a root that derives
    /// nothing, or a rule that reaches itself without consuming a byte, is an error.
    package mutating func finish(root: Int) throws -> Grammar {
        let n = names.count
        func symbolOK(_ s: Symbol, _ good: [Bool]) -> Bool {
            switch s {
            case .rule(let r): return good[r]
            case .set(let set): return !set.isEmpty
            case .byte, .star, .string: return true
            }
        }
        var productive = [Bool](repeating: false, count: n)
        var changed = true
        while changed {
            changed = false
            for r in 0..<n where !productive[r] {
                if (bodies[r] ?? []).contains(where: { $0.allSatisfy { symbolOK($0, productive) } }) {
                    productive[r] = true
                    changed = true
                }
            }
        }
        guard productive[root] else {
            throw LeapError(.invalidArgument, "the schema has no finite valid value (every branch recurses forever)")
        }
        for r in 0..<n { bodies[r] = bodies[r]?.filter { $0.allSatisfy { symbolOK($0, productive) } } }

        var nullable = [Bool](repeating: false, count: n)
        changed = true
        while changed {
            changed = false
            for r in 0..<n where !nullable[r] {
                let isNullable = (bodies[r] ?? []).contains { alt in
                    alt.allSatisfy {
                        switch $0 {
                        case .star: return true
                        case .rule(let x): return nullable[x]
                        case .byte, .set, .string: return false
                        }
                    }
                }
                if isNullable {
                    nullable[r] = true
                    changed = true
                }
            }
        }
        // Rules reachable at the start of r without consuming a byte.
        func leading(_ r: Int) -> [Int] {
            var out: [Int] = []
            for alt in bodies[r] ?? [] {
                for sym in alt {
                    if case .rule(let x) = sym {
                        out.append(x)
                        if !nullable[x] { break }
                    } else if case .star = sym {
                        continue
                    } else {
                        break
                    }
                }
            }
            return out
        }
        var color = [UInt8](repeating: 0, count: n)  // 0 new, 1 on the path, 2 done
        for start in 0..<n where color[start] == 0 {
            var path: [(rule: Int, next: [Int], i: Int)] = [(start, leading(start), 0)]
            color[start] = 1
            while let top = path.last {
                if top.i == top.next.count {
                    color[top.rule] = 2
                    path.removeLast()
                    continue
                }
                path[path.count - 1].i += 1
                let x = top.next[top.i]
                if color[x] == 1 {
                    throw LeapError(.invalidArgument, "the schema refers to itself without any value in between (\(names[x]))")
                }
                if color[x] == 0 {
                    color[x] = 1
                    path.append((x, leading(x), 0))
                }
            }
        }
        return build(root: root)
    }

    /// Compiles the rules. Undefined rules (a bug in the caller) become rules that match nothing.
    package func build(root: Int) -> Grammar {
        var elements: [GrammarElement] = []
        var altStarts: [Int32] = []
        var ruleAlts: [Int32] = [0]
        var classes: [ByteSet] = []
        var classIndex: [ByteSet: Int32] = [:]
        var stringBounds: [Int32] = []
        func classID(_ s: ByteSet) -> Int32 {
            if let c = classIndex[s] { return c }
            classes.append(s)
            classIndex[s] = Int32(classes.count - 1)
            return Int32(classes.count - 1)
        }
        for r in 0..<names.count {
            // Identical alternatives (e.g. anyOf branches that compile alike) would only duplicate stacks.
            var unique: [Seq] = []
            for alt in bodies[r] ?? [] where !unique.contains(alt) { unique.append(alt) }
            for alt in unique {
                altStarts.append(Int32(elements.count))
                for sym in alt {
                    switch sym {
                    case .byte(let b): elements.append(GrammarElement(kind: .byte, arg: Int32(b)))
                    case .set(let s): elements.append(GrammarElement(kind: .byteClass, arg: classID(s)))
                    case .star(let s): elements.append(GrammarElement(kind: .star, arg: classID(s)))
                    case .rule(let x): elements.append(GrammarElement(kind: .ref, arg: Int32(x)))
                    case .string(let lo, let hi):
                        var id = -1
                        for k in stride(from: 0, to: stringBounds.count, by: 2)
                        where stringBounds[k] == Int32(lo) && stringBounds[k + 1] == Int32(hi ?? -1) { id = k / 2 }
                        if id < 0 {
                            id = stringBounds.count / 2
                            stringBounds += [Int32(lo), Int32(hi ?? -1)]
                        }
                        elements.append(GrammarElement(kind: .string, arg: Int32(id)))
                    }
                }
                elements.append(GrammarElement(kind: .end, arg: 0))
            }
            ruleAlts.append(Int32(altStarts.count))
        }
        return Grammar(elements: elements, altStarts: altStarts, ruleAlts: ruleAlts, classes: classes,
                       stringBounds: stringBounds, ruleNames: names, root: Int32(root))
    }
}
