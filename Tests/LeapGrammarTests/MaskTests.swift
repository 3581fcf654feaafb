import Glibc
import LeapGrammar
import LeapJSON
import LeapTestFiles
import Testing

/// The allowed tokens computed the slow, obvious way: clone the matcher and try each token's bytes.
func bruteForceMask(_ m: GrammarMatcher, _ vocab: (tokens: [[UInt8]], eog: [Int])) -> [Int] {
    var out: [Int] = []
    for (id, bytes) in vocab.tokens.enumerated() {
        if vocab.eog.contains(id) {
            if m.canEnd { out.append(id) }
        } else if !bytes.isEmpty && m.clone().accept(bytes) {
            out.append(id)
        }
    }
    return out
}

/// Walks per schema; LEAP_GRAMMAR_WALKS multiplies them for a longer soak run.
func walkCount(_ base: Int) -> Int {
    guard let v = getenv("LEAP_GRAMMAR_WALKS"), let k = Int(String(cString: v)), k > 0 else { return base }
    return base * k
}

let walkSchemas = ["person", "nested", "points", "enums", "const", "anyOf", "typeArrays", "tree", "linkedList",
                   "empty", "strings", "numbers", "arrays", "additional", "allOf", "rootInteger", "nullableString"]

@Suite struct MaskTests {
    @Test func trieMaskEqualsBruteForceAlongDocuments() throws {
        let vocab = syntheticVocabulary()
        let index = TokenVocabularyIndex(tokens: vocab.tokens, endOfGeneration: vocab.eog)
        var checked = 0
        for c in goldenCases {
            let g = try JSONSchemaGrammar(schema: c.schema).grammar
            // At every byte of the first two valid documents (the cache is exercised on repeats).
            for text in c.valid.prefix(2) {
                let m = g.makeMatcher()
                for b in text.utf8 {
                    let fast = index.mask(for: m).allowedIDs
                    let slow = bruteForceMask(m, vocab)
                    #expect(fast == slow, "\(c.name) after \(m)")
                    if checked % 17 == 0 {
                        let allows = (0..<vocab.tokens.count).filter { index.allows($0, matcher: m) }
                        #expect(allows == slow)
                    }
                    checked += 1
                    #expect(m.accept(b))
                }
                #expect(index.mask(for: m).allowedIDs == bruteForceMask(m, vocab))
            }
        }
        #expect(checked > 500)
    }

