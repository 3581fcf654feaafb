import LeapGrammar
import LeapJSON
import LeapTestFiles
import Testing

/// Numeric bounds against plain arithmetic: every accepted number lies within the bounds, and (for
/// integers) every integer within the bounds is accepted.
@Suite struct RangeTests {
    @Test func integerRangesAreExact() throws {
        var rng = SplitMix64(seed: 99)
        let edges: [Int64] = [-1_000_000, -1001, -1000, -999, -100, -99, -10, -9, -1, 0, 1, 9, 10, 11, 99, 100, 101, 999, 1000, 12345]
        for trial in 0..<60 {
            var lo: Int64? = edges[Int(rng.next() % UInt64(edges.count))]
            var hi: Int64? = edges[Int(rng.next() % UInt64(edges.count))]
            if let a = lo, let b = hi, a > b { (lo, hi) = (b, a) }
            if trial % 7 == 0 { lo = nil }
            if trial % 5 == 0 { hi = nil }
            if lo == nil && hi == nil { continue }
            var schema = JSONObject([("type", .string("integer"))])
            if let lo { schema.set(trial % 3 == 0 ? "exclusiveMinimum" : "minimum", .int(trial % 3 == 0 ? lo - 1 : lo)) }
            if let hi { schema.set(trial % 4 == 0 ? "exclusiveMaximum" : "maximum", .int(trial % 4 == 0 ? hi + 1 : hi)) }
            let g = try JSONSchemaGrammar(schema: .object(schema)).grammar
            let from = (lo ?? (hi ?? 0) - 3000) - 1100
            let to = (hi ?? (lo ?? 0) + 3000) + 1100
            var x = from
            while x <= to {
                let inside = (lo.map { x >= $0 } ?? true) && (hi.map { x <= $0 } ?? true)
                #expect(matches(g, String(x)) == inside, "\(x) in [\(lo.map(String.init) ?? "-inf"), \(hi.map(String.init) ?? "inf")]")
                x += x > -2000 && x < 2000 ? 1 : 37
            }
            // Leading zeros and "-0" are never produced.
            #expect(!matches(g, "-0") && !matches(g, "00") && !matches(g, "01"))
        }
    }

    @Test func numberBoundsAreSound() throws {
        var rng = SplitMix64(seed: 5)
        let bounds: [Double] = [-100, -10.5, -2.5, -1, 0, 0.5, 1, 2, 7.25, 10, 99.9]
        for trial in 0..<40 {
            let a = bounds[Int(rng.next() % UInt64(bounds.count))]
            let b = bounds[Int(rng.next() % UInt64(bounds.count))]
            let lo = min(a, b), hi = max(a, b)
            let loKey = trial % 2 == 0 ? "minimum" : "exclusiveMinimum"
            let hiKey = trial % 3 == 0 ? "exclusiveMaximum" : "maximum"
            let schema = JSONValue.object(JSONObject([("type", .string("number")), (loKey, .double(lo)), (hiKey, .double(hi))]))
            guard let g = try? JSONSchemaGrammar(schema: schema).grammar else { continue }  // e.g. (0.5, 1): unsupported
            var acceptedAny = false
            for _ in 0..<300 {
                // Random decimals around the bounds.
                let int = Int64(rng.next() % 240) - 120
                let frac = rng.next() % 4 == 0 ? "" : "." + String(rng.next() % 1000)
                let text = (int < 0 ? "-" : (rng.next() % 5 == 0 ? "-" : "")) + String(int.magnitude) + frac
                guard let v = Double(text) else { continue }
                let ok = matches(g, text)
                if ok {
                    acceptedAny = true
                    let inside = (loKey == "minimum" ? v >= lo : v > lo) && (hiKey == "maximum" ? v <= hi : v < hi)
                    #expect(inside, "\(text) accepted for \(schema.serialized())")
                }
            }
            // Every integer within the bounds is accepted.
            var k = lo.rounded(.up)
            var integers = 0
            while k <= hi {
                let inside = (loKey == "minimum" ? k >= lo : k > lo) && (hiKey == "maximum" ? k <= hi : k < hi)
                if inside {
                    let ok = matches(g, String(Int64(k)))
                    #expect(ok, "\(Int64(k)) for \(schema.serialized())")
                    if ok { acceptedAny = true }
                    integers += 1
                }
                k += 1
            }
            #expect(acceptedAny || integers == 0, "\(schema.serialized())")
        }
    }

    @Test func exclusiveZeroBoundsAllowFractions() throws {
        let pos = try JSONSchemaGrammar(schemaText: #"{"type":"number","exclusiveMinimum":0}"#).grammar
        #expect(matches(pos, "0.5") && matches(pos, "0.05") && matches(pos, "7") && matches(pos, "12.25"))
        #expect(!matches(pos, "0") && !matches(pos, "0.0") && !matches(pos, "0.000") && !matches(pos, "-1"))
        let unit = try JSONSchemaGrammar(schemaText: #"{"type":"number","exclusiveMinimum":0,"exclusiveMaximum":1}"#).grammar
        #expect(matches(unit, "0.999") && !matches(unit, "1") && !matches(unit, "1.0") && !matches(unit, "0"))
        let neg = try JSONSchemaGrammar(schemaText: #"{"type":"number","minimum":-1,"exclusiveMaximum":0}"#).grammar
        #expect(matches(neg, "-0.5") && matches(neg, "-1") && matches(neg, "-1.0"))
        #expect(!matches(neg, "-1.5") && !matches(neg, "0") && !matches(neg, "-0") && !matches(neg, "-0.0"))
    }

    @Test func arrayLengthsAndTuples() throws {
        let g = try JSONSchemaGrammar(schemaText: #"{"type":"array","prefixItems":[{"type":"string"},{"type":"null"}],"items":{"type":"integer"},"minItems":1,"maxItems":4}"#).grammar
        #expect(!matches(g, "[]"))
        #expect(matches(g, #"["a"]"#) && matches(g, #"["a",null]"#) && matches(g, #"["a",null,1,2]"#))
        #expect(!matches(g, #"["a",null,1,2,3]"#) && !matches(g, #"["a",1]"#) && !matches(g, "[null]"))
        // Draft-7 tuple form: items as an array plus additionalItems.
        let t = try JSONSchemaGrammar(schemaText: #"{"type":"array","items":[{"type":"boolean"}],"additionalItems":false}"#).grammar
        #expect(matches(t, "[true]") && matches(t, "[]") && !matches(t, "[true,false]"))
    }

    @Test func typeArraysWithSharedKeywordsAndNullable() throws {
        let g = try JSONSchemaGrammar(schemaText: #"{"type":["string","integer","null"],"maxLength":2,"minimum":3}"#).grammar
        #expect(matches(g, #""ab""#) && !matches(g, #""abc""#))
        #expect(matches(g, "3") && !matches(g, "2") && matches(g, "null"))
        let n = try JSONSchemaGrammar(schemaText: #"{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"],"nullable":true}"#).grammar
        #expect(matches(n, "null") && matches(n, #"{"a":1}"#))
    }
}
