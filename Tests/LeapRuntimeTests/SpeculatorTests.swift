// The low-level API's speculator: drafts for a caller's verification loop, under the generation loop's
// adaptive control (it stops drafting where guesses are rejected, and resumes when the guesses it keeps
// making for free turn out right), and the refusals of what cannot work.
import LeapCore
import LeapRuntime
import LeapTestFiles
import Testing

@Suite struct SpeculatorTests {
    static func runner() throws -> ModelRunner {
        try ModelRunner.load(path: fixturesRoot + "/models/lfm2-tiny-f32.gguf", options: RunnerOptions())
    }

    /// A history whose last tokens (six of them: the longest match prompt lookup weighs) came before.
    static let repeating: [Int32] = Array(repeating: [11, 12, 13, 14, 15], count: 3).flatMap { $0 } + [11]

    @Test func promptLookupGuessesTheContinuationOfTheLastMatch() throws {
        let spec = try Speculator(runner: try Self.runner(), drafter: .ngram, maxDraft: 4, contextSize: nil)
        let guesses = try spec.draft(after: Self.repeating, limit: 3)
        #expect(guesses == [12, 13, 14])   // the limit, below the most a pass drafts
        #expect(try spec.draft(after: Self.repeating, limit: 0).isEmpty)
    }

    @Test func stopsDraftingWhereGuessesAreRejectedAndResumesWhenTheyWouldBeTaken() throws {
        let spec = try Speculator(runner: try Self.runner(), drafter: .ngram, maxDraft: 8, contextSize: nil)
        // Every pass rejects its first guess: the acceptance rate falls until a pass no longer pays.
        var passes = 0
        while !(try spec.draft(after: Self.repeating, limit: 8)).isEmpty {
            try spec.accepted(0)
            passes += 1
            try #require(passes < 50)
        }
        #expect(passes > 0)
        // The guesses are still made (they cost nothing) and checked against the tokens that follow: when
        // the sequence goes on as they said, the rate climbs back and drafting resumes.
        var history = Self.repeating
        var resumed = false
        for _ in 0..<60 where !resumed {
            history.append(history[history.count - 5])
            resumed = !(try spec.draft(after: history, limit: 8)).isEmpty
        }
        #expect(resumed)
    }

    @Test func reportsAreCheckedAndAFailedCallChangesNothing() throws {
        let spec = try Speculator(runner: try Self.runner(), drafter: .ngram, maxDraft: 4, contextSize: nil)
        #expect(throws: LeapError.self) { try spec.accepted(0) }   // nothing drafted yet
        let guesses = try spec.draft(after: Self.repeating, limit: 4)
        try #require(!guesses.isEmpty)
        #expect(throws: LeapError.self) { try spec.draft(after: [], limit: 4) }
        #expect(throws: LeapError.self) { try spec.draft(after: [-1], limit: 4) }
        #expect(throws: LeapError.self) { try spec.draft(after: Self.repeating, limit: -1) }
        #expect(throws: LeapError.self) { try spec.accepted(guesses.count + 1) }
        try spec.accepted(guesses.count)   // the pass is still there to report
        #expect(throws: LeapError.self) { try spec.accepted(0) }
    }

    @Test func refusesWhatCannotWork() throws {
        let runner = try Self.runner()
        func kind(_ body: () throws -> Speculator) -> LeapError.Kind? {
            do { _ = try body(); return nil } catch let e as LeapError { return e.kind } catch { return nil }
        }
        #expect(kind { try Speculator(runner: runner, drafter: DrafterChoice.none, maxDraft: nil, contextSize: nil) } == .invalidArgument)
        #expect(kind { try Speculator(runner: runner, drafter: .draftModel, maxDraft: nil, contextSize: nil) } == .invalidArgument)
        #expect(kind { try Speculator(runner: runner, drafter: .ngram, maxDraft: 0, contextSize: nil) } == .invalidArgument)
        #expect(kind { try Speculator(runner: runner, drafter: .ngram, maxDraft: 15, contextSize: nil) } == .invalidArgument)
        #expect(kind { try Speculator(runner: runner, drafter: .ngram, maxDraft: nil, contextSize: 0) } == .invalidArgument)
        #expect(kind { try Speculator(runner: runner, drafter: nil, maxDraft: nil, contextSize: nil) } == nil)   // prompt lookup
        let speaking = try SpeakingConversationTests.runner()
        #expect(kind { try Speculator(runner: speaking, drafter: .ngram, maxDraft: nil, contextSize: nil) } == .unsupported)
    }
}