    @Test func identicalAnyOfBranchesShareOneStack() throws {
        // Two branches that compile to the same rule: inside the string the matcher has one stack, so
        // the string fast path applies and the mask equals the brute force one.
        let vocab = syntheticVocabulary()
        let index = TokenVocabularyIndex(tokens: vocab.tokens, endOfGeneration: vocab.eog)
        let g = try JSONSchemaGrammar(schemaText: #"{"anyOf":[{"type":"string","format":"date"},{"type":"string"}]}"#).grammar
        let m = g.makeMatcher()
        #expect(m.accept(Array(#""2024-"#.utf8)))
        #expect(m.stackCount == 1)
        #expect(index.mask(for: m).allowedIDs == bruteForceMask(m, vocab))
        #expect(m.accept(Array(#"01""#.utf8)) && m.isComplete)
    }

    @Test func eogOnlyWhenTheMatcherCanEnd() throws {
        let vocab = syntheticVocabulary()
        let index = TokenVocabularyIndex(tokens: vocab.tokens, endOfGeneration: vocab.eog)
        let eog = vocab.eog[0]
        let m = try JSONSchemaGrammar(schemaText: #"{"type":"integer"}"#).makeMatcher()
        #expect(!index.mask(for: m).contains(eog))
        #expect(!index.acceptToken(eog, matcher: m))
        #expect(index.acceptToken(Int(UInt8(ascii: "7")), matcher: m))
        #expect(index.mask(for: m).contains(eog))
        #expect(index.acceptToken(eog, matcher: m))
        // The empty (special) token is never allowed.
        #expect(!index.mask(for: m).contains(vocab.tokens.count - 2))
        #expect(!index.acceptToken(vocab.tokens.count - 2, matcher: m))
        #expect(!index.acceptToken(-1, matcher: m) && !index.acceptToken(1 << 30, matcher: m))
    }

    @Test func applySetsDisallowedLogitsToMinusInfinity() throws {
        let vocab = syntheticVocabulary()
        let index = TokenVocabularyIndex(tokens: vocab.tokens, endOfGeneration: vocab.eog)
        let m = try JSONSchemaGrammar(schemaText: #"{"type":"boolean"}"#).makeMatcher()
        let mask = index.mask(for: m)
        var logits = [Float](repeating: 1, count: vocab.tokens.count)
        logits.withUnsafeMutableBufferPointer { mask.apply(to: $0) }
        let finite = logits.indices.filter { logits[$0].isFinite }
        #expect(finite == mask.allowedIDs)
        let texts = finite.map { String(decoding: vocab.tokens[$0], as: UTF8.self) }
        #expect(Set(texts) == ["t", "f", "tru", "true", "false"])
    }

    @Test(arguments: walkSchemas)
    func randomWalksProduceValidDocuments(_ name: String) throws {
        let c = try #require(golden(name))
        let vocab = syntheticVocabulary()
        let index = TokenVocabularyIndex(tokens: vocab.tokens, endOfGeneration: vocab.eog)
        let g = try JSONSchemaGrammar(schema: c.schema).grammar
        var rng = SplitMix64(seed: UInt64(name.utf8.count) * 7919 + 1)
        for walk in 0..<walkCount(40) {
            let free = [5, 20, 60, 150][walk % 4]
            guard let out = randomWalk(g, index, rng: &rng, freeSteps: free) else {
                Issue.record("\(name) walk \(walk) got stuck")
                continue
            }
            let err = documentError(out, c.schema)
            if let err, err.contains("duplicate key") { continue }  // free-form keys: documented limitation
            #expect(err == nil, "\(name) walk \(walk): \(String(decoding: out, as: UTF8.self)): \(err ?? "")")
        }
    }

    @Test(.enabled(if: smolVocab != nil, "SmolLM2 vocabulary fixture missing"), arguments: walkSchemas)
    func randomWalksWithTheSmolLM2Vocabulary(_ name: String) throws {
        let c = try #require(golden(name))
        let vocab = try #require(smolVocab)
        let index = TokenVocabularyIndex(tokens: vocab.tokens, endOfGeneration: vocab.eog)
        let g = try JSONSchemaGrammar(schema: c.schema).grammar
        var rng = SplitMix64(seed: UInt64(name.utf8.count) * 104729 + 3)
        for walk in 0..<walkCount(6) {
            guard let out = randomWalk(g, index, rng: &rng, freeSteps: [10, 40, 100][walk % 3]) else {
                Issue.record("\(name) walk \(walk) got stuck")
                continue
            }
            let err = documentError(out, c.schema)
            if let err, err.contains("duplicate key") { continue }
            #expect(err == nil, "\(name) walk \(walk): \(String(decoding: out, as: UTF8.self)): \(err ?? "")")
        }
    }

    @Test(.enabled(if: smolVocab != nil, "SmolLM2 vocabulary fixture missing"))
    func smolLM2MaskEqualsBruteForce() throws {
        let vocab = try #require(smolVocab)
        let index = TokenVocabularyIndex(tokens: vocab.tokens, endOfGeneration: vocab.eog)
        let c = try #require(golden("person"))
        let g = try JSONSchemaGrammar(schema: c.schema).grammar
        let m = g.makeMatcher()
        let text = Array(c.valid[1].utf8)
        for (i, b) in text.enumerated() {
            if i % 5 == 0 { #expect(index.mask(for: m).allowedIDs == bruteForceMask(m, vocab)) }
            #expect(m.accept(b))
        }
    }
}

extension GrammarMatcher: CustomStringConvertible {
    public var description: String { "matcher(canEnd: \(canEnd))" }
}

@Suite struct ConstraintTests {
    /// The runtime's loop: mask logits, pick the best allowed logit, accept, stop when complete.
    @Test func greedyLoopOverMaskedLogitsFinishesWithAValidDocument() throws {
        let vocab = syntheticVocabulary()
        let index = TokenVocabularyIndex(tokens: vocab.tokens, endOfGeneration: vocab.eog)
        let schema = try JSONParser.parse(#"{"type":"object","properties":{"name":{"type":"string","maxLength":12},"n":{"type":"integer","minimum":1,"maximum":9},"ok":{"type":"boolean"}},"required":["name","n","ok"]}"#)
        let constraint = GrammarConstraint(grammar: try JSONSchemaGrammar(schema: schema).grammar, index: index)
        var rng = SplitMix64(seed: 11)
        var out: [UInt8] = []
        var logits = [Float](repeating: 0, count: vocab.tokens.count)
        for _ in 0..<400 where !constraint.isComplete {
            // Random "model" logits that like long tokens; the mask alone keeps the output valid.
            for i in logits.indices { logits[i] = Float(rng.next() % 1000) / 100 + Float(vocab.tokens[i].count) }
            logits.withUnsafeMutableBufferPointer { constraint.maskLogits($0) }
            let best = logits.indices.max { logits[$0] < logits[$1] } ?? 0
            #expect(logits[best].isFinite)
            if vocab.eog.contains(best) { break }
            #expect(constraint.accept(token: best))
            out += vocab.tokens[best]
        }
        #expect(constraint.isComplete)
        #expect(documentError(out, schema) == nil, "\(String(decoding: out, as: UTF8.self))")
        #expect(!constraint.accept(token: Int(UInt8(ascii: " "))))
    }
}
