import LeapCore

/// One position of a prompt: a token id, or row `row` of a media part's embeddings.
package enum PromptUnit: Hashable, Sendable {
    case token(Int32)
    case media(MediaKey, row: Int)
}

/// A conversation's prompt as the model evaluates it: token ids and media rows in position order, and the
/// prepared media parts those rows come from.
package struct Prompt {
    package var units: [PromptUnit] = []
    package var media: [MediaKey: any PreparedMedia] = [:]

    package init() {}

    /// The token ids among the units, in order (what the sampler's penalties see of the prompt).
    package var tokens: [Int32] {
        units.compactMap { if case .token(let t) = $0 { return t } else { return nil } }
    }

    package var count: Int { units.count }

    package mutating func append(tokens: [Int32]) {
        units.append(contentsOf: tokens.map { .token($0) })
    }

    package mutating func append(rows: Range<Int>, of key: MediaKey) {
        units.append(contentsOf: rows.map { .media(key, row: $0) })
    }

    /// Splits `units[from...]` into runs that one evaluation each takes: token ids, or consecutive rows of
    /// one media part.
    package func runs(from start: Int) -> [PromptRun] {
        var out: [PromptRun] = []
        var i = start
        while i < units.count {
            switch units[i] {
            case .token:
                var toks: [Int32] = []
                while i < units.count, case .token(let t) = units[i] { toks.append(t); i += 1 }
                out.append(.tokens(toks))
            case .media(let key, let row):
                var end = row + 1
                i += 1
                while i < units.count, case .media(let k, let r) = units[i], k == key, r == end { end += 1; i += 1 }
                out.append(.rows(key, row..<end))
            }
        }
        return out
    }
}

/// A run of prompt positions evaluated together.
package enum PromptRun: Equatable {
    case tokens([Int32])
    case rows(MediaKey, Range<Int>)
}
