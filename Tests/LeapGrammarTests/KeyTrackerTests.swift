import LeapGrammar
import Testing

/// JSONKeyTracker: a key repeated within one object is refused at its closing quote, compared decoded;
/// the same key in other objects, and strings that are values, are fine.
@Suite struct KeyTrackerTests {
    /// The index of the byte at which `text` is refused, or nil when all of it is accepted.
    func refusedAt(_ text: String) -> Int? {
        var t = JSONKeyTracker()
        for (i, b) in text.utf8.enumerated() where !t.accept([b]) { return i }
        return nil
    }

    @Test func repeatedKeysAreRefusedAtTheirClosingQuote() {
        #expect(refusedAt(#"{"a":1,"a":2}"#) == 9)
        #expect(refusedAt(#"{"a":1, "b" : {"c":[1,{"d":2,"d":3}]}}"#) == 31)
        #expect(refusedAt(#"{"a":1,"\u0061":2}"#) == 14)  // the same key, escaped
        #expect(refusedAt(#"{"k\"":1,"k\"":2}"#) == 13)
        #expect(refusedAt(#"{"é":1,"\u00e9":2}"#) == 15)  // é is two bytes
    }

    @Test func equalKeysInDifferentObjectsAndStringValuesAreFine() {
        #expect(refusedAt(#"{"a":{"a":{"a":1}},"b":[{"a":1},{"a":2}],"c":"a","d":["a","a"]}"#) == nil)
        #expect(refusedAt(#"{"a":"\"a\"","b":"{\"a\":1,\"a\":1}"}"#) == nil)
        #expect(refusedAt(#"[{"x":1},{"x":1}] "#) == nil)
        #expect(refusedAt(#"{"ab":1,"a":2,"abc":3,"":4}"#) == nil)
    }

    @Test func allowsDoesNotChangeTheTracker() {
        var t = JSONKeyTracker()
        let opened = t.accept(Array(#"{"a":1,"a"#.utf8))
        #expect(opened)
        #expect(!t.allows(Array("\"".utf8)))
        #expect(t.allows(Array("b\"".utf8)))
        let closed = t.accept(Array("b\":2}".utf8))
        #expect(closed)
    }
}
