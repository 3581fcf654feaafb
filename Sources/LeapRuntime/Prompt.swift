import LeapCore

/// One position of a prompt: a token id, or row `row` of a media part's embeddings.
package enum PromptUnit: Hashable, Sendable {
    case token(Int32)
    case media(MediaKey, row: Int)
    /// A generated audio frame fed back to the model (never part of a prompt, so never reused).
    case generatedAudio
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

    /// Splits `units[start..<end]` (end = all by default) into runs that one evaluation each takes: token
    /// ids, or consecutive rows of one media part.
    package func runs(from start: Int, to end: Int? = nil) -> [PromptRun] {
        var out: [PromptRun] = []
        let stop = min(end ?? units.count, units.count)
        var i = start
        while i < stop {
            switch units[i] {
            case .token:
                var toks: [Int32] = []
                while i < stop, case .token(let t) = units[i] { toks.append(t); i += 1 }
                out.append(.tokens(toks))
            case .generatedAudio:
                i += 1   // not in prompts
            case .media(let key, let row):
                var last = row + 1
                i += 1
                while i < stop, case .media(let k, let r) = units[i], k == key, r == last { last += 1; i += 1 }
                out.append(.rows(key, row..<last))
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
