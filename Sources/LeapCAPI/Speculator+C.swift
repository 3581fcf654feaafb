import CLeap
import LeapCore
import LeapRuntime

// leap_speculator_*: drafts for a low-level verification loop, over LeapRuntime's Speculator.

final class SpeculatorBox: HandleBox {
    let model: ModelBox  // keeps the model (and its draft model) alive
    let speculator: Speculator
    init(_ model: ModelBox, _ speculator: Speculator) {
        self.model = model
        self.speculator = speculator
        super.init(kind: .speculator)
    }
}

private func borrowSpeculator(_ p: OpaquePointer?) throws -> SpeculatorBox {
    try Handle.borrow(p, SpeculatorBox.self, kind: .speculator, "spec")
}

@c @implementation
public func leap_speculator_params_init(_ p: UnsafeMutablePointer<leap_speculator_params>?, _ size: Int) {
    initParams(leap_speculator_params(), into: p, size: size)
}

@c @implementation
public func leap_speculator_create(_ m: OpaquePointer?, _ params: UnsafePointer<leap_speculator_params>?,
                                   _ out: UnsafeMutablePointer<OpaquePointer?>?) -> leap_status {
    ffi {
        let out = try required(out, "out_spec")
        out.pointee = nil
        let box = try borrowModel(m)
        var d = leap_speculator_params()
        leap_speculator_params_init(&d, MemoryLayout<leap_speculator_params>.size)
        let c = try readParams(params, defaults: d, "params")
        let choice: DrafterChoice?
        switch c.drafter {
        case 0: choice = nil
        case 1: choice = DrafterChoice.none
        case 2: choice = .ngram
        case 3: choice = .draftModel
        default: throw LeapError.invalidArgument("params->drafter: \(c.drafter) is not a leap_drafter")
        }
        guard c.context_size >= 0 else {
            throw LeapError.invalidArgument("params->context_size must not be negative, got \(c.context_size)")
        }
        let limit = GenerationOptions.draftTokensLimit
        guard c.max_draft_tokens <= limit else {
            throw LeapError.invalidArgument("params->max_draft_tokens must be at most \(limit) (one verification pass takes the last token and its guesses), got \(c.max_draft_tokens)")
        }
        let s = try Speculator(runner: box.runner, drafter: choice, maxDraft: c.max_draft_tokens > 0 ? Int(c.max_draft_tokens) : nil,
                               contextSize: c.context_size > 0 ? Int(c.context_size) : nil)
        out.pointee = Handle.retain(SpeculatorBox(box, s))
    }
}

@c @implementation
public func leap_speculator_free(_ s: OpaquePointer?) {
    Handle.release(s, kind: .speculator)
}

@c @implementation
public func leap_speculator_draft(_ s: OpaquePointer?, _ history: UnsafePointer<Int32>?, _ nHistory: Int, _ maxGuesses: Int,
                                  _ outGuesses: UnsafeMutablePointer<Int32>?, _ outN: UnsafeMutablePointer<Int>?) -> leap_status {
    ffi {
        let outN = try required(outN, "out_n")
        let box = try borrowSpeculator(s)
        guard nHistory > 0 else { throw LeapError.invalidArgument("n_history must be > 0 (drafting needs at least the last token)") }
        guard nHistory <= Int(Int32.max) else { throw LeapError.invalidArgument("n_history \(nHistory) is too large") }
        let h = try required(history, "history")
        guard maxGuesses == 0 || outGuesses != nil else { throw LeapError.invalidArgument("out_guesses must not be NULL when max_guesses > 0") }
        let guesses = try box.speculator.draft(after: Array(UnsafeBufferPointer(start: h, count: nHistory)),
                                               limit: min(maxGuesses, Int(Int32.max)))
        if let out = outGuesses, !guesses.isEmpty {
            out.update(from: guesses, count: guesses.count)
        }
        outN.pointee = guesses.count
    }
}

@c @implementation
public func leap_speculator_accept(_ s: OpaquePointer?, _ nAccepted: Int) -> leap_status {
    ffi { try borrowSpeculator(s).speculator.accepted(nAccepted) }
}

@c @implementation
public func leap_speculator_max_draft_tokens(_ s: OpaquePointer?, _ out: UnsafeMutablePointer<Int32>?) -> leap_status {
    ffi {
        let out = try required(out, "out_tokens")
        out.pointee = Int32(try borrowSpeculator(s).speculator.maxDraft)
    }
}
